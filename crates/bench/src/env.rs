//! The machine a run happened on, captured for every result file. No host name is
//! recorded: users who want one pass `--label`.

use crate::result::{AllocatorRecord, MachineInfo};

/// Describes this machine for a result file.
pub fn detect_machine() -> MachineInfo {
    MachineInfo {
        cpu: cnnbench_host::cpu_name(),
        cores_logical: cnnbench_host::logical_cores(),
        cores_physical: cnnbench_host::physical_cores(),
        memory_bytes: cnnbench_host::memory_bytes().unwrap_or(0),
        os: cnnbench_host::os_name(),
        kernel: cnnbench_host::kernel_version(),
        arch: std::env::consts::ARCH.into(),
    }
}

/// Memory the system can still hand out, in bytes.
pub fn available_memory() -> u64 {
    cnnbench_host::available_memory_bytes()
}

/// The heap policy of this process (set at start-up by the CLI's `--allocator`), for a
/// result file.
pub fn allocator_record() -> AllocatorRecord {
    let state = cnnbench_host::allocator::current();
    AllocatorRecord {
        policy: state.policy.as_str().to_string(),
        detail: state.detail,
    }
}
