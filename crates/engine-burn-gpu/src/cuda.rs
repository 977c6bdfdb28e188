//! burn-cuda: cubecl's CUDA runtime. Devices are counted before one is opened: burn
//! panics in a worker thread, beyond any useful error, on a CUDA device that is not there.

use crate::adapters::{choose_cuda, cuda_devices, AdapterKind, GpuAdapter, Unavailable};
use crate::engine::{base_info, BurnGpuEngine};
use crate::{capabilities, BurnGpuOptions, CUDA_ENGINE};
use burn::tensor::{Device, DeviceType};

/// Every CUDA device burn sees (none without an NVIDIA driver: cudarc loads libcuda.so at
/// run time, so the binary runs anywhere).
pub(crate) fn enumerate() -> Vec<GpuAdapter> {
    Device::enumerate(DeviceType::Cuda)
        .into_vec()
        .into_iter()
        .enumerate()
        .map(|(index, device)| {
            let (name, driver) = match device.identity() {
                Some(identity) => (identity.name, identity.fingerprint),
                None => (format!("CUDA device {index}"), String::new()),
            };
            GpuAdapter {
                name,
                kind: AdapterKind::DiscreteGpu,
                kind_index: index,
                api: "CUDA",
                driver,
            }
        })
        .collect()
}

/// burn-cuda on CUDA device `options.device`.
pub(crate) fn engine(options: &BurnGpuOptions) -> Result<BurnGpuEngine, Unavailable> {
    let devices = cuda_devices();
    let chosen = choose_cuda(&devices, options.device)?;
    let device = Device::cuda(options.device);
    let mut info = base_info(
        CUDA_ENGINE,
        "cuda",
        format!("cuda:{}", options.device),
        chosen.name.clone(),
    );
    // Kernels are compiled to PTX by LLVM: the stand-in built from Debian's LLVM 22.
    info.libraries
        .insert("llvm".to_string(), "22 (Debian packages)".to_string());
    if !chosen.driver.is_empty() {
        info.settings
            .insert("kernels".to_string(), chosen.driver.clone());
    }
    Ok(BurnGpuEngine::new(device, info, capabilities()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BurnGpu;

    #[test]
    fn devices_are_counted_first_so_a_missing_one_is_refused_not_a_panic() {
        let devices = cuda_devices();
        match crate::engine(BurnGpu::Cuda, &BurnGpuOptions::default()) {
            Ok(engine) => {
                assert!(!devices.is_empty());
                assert_eq!(engine.info().device_name, devices[0].name);
                assert_eq!(engine.info().device, "cuda:0");
            }
            Err(why) => {
                assert!(devices.is_empty(), "{why}");
                assert_eq!(why, Unavailable::NoCudaDevice);
            }
        }
        let past_the_last = BurnGpuOptions {
            device: devices.len(),
            ..BurnGpuOptions::default()
        };
        assert!(crate::engine(BurnGpu::Cuda, &past_the_last).is_err());
    }
}
