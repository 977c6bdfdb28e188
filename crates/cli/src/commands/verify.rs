//! `cnnbench verify MODEL --engines A,B`: run the same network with the same weights and
//! inputs on two engines and compare outputs and gradients, so a benchmark compares
//! engines computing the same thing.

use super::args::{EngineArgs, PrecisionArg};
use super::common::{
    align_right, file_model, file_model_and_weights, new_table, zoo_model, ImageSize,
};
use super::engines;
use anyhow::{anyhow, Context, Result};
use cnnbench_bench::images::ImageFolder;
use cnnbench_bench::verify::{
    self, Agreement, Comparison, VerifyReport, VerifyRequest, FLOOR_FACTOR, GRADIENT_MODE,
    PERTURBATION,
};
use cnnbench_engine::Precision;
use cnnbench_graph::Weights;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct VerifyArgs {
    /// The zoo model to verify (or use --model-file).
    pub model: Option<String>,
    /// A model file instead of a zoo model (model JSON, .onnx, Caffe .prototxt).
    #[arg(long, value_name = "FILE", conflicts_with = "model")]
    pub model_file: Option<PathBuf>,
    /// The two engines, reference first: e.g. burn-flex,torch-cpu.
    #[arg(long, value_delimiter = ',', num_args = 1.., default_value = "burn-flex,torch-cpu")]
    pub engines: Vec<String>,
    /// Weights to load into both (safetensors keyed <node>.<tensor>, as `convert` writes
    /// them); default: those the --model-file carries when they are complete, else the
    /// reference engine's random initialisation.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    /// Images in the batch.
    #[arg(long, short = 'b', default_value_t = 2)]
    pub batch_size: usize,
    /// A folder of your own images (JPEG, PNG; prepared as torchvision prepares
    /// ImageNet): the compared batch is its first -b images, an int8 side is calibrated
    /// on its first 8, and both engines' top classes are compared over all of them
    /// (top-1 and top-5 agreement). Default: random images from --seed.
    #[arg(long, value_name = "DIR")]
    pub images: Option<PathBuf>,
    /// Input image size: N or HxW (default: the model's own).
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<ImageSize>,
    /// Seed of the input and the upstream gradient.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The precision of each engine, reference first: `f32,bf16` asks how much bf16
    /// changes the answer (one engine twice: --engines torch-cpu,torch-cpu).
    #[arg(long, value_enum, value_delimiter = ',', num_args = 1.., default_value = "f32,f32")]
    pub precisions: Vec<PrecisionArg>,
    /// Largest allowed error, relative to each reference tensor's largest magnitude
    /// (default: 1e-4 in f32; 3e-2 when either engine runs bf16, 1e-2 for f16, 1e-1 for
    /// int8). Across precisions a tensor also passes within 10× the candidate
    /// precision's own floor.
    #[arg(long)]
    pub tolerance: Option<f64>,
    /// List every gradient, not only the worst.
    #[arg(long)]
    pub all: bool,
    /// Also compare every node's output in graph order (train and infer) and the
    /// gradient arriving at every node in training, and name the first node where the
    /// engines part: where a wrong kernel or lowering is. Engines that run a model as a
    /// whole (tract, ort-cpu) cannot be looked inside.
    #[arg(long)]
    pub localize: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Thread-pool size of both engines.
    #[arg(long, value_parser = crate::commands::common::thread_count)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub gpu: EngineArgs,
}

