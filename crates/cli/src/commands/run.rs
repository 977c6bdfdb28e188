//! `cnnbench run`: benchmark models on an engine, print a table, write one result file
//! per model and point of a sweep (batch sizes × image sizes).

use super::common::{align_right, bytes, file_model, new_table, zoo_model, ImageSize};
use super::distributed;
use super::engines;
use super::sweep::{self, BatchSpec, ImageSizes, ProbeReport};
use anyhow::{anyhow, Context, Result};
use cnnbench_bench::harness::{self, RunRequest};
use cnnbench_bench::result::{BenchResult, StopReason, ToolInfo};
use cnnbench_bench::{env, memory, output, HarnessError, Quantity};
use cnnbench_engine::{Capabilities, DeviceKind, Mode, Precision};
use cnnbench_graph::Graph;
use indicatif::{ProgressBar, ProgressStyle};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

#[derive(clap::Args)]
pub struct RunArgs {
    /// Zoo models to run (default: the original suite's ten models).
    pub models: Vec<String>,
    /// A model file to run (model JSON, .onnx, Caffe .prototxt); may be repeated.
    #[arg(long, value_name = "FILE")]
    pub model_file: Vec<PathBuf>,
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
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Timed passes (at least this many when --min-time or --target-ci is given).
    #[arg(long, short = 'n', default_value_t = 10)]
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
    /// Internal: run one pass and print the memory it used as JSON (the probes of -b max).
    #[arg(long, hide = true)]
    pub probe_memory: bool,
    /// Seed for weights, inputs, gradients and labels.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Size of the engine's thread pool (default: all cores).
    #[arg(long, value_parser = crate::commands::common::thread_count)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub gpu: GpuArgs,
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
    #[arg(long, value_name = "MATRIX", conflicts_with_all = PLAN_SETS)]
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
}

/// The largest `--retries`: past it, the machine is not going to be quiet.
pub const MAX_RETRIES: usize = 20;

/// The options a matrix file sets, refused beside `--plan`.
const PLAN_SETS: [&str; 20] = [
    "models",
    "model_file",
    "mode",
    "batch_size",
    "image_size",
    "engine",
    "warmup",
    "passes",
    "min_time",
    "max_time",
    "target_ci",
    "warmup_time",
    "memory_limit",
    "probe_memory",
    "seed",
    "threads",
    "precision",
    "cudnn_benchmark",
    "tf32",
    "channels_last",
];

/// Settings of the CUDA engines.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// Which GPU the GPU engines use: the CUDA device (torch-cuda, burn-cuda) or the
    /// Vulkan GPU adapter, discrete first (burn-wgpu) [default: 0; in a data-parallel run:
    /// LOCAL_RANK]
    #[arg(long, value_name = "N")]
    pub device: Option<usize>,
    /// burn-wgpu: run on a CPU software renderer (llvmpipe/lavapipe) when there is no GPU
    /// adapter, labelled as such in the result. To test the GPU code path, not to measure.
    #[arg(long)]
    pub allow_cpu_adapter: bool,
    /// Let cuDNN time its algorithms on the first (warm-up) passes and keep the fastest.
    #[arg(long)]
    pub cudnn_benchmark: bool,
    /// Allow TF32 tensor-core math for f32 convolutions and matrix products (off by default).
    #[arg(long)]
    pub tf32: bool,
    /// Channels-last (NHWC) memory for images and convolution weights (torch engines).
    #[arg(long)]
    pub channels_last: bool,
}

