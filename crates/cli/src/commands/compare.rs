//! `cnnbench compare BASE NEW`: which differences between two sets of results are
//! real. Ratios of medians with bootstrap 95% confidence intervals, verdicts against
//! a noise threshold, a geometric-mean summary, and an exit status for CI.

use super::report::{aliases, emit, load, ZooCatalog};
use anyhow::bail;
use cnnbench_report::catalog::Cached;
use cnnbench_report::group::{self, Duplicates, Stat};
use cnnbench_report::{CompareOptions, Comparison, Format, Quantity};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(
    after_help = "Pairs results by model, input, mode, device and engine; what is left, by model
alone when each side has one such result (a new machine or engine).
The unit of evidence is the run (one process, one result file): each side's figure is the
median of its runs' medians, and the 95% interval resamples runs, then passes within each,
so it includes the run-to-run variation that the passes of one process do not show.
Verdicts: `faster`/`slower` when the 95% interval of new/base lies beyond the noise
threshold, else `no change`; `not judged: one run` when a side holds a single run (measure
with `run --repeat N`, or give --run-noise); `not judged: disturbed` when a side was
measured while the machine was busy (its result's `validity`); `not judged: implausible
times` when a side's median is no time a pass could take (files holding such times are
skipped when loaded, with a warning). No change is called real on a pair not judged, and
with --fail-on-regression the exit status is then 3.

Examples:
  cnnbench compare results-main/ results-branch/
  cnnbench compare base.json new.json --threshold 5
  cnnbench compare main/ pr/ --fail-on-regression 10   # exit 1 on a >10% slowdown"
)]
pub struct CompareArgs {
    /// The results to compare against: a file or a folder.
    #[arg(value_name = "BASE")]
    pub base: PathBuf,
    /// The new results: a file or a folder.
    #[arg(value_name = "NEW")]
    pub new: PathBuf,
    /// Noise threshold in percent: smaller changes are `no change`.
    #[arg(long, default_value_t = 2.0, value_name = "PCT")]
    pub threshold: f64,
    /// Exit with status 1 when a pair is slower by more than PCT percent with 95% confidence.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// This machine's run-to-run noise in percent (the relative standard deviation of one
    /// configuration's median across processes): judges a pair with one run on a side,
    /// whose change must then exceed 2.8 times it.
    #[arg(long, value_name = "PCT")]
    pub run_noise: Option<f64>,
    /// The time compared.
    #[arg(long, value_enum, default_value_t = QuantityArg::Total)]
    pub quantity: QuantityArg,
    /// Output format [default: pretty on a terminal, markdown when piped].
    #[arg(long, short = 'f', value_enum)]
    pub format: Option<CompareFormat>,
    /// Write to FILE instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// TOML file of display names ([devices], [models]).
    #[arg(long, value_name = "FILE")]
    pub aliases: Option<PathBuf>,
    /// Fail on a file that is not a result instead of skipping it with a warning.
    #[arg(long)]
    pub strict: bool,
    /// Bootstrap resamples per pair.
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub resamples: usize,
    /// Seed of the bootstrap (the same seed prints the same intervals).
    #[arg(long, default_value_t = 0x00c0_ffee)]
    pub seed: u64,
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum QuantityArg {
    Total,
    Forward,
    Backward,
    Update,
}

#[derive(Clone, Copy, PartialEq, clap::ValueEnum)]
pub enum CompareFormat {
    Pretty,
    Markdown,
    Json,
    Csv,
    /// One self-contained page.
    Html,
}

impl From<QuantityArg> for Quantity {
    fn from(q: QuantityArg) -> Quantity {
        match q {
            QuantityArg::Total => Quantity::Total,
            QuantityArg::Forward => Quantity::Forward,
            QuantityArg::Backward => Quantity::Backward,
            QuantityArg::Update => Quantity::Update,
        }
    }
}

impl From<CompareFormat> for Format {
    fn from(f: CompareFormat) -> Format {
        match f {
            CompareFormat::Pretty => Format::Pretty,
            CompareFormat::Markdown => Format::Markdown,
            CompareFormat::Json => Format::Json,
            CompareFormat::Csv => Format::Csv,
            CompareFormat::Html => Format::Html,
        }
    }
}

fn percent(name: &str, v: f64) -> anyhow::Result<f64> {
    if !v.is_finite() || v < 0.0 {
        bail!("{name} must be a percentage of 0 or more, e.g. 5 for 5%");
    }
    Ok(v / 100.0)
}

/// The most bootstrap resamples per pair (`--resamples 1000000000000` aborted on memory).
pub const MAX_RESAMPLES: usize = 1_000_000;

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let threshold = percent("--threshold", args.threshold)?;
    let fail = args
        .fail_on_regression
        .map(|v| percent("--fail-on-regression", v))
        .transpose()?;
    let run_noise = args
        .run_noise
        .map(|v| percent("--run-noise", v))
        .transpose()?;
    // A noise of 0 judges every difference a change: no machine runs the same twice.
    if run_noise.is_some_and(|noise| noise <= 0.0 || noise >= 1.0) {
        bail!(
            "--run-noise must be above 0 and below 100 (%): runs of one configuration never agree exactly; `cnnbench noise` measures this machine's"
        );
    }
    if args.resamples < 100 {
        bail!("--resamples must be at least 100 (10000 is the default)");
    }
    if args.resamples > MAX_RESAMPLES {
        bail!(
            "--resamples {} is more than {MAX_RESAMPLES}: past 10⁶ the interval no longer changes, and the time and memory grow with it (10000 is the default)",
            args.resamples
        );
    }
    let aliases = aliases(args.aliases.as_deref())?;
    let catalog = Cached::new(&ZooCatalog);
    let mut sides = Vec::new();
    for (name, path) in [("BASE", &args.base), ("NEW", &args.new)] {
        let records = load(std::slice::from_ref(path), args.strict)
            .map_err(|e| anyhow::anyhow!("{name}: {e:#}"))?;
        let mut notes = Vec::new();
        sides.push(group::group(
            records,
            &aliases,
            &catalog,
            Duplicates::Pool,
            Stat::Median,
            &mut notes,
        ));
    }
    let opts = CompareOptions {
        threshold,
        quantity: args.quantity.into(),
        resamples: args.resamples,
        seed: args.seed,
        fail_on_regression: fail,
        run_noise,
    };
    let cmp: Comparison = cnnbench_report::compare::compare(&sides[0], &sides[1], &opts);
    for w in &cmp.warnings {
        errln!("warning: {w}");
    }
    let format = match args.format {
        Some(f) => f,
        None if args.output.is_none() && std::io::stdout().is_terminal() => CompareFormat::Pretty,
        None => CompareFormat::Markdown,
    };
    let text = Format::from(format).exporter().render_comparison(&cmp)?;
    emit(&text, args.output.as_deref())?;
    if cmp.pairs.is_empty() {
        bail!(
            "no result in {} has a counterpart in {}: they share no model, input and mode",
            args.base.display(),
            args.new.display()
        );
    }
    if cmp.failed() {
        let n = cmp.pairs.iter().filter(|p| p.regression).count();
        errln!(
            "error: {n} result(s) slower than BASE by more than {}% with 95% confidence (--fail-on-regression)",
            args.fail_on_regression.unwrap_or(0.0)
        );
        return Ok(ExitCode::from(1));
    }
    let undecided = cmp.undecided();
    if undecided > 0 && args.fail_on_regression.is_some() {
        errln!(
            "error: {undecided} pair(s) could not be judged (a side measured on a disturbed machine, holding one run, or holding times no pass could take): --fail-on-regression cannot pass on them; rerun them on a quiet machine, each side in several processes (run --repeat N)"
        );
        return Ok(ExitCode::from(super::run::REQUIRE_CLEAN_FAILED));
    }
    Ok(ExitCode::SUCCESS)
}
