//! The reference engines: libtorch (PyTorch 2.11.0) through `tch` 0.24, on the CPU
//! (`torch-cpu`: oneDNN/MKL) or a CUDA GPU with cuDNN (`torch-cuda`) or without it
//! (`torch-cuda-nocudnn`, the original suite's "nn" backend). Their numbers are the ones
//! people trust, and the GPU path cnnbench has.
//!
//! libtorch is optional: without the `torch` feature this crate builds with cargo alone
//! and only explains how to get the engines, so the default build and test need nothing
//! else.

use cnnbench_engine::{Capabilities, DeviceKind, Mode, Precision};

#[cfg(all(feature = "torch", cnnbench_c10d))]
mod dist;
mod provider;
pub use provider::providers;
#[cfg(feature = "torch")]
mod aten;
#[cfg(feature = "torch")]
mod info;
#[cfg(feature = "torch")]
mod lower;
#[cfg(feature = "torch")]
mod scaler;
#[cfg(feature = "torch")]
mod session;

#[cfg(feature = "torch")]
pub use session::TorchEngine;

/// Whether this build links libtorch.
pub const BUILT: bool = cfg!(feature = "torch");

/// How a build gets these engines, for error messages and `cnnbench engines`.
pub const SETUP_HINT: &str = "build with `--features torch` against PyTorch 2.11.0 (see the README, \"The libtorch engines\")";

/// The libtorch engines cnnbench knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TorchBackend {
    Cpu,
    /// A CUDA GPU; `cudnn: false` turns cuDNN off for the whole process.
    Cuda {
        cudnn: bool,
    },
}

impl TorchBackend {
    /// All of them, in the order `cnnbench engines` lists them.
    pub const ALL: [TorchBackend; 3] = [
        TorchBackend::Cpu,
        TorchBackend::Cuda { cudnn: true },
        TorchBackend::Cuda { cudnn: false },
    ];

    /// The engine's name on the command line.
    pub fn engine_name(self) -> &'static str {
        match self {
            TorchBackend::Cpu => "torch-cpu",
            TorchBackend::Cuda { cudnn: true } => "torch-cuda",
            TorchBackend::Cuda { cudnn: false } => "torch-cuda-nocudnn",
        }
    }

    /// The backend for an engine name, if it is one of ours.
    pub fn from_engine_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|b| b.engine_name() == name)
    }

    /// What the engine runs on, in words.
    pub fn describe(self) -> &'static str {
        match self {
            TorchBackend::Cpu => "libtorch on the CPU (oneDNN/MKL)",
            TorchBackend::Cuda { cudnn: true } => "libtorch on a CUDA GPU with cuDNN",
            TorchBackend::Cuda { cudnn: false } => {
                "libtorch on a CUDA GPU, cuDNN off (the original suite's \"nn\" backend)"
            }
        }
    }

    /// What the engine can do, known without loading libtorch. TF32 is for GPUs (the
    /// engine turns it on when it starts, so in one process every torch-cuda engine has
    /// it or none does). f16 and amp-f16 are left out on the CPU: libtorch's CPU kernels
    /// are slow or missing in half precision (bf16 is there). A training step in amp-f16
    /// scales its loss as `torch.amp.GradScaler` does (`scaler.rs`). The device's memory
    /// is filled in by the running engine.
    pub fn capabilities(self) -> Capabilities {
        let (precisions, device) = match self {
            TorchBackend::Cpu => (
                vec![Precision::F32, Precision::Bf16, Precision::AmpBf16],
                DeviceKind::Cpu,
            ),
            TorchBackend::Cuda { .. } => (
                vec![
                    Precision::F32,
                    Precision::Tf32,
                    Precision::F16,
                    Precision::Bf16,
                    Precision::AmpBf16,
                    Precision::AmpF16,
                ],
                DeviceKind::Gpu,
            ),
        };
        Capabilities {
            modes: vec![Mode::Train, Mode::Infer, Mode::Step],
            precisions,
            device,
            weight_exchange: true,
            device_memory: match device {
                DeviceKind::Cpu => cnnbench_host::memory_bytes(),
                DeviceKind::Gpu => None,
            },
            precision_refusals: match device {
                DeviceKind::Cpu => vec![(
                    Precision::AmpF16,
                    "libtorch's CPU kernels are slow or missing in f16: amp-bf16 is the CPU's mixed precision"
                        .to_string(),
                )],
                DeviceKind::Gpu => Vec::new(),
            },
            mode_refusals: Vec::new(),
        }
    }
}

