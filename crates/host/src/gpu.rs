//! An NVIDIA GPU watched through NVML while the harness times passes: its SM clock, the
//! reasons NVML gives for holding the clocks down, the time thermal and power limits held
//! them below the application clocks (NVML's violation counters, in nanoseconds, so a
//! throttle between two snapshots is still counted), and its temperature.
//!
//! libnvidia-ml is loaded at run time (`nvml-wrapper`): a machine without an NVIDIA
//! driver gets an error saying so, never a failed build or start.

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, PerformancePolicy, TemperatureSensor};
use nvml_wrapper::Nvml;

/// Which of NVML's devices a CUDA device index names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NvmlDevice {
    Index(u32),
    Uuid(String),
}

/// The NVML device behind CUDA device `cuda_index`, given `CUDA_VISIBLE_DEVICES`
/// (`visible`). CUDA numbers the devices it is shown from 0 in the order listed, by
/// index or UUID (`GPU-…`); without the variable, CUDA and NVML count alike on a machine
/// whose GPUs are all of one kind (CUDA puts the fastest first, NVML goes by PCI bus).
pub fn nvml_device(cuda_index: usize, visible: Option<&str>) -> Result<NvmlDevice, String> {
    let Some(visible) = visible.map(str::trim) else {
        return u32::try_from(cuda_index)
            .map(NvmlDevice::Index)
            .map_err(|_| format!("CUDA device {cuda_index} is past any NVML index"));
    };
    let entry = visible
        .split(',')
        .map(str::trim)
        .nth(cuda_index)
        .filter(|e| !e.is_empty())
        .ok_or_else(|| {
            format!("CUDA device {cuda_index} is not among CUDA_VISIBLE_DEVICES={visible}")
        })?;
    if let Ok(index) = entry.parse::<u32>() {
        return Ok(NvmlDevice::Index(index));
    }
    if entry.starts_with("GPU-") || entry.starts_with("MIG-") {
        return Ok(NvmlDevice::Uuid(entry.to_string()));
    }
    Err(format!(
        "CUDA_VISIBLE_DEVICES entry {entry:?} is neither an index nor a GPU UUID"
    ))
}

/// What NVML said at one moment; `None` for what this GPU or driver does not report.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuSnapshot {
    pub sm_clock_mhz: Option<u32>,
    /// NVML's `nvmlClocksThrottleReason*` bits.
    pub throttle_reasons: Option<u64>,
    /// Cumulative nanoseconds a thermal limit held the clocks below the application clocks.
    pub thermal_violation_ns: Option<u64>,
    /// The same for the power limit.
    pub power_violation_ns: Option<u64>,
    pub temperature_c: Option<u32>,
}

/// One GPU, opened through NVML.
pub struct GpuWatch {
    nvml: Nvml,
    device: NvmlDevice,
    /// NVML's name for the device (`NVIDIA H200`).
    pub name: String,
    pub uuid: String,
}

impl GpuWatch {
    /// Opens the GPU that CUDA device `cuda_index` is. The error says why it cannot be
    /// watched (no NVIDIA driver, no such device).
    pub fn open(cuda_index: usize) -> Result<GpuWatch, String> {
        let visible = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        let device = nvml_device(cuda_index, visible.as_deref())?;
        let nvml =
            Nvml::init().map_err(|e| format!("NVML (libnvidia-ml) is not available: {e}"))?;
        let (name, uuid) = {
            let d = handle(&nvml, &device)?;
            (
                d.name().unwrap_or_else(|_| "unknown NVIDIA GPU".into()),
                d.uuid().unwrap_or_default(),
            )
        };
        Ok(GpuWatch {
            nvml,
            device,
            name,
            uuid,
        })
    }

    /// The GPU now; each reading the device refuses is `None`.
    pub fn snapshot(&self) -> GpuSnapshot {
        let Ok(d) = handle(&self.nvml, &self.device) else {
            return GpuSnapshot::default();
        };
        GpuSnapshot {
            sm_clock_mhz: d.clock_info(Clock::SM).ok(),
            throttle_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
            thermal_violation_ns: d
                .violation_status(PerformancePolicy::Thermal)
                .ok()
                .map(|v| v.violation_time),
            power_violation_ns: d
                .violation_status(PerformancePolicy::Power)
                .ok()
                .map(|v| v.violation_time),
            temperature_c: d.temperature(TemperatureSensor::Gpu).ok(),
        }
    }
}