impl GpuArgs {
    /// The engine options for these settings and a thread count.
    pub fn engine_options(&self, threads: Option<usize>) -> engines::EngineOptions {
        engines::EngineOptions {
            threads,
            torch: cnnbench_engine_torch::TorchOptions {
                threads,
                device: self.device.unwrap_or(0),
                cudnn_benchmark: self.cudnn_benchmark,
                tf32: self.tf32,
                channels_last: self.channels_last,
            },
            burn_gpu: cnnbench_engine_burn_gpu::BurnGpuOptions {
                device: self.device.unwrap_or(0),
                allow_cpu_adapter: self.allow_cpu_adapter,
            },
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    Train,
    Infer,
    Step,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Train => Mode::Train,
            ModeArg::Infer => Mode::Infer,
            ModeArg::Step => Mode::Step,
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PrecisionArg {
    F32,
    F16,
    Bf16,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Precision {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::Bf16 => Precision::Bf16,
        }
    }
}

/// A model resolved before anything runs, so a typo fails in a second, not an hour in.
struct Planned {
    graph: Graph,
    source: String,
    /// How to name the model to a probe child: the zoo name or the model file.
    zoo_name: Option<String>,
    file: Option<PathBuf>,
}

/// Every model at every requested image size, model by model.
fn plan(args: &RunArgs) -> Result<Vec<Planned>> {
    let sizes: Vec<Option<ImageSize>> = match &args.image_size {
        Some(ImageSizes(list)) => list.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    let mut by_size: Vec<std::vec::IntoIter<Planned>> = Vec::new();
    for size in sizes {
        by_size.push(plan_at(args, size)?.into_iter());
    }
    // Model by model (in the order given), each at every size in the order given.
    let mut planned = Vec::new();
    loop {
        let round: Vec<Planned> = by_size.iter_mut().filter_map(Iterator::next).collect();
        if round.is_empty() {
            return Ok(planned);
        }
        planned.extend(round);
    }
}

fn plan_at(args: &RunArgs, size: Option<ImageSize>) -> Result<Vec<Planned>> {
    let mut planned = Vec::new();
    let names: Vec<String> = if args.models.is_empty() && args.model_file.is_empty() {
        cnnbench_zoo::legacy_models()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        args.models.clone()
    };
    for name in &names {
        planned.push(Planned {
            graph: zoo_model(name, size)?,
            source: "zoo".into(),
            zoo_name: Some(name.clone()),
            file: None,
        });
    }
    for path in &args.model_file {
        planned.push(Planned {
            graph: file_model(path, size)?,
            source: path.display().to_string(),
            zoo_name: None,
            file: Some(path.clone()),
        });
    }
    Ok(planned)
}

/// Compares the memory estimate with the memory of the engine's device: what the host
/// can still hand out for a CPU engine, the GPU's memory for a GPU engine.
fn check_memory(
    planned: &[Planned],
    mode: Mode,
    batch: usize,
    force: bool,
    (available, of_what): (u64, &str),
    device_total: Option<u64>,
) -> Result<()> {
    for p in planned {
        let need = memory::estimate_bytes(&p.graph, mode, batch);
        if need >= memory::BEYOND_ANY_MACHINE {
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode would need about {}, more than any machine has (--force cannot help): use a smaller batch size",
                p.graph.name(),
                bytes(need)
            ));
        }
        // --force is for an estimate near the edge; past twice the device's whole memory
        // the run can only end in an allocation abort (exit 134) or the OOM killer.
        if let Some(total) = device_total.filter(|&t| force && t > 0 && need / 2 > t) {
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode would need about {}, more than twice this device's {} of memory (--force cannot help): use a smaller batch size",
                p.graph.name(),
                bytes(need),
                bytes(total)
            ));
        }
    }
    if available == 0 || force {
        return Ok(());
    }
    for p in planned {
        let need = memory::estimate_bytes(&p.graph, mode, batch);
        if need > available {
            let fits = memory::largest_batch_that_fits(&p.graph, mode, available);
            let advice = if fits > 0 {
                format!("--batch-size {fits} fits")
            } else {
                "not even batch 1 fits".to_string()
            };
            // Two sizes that round alike are told apart in bytes.
            let (need_text, available_text) = match (bytes(need), bytes(available)) {
                (n, a) if n == a => (format!("{need} bytes"), format!("{available} bytes")),
                pair => pair,
            };
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode needs about {need_text} but {available_text} ({of_what}) is available; {advice}, or pass --force to try anyway",
                p.graph.name(),
            ));
        }
    }
    Ok(())
}

/// The memory a batch must fit in, and where that number comes from: `--memory-limit`,
/// else what the host can still hand out (CPU engines) or the GPU's memory.
fn available_memory(args: &RunArgs, caps: &Capabilities) -> (u64, &'static str) {
    match (args.memory_limit, caps.device) {
        (Some(limit), _) => (limit, "--memory-limit"),
        (None, DeviceKind::Cpu) => (env::available_memory(), "host memory available"),
        (None, DeviceKind::Gpu) => (caps.device_memory.unwrap_or(0), "GPU memory"),
    }
}

