//! `cnnbench noise`: this machine's run-to-run noise — one small configuration in
//! several fresh processes, the relative standard deviation of their medians — cached
//! beside `peak`'s measurements so that every later result records it and `compare`
//! can judge one run a side against it.

use anyhow::{anyhow, bail, Context, Result};
use cnnbench_bench::result::BenchResult;
use cnnbench_results::noise::{NoiseDoc, RunNoise, MIN_NOISE_RUNS, NOISE_FORMAT, NOISE_VERSION};
use cnnbench_results::Quantity;
use std::process::{Command, ExitCode, Stdio};

/// The most runs: each is a process of a few seconds.
const MAX_NOISE_RUNS: usize = 100;

/// The reference configuration, small enough for a few seconds a process on a CPU.
const MODEL: &str = "resnet18";
const IMAGE_SIZE: &str = "64";
const BATCH: &str = "2";
const PASSES: &str = "5";

#[derive(clap::Args)]
pub struct NoiseArgs {
    /// Fresh processes of the reference configuration (resnet18, 64×64, batch 2, train,
    /// 5 timed passes), at least 3.
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub runs: usize,
    /// The engine that runs it.
    #[arg(long, short = 'e', default_value = cnnbench_engine_burn::ENGINE_NAME)]
    pub engine: String,
    /// Print the measurement as JSON (`cnnbench-noise` v1).
    #[arg(long)]
    pub json: bool,
    /// Do not cache the measurement for `run` and `compare`.
    #[arg(long)]
    pub no_save: bool,
}

