//! The table `cnnbench run` prints when it has measured: one row per result just written,
//! the columns the run's mode calls for (inference shows a batch's latency with its tail,
//! training its phases), and the notes that say how to read them. The cells are built
//! here, beside every other table of results, and drawn by the exporters' table writer.

use crate::export::pretty::{styled_table, TableStyle};
use crate::fmt::ms;
use cnnbench_results::result::{BenchResult, StopReason};
use cnnbench_results::{bytes, Mode, Quantity};

/// What `cnnbench run` shows for the results it has just measured.
#[derive(Clone, Debug, PartialEq)]
pub struct RunTable {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// How to read the table (what the times are, data-parallel counting, % of peak),
    /// one line each.
    pub notes: Vec<String>,
    /// What makes a number in it suspect, one line each (printed as `warning: …`).
    pub warnings: Vec<String>,
}

/// "123.45 ± 1.23" in milliseconds: the median and the sample standard deviation.
fn median_and_std(result: &BenchResult, quantity: Quantity) -> String {
    match result.summary.get(&quantity) {
        Some(s) => format!("{} ± {}", ms(s.median), ms(s.std)),
        None => "–".into(),
    }
}

/// A percentile of the total in milliseconds, "–" in a version 1 result.
fn percentile_ms(result: &BenchResult, name: &str) -> String {
    result
        .summary
        .get(&Quantity::Total)
        .and_then(|s| s.percentiles)
        .and_then(|p| p.get(name))
        .map_or("–".into(), ms)
}

/// "10", or "37 (target-ci, ±1.9%)" when something other than the pass count stopped it.
fn passes(result: &BenchResult) -> String {
    let count = result.summary.get(&Quantity::Total).map_or(0, |s| s.count);
    match &result.stop {
        Some(stop) if stop.reason != StopReason::Passes => match stop.median_ci95_rel {
            Some(ci) => format!("{count} ({}, ±{:.1}%)", stop.reason, ci * 100.0),
            None => format!("{count} ({})", stop.reason),
        },
        _ => count.to_string(),
    }
}

impl RunTable {
    /// One table across every model and sweep point; `None` when nothing was measured.
    pub fn new(results: &[&BenchResult]) -> Option<RunTable> {
        let first = *results.first()?;
        let all_infer = results.iter().all(|r| r.config.mode == Mode::Infer);
        let with = |q: Quantity| results.iter().any(|r| r.summary.contains_key(&q));
        let (with_update, with_allreduce) = (with(Quantity::Update), with(Quantity::Allreduce));
        let ranks = results.iter().filter_map(|r| r.config.world_size).max();
        let mut head = vec!["Model", "Engine", "Device", "Mode", "Batch"];
        if ranks.is_some() {
            head.push("Ranks");
        }
        let mut phases = vec![];
        if all_infer {
            head.extend(["Latency (ms)", "p90 (ms)", "p99 (ms)"]);
        } else {
            phases.extend([
                (Quantity::Forward, "Forward (ms)"),
                (Quantity::Backward, "Backward (ms)"),
            ]);
            if with_allreduce {
                phases.push((Quantity::Allreduce, "Allreduce (ms)"));
            }
            if with_update {
                phases.push((Quantity::Update, "Update (ms)"));
            }
            phases.push((Quantity::Total, "Total (ms)"));
            head.extend(phases.iter().map(|(_, h)| *h));
        }
        head.extend(["Images/s", "GFLOP/s", "Peak RSS", "Passes"]);
        let rows = results
            .iter()
            .map(|r| {
                let [h, w] = r.config.image_size;
                let mut row = vec![
                    format!("{} ({h}×{w})", r.model.name),
                    r.engine.name.clone(),
                    r.engine.device_name.clone(),
                    r.config.mode.to_string(),
                    r.config.batch_size.to_string(),
                ];
                if ranks.is_some() {
                    row.push(r.config.world_size.unwrap_or(1).to_string());
                }
                if all_infer {
                    row.extend([
                        median_and_std(r, Quantity::Total),
                        percentile_ms(r, "p90"),
                        percentile_ms(r, "p99"),
                    ]);
                } else {
                    row.extend(phases.iter().map(|(q, _)| median_and_std(r, *q)));
                }
                row.extend([
                    format!("{:.1}", r.throughput.images_per_s),
                    format!("{:.1}", r.throughput.gflops_per_s),
                    r.memory.host_peak_bytes().map_or("–".into(), bytes),
                    passes(r),
                ]);
                row
            })
            .collect();
        let mut notes = vec![if all_infer {
            "latency: of one batch, median ± standard deviation and percentiles over the timed passes; results in the files above".to_string()
        } else {
            "times: median ± standard deviation over the timed passes; results in the files above"
                .to_string()
        }];
        if results.iter().any(|r| r.scenario.is_some()) {
            notes.push(
                "under --scenario: latency is the engine's compute time per query, Images/s what was served over the run; each query's latency, queueing included, is on the scenario's line below"
                    .to_string(),
            );
        }
        if let Some(d) = results.iter().find_map(|r| r.distributed.as_ref()) {
            notes.push(format!(
                "data-parallel: batch is per rank, times are rank 0's, images/s counts every rank's images; gradients averaged by {} over {} in {} MiB buckets after backward",
                d.backend,
                d.transport,
                d.bucket_bytes / (1024 * 1024)
            ));
        }
        let mut warnings = Vec::new();
        if let Some(peak) = first.peak.gflops_per_s.filter(|p| *p > 0.0) {
            let share = |r: &BenchResult| r.throughput.gflops_per_s / peak * 100.0;
            let shares: Vec<String> = results
                .iter()
                .map(|r| format!("{} {:.0}%", r.model.name, share(r)))
                .collect();
            let method = first.peak.primitive();
            notes.push(format!(
                "% of peak ({peak:.1} GFLOP/s, {}'s {method} in {} by `cnnbench peak`): {}",
                first.engine.name,
                first.config.precision.as_str(),
                shares.join(", ")
            ));
            let over: Vec<String> = results
                .iter()
                .filter(|r| share(r) > 100.0)
                .map(|r| format!("{} {:.0}%", r.model.name, share(r)))
                .collect();
            if !over.is_empty() {
                warnings.push(format!(
                    "% of peak above 100% ({}): the network ran faster than the {method} `cnnbench peak` measured, so that peak is not this engine's best: its layers run kernels faster than the measured primitive's, or fewer operations than the counted MACs (Winograd or FFT convolutions), or the peak was measured on a busy machine or before cnnbench measured a convolution: measure it again with `cnnbench peak --engine {} --precision {}` on a quiet machine",
                    over.join(", "),
                    first.engine.name,
                    first.config.precision.as_str()
                ));
            }
        }
        let roofs: Vec<String> = results
            .iter()
            .filter_map(|r| {
                let roof = r.roofline.as_ref()?;
                Some(format!(
                    "{} {:.0}%",
                    r.model.name,
                    roof.forward_of_roof * 100.0
                ))
            })
            .collect();
        if !roofs.is_empty() {
            notes.push(format!(
                "% of roof (the least time this machine's ceilings from `cnnbench peak` allow the forward pass, over its median; per layer: `cnnbench profile`): {}",
                roofs.join(", ")
            ));
        }
        Some(RunTable {
            head: head.into_iter().map(String::from).collect(),
            rows,
            notes,
            warnings,
        })
    }

