//! Memory: the process's resident high-water mark (Linux), reset between models so each
//! result reports its own peak, and an estimate of what a run will need.

use cnnbench_engine::Mode;
use cnnbench_graph::Graph;
use cnnbench_results::scenario::ScenarioSpec;

/// Resets the kernel's resident-set high-water mark for this process (Linux ≥ 4.0,
/// `echo 5 > /proc/self/clear_refs`). Returns whether it worked.
///
/// The reset sets the mark to the current resident size, so memory that an earlier
/// model freed but the allocator kept would count against the next model: glibc's
/// allocator is first asked to hand free pages back to the kernel.
pub fn reset_peak_rss() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's resident-set high-water mark in bytes (`VmHWM`), where the OS reports it.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|kb| kb.trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// A deliberately rough upper estimate of the bytes a run needs, from the Graph alone:
/// weights (plus gradients, plus momentum in step mode) and activations. Training keeps
/// every node's output for backward and allocates a gradient of the same size; inference
/// holds only a few activations at a time. Saturates at `u64::MAX` rather than wrap
/// (a batch of 10^16 must not look smaller than one of 10^14).
pub fn estimate_bytes(graph: &Graph, mode: Mode, batch: usize) -> u64 {
    const F32: u64 = 4;
    let weights = (graph.params().saturating_add(graph.buffers())).saturating_mul(F32);
    let largest = graph
        .nodes()
        .iter()
        .map(|n| n.shape.elements())
        .max()
        .unwrap_or(0);
    let batch = batch as u64;
    let per_batch = |elements: u64, copies: u64| {
        elements
            .saturating_mul(batch)
            .saturating_mul(F32)
            .saturating_mul(copies)
    };
    match mode {
        Mode::Infer => weights.saturating_add(per_batch(largest, 3)),
        Mode::Train => weights
            .saturating_mul(2)
            .saturating_add(per_batch(graph.activation_elements(), 2)),
        Mode::Step => weights
            .saturating_mul(3)
            .saturating_add(per_batch(graph.activation_elements(), 2)),
    }
}

/// The batch of every session a run holds at once: the one session at `batch`, or for a
/// scenario one per query in flight (`--in-flight`), each with the dynamic batcher's
/// sessions at its larger batches (`--max-batch`): every session is prepared before the
/// first query and holds its own weights and activations, so all of them must fit.
pub fn session_batches(batch: usize, scenario: Option<&ScenarioSpec>) -> Vec<usize> {
    let Some(scenario) = scenario else {
        return vec![batch];
    };
    let per_query: Vec<usize> = match &scenario.batcher {
        // The batcher's sessions compute that many queries of `batch` samples a call.
        Some(batcher) => batcher
            .session_batch_sizes()
            .into_iter()
            .map(|queries| queries.saturating_mul(batch))
            .collect(),
        None => vec![batch],
    };
    std::iter::repeat_n(per_query, scenario.in_flight.max(1))
        .flatten()
        .collect()
}

/// [`estimate_bytes`] summed over every session the run holds at once
/// ([`session_batches`]).
pub fn estimate_run_bytes(
    graph: &Graph,
    mode: Mode,
    batch: usize,
    scenario: Option<&ScenarioSpec>,
) -> u64 {
    session_batches(batch, scenario)
        .into_iter()
        .map(|b| estimate_bytes(graph, mode, b))
        .fold(0, u64::saturating_add)
}

/// An estimate past this (1 EiB) is beyond any machine: refused even with `--force`,
/// since the engines' own size arithmetic would overflow (burn panics, allocators abort).
pub const BEYOND_ANY_MACHINE: u64 = 1 << 60;

/// The largest batch whose estimate fits in `available` bytes (0 if not even 1 fits).
pub fn largest_batch_that_fits(graph: &Graph, mode: Mode, available: u64) -> usize {
    let (mut lo, mut hi) = (0usize, 1usize);
    while hi < 1 << 20 && estimate_bytes(graph, mode, hi) <= available {
        lo = hi;
        hi *= 2;
    }
    // Invariant: estimate(lo) fits (or lo == 0), estimate(hi) does not.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if estimate_bytes(graph, mode, mid) <= available {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_grows_with_the_batch_and_saturates() {
        let mut g = cnnbench_graph::GraphBuilder::new("tiny", [3, 8, 8]);
        let x = g.input();
        let y = g.relu("r", &x);
        let graph = g.finish(&y).unwrap();
        for mode in [Mode::Infer, Mode::Train, Mode::Step] {
            let small = estimate_bytes(&graph, mode, 100_000_000_000_000);
            let large = estimate_bytes(&graph, mode, 10_000_000_000_000_000);
            assert!(large > small, "{mode}: {large} <= {small}");
            assert_eq!(estimate_bytes(&graph, mode, usize::MAX), u64::MAX);
        }
    }

    /// Round four (#63): `--in-flight 64` on vgg19 grew past 10 GB while the check
    /// counted one session; every session a scenario holds is counted now.
    #[test]
    fn a_scenario_is_estimated_with_every_session_it_holds() {
        use cnnbench_results::scenario::{BatcherSpec, ScenarioKind};
        let mut g = cnnbench_graph::GraphBuilder::new("tiny", [3, 8, 8]);
        let x = g.input();
        let y = g.relu("r", &x);
        let graph = g.finish(&y).unwrap();
        let server = |in_flight, batcher| ScenarioSpec {
            kind: ScenarioKind::Server,
            samples_per_query: 1,
            target_qps: Some(10.0),
            latency_bound_ms: None,
            min_duration_s: 1.0,
            min_queries: 100,
            find_peak: false,
            in_flight,
            batcher,
        };
        assert_eq!(session_batches(2, None), vec![2]);
        assert_eq!(session_batches(1, Some(&server(3, None))), vec![1, 1, 1]);
        let batcher = Some(BatcherSpec {
            max_batch: 6,
            timeout_ms: 1.0,
        });
        assert_eq!(
            session_batches(1, Some(&server(2, batcher))),
            vec![1, 2, 4, 6, 1, 2, 4, 6]
        );
        let one = estimate_bytes(&graph, Mode::Infer, 1);
        assert_eq!(
            estimate_run_bytes(&graph, Mode::Infer, 1, Some(&server(64, None))),
            64 * one
        );
        assert_eq!(estimate_run_bytes(&graph, Mode::Infer, 1, None), one);
        // A count past any machine saturates rather than wraps.
        assert_eq!(
            estimate_run_bytes(&graph, Mode::Infer, usize::MAX, Some(&server(4, None))),
            u64::MAX
        );
    }

    #[test]
    fn peak_rss_is_read_and_resettable_on_linux() {
        if cfg!(target_os = "linux") {
            let peak = peak_rss().expect("VmHWM in /proc/self/status");
            assert!(peak > 0);
            assert!(reset_peak_rss());
        }
    }
}
