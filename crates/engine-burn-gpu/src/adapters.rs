//! Which devices exist and which one an engine takes: the listing behind
//! `cnnbench engines`, and the choice that keeps a CPU software renderer from passing
//! for a GPU. The choice is a pure function of the listing, so it is tested without one.

use crate::BurnGpuOptions;
use std::fmt;

/// What kind of device the driver says an adapter is (wgpu's `DeviceType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdapterKind {
    DiscreteGpu,
    IntegratedGpu,
    VirtualGpu,
    /// A software renderer on the host's CPU: llvmpipe/lavapipe, SwiftShader.
    Cpu,
    /// The driver did not say; burn cannot select such an adapter.
    Other,
}

impl AdapterKind {
    /// The order GPUs are offered in: discrete first.
    fn gpu_rank(self) -> Option<u8> {
        match self {
            AdapterKind::DiscreteGpu => Some(0),
            AdapterKind::IntegratedGpu => Some(1),
            AdapterKind::VirtualGpu => Some(2),
            AdapterKind::Cpu | AdapterKind::Other => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AdapterKind::DiscreteGpu => "discrete GPU",
            AdapterKind::IntegratedGpu => "integrated GPU",
            AdapterKind::VirtualGpu => "virtual GPU",
            AdapterKind::Cpu => "CPU software renderer",
            AdapterKind::Other => "unknown kind",
        }
    }
}

/// One device as its API reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuAdapter {
    /// The device's name, e.g. `NVIDIA H200` or `llvmpipe (LLVM 15.0.6, 256 bits)`.
    pub name: String,
    pub kind: AdapterKind,
    /// Its index among the adapters of its kind: how burn addresses an adapter.
    pub kind_index: usize,
    /// The API it is reached through: `Vulkan` or `CUDA`.
    pub api: &'static str,
    /// The driver's name and version details, where the API reports them.
    pub driver: String,
}

impl fmt::Display for GpuAdapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}, {}", self.name, self.kind.as_str(), self.api)?;
        if !self.driver.is_empty() {
            write!(f, ", driver {}", self.driver)?;
        }
        write!(f, ")")
    }
}

/// Why a burn GPU engine cannot run here. Says what is missing, not how the caller's
/// command line spells the fix.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("not in this build: build with the cargo feature `{feature}` (README: engine set-up)")]
    NotBuilt { feature: &'static str },
    #[error("no Vulkan adapter: no Vulkan loader (libvulkan.so.1) or no driver (ICD) for it")]
    NoVulkanAdapter,
    #[error("the only Vulkan adapter is {adapter}, which computes on the host's CPU, not a GPU; it is used only when allowed explicitly, and then labelled in the result")]
    CpuAdapterOnly { adapter: String },
    #[error("no CUDA GPU is visible (no NVIDIA GPU or driver, libcuda.so, here, or CUDA_VISIBLE_DEVICES hides them)")]
    NoCudaDevice,
    #[error("there is no {api} GPU {index}; found {}: {}", found.len(), found.join("; "))]
    NoSuchDevice {
        api: &'static str,
        index: usize,
        found: Vec<String>,
    },
    #[error("cannot open {adapter}: {reason}")]
    OpenFailed { adapter: String, reason: String },
}

/// The Vulkan adapter burn-wgpu takes: GPU number `options.device` (discrete GPUs
/// first); with no GPU at all, a CPU software renderer only when `allow_cpu_adapter`.
pub fn choose_vulkan<'a>(
    adapters: &'a [GpuAdapter],
    options: &BurnGpuOptions,
) -> Result<&'a GpuAdapter, Unavailable> {
    let mut gpus: Vec<&GpuAdapter> = adapters
        .iter()
        .filter(|a| a.kind.gpu_rank().is_some())
        .collect();
    gpus.sort_by_key(|a| a.kind.gpu_rank());
    if !gpus.is_empty() {
        return gpus
            .get(options.device)
            .copied()
            .ok_or_else(|| Unavailable::NoSuchDevice {
                api: "Vulkan",
                index: options.device,
                found: gpus.iter().map(|a| a.to_string()).collect(),
            });
    }
    let Some(cpu) = adapters.iter().find(|a| a.kind == AdapterKind::Cpu) else {
        return Err(Unavailable::NoVulkanAdapter);
    };
    if !options.allow_cpu_adapter {
        return Err(Unavailable::CpuAdapterOnly {
            adapter: cpu.to_string(),
        });
    }
    if options.device != 0 {
        return Err(Unavailable::NoSuchDevice {
            api: "Vulkan",
            index: options.device,
            found: vec![cpu.to_string()],
        });
    }
    Ok(cpu)
}

