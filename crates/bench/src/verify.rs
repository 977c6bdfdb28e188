//! `cnnbench verify`: proof that two engines compute the same network. Both get the
//! same weights, the same input batch and the same upstream gradient; the outputs (in
//! training and in inference mode) and every weight's gradient are compared.

use crate::images::ImageFolder;
use crate::quantize::{calibrate_on, Calibration, CalibrationData};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::kit::NodeOutput;
use cnnbench_engine::{Engine, Mode, Precision, Session, SessionConfig};
use cnnbench_graph::{
    cosine_similarity, max_relative_error, relative_l2_error, Graph, HostTensor, Weights,
};
use cnnbench_results::quantization::DEFAULT_CALIBRATION_IMAGES;
use serde::Serialize;
use std::sync::Arc;

/// The fp32 tolerance: the largest difference relative to the reference tensor's largest
/// magnitude. Two correct fp32 engines differ by summation order only.
pub const DEFAULT_TOLERANCE: f64 = 1e-4;

/// The tolerance when the lower of the two precisions is `precision`: f32's
/// [`DEFAULT_TOLERANCE`]; bf16 keeps 8 bits of mantissa (a rounding of 2⁻⁸ ≈ 4e-3 per
/// operation), which through a network's layers and back again moves tensors by about
/// 1e-2, so 3e-2; f16 keeps 11 bits (5e-4 per operation), so 1e-2, and so does TF32,
/// whose products round their inputs to the same 10 stored bits. Mixed precision takes
/// its low type's tolerance: the ops autocast lowers round as much. int8 rounds every
/// activation to one of 256 levels of its calibrated range (a step of 0.4% of the range
/// per layer), which through a network's depth moves the outputs by several percent of
/// their largest magnitude, so 1e-1.
pub fn tolerance_for(precision: Precision) -> f64 {
    match precision.narrowest() {
        Precision::Int8 => 1e-1,
        Precision::Bf16 => 3e-2,
        Precision::F16 | Precision::Tf32 => 1e-2,
        Precision::F32 | Precision::AmpBf16 | Precision::AmpF16 => DEFAULT_TOLERANCE,
    }
}

/// The coarser of two precisions, whose tolerance a comparison between them takes.
pub fn coarser(a: Precision, b: Precision) -> Precision {
    let tolerance = |p| tolerance_for(p);
    if tolerance(a) >= tolerance(b) {
        a
    } else {
        b
    }
}

/// Relative size of the input perturbation that measures the network's own sensitivity
/// (a few units in the last place of f32).
pub const PERTURBATION: f64 = 1e-6;

/// A difference within this multiple of the reference's own sensitivity is rounding, not
/// a different computation.
pub const FLOOR_FACTOR: f64 = 10.0;

/// Perturbed runs of the reference engine that measure the noise floor.
const FLOOR_DRAWS: u64 = 2;

/// The relative rounding of one value in `precision`: what the candidate's own floor
/// perturbs its inputs and weights by when two precisions are compared (f32's
/// [`PERTURBATION`]; half a unit in the last place of f16's 11 and bf16's 8 significant
/// bits; int8's step, 1/256 of a range).
pub fn resolution(precision: Precision) -> f64 {
    match precision.narrowest() {
        Precision::F32 => PERTURBATION,
        Precision::Tf32 | Precision::F16 | Precision::AmpF16 => 2f64.powi(-11),
        Precision::Bf16 | Precision::AmpBf16 | Precision::Int8 => 2f64.powi(-8),
    }
}

/// What to verify.
#[derive(Clone, Debug)]
pub struct VerifyRequest {
    pub batch_size: usize,
    /// Seeds the input and upstream gradient (and the weights when none are given).
    pub seed: u64,
    pub tolerance: f64,
    /// Weights to load into both engines; `None`: the reference engine's random ones.
    pub weights: Option<Weights>,
    /// Also compare every node's output, in graph order, to find the first node where
    /// the engines part (`verify --localize`).
    pub localize: bool,
    /// The precisions of the reference and the candidate ("how much does bf16 change
    /// my answer?": f32 against bf16 on the same engine).
    pub precisions: [Precision; 2],
    /// The user's own images: the compared batch is their first `batch_size`, an int8
    /// side is calibrated on their first [`DEFAULT_CALIBRATION_IMAGES`], and the two
    /// engines' classes are compared over all of them ([`Agreement`]). `None`: random
    /// images from the seed.
    pub images: Option<Arc<ImageFolder>>,
}

/// How often the candidate picks the reference's class, over the user's images: what
/// a lower precision costs a trained classifier, where relative errors only bound it.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Agreement {
    /// The images compared, in words (`92 images from photos/`), and whether the
    /// calibration images were among them.
    pub data: String,
    pub images: usize,
    /// Images whose top class is the same on both engines.
    pub top1: usize,
    /// Images whose reference class is among the candidate's five highest scores
    /// (`None`: fewer than five classes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top5: Option<usize>,
}

impl Agreement {
    /// Top-1 agreement as a share (0–1).
    pub fn top1_share(&self) -> f64 {
        self.top1 as f64 / self.images.max(1) as f64
    }
}