/// Seconds from a flag, checked.
fn seconds(value: Option<f64>, flag: &str) -> Result<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .ok()
                .filter(|_| s > 0.0)
                .ok_or_else(|| anyhow!("{flag} must be a positive number of seconds, not {s}"))
        })
        .transpose()
}

/// The arguments of a probe child for one planned model: the same engine, mode and
/// settings, one warm-up and one timed pass, a memory report instead of a result file.
fn probe_args(args: &RunArgs, p: &Planned) -> Vec<String> {
    let mut a: Vec<String> = vec!["run".into()];
    if let Some(name) = &p.zoo_name {
        a.push(name.clone());
    }
    if let Some(file) = &p.file {
        a.extend(["--model-file".into(), file.display().to_string()]);
    }
    let [_, h, w] = p.graph.input_shape();
    let mode: Mode = args.mode.into();
    let precision = match args.precision {
        PrecisionArg::F32 => "f32",
        PrecisionArg::F16 => "f16",
        PrecisionArg::Bf16 => "bf16",
    };
    a.extend([
        "--image-size".into(),
        format!("{h}x{w}"),
        "--mode".into(),
        mode.to_string(),
        "--engine".into(),
        args.engine.clone(),
        "--precision".into(),
        precision.into(),
        "--seed".into(),
        args.seed.to_string(),
        "--device".into(),
        args.gpu.device.unwrap_or(0).to_string(),
        "--warmup".into(),
        "1".into(),
        "--passes".into(),
        "1".into(),
        "--output".into(),
        args.output.display().to_string(),
        "--probe-memory".into(),
        "--quiet".into(),
    ]);
    if let Some(t) = args.threads {
        a.extend(["--threads".into(), t.to_string()]);
    }
    if args.gpu.cudnn_benchmark {
        a.push("--cudnn-benchmark".into());
    }
    if args.gpu.tf32 {
        a.push("--tf32".into());
    }
    if args.gpu.channels_last {
        a.push("--channels-last".into());
    }
    if args.gpu.allow_cpu_adapter {
        a.push("--allow-cpu-adapter".into());
    }
    a
}

