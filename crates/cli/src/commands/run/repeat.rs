//! `run --repeat N`: each configuration measured in N fresh processes (runs), the unit
//! `compare` judges. On a shared machine the passes of one process agree with each other
//! while processes land ±15% apart (placement, caches, the host's frequency, neighbours
//! the guest cannot see), so only several processes show how far a figure moves. The
//! runs are interleaved A-B-B-A… across the configurations so that a drift of the machine
//! hits every configuration alike; each run is this program again, given one
//! configuration as its job (`cnnbench run --job -`), and writes its own result file,
//! which records its round. The configurations are the points of one spec (models ×
//! image sizes × batch sizes), or the recorded specs of several results (`run --again A
//! --again B`).

use super::job::{self, Delivery, Job, Role};
use super::table::{print_table, print_validity};
use anyhow::{anyhow, Context, Result};
use cnnbench_bench::output;
use cnnbench_bench::result::BenchResult;
use cnnbench_results::{Batches, Round, RunSpec};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::Ordering;

/// The order of `runs` rounds over `configurations`: forward in even rounds, backward in
/// odd ones (A B, B A, A B, …), as (round, configuration) with 0-based indices.
pub fn interleaved(configurations: usize, runs: usize) -> Vec<(usize, usize)> {
    (0..runs)
        .flat_map(|round| {
            let order: Vec<usize> = if round % 2 == 0 {
                (0..configurations).collect()
            } else {
                (0..configurations).rev().collect()
            };
            order.into_iter().map(move |c| (round, c))
        })
        .collect()
}

/// One configuration of a series: the spec of one point (one result file a run), how
/// the progress lines name it, and the label its results carry.
pub struct Configuration {
    pub point: RunSpec,
    pub name: String,
    pub label: Option<String>,
}

/// The job of one run: one configuration, its round (none when each configuration runs
/// once), its result printed as JSON for this process to show (the child writes its
/// file itself).
fn run_job(configuration: &Configuration, delivery: &Delivery, round: Round) -> Job {
    Job {
        spec: configuration.point.clone(),
        role: Role::Main,
        delivery: Delivery {
            json: true,
            quiet: true,
            require_clean: false,
            round: (round.of > 1).then_some(round),
            label: configuration.label.clone(),
            ..delivery.clone()
        },
    }
}

/// How one run ended.
enum Ended {
    Measured(Vec<BenchResult>),
    Interrupted,
    Failed { status: Option<i32>, stderr: String },
}

