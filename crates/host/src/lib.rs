//! The host machine as cnnbench sees it. Engines name their CPU device and learn the
//! memory they may use from here; the harness describes the machine in each result.
//! Kept apart so that the result schema and the report never link a system prober.

pub mod allocator;

use sysinfo::{CpuRefreshKind, System};

/// The CPU's model name, as CPU engines report their device; a readable stand-in when
/// the system does not say.
pub fn cpu_name() -> String {
    let mut system = System::new();
    system.refresh_cpu_list(CpuRefreshKind::nothing());
    system
        .cpus()
        .first()
        .map(|c| c.brand().trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| format!("unknown {} CPU", std::env::consts::ARCH))
}

/// Physical memory in bytes, the limit for CPU engines; `None` where it cannot be read.
pub fn memory_bytes() -> Option<u64> {
    let mut system = System::new();
    system.refresh_memory();
    Some(system.total_memory()).filter(|&m| m > 0)
}

/// Memory the system can still hand out now, in bytes.
pub fn available_memory_bytes() -> u64 {
    let mut system = System::new();
    system.refresh_memory();
    system.available_memory()
}

/// Logical cores the process may use.
pub fn logical_cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Physical cores, where the system says.
pub fn physical_cores() -> Option<usize> {
    System::physical_core_count()
}

/// The operating system's long name, e.g. `Linux (Debian GNU/Linux 13)`.
pub fn os_name() -> String {
    System::long_os_version().unwrap_or_else(|| std::env::consts::OS.into())
}

/// The kernel's version, empty where unknown.
pub fn kernel_version() -> String {
    System::kernel_version().unwrap_or_default()
}

/// This host's name, to tell the machines of a cluster apart in results: `CNNBENCH_HOST`
/// when set (a Kubernetes pod sets it to its node's name, since the pod's own host name
/// is the pod's), else the system's host name.
pub fn host_name() -> Option<String> {
    std::env::var("CNNBENCH_HOST")
        .ok()
        .or_else(System::host_name)
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_named_cpu_memory_and_cores() {
        assert!(!cpu_name().is_empty());
        let total = memory_bytes().expect("Linux reports its memory");
        assert!(total > 64 << 20, "implausible memory: {total} bytes");
        assert!(available_memory_bytes() <= total);
        assert!(logical_cores() >= 1);
        assert!(physical_cores().is_none_or(|p| p >= 1 && p <= logical_cores()));
    }
}