/// One compared tensor.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    /// `output (train)`, `output (infer)` or `grad <node>.<tensor>`.
    pub name: String,
    pub max_relative_error: f64,
    /// `‖candidate − reference‖₂ / ‖reference‖₂`.
    pub relative_l2_error: f64,
    /// The reference tensor's largest magnitude (the error's scale).
    pub reference_scale: f64,
    /// The reference engine against itself with the input perturbed by [`PERTURBATION`]:
    /// how far rounding alone moves this tensor in this network (ReLUs whose input sits
    /// next to zero flip, max-pooling ties break the other way, batch statistics over few
    /// values amplify). Deep random-weight networks are this sensitive; a wrong lowering
    /// is far above it.
    pub noise_floor: f64,
    /// When two precisions are compared: the candidate against itself, in its own
    /// precision, with input and weights perturbed at that precision's resolution
    /// ([`resolution`]): how far the precision's own rounding moves this tensor. An
    /// error within [`FLOOR_FACTOR`] × this is what the precision explains.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision_floor: Option<f64>,
    /// The cosine similarity of the candidate's tensor to the reference's (1: the same
    /// direction), TorchBench's check of a low-precision model.
    pub cosine_similarity: f64,
}

impl Comparison {
    /// Within the tolerance, or within [`FLOOR_FACTOR`] × the noise floor, or (two
    /// precisions) × the candidate precision's own floor.
    pub fn passes(&self, tolerance: f64) -> bool {
        let within = |floor: f64| self.max_relative_error <= FLOOR_FACTOR * floor;
        self.max_relative_error <= tolerance
            || within(self.noise_floor)
            || self.precision_floor.is_some_and(within)
    }
}

/// The mode of [`NodeComparison`]s that compare the gradient arriving at each node in
/// training (the others compare node outputs).
pub const GRADIENT_MODE: &str = "train gradient";

/// One node's output, or the gradient arriving at it, compared, for `verify --localize`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct NodeComparison {
    /// `train` (outputs, batch statistics), `infer` (outputs, running statistics) or
    /// [`GRADIENT_MODE`] (the gradient arriving at the node's output in training).
    pub mode: String,
    pub node: String,
    /// The op's tag (`conv2d`, `batch_norm2d`, …).
    pub op: String,
    pub shape: Vec<usize>,
    #[serde(flatten)]
    pub comparison: Comparison,
}

/// The outcome of one verification.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    pub model: String,
    pub input: [usize; 4],
    pub reference: String,
    pub candidate: String,
    pub reference_precision: Precision,
    pub candidate_precision: Precision,
    pub tolerance: f64,
    /// Where the weights came from.
    pub weights: String,
    /// What was compared, in words: both modes and every gradient, or the inference
    /// output alone when an engine cannot train.
    pub compared: String,
    pub comparisons: Vec<Comparison>,
    /// With `localize`: every node's output in graph order, per mode compared, and in
    /// training the gradient arriving at every node.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<NodeComparison>,
    /// With `localize`: per mode, the first node over the tolerance (and its noise floor),
    /// where the two engines first compute something different; for gradients the first
    /// in the order backward visits them (from the output back).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub first_departures: Vec<NodeComparison>,
    /// With `localize` in training: why the gradients arriving at the nodes were not
    /// compared (an engine cannot show them); the node outputs still are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gradients_not_compared: Option<String>,
    /// With the user's images: how often the two engines pick the same class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agreement: Option<Agreement>,
}

impl VerifyReport {
    /// The largest error of all comparisons.
    pub fn worst(&self) -> Option<&Comparison> {
        self.comparisons
            .iter()
            .max_by(|a, b| a.max_relative_error.total_cmp(&b.max_relative_error))
    }
    /// True when every comparison passes (NaN never does).
    pub fn passed(&self) -> bool {
        self.comparisons.iter().all(|c| c.passes(self.tolerance))
    }
    /// Comparisons that fail, worst first.
    pub fn failures(&self) -> Vec<&Comparison> {
        let mut failed: Vec<&Comparison> = self
            .comparisons
            .iter()
            .filter(|c| !c.passes(self.tolerance))
            .collect();
        failed.sort_by(|a, b| b.max_relative_error.total_cmp(&a.max_relative_error));
        failed
    }
}

fn session(
    engine: &dyn Engine,
    precision: Precision,
    graph: &Graph,
    mode: Mode,
    request: &VerifyRequest,
    calibration: Option<&Calibration>,
) -> Result<Box<dyn Session>> {
    let config = SessionConfig {
        mode,
        batch_size: request.batch_size,
        seed: request.seed,
        precision,
        deterministic: true,
        calibration: calibration.map(|c| c.int8.clone()),
    };
    Ok(crate::measure::ready(engine, graph, &config)?.session)
}

/// `t` with every element moved by a relative `size` (standard-normal factors).
fn perturb(t: &HostTensor, seed: u64, size: f64) -> HostTensor {
    let noise = HostTensor::standard_normal(t.shape.clone(), seed);
    let mut out = t.clone();
    for (x, n) in out.data.iter_mut().zip(&noise.data) {
        *x = (*x as f64 * (1.0 + size * *n as f64)) as f32;
    }
    out
}

/// Weights and input perturbed by a relative `size`, draw `draw` of the floor runs.
fn perturbed(
    weights: &Weights,
    input: &HostTensor,
    seed: u64,
    draw: u64,
    size: f64,
) -> (Weights, HostTensor) {
    let seed = seed.wrapping_add(1000 * (draw + 1));
    let mut perturbed_weights = Weights::new();
    for (i, (key, tensor)) in weights.iter().enumerate() {
        perturbed_weights.insert(
            key.clone(),
            perturb(tensor, seed.wrapping_add(1 + i as u64), size),
        );
    }
    (perturbed_weights, perturb(input, seed, size))
}

