//! What the process's heap does with memory a run frees. It is part of what a CPU
//! measurement measures: with glibc's defaults, large tensors are fresh `mmap`ed pages on
//! every pass (each page faulted in and zeroed by the kernel), and how often that happens
//! depends on the process's allocation history (glibc's dynamic mmap threshold and
//! heap trimming). A Python process running PyTorch and cnnbench's process running the
//! same libtorch took 3.4 s and 3.8 s for a ResNet-50 training pass on the same machine
//! for that reason alone, and both 2.8 s once freed memory was kept. cnnbench therefore
//! keeps freed memory by default and records the policy in every result.

use std::sync::OnceLock;

/// What the allocator does with freed memory, as chosen for this process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapPolicy {
    /// Keep freed memory for reuse (glibc: mmap threshold 1 GiB, trimming off), so that
    /// every pass reuses the pages of the one before; set once, at start-up.
    Keep,
    /// Leave the C library's allocator as it comes (glibc: a dynamic mmap threshold from
    /// 128 KiB up to 32 MiB, the heap trimmed when its free top exceeds twice that;
    /// `GLIBC_TUNABLES` still applies).
    System,
}

impl HeapPolicy {
    /// The policy's name in results and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            HeapPolicy::Keep => "keep",
            HeapPolicy::System => "system",
        }
    }
}

/// The policy in force and what was done to get it, as results record it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapState {
    pub policy: HeapPolicy,
    /// The allocator and its settings in words, e.g. `glibc 2.36: mmap threshold 1 GiB,
    /// trimming off`.
    pub detail: String,
}

static APPLIED: OnceLock<HeapState> = OnceLock::new();

/// The largest mmap threshold asked for: every tensor a CNN benchmark makes is smaller,
/// so all of them come from the heap and are reused.
const KEEP_MMAP_THRESHOLD: i32 = 1 << 30;

/// Sets the process's heap policy. Call it once, first thing, before other threads start
/// and before large allocations; later calls keep the first policy and return it.
pub fn apply(policy: HeapPolicy) -> Result<HeapState, String> {
    if let Some(state) = APPLIED.get() {
        return Ok(state.clone());
    }
    let detail = match policy {
        HeapPolicy::Keep => keep_freed_memory()?,
        HeapPolicy::System => system_detail(),
    };
    Ok(APPLIED.get_or_init(|| HeapState { policy, detail }).clone())
}

/// The policy in force: the one [`apply`] set, or the C library's own when nothing was
/// applied (library users, tests).
pub fn current() -> HeapState {
    APPLIED.get().cloned().unwrap_or_else(|| HeapState {
        policy: HeapPolicy::System,
        detail: system_detail(),
    })
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() -> Result<String, String> {
    // SAFETY: mallopt only changes glibc's malloc parameters; it is called at start-up,
    // and -1 for M_TRIM_THRESHOLD is glibc's documented "never trim".
    let (mmap, trim) = unsafe {
        (
            libc::mallopt(libc::M_MMAP_THRESHOLD, KEEP_MMAP_THRESHOLD),
            libc::mallopt(libc::M_TRIM_THRESHOLD, -1),
        )
    };
    if mmap != 1 || trim != 1 {
        return Err(format!(
            "{} refused the heap settings (mallopt returned {mmap} for the mmap threshold, {trim} for trimming); run with --allocator system",
            glibc_version()
        ));
    }
    Ok(format!(
        "{}: mmap threshold 1 GiB, trimming off{}",
        glibc_version(),
        preload_note()
    ))
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() -> Result<String, String> {
    Ok("the platform's allocator, unchanged (not glibc: there is nothing to set)".to_string())
}

fn system_detail() -> String {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let tunables = std::env::var("GLIBC_TUNABLES")
            .ok()
            .filter(|t| t.contains("glibc.malloc."))
            .map(|t| format!(" with GLIBC_TUNABLES={t}"))
            .unwrap_or_default();
        format!("{} defaults{tunables}{}", glibc_version(), preload_note())
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        "the platform's allocator".to_string()
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_version() -> String {
    // SAFETY: gnu_get_libc_version returns a pointer to a static, NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    format!("glibc {}", version.to_string_lossy())
}

/// A preloaded allocator (jemalloc, tcmalloc, mimalloc) replaces glibc's malloc, and
/// glibc's settings then do not apply: say so.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn preload_note() -> String {
    std::env::var("LD_PRELOAD")
        .ok()
        .filter(|p| {
            ["jemalloc", "tcmalloc", "mimalloc"]
                .iter()
                .any(|a| p.contains(a))
        })
        .map(|p| format!("; LD_PRELOAD={p} replaces malloc, so these settings may not apply"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_apply_the_system_allocator_is_reported() {
        // Tests never call apply, so the state is the C library's own.
        let state = current();
        assert_eq!(state.policy, HeapPolicy::System);
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        assert!(state.detail.starts_with("glibc 2."), "{}", state.detail);
    }
}