pub fn run(args: VerifyArgs) -> Result<ExitCode> {
    // Without --weights, a model file's own weights are used when it carries all of them.
    let (graph, file_weights) = match (&args.model, &args.model_file) {
        (Some(name), None) => (zoo_model(name, args.image_size)?, None),
        (None, Some(path)) if args.weights.is_none() => {
            file_model_and_weights(path, args.image_size)?
        }
        (None, Some(path)) => (file_model(path, args.image_size)?, None),
        _ => return Err(anyhow!("name a zoo model or give --model-file FILE")),
    };
    let weights_from_file = file_weights.is_some();
    let [reference, candidate] = args.engines.as_slice() else {
        return Err(anyhow!(
            "--engines takes exactly two engines, reference first (e.g. burn-flex,torch-cpu); got {}",
            args.engines.len()
        ));
    };
    let &[reference_precision, candidate_precision] = args.precisions.as_slice() else {
        return Err(anyhow!(
            "--precisions takes exactly two precisions, the reference's first (e.g. f32,bf16); got {}",
            args.precisions.len()
        ));
    };
    let precisions: [Precision; 2] = [reference_precision.into(), candidate_precision.into()];
    let tolerance = args
        .tolerance
        .unwrap_or_else(|| verify::tolerance_for(verify::coarser(precisions[0], precisions[1])));
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(anyhow!(
            "--tolerance must be a finite number ≥ 0 (a relative error, e.g. 1e-4), not {tolerance}"
        ));
    }
    // Both engines train the batch in this process; with --localize every node's output
    // of four runs (the reference, its two perturbed runs, the candidate) in two modes,
    // and the gradient arriving at every node in training, are kept on the host too:
    // about the activations of twelve passes, counted as six more training estimates.
    super::common::check_fits(
        cnnbench_bench::memory::estimate_bytes(
            &graph,
            cnnbench_engine::Mode::Train,
            args.batch_size,
        )
        .saturating_mul(if args.localize { 8 } else { 2 }),
        &format!(
            "verifying {} at batch {} on two engines",
            graph.name(),
            args.batch_size
        ),
    )?;
    // Each engine takes the own settings it declares (`--python` for the pytorch engine
    // of the two); a key neither declares is refused by the reference.
    let keys = [
        engines::declared_keys(reference)?,
        engines::declared_keys(candidate)?,
    ];
    let own = |side: usize| -> Result<engines::EngineOptions> {
        let mut options = args.gpu.engine_options(args.threads, precisions[side])?;
        options.settings.retain(|key, _| {
            keys[side].contains(key) || !keys.iter().any(|theirs| theirs.contains(key))
        });
        Ok(options)
    };
    let reference = engines::create(reference, &own(0)?)?;
    let candidate = engines::create(candidate, &own(1)?)?;
    let weights = args
        .weights
        .as_deref()
        .map(|path| {
            Weights::load(path).with_context(|| format!("cannot use --weights {}", path.display()))
        })
        .transpose()?
        .or(file_weights);
    let request = VerifyRequest {
        batch_size: args.batch_size,
        seed: args.seed,
        tolerance,
        weights,
        localize: args.localize,
        precisions,
        images: args
            .images
            .as_deref()
            .map(|folder| ImageFolder::load(folder, graph.input_shape()).map(Arc::new))
            .transpose()?,
    };
    // int8's ranges are measured on burn-flex's interpreter, as `run` measures them; the
    // engines' own settings are theirs, not its.
    let calibrator = if precisions.contains(&Precision::Int8) {
        let mut options = args.gpu.engine_options(args.threads, Precision::F32)?;
        options.settings.clear();
        Some(engines::create(
            cnnbench_engine_burn::ENGINE_NAME,
            &options,
        )?)
    } else {
        None
    };
    let mut report = verify::verify_calibrated(
        &graph,
        reference.as_ref(),
        candidate.as_ref(),
        calibrator.as_deref().unwrap_or(reference.as_ref()),
        &request,
    )?;
    if let (true, Some(path)) = (weights_from_file, &args.model_file) {
        report.weights = format!("from {}", path.display());
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report, args.all);
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The classes both engines picked for the user's images, in a line.
fn agreement_words(agreement: &Agreement) -> String {
    let share = |n: usize| 100.0 * n as f64 / agreement.images.max(1) as f64;
    let top5 = agreement.top5.map_or(String::new(), |top5| {
        format!(
            "; the reference's class among the candidate's top 5 for {top5} ({:.1}%)",
            share(top5)
        )
    });
    format!(
        "top-1 agreement: the same class for {} of {} images ({:.1}%){top5}; images: {}",
        agreement.top1,
        agreement.images,
        share(agreement.top1),
        agreement.data
    )
}