fn start_run(job: &Job) -> Result<Ended> {
    let program = std::env::current_exe().context("finding the cnnbench binary to start a run")?;
    let payload = job::encode(job)?;
    let mut child = Command::new(&program)
        .args(["run", "--job", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {} for a run", program.display()))?;
    if let Some(mut pipe) = child.stdin.take() {
        pipe.write_all(payload.as_bytes())
            .context("cannot give the run its job")?;
    }
    let output = child.wait_with_output().context("waiting for a run")?;
    if output.status.code() == Some(130) {
        return Ok(Ended::Interrupted);
    }
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        return Ok(Ended::Failed {
            status: output.status.code(),
            stderr,
        });
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let results: Vec<BenchResult> = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<BenchResult>()
        .collect::<Result<_, _>>()
        .context("a run's result, as it printed it, does not read")?;
    Ok(Ended::Measured(results))
}

/// Runs every configuration of `spec` in `spec.repeat` processes, interleaved, then
/// prints every run's row and how to compare them.
pub fn run(spec: RunSpec, delivery: Delivery) -> Result<ExitCode> {
    let points = spec.points().ok_or_else(|| {
        anyhow!("--repeat with -b max would search for the batch in every run: give the batch size the search found (-b N)")
    })?;
    let configurations = points
        .into_iter()
        .map(|point| Configuration {
            name: describe(&point),
            label: delivery.label.clone(),
            point,
        })
        .collect();
    run_configurations(configurations, spec.repeat, delivery)
}

/// Runs each configuration in `runs` fresh processes, interleaved A-B-B-A…, then prints
/// every run's row and how to compare them.
pub fn run_configurations(
    configurations: Vec<Configuration>,
    runs: usize,
    delivery: Delivery,
) -> Result<ExitCode> {
    cnnbench_results::spec::check_process_count(configurations.len(), runs)
        .map_err(|e| anyhow!(e))?;
    output::check_writable(&delivery.output)?;
    let cancel = crate::commands::common::stop_on_ctrl_c();
    let order = interleaved(configurations.len(), runs);
    if !delivery.quiet && runs > 1 {
        errln!(
            "{} configuration(s) × {runs} runs: {} processes, interleaved (each round reverses the last's order)",
            configurations.len(),
            order.len()
        );
    } else if !delivery.quiet {
        errln!(
            "{} configurations: one process each, one after the other",
            configurations.len()
        );
    }
    let mut results: Vec<(BenchResult, PathBuf)> = Vec::new();
    // Each configuration's run medians, in round order, for the drift check.
    let mut medians: Vec<Vec<f64>> = vec![Vec::new(); configurations.len()];
    for (done, &(round, c)) in order.iter().enumerate() {
        if cancel.load(Ordering::SeqCst) {
            return Ok(stopped(done, order.len()));
        }
        let configuration = &configurations[c];
        let what = &configuration.name;
        let job = run_job(
            configuration,
            &delivery,
            Round {
                index: round + 1,
                of: runs,
            },
        );
        match start_run(&job)? {
            Ended::Interrupted => return Ok(stopped(done, order.len())),
            Ended::Failed { status, stderr } => {
                for line in stderr.lines() {
                    errln!("{}", output::terminal_safe(line));
                }
                return Err(anyhow!(
                    "run {} of {runs} of {what} failed ({}); the runs before it are kept in {}",
                    round + 1,
                    status.map_or("killed by a signal".to_string(), |c| format!(
                        "exit status {c}"
                    )),
                    delivery.output.display()
                ));
            }
            Ended::Measured(measured) => {
                medians[c].extend(measured.iter().filter_map(|r| {
                    r.summary
                        .get(&cnnbench_results::Quantity::Total)
                        .map(|s| s.median)
                }));
                if !delivery.quiet {
                    for r in &measured {
                        let total = r
                            .summary
                            .get(&cnnbench_results::Quantity::Total)
                            .map_or("-".to_string(), |s| format!("{:.2} ms", s.median * 1000.0));
                        errln!("run {} of {runs}: {what}: median total {total}", round + 1);
                    }
                }
                results.extend(measured.into_iter().map(|r| (r, PathBuf::new())));
            }
        }
    }
    if delivery.json {
        for (r, _) in &results {
            outln!("{}", serde_json::to_string_pretty(r)?);
        }
    } else {
        print_table(&results);
    }
    print_validity(&results, delivery.quiet && !delivery.json);
    // A run far from its siblings: the machine drifted (or was disturbed unseen) while
    // it ran. Said, so that the user can look before comparing.
    for (c, runs) in medians.iter().enumerate() {
        for (round, off_pct) in drifted(runs) {
            errln!(
                "DRIFT: run {} of {runs_n} of {}: its median is {off_pct:+.1}% from its siblings' median, beyond their spread; the machine changed while it ran (compare pools it with the others; rerun if it stays apart)",
                round + 1,
                configurations[c].name,
                runs_n = runs.len()
            );
        }
    }
    if !delivery.quiet {
        errln!(
            "results of every run in {}: `cnnbench compare` and `cnnbench report` judge them by run",
            delivery.output.display()
        );
    }
    if let Some(code) = super::execute::require_clean_failure(&results, delivery.require_clean) {
        return Ok(code);
    }
    Ok(ExitCode::SUCCESS)
}

/// `resnet18 (batch 2, 64x64)`: one configuration, as the progress lines name it.
pub fn describe(point: &RunSpec) -> String {
    let model = point
        .models
        .first()
        .map_or(String::new(), |m| output::terminal_safe(&m.describe()));
    let batch = match &point.batch {
        Batches::Sizes(sizes) => sizes
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        Batches::Max => "max".into(),
    };
    let size = point
        .image_sizes
        .as_ref()
        .and_then(|s| s.first())
        .map_or(String::new(), |s| format!(", {s}"));
    format!("{model} (batch {batch}{size})")
}

/// The runs (index, percent off) whose median lies far from the median of the other runs
/// of the same configuration: more than 4 robust standard deviations of those others
/// (1.4826 × their median absolute deviation) and more than 3% away. Needs at least 4
/// runs (3 others to have a spread).
pub fn drifted(medians: &[f64]) -> Vec<(usize, f64)> {
    use cnnbench_results::stats::median_in_place as median;
    if medians.len() < 4 || medians.iter().any(|m| !(m.is_finite() && *m > 0.0)) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, &m) in medians.iter().enumerate() {
        let mut others: Vec<f64> = medians
            .iter()
            .enumerate()
            .filter(|&(j, _)| j != i)
            .map(|(_, &v)| v)
            .collect();
        let center = median(&mut others);
        let mut deviations: Vec<f64> = others.iter().map(|v| (v - center).abs()).collect();
        let sigma = 1.4826 * median(&mut deviations);
        let off = m - center;
        if off.abs() > 4.0 * sigma && off.abs() > 0.03 * center {
            out.push((i, 100.0 * off / center));
        }
    }
    out
}

fn stopped(done: usize, of: usize) -> ExitCode {
    errln!(
        "interrupted: {done} of {of} runs finished (their results are kept); {} not run",
        of - done
    );
    ExitCode::from(130)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_their_order() {
        assert_eq!(
            interleaved(2, 4),
            [
                (0, 0),
                (0, 1),
                (1, 1),
                (1, 0),
                (2, 0),
                (2, 1),
                (3, 1),
                (3, 0)
            ]
        );
        assert_eq!(interleaved(1, 3), [(0, 0), (1, 0), (2, 0)]);
        assert!(interleaved(3, 0).is_empty());
    }

    /// A run far from its siblings is named; the spread of a quiet machine, a run within
    /// 3%, or too few runs to have a spread name none.
    #[test]
    fn a_run_far_from_its_siblings_is_found() {
        let found = drifted(&[100.0, 101.0, 99.0, 100.5, 130.0]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, 4);
        assert!((found[0].1 - 30.0).abs() < 1.0, "{found:?}");
        assert!(drifted(&[100.0, 101.0, 99.0, 100.5, 102.0]).is_empty());
        // Far in robust deviations, but within 3%: not a drift worth a word.
        assert!(drifted(&[100.0, 100.0, 100.0, 100.0, 102.5]).is_empty());
        assert!(drifted(&[100.0, 101.0, 140.0]).is_empty());
        // Runs that spread widely: one more wide run is not singled out.
        assert!(drifted(&[100.0, 120.0, 85.0, 110.0, 95.0]).is_empty());
        assert!(drifted(&[100.0, f64::NAN, 99.0, 100.0]).is_empty());
    }
}
