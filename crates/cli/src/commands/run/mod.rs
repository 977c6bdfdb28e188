//! `cnnbench run`: benchmark models on an engine, print a table, write one result file
//! per model and point of a sweep (batch sizes × image sizes).
//!
//! The command line becomes a [`RunSpec`] once ([`spec`]); what runs is a [`job::Job`]:
//! the spec, the process's role (the run itself, a data-parallel rank, a `-b max`
//! probe) and where results go. Ranks and probes are this same program, given their job
//! on standard input ([`ranks`], [`probe`]); [`execute`] measures; [`table`] prints.

mod cell;
mod execute;
pub mod job;
mod probe;
mod ranks;
mod repeat;
pub mod spec;
mod table;
#[cfg(test)]
mod tests;

use super::args::{EngineArgs, ModeArg, PrecisionArg};
use super::sweep::{self, BatchSpec, ImageSizes};
use anyhow::{anyhow, Context, Result};
use cnnbench_results::scenario::ScenarioKind;
use cnnbench_results::RunSpec;
use job::{Delivery, Job, Role};
use std::path::PathBuf;
use std::process::ExitCode;

pub use spec::Given;

#[derive(clap::Args)]
pub struct RunArgs {
    /// Zoo models to run (default: the original suite's ten models).
    pub models: Vec<String>,
    /// A model file to run (model JSON, .onnx, Caffe .prototxt); may be repeated.
    #[arg(long, value_name = "FILE")]
    pub model_file: Vec<PathBuf>,
    /// Run again exactly what produced this result file (its recorded spec); any other
    /// option given beside it changes that one setting. Given more than once, each
    /// result is one configuration, run in a fresh process of its own, one after the
    /// other (interleaved A-B-B-A… with --repeat N); the options given apply to all.
    #[arg(long, value_name = "RESULT.json", conflicts_with = "plan")]
    pub again: Vec<PathBuf>,
    /// train: forward + backward from a random gradient (the original method);
    /// infer: evaluation mode, forward only; step: forward + loss, backward, SGD update.
    #[arg(long, value_enum, default_value = "train")]
    pub mode: ModeArg,
    /// Images per pass (the original suite used 16); a list (1,2,4,8), a range of powers
    /// of two (1..64) or `max`: the largest batch that fits on the device, found by
    /// running (see --memory-limit). One result file per batch size.
    #[arg(long, short = 'b', default_value = "16", value_name = "SIZES")]
    pub batch_size: BatchSpec,
    /// Input image size: N or HxW, or a list (128,224,320) (default: each model's own,
    /// 224 for the classics). One result file per size.
    #[arg(long, value_name = "SIZES")]
    pub image_size: Option<ImageSizes>,
    /// Engine to run on (see `cnnbench engines`).
    #[arg(long, short = 'e', default_value = cnnbench_engine_burn::ENGINE_NAME)]
    pub engine: String,
    /// Warm-up passes, run and dropped.
    #[arg(long, default_value_t = cnnbench_results::spec::DEFAULT_WARMUP)]
    pub warmup: usize,
    /// Timed passes (at least this many when --min-time or --target-ci is given).
    #[arg(long, short = 'n', default_value_t = cnnbench_results::spec::DEFAULT_PASSES)]
    pub passes: usize,
    /// Keep passing until this many seconds of timed work (and at least --passes).
    #[arg(long, value_name = "S")]
    pub min_time: Option<f64>,
    /// Start no timed pass after this many seconds of timed work (default 60 with
    /// --target-ci).
    #[arg(long, value_name = "S")]
    pub max_time: Option<f64>,
    /// Stop as soon as the 95% confidence interval of the median total is within ± PCT
    /// percent of it (a bootstrap; at least 10 passes), or at --max-time.
    #[arg(long, value_name = "PCT")]
    pub target_ci: Option<f64>,
    /// Warm up for at least this many seconds (after --warmup passes), for GPUs whose
    /// clocks and autotuners settle over seconds.
    #[arg(long, value_name = "S")]
    pub warmup_time: Option<f64>,
    /// Take the device to have this much memory (e.g. 512MiB): for the memory check and
    /// for `-b max`, whose probes must then peak below it.
    #[arg(long, value_name = "BYTES", value_parser = sweep::parse_bytes)]
    pub memory_limit: Option<u64>,
    /// Internal: the job of a rank or a `-b max` probe, as JSON on standard input (`-`).
    #[arg(long, hide = true, value_name = "-")]
    pub job: Option<String>,
    /// Seed for weights, inputs, gradients and labels.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Size of the engine's thread pool (default: all cores).
    #[arg(long, value_parser = crate::commands::common::thread_count)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub gpu: EngineArgs,
    /// Numeric precision.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: PrecisionArg,
    /// Folder for result files.
    #[arg(long, short = 'o', default_value = "results")]
    pub output: PathBuf,
    /// Print each result JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// A label stored in the results and their folder name (e.g. the host's name).
    #[arg(long)]
    pub label: Option<String>,
    /// Run even when the memory estimate exceeds the available memory.
    #[arg(long)]
    pub force: bool,
    /// Train as one rank of a data-parallel job whose launcher (torchrun, Slurm's srun, a
    /// Kubernetes PyTorchJob) set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT: each
    /// rank trains its own --batch-size images and the gradients are averaged after
    /// backward (timed as `allreduce`); rank 0 writes the result.
    #[arg(long)]
    pub distributed: bool,
    /// Start N ranks of this run on this machine and train data-parallel, as
    /// `torchrun --nproc-per-node N … --distributed` would.
    #[arg(long, value_name = "N", conflicts_with = "distributed")]
    pub nproc: Option<usize>,
    /// Seconds a rank waits for the others (to start, or in an all-reduce) before it
    /// gives up with an error.
    #[arg(long, value_name = "S", default_value_t = 300.0)]
    pub dist_timeout: f64,
    /// Run one cell of a matrix file (see `cnnbench plan`): its model, engine and
    /// settings come from the file. Results are labelled with the host's name unless
    /// --label is given.
    #[arg(long, value_name = "MATRIX")]
    pub plan: Option<PathBuf>,
    /// The matrix cell to run (default: $SLURM_ARRAY_TASK_ID, else $JOB_COMPLETION_INDEX).
    #[arg(long, value_name = "I", requires = "plan")]
    pub cell: Option<usize>,
    /// Run the cell even when the output folder already holds its result.
    #[arg(long, requires = "plan")]
    pub rerun: bool,
    /// Exit with status 3 when a result was measured on a disturbed machine (other
    /// processes, steal, pressure: see `validity` in the result); its file is kept,
    /// marked disturbed.
    #[arg(long)]
    pub require_clean: bool,
    /// Run a disturbed measurement again, up to N more times, keeping the first clean
    /// one (the disturbed attempts are recorded in its `validity.retried`).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub retries: usize,
    /// Measure each configuration in N fresh processes (runs), interleaved A-B-B-A…
    /// across the configurations so that drift hits all alike; one result file per run.
    /// Processes differ more than the passes of one do: `compare` judges runs, and needs
    /// several a side (5 or more to find a change of a few percent).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: usize,
    /// Serve inference under one of MLPerf LoadGen's load scenarios instead of timing
    /// passes back to back: single-stream (one sample a query, the next when the last
    /// completes; p90 latency), multi-stream (--samples-per-query a query; p99), server
    /// (one-sample queries arriving at --qps, valid while the p99 latency from each
    /// query's scheduled arrival stays within --latency-bound) or offline (every sample
    /// at once; throughput). Needs --mode infer.
    #[arg(long, value_name = "SCENARIO", value_parser = scenario_kind())]
    pub scenario: Option<ScenarioKind>,
    /// Samples in each multi-stream query (default 8): the batch the engine computes
    /// per query.
    #[arg(long, value_name = "N", requires = "scenario")]
    pub samples_per_query: Option<usize>,
    /// Server: queries per second arriving (a Poisson process, seeded by --seed); with
    /// --find-peak, where the search starts.
    #[arg(long, value_name = "QPS", requires = "scenario")]
    pub qps: Option<f64>,
    /// Server: the p99 latency a valid run stays within, milliseconds (MLPerf's
    /// ResNet-50 bound is 15).
    #[arg(long, value_name = "MS", requires = "scenario")]
    pub latency_bound: Option<f64>,
    /// A scenario issues queries for at least this long (default 10; MLPerf's rules: 600).
    #[arg(long, value_name = "SECONDS", requires = "scenario")]
    pub scenario_time: Option<f64>,
    /// ... and at least this many queries (offline: samples).
    #[arg(long, value_name = "N", requires = "scenario")]
    pub min_queries: Option<usize>,
    /// Server: search for the highest --qps whose run is valid (doubling, then
    /// bisecting, as LoadGen's peak search does); every probe is recorded.
    #[arg(long, requires = "scenario")]
    pub find_peak: bool,
    /// Server and offline: the queries computed at once, each on a session of its own
    /// (engines whose sessions have their own threads divide --threads between them).
    #[arg(long, value_name = "N", requires = "scenario")]
    pub in_flight: Option<usize>,
    /// Server: the dynamic batcher, as Triton's: a free session takes the oldest query
    /// and those waiting behind it, up to N, in one call (sessions are compiled for each
    /// power of two up to N; a batch is padded to the next one, and the padding
    /// recorded).
    #[arg(long, value_name = "N", requires = "scenario")]
    pub max_batch: Option<usize>,
    /// Server with --max-batch: how long a batch waits for more queries, from the
    /// oldest one's arrival, milliseconds (default 0: it takes what is waiting).
    #[arg(long, value_name = "MS", requires = "max_batch")]
    pub batch_timeout: Option<f64>,
    /// int8: measure the activation ranges on N random images (default 8), in f32 on
    /// burn-flex, before quantising; recorded with the result.
    #[arg(long, value_name = "N")]
    pub calibration: Option<usize>,
}

