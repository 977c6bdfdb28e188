//! `-b max`: the largest batch that fits on the device. The search (the estimate first,
//! then doubling or halving, then bisection) and the reading of how a probe ended live
//! here, beside the memory estimate; the command line runs each probe as a child process
//! and hands this module what it printed.

use crate::result::{BatchProbe, BatchSearch, ProbeOutcome};
use anyhow::{anyhow, Result};
use cnnbench_results::bytes;
use std::process::Output;

/// Largest batch `-b max` tries: past this, something is wrong with the estimate.
pub const MAX_BATCH: usize = 1 << 16;

/// What a probe child measured, printed as one JSON line.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct ProbeReport {
    pub peak_rss_bytes: Option<u64>,
    pub device_peak_bytes: Option<u64>,
}

impl ProbeReport {
    /// The memory that counts against the device: the GPU's peak where tracked, else
    /// the process's resident peak.
    pub fn peak(&self) -> Option<u64> {
        self.device_peak_bytes.or(self.peak_rss_bytes)
    }
}

/// Classifies how a probe child ended. `Err` when it failed for a reason other than
/// memory (a model it cannot run): the search must stop and say so, not call it a miss.
pub fn classify_probe(batch: usize, output: &Output, available: u64) -> Result<BatchProbe> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last_line = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    if output.status.success() {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let report: ProbeReport = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .ok_or_else(|| anyhow!("the probe at batch {batch} printed no memory report"))?;
        let peak = report.peak();
        let fits = peak.is_none_or(|p| p <= available);
        return Ok(BatchProbe {
            batch_size: batch,
            outcome: if fits {
                ProbeOutcome::Fits
            } else {
                ProbeOutcome::OverLimit
            },
            peak_bytes: peak,
            detail: None,
        });
    }
    let lower = stderr.to_ascii_lowercase();
    let said_memory = [
        "out of memory",
        "memory allocation of",
        "cannot allocate",
        "oom",
    ]
    .iter()
    .any(|m| lower.contains(m));
    let signal = killed_by(output);
    if said_memory || signal.is_some() {
        let how = match signal {
            Some(sig) => format!("the probe was killed by signal {sig}"),
            None => "the engine ran out of memory".to_string(),
        };
        let detail = if last_line.is_empty() {
            how
        } else {
            format!("{how}: {last_line}")
        };
        return Ok(BatchProbe {
            batch_size: batch,
            outcome: ProbeOutcome::OutOfMemory,
            peak_bytes: None,
            detail: Some(detail),
        });
    }
    Err(anyhow!(
        "the probe at batch {batch} failed for a reason other than memory: {last_line}"
    ))
}

#[cfg(unix)]
fn killed_by(output: &Output) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    output.status.signal()
}

#[cfg(not(unix))]
fn killed_by(_: &Output) -> Option<i32> {
    None
}

