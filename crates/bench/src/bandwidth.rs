//! The machine's memory ceilings for the roofline: the bandwidth of each cache level and
//! of DRAM, streamed by a copy (read once, written once) on the engine's thread count,
//! each thread on its own buffers. The copy is the C library's (`memcpy`, which picks
//! the widest vector instructions the CPU has at run time), so the figure is the
//! machine's and not one engine's kernel: the roofline sets every engine's layers
//! against the same memory. The cache levels are read from Linux's sysfs.

use anyhow::{anyhow, Result};
use cnnbench_results::peak::MemoryLevelPeak;
use cnnbench_results::stats::Summary;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// One cache level as sysfs describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheLevel {
    /// 1, 2, 3.
    pub level: u32,
    /// Bytes of one instance.
    pub bytes_per_instance: u64,
    /// Instances the first `threads` CPUs use (one per core for a private L2, one for
    /// an L3 they share).
    pub instances: usize,
}

impl CacheLevel {
    /// The bytes the level holds over its instances.
    pub fn holds_bytes(&self) -> u64 {
        self.bytes_per_instance
            .saturating_mul(self.instances as u64)
    }
}

/// A cache level's size in sysfs's words (`32K`, `1024K`, `32M`).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let n: u64 = digits.parse().ok()?;
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// The data and unified cache levels the first `threads` CPUs use, from the smallest,
/// read under `cpu_dir` (`/sys/devices/system/cpu`); empty where it says nothing.
pub fn cache_levels(cpu_dir: &Path, threads: usize) -> Vec<CacheLevel> {
    // level → (bytes per instance, the distinct CPU lists sharing an instance)
    let mut found: std::collections::BTreeMap<u32, (u64, std::collections::BTreeSet<String>)> =
        Default::default();
    for cpu in 0..threads.max(1) {
        let Ok(entries) = std::fs::read_dir(cpu_dir.join(format!("cpu{cpu}/cache"))) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
            let kind = read("type").unwrap_or_default();
            if !matches!(kind.trim(), "Data" | "Unified") {
                continue;
            }
            let (Some(level), Some(bytes)) = (
                read("level").and_then(|l| l.trim().parse::<u32>().ok()),
                read("size").as_deref().and_then(parse_size),
            ) else {
                continue;
            };
            let shared = read("shared_cpu_list").unwrap_or_else(|| format!("{cpu}"));
            let slot = found.entry(level).or_insert((bytes, Default::default()));
            slot.1.insert(shared.trim().to_string());
        }
    }
    found
        .into_iter()
        .map(|(level, (bytes_per_instance, shared))| CacheLevel {
            level,
            bytes_per_instance,
            instances: shared.len().max(1),
        })
        .collect()
}

/// Cache levels too small to stream through without the loop's own costs dominating:
/// L1 (32–48 KiB a core) is left to the compute roof.
const SMALLEST_STREAMED: u64 = 128 << 10;

/// Bytes moved per timed pass, at least: enough for a pass to take a millisecond or
/// more at a cache's bandwidth.
const BYTES_PER_PASS: u64 = 256 << 20;

/// The bandwidth of each cache level the threads use (from L2, at half of what each
/// level holds, source and destination together) and of DRAM (`dram_bytes`, source and
/// destination together), `passes` timed passes each after one untimed.
pub fn measure_levels(
    levels: &[CacheLevel],
    dram_bytes: u64,
    threads: usize,
    passes: usize,
    cancel: &AtomicBool,
) -> Result<Vec<MemoryLevelPeak>> {
    let mut out = Vec::new();
    for level in levels {
        let holds = level.holds_bytes();
        // A level at least a quarter of DRAM's working set cannot be told from it.
        if holds < SMALLEST_STREAMED || holds.saturating_mul(4) > dram_bytes {
            continue;
        }
        out.push(stream(
            &format!("L{}", level.level),
            Some(holds),
            holds / 2,
            threads,
            passes,
            cancel,
        )?);
    }
    out.push(stream("DRAM", None, dram_bytes, threads, passes, cancel)?);
    Ok(out)
}

