//! The host machine as cnnbench sees it. Engines name their CPU device and learn the
//! memory they may use from here; the harness describes the machine in each result.
//! Kept apart so that the result schema and the report never link a system prober.

pub mod allocator;
pub mod contention;
pub mod gpu;
pub mod network;
pub mod wheel;

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

/// Seconds since this process started, by the kernel's record of its start (Linux
/// `/proc/self/stat`, to a clock tick): this includes loading shared libraries before
/// `main`, which a clock started in `main` would miss. `None` elsewhere.
pub fn process_age_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    // Field 22 (starttime, in clock ticks since boot); `rest` begins at field 3.
    let start_ticks: f64 = rest.split_whitespace().nth(22 - 3)?.parse().ok()?;
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // SAFETY: sysconf only reads a system constant.
    let ticks_per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks_per_s <= 0 {
        return None;
    }
    Some((uptime - start_ticks / ticks_per_s as f64).max(0.0))
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

    #[test]
    fn the_process_age_grows_and_is_plausible() {
        let a = process_age_s().expect("Linux says when a process started");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let b = process_age_s().unwrap();
        assert!((0.0..3600.0).contains(&a), "{a}");
        assert!(b >= a, "{a} then {b}");
    }
}