    /// The table in `style`, then the notes, one line each.
    pub fn render(&self, style: TableStyle) -> String {
        // Everything from the batch size on is a number.
        let numeric: Vec<usize> = (4..self.head.len()).collect();
        let mut out = styled_table(&self.head, &self.rows, &numeric, style);
        for note in &self.notes {
            out.push('\n');
            out.push_str(note);
        }
        out
    }
}

/// What a scenario run served, in one line for `cnnbench run` (`--scenario`): the load,
/// the reported percentile with LoadGen's early-stopping estimate, the verdict and how
/// far the run is from MLPerf's rules.
pub fn scenario_line(result: &BenchResult) -> Option<String> {
    use cnnbench_results::scenario::Issuing;
    let r = result.scenario.as_ref()?;
    let [h, w] = result.config.image_size;
    let what = format!(
        "{} ({h}×{w}) on {}{}",
        result.model.name,
        result.engine.name,
        if r.in_flight > 1 {
            format!(", {} in flight", r.in_flight)
        } else {
            String::new()
        }
    );
    let load = match (r.kind.rules().issuing, r.target_qps) {
        (Issuing::PoissonArrivals, Some(qps)) => format!(
            "{} at {qps:.1} QPS{} (achieved {:.1}), {} queries",
            r.kind,
            match (r.peak_search.len(), r.valid) {
                (0, _) => String::new(),
                (probes, true) => format!(", the highest valid of {probes} probes"),
                (probes, false) => format!(", the lightest of {probes} probes, none valid"),
            },
            r.achieved_qps,
            r.queries
        ) + &r.batcher.as_ref().map_or(String::new(), |b| {
            format!(
                " in {} calls of {:.2} on average (batches ≤ {} within {} ms, {} samples of padding)",
                b.calls, b.mean_batch, b.max_batch, b.timeout_ms, b.padded_samples
            )
        }),
        (Issuing::AllAtOnce, _) => format!(
            "{}, {} samples {} at a time: {:.1} samples/s",
            r.kind, r.samples, result.config.batch_size, r.samples_per_s
        ),
        (Issuing::ClosedLoop | Issuing::PoissonArrivals, _) => format!(
            "{}, {} queries of {}: {:.1} queries/s",
            r.kind, r.queries, r.samples_per_query, r.achieved_qps
        ),
    };
    let latency = match (r.percentile, r.percentile_latency_s) {
        (Some(q), Some(at)) => format!(
            "; p{} latency {} ms ({}), p50 {} ms, max {} ms",
            (q * 100.0).round(),
            ms(at),
            match r.early_stopping_latency_s {
                Some(bound) => format!("below {} ms at 99% confidence", ms(bound)),
                None => "too few queries to bound it".to_string(),
            },
            ms(r.latency.p50),
            ms(r.latency.max)
        ),
        _ => String::new(),
    };
    let bound = r
        .latency_bound_ms
        .map_or(String::new(), |b| format!(", bound {b} ms"));
    let verdict = if r.valid { "VALID" } else { "INVALID" };
    let rules = if r.meets_mlperf_rules {
        "meets MLPerf's run rules".to_string()
    } else {
        format!(
            "short of MLPerf's run rules ({})",
            r.mlperf_shortfalls.join("; ")
        )
    };
    Some(format!(
        "{what}: {load}{latency}{bound}: {verdict}; {rules}"
    ))
}