/// Settings of the libtorch engines, from the command line (default: libtorch's
/// thread count, GPU 0, no autotuning, no TF32).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TorchOptions {
    /// CPU threads of libtorch's intra-op pool (`None`: libtorch's default).
    pub threads: Option<usize>,
    /// Which CUDA GPU.
    pub device: usize,
    /// Let cuDNN time its algorithms on the first passes and keep the fastest.
    pub cudnn_benchmark: bool,
    /// Allow TF32 tensor-core math for f32 convolutions and matrix products.
    pub tf32: bool,
    /// Keep images and convolution weights in channels-last (NHWC) memory, as
    /// `torch.channels_last` does: the layout oneDNN and tensor-core kernels prefer.
    pub channels_last: bool,
}

/// Whether `backend` can run on this machine with this build, and if not, why.
pub fn availability(backend: TorchBackend) -> Result<(), String> {
    #[cfg(feature = "torch")]
    {
        session::availability(backend)
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = backend;
        Err(cnnbench_engine::provider::not_in_this_build(SETUP_HINT))
    }
}

/// How many CUDA GPUs libtorch sees (0 without the torch feature or without CUDA).
pub fn cuda_device_count() -> usize {
    #[cfg(feature = "torch")]
    {
        usize::try_from(tch::Cuda::device_count()).unwrap_or(0)
    }
    #[cfg(not(feature = "torch"))]
    {
        0
    }
}

/// The engine for `backend`, or why it cannot run here (including "not in this build").
pub fn engine(
    backend: TorchBackend,
    options: &TorchOptions,
) -> anyhow::Result<Box<dyn cnnbench_engine::Engine>> {
    #[cfg(feature = "torch")]
    {
        Ok(Box::new(TorchEngine::new(backend, options)?))
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = options;
        Err(anyhow::anyhow!(
            "engine {} cannot run: {}",
            backend.engine_name(),
            cnnbench_engine::provider::not_in_this_build(SETUP_HINT)
        ))
    }
}

/// The c10d backends compiled into this build: Gloo (torch-cpu) wherever the libtorch
/// had c10d's headers, NCCL (torch-cuda) where it also had CUDA and the CUDA and NCCL
/// headers were installed when cnnbench was built.
pub fn distributed_backends() -> &'static [&'static str] {
    // Asked of the compiled shim itself.
    #[cfg(all(feature = "torch", cnnbench_c10d))]
    if dist::shim_has_nccl() {
        &["gloo", "nccl"]
    } else {
        &["gloo"]
    }
    #[cfg(not(all(feature = "torch", cnnbench_c10d)))]
    &[]
}

/// Why `backend` cannot train across processes in this build, if it cannot.
pub fn data_parallel_refusal(backend: TorchBackend) -> Option<String> {
    let backends = distributed_backends();
    let needed = match backend {
        TorchBackend::Cpu => "gloo",
        TorchBackend::Cuda { .. } => "nccl",
    };
    if backends.contains(&needed) {
        return None;
    }
    let name = backend.engine_name();
    Some(if !BUILT {
        format!(
            "engine {name} cannot run: {}",
            cnnbench_engine::provider::not_in_this_build(SETUP_HINT)
        )
    } else if backends.is_empty() {
        format!("this build of {name} has no c10d: the libtorch it was built against had no distributed headers")
    } else {
        format!(
            "{name} cannot train across processes in this build: its GPUs need c10d's NCCL backend, which was not compiled in (the PyTorch it was built against has no CUDA, or the CUDA and NCCL headers were missing: the build printed which pip packages to install); torch-cpu can, on Gloo"
        )
    })
}