/// What one engine computed: outputs in both modes and the weight gradients (the
/// training half is absent when an engine of the pair cannot train).
struct Computed {
    train_output: Option<HostTensor>,
    gradients: Weights,
    infer_output: HostTensor,
    /// Every node's output per mode (`train`, `infer`), and the gradient arriving at
    /// every node ([`GRADIENT_MODE`]), when localizing.
    nodes: Vec<(&'static str, Vec<NodeOutput>)>,
    /// When localizing in training: why the engine could not show the gradients
    /// arriving at its nodes (its outputs are compared all the same).
    gradients_refused: Option<String>,
    /// An int8 side's ranges, measured on these weights (kept for the class agreement).
    calibration: Option<Calibration>,
}

/// What every engine's run of one verification shares.
#[derive(Clone, Copy)]
struct Shared<'a> {
    graph: &'a Graph,
    request: &'a VerifyRequest,
    /// Seeds the upstream gradient.
    grad_seed: u64,
    /// Whether both engines train (else inference alone is compared).
    trains: bool,
    /// Measures an int8 side's activation ranges.
    calibrator: &'a dyn Engine,
}

/// Runs one engine on the given weights and input. The upstream gradient is drawn from
/// `seed` for the output's shape, so every engine gets the same one.
fn compute(
    (engine, precision): (&dyn Engine, Precision),
    context: &Shared,
    weights: &Weights,
    input: &HostTensor,
) -> Result<Computed> {
    let Shared {
        graph,
        request,
        grad_seed: seed,
        trains,
        calibrator: _,
    } = *context;
    let name = engine.info().name;
    // int8 quantises to the ranges of these very weights.
    let calibration = calibration_for(context, precision, weights, &name)?;
    // A session of `mode` with the weights and input loaded, after one forward pass,
    // and why it cannot show the gradients arriving at its nodes, if asked and it cannot.
    let mut nodes = Vec::new();
    let mut forward = |mode: Mode| -> Result<(Box<dyn Session>, Option<String>)> {
        let mut gradients_refused = None;
        let mut s = session(
            engine,
            precision,
            graph,
            mode,
            request,
            calibration.as_ref(),
        )?;
        s.import_weights(weights)
            .with_context(|| format!("loading the weights into {name}"))?;
        s.set_input(input)?;
        if request.localize {
            s.keep_node_outputs()
                .with_context(|| format!("{name} cannot be localized"))?;
            if mode == Mode::Train {
                if let Err(e) = s.keep_node_gradients() {
                    gradients_refused = Some(format!("{name}: {e:#}"));
                }
            }
        }
        s.forward().with_context(|| format!("{name}: forward"))?;
        if request.localize {
            nodes.push((mode.as_str(), s.node_outputs()?));
        }
        Ok((s, gradients_refused))
    };
    let (mut train_output, mut gradients, mut node_gradients) = (None, Weights::new(), None);
    let mut gradients_refused = None;
    if trains {
        let (mut train, refused) = forward(Mode::Train)?;
        gradients_refused = refused;
        let output = train.output()?;
        let upstream = HostTensor::standard_normal(output.shape.clone(), seed);
        train.set_output_grad(&upstream)?;
        train
            .backward()
            .with_context(|| format!("{name}: backward"))?;
        gradients = train.weight_gradients()?;
        train_output = Some(output);
        if request.localize && gradients_refused.is_none() {
            node_gradients = Some(train.node_gradients()?);
        }
    }
    let infer_output = forward(Mode::Infer)?.0.output()?;
    // After the training outputs, before the inference ones.
    if let Some(node_gradients) = node_gradients {
        nodes.insert(1.min(nodes.len()), (GRADIENT_MODE, node_gradients));
    }
    Ok(Computed {
        train_output,
        gradients,
        infer_output,
        nodes,
        gradients_refused,
        calibration,
    })
}

/// Runs `graph` on both engines and compares them. `reference` supplies the weights
/// unless the request carries some; it also runs once more on a slightly perturbed input
/// to measure how sensitive each tensor is to rounding (the noise floor). An int8 side
/// is calibrated on the reference ([`verify_calibrated`] names another engine).
pub fn verify(
    graph: &Graph,
    reference: &dyn Engine,
    candidate: &dyn Engine,
    request: &VerifyRequest,
) -> Result<VerifyReport> {
    verify_calibrated(graph, reference, candidate, reference, request)
}

