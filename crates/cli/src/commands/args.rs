//! Argument types several commands share (`run`, `profile`, `verify`, `peak`), so that
//! a setting is spelled and explained once.

use super::engines;
use cnnbench_engine::{Mode, PerformanceHint, Precision};
use cnnbench_results::EngineSettings;

/// Engine settings: the GPU engines', channels-last for the torch engines, and
/// OpenVINO's performance hint.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// Which GPU the GPU engines use: the CUDA device (torch-cuda, burn-cuda) or the
    /// Vulkan GPU adapter, discrete first (burn-wgpu) [default: 0; in a data-parallel run:
    /// LOCAL_RANK]
    #[arg(long, value_name = "N")]
    pub device: Option<usize>,
    /// burn-wgpu: run on a CPU software renderer (llvmpipe/lavapipe) when there is no GPU
    /// adapter, labelled as such in the result. To test the GPU code path, not to measure.
    #[arg(long)]
    pub allow_cpu_adapter: bool,
    /// Let cuDNN time its algorithms on the first (warm-up) passes and keep the fastest.
    #[arg(long)]
    pub cudnn_benchmark: bool,
    /// Allow TF32 tensor-core math for f32 convolutions and matrix products (off by default).
    #[arg(long)]
    pub tf32: bool,
    /// Channels-last (NHWC) memory for images and convolution weights (torch engines).
    #[arg(long)]
    pub channels_last: bool,
    /// openvino-cpu: `latency` runs one infer request at a time; `throughput` keeps the
    /// requests OpenVINO asks for in flight together, the batch split evenly among them
    /// (images/s over all of them).
    #[arg(long, value_enum, value_name = "HINT", default_value = "latency")]
    pub ov_hint: HintArg,
}

/// OpenVINO's performance hint on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HintArg {
    #[default]
    Latency,
    Throughput,
}

impl From<HintArg> for PerformanceHint {
    fn from(h: HintArg) -> PerformanceHint {
        match h {
            HintArg::Latency => PerformanceHint::Latency,
            HintArg::Throughput => PerformanceHint::Throughput,
        }
    }
}

impl From<PerformanceHint> for HintArg {
    fn from(h: PerformanceHint) -> HintArg {
        match h {
            PerformanceHint::Latency => HintArg::Latency,
            PerformanceHint::Throughput => HintArg::Throughput,
        }
    }
}

impl GpuArgs {
    /// These settings as a run spec holds them.
    pub fn settings(&self) -> EngineSettings {
        EngineSettings {
            device: self.device,
            allow_cpu_adapter: self.allow_cpu_adapter,
            cudnn_benchmark: self.cudnn_benchmark,
            tf32: self.tf32,
            channels_last: self.channels_last,
            performance_hint: self.ov_hint.into(),
        }
    }

    /// The engine options for these settings and a thread count.
    pub fn engine_options(&self, threads: Option<usize>) -> engines::EngineOptions {
        engines::options(&self.settings(), threads)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    Train,
    Infer,
    Step,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Train => Mode::Train,
            ModeArg::Infer => Mode::Infer,
            ModeArg::Step => Mode::Step,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PrecisionArg {
    F32,
    F16,
    Bf16,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Precision {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::Bf16 => Precision::Bf16,
        }
    }
}