pub fn run(args: NoiseArgs) -> Result<ExitCode> {
    if !(MIN_NOISE_RUNS..=MAX_NOISE_RUNS).contains(&args.runs) {
        bail!(
            "--runs {} is not between {MIN_NOISE_RUNS} and {MAX_NOISE_RUNS}: a spread needs at least {MIN_NOISE_RUNS} runs",
            args.runs
        );
    }
    super::engines::find(&args.engine)?;
    let cache = cnnbench_bench::noise::default_cache_dir();
    // The runs' own result files are kept, named, beside the cache (not among the
    // user's results, where they would become rows of a report); with --no-save
    // nothing is kept: they go to a temporary folder that is removed at the end.
    let temporary = if args.no_save {
        Some(
            tempfile::Builder::new()
                .prefix("cnnbench-noise-")
                .tempdir()
                .context("cannot make a temporary folder for the runs")?,
        )
    } else {
        None
    };
    let runs_dir = match (&temporary, &cache) {
        (Some(temporary), _) => temporary.path().to_path_buf(),
        (None, Some(dir)) => dir.join(format!(
            "runs-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        )),
        (None, None) => std::env::temp_dir().join(format!("cnnbench-noise-{}", std::process::id())),
    };
    let configuration = format!(
        "{} {MODEL} {IMAGE_SIZE}×{IMAGE_SIZE}, batch {BATCH}, train, {PASSES} passes",
        args.engine
    );
    if !args.json {
        let kept = match &temporary {
            Some(_) => format!("results in {} until it ends", runs_dir.display()),
            None => format!("results in {}", runs_dir.display()),
        };
        errln!("{} fresh processes of {configuration}; {kept}", args.runs);
    }
    let results = measure(&args, &runs_dir)?;
    let disturbed = results
        .iter()
        .filter(|r| r.validity.as_ref().is_some_and(|v| v.is_disturbed()))
        .count();
    let medians: Vec<f64> = results
        .iter()
        .map(|r| {
            r.summary
                .get(&Quantity::Total)
                .map(|s| s.median)
                .ok_or_else(|| anyhow!("a run recorded no total time"))
        })
        .collect::<Result<_>>()?;
    let noise = RunNoise::of_medians(&medians, &configuration, chrono::Utc::now())
        .map_err(|e| anyhow!("{e}"))?;
    let doc = NoiseDoc {
        format: NOISE_FORMAT.into(),
        version: NOISE_VERSION,
        machine: cnnbench_bench::env::detect_machine(),
        noise,
        run_medians_s: medians,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_summary(&doc);
    }
    if disturbed > 0 {
        errln!(
            "not cached: {disturbed} of {} runs were measured on a disturbed machine (their files say why); run it again on a quiet machine",
            results.len()
        );
        return Ok(ExitCode::from(3));
    }
    if args.no_save {
        return Ok(ExitCode::SUCCESS);
    }
    match cache {
        Some(dir) => {
            let path = cnnbench_bench::noise::save(&dir, &doc)?;
            if !args.json {
                outln!(
                    "cached in {}: every result of `run` on this machine records it, and `compare` judges one run a side against it",
                    path.display()
                );
            }
        }
        None => {
            errln!("warning: no cache folder (neither XDG_CACHE_HOME nor HOME is set); not cached")
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The runs, as `run --repeat` makes them: each a fresh process writing its own file.
fn measure(args: &NoiseArgs, runs_dir: &std::path::Path) -> Result<Vec<BenchResult>> {
    let program = std::env::current_exe().context("finding the cnnbench binary")?;
    let output = Command::new(&program)
        .args(["run", MODEL, "--image-size", IMAGE_SIZE, "-b", BATCH])
        .args(["--passes", PASSES, "--mode", "train", "-e", &args.engine])
        .args(["--repeat", &args.runs.to_string(), "-q", "-o"])
        .arg(runs_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "the runs did not finish ({}); what they measured is in {}",
            output
                .status
                .code()
                .map_or("killed by a signal".to_string(), |c| format!(
                    "exit status {c}"
                )),
            runs_dir.display()
        );
    }
    // The runs' own files: what they measured, as they wrote it.
    let found = cnnbench_results::folders::json_files(runs_dir)
        .with_context(|| format!("cannot read {}", runs_dir.display()))?;
    let mut results = Vec::new();
    for path in found.files {
        let text = cnnbench_graph::read_bounded_to_string(
            &path,
            cnnbench_results::folders::MAX_RESULT_FILE_BYTES,
            "result files",
        )
        .with_context(|| format!("cannot read {}", path.display()))?;
        let result: BenchResult = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a result of the runs", path.display()))?;
        results.push(result);
    }
    if results.len() != args.runs {
        bail!(
            "{} results in {} for {} runs",
            results.len(),
            runs_dir.display(),
            args.runs
        );
    }
    // In the order they ran.
    results.sort_by_key(|r| r.started_at);
    Ok(results)
}

fn print_summary(doc: &NoiseDoc) {
    let ms: Vec<String> = doc
        .run_medians_s
        .iter()
        .map(|m| format!("{:.2}", m * 1000.0))
        .collect();
    let pct = doc.noise.pct;
    outln!("run medians (ms): {}", ms.join(", "));
    outln!(
        "run-to-run noise here: ±{pct:.1}% (the relative standard deviation of {} runs' medians)",
        doc.noise.runs
    );
    outln!(
        "one run a side: `compare` calls a change only beyond ±{:.1}% (2.8 × the noise, or its --threshold)",
        cnnbench_report::compare::ONE_RUN_BAND * pct
    );
    outln!("runs a side to find a change with 80% power here (threshold 2%):");
    for change in [5.0, 10.0, 20.0] {
        outln!("  {change:>4.0}%: {}", runs_for(change, pct, 2.0));
    }
}

/// Runs a side for a two-sided 5% test with 80% power to find `change` percent beyond a
/// `threshold` at a run-to-run noise of `noise` percent; "more than 100" past that.
fn runs_for(change: f64, noise: f64, threshold: f64) -> String {
    let margin = change - threshold;
    if margin <= 0.0 {
        return "never (below the threshold)".into();
    }
    let n = (2.0 * ((1.96 + 0.84) * noise / margin).powi(2))
        .ceil()
        .max(2.0);
    if n > 100.0 {
        "more than 100".into()
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runs_needed_grow_with_the_noise_and_shrink_with_the_change() {
        assert_eq!(runs_for(10.0, 3.0, 2.0), "3");
        assert_eq!(runs_for(5.0, 3.0, 2.0), "16");
        assert_eq!(runs_for(5.0, 30.0, 2.0), "more than 100");
        assert_eq!(runs_for(2.0, 3.0, 2.0), "never (below the threshold)");
    }
}