/// [`verify`], an int8 side's activation ranges measured by `calibrator` (an engine
/// that shows every node's output: burn-flex) on the weights that side runs.
pub fn verify_calibrated(
    graph: &Graph,
    reference: &dyn Engine,
    candidate: &dyn Engine,
    calibrator: &dyn Engine,
    request: &VerifyRequest,
) -> Result<VerifyReport> {
    let (ref_name, cand_name) = (reference.info().name, candidate.info().name);
    if request.batch_size == 0 {
        return Err(anyhow!("the batch size must be at least 1"));
    }
    let (ref_caps, cand_caps) = (reference.capabilities(), candidate.capabilities());
    for (name, caps) in [(&ref_name, &ref_caps), (&cand_name, &cand_caps)] {
        if !caps.weight_exchange {
            return Err(anyhow!(
                "{name} cannot exchange weights, inputs and gradients, so it cannot be verified"
            ));
        }
    }
    // int8 is post-training quantisation: an engine that trains in f32 does not in int8.
    let int8 = request.precisions.contains(&Precision::Int8);
    let both_train = ref_caps.trains() && cand_caps.trains();
    let trains = !int8 && both_train;
    let compared = if trains {
        "outputs in train and infer modes, and every weight gradient".to_string()
    } else if both_train {
        "the inference output only (int8 is for inference)".to_string()
    } else {
        let which = if ref_caps.trains() {
            &cand_name
        } else {
            &ref_name
        };
        format!("the inference output only ({which} cannot train)")
    };
    let first_mode = if trains { Mode::Train } else { Mode::Infer };
    let (weights, source) = match &request.weights {
        Some(w) => {
            w.check(graph, true)?;
            (w.clone(), "given".to_string())
        }
        None => (
            session(
                reference,
                request.precisions[0],
                graph,
                first_mode,
                request,
                None,
            )?
            .export_weights()
            .with_context(|| format!("exporting {ref_name}'s weights"))?,
            format!("random, from {ref_name}"),
        ),
    };
    let [c, h, w] = graph.input_shape();
    let input = match &request.images {
        Some(folder) if folder.len() < request.batch_size => {
            return Err(anyhow!(
                "{} holds {} images, fewer than the batch of {}: give a smaller -b or more images",
                folder.folder.display(),
                folder.len(),
                request.batch_size
            ))
        }
        Some(folder) => folder.batch(0, request.batch_size),
        None => HostTensor::standard_normal(vec![request.batch_size, c, h, w], request.seed),
    };
    // Rounding differs between engines in every layer, so the floor runs perturb every
    // weight as well as the input; two draws, because one can miss a sensitive unit.
    let grad_seed = request.seed.wrapping_add(1);
    let [ref_precision, cand_precision] = request.precisions;
    let context = Shared {
        graph,
        request,
        grad_seed,
        trains,
        calibrator,
    };
    let run = |side, weights: &Weights, input: &HostTensor| compute(side, &context, weights, input);
    let mut base = run((reference, ref_precision), &weights, &input)?;
    let mut shaken = Vec::new();
    for draw in 0..FLOOR_DRAWS {
        let (w, x) = perturbed(&weights, &input, request.seed, draw, PERTURBATION);
        shaken.push(run((reference, ref_precision), &w, &x)?);
    }
    let mut cand = run((candidate, cand_precision), &weights, &input)?;
    // Across precisions, the candidate precision's own floor: the candidate against
    // itself with everything perturbed at that precision's resolution.
    let mut own = Vec::new();
    if ref_precision != cand_precision {
        for draw in 0..FLOOR_DRAWS {
            let size = resolution(cand_precision);
            let (w, x) = perturbed(&weights, &input, request.seed, draw + FLOOR_DRAWS, size);
            own.push(run((candidate, cand_precision), &w, &x)?);
        }
    }
    // Node gradients are compared only when both engines show them.
    let gradients_not_compared = base
        .gradients_refused
        .clone()
        .or_else(|| cand.gradients_refused.clone());
    if gradients_not_compared.is_some() {
        for c in std::iter::once(&mut base)
            .chain(std::iter::once(&mut cand))
            .chain(shaken.iter_mut())
            .chain(own.iter_mut())
        {
            c.nodes.retain(|(mode, _)| *mode != GRADIENT_MODE);
        }
    }

    let compare =
        |name: String, pick: &dyn Fn(&Computed) -> Result<HostTensor>| -> Result<Comparison> {
            let shaken: Vec<HostTensor> = shaken.iter().map(pick).collect::<Result<_>>()?;
            let own: Vec<HostTensor> = own.iter().map(pick).collect::<Result<_>>()?;
            comparison(name, &pick(&base)?, &pick(&cand)?, &shaken, &own)
        };
    if cand.gradients.len() != base.gradients.len() {
        return Err(anyhow!(
            "{cand_name} returned {} gradients, {ref_name} {}",
            cand.gradients.len(),
            base.gradients.len()
        ));
    }
    let mut comparisons = Vec::new();
    if trains {
        comparisons.push(compare("output (train)".into(), &|c| {
            c.train_output
                .clone()
                .context("no training output was computed")
        })?);
    }
    for key in base.gradients.iter().map(|(k, _)| k.clone()) {
        let pick = |c: &Computed| -> Result<HostTensor> {
            c.gradients
                .get(&key)
                .cloned()
                .with_context(|| format!("no gradient for \"{key}\""))
        };
        comparisons.push(compare(format!("grad {key}"), &pick)?);
    }
    comparisons.push(compare("output (infer)".into(), &|c| {
        Ok(c.infer_output.clone())
    })?);
    let nodes = if request.localize {
        compare_nodes(graph, &base, &cand, &shaken, &own)?
    } else {
        Vec::new()
    };
    let mut first_departures = Vec::new();
    for (mode, _) in &base.nodes {
        let departs =
            |n: &&NodeComparison| n.mode == *mode && !n.comparison.passes(request.tolerance);
        // Gradients flow from the output back: the first to part is the last in graph order.
        let first = if *mode == GRADIENT_MODE {
            nodes.iter().rev().find(departs)
        } else {
            nodes.iter().find(departs)
        };
        if let Some(first) = first {
            first_departures.push(first.clone());
        }
    }

    let agreement = match &request.images {
        Some(folder) => Some(agreement(
            &context,
            [
                (reference, ref_precision, base.calibration.as_ref()),
                (candidate, cand_precision, cand.calibration.as_ref()),
            ],
            &weights,
            folder,
        )?),
        None => None,
    };

    Ok(VerifyReport {
        model: graph.name().to_string(),
        input: [request.batch_size, c, h, w],
        reference: ref_name,
        reference_precision: ref_precision,
        candidate_precision: cand_precision,
        candidate: cand_name,
        tolerance: request.tolerance,
        weights: source,
        compared,
        comparisons,
        nodes,
        first_departures,
        gradients_not_compared,
        agreement,
    })
}