/// Finds the largest batch that fits: the estimate first, then probes that double up
/// from a fitting batch (or halve down from a failing one) and bisect between the
/// largest that fits and the smallest that does not. Each batch is probed once.
pub fn search_max_batch(
    estimated_batch: usize,
    available_bytes: u64,
    available_from: &str,
    probe: &mut dyn FnMut(usize) -> Result<BatchProbe>,
) -> Result<BatchSearch> {
    let mut probes: Vec<BatchProbe> = Vec::new();
    let mut try_batch = |b: usize, probes: &mut Vec<BatchProbe>| -> Result<bool> {
        let p = probe(b)?;
        let fits = p.outcome == ProbeOutcome::Fits;
        probes.push(p);
        Ok(fits)
    };
    let start = estimated_batch.clamp(1, MAX_BATCH);
    let (mut lo, mut hi);
    if try_batch(start, &mut probes)? {
        lo = start;
        hi = None;
        while lo < MAX_BATCH {
            let next = (lo * 2).min(MAX_BATCH);
            if try_batch(next, &mut probes)? {
                lo = next;
            } else {
                hi = Some(next);
                break;
            }
        }
    } else {
        hi = Some(start);
        lo = 0;
        let mut b = start / 2;
        while b >= 1 {
            if try_batch(b, &mut probes)? {
                lo = b;
                break;
            }
            hi = Some(b);
            b /= 2;
        }
        if lo == 0 {
            return Err(anyhow!(
                "not even batch 1 fits in {} ({available_from}): {}",
                bytes(available_bytes),
                describe(&probes)
            ));
        }
    }
    if let Some(mut hi) = hi {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if try_batch(mid, &mut probes)? {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    Ok(BatchSearch {
        available_bytes,
        available_from: available_from.to_string(),
        estimated_batch,
        probes,
        chosen: lo,
    })
}

/// "1: fits (12.0 MiB), 2: over the limit (40.0 MiB), …" for messages.
pub fn describe(probes: &[BatchProbe]) -> String {
    probes
        .iter()
        .map(|p| {
            let what = match p.outcome {
                ProbeOutcome::Fits => "fits",
                ProbeOutcome::OverLimit => "over the limit",
                ProbeOutcome::OutOfMemory => "out of memory",
            };
            match (p.peak_bytes, &p.detail) {
                (Some(b), _) => format!("{}: {what} ({})", p.batch_size, bytes(b)),
                (None, Some(d)) => format!("{}: {what} ({d})", p.batch_size),
                (None, None) => format!("{}: {what}", p.batch_size),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe that fits up to `limit` and runs out of memory above it.
    fn up_to(limit: usize) -> impl FnMut(usize) -> Result<BatchProbe> {
        move |b| {
            Ok(BatchProbe {
                batch_size: b,
                outcome: if b <= limit {
                    ProbeOutcome::Fits
                } else {
                    ProbeOutcome::OutOfMemory
                },
                peak_bytes: None,
                detail: None,
            })
        }
    }

    #[test]
    fn the_search_finds_the_largest_fitting_batch_from_any_estimate() {
        for (estimate, limit) in [
            (8, 37),
            (64, 37),
            (1, 1),
            (0, 5),
            (37, 37),
            (38, 37),
            (5, 1),
        ] {
            let s = search_max_batch(estimate, 1, "test", &mut up_to(limit)).unwrap();
            assert_eq!(s.chosen, limit, "estimate {estimate}");
            let tried: Vec<usize> = s.probes.iter().map(|p| p.batch_size).collect();
            let mut unique = tried.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(unique.len(), tried.len(), "each batch once: {tried:?}");
            assert!(tried.len() <= 16, "{tried:?}");
            // The evidence is in the record: the chosen batch fit, the next did not.
            assert!(s
                .probes
                .iter()
                .any(|p| p.batch_size == limit && p.outcome == ProbeOutcome::Fits));
            assert!(s
                .probes
                .iter()
                .any(|p| p.batch_size == limit + 1 && p.outcome != ProbeOutcome::Fits));
        }
        assert_eq!(
            search_max_batch(8, 1, "test", &mut up_to(8))
                .unwrap()
                .probes[0]
                .batch_size,
            8,
            "the estimate is tried first"
        );
        let none = search_max_batch(4, 1 << 20, "--memory-limit", &mut up_to(0)).unwrap_err();
        assert!(none.to_string().contains("not even batch 1 fits"), "{none}");
    }

    #[cfg(unix)]
    #[test]
    fn probe_endings_are_classified() {
        use std::os::unix::process::ExitStatusExt;
        let out = |code: i32, stdout: &str, stderr: &str| Output {
            status: std::process::ExitStatus::from_raw(code),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        };
        let report = r#"{"peak_rss_bytes": 1000, "device_peak_bytes": null}"#;
        let fits = classify_probe(4, &out(0, report, ""), 1000).unwrap();
        assert_eq!(
            (fits.outcome, fits.peak_bytes),
            (ProbeOutcome::Fits, Some(1000))
        );
        let over = classify_probe(4, &out(0, report, ""), 999).unwrap();
        assert_eq!(over.outcome, ProbeOutcome::OverLimit);
        // Killed by SIGABRT (6), as burn-flex ends on a failed allocation.
        let abort = classify_probe(
            8,
            &out(6, "", "memory allocation of 123456789 bytes failed\n"),
            1000,
        )
        .unwrap();
        assert_eq!(abort.outcome, ProbeOutcome::OutOfMemory);
        let detail = abort.detail.unwrap();
        assert!(
            detail.contains("signal 6") && detail.contains("memory allocation"),
            "{detail}"
        );
        // An engine error that says so (exit status 1).
        let oom = classify_probe(8, &out(1 << 8, "", "error: CUDA out of memory"), 1000).unwrap();
        assert_eq!(oom.outcome, ProbeOutcome::OutOfMemory);
        // Anything else is not a memory problem and stops the search.
        let other = classify_probe(8, &out(1 << 8, "", "error: unknown op Foo"), 1000).unwrap_err();
        assert!(other.to_string().contains("unknown op Foo"), "{other}");
    }
}
