//! The machine a run happened on, captured for every result file. No host name is
//! recorded: users who want one pass `--label`.

use crate::result::MachineInfo;

/// Describes this machine for a result file.
pub fn detect_machine() -> MachineInfo {
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    MachineInfo {
        cpu: cnnbench_engine::host_cpu_name(),
        cores_logical: std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        cores_physical: sysinfo::System::physical_core_count(),
        memory_bytes: system.total_memory(),
        os: sysinfo::System::long_os_version().unwrap_or_else(|| std::env::consts::OS.into()),
        kernel: sysinfo::System::kernel_version().unwrap_or_default(),
        arch: std::env::consts::ARCH.into(),
    }
}

/// Memory the system can still hand out, in bytes.
pub fn available_memory() -> u64 {
    let mut system = sysinfo::System::new();
    system.refresh_memory();
    system.available_memory()
}