/// The classes both engines pick for every image of `folder` in inference, a batch at a
/// time, each side with the calibration its compared run used; with an int8 side, over
/// the images after its calibration images (all of them when the folder holds no more).
fn agreement(
    context: &Shared,
    sides: [(&dyn Engine, Precision, Option<&Calibration>); 2],
    weights: &Weights,
    folder: &ImageFolder,
) -> Result<Agreement> {
    let calibrated = DEFAULT_CALIBRATION_IMAGES.min(folder.len());
    let int8 = sides.iter().any(|(_, p, _)| *p == Precision::Int8);
    let first = if int8 && folder.len() > calibrated {
        calibrated
    } else {
        0
    };
    let images = folder.len() - first;
    let batch = context.request.batch_size;
    let mut scores: Vec<Vec<Vec<f32>>> = Vec::new();
    for (engine, precision, calibration) in sides {
        let name = engine.info().name;
        let mut s = session(
            engine,
            precision,
            context.graph,
            Mode::Infer,
            context.request,
            calibration,
        )?;
        s.import_weights(weights)
            .with_context(|| format!("loading the weights into {name}"))?;
        let mut rows = Vec::with_capacity(images);
        let mut start = first;
        while start < folder.len() {
            s.set_input(&folder.batch(start, batch))?;
            s.forward().with_context(|| format!("{name}: forward"))?;
            let output = s.output()?;
            let classes = output.data.len() / batch.max(1);
            for row in output
                .data
                .chunks(classes.max(1))
                .take(folder.len() - start)
            {
                rows.push(row.to_vec());
            }
            start += batch;
        }
        scores.push(rows);
    }
    let (top1, top5) = agreeing(&scores[0], &scores[1]);
    let classes = scores[0].first().map_or(0, Vec::len);
    let left_out = if first > 0 {
        format!(" (the {first} calibration images left out)")
    } else if int8 {
        " (the calibration images among them: give more images to leave them out)".to_string()
    } else {
        String::new()
    };
    Ok(Agreement {
        data: format!("{}{left_out}", folder.describe(images)),
        images,
        top1,
        top5: (classes >= 5).then_some(top5),
    })
}

/// Of images scored by two engines (a row of class scores each): how many candidate rows
/// have the reference's top class first, and how many among their five highest.
fn agreeing(reference: &[Vec<f32>], candidate: &[Vec<f32>]) -> (usize, usize) {
    let (mut top1, mut top5) = (0, 0);
    for (reference, candidate) in reference.iter().zip(candidate) {
        let Some(&class) = highest(reference, 1).first() else {
            continue;
        };
        top1 += usize::from(highest(candidate, 1).first() == Some(&class));
        top5 += usize::from(highest(candidate, 5).contains(&class));
    }
    (top1, top5)
}

/// The indices of the `k` highest scores, highest first (NaN lowest).
fn highest(scores: &[f32], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |i: usize| {
            if scores[i].is_nan() {
                f32::NEG_INFINITY
            } else {
                scores[i]
            }
        };
        key(b).total_cmp(&key(a))
    });
    order.truncate(k);
    order
}

/// An int8 side's ranges, measured on these very weights: on the first of the user's
/// images where given, random images from the seed otherwise.
fn calibration_for(
    context: &Shared,
    precision: Precision,
    weights: &Weights,
    name: &str,
) -> Result<Option<Calibration>> {
    let graph = context.graph;
    match precision {
        Precision::Int8 => {
            let data = match &context.request.images {
                Some(folder) => CalibrationData::Folder {
                    folder,
                    images: DEFAULT_CALIBRATION_IMAGES,
                },
                None => CalibrationData::Random {
                    seed: context.request.seed,
                    images: DEFAULT_CALIBRATION_IMAGES,
                },
            };
            calibrate_on(context.calibrator, graph, weights, data)
                .map(Some)
                .with_context(|| format!("calibrating {} for {name}'s int8", graph.name()))
        }
        Precision::F32
        | Precision::Tf32
        | Precision::F16
        | Precision::Bf16
        | Precision::AmpBf16
        | Precision::AmpF16 => Ok(None),
    }
}