/// The CUDA device burn-cuda takes. Checked before burn opens it: burn panics, in a worker
/// thread, on a device that does not exist.
pub fn choose_cuda(devices: &[GpuAdapter], index: usize) -> Result<&GpuAdapter, Unavailable> {
    if devices.is_empty() {
        return Err(Unavailable::NoCudaDevice);
    }
    devices.get(index).ok_or_else(|| Unavailable::NoSuchDevice {
        api: "CUDA",
        index,
        found: devices.iter().map(|a| a.to_string()).collect(),
    })
}

/// Every Vulkan adapter wgpu finds (asked once per process), empty in a build without
/// burn-wgpu.
pub fn vulkan_adapters() -> Vec<GpuAdapter> {
    #[cfg(feature = "wgpu")]
    {
        static ADAPTERS: std::sync::OnceLock<Vec<GpuAdapter>> = std::sync::OnceLock::new();
        ADAPTERS.get_or_init(crate::wgpu::enumerate).clone()
    }
    #[cfg(not(feature = "wgpu"))]
    {
        Vec::new()
    }
}

/// Every CUDA device burn finds (asked once per process), empty in a build without
/// burn-cuda.
pub fn cuda_devices() -> Vec<GpuAdapter> {
    #[cfg(feature = "cuda")]
    {
        static DEVICES: std::sync::OnceLock<Vec<GpuAdapter>> = std::sync::OnceLock::new();
        DEVICES.get_or_init(crate::cuda::enumerate).clone()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Vec::new()
    }
}

/// The devices each built engine can see, for `cnnbench engines`.
pub fn listing() -> Vec<(crate::BurnGpu, Vec<GpuAdapter>)> {
    let mut all = Vec::new();
    if crate::WGPU_BUILT {
        all.push((crate::BurnGpu::Wgpu, vulkan_adapters()));
    }
    if crate::CUDA_BUILT {
        all.push((crate::BurnGpu::Cuda, cuda_devices()));
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(name: &str, kind: AdapterKind, kind_index: usize) -> GpuAdapter {
        GpuAdapter {
            name: name.into(),
            kind,
            kind_index,
            api: "Vulkan",
            driver: String::new(),
        }
    }

    fn options(device: usize, allow_cpu_adapter: bool) -> BurnGpuOptions {
        BurnGpuOptions {
            device,
            allow_cpu_adapter,
        }
    }

    #[test]
    fn a_gpu_is_taken_before_a_cpu_renderer_discrete_first() {
        let found = [
            adapter("llvmpipe", AdapterKind::Cpu, 0),
            adapter("Intel UHD", AdapterKind::IntegratedGpu, 0),
            adapter("NVIDIA H200", AdapterKind::DiscreteGpu, 0),
        ];
        let chosen = choose_vulkan(&found, &options(0, true)).unwrap();
        assert_eq!(chosen.name, "NVIDIA H200");
        let second = choose_vulkan(&found, &options(1, false)).unwrap();
        assert_eq!(second.name, "Intel UHD");
        // Asking for a GPU that is not there names the ones that are, and never falls
        // back to the CPU renderer.
        let err = choose_vulkan(&found, &options(2, true)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("no Vulkan GPU 2; found 2"), "{text}");
        assert!(!text.contains("llvmpipe"), "{text}");
    }

    #[test]
    fn a_cpu_renderer_is_refused_unless_allowed() {
        let found = [adapter("llvmpipe (LLVM 15)", AdapterKind::Cpu, 0)];
        let err = choose_vulkan(&found, &options(0, false)).unwrap_err();
        assert!(matches!(err, Unavailable::CpuAdapterOnly { .. }), "{err}");
        assert!(err
            .to_string()
            .contains("llvmpipe (LLVM 15) (CPU software renderer"));
        assert_eq!(
            choose_vulkan(&found, &options(0, true)).unwrap().name,
            "llvmpipe (LLVM 15)"
        );
        assert!(choose_vulkan(&found, &options(1, true)).is_err());
    }

    #[test]
    fn no_adapter_at_all_says_what_is_missing() {
        let err = choose_vulkan(&[], &options(0, true)).unwrap_err();
        assert_eq!(err, Unavailable::NoVulkanAdapter);
        assert!(err.to_string().contains("libvulkan.so.1"));
        // An adapter of unknown kind is not selectable either.
        let other = [adapter("mystery", AdapterKind::Other, 0)];
        assert_eq!(
            choose_vulkan(&other, &options(0, true)).unwrap_err(),
            Unavailable::NoVulkanAdapter
        );
    }

    #[test]
    fn cuda_devices_are_counted_before_one_is_opened() {
        assert_eq!(choose_cuda(&[], 0).unwrap_err(), Unavailable::NoCudaDevice);
        let one = [GpuAdapter {
            api: "CUDA",
            ..adapter("NVIDIA H200", AdapterKind::DiscreteGpu, 0)
        }];
        assert_eq!(choose_cuda(&one, 0).unwrap().name, "NVIDIA H200");
        let err = choose_cuda(&one, 1).unwrap_err();
        assert!(err.to_string().contains("no CUDA GPU 1; found 1"), "{err}");
    }
}