fn print_report(report: &VerifyReport, all: bool) {
    let [n, c, h, w] = report.input;
    // Precisions are named where one is not f32, so the usual report reads as before.
    let (candidate, reference) = if report.reference_precision == Precision::F32
        && report.candidate_precision == Precision::F32
    {
        (report.candidate.clone(), report.reference.clone())
    } else {
        (
            format!(
                "{} {}",
                report.candidate,
                report.candidate_precision.as_str()
            ),
            format!(
                "{} {}",
                report.reference,
                report.reference_precision.as_str()
            ),
        )
    };
    outln!(
        "{} at {n}×{c}×{h}×{w}: {candidate} (candidate) against {reference} (reference), weights {}",
        report.model, report.weights
    );
    outln!("compared: {}", report.compared);
    // Across precisions: the candidate precision's own floor, and the cosine similarity.
    let across = report.reference_precision != report.candidate_precision;
    let mut headers = vec![
        "Compared",
        "Max relative error",
        "Relative L2 error",
        "Noise floor",
    ];
    if across {
        headers.extend(["Own floor", "Cosine"]);
    }
    headers.push("Passes");
    let mut table = new_table(&headers);
    let row = |label: String, c: &Comparison| {
        let mut cells = vec![
            label,
            format!("{:.2e}", c.max_relative_error),
            format!("{:.2e}", c.relative_l2_error),
            format!("{:.2e}", c.noise_floor),
        ];
        if across {
            cells.push(c.precision_floor.map_or("-".into(), |f| format!("{f:.2e}")));
            cells.push(format!("{:.6}", c.cosine_similarity));
        }
        cells.push(
            if c.passes(report.tolerance) {
                "yes"
            } else {
                "NO"
            }
            .to_string(),
        );
        cells
    };
    let (grads, outputs): (Vec<&Comparison>, Vec<&Comparison>) = report
        .comparisons
        .iter()
        .partition(|c| c.name.starts_with("grad "));
    for c in outputs {
        table.add_row(row(c.name.clone(), c));
    }
    if all {
        for c in &grads {
            table.add_row(row(c.name.clone(), c));
        }
    } else if let Some(worst) = grads
        .iter()
        .max_by(|a, b| a.max_relative_error.total_cmp(&b.max_relative_error))
    {
        let label = format!(
            "{} weight gradients (largest error: {})",
            grads.len(),
            worst.name.trim_start_matches("grad ")
        );
        table.add_row(row(label, worst));
    }
    align_right(
        &mut table,
        if across { &[1, 2, 3, 4, 5] } else { &[1, 2, 3] },
    );
    outln!("{table}");
    outln!(
        "errors are relative to the reference tensor's largest magnitude; the noise floor is the reference against itself with input and weights perturbed by {PERTURBATION:.0e} (its own rounding sensitivity)"
    );
    if across {
        outln!(
            "own floor: {} against itself with input and weights perturbed by {:.1e}, {}'s resolution (what the precision's own rounding moves); cosine: the candidate's tensor against the reference's",
            report.candidate,
            verify::resolution(report.candidate_precision),
            report.candidate_precision.as_str()
        );
    }
    if !report.nodes.is_empty() {
        print_nodes(report, all);
    }
    if let Some(agreement) = &report.agreement {
        outln!("{}", agreement_words(agreement));
    }
    let failures = report.failures();
    if failures.is_empty() {
        outln!(
            "PASS: every tensor is within {:.0e}, or within {FLOOR_FACTOR}× its noise floor{}",
            report.tolerance,
            if across { " or its own floor" } else { "" }
        );
    } else {
        let names: Vec<&str> = failures.iter().take(5).map(|c| c.name.as_str()).collect();
        outln!(
            "FAIL: {} of {} tensors differ by more than {:.0e} and more than {FLOOR_FACTOR}× their noise floor{}: {}{}",
            failures.len(),
            report.comparisons.len(),
            report.tolerance,
            if across { " and their own floor" } else { "" },
            names.join(", "),
            if failures.len() > names.len() { ", …" } else { "" }
        );
    }
}