/// Every node's output compared in graph order, per mode, with the noise floor of each.
fn compare_nodes(
    graph: &Graph,
    base: &Computed,
    cand: &Computed,
    shaken: &[Computed],
    own: &[Computed],
) -> Result<Vec<NodeComparison>> {
    let mut out = Vec::new();
    // The reference's training outputs, which mask the gradients compared (below).
    let train_outputs = base
        .nodes
        .iter()
        .find(|(m, _)| *m == Mode::Train.as_str())
        .map(|(_, outputs)| outputs);
    for (i, (mode, reference)) in base.nodes.iter().enumerate() {
        let candidate = cand
            .nodes
            .get(i)
            .filter(|(m, n)| m == mode && n.len() == reference.len())
            .map(|(_, n)| n)
            .ok_or_else(|| {
                anyhow!("the candidate kept other node outputs than the reference in {mode} mode")
            })?;
        for (j, (r, c)) in reference.iter().zip(candidate).enumerate() {
            let shaken_values = shaken
                .iter()
                .filter_map(|s| s.nodes.get(i).and_then(|(_, n)| n.get(j)))
                .map(|n| &n.value);
            let own_values: Vec<HostTensor> = own
                .iter()
                .filter_map(|s| s.nodes.get(i).and_then(|(_, n)| n.get(j)))
                .map(|n| n.value.clone())
                .collect();
            let what = format!("node \"{}\" ({mode})", r.node);
            let op = graph
                .nodes()
                .get(j)
                .map(|n| n.op.tag().to_string())
                .unwrap_or_default();
            // A gradient is compared where the reference's output is not exactly zero:
            // at ReLU's clamped zeros a later max pool's ties let engines route the
            // gradient to any of the tied places, and ReLU's backward discards it there.
            let comparison = match train_outputs
                .and_then(|outputs| outputs.get(j))
                .filter(|_| *mode == GRADIENT_MODE)
            {
                Some(output) => {
                    let keep: Vec<bool> = output.value.data.iter().map(|&v| v != 0.0).collect();
                    let shaken: Vec<HostTensor> = shaken_values.map(|s| masked(s, &keep)).collect();
                    let own: Vec<HostTensor> =
                        own_values.iter().map(|s| masked(s, &keep)).collect();
                    comparison(
                        what,
                        &masked(&r.value, &keep),
                        &masked(&c.value, &keep),
                        &shaken,
                        &own,
                    )?
                }
                None => {
                    let shaken: Vec<HostTensor> = shaken_values.cloned().collect();
                    comparison(what, &r.value, &c.value, &shaken, &own_values)?
                }
            };
            out.push(NodeComparison {
                mode: mode.to_string(),
                node: r.node.clone(),
                op,
                shape: r.value.shape.clone(),
                comparison,
            });
        }
    }
    Ok(out)
}

/// The elements of `tensor` where `keep` is true, as a flat tensor (all of them when the
/// shapes disagree, so that the comparison reports the mismatch).
fn masked(tensor: &HostTensor, keep: &[bool]) -> HostTensor {
    if tensor.data.len() != keep.len() {
        return tensor.clone();
    }
    let data: Vec<f32> = tensor
        .data
        .iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(&v, _)| v)
        .collect();
    HostTensor {
        shape: vec![data.len()],
        data,
    }
}