fn handle<'n>(nvml: &'n Nvml, device: &NvmlDevice) -> Result<nvml_wrapper::Device<'n>, String> {
    match device {
        NvmlDevice::Index(i) => nvml.device_by_index(*i),
        NvmlDevice::Uuid(u) => nvml.device_by_uuid(u.as_str()),
    }
    .map_err(|e| format!("NVML has no device {device:?}: {e}"))
}

/// NVML's throttle reasons by name, and whether each means the GPU was slowed by
/// something other than the work itself (heat, a power brake, a hardware slowdown): those
/// make a measurement untrustworthy. Idle, the power cap under full load and clocks an
/// administrator set are recorded but expected.
pub const THROTTLE_REASONS: &[(u64, &str, bool)] = &[
    (ThrottleReasons::GPU_IDLE.bits(), "gpu_idle", false),
    (
        ThrottleReasons::APPLICATIONS_CLOCKS_SETTING.bits(),
        "applications_clocks_setting",
        false,
    ),
    (ThrottleReasons::SW_POWER_CAP.bits(), "sw_power_cap", false),
    (ThrottleReasons::HW_SLOWDOWN.bits(), "hw_slowdown", true),
    (ThrottleReasons::SYNC_BOOST.bits(), "sync_boost", false),
    (
        ThrottleReasons::SW_THERMAL_SLOWDOWN.bits(),
        "sw_thermal_slowdown",
        true,
    ),
    (
        ThrottleReasons::HW_THERMAL_SLOWDOWN.bits(),
        "hw_thermal_slowdown",
        true,
    ),
    (
        ThrottleReasons::HW_POWER_BRAKE_SLOWDOWN.bits(),
        "hw_power_brake_slowdown",
        true,
    ),
    (
        ThrottleReasons::DISPLAY_CLOCK_SETTING.bits(),
        "display_clock_setting",
        false,
    ),
];

/// The names of the reasons set in `bits`, in NVML's order.
pub fn throttle_reason_names(bits: u64) -> Vec<&'static str> {
    THROTTLE_REASONS
        .iter()
        .filter(|(bit, _, _)| bits & bit != 0)
        .map(|(_, name, _)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_indices_map_through_cuda_visible_devices() {
        assert_eq!(nvml_device(1, None), Ok(NvmlDevice::Index(1)));
        assert_eq!(nvml_device(0, Some("3,1")), Ok(NvmlDevice::Index(3)));
        assert_eq!(nvml_device(1, Some(" 3, 1 ")), Ok(NvmlDevice::Index(1)));
        assert_eq!(
            nvml_device(0, Some("GPU-8f6a2e1c-0000")),
            Ok(NvmlDevice::Uuid("GPU-8f6a2e1c-0000".into()))
        );
        let past = nvml_device(2, Some("0,1")).unwrap_err();
        assert!(
            past.contains("not among CUDA_VISIBLE_DEVICES=0,1"),
            "{past}"
        );
        assert!(nvml_device(0, Some("")).is_err());
        assert!(nvml_device(0, Some("gpu0"))
            .unwrap_err()
            .contains("neither an index"));
    }

    #[test]
    fn throttle_reasons_are_named_and_the_harmful_ones_marked() {
        let bits =
            ThrottleReasons::SW_POWER_CAP.bits() | ThrottleReasons::HW_THERMAL_SLOWDOWN.bits();
        assert_eq!(
            throttle_reason_names(bits),
            ["sw_power_cap", "hw_thermal_slowdown"]
        );
        assert!(throttle_reason_names(0).is_empty());
        let harmful: Vec<&str> = THROTTLE_REASONS
            .iter()
            .filter(|r| r.2)
            .map(|r| r.1)
            .collect();
        assert_eq!(
            harmful,
            [
                "hw_slowdown",
                "sw_thermal_slowdown",
                "hw_thermal_slowdown",
                "hw_power_brake_slowdown"
            ]
        );
    }

    #[test]
    fn a_machine_without_nvml_says_so() {
        // The development and CI machines have no NVIDIA driver; a GPU machine has one.
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            return;
        }
        let why = GpuWatch::open(0).err().unwrap_or_default();
        assert!(
            why.contains("NVML (libnvidia-ml) is not available"),
            "{why}"
        );
    }
}