/// `--scenario`'s parser: the possible values are the scenarios' rules' names, so a new
/// scenario needs no second list here.
fn scenario_kind() -> impl clap::builder::TypedValueParser<Value = ScenarioKind> {
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(ScenarioKind::names())
        .try_map(|name| name.parse::<ScenarioKind>())
}

/// The exit status of `run --require-clean` when a result came out disturbed.
pub const REQUIRE_CLEAN_FAILED: u8 = 3;

/// `cnnbench run`, with the options `given` on the command line (for `--again` and
/// `--plan`, whose files set the others).
pub fn run(args: RunArgs, given: &Given) -> Result<ExitCode> {
    if let Some(source) = &args.job {
        return execute::execute(job::read(source)?);
    }
    let mut delivery = job::delivery_of(&args);
    delivery.validate()?;
    if let Some(matrix) = &args.plan {
        return cell::run_cell(matrix, &args, given, delivery);
    }
    match args.again.as_slice() {
        [] => {
            let mut spec = spec::from_args(&args)?;
            spec::settle_scenario_batch(&mut spec, given)?;
            start(spec, delivery)
        }
        [result] => {
            let (mut spec, label) = spec::again(result, &args, given)?;
            spec::settle_scenario_batch(&mut spec, given)?;
            delivery.label = delivery.label.or(label);
            start(spec, delivery)
        }
        several => again_several(several, &args, given, delivery),
    }
}