/// The node-by-node table of `--localize`: around each mode's first departure, the
/// nodes just before it (which agree) and just after (which differ too); every node
/// with `--all`. Then where each mode first parts.
fn print_nodes(report: &VerifyReport, all: bool) {
    let mut table = new_table(&[
        "Mode",
        "Node",
        "Op",
        "Shape",
        "Max relative error",
        "Noise floor",
        "Passes",
    ]);
    const BEFORE: usize = 3;
    const AFTER: usize = 2;
    let mut shown = 0;
    for mode in ["train", GRADIENT_MODE, "infer"] {
        let mut nodes: Vec<_> = report.nodes.iter().filter(|n| n.mode == mode).collect();
        // Gradients in the order backward computes them, from the output back.
        if mode == GRADIENT_MODE {
            nodes.reverse();
        }
        let first = report
            .first_departures
            .iter()
            .find(|n| n.mode == mode)
            .and_then(|f| nodes.iter().position(|n| n.node == f.node));
        for (i, n) in nodes.iter().enumerate() {
            let near_first = first.is_some_and(|f| i + BEFORE >= f && i <= f + AFTER);
            if !all && !near_first {
                continue;
            }
            shown += 1;
            let shape: Vec<String> = n.shape.iter().map(|d| d.to_string()).collect();
            table.add_row(vec![
                n.mode.clone(),
                cnnbench_results::printable(&n.node),
                n.op.clone(),
                shape.join("×"),
                format!("{:.2e}", n.comparison.max_relative_error),
                format!("{:.2e}", n.comparison.noise_floor),
                if n.comparison.passes(report.tolerance) {
                    "yes"
                } else {
                    "NO"
                }
                .to_string(),
            ]);
        }
    }
    if shown > 0 {
        align_right(&mut table, &[4, 5]);
        outln!("{table}");
    }
    if shown < report.nodes.len() {
        outln!(
            "({} of {} node {} shown: --all lists every one)",
            shown,
            report.nodes.len(),
            if report.nodes.iter().any(|n| n.mode == GRADIENT_MODE) {
                "outputs and gradients"
            } else {
                "outputs"
            }
        );
    }
    let modes: Vec<&str> = {
        let mut m: Vec<&str> = report.nodes.iter().map(|n| n.mode.as_str()).collect();
        m.dedup();
        m
    };
    if let Some(why) = &report.gradients_not_compared {
        outln!("{GRADIENT_MODE}: not compared ({why})");
    }
    for mode in modes {
        match report.first_departures.iter().find(|n| n.mode == mode) {
            Some(n) if mode == GRADIENT_MODE => outln!(
                "{mode}: the gradients first part at node \"{}\" ({}): error {:.2e}, noise floor {:.2e}; the gradient arriving at every node after it (nearer the output) agrees",
                cnnbench_results::printable(&n.node),
                n.op,
                n.comparison.max_relative_error,
                n.comparison.noise_floor
            ),
            None if mode == GRADIENT_MODE => {
                outln!("{mode}: the gradient arriving at every node agrees")
            }
            Some(n) => outln!(
                "{mode}: the engines first part at node \"{}\" ({}): error {:.2e}, noise floor {:.2e}; every node before it agrees",
                cnnbench_results::printable(&n.node),
                n.op,
                n.comparison.max_relative_error,
                n.comparison.noise_floor
            ),
            None => outln!("{mode}: every node's output agrees"),
        }
    }
}
