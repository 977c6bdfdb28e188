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
#[cfg(feature = "torch")]
mod info;
#[cfg(feature = "torch")]
mod lower;
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

    /// What the engine can do, known without loading libtorch. f16 is left out on the
    /// CPU: libtorch's CPU kernels are slow or missing in half precision (bf16 is there).
    /// The device's memory is filled in by the running engine.
    pub fn capabilities(self) -> Capabilities {
        let (precisions, device) = match self {
            TorchBackend::Cpu => (vec![Precision::F32, Precision::Bf16], DeviceKind::Cpu),
            TorchBackend::Cuda { .. } => (
                vec![Precision::F32, Precision::F16, Precision::Bf16],
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
        Err(format!("not in this build: {SETUP_HINT}"))
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
            "engine {} is not in this build of cnnbench: {SETUP_HINT}",
            backend.engine_name()
        ))
    }
}

/// The engine of one rank of a data-parallel job, and the job's process group: joins
/// the others at the rendezvous (PyTorch's c10d: a TCPStore and a Gloo process group)
/// and returns once every rank is there. CPU only: NCCL, which `torch-cuda` ranks would
/// need, is not compiled into this build.
pub fn data_parallel_engine(
    backend: TorchBackend,
    options: &TorchOptions,
    rendezvous: &cnnbench_engine::distributed::Rendezvous,
) -> anyhow::Result<(
    Box<dyn cnnbench_engine::Engine>,
    std::sync::Arc<dyn cnnbench_engine::distributed::ProcessGroup>,
)> {
    if let TorchBackend::Cuda { .. } = backend {
        return Err(anyhow::anyhow!(
            "{} cannot train across processes in this build: its GPUs need c10d's NCCL backend, which is not compiled in (only Gloo, for torch-cpu); run the distributed job on torch-cpu",
            backend.engine_name()
        ));
    }
    #[cfg(all(feature = "torch", cnnbench_c10d))]
    {
        let group = std::sync::Arc::new(dist::TorchProcessGroup::join(rendezvous)?);
        let engine = TorchEngine::data_parallel(backend, options, group.clone())?;
        Ok((Box::new(engine), group))
    }
    #[cfg(all(feature = "torch", not(cnnbench_c10d)))]
    {
        let _ = (options, rendezvous);
        Err(anyhow::anyhow!(
            "this build of {} has no c10d: the libtorch it was built against had no distributed headers",
            backend.engine_name()
        ))
    }
    #[cfg(not(feature = "torch"))]
    {
        let _ = (options, rendezvous);
        Err(anyhow::anyhow!(
            "engine {} is not in this build of cnnbench: {SETUP_HINT}",
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
        TorchBackend::Cuda { cudnn: true }
            .capabilities()
            .check("torch-cuda", Mode::Step, Precision::F16)
            .unwrap();
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