/// `--again A --again B …`: each result's recorded spec (with the options given on
/// top) is one configuration; each run is a fresh process, interleaved A-B-B-A… over
/// `--repeat N` rounds, so that a drift of the machine hits every result's
/// configuration alike. Each result keeps its own label unless `--label` is given.
fn again_several(
    results: &[PathBuf],
    args: &RunArgs,
    given: &Given,
    delivery: Delivery,
) -> Result<ExitCode> {
    // Before any file is read: each is at least one configuration.
    cnnbench_results::spec::check_process_count(results.len(), args.repeat.max(1))
        .map_err(|e| anyhow!(e))?;
    let mut configurations = Vec::new();
    let mut runs: Option<(usize, &PathBuf)> = None;
    for path in results {
        let (spec, label) = spec::again(path, args, given)?;
        check(&spec).with_context(|| format!("{}", path.display()))?;
        if spec.data_parallel.is_some() {
            return Err(anyhow!(
                "{} is a data-parallel run: several --again results run one configuration a process, and a data-parallel run is several; rerun it on its own (`cnnbench run --again {}`)",
                path.display(),
                path.display()
            ));
        }
        match runs {
            Some((n, first)) if n != spec.repeat => {
                return Err(anyhow!(
                    "{} records {} run(s) of its configuration and {} {n}: give --repeat N to run every result's configuration N times",
                    path.display(),
                    spec.repeat,
                    first.display()
                ));
            }
            Some(_) => {}
            None => runs = Some((spec.repeat, path)),
        }
        let points = spec.points().ok_or_else(|| {
            anyhow!(
                "{}: its batch size is -b max, which several --again results cannot search for in every run: give the batch size the search found (-b N)",
                path.display()
            )
        })?;
        let label = delivery.label.clone().or(label);
        for point in points {
            configurations.push(repeat::Configuration {
                name: format!(
                    "{} from {}",
                    repeat::describe(&point),
                    cnnbench_bench::output::terminal_safe(&path.display().to_string())
                ),
                label: label.clone(),
                point,
            });
        }
    }
    let runs = runs.map_or(1, |(n, _)| n);
    repeat::run_configurations(configurations, runs, delivery)
}

/// What a spec must be before anything of it runs, whichever way it came (the command
/// line, a result's spec, a job, a matrix cell): `run`'s own checks, the thread limit
/// `--threads` has, and the engine's refusals.
fn check(spec: &RunSpec) -> Result<()> {
    spec.validate().map_err(|e| anyhow!(e))?;
    if let Some(threads) = spec.threads {
        crate::commands::common::check_thread_count(threads, "the spec's threads")
            .map_err(|e| anyhow!(e))?;
    }
    crate::commands::engines::check_spec(spec)
}

/// Runs a spec as the user's own run: checked, then measured here or by the ranks it
/// asks for.
pub fn start(spec: RunSpec, delivery: Delivery) -> Result<ExitCode> {
    // Before ranks, repeats or probes start.
    check(&spec)?;
    if delivery.retries > 0 && spec.data_parallel.is_some() {
        return Err(anyhow!(
            "--retries cannot be used in a data-parallel run: each rank would decide its own passes or batch and the ranks' all-reduces would no longer meet; give --passes and --batch-size"
        ));
    }
    if spec.repeat > 1 {
        return repeat::run(spec, delivery);
    }
    let role = match &spec.data_parallel {
        Some(dp) => match dp.local_ranks {
            Some(n) => return ranks::launch(spec.clone(), delivery, n),
            None => Role::Rank,
        },
        None => Role::Main,
    };
    execute::execute(Job {
        spec,
        role,
        delivery,
    })
}
