//! `cnnbench run`: benchmark models on an engine, print a table, write one result file
//! per model.

use super::common::{align_right, bytes, file_model, new_table, zoo_model, ImageSize};
use super::engines;
use anyhow::{anyhow, Result};
use cnnbench_bench::harness::{self, RunRequest};
use cnnbench_bench::result::{BenchResult, ToolInfo};
use cnnbench_bench::{env, memory, output, HarnessError, Quantity};
use cnnbench_engine::{Capabilities, DeviceKind, Mode, Precision};
use cnnbench_graph::Graph;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

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
    /// Images per pass (the original suite used 16).
    #[arg(long, short = 'b', default_value_t = 16)]
    pub batch_size: usize,
    /// Input image size: N or HxW (default: each model's own, 224 for the classics).
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<ImageSize>,
    /// Engine to run on (see `cnnbench engines`).
    #[arg(long, short = 'e', default_value = cnnbench_engine_burn::ENGINE_NAME)]
    pub engine: String,
    /// Warm-up passes, run and dropped.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Timed passes.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub passes: usize,
    /// Seed for weights, inputs, gradients and labels.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Size of the engine's thread pool (default: all cores).
    #[arg(long)]
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
}

/// Settings of the CUDA engines.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct GpuArgs {
    /// Which CUDA GPU the torch-cuda engines use.
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub device: usize,
    /// Let cuDNN time its algorithms on the first (warm-up) passes and keep the fastest.
    #[arg(long)]
    pub cudnn_benchmark: bool,
    /// Allow TF32 tensor-core math for f32 convolutions and matrix products (off by default).
    #[arg(long)]
    pub tf32: bool,
}

impl GpuArgs {
    /// The engine options for these settings and a thread count.
    pub fn engine_options(&self, threads: Option<usize>) -> engines::EngineOptions {
        engines::EngineOptions {
            threads,
            torch: cnnbench_engine_torch::TorchOptions {
                threads,
                device: self.device,
                cudnn_benchmark: self.cudnn_benchmark,
                tf32: self.tf32,
            },
        }
    }
}

#[derive(Clone, Copy, clap::ValueEnum)]
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
}

fn plan(args: &RunArgs) -> Result<Vec<Planned>> {
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
            graph: zoo_model(name, args.image_size)?,
            source: "zoo".into(),
        });
    }
    for path in &args.model_file {
        planned.push(Planned {
            graph: file_model(path, args.image_size)?,
            source: path.display().to_string(),
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
    caps: &Capabilities,
) -> Result<()> {
    let (available, of_what) = match caps.device {
        DeviceKind::Cpu => (env::available_memory(), "of host memory"),
        DeviceKind::Gpu => (caps.device_memory.unwrap_or(0), "of GPU memory"),
    };
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
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode needs about {} but {} {of_what} is available; {advice}, or pass --force to try anyway",
                p.graph.name(),
                bytes(need),
                bytes(available)
            ));
        }
    }
    Ok(())
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    if args.batch_size == 0 {
        return Err(anyhow!("--batch-size must be at least 1"));
    }
    if args.passes == 0 {
        return Err(anyhow!("--passes must be at least 1"));
    }
    let mode: Mode = args.mode.into();
    let planned = plan(&args)?;
    let engine = engines::create(&args.engine, &args.gpu.engine_options(args.threads))?;
    output::check_writable(&args.output)?;
    let caps = engine.capabilities();
    caps.check(&args.engine, mode, args.precision.into())
        .map_err(|e| anyhow!("{e}: choose one with --mode/--precision, or another engine (`cnnbench engines` lists what each can do)"))?;
    check_memory(&planned, mode, args.batch_size, args.force, &caps)?;

    let cancel = Arc::new(AtomicBool::new(false));
    {
        let cancel = cancel.clone();
        // A second handler cannot be installed in the same process (only in tests).
        let _ = ctrlc::set_handler(move || cancel.store(true, Ordering::SeqCst));
    }
    let tool = ToolInfo {
        name: "cnnbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: Some(env!("CNNBENCH_GIT_COMMIT").to_string()).filter(|s| !s.is_empty()),
    };
    // The matrix-product rate `cnnbench peak` cached for this engine, for "% of peak".
    let peak = cnnbench_bench::peak::default_cache_dir()
        .and_then(|dir| cnnbench_bench::peak::load(&dir, &engine.info()));
    let mut results: Vec<(BenchResult, PathBuf)> = Vec::new();
    for (i, p) in planned.iter().enumerate() {
        let request = RunRequest {
            mode,
            batch_size: args.batch_size,
            warmup: args.warmup,
            passes: args.passes,
            seed: args.seed,
            threads_requested: args.threads,
            precision: args.precision.into(),
            model_source: p.source.clone(),
            label: args.label.clone(),
            tool: tool.clone(),
        };
        let bar = progress_bar(
            args.quiet,
            &p.graph,
            i,
            planned.len(),
            args.warmup + args.passes,
        );
        let outcome = harness::run(
            engine.as_ref(),
            &p.graph,
            &request,
            &cancel,
            &mut |progress| {
                bar.set_position(progress.pass as u64);
                if progress.warmup {
                    bar.set_message("warm-up");
                } else {
                    bar.set_message("");
                }
            },
        );
        bar.finish_and_clear();
        match outcome {
            Ok(mut result) => {
                result.peak_gflops_per_s = peak.as_ref().map(|p| p.matmul.gflops_per_s);
                let path = output::write_result(&args.output, &result)?;
                if !args.quiet {
                    eprintln!("{}: wrote {}", p.graph.name(), path.display());
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
                let skipped: Vec<&str> = planned[i..].iter().map(|p| p.graph.name()).collect();
                if !args.json {
                    print_table(&results);
                }
                eprintln!(
                    "interrupted: kept {} finished result(s); not run: {}",
                    results.len(),
                    skipped.join(", ")
                );
                return Ok(ExitCode::from(130));
            }
            Err(e) => return Err(e),
        }
    }
    if !args.json {
        print_table(&results);
    }
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

fn print_table(results: &[(BenchResult, PathBuf)]) {
    if results.is_empty() {
        return;
    }
    let with_update = results
        .iter()
        .any(|(r, _)| r.summary.contains_key(&Quantity::Update));
    let mut headers = vec![
        "Model",
        "Engine",
        "Device",
        "Mode",
        "Batch",
        "Forward (ms)",
        "Backward (ms)",
    ];
    if with_update {
        headers.push("Update (ms)");
    }
    headers.extend(["Total (ms)", "Images/s", "GFLOP/s", "Peak RSS"]);
    let mut table = new_table(&headers);
    for (r, _) in results {
        let [h, w] = r.config.image_size;
        let mut row = vec![
            format!("{} ({h}×{w})", r.model.name),
            r.engine.name.clone(),
            r.engine.device_name.clone(),
            r.config.mode.to_string(),
            r.config.batch_size.to_string(),
            ms(r, Quantity::Forward),
            ms(r, Quantity::Backward),
        ];
        if with_update {
            row.push(ms(r, Quantity::Update));
        }
        row.extend([
            ms(r, Quantity::Total),
            format!("{:.1}", r.throughput.images_per_s),
            format!("{:.1}", r.throughput.gflops_per_s),
            r.memory.peak_rss_bytes.map_or("–".into(), bytes),
        ]);
        table.add_row(row);
    }
    let numeric: Vec<usize> = (4..headers.len()).collect();
    align_right(&mut table, &numeric);
    println!("{table}");
    println!(
        "times: median ± standard deviation over the timed passes; results in the files above"
    );
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
