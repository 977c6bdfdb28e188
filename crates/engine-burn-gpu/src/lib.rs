//! burn's GPU backends as cnnbench engines: `burn-wgpu` (burn's wgpu runtime pinned to
//! Vulkan) and `burn-cuda` (cubecl's CUDA runtime). They are the burn-flex engine on
//! another device: the lowering, the weights, the optimizer and the session all come from
//! `cnnbench-engine-burn` (burn 0.22's tensors are device-generic), so what is measured
//! is burn's kernels on the GPU and nothing cnnbench wrote twice.
//!
//! Each backend is behind a cargo feature (`wgpu`, `cuda`) because each adds minutes of
//! cold build; without them this crate only says how to get the engines.
//!
//! A GPU engine must never run on the CPU without saying so: wgpu happily offers Mesa's
//! software renderer (llvmpipe/lavapipe) as a Vulkan adapter. `burn-wgpu` refuses such an
//! adapter unless [`BurnGpuOptions::allow_cpu_adapter`] is set, and then labels the
//! result (`engine.device_name` and a warning).

#[cfg(feature = "cuda")]
mod cuda;
mod engine;
#[cfg(feature = "wgpu")]
mod wgpu;

pub mod adapters;
mod provider;
pub use provider::providers;

pub use adapters::{AdapterKind, GpuAdapter, Unavailable};
pub use engine::BurnGpuEngine;

use cnnbench_engine::{Capabilities, DeviceKind, Engine, Mode, Precision};

/// The Vulkan engine's name on the command line and in result files.
pub const WGPU_ENGINE: &str = "burn-wgpu";
/// The CUDA engine's name on the command line and in result files.
pub const CUDA_ENGINE: &str = "burn-cuda";

/// Whether each engine is compiled into this build.
pub const WGPU_BUILT: bool = cfg!(feature = "wgpu");
pub const CUDA_BUILT: bool = cfg!(feature = "cuda");

/// The burn GPU backends cnnbench knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BurnGpu {
    /// burn's wgpu runtime on Vulkan (SPIR-V kernels).
    Wgpu,
    /// cubecl's CUDA runtime (PTX from LLVM).
    Cuda,
}

impl BurnGpu {
    pub const ALL: [BurnGpu; 2] = [BurnGpu::Wgpu, BurnGpu::Cuda];

    /// The engine's name on the command line.
    pub fn engine_name(self) -> &'static str {
        match self {
            BurnGpu::Wgpu => WGPU_ENGINE,
            BurnGpu::Cuda => CUDA_ENGINE,
        }
    }

    pub fn from_engine_name(name: &str) -> Option<BurnGpu> {
        BurnGpu::ALL.into_iter().find(|b| b.engine_name() == name)
    }

    /// One line for `cnnbench engines`.
    pub fn describe(self) -> &'static str {
        match self {
            BurnGpu::Wgpu => "burn 0.22 wgpu runtime on Vulkan (SPIR-V kernels), fusion, autotune",
            BurnGpu::Cuda => "burn 0.22 CUDA runtime (cubecl, PTX via LLVM), fusion, autotune",
        }
    }

    /// The cargo feature of the cnnbench binary that builds this engine.
    pub fn cli_feature(self) -> &'static str {
        match self {
            BurnGpu::Wgpu => "burn-wgpu",
            BurnGpu::Cuda => "burn-cuda",
        }
    }

    fn built(self) -> bool {
        match self {
            BurnGpu::Wgpu => WGPU_BUILT,
            BurnGpu::Cuda => CUDA_BUILT,
        }
    }
}

/// What either engine can do, known without opening a device: every mode, in f32, on a GPU.
/// (A CPU adapter allowed explicitly reports itself as a CPU device once opened.)
pub fn capabilities() -> Capabilities {
    Capabilities {
        modes: vec![Mode::Train, Mode::Infer, Mode::Step],
        precisions: vec![Precision::F32],
        device: DeviceKind::Gpu,
        weight_exchange: true,
        device_memory: None,
        precision_refusals: Vec::new(),
        mode_refusals: Vec::new(),
    }
}

/// Settings of the burn GPU engines.
#[derive(Clone, Debug, Default)]
pub struct BurnGpuOptions {
    /// Which GPU: the index among the Vulkan GPU adapters (burn-wgpu) or the CUDA devices
    /// (burn-cuda).
    pub device: usize,
    /// burn-wgpu only: accept a CPU software adapter (llvmpipe, lavapipe, SwiftShader)
    /// when no GPU adapter exists, labelled as such in the result. For testing the GPU
    /// code path on a machine without a GPU; never a GPU measurement.
    pub allow_cpu_adapter: bool,
}

/// Turns off Mesa's Vulkan device-select layer for this process and its children, unless
/// the user set `NODEVICE_SELECT`. That implicit layer (installed with Debian's Mesa)
/// connects to a Wayland display to order the GPUs and, on a machine without one, makes
/// libwayland print `error: XDG_RUNTIME_DIR is invalid or not set` at every adapter
/// listing. cnnbench orders and chooses the adapter itself. Call it before any thread
/// starts (it sets an environment variable).
pub fn quiet_mesa_device_select() {
    if WGPU_BUILT && std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}

/// Whether `backend` can run here with `options`, or why not.
pub fn availability(backend: BurnGpu, options: &BurnGpuOptions) -> Result<(), Unavailable> {
    if !backend.built() {
        return Err(Unavailable::NotBuilt {
            feature: backend.cli_feature(),
        });
    }
    match backend {
        BurnGpu::Wgpu => adapters::choose_vulkan(&adapters::vulkan_adapters(), options).map(|_| ()),
        BurnGpu::Cuda => {
            adapters::choose_cuda(&adapters::cuda_devices(), options.device).map(|_| ())
        }
    }
}

/// The engine for `backend`, opened on the device `options` select, or why it cannot run.
pub fn engine(backend: BurnGpu, options: &BurnGpuOptions) -> Result<Box<dyn Engine>, Unavailable> {
    availability(backend, options)?;
    match backend {
        #[cfg(feature = "wgpu")]
        BurnGpu::Wgpu => Ok(Box::new(wgpu::engine(options)?)),
        #[cfg(feature = "cuda")]
        BurnGpu::Cuda => Ok(Box::new(cuda::engine(options)?)),
        #[allow(unreachable_patterns)]
        other => Err(Unavailable::NotBuilt {
            feature: other.cli_feature(),
        }),
    }
}

#[cfg(all(test, feature = "wgpu"))]
mod tests;

#[cfg(test)]
mod unbuilt_tests {
    use super::*;

    #[test]
    fn an_engine_not_in_this_build_says_which_feature_builds_it() {
        for backend in BurnGpu::ALL {
            if backend.built() {
                continue;
            }
            let why = availability(backend, &BurnGpuOptions::default()).unwrap_err();
            assert!(
                why.to_string().contains(backend.cli_feature()),
                "{backend:?}: {why}"
            );
        }
        assert_eq!(BurnGpu::from_engine_name("burn-cuda"), Some(BurnGpu::Cuda));
        assert_eq!(BurnGpu::from_engine_name("burn-flex"), None);
    }
}
