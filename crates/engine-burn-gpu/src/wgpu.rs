//! burn-wgpu: burn's wgpu runtime pinned to Vulkan, on the adapter [`choose_vulkan`]
//! picks, with the adapter's identity read back from the device burn opened.

use crate::adapters::{choose_vulkan, vulkan_adapters, AdapterKind, GpuAdapter, Unavailable};
use crate::engine::{base_info, BurnGpuEngine};
use crate::{capabilities, BurnGpuOptions, WGPU_ENGINE};
use burn::tensor::wgpu::{wgpu as api, WgpuBackend};
use burn::tensor::{Device, DeviceKind};
use cnnbench_engine::DeviceKind as ComputeOn;
use std::sync::Mutex;

/// The wgpu version burn 0.22.1's runtime is built on (pinned by the lock file).
const WGPU_VERSION: &str = "30.0.2";

/// Every Vulkan adapter, as wgpu lists them.
pub(crate) fn enumerate() -> Vec<GpuAdapter> {
    let instance = api::Instance::new(api::InstanceDescriptor {
        backends: api::Backends::VULKAN,
        ..api::InstanceDescriptor::new_without_display_handle()
    });
    let adapters =
        futures_lite::future::block_on(instance.enumerate_adapters(api::Backends::VULKAN));
    summarise(adapters.iter().map(|a| a.get_info()))
}

/// Our view of wgpu's adapter descriptions, each numbered within its kind as burn numbers
/// them (`DiscreteGpu(0)`, `DiscreteGpu(1)`, …).
fn summarise(infos: impl IntoIterator<Item = api::AdapterInfo>) -> Vec<GpuAdapter> {
    let mut seen: Vec<AdapterKind> = Vec::new();
    infos
        .into_iter()
        .map(|info| {
            let kind = kind_of(info.device_type);
            let kind_index = seen.iter().filter(|k| **k == kind).count();
            seen.push(kind);
            GpuAdapter {
                name: info.name.clone(),
                kind,
                kind_index,
                api: "Vulkan",
                driver: driver_text(&info),
            }
        })
        .collect()
}

fn kind_of(device_type: api::DeviceType) -> AdapterKind {
    match device_type {
        api::DeviceType::DiscreteGpu => AdapterKind::DiscreteGpu,
        api::DeviceType::IntegratedGpu => AdapterKind::IntegratedGpu,
        api::DeviceType::VirtualGpu => AdapterKind::VirtualGpu,
        api::DeviceType::Cpu => AdapterKind::Cpu,
        api::DeviceType::Other => AdapterKind::Other,
    }
}

/// `llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)`: the driver's name and its version details.
fn driver_text(info: &api::AdapterInfo) -> String {
    [info.driver.as_str(), info.driver_info.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// burn's name for the adapter `chosen`.
fn burn_kind(chosen: &GpuAdapter) -> Result<DeviceKind, Unavailable> {
    Ok(match chosen.kind {
        AdapterKind::DiscreteGpu => DeviceKind::DiscreteGpu(chosen.kind_index),
        AdapterKind::IntegratedGpu => DeviceKind::IntegratedGpu(chosen.kind_index),
        AdapterKind::VirtualGpu => DeviceKind::VirtualGpu(chosen.kind_index),
        AdapterKind::Cpu => DeviceKind::Cpu,
        AdapterKind::Other => {
            return Err(Unavailable::OpenFailed {
                adapter: chosen.to_string(),
                reason: "burn cannot select an adapter of unknown kind".into(),
            })
        }
    })
}

/// Devices opened in this process. burn's wgpu runtime is set up once per adapter and API
/// (a second set-up is an error), so every engine on one adapter shares its device.
static OPENED: Mutex<Vec<(DeviceKind, Device, api::AdapterInfo)>> = Mutex::new(Vec::new());

/// Opens (or finds open) the Vulkan device on adapter `kind`, with what wgpu says it is.
fn open(kind: DeviceKind, chosen: &GpuAdapter) -> Result<(Device, api::AdapterInfo), Unavailable> {
    let mut opened = OPENED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, device, info)) = opened.iter().find(|(k, _, _)| *k == kind) {
        return Ok((device.clone(), info.clone()));
    }
    let (device, setup) = Device::wgpu_options()
        .device_kind(kind.clone())
        .graphics_api(WgpuBackend::Vulkan)
        .init_with_setup()
        .map_err(|e| Unavailable::OpenFailed {
            adapter: chosen.to_string(),
            reason: e.to_string(),
        })?;
    let info = setup.adapter.get_info();
    opened.push((kind, device.clone(), info.clone()));
    Ok((device, info))
}

