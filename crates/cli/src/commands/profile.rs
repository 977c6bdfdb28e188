//! `cnnbench profile MODEL`: per-node forward and backward times, share of time against
//! share of MACs, achieved GFLOP/s and "% of peak", beside the end-to-end time of the
//! same run. The measuring is `cnnbench_bench::profile`; this file prints it.

use super::args::{EngineArgs, ModeArg, PrecisionArg};
use super::common::{align_right, file_model, new_table, zoo_model, ImageSize};
use super::engines;
use anyhow::{anyhow, Context, Result};
use cnnbench_bench::peak;
use cnnbench_bench::profile::{self, ProfileRequest};
use cnnbench_bench::result::ToolInfo;
use cnnbench_bench::HarnessError;
use cnnbench_engine::{Mode, Precision};
use cnnbench_results::profile::{NodeProfile, NodeTime, ProfileDoc};
use cnnbench_results::roofline::LayerRoof;
use cnnbench_results::{Batches, ModelRef, RunSpec};
use indicatif::{ProgressBar, ProgressStyle};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(after_help = "Examples:
  cnnbench profile resnet18 -b 4 --image-size 64
  cnnbench profile resnet50 --engine torch-cpu --json > resnet50-torch.profile.json
  cnnbench report resnet50-torch.profile.json --charts charts/")]
pub struct ProfileArgs {
    /// The zoo model to profile (or use --model-file).
    pub model: Option<String>,
    /// A model file instead of a zoo model (model JSON, .onnx, Caffe .prototxt).
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub model_file: Option<PathBuf>,
    /// Engine to run on (see `cnnbench engines`).
    #[arg(long, short = 'e', default_value = cnnbench_engine_burn::ENGINE_NAME)]
    pub engine: String,
    /// train: forward and backward per node; infer: forward only, evaluation mode.
    #[arg(long, value_enum, default_value = "train")]
    pub mode: ModeArg,
    /// Numeric precision of every benchmark (as `run --precision`).
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: PrecisionArg,
    /// Images per pass.
    #[arg(long, short = 'b', default_value_t = 16)]
    pub batch_size: usize,
    /// Input image size: N or HxW (default: the model's own).
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<ImageSize>,
    /// Warm-up passes of every benchmark, run and dropped.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Timed passes of every benchmark (each distinct node, and the whole network).
    #[arg(long, short = 'n', default_value_t = 5)]
    pub passes: usize,
    /// Seed for weights, inputs and gradients.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Size of the engine's thread pool (default: all cores).
    #[arg(long, value_parser = crate::commands::common::thread_count)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub gpu: EngineArgs,
    /// How many nodes the table lists, slowest first.
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub top: usize,
    /// Print the profile as JSON (`cnnbench-profile` v1) instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON profile to FILE (`cnnbench report` reads it).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub fn run(args: ProfileArgs) -> Result<ExitCode> {
    let mode: Mode = args.mode.into();
    if mode == Mode::Step {
        return Err(anyhow!(
            "profile runs --mode train (forward and backward per node) or infer; a step's optimizer update is not per node"
        ));
    }
    let (graph, source) = match (&args.model, &args.model_file) {
        (Some(name), None) => (zoo_model(name, args.image_size)?, "zoo".to_string()),
        (None, Some(path)) => (
            file_model(path, args.image_size)?,
            path.display().to_string(),
        ),
        _ => return Err(anyhow!("name a zoo model or give --model-file FILE")),
    };
    super::common::check_fits(
        cnnbench_bench::memory::estimate_bytes(&graph, mode, args.batch_size),
        &format!(
            "{} at batch {} in {mode} mode",
            graph.name(),
            args.batch_size
        ),
    )?;
    let precision: Precision = args.precision.into();
    // What is profiled, as the one point of a run spec: checked once, here, as `run`
    // checks its spec.
    let model = match (&args.model, &args.model_file) {
        (Some(name), _) => ModelRef::Zoo { name: name.clone() },
        (None, Some(path)) => ModelRef::File {
            path: path.clone(),
            sha256: super::run::spec::file_sha256(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        },
        (None, None) => return Err(anyhow!("name a zoo model or give --model-file FILE")),
    };
    let mut point = RunSpec::new(vec![model], &args.engine);
    point.engine_options = args.gpu.settings()?;
    point.mode = mode;
    point.precision = precision;
    point.batch = Batches::Sizes(vec![args.batch_size]);
    point.image_sizes = args.image_size.map(|size| vec![size]);
    point.warmup = args.warmup;
    point.passes = args.passes;
    point.seed = args.seed;
    point.threads = args.threads;
    point.allocator = super::run::spec::current_allocator();
    point.validate().map_err(|e| anyhow!(e))?;
    let engine = engines::create(
        &args.engine,
        &engines::options(&point.engine_options, point.threads, precision),
    )?;
    engine
        .capabilities()
        .check(&args.engine, mode, precision)
        .map_err(|e| anyhow!("{e}: choose another --mode, --precision or engine"))?;
    let (peak, ceilings) = peak::cached_yardsticks(&engine.info(), precision);
    let cancel = super::common::stop_on_ctrl_c();
    let request = ProfileRequest {
        point,
        model_source: source,
        tool: ToolInfo {
            name: "cnnbench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            git_commit: Some(env!("CNNBENCH_GIT_COMMIT").to_string()).filter(|s| !s.is_empty()),
        },
        peak,
        ceilings,
    };
    let bar = progress_bar(args.quiet, graph.name());
    let reference = engines::int8_reference(precision, args.threads)?;
    let outcome = profile::profile(
        engine.as_ref(),
        reference.as_deref(),
        &graph,
        &request,
        &cancel,
        &mut |p| {
            bar.set_length(p.of as u64);
            bar.set_position(p.done as u64);
            bar.set_message(cnnbench_results::printable(&p.next));
        },
    );
    bar.finish_and_clear();
    let doc = match outcome {
        Ok(doc) => doc,
        Err(e) if e.downcast_ref::<HarnessError>().is_some() => {
            errln!("interrupted: no profile written");
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(e),
    };
    let json = serde_json::to_string_pretty(&doc)?;
    if let Some(path) = &args.output {
        std::fs::write(path, &json).with_context(|| format!("cannot write {}", path.display()))?;
        if !args.quiet {
            errln!("wrote {}", path.display());
        }
    }
    if args.json {
        outln!("{json}");
    } else {
        print_profile(&doc, args.top);
    }
    for w in &doc.warnings {
        errln!("warning: {w}");
    }
    Ok(ExitCode::SUCCESS)
}

fn progress_bar(quiet: bool, model: &str) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(1);
    let style = ProgressStyle::with_template(
        "{prefix:.bold} [{bar:30}] benchmark {pos}/{len} {msg} (elapsed {elapsed})",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(format!("profiling {}", cnnbench_results::printable(model)));
    bar
}

fn ms(t: &NodeTime) -> String {
    format!(
        "{:.3} [{:.3}–{:.3}]",
        t.median * 1e3,
        t.p25 * 1e3,
        t.p75 * 1e3
    )
}

fn percent(x: f64) -> String {
    format!("{:.1}", x * 100.0)
}

fn of_peak(gflops: Option<f64>, peak: Option<f64>) -> String {
    match (gflops, peak) {
        (Some(g), Some(p)) if p > 0.0 => format!("{:.0}%", g / p * 100.0),
        _ => "–".into(),
    }
}

fn shapes(n: &NodeProfile) -> String {
    let one = |s: &Vec<usize>| {
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("×")
    };
    n.input_shapes
        .iter()
        .map(one)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `writeln!` into a String, which cannot fail.
macro_rules! wln {
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

/// The top-N table, the per-op-type table and the sums against the end-to-end time.
pub fn print_profile(doc: &ProfileDoc, top: usize) {
    out!("{}", profile_text(doc, top));
}

/// The text [`print_profile`] prints (also shown by `report` for profile files).
pub fn profile_text(doc: &ProfileDoc, top: usize) -> String {
    let mut out = String::new();
    let train = doc.config.mode == Mode::Train;
    let [h, w] = doc.config.image_size;
    wln!(
        out,
        "{} ({h}×{w}), batch {}, {} mode on {} ({} threads), {} passes per benchmark",
        doc.model.name,
        doc.config.batch_size,
        doc.config.mode,
        doc.engine.name,
        doc.engine.threads,
        doc.config.passes
    );
    let total_time: f64 = doc.nodes.iter().map(NodeProfile::total_median).sum();
    // Saturating, as the nodes' counts are: a plain sum wrapped past `u64::MAX`.
    let total_macs = cnnbench_graph::saturating_sum(doc.nodes.iter().map(|n| n.macs));
    let mut headers = vec!["#", "Node", "Op", "Input", "Forward ms"];
    if train {
        headers.push("Backward ms");
    }
    headers.extend(["Time %", "MACs %", "GFLOP/s", "% of peak"]);
    let mut table = new_table(&headers);
    for n in doc.nodes_by_time().into_iter().take(top) {
        let name = if n.same_as.is_some() {
            format!("{} =", n.name)
        } else {
            n.name.clone()
        };
        let mut row = vec![
            n.index.to_string(),
            name,
            n.description.clone(),
            shapes(n),
            ms(&n.forward),
        ];
        if train {
            row.push(n.backward.as_ref().map_or("–".into(), ms));
        }
        let share_macs = if total_macs > 0 {
            n.macs as f64 / total_macs as f64
        } else {
            0.0
        };
        row.extend([
            percent(if total_time > 0.0 {
                n.total_median() / total_time
            } else {
                0.0
            }),
            percent(share_macs),
            n.gflops_per_s().map_or("–".into(), |g| format!("{g:.1}")),
            of_peak(n.gflops_per_s(), doc.peak.gflops_per_s),
        ]);
        table.add_row(row);
    }
    let first_number = 4;
    align_right(
        &mut table,
        &(first_number..headers.len()).collect::<Vec<_>>(),
    );
    align_right(&mut table, &[0]);
    wln!(out,
        "Slowest {} of {} nodes (median [25th–75th percentile] over passes; = : same op and input shapes as an earlier node, whose benchmark is attributed to both)",
        top.min(doc.nodes.len()),
        doc.nodes.len()
    );
    wln!(out, "{table}");

    let mut headers = vec!["Op type", "Nodes", "Forward ms"];
    if train {
        headers.push("Backward ms");
    }
    headers.extend(["Time %", "MACs %", "GFLOP/s", "% of peak"]);
    let mut table = new_table(&headers);
    for c in doc.by_category() {
        let mut row = vec![
            c.category.clone(),
            c.nodes.to_string(),
            format!("{:.3}", c.forward * 1e3),
        ];
        if train {
            row.push(format!("{:.3}", c.backward * 1e3));
        }
        row.extend([
            percent(c.time_share),
            percent(c.macs_share),
            c.gflops_per_s.map_or("–".into(), |g| format!("{g:.1}")),
            of_peak(c.gflops_per_s, doc.peak.gflops_per_s),
        ]);
        table.add_row(row);
    }
    align_right(&mut table, &(1..headers.len()).collect::<Vec<_>>());
    wln!(out, "By op type");
    wln!(out, "{table}");

    let e = &doc.end_to_end;
    let s = &doc.sum_of_nodes;
    let mut line = format!("sum of nodes: forward {:.2} ms", s.forward * 1e3);
    let mut whole = format!(
        "end to end (same run): forward {:.2} ms",
        e.forward.median * 1e3
    );
    if let (Some(sb), Some(eb)) = (s.backward, &e.backward) {
        line += &format!(", backward {:.2} ms", sb * 1e3);
        whole += &format!(", backward {:.2} ms", eb.median * 1e3);
    }
    line += &format!(", total {:.2} ms", s.total * 1e3);
    whole += &format!(", total {:.2} ms", e.total.median * 1e3);
    let ratio = if e.total.median > 0.0 {
        s.total / e.total.median
    } else {
        0.0
    };
    wln!(out, "{line}");
    wln!(out, "{whole}; sum of nodes / end to end = {ratio:.2}");
    let precision = doc.config.precision.as_str();
    match doc.peak.gflops_per_s {
        Some(p) => {
            let primitive = doc.peak.primitive();
            wln!(out,
                "% of peak: against {p:.1} GFLOP/s, this engine's {primitive} in {precision} measured by `cnnbench peak`"
            );
            let over: Vec<String> = doc
                .nodes
                .iter()
                .filter_map(|n| Some((n, n.gflops_per_s()?)))
                .filter(|(_, g)| *g > p)
                .map(|(n, g)| {
                    format!(
                        "{} {:.0}%",
                        cnnbench_results::printable(&n.name),
                        g / p * 100.0
                    )
                })
                .collect();
            if !over.is_empty() {
                wln!(out,
                    "warning: {} node(s) above 100% of peak ({}): they ran faster than the {primitive} `cnnbench peak` measured, so it is not this engine's best for them (other kernels, Winograd or FFT convolutions doing fewer operations than the counted MACs, or a peak measured on a busy machine): measure it again with `cnnbench peak --engine {} --precision {precision}` on a quiet machine",
                    over.len(),
                    over.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
                    doc.engine.name
                );
            }
        }
        None => wln!(
            out,
            "% of peak: unknown until `cnnbench peak --engine {} --precision {precision}` has run",
            doc.engine.name
        ),
    }
    out.push_str(&roofline_text(doc, top));
    wln!(
        out,
        "method: {} ({} benchmarks for {} nodes)",
        doc.method,
        doc.benchmarks,
        doc.nodes.len()
    );
    out
}

/// A byte count in the unit that reads best.
fn bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

/// The roofline of the forward pass: the slowest nodes that compute, each against the
/// roof of the memory level its bytes stream from, and the network's share of the
/// least time the roofs allow.
fn roofline_text(doc: &ProfileDoc, top: usize) -> String {
    let mut out = String::new();
    let precision = doc.config.precision.as_str();
    let Some(ceilings) = &doc.ceilings else {
        wln!(
            out,
            "roofline: unknown until `cnnbench peak --engine {} --precision {precision}` has measured this machine's ceilings",
            doc.engine.name
        );
        return out;
    };
    let mut judged: Vec<(&NodeProfile, &LayerRoof)> = doc
        .nodes
        .iter()
        .filter_map(|n| Some((n, n.roofline.as_ref()?)))
        .collect();
    judged.sort_by(|(a, _), (b, _)| b.forward.median.total_cmp(&a.forward.median));
    let mut table = new_table(&[
        "#",
        "Node",
        "Op",
        "Forward ms",
        "Moved",
        "FLOP/B",
        "GFLOP/s",
        "Roof",
        "% of roof",
        "% of nominal",
        "Bound",
    ]);
    for (n, r) in judged.iter().take(top) {
        table.add_row(vec![
            n.index.to_string(),
            n.name.clone(),
            n.description.clone(),
            format!("{:.3}", n.forward.median * 1e3),
            bytes(r.bytes),
            format!("{:.1}", r.intensity),
            format!("{:.1}", r.achieved_gflops_per_s),
            format!("{:.0} ({})", r.roof_gflops_per_s, r.memory_level),
            format!("{:.0}%", r.of_roof * 100.0),
            r.of_nominal
                .map_or("–".into(), |x| format!("{:.0}%", x * 100.0)),
            r.bound.as_str().to_string(),
        ]);
    }
    align_right(&mut table, &[0, 3, 4, 5, 6, 7, 8, 9]);
    let levels: Vec<String> = ceilings
        .memory
        .iter()
        .map(|m| format!("{} {:.1} GB/s", m.level, m.gb_per_s))
        .collect();
    wln!(
        out,
        "Roofline of the forward pass, slowest {} of {} computing nodes: against {:.1} GFLOP/s ({} in {precision}) and {} (`cnnbench peak`); a node's roof is that of the smallest level holding the bytes it moves",
        top.min(judged.len()),
        judged.len(),
        ceilings.compute_gflops_per_s,
        ceilings.compute_primitive,
        levels.join(", ")
    );
    wln!(out, "{table}");
    if let Some(net) = &doc.roofline {
        let share = |s: f64| {
            let whole = net.compute_bound_s + net.memory_bound_s + net.overhead_bound_s;
            if whole > 0.0 {
                s / whole * 100.0
            } else {
                0.0
            }
        };
        wln!(
            out,
            "the network: {:.0}% of the measured roof (the roofs allow {:.2} ms for the forward pass, {:.2} ms measured end to end; {:.1} GFLOP/s{}); the nodes' time is {:.0}% compute-bound, {:.0}% memory-bound, {:.0}% overhead",
            net.of_roof * 100.0,
            net.roof_time_s * 1e3,
            net.measured_s * 1e3,
            net.achieved_gflops_per_s,
            net.of_nominal
                .map_or(String::new(), |x| format!(", {:.0}% of nominal", x * 100.0)),
            share(net.compute_bound_s),
            share(net.memory_bound_s),
            share(net.overhead_bound_s)
        );
    }
    out
}