pub fn run(mut args: RunArgs) -> Result<ExitCode> {
    if let Some(matrix) = args.plan.clone() {
        return super::plan::run_cell(&matrix, args);
    }
    if args.passes == 0 {
        return Err(anyhow!("--passes must be at least 1"));
    }
    if args.retries > MAX_RETRIES {
        return Err(anyhow!(
            "--retries {} is more than {MAX_RETRIES}: a machine that is still busy after that many attempts needs the neighbour found (`top`, /proc/pressure/cpu), not more retries",
            args.retries
        ));
    }
    if let Some(n) = args.nproc {
        return launch_ranks(&args, n);
    }
    let dist_timeout =
        seconds(Some(args.dist_timeout), "--dist-timeout")?.unwrap_or(Duration::from_secs(300));
    if args.distributed {
        check_distributed(&args)?;
    }
    let mode: Mode = args.mode.into();
    let min_time = seconds(args.min_time, "--min-time")?;
    let warmup_time = seconds(args.warmup_time, "--warmup-time")?;
    let mut max_time = seconds(args.max_time, "--max-time")?;
    if let Some(pct) = args.target_ci {
        if !(pct > 0.0 && pct.is_finite()) {
            return Err(anyhow!(
                "--target-ci must be a positive percentage, e.g. 2 for ±2%, not {pct}"
            ));
        }
        // A default limit, recorded in the result like any other setting.
        max_time.get_or_insert(DEFAULT_TARGET_CI_MAX_TIME);
    }
    if let (Some(min), Some(max)) = (min_time, max_time) {
        if min > max {
            return Err(anyhow!(
                "--min-time ({} s) is above --max-time ({} s)",
                min.as_secs_f64(),
                max.as_secs_f64()
            ));
        }
    }
    let planned = plan(&args)?;
    let mut options = args.gpu.engine_options(args.threads);
    let (engine, group) = if args.distributed {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let rendezvous = distributed::rendezvous_from_env(&env, dist_timeout)?;
        // As torchrun's users do: each rank of a machine on its own GPU.
        if args.gpu.device.is_none() {
            options.torch.device = rendezvous.local_rank;
        }
        let (engine, group) = engines::create_data_parallel(&args.engine, &options, &rendezvous)?;
        distributed::hold_for_failure(&group);
        (engine, Some(group))
    } else {
        (engines::create(&args.engine, &options)?, None)
    };
    // Rank 0 speaks for the job: the others write and print nothing but their errors.
    let rank = group.as_ref().map_or(0, |g| g.info().rank);
    if rank != 0 {
        args.quiet = true;
        args.json = false;
    } else {
        output::check_writable(&args.output)?;
    }
    let caps = engine.capabilities();
    caps.check(&args.engine, mode, args.precision.into())
        .map_err(|e| anyhow!("{e}: choose one with --mode/--precision, or another engine (`cnnbench engines` lists what each can do)"))?;
    let available = available_memory(&args, &caps);
    let device_total = match caps.device {
        DeviceKind::Cpu => cnnbench_host::memory_bytes(),
        DeviceKind::Gpu => caps.device_memory,
    };
    if args.probe_memory {
        return probe_memory(&args, engine.as_ref(), &planned);
    }
    if let BatchSpec::List(batches) = &args.batch_size {
        for &batch in batches {
            check_memory(&planned, mode, batch, args.force, available, device_total)?;
        }
    }

    let cancel = super::common::stop_on_ctrl_c();
    let tool = ToolInfo {
        name: "cnnbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: Some(env!("CNNBENCH_GIT_COMMIT").to_string()).filter(|s| !s.is_empty()),
    };
    // The matrix-product rate `cnnbench peak` cached for this engine, for "% of peak".
    let peak = cnnbench_bench::peak::default_cache_dir()
        .and_then(|dir| cnnbench_bench::peak::load(&dir, &engine.info()));
    let mut results: Vec<(BenchResult, PathBuf)> = Vec::new();
    // Results that could not be written where asked (kept elsewhere).
    let mut unwritten = 0usize;
    let points_per_model = match &args.batch_size {
        BatchSpec::List(b) => b.len(),
        BatchSpec::Max => 1,
    };
    let points = planned.len() * points_per_model;
    let mut point = 0;
    // What a Ctrl-C leaves undone: the points after `done` of model `i`, and every
    // later model.
    let one_point_per_model =
        points_per_model == 1 && args.image_size.as_ref().is_none_or(|s| s.0.len() == 1);
    let not_run = |i: usize, done: usize| -> String {
        if one_point_per_model {
            let names: Vec<&str> = planned[i..].iter().map(|p| p.graph.name()).collect();
            return names.join(", ");
        }
        let mut left = Vec::new();
        for (k, p) in planned.iter().enumerate().skip(i) {
            let [_, h, w] = p.graph.input_shape();
            match &args.batch_size {
                BatchSpec::List(b) => {
                    let skip = if k == i { done } else { 0 };
                    left.extend(
                        b.iter()
                            .skip(skip)
                            .map(|b| format!("{} ({h}×{w}, batch {b})", p.graph.name())),
                    );
                }
                BatchSpec::Max => left.push(format!("{} ({h}×{w}, batch max)", p.graph.name())),
            }
        }
        left.join(", ")
    };
    let interrupted = |results: &[(BenchResult, PathBuf)], left: String| {
        if !args.json {
            print_table(results);
        }
        eprintln!(
            "interrupted: kept {} finished result(s); not run: {left}",
            results.len()
        );
        ExitCode::from(130)
    };
    for (i, p) in planned.iter().enumerate() {
        let (batches, search) = match &args.batch_size {
            BatchSpec::List(b) => (b.clone(), None),
            BatchSpec::Max => match find_max_batch(&args, p, mode, available, &cancel) {
                Ok(search) => (vec![search.chosen], Some(search)),
                Err(e) if e.downcast_ref::<HarnessError>().is_some() => {
                    return Ok(interrupted(&results, not_run(i, 0)));
                }
                Err(e) => return Err(e),
            },
        };
        for (done, batch_size) in batches.into_iter().enumerate() {
            let request = RunRequest {
                mode,
                batch_size,
                warmup: args.warmup,
                passes: args.passes,
                seed: args.seed,
                threads_requested: args.threads,
                precision: args.precision.into(),
                model_source: p.source.clone(),
                label: args.label.clone(),
                tool: tool.clone(),
                min_time,
                max_time,
                target_ci_pct: args.target_ci,
                warmup_time,
                // A rank's siblings, started by the same launcher, are part of the job.
                process_tree_root: args.distributed.then(std::os::unix::process::parent_id),
            };
            let bar = progress_bar(
                args.quiet,
                &p.graph,
                point,
                points,
                args.warmup + args.passes,
            );
            point += 1;
            let mut retried = Vec::new();
            let outcome = loop {
                let outcome = harness::run(
                    engine.as_ref(),
                    &p.graph,
                    &request,
                    &cancel,
                    &mut |progress| {
                        bar.set_length(progress.of as u64);
                        bar.set_position(progress.pass as u64);
                        if progress.warmup {
                            bar.set_message("warm-up");
                        } else if retried.is_empty() {
                            bar.set_message("");
                        } else {
                            bar.set_message(format!("retry {}", retried.len()));
                        }
                    },
                );
                match outcome {
                    Ok(mut result) => match retry_record(&result) {
                        Some(attempt) if retried.len() < args.retries => {
                            bar.suspend(|| {
                                eprintln!(
                                    "{}: attempt {} was disturbed ({}); running it again",
                                    p.graph.name(),
                                    retried.len() + 1,
                                    attempt.reasons.join("; ")
                                )
                            });
                            retried.push(attempt);
                            bar.reset();
                        }
                        _ => {
                            if let Some(v) = result.validity.as_mut() {
                                v.retried = std::mem::take(&mut retried);
                            }
                            break Ok(result);
                        }
                    },
                    Err(e) => break Err(e),
                }
            };
            bar.finish_and_clear();
            // A rank's result goes to rank 0, which writes the job's.
            let outcome = match (outcome, &group) {
                (Ok(result), Some(group)) => cnnbench_bench::distributed::gather_ranks(
                    group.as_ref(),
                    &format!("result/{point}"),
                    result,
                )
                .map(|merged| merged.ok_or(())),
                (outcome, _) => outcome.map(Ok),
            };
            match outcome {
                Ok(Err(())) => {}
                Ok(Ok(mut result)) => {
                    result.batch_search = search.clone();
                    result.peak_gflops_per_s = peak.as_ref().map(|p| p.matmul.gflops_per_s);
                    // A measurement that cannot be written where asked is kept elsewhere
                    // (the error says where); the run goes on and ends with failure.
                    let path = match output::write_result(&args.output, &result) {
                        Ok(path) => {
                            if !args.quiet {
                                eprintln!("{}: wrote {}", p.graph.name(), path.display());
                            }
                            path
                        }
                        Err(e) => {
                            bar.suspend(|| eprintln!("error: {}: {e:#}", p.graph.name()));
                            unwritten += 1;
                            PathBuf::new()
                        }
                    };
                    if !args.quiet {
                        for w in &result.warnings {
                            eprintln!("warning: {}: {w}", p.graph.name());
                        }
                    }
                    if args.json {
                        println!("{}", serde_json::to_string_pretty(&result)?);
                    }
                    results.push((result, path));
                }
                Err(e) if e.downcast_ref::<HarnessError>().is_some() => {
                    return Ok(interrupted(&results, not_run(i, done)));
                }
                Err(e) => return Err(e),
            }
        }
    }
    if let Some(group) = group {
        // Every rank leaves together, then the process group goes before the store.
        group.barrier()?;
        distributed::leave();
        drop(engine);
        drop(group);
    }
    if !args.json && rank == 0 {
        print_table(&results);
    }
    if rank == 0 {
        print_validity(&results, args.quiet && !args.json);
        if unwritten > 0 {
            eprintln!(
                "error: {unwritten} of {} result(s) could not be written under {} (where each was kept is said above)",
                results.len(),
                args.output.display()
            );
            return Ok(ExitCode::FAILURE);
        }

        let disturbed = results
            .iter()
            .filter(|(r, _)| r.validity.as_ref().is_some_and(|v| v.is_disturbed()))
            .count();
        if args.require_clean && disturbed > 0 {
            eprintln!(
                "error: {disturbed} of {} result(s) were measured on a disturbed machine (--require-clean); their files are kept, marked disturbed",
                results.len()
            );
            return Ok(ExitCode::from(REQUIRE_CLEAN_FAILED));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The exit status of `run --require-clean` when a result came out disturbed.
pub const REQUIRE_CLEAN_FAILED: u8 = 3;

/// The record of a disturbed attempt, to run it again; `None` for a clean one.
fn retry_record(result: &BenchResult) -> Option<cnnbench_results::validity::RetriedAttempt> {
    let v = result.validity.as_ref().filter(|v| v.is_disturbed())?;
    let total = result.summary.get(&Quantity::Total)?;
    Some(cnnbench_results::validity::RetriedAttempt {
        reasons: v.reasons.clone(),
        median_total_s: total.median,
        passes: total.count,
    })
}

/// Under the table: whether the machine was quiet while each result was measured. On
/// standard error, so that `--json` keeps standard output a JSON stream. `brief`: only
/// disturbed results (`--quiet`).
fn print_validity(results: &[(BenchResult, PathBuf)], brief: bool) {
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

/// What a data-parallel run cannot do: every rank must run the same passes (an
/// all-reduce in each), so nothing may decide them per rank.
fn check_distributed(args: &RunArgs) -> Result<()> {
    let per_rank = [
        (args.min_time.is_some(), "--min-time"),
        (args.max_time.is_some(), "--max-time"),
        (args.target_ci.is_some(), "--target-ci"),
        (args.warmup_time.is_some(), "--warmup-time"),
        (matches!(args.batch_size, BatchSpec::Max), "-b max"),
        (args.probe_memory, "--probe-memory"),
        (args.retries > 0, "--retries"),
    ];
    if let Some((_, flag)) = per_rank.iter().find(|(given, _)| *given) {
        return Err(anyhow!(
            "{flag} cannot be used in a data-parallel run: each rank would decide its own passes or batch and the ranks' all-reduces would no longer meet; give --passes and --batch-size"
        ));
    }
    if args.mode == ModeArg::Infer {
        return Err(anyhow!(
            "a data-parallel run trains: use --mode train or step (inference has no gradients to average)"
        ));
    }
    Ok(())
}

/// `--nproc N`: this same command as N ranks on this machine (`--distributed`, with
/// torchrun's variables and a free port).
fn launch_ranks(args: &RunArgs, nproc: usize) -> Result<ExitCode> {
    if nproc == 0 {
        return Err(anyhow!("--nproc must be at least 1"));
    }
    check_distributed(args)?;
    if cnnbench_engine_torch::TorchBackend::from_engine_name(&args.engine).is_none() {
        return Err(anyhow!(
            "engine {} cannot train across processes; the engines that can: {}",
            args.engine,
            distributed::engines_that_can()
        ));
    }
    // Refused once here rather than by each rank.
    if let Some(backend) = cnnbench_engine_torch::TorchBackend::from_engine_name(&args.engine) {
        if let Some(why) = cnnbench_engine_torch::data_parallel_refusal(backend) {
            return Err(anyhow!(why));
        }
        cnnbench_engine_torch::availability(backend)
            .map_err(|why| anyhow!("engine {} cannot run: {why}", args.engine))?;
        if let cnnbench_engine_torch::TorchBackend::Cuda { .. } = backend {
            distributed::check_gpus_for_ranks(
                nproc,
                args.gpu.device,
                cnnbench_engine_torch::cuda_device_count(),
            )?;
        }
    }
    output::check_writable(&args.output)?;
    let program =
        std::env::current_exe().context("finding the cnnbench binary to start the ranks")?;
    let mut child_args: Vec<String> = Vec::new();
    let mut given = std::env::args().skip(1);
    while let Some(a) = given.next() {
        if a == "--nproc" {
            given.next();
        } else if !a.starts_with("--nproc=") {
            child_args.push(a);
        }
    }
    child_args.push("--distributed".into());
    // N ranks of all-core thread pools would fight over the cores (torchrun sets
    // OMP_NUM_THREADS=1 for the same reason): each rank gets its share.
    if args.threads.is_none() {
        let share = (cnnbench_host::logical_cores() / nproc).max(1);
        child_args.extend(["--threads".into(), share.to_string()]);
        if !args.quiet {
            eprintln!("starting {nproc} ranks with --threads {share} each (their share of this machine's cores; give --threads to choose)");
        }
    }
    let cancel = super::common::stop_on_ctrl_c();
    let port = distributed::free_port()?;
    match distributed::launch_local(&program, &child_args, nproc, port, &cancel)? {
        distributed::Outcome::Success => Ok(ExitCode::SUCCESS),
        distributed::Outcome::Interrupted => {
            eprintln!("interrupted: stopped the {nproc} ranks; finished results are kept");
            Ok(ExitCode::from(130))
        }
    }
}

/// The time limit of `--target-ci` when no `--max-time` is given.
pub const DEFAULT_TARGET_CI_MAX_TIME: Duration = Duration::from_secs(60);

/// `-b max` for one model: the estimate, then probes in child processes; prints what
/// it tried so the user sees how the batch was chosen.
fn find_max_batch(
    args: &RunArgs,
    p: &Planned,
    mode: Mode,
    (available, from): (u64, &str),
    cancel: &AtomicBool,
) -> Result<cnnbench_bench::result::BatchSearch> {
    if available == 0 {
        return Err(anyhow!(
            "-b max needs to know the device's memory and this engine does not report it: give --memory-limit"
        ));
    }
    let estimated = memory::largest_batch_that_fits(&p.graph, mode, available);
    if !args.quiet {
        eprintln!(
            "{}: finding the largest batch that fits in {} ({from}); the estimate says {estimated}",
            p.graph.name(),
            bytes(available)
        );
        if cnnbench_host::allocator::current().policy == cnnbench_host::allocator::HeapPolicy::Keep
        {
            eprintln!(
                "note: the heap keeps freed memory (--allocator keep), so peaks vary between processes by a tenth or so; --allocator system gives a reproducible answer"
            );
        }
    }
    let child_args = probe_args(args, p);
    let search = sweep::search_max_batch(estimated, available, from, &mut |batch| {
        let probe = sweep::run_probe(&child_args, batch, available);
        // Ctrl-C reaches the probe too: its death is the interruption, not a verdict.
        if cancel.load(Ordering::SeqCst) {
            return Err(HarnessError::Interrupted.into());
        }
        let probe = probe?;
        if !args.quiet {
            eprintln!("  batch {}", sweep::describe(std::slice::from_ref(&probe)));
        }
        Ok(probe)
    })
    .map_err(|e| {
        if e.downcast_ref::<HarnessError>().is_some() {
            e
        } else {
            e.context(format!("-b max for {}", p.graph.name()))
        }
    })?;
    if !args.quiet {
        eprintln!(
            "{}: batch {} is the largest that fits ({} probes)",
            p.graph.name(),
            search.chosen,
            search.probes.len()
        );
    }
    Ok(search)
}

/// `--probe-memory`: one model, one batch, one pass; prints the memory it used as one
/// JSON line and writes no result. An engine error ends the process with it on stderr;
/// an allocation failure may abort it — the parent tells these apart.
fn probe_memory(
    args: &RunArgs,
    engine: &dyn cnnbench_engine::Engine,
    planned: &[Planned],
) -> Result<ExitCode> {
    let (Some(p), BatchSpec::List(batches)) = (planned.first(), &args.batch_size) else {
        return Err(anyhow!("--probe-memory takes one model and one batch size"));
    };
    if planned.len() != 1 || batches.len() != 1 {
        return Err(anyhow!("--probe-memory takes one model and one batch size"));
    }
    let request = RunRequest {
        mode: args.mode.into(),
        batch_size: batches[0],
        warmup: args.warmup,
        passes: args.passes,
        seed: args.seed,
        threads_requested: args.threads,
        precision: args.precision.into(),
        model_source: p.source.clone(),
        label: None,
        tool: ToolInfo {
            name: "cnnbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: None,
        },
        min_time: None,
        max_time: None,
        target_ci_pct: None,
        warmup_time: None,
        process_tree_root: None,
    };
    let result = harness::run(
        engine,
        &p.graph,
        &request,
        &AtomicBool::new(false),
        &mut |_| {},
    )?;
    let report = ProbeReport {
        peak_rss_bytes: result.memory.peak_rss_bytes,
        device_peak_bytes: result.memory.device_peak_bytes,
    };
    println!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(
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
fn print_table(results: &[(BenchResult, PathBuf)]) {
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
            r.memory.peak_rss_bytes.map_or("–".into(), bytes),
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
