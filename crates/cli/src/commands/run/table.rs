//! What `cnnbench run` shows: the live progress bar, the table of results and the
//! machine's quietness under it.

use crate::commands::common::{align_right, bytes, new_table};
use cnnbench_bench::output;
use cnnbench_bench::result::{BenchResult, StopReason};
use cnnbench_bench::Quantity;
use cnnbench_engine::Mode;
use cnnbench_graph::Graph;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;

/// Under the table: whether the machine was quiet while each result was measured. On
/// standard error, so that `--json` keeps standard output a JSON stream. `brief`: only
/// disturbed results (`--quiet`).
pub fn print_validity(results: &[(BenchResult, PathBuf)], brief: bool) {
    let mut clean = 0;
    for (r, _) in results {
        let Some(v) = &r.validity else { continue };
        let [h, w] = r.config.image_size;
        let name = format!("{} ({h}×{w}, batch {})", r.model.name, r.config.batch_size);
        if v.is_disturbed() {
            eprintln!(
                "DISTURBED: {}: {}; the times may be inflated: rerun on a quiet machine (--retries N reruns by itself)",
                output::terminal_safe(&name),
                v.reasons.join("; ")
            );
        } else {
            clean += 1;
        }
        if !v.retried.is_empty() && !brief {
            eprintln!(
                "{}: {} disturbed attempt(s) ran before this one (recorded in the result)",
                output::terminal_safe(&name),
                v.retried.len()
            );
        }
    }
    if clean > 0 && !brief {
        let worst = |f: fn(&cnnbench_results::Signals) -> Option<f64>| {
            results
                .iter()
                .filter_map(|(r, _)| r.validity.as_ref().and_then(|v| f(&v.timed)))
                .reduce(f64::max)
        };
        let part = |name: &str, v: Option<f64>| v.map(|v| format!("{name} {v:.1}%"));
        let parts: Vec<String> = [
            part("CPU pressure", worst(|s| s.cpu_pressure_pct)),
            part("other processes", worst(|s| s.other_cpu_pct)),
            part("steal", worst(|s| s.steal_pct)),
        ]
        .into_iter()
        .flatten()
        .collect();
        let all = if clean == results.len() {
            "all"
        } else {
            "the other"
        };
        let detail = if parts.is_empty() {
            String::new()
        } else {
            format!(" (at most {})", parts.join(", "))
        };
        eprintln!("machine: quiet during {all} {clean} run(s){detail}");
    }
}

pub fn progress_bar(
    quiet: bool,
    graph: &Graph,
    index: usize,
    count: usize,
    passes: usize,
) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(passes as u64);
    let style = ProgressStyle::with_template(
        "{prefix:.bold} [{bar:30}] pass {pos}/{len} {msg} (elapsed {elapsed}, ETA {eta})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(format!("[{}/{count}] {}", index + 1, graph.name()));
    bar
}

/// "123.45 ± 1.23" in milliseconds: the median and the sample standard deviation.
fn ms(result: &BenchResult, quantity: Quantity) -> String {
    match result.summary.get(&quantity) {
        Some(s) => format!("{:.2} ± {:.2}", s.median * 1e3, s.std * 1e3),
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
        .map_or("–".into(), |v| format!("{:.2}", v * 1e3))
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

/// One table across every model and sweep point. Inference runs show the latency of a
/// batch with its tail (p90, p99) instead of the phases.
pub fn print_table(results: &[(BenchResult, PathBuf)]) {
    if results.is_empty() {
        return;
    }
    let all_infer = results.iter().all(|(r, _)| r.config.mode == Mode::Infer);
    let with_update = results
        .iter()
        .any(|(r, _)| r.summary.contains_key(&Quantity::Update));
    let with_allreduce = results
        .iter()
        .any(|(r, _)| r.summary.contains_key(&Quantity::Allreduce));
    let mut headers = vec!["Model", "Engine", "Device", "Mode", "Batch"];
    let ranks = results
        .iter()
        .filter_map(|(r, _)| r.config.world_size)
        .max();
    if ranks.is_some() {
        headers.push("Ranks");
    }
    if all_infer {
        headers.extend(["Latency (ms)", "p90 (ms)", "p99 (ms)"]);
    } else {
        headers.extend(["Forward (ms)", "Backward (ms)"]);
        if with_allreduce {
            headers.push("Allreduce (ms)");
        }
        if with_update {
            headers.push("Update (ms)");
        }
        headers.push("Total (ms)");
    }
    headers.extend(["Images/s", "GFLOP/s", "Peak RSS", "Passes"]);
    let mut table = new_table(&headers);
    for (r, _) in results {
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
                ms(r, Quantity::Total),
                percentile_ms(r, "p90"),
                percentile_ms(r, "p99"),
            ]);
        } else {
            row.extend([ms(r, Quantity::Forward), ms(r, Quantity::Backward)]);
            if with_allreduce {
                row.push(ms(r, Quantity::Allreduce));
            }
            if with_update {
                row.push(ms(r, Quantity::Update));
            }
            row.push(ms(r, Quantity::Total));
        }
        row.extend([
            format!("{:.1}", r.throughput.images_per_s),
            format!("{:.1}", r.throughput.gflops_per_s),
            r.memory.host_peak_bytes().map_or("–".into(), bytes),
            passes(r),
        ]);
        table.add_row(row);
    }
    let numeric: Vec<usize> = (4..headers.len()).collect();
    align_right(&mut table, &numeric);
    println!("{table}");
    if all_infer {
        println!("latency: of one batch, median ± standard deviation and percentiles over the timed passes; results in the files above");
    } else {
        println!(
            "times: median ± standard deviation over the timed passes; results in the files above"
        );
    }
    if let Some(d) = results.iter().find_map(|(r, _)| r.distributed.as_ref()) {
        println!(
            "data-parallel: batch is per rank, times are rank 0's, images/s counts every rank's images; gradients averaged by {} over {} in {} MiB buckets after backward",
            d.backend,
            d.transport,
            d.bucket_bytes / (1024 * 1024)
        );
    }
    if let Some((r, _)) = results.first() {
        if let Some(peak) = r.peak_gflops_per_s.filter(|p| *p > 0.0) {
            let shares: Vec<String> = results
                .iter()
                .map(|(r, _)| {
                    format!(
                        "{} {:.0}%",
                        r.model.name,
                        r.throughput.gflops_per_s / peak * 100.0
                    )
                })
                .collect();
            println!(
                "% of peak ({peak:.1} GFLOP/s, {}'s matrix product by `cnnbench peak`): {}",
                r.engine.name,
                shares.join(", ")
            );
        }
    }
}