/// Streams copies over `working_set` bytes (each of `threads` threads copying its own
/// source into its own destination, as often as a pass needs) and times `passes`.
fn stream(
    level: &str,
    holds_bytes: Option<u64>,
    working_set: u64,
    threads: usize,
    passes: usize,
    cancel: &AtomicBool,
) -> Result<MemoryLevelPeak> {
    let threads = threads.max(1);
    let per_thread = usize::try_from(working_set / 2 / threads as u64)
        .map_err(|_| anyhow!("a working set of {working_set} bytes does not fit in memory"))?;
    if per_thread == 0 || passes == 0 {
        return Err(anyhow!(
            "streaming {level}: nothing to stream ({working_set} bytes, {passes} passes)"
        ));
    }
    let repeats = (BYTES_PER_PASS / (2 * per_thread as u64 * threads as u64)).max(1) as usize;
    let mut buffers: Vec<(Vec<u8>, Vec<u8>)> = (0..threads)
        .map(|t| (vec![t as u8 + 1; per_thread], vec![0u8; per_thread]))
        .collect();
    let pass = |buffers: &mut [(Vec<u8>, Vec<u8>)]| -> f64 {
        let start = Instant::now();
        std::thread::scope(|scope| {
            for (source, destination) in buffers.iter_mut() {
                scope.spawn(move || {
                    for _ in 0..repeats {
                        destination.copy_from_slice(source);
                        std::hint::black_box(&mut *destination);
                    }
                });
            }
        });
        start.elapsed().as_secs_f64()
    };
    pass(&mut buffers);
    let mut samples = Vec::with_capacity(passes);
    for _ in 0..passes {
        if cancel.load(Ordering::Relaxed) {
            return Err(anyhow!("interrupted while streaming {level}"));
        }
        samples.push(pass(&mut buffers));
    }
    let bytes = 2.0 * per_thread as f64 * threads as f64 * repeats as f64;
    let time = Summary::of(&samples).ok_or_else(|| anyhow!("no samples of {level}"))?;
    Ok(MemoryLevelPeak {
        level: level.to_string(),
        holds_bytes,
        working_set_bytes: 2 * per_thread as u64 * threads as u64,
        bytes,
        gb_per_s: bytes / time.min / 1e9,
        time,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(dir: &Path, cpu: usize, index: usize, fields: [(&str, &str); 4]) {
        let at = dir.join(format!("cpu{cpu}/cache/index{index}"));
        std::fs::create_dir_all(&at).unwrap();
        for (name, value) in fields {
            std::fs::write(at.join(name), format!("{value}\n")).unwrap();
        }
    }

    /// A two-core machine as sysfs shows it: a private L1d, L1i and L2 per core, one L3
    /// shared by both.
    #[test]
    fn the_cache_levels_are_read_from_sysfs_with_the_instances_the_threads_use() {
        let dir = tempfile::tempdir().unwrap();
        for cpu in 0..2 {
            let own = cpu.to_string();
            let own = own.as_str();
            cache(
                dir.path(),
                cpu,
                0,
                [
                    ("level", "1"),
                    ("type", "Data"),
                    ("size", "32K"),
                    ("shared_cpu_list", own),
                ],
            );
            cache(
                dir.path(),
                cpu,
                1,
                [
                    ("level", "1"),
                    ("type", "Instruction"),
                    ("size", "32K"),
                    ("shared_cpu_list", own),
                ],
            );
            cache(
                dir.path(),
                cpu,
                2,
                [
                    ("level", "2"),
                    ("type", "Unified"),
                    ("size", "1024K"),
                    ("shared_cpu_list", own),
                ],
            );
            cache(
                dir.path(),
                cpu,
                3,
                [
                    ("level", "3"),
                    ("type", "Unified"),
                    ("size", "32M"),
                    ("shared_cpu_list", "0-1"),
                ],
            );
        }
        let two = cache_levels(dir.path(), 2);
        let holds: Vec<(u32, u64)> = two.iter().map(|l| (l.level, l.holds_bytes())).collect();
        assert_eq!(holds, [(1, 64 << 10), (2, 2 << 20), (3, 32 << 20)]);
        let one = cache_levels(dir.path(), 1);
        assert_eq!(one[1].holds_bytes(), 1 << 20, "one thread uses one L2");
        assert_eq!(one[2].holds_bytes(), 32 << 20);
        assert!(cache_levels(&dir.path().join("absent"), 2).is_empty());
        assert_eq!(parse_size("48K"), Some(48 << 10));
        assert_eq!(parse_size("1M\n"), Some(1 << 20));
        assert_eq!(parse_size("12Q"), None);
    }

    /// The levels measured are those a stream can tell apart: L1 is too small, a level
    /// near DRAM's working set is DRAM's; each comes with its bytes and spread.
    #[test]
    fn the_levels_streamed_are_the_caches_between_l1_and_dram() {
        let levels = [
            CacheLevel {
                level: 1,
                bytes_per_instance: 32 << 10,
                instances: 1,
            },
            CacheLevel {
                level: 2,
                bytes_per_instance: 512 << 10,
                instances: 1,
            },
            CacheLevel {
                level: 3,
                bytes_per_instance: 8 << 20,
                instances: 1,
            },
        ];
        let cancel = AtomicBool::new(false);
        let measured = measure_levels(&levels, 16 << 20, 2, 2, &cancel).unwrap();
        let names: Vec<&str> = measured.iter().map(|m| m.level.as_str()).collect();
        assert_eq!(names, ["L2", "DRAM"]);
        assert_eq!(measured[0].holds_bytes, Some(512 << 10));
        assert_eq!(measured[0].working_set_bytes, 256 << 10);
        assert_eq!(measured[1].holds_bytes, None);
        for m in &measured {
            assert_eq!(m.time.count, 2);
            assert!(m.gb_per_s > 0.0 && m.bytes >= m.working_set_bytes as f64);
        }
        cancel.store(true, Ordering::Relaxed);
        assert!(measure_levels(&levels, 16 << 20, 2, 2, &cancel).is_err());
    }
}
