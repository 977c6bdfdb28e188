//! What `cnnbench run` shows: the live progress bar, the table of results and the
//! machine's quietness under it.

use cnnbench_bench::output;
use cnnbench_bench::result::BenchResult;
use cnnbench_graph::Graph;
use cnnbench_report::export::pretty::TableStyle;
use cnnbench_report::runs::RunTable;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
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
            errln!(
                "DISTURBED: {}: {}; the times may be inflated: {}",
                output::terminal_safe(&name),
                v.reasons.join("; "),
                rerun_hint(v.retried.len())
            );
        } else {
            clean += 1;
        }
        if !v.retried.is_empty() && !brief {
            errln!(
                "{}: {} disturbed attempt(s) ran before this one (recorded in the result)",
                output::terminal_safe(&name),
                v.retried.len()
            );
        }
    }
    // The processes of one configuration differ more than its passes: how much, on this
    // machine, is what a comparison must clear.
    let noise = match results.iter().find_map(|(r, _)| r.run_noise.as_ref()) {
        Some(n) => format!(
            "run-to-run noise here ±{:.1}% (cnnbench noise, {})",
            n.pct,
            n.measured_at.format("%Y-%m-%d")
        ),
        None => "run-to-run noise here not measured (cnnbench noise)".to_string(),
    };
    if clean == 0 && !brief && !results.is_empty() {
        errln!("machine: {noise}");
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
        errln!("machine: quiet during {all} {clean} run(s){detail}; {noise}");
    }
}

/// What to do about a disturbed result that `retried` disturbed attempts preceded: offer
/// `--retries` only when none were made (it offered them after they were used up).
fn rerun_hint(retried: usize) -> String {
    if retried == 0 {
        "rerun on a quiet machine (--retries N reruns by itself)".to_string()
    } else {
        format!(
            "the machine stayed busy through {retried} retries (--retries); rerun when it is quiet, or find what keeps it busy"
        )
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
    bar.set_prefix(format!(
        "[{}/{count}] {}",
        index + 1,
        output::terminal_safe(graph.name())
    ));
    bar
}

/// The table of what was measured (report's [`RunTable`]): boxes on a terminal, markdown
/// whose columns line up in a pipe or a log; what makes a number suspect on standard
/// error.
pub fn print_table(results: &[(BenchResult, PathBuf)]) {
    let results: Vec<&BenchResult> = results.iter().map(|(r, _)| r).collect();
    let Some(table) = RunTable::new(&results) else {
        return;
    };
    let style = if std::io::stdout().is_terminal() {
        TableStyle::Boxed
    } else {
        TableStyle::AlignedMarkdown
    };
    outln!("{}", table.render(style));
    for line in results
        .iter()
        .filter_map(|r| cnnbench_report::runs::scenario_line(r))
    {
        outln!("{}", output::terminal_safe(&line));
    }
    for warning in &table.warnings {
        errln!("warning: {warning}");
    }
}

#[cfg(test)]
mod hint_tests {
    use super::rerun_hint;

    #[test]
    fn retries_are_offered_only_when_none_were_made() {
        assert!(rerun_hint(0).contains("--retries N"));
        for used in [1, 3, 20] {
            let hint = rerun_hint(used);
            assert!(!hint.contains("--retries N"), "{hint}");
            assert!(hint.contains(&format!("through {used} retries")), "{hint}");
        }
    }
}
