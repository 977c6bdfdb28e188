//! Argument types several commands share (`run`, `profile`, `verify`, `peak`), so that
//! a setting is spelled and explained once.

use super::engines;
use cnnbench_engine::{CompileMode, Mode, PerformanceHint, Precision};
use cnnbench_results::EngineSettings;
use std::path::PathBuf;

/// Engine settings: the GPU engines', channels-last for the torch engines, and
/// OpenVINO's performance hint.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// Which GPU the GPU engines use: the CUDA device (torch-cuda, burn-cuda) or the
    /// Vulkan GPU adapter, discrete first (burn-wgpu); `cuda:N` is taken too [default: 0;
    /// in a data-parallel run: LOCAL_RANK]
    #[arg(long, value_name = "N", value_parser = device_index)]
    pub device: Option<usize>,
    /// burn-wgpu: run on a CPU software renderer (llvmpipe/lavapipe) when there is no GPU
    /// adapter, labelled as such in the result. To test the GPU code path, not to measure.
    #[arg(long)]
    pub allow_cpu_adapter: bool,
    /// Let cuDNN time its algorithms on the first (warm-up) passes and keep the fastest.
    #[arg(long)]
    pub cudnn_benchmark: bool,
    /// The older spelling of `--precision tf32`: TF32 tensor-core math for f32
    /// convolutions and matrix products on GPUs (off by default).
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
    /// The pytorch engines: the Python their worker runs on, which must have torch 2.11
    /// [default: CNNBENCH_PYTHON, else the active venv, else a .venv-torch beside the
    /// working folder or the executable, else python3]
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// pytorch-compile: `torch.compile`'s mode (`reduce-overhead` uses CUDA graphs on
    /// GPUs; `max-autotune` times kernel choices while compiling)
    #[arg(long, value_enum, value_name = "MODE", default_value = "default")]
    pub compile_mode: CompileModeArg,
    /// pytorch-compile, inference: inductor's freezing (the weights are folded into the
    /// compiled graph as constants, and oneDNN's weight layouts prepared once)
    #[arg(long)]
    pub freezing: bool,
}

/// `--device`: a GPU's index, as `N` or `cuda:N`.
fn device_index(text: &str) -> Result<usize, String> {
    let index = text.strip_prefix("cuda:").unwrap_or(text);
    index
        .parse()
        .map_err(|_| format!("\"{text}\" is not a device: give its index, N or cuda:N"))
}

/// `torch.compile`'s mode on the command line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum CompileModeArg {
    #[default]
    Default,
    ReduceOverhead,
    MaxAutotune,
}

impl From<CompileModeArg> for CompileMode {
    fn from(m: CompileModeArg) -> CompileMode {
        match m {
            CompileModeArg::Default => CompileMode::Default,
            CompileModeArg::ReduceOverhead => CompileMode::ReduceOverhead,
            CompileModeArg::MaxAutotune => CompileMode::MaxAutotune,
        }
    }
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
            python: self.python.clone(),
            compile_mode: self.compile_mode.into(),
            freezing: self.freezing,
        }
    }

    /// The engine options for these settings, a thread count and a precision.
    pub fn engine_options(
        &self,
        threads: Option<usize>,
        precision: Precision,
    ) -> engines::EngineOptions {
        engines::options(&self.settings(), threads, precision)
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

/// `f32` (strict: no TF32 on GPUs); `tf32`: f32 tensors, GPU matrix products and
/// convolutions in TF32; `bf16`/`f16`: the model computes in that type;
/// `amp-bf16`/`amp-f16`: automatic mixed precision (f32 weights, autocast's ops in the
/// low type).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PrecisionArg {
    F32,
    Tf32,
    F16,
    Bf16,
    #[value(name = "amp-bf16")]
    AmpBf16,
    #[value(name = "amp-f16")]
    AmpF16,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Precision {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::Tf32 => Precision::Tf32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::Bf16 => Precision::Bf16,
            PrecisionArg::AmpBf16 => Precision::AmpBf16,
            PrecisionArg::AmpF16 => Precision::AmpF16,
        }
    }
}
