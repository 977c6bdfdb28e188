//! `HeapPolicy::Keep` in a process of its own (it changes the whole process's heap): a
//! large block freed stays in the heap and the next one reuses it, where glibc's defaults
//! hand it back to the kernel.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn keep_reuses_freed_memory_instead_of_returning_it() {
    use cnnbench_host::allocator::{apply, current, HeapPolicy};
    let state = apply(HeapPolicy::Keep).expect("glibc accepts the settings");
    assert_eq!(state.policy, HeapPolicy::Keep);
    assert!(
        state.detail.contains("mmap threshold 1 GiB, trimming off"),
        "{}",
        state.detail
    );
    assert_eq!(current(), state, "the policy stays as applied");
    assert_eq!(
        apply(HeapPolicy::System)
            .expect("a second call is harmless")
            .policy,
        HeapPolicy::Keep,
        "the first policy holds for the life of the process"
    );

    // Under glibc's defaults a 16 MiB block is mmapped and unmapped when freed. (Tests
    // run on worker threads, whose arenas hold at most 64 MiB: the block stays below.)
    const BLOCK: usize = 16 << 20;
    let mut block = vec![1u8; BLOCK];
    std::hint::black_box(&mut block);
    drop(block);
    // SAFETY: mallinfo2 only reads glibc's statistics.
    let info = unsafe { libc::mallinfo2() };
    assert_eq!(info.hblkhd, 0, "nothing of this size is mmapped");
    assert!(
        info.fordblks >= BLOCK,
        "the freed 16 MiB stay in the heap, free for reuse ({} bytes free)",
        info.fordblks
    );
}