/// The engine of one rank of a data-parallel job, and the job's process group: checks
/// the device, then joins the others at the rendezvous (PyTorch's c10d: a TCPStore and a
/// Gloo process group for torch-cpu, NCCL on GPU `options.device` for torch-cuda) and
/// returns once every rank is there.
pub fn data_parallel_engine(
    backend: TorchBackend,
    options: &TorchOptions,
    rendezvous: &cnnbench_engine::distributed::Rendezvous,
) -> anyhow::Result<(
    Box<dyn cnnbench_engine::Engine>,
    std::sync::Arc<dyn cnnbench_engine::distributed::ProcessGroup>,
)> {
    if let Some(why) = data_parallel_refusal(backend) {
        return Err(anyhow::anyhow!(why));
    }
    #[cfg(all(feature = "torch", cnnbench_c10d))]
    {
        let collectives = match backend {
            TorchBackend::Cpu => dist::Collectives::Gloo,
            TorchBackend::Cuda { .. } => dist::Collectives::Nccl {
                device: options.device,
            },
        };
        // The device first: a rank without its GPU says so instead of failing in NCCL.
        let engine = TorchEngine::new(backend, options)?;
        let group = std::sync::Arc::new(dist::TorchProcessGroup::join(rendezvous, collectives)?);
        let engine = engine.with_group(group.clone());
        Ok((Box::new(engine), group))
    }
    #[cfg(not(all(feature = "torch", cnnbench_c10d)))]
    {
        let _ = (options, rendezvous);
        Err(anyhow::anyhow!(
            "this build of {} has no c10d",
            backend.engine_name()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for b in TorchBackend::ALL {
            assert_eq!(TorchBackend::from_engine_name(b.engine_name()), Some(b));
        }
        assert_eq!(TorchBackend::from_engine_name("burn-flex"), None);
    }

    #[test]
    fn f16_on_the_cpu_is_refused_with_a_way_out() {
        let cpu = TorchBackend::Cpu.capabilities();
        let e = cpu
            .check("torch-cpu", Mode::Train, Precision::F16)
            .unwrap_err();
        assert!(e.to_string().contains("bf16"), "{e}");
        cpu.check("torch-cpu", Mode::Train, Precision::Bf16)
            .unwrap();
        cpu.check("torch-cpu", Mode::Step, Precision::AmpBf16)
            .unwrap();
        let e = cpu
            .check("torch-cpu", Mode::Infer, Precision::AmpF16)
            .unwrap_err();
        assert!(e.to_string().contains("amp-bf16"), "{e}");
        // On a GPU every mode runs in amp-f16 (the step with its gradient scaler).
        let gpu = TorchBackend::Cuda { cudnn: true }.capabilities();
        for mode in [Mode::Train, Mode::Infer, Mode::Step] {
            gpu.check("torch-cuda", mode, Precision::AmpF16).unwrap();
            gpu.check("torch-cuda", mode, Precision::F16).unwrap();
        }
        assert_eq!(cpu.device, DeviceKind::Cpu);
    }

    #[cfg(not(feature = "torch"))]
    #[test]
    fn without_the_feature_every_engine_says_how_to_get_it() {
        for b in TorchBackend::ALL {
            let e = availability(b).unwrap_err();
            assert!(e.contains("--features torch"), "{e}");
            let e = match engine(b, &TorchOptions::default()) {
                Ok(_) => panic!("{} was built without libtorch", b.engine_name()),
                Err(e) => e.to_string(),
            };
            assert!(
                e.contains(b.engine_name()) && e.contains("--features torch"),
                "{e}"
            );
        }
    }
}

#[cfg(all(test, feature = "torch"))]
mod torch_tests;

#[cfg(all(test, feature = "torch", cnnbench_c10d))]
mod dist_tests;