/// One tensor compared: the candidate's errors against the reference, the noise floor
/// (the largest error of the reference's perturbed runs of the same tensor) and, across
/// precisions, the candidate's own floor (its perturbed runs against itself).
fn comparison(
    name: String,
    reference: &HostTensor,
    candidate: &HostTensor,
    shaken: &[HostTensor],
    own: &[HostTensor],
) -> Result<Comparison> {
    let mut noise_floor = 0.0f64;
    for s in shaken {
        noise_floor = noise_floor.max(max_relative_error(s, reference)?);
    }
    let mut precision_floor = None;
    for s in own {
        let error = max_relative_error(s, candidate)?;
        precision_floor = Some(precision_floor.map_or(error, |f: f64| f.max(error)));
    }
    Ok(Comparison {
        precision_floor,
        cosine_similarity: cosine_similarity(candidate, reference)?,
        max_relative_error: max_relative_error(candidate, reference)
            .with_context(|| format!("comparing {name}"))?,
        relative_l2_error: relative_l2_error(candidate, reference)?,
        reference_scale: reference.max_abs() as f64,
        noise_floor,
        name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_engine::{EngineInfo, ExchangeWeights, NodeProbes};
    use cnnbench_graph::GraphBuilder;
    use std::collections::BTreeMap;

    /// A one-op network `y = scale ⊙ x` computed by hand, with a configurable error in
    /// the candidate's output and gradient.
    struct ScaleEngine {
        name: &'static str,
        output_error: f32,
        grad_error: f32,
    }

    struct ScaleSession {
        output_error: f32,
        grad_error: f32,
        scale: Vec<f32>,
        input: Option<HostTensor>,
        output_grad: Option<HostTensor>,
        grad: Option<Vec<f32>>,
    }

    impl Engine for ScaleEngine {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            cnnbench_engine::Capabilities {
                precisions: vec![Precision::F32, Precision::Bf16],
                ..cnnbench_engine::Capabilities::cpu_f32(None)
            }
        }
        fn info(&self) -> EngineInfo {
            EngineInfo {
                name: self.name.into(),
                framework: "test".into(),
                framework_version: "0".into(),
                backend: "cpu".into(),
                device: "cpu".into(),
                device_name: "test".into(),
                threads: 1,
                libraries: BTreeMap::new(),
                settings: BTreeMap::new(),
                variant: Vec::new(),
            }
        }
        fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
            // In bf16 the scale engine rounds: its output is 2⁻⁸ off, as bf16's would be.
            let rounding = match config.precision {
                Precision::Bf16 => 1.0 / 256.0,
                Precision::F32
                | Precision::Tf32
                | Precision::F16
                | Precision::AmpBf16
                | Precision::AmpF16
                | Precision::Int8 => 0.0,
            };
            Ok(Box::new(ScaleSession {
                output_error: self.output_error + rounding,
                grad_error: self.grad_error,
                scale: vec![0.5; graph.input_shape()[0]],
                input: None,
                output_grad: None,
                grad: None,
            }))
        }
    }

    impl ScaleSession {
        fn channel_of(&self, x: &HostTensor, i: usize) -> usize {
            let per_channel = x.shape[2] * x.shape[3];
            (i / per_channel) % x.shape[1]
        }
    }

    impl Session for ScaleSession {
        fn prepare_batch(&mut self) -> Result<()> {
            Ok(())
        }

        fn forward(&mut self) -> Result<()> {
            Ok(())
        }

        fn prepare_output_grad(&mut self) -> Result<()> {
            Ok(())
        }

        fn backward(&mut self) -> Result<()> {
            let x = self.input.as_ref().context("no input")?;
            let g = self.output_grad.as_ref().context("no grad")?;
            let mut grad = vec![0.0f32; self.scale.len()];
            for (i, (xv, gv)) in x.data.iter().zip(&g.data).enumerate() {
                grad[self.channel_of(x, i)] += xv * gv;
            }
            grad[0] *= 1.0 + self.grad_error;
            self.grad = Some(grad);
            Ok(())
        }

        fn update(&mut self) -> Result<()> {
            Ok(())
        }

        fn sync(&mut self) -> Result<()> {
            Ok(())
        }

        fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
            Some(self)
        }

        fn probes(&mut self) -> Option<&mut dyn NodeProbes> {
            Some(self)
        }
    }

    impl ExchangeWeights for ScaleSession {
        fn export_weights(&self) -> Result<Weights> {
            let mut w = Weights::new();
            w.insert(
                "s.scale",
                HostTensor::new(vec![self.scale.len()], self.scale.clone())?,
            );
            Ok(w)
        }

        fn import_weights(&mut self, weights: &Weights) -> Result<()> {
            self.scale = weights.get("s.scale").context("no scale")?.data.clone();
            Ok(())
        }

        fn set_input(&mut self, input: &HostTensor) -> Result<()> {
            self.input = Some(input.clone());
            Ok(())
        }

        fn output(&self) -> Result<HostTensor> {
            let x = self.input.as_ref().context("no input")?;
            let mut y = x.clone();
            for (i, v) in y.data.iter_mut().enumerate() {
                *v *= self.scale[self.channel_of(x, i)] * (1.0 + self.output_error);
            }
            Ok(y)
        }

        fn set_output_grad(&mut self, grad: &HostTensor) -> Result<()> {
            self.output_grad = Some(grad.clone());
            Ok(())
        }

        fn weight_gradients(&self) -> Result<Weights> {
            let mut w = Weights::new();
            let grad = self.grad.clone().context("no backward")?;
            w.insert("s.scale", HostTensor::new(vec![grad.len()], grad)?);
            Ok(w)
        }
    }

    impl NodeProbes for ScaleSession {
        // Its one node's output is its output; it keeps no node gradients (the
        // default refusal), as an engine that runs in another process may not.
        fn keep_node_outputs(&mut self) -> Result<()> {
            Ok(())
        }

        fn node_outputs(&self) -> Result<Vec<NodeOutput>> {
            Ok(vec![NodeOutput {
                node: "s".into(),
                value: self.output()?,
            }])
        }
    }

    fn graph() -> Graph {
        let mut b = GraphBuilder::new("scale", [3, 4, 4]);
        let x = b.input();
        let y = b.layer_scale("s", &x, 0.5);
        b.finish(&y).unwrap()
    }

    fn run(output_error: f32, grad_error: f32) -> VerifyReport {
        run_in(
            output_error,
            grad_error,
            [Precision::F32; 2],
            DEFAULT_TOLERANCE,
        )
    }

    fn run_in(
        output_error: f32,
        grad_error: f32,
        precisions: [Precision; 2],
        tolerance: f64,
    ) -> VerifyReport {
        let reference = ScaleEngine {
            name: "ref",
            output_error: 0.0,
            grad_error: 0.0,
        };
        let candidate = ScaleEngine {
            name: "cand",
            output_error,
            grad_error,
        };
        let request = VerifyRequest {
            batch_size: 2,
            seed: 3,
            tolerance,
            weights: None,
            localize: false,
            precisions,
            images: None,
        };
        verify(&graph(), &reference, &candidate, &request).unwrap()
    }

    #[test]
    fn a_bf16_candidate_passes_at_bf16s_tolerance_and_fails_at_f32s() {
        let precisions = [Precision::F32, Precision::Bf16];
        let coarse = coarser(precisions[0], precisions[1]);
        assert_eq!(coarse, Precision::Bf16);
        let report = run_in(0.0, 0.0, precisions, tolerance_for(coarse));
        assert!(report.passed(), "{:?}", report.failures());
        assert_eq!(
            (report.reference_precision, report.candidate_precision),
            (Precision::F32, Precision::Bf16)
        );
        let worst = report.worst().unwrap();
        assert!(
            (worst.max_relative_error - 1.0 / 256.0).abs() < 1e-4,
            "{worst:?}"
        );
        // Within f32's tolerance it is not, but bf16's own rounding explains it: the
        // candidate against itself at bf16's resolution moves as much.
        let strict = run_in(0.0, 0.0, precisions, DEFAULT_TOLERANCE);
        assert!(strict.passed(), "{:?}", strict.failures());
        let output = &strict.comparisons[0];
        let own = output
            .precision_floor
            .expect("an own floor across precisions");
        assert!(
            output.max_relative_error > DEFAULT_TOLERANCE
                && output.max_relative_error <= FLOOR_FACTOR * own,
            "{output:?}"
        );
        assert!(output.cosine_similarity > 0.999, "{output:?}");
        // An error far beyond what bf16 explains fails, named.
        let wrong = run_in(1.0, 0.0, precisions, tolerance_for(coarse));
        let failed: Vec<&str> = wrong.failures().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(failed, ["output (train)", "output (infer)"]);
        // Both in f32, the same engines agree exactly.
        assert!(run_in(0.0, 0.0, [Precision::F32; 2], DEFAULT_TOLERANCE).passed());
    }

    /// An engine that keeps its nodes' outputs but cannot show the gradients arriving
    /// at them is still localized: outputs in both modes, and the report says why the
    /// gradients were not compared.
    #[test]
    fn localize_compares_outputs_when_an_engine_cannot_show_node_gradients() {
        let engine = |name| ScaleEngine {
            name,
            output_error: 0.0,
            grad_error: 0.0,
        };
        let request = VerifyRequest {
            batch_size: 2,
            seed: 3,
            tolerance: DEFAULT_TOLERANCE,
            weights: None,
            localize: true,
            precisions: [Precision::F32; 2],
            images: None,
        };
        let report = verify(&graph(), &engine("ref"), &engine("cand"), &request).unwrap();
        assert!(report.passed());
        let modes: Vec<&str> = report.nodes.iter().map(|n| n.mode.as_str()).collect();
        assert_eq!(modes, ["train", "infer"]);
        let why = report.gradients_not_compared.unwrap();
        assert!(
            why.starts_with("ref: this engine cannot show the gradient arriving at each node"),
            "{why}"
        );
    }

    #[test]
    fn agreement_counts_the_reference_class_first_and_among_the_top_five() {
        let reference = vec![
            vec![0.1, 0.9, 0.0, 0.0, 0.0, 0.0],
            vec![0.0, 0.0, 0.0, 0.0, 0.0, 1.0],
            vec![0.5, 0.4, 0.3, 0.2, 0.1, 0.0],
        ];
        let candidate = vec![
            // Agrees.
            vec![0.0, 0.8, 0.1, 0.0, 0.0, 0.0],
            // Class 5 second: top-5, not top-1.
            vec![0.0, 0.0, 0.0, 0.0, 2.0, 1.0],
            // Class 0 last of six (NaN ranks lowest, not first): neither.
            vec![-1.0, 0.4, 0.3, 0.2, 0.1, 0.0],
        ];
        assert_eq!(agreeing(&reference, &candidate), (1, 2));
        assert_eq!(highest(&[0.0, f32::NAN, 1.0], 2), [2, 0]);
    }

    #[test]
    fn identical_engines_pass_with_zero_error() {
        let report = run(0.0, 0.0);
        assert!(report.passed());
        assert_eq!(report.comparisons.len(), 3);
        assert!(report
            .comparisons
            .iter()
            .all(|c| c.max_relative_error == 0.0));
        assert_eq!(report.weights, "random, from ref");
    }

    #[test]
    fn an_output_error_above_tolerance_and_floor_fails() {
        let report = run(1e-3, 0.0);
        assert!(!report.passed());
        let names: Vec<&str> = report.failures().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["output (train)", "output (infer)"]);
        let c = report.failures()[0];
        assert!((c.max_relative_error - 1e-3).abs() < 1e-5, "{c:?}");
        // The floor of a linear network is the perturbation itself, far below 1e-3.
        assert!(c.noise_floor < 1e-5, "{c:?}");
    }

    #[test]
    fn a_gradient_error_fails_and_is_named() {
        let report = run(0.0, 1e-2);
        let names: Vec<&str> = report.failures().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["grad s.scale"]);
    }

    #[test]
    fn rounding_sized_errors_pass() {
        assert!(run(2e-7, 2e-7).passed());
    }

    #[test]
    fn given_weights_are_checked_against_the_graph() {
        let engine = ScaleEngine {
            name: "ref",
            output_error: 0.0,
            grad_error: 0.0,
        };
        let mut weights = Weights::new();
        weights.insert("s.scale", HostTensor::new(vec![2], vec![1.0, 2.0]).unwrap());
        let request = VerifyRequest {
            batch_size: 1,
            seed: 0,
            tolerance: DEFAULT_TOLERANCE,
            weights: Some(weights),
            localize: false,
            precisions: [Precision::F32; 2],
            images: None,
        };
        let e = verify(&graph(), &engine, &engine, &request)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"s.scale\" has shape [2]"), "{e}");
    }
}