/// burn-wgpu on the adapter `options` select.
pub(crate) fn engine(options: &BurnGpuOptions) -> Result<BurnGpuEngine, Unavailable> {
    let adapters = vulkan_adapters();
    let chosen = choose_vulkan(&adapters, options)?;
    let (device, info) = open(burn_kind(chosen)?, chosen)?;
    // What burn opened is what decides: a CPU renderer is refused here too, whatever the
    // listing said.
    let on_cpu = info.device_type == api::DeviceType::Cpu;
    if on_cpu && !options.allow_cpu_adapter {
        return Err(Unavailable::CpuAdapterOnly {
            adapter: chosen.to_string(),
        });
    }
    let device_name = if on_cpu {
        format!("{} [CPU software renderer, not a GPU]", info.name)
    } else {
        info.name.clone()
    };
    let mut engine_info = base_info(
        WGPU_ENGINE,
        "wgpu-vulkan",
        format!("vulkan:{}", options.device),
        device_name,
    );
    engine_info
        .libraries
        .insert("wgpu".to_string(), WGPU_VERSION.to_string());
    let settings = &mut engine_info.settings;
    settings.insert("api".to_string(), format!("{:?}", info.backend));
    settings.insert(
        "adapter_kind".to_string(),
        kind_of(info.device_type).as_str().to_string(),
    );
    settings.insert("driver".to_string(), info.driver.clone());
    settings.insert("driver_info".to_string(), info.driver_info.clone());
    if let Some(identity) = device.identity() {
        // What the kernels are compiled for, as cubecl names it (SPIR-V or WGSL).
        settings.insert("kernels".to_string(), identity.fingerprint);
    }
    let mut caps = capabilities();
    if on_cpu {
        settings.insert(
            "warning".to_string(),
            format!(
                "burn-wgpu ran on {}, a CPU software renderer allowed explicitly: these are CPU numbers, not a GPU's",
                info.name
            ),
        );
        caps.device = ComputeOn::Cpu;
        caps.device_memory = cnnbench_host::memory_bytes();
    }
    Ok(BurnGpuEngine::new(device, engine_info, caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, device_type: api::DeviceType) -> api::AdapterInfo {
        api::AdapterInfo {
            name: name.into(),
            driver: "drv".into(),
            driver_info: "1.2".into(),
            ..api::AdapterInfo::new(device_type, api::Backend::Vulkan)
        }
    }

    #[test]
    fn adapters_are_numbered_within_their_kind_as_burn_selects_them() {
        let listed = summarise([
            info("cpu", api::DeviceType::Cpu),
            info("gpu a", api::DeviceType::DiscreteGpu),
            info("igpu", api::DeviceType::IntegratedGpu),
            info("gpu b", api::DeviceType::DiscreteGpu),
        ]);
        let b = &listed[3];
        assert_eq!((b.kind, b.kind_index), (AdapterKind::DiscreteGpu, 1));
        assert_eq!(burn_kind(b).unwrap(), DeviceKind::DiscreteGpu(1));
        assert_eq!(burn_kind(&listed[2]).unwrap(), DeviceKind::IntegratedGpu(0));
        assert_eq!(burn_kind(&listed[0]).unwrap(), DeviceKind::Cpu);
        assert_eq!(listed[0].driver, "drv, 1.2");
    }
}
