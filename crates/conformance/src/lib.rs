//! One conformance suite for every engine, in the spirit of burn's `testgen_all!`: an
//! engine crate calls [`engine_conformance!`] once and gets a test per check.
//!
//! - **Gradients**: on a small graph per op of the IR, every trainable weight's
//!   gradient against central finite differences (engines that train).
//! - **Against a reference**: the same op graphs and a few zoo models through
//!   `cnnbench verify`'s machinery (same weights, input and upstream gradient; outputs
//!   and gradients compared with the measured noise floor).
//! - **Behaviour**: batch norm uses batch statistics in training and running ones in
//!   inference and updates the running ones as PyTorch does; dropout is live only in
//!   training and never in a deterministic session.
//! - **Refusals**: an empty batch, a step on a network without class scores, and every
//!   mode and precision outside the engine's [`Capabilities`].
//!
//! Every check reads the engine's capabilities: an inference-only engine runs the
//! forward half and the suite says what it skipped.

pub mod cases;

use anyhow::{anyhow, bail, Context, Result};
use cnnbench_bench::verify::{verify, VerifyRequest, DEFAULT_TOLERANCE};
use cnnbench_engine::{Capabilities, Engine, Mode, Precision, Session, SessionConfig};
use cnnbench_graph::{Graph, GraphBuilder, HostTensor, Weights};

pub use cases::{model_cases, op_cases, Case};

/// Images per batch in the op checks: more than one, so batch statistics are real.
const BATCH: usize = 3;

fn config(mode: Mode, batch_size: usize, deterministic: bool) -> SessionConfig {
    SessionConfig {
        mode,
        batch_size,
        seed: 7,
        precision: Precision::F32,
        deterministic,
        calibration: None,
    }
}

fn session(engine: &dyn Engine, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
    engine
        .prepare(graph, config)
        .with_context(|| format!("{} cannot prepare {}", engine.info().name, graph.name()))
}

/// Σ output ⊙ weights, in f64.
fn dot(a: &HostTensor, b: &HostTensor) -> f64 {
    a.data
        .iter()
        .zip(&b.data)
        .map(|(x, y)| *x as f64 * *y as f64)
        .sum()
}

/// The seed of the weights every check draws itself: an engine's own initial weights
/// may come from a generator shared by the whole process (burn's is), so they would
/// depend on which tests ran beside this one, and how far each had got.
const WEIGHT_SEED: u64 = 7;

/// The steps at which an element's finite differences are taken, smallest first: the
/// smallest holds the fewest kinks, the larger ones rise above the forward pass's
/// rounding where the smallest drowns in it.
const GRADIENT_STEPS: [f32; 4] = [2e-4, 1e-3, 5e-3, 2e-2];

/// Whether two slopes (or a slope and a gradient) agree: 2e-2 absolute plus 3 % of the
/// larger.
fn within_gradient_tolerance(a: f64, b: f64) -> bool {
    (a - b).abs() <= gradient_tolerance(a, b)
}

fn gradient_tolerance(a: f64, b: f64) -> f64 {
    2e-2 + 3e-2 * a.abs().max(b.abs())
}

/// The one-sided slopes of the loss around one element, at a step and at half of it.
#[derive(Debug)]
struct Slope {
    forward: f64,
    forward_half: f64,
    backward: f64,
    backward_half: f64,
}

/// What the slopes around an element say about its gradient.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// Each side is straight and the two agree: their mean, the central difference, is
    /// the gradient.
    Smooth(f64),
    /// Each side is straight but they disagree: a kink lies nearer than the step, and
    /// a larger step would hold it too. Carries the disagreement in tolerances.
    KinkNearer(f64),
    /// A side bends within the step (a kink inside it, the loss's curvature, or the
    /// forward pass's rounding divided by a small step): another step may settle it.
    /// Carries the worst disagreement in tolerances.
    Unsettled(f64),
}

impl Slope {
    fn verdict(&self) -> Verdict {
        let slopes = [
            self.forward,
            self.forward_half,
            self.backward,
            self.backward_half,
        ];
        if slopes.iter().any(|s| !s.is_finite()) {
            return Verdict::Unsettled(f64::INFINITY);
        }
        let gap = |a: f64, b: f64| (a - b).abs() / gradient_tolerance(a, b);
        let across = gap(self.forward, self.backward);
        let bend = gap(self.forward, self.forward_half).max(gap(self.backward, self.backward_half));
        if bend > 1.0 {
            Verdict::Unsettled(across.max(bend))
        } else if across > 1.0 {
            Verdict::KinkNearer(across)
        } else {
            Verdict::Smooth((self.forward + self.backward) / 2.0)
        }
    }
}

/// Takes the slopes of the loss around one element (`slope(step)` is the one-sided
/// difference at `step`, negative steps on the left) at each of [`GRADIENT_STEPS`]
/// until they settle: the central difference where they say the element lies away
/// from any kink, `None` where they do not; and the widest disagreement seen, in
/// tolerances, for the message when no element settles.
fn settle_slope(slope: &mut impl FnMut(f32) -> Result<f64>) -> Result<(Option<f64>, f64)> {
    let mut widest_gap = 0.0f64;
    for step in GRADIENT_STEPS {
        let judged = Slope {
            forward: slope(step)?,
            forward_half: slope(step / 2.0)?,
            backward: slope(-step)?,
            backward_half: slope(-step / 2.0)?,
        };
        match judged.verdict() {
            Verdict::Smooth(mean) => return Ok((Some(mean), widest_gap)),
            Verdict::KinkNearer(gap) => return Ok((None, widest_gap.max(gap))),
            Verdict::Unsettled(gap) => widest_gap = widest_gap.max(gap),
        }
    }
    Ok((None, widest_gap))
}

/// Checks every trainable weight's gradient of one graph against central finite
/// differences of `Σ output ⊙ R` (R a fixed random upstream gradient), at a few
/// elements of each weight. Names the graph, weight and element that disagree.
pub fn check_gradients(engine: &dyn Engine, graph: &Graph) -> Result<()> {
    check_gradients_seeded(engine, graph, WEIGHT_SEED)
}

/// [`check_gradients`] at the weights drawn from `seed`: a sweep over seeds measures
/// how often the check itself misjudges a correct engine.
pub fn check_gradients_seeded(engine: &dyn Engine, graph: &Graph, seed: u64) -> Result<()> {
    let name = graph.name();
    let mut s = session(engine, graph, &config(Mode::Train, BATCH, true))?;
    let weights = Weights::initial(graph, seed);
    s.import_weights(&weights)?;
    let [c, h, w] = graph.input_shape();
    let input = HostTensor::standard_normal(vec![BATCH, c, h, w], 3);
    s.set_input(&input)?;
    s.forward()?;
    let upstream = HostTensor::standard_normal(s.output()?.shape, 99);
    s.set_output_grad(&upstream)?;
    s.backward()?;
    let grads = s.weight_gradients()?;
    let mut loss = |w: &Weights| -> Result<f64> {
        s.import_weights(w)?;
        s.set_input(&input)?;
        s.forward()?;
        Ok(dot(&s.output()?, &upstream))
    };
    // Where a kink (ReLU, max pooling, hardswish's corners) lies within a step of an
    // element, its finite differences say nothing about its gradient, and a bias moves
    // every position of its channel, so some position often lies near one. The slope on
    // each side is taken at the step and at half of it (see [`Slope`]); where both sides
    // are straight and agree, their mean is compared with the engine's gradient; where
    // both are straight but disagree, a kink lies nearer than the step and the element
    // is given up; otherwise a larger step is tried (the f32 forward pass's rounding,
    // divided by a small step, looks bent too). Judged on the one-sided differences
    // alone, two kinks whose errors cancel across the sides passed as smooth: at 1 to 5
    // in 1,000 random weight draws per op, the check failed a correct engine.
    let base = loss(&weights)?;
    for (key, grad) in grads.iter() {
        let n = grad.data.len();
        let (mut smooth, mut tried) = (0, 0);
        let mut widest_gap = 0.0f64;
        while smooth < 3.min(n) && tried < 12.min(n) {
            let i = (tried * 104_729 + 5) % n;
            tried += 1;
            let mut slope = |step: f32| -> Result<f64> {
                let mut moved = weights.clone();
                let mut t = weights.get(key).context("weight vanished")?.clone();
                t.data[i] += step;
                moved.insert(key.clone(), t);
                Ok((loss(&moved)? - base) / step as f64)
            };
            let (central, gap) = settle_slope(&mut slope)?;
            widest_gap = widest_gap.max(gap);
            let Some(numeric) = central else {
                continue;
            };
            smooth += 1;
            let analytic = grad.data[i] as f64;
            if !within_gradient_tolerance(analytic, numeric) || !analytic.is_finite() {
                bail!(
                    "{name}: d/d{key}[{i}]: the engine's gradient is {analytic:.5}, finite differences give {numeric:.5}"
                );
            }
        }
        if smooth == 0 {
            bail!("{name}: {key}: no element of {tried} tried lies away from a kink (the one-sided differences disagreed by up to {widest_gap:.1}× their tolerance); the check cannot judge it");
        }
    }
    Ok(())
}

/// `verify` of `graph` with `candidate` against `reference`; the error lists the
/// tensors that differ, worst first.
pub fn check_against(
    candidate: &dyn Engine,
    reference: &dyn Engine,
    graph: &Graph,
    batch: usize,
) -> Result<()> {
    check_seeded(candidate, reference, graph, batch, 0)
}

/// [`check_against`] with weights and inputs drawn from `seed`.
fn check_seeded(
    candidate: &dyn Engine,
    reference: &dyn Engine,
    graph: &Graph,
    batch: usize,
    seed: u64,
) -> Result<()> {
    let request = VerifyRequest {
        batch_size: batch,
        seed,
        tolerance: DEFAULT_TOLERANCE,
        weights: Some(Weights::initial(graph, WEIGHT_SEED ^ seed)),
        localize: false,
        precisions: [cnnbench_engine::Precision::F32; 2],
        images: None,
    };
    let report = verify(graph, reference, candidate, &request)?;
    let failures: Vec<String> = report
        .failures()
        .iter()
        .take(4)
        .map(|c| {
            format!(
                "{} off by {:.2e} (noise floor {:.2e})",
                c.name, c.max_relative_error, c.noise_floor
            )
        })
        .collect();
    if !failures.is_empty() {
        bail!(
            "{} differs from {} on {} at {:?}: {}",
            report.candidate,
            report.reference,
            graph.name(),
            report.input,
            failures.join("; ")
        );
    }
    Ok(())
}

/// Runs `check` on every case and gathers the failures, each naming its op graph and
/// the ops it exercises.
fn over_cases(cases: &[Case], check: impl Fn(&Graph) -> Result<()>) -> Result<()> {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            check(&case.graph)
                .err()
                .map(|e| format!("op {} ({}): {e:#}", case.graph.name(), case.ops.join(", ")))
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow!("{}", failures.join("\n")))
    }
}

/// Finite-difference gradients of every op (skipped, with `Ok`, for an engine that
/// cannot train).
pub fn op_gradients(engine: &dyn Engine) -> Result<()> {
    if !engine.capabilities().trains() {
        return Ok(());
    }
    over_cases(&op_cases(), |g| check_gradients(engine, g))
}

/// Every op graph against the reference engine.
pub fn ops_against(engine: &dyn Engine, reference: &dyn Engine) -> Result<()> {
    over_cases(&op_cases(), |g| check_against(engine, reference, g, BATCH))
}

/// The zoo models of [`model_cases`] against the reference engine, at batch 4 (so batch
/// statistics never come from one or two values).
pub fn models_against(engine: &dyn Engine, reference: &dyn Engine) -> Result<()> {
    for graph in model_cases() {
        check_against(engine, reference, &graph, 4)?;
    }
    Ok(())
}

/// Zoo models and the smallest square image each is checked at by
/// [`small_zoo_models_against`]: the families an inference engine on the ONNX path
/// meets (residual, inverted-residual with squeeze-and-excitation, ConvNeXt's layer
/// norm, channel shuffle, Inception's branches), and AlexNet at 64×64, whose 1×1 map
/// pooled to 6×6 takes the ONNX exporter's averaging MatMuls. EfficientNet-B0 and
/// ShuffleNet run at 64×64: at 32×32 their last batch norms see 1×1 maps, two values per
/// channel at batch 2, whose gradients are so ill-conditioned that the reference's own
/// noise floor reached 1e3 (relative) and summation order alone decided the verdict (on
/// an AVX2 CPU the pytorch engine's gradients were 12× that floor).
pub const SMALL_ZOO_MODELS: [(&str, usize); 7] = [
    ("resnet18", 32),
    ("mobilenet-v3-large", 32),
    ("efficientnet-b0", 64),
    ("convnext-tiny", 32),
    ("shufflenet-v2-x1.0", 64),
    ("inception-v1", 64),
    ("alexnet", 64),
];

/// The [`SMALL_ZOO_MODELS`] against the reference engine at batch 2, as `cnnbench
/// verify` runs them; the error names every model that differs.
pub fn small_zoo_models_against(engine: &dyn Engine, reference: &dyn Engine) -> Result<()> {
    let failures: Vec<String> = SMALL_ZOO_MODELS
        .iter()
        .filter_map(|&(name, size)| {
            cnnbench_zoo::build(name, Some([3, size, size]))
                .map_err(|e| anyhow!("{name} at {size}×{size}: {e}"))
                .and_then(|graph| check_seeded(engine, reference, &graph, 2, 3))
                .err()
                .map(|e| format!("{e:#}"))
        })
        .collect();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(anyhow!("{}", failures.join("\n")))
    }
}

/// A network of one batch norm (its scale and shift are the weights that train).
fn batch_norm_graph() -> Graph {
    let mut b = GraphBuilder::new("batch-norm behaviour", [2, 3, 3]);
    let x = b.input();
    let y = b.batch_norm("bn", &x);
    b.finish(&y).expect("a valid graph")
}

fn dropout_graph() -> Graph {
    let mut b = GraphBuilder::new("dropout behaviour", [4, 8, 8]);
    let x = b.input();
    let y = b.batch_norm("bn", &x);
    let y = b.dropout("drop", &y, 0.5);
    b.finish(&y).expect("a valid graph")
}

/// Per-channel mean and unbiased variance of an `[N, C, H, W]` tensor.
fn channel_stats(t: &HostTensor) -> Vec<(f64, f64)> {
    let (n, c, hw) = (t.shape[0], t.shape[1], t.shape[2] * t.shape[3]);
    (0..c)
        .map(|ch| {
            let values: Vec<f64> = (0..n)
                .flat_map(|i| {
                    let start = (i * c + ch) * hw;
                    t.data[start..start + hw].iter().map(|v| *v as f64)
                })
                .collect();
            let m = values.len() as f64;
            let mean = values.iter().sum::<f64>() / m;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (m - 1.0);
            (mean, var)
        })
        .collect()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Batch norm: batch statistics in training (each channel of the output has mean 0 and
/// variance 1), running ones in inference (a fresh layer divides by √(1 + eps)), and the
/// running statistics move by PyTorch's rule: `(1 − m)·old + m·batch`, the variance
/// unbiased.
pub fn batch_norm_behaviour(engine: &dyn Engine) -> Result<()> {
    let graph = batch_norm_graph();
    let input = HostTensor::standard_normal(vec![4, 2, 3, 3], 5);
    let shifted = HostTensor::new(
        input.shape.clone(),
        input.data.iter().map(|v| v * 2.0 + 1.5).collect(),
    )?;
    let mut infer = session(engine, &graph, &config(Mode::Infer, 4, true))?;
    infer.set_input(&shifted)?;
    infer.forward()?;
    let out = infer.output()?;
    let scale = 1.0 / (1.0f64 + 1e-5).sqrt();
    for (o, x) in out.data.iter().zip(&shifted.data) {
        if !close(*o as f64, *x as f64 * scale, 1e-5) {
            bail!("batch norm in inference must use the running statistics (mean 0, variance 1 when fresh): {x} became {o}, expected {}", *x as f64 * scale);
        }
    }
    if !engine.capabilities().trains() {
        return Ok(());
    }
    let mut train = session(engine, &graph, &config(Mode::Train, 4, true))?;
    train.set_input(&shifted)?;
    train.forward()?;
    for (ch, (mean, var)) in channel_stats(&train.output()?).into_iter().enumerate() {
        // Normalised with the biased variance: the unbiased one of the output is n/(n−1).
        let n = 4.0 * 9.0;
        if !close(mean, 0.0, 1e-4) || !close(var, n / (n - 1.0), 1e-3) {
            bail!("batch norm in training must normalise with batch statistics: channel {ch} came out with mean {mean:.4} and variance {var:.4}");
        }
    }
    let weights = train.export_weights()?;
    let stats = channel_stats(&shifted);
    for (ch, (mean, var)) in stats.into_iter().enumerate() {
        let running_mean = weights
            .get("bn.running_mean")
            .context("no running mean")?
            .data[ch];
        let running_var = weights
            .get("bn.running_var")
            .context("no running variance")?
            .data[ch];
        let (want_mean, want_var) = (0.1 * mean, 0.9 + 0.1 * var);
        if !close(running_mean as f64, want_mean, 1e-4)
            || !close(running_var as f64, want_var, 1e-4)
        {
            bail!(
                "batch norm's running statistics after one training pass (momentum 0.1): channel {ch} has mean {running_mean:.5} and variance {running_var:.5}, PyTorch has {want_mean:.5} and {want_var:.5} (unbiased batch variance)"
            );
        }
    }
    Ok(())
}

/// Dropout: the identity in inference and in deterministic training; in training it
/// zeroes about half of the elements at p = 0.5 and doubles the rest.
pub fn dropout_behaviour(engine: &dyn Engine) -> Result<()> {
    let graph = dropout_graph();
    let input = HostTensor::standard_normal(vec![2, 4, 8, 8], 11);
    let run = |mode: Mode, deterministic: bool| -> Result<(HostTensor, HostTensor)> {
        let mut s = session(engine, &graph, &config(mode, 2, deterministic))?;
        s.set_input(&input)?;
        s.forward()?;
        let out = s.output()?;
        // The same network without dropout's effect: inference mode's batch norm
        // differs, so compare with a deterministic session of the same mode.
        let mut reference = session(engine, &graph, &config(mode, 2, true))?;
        reference.import_weights(&s.export_weights()?)?;
        reference.set_input(&input)?;
        reference.forward()?;
        Ok((out, reference.output()?))
    };
    let (out, plain) = run(Mode::Infer, false)?;
    if out != plain {
        bail!("dropout must be the identity in inference");
    }
    if !engine.capabilities().trains() {
        return Ok(());
    }
    let (out, plain) = run(Mode::Train, false)?;
    let mut zeros = 0usize;
    for (o, p) in out.data.iter().zip(&plain.data) {
        if *o == 0.0 {
            zeros += 1;
        } else if !close(*o as f64, 2.0 * *p as f64, 1e-4) {
            bail!("dropout at p = 0.5 must double the elements it keeps: {p} became {o}");
        }
    }
    let share = zeros as f64 / out.data.len() as f64;
    if !(0.4..=0.6).contains(&share) {
        bail!(
            "dropout at p = 0.5 zeroed {:.0}% of 512 elements",
            share * 100.0
        );
    }
    let mut deterministic = session(engine, &graph, &config(Mode::Train, 2, true))?;
    deterministic.set_input(&input)?;
    deterministic.forward()?;
    if deterministic
        .output()?
        .data
        .iter()
        .filter(|v| **v == 0.0)
        .count()
        > 0
    {
        bail!("dropout must be the identity in a deterministic session (cnnbench verify)");
    }
    Ok(())
}

/// Settings the engine cannot honour are refused when the session is prepared, with a
/// message that says what is wrong.
pub fn refusals(engine: &dyn Engine) -> Result<()> {
    let name = engine.info().name;
    let caps: Capabilities = engine.capabilities();
    let graph = batch_norm_graph();
    let expect_refusal = |config: SessionConfig, graph: &Graph, says: &str| -> Result<()> {
        match engine.prepare(graph, &config) {
            Ok(_) => bail!(
                "{name} accepted {:?} mode at batch {} in {:?} on {}",
                config.mode,
                config.batch_size,
                config.precision,
                graph.name()
            ),
            Err(e) if e.to_string().contains(says) => Ok(()),
            Err(e) => bail!("{name}'s refusal does not say \"{says}\": {e}"),
        }
    };
    let first_mode = caps.modes.first().copied().unwrap_or(Mode::Infer);
    expect_refusal(config(first_mode, 0, false), &graph, "batch size")?;
    if caps.modes.contains(&Mode::Step) {
        expect_refusal(config(Mode::Step, 2, false), &graph, "class scores")?;
    }
    for mode in [Mode::Train, Mode::Infer, Mode::Step] {
        if !caps.modes.contains(&mode) {
            expect_refusal(config(mode, 2, false), &graph, mode.as_str())?;
        }
    }
    for precision in Precision::ALL {
        if !caps.precisions.contains(&precision) {
            let mut c = config(first_mode, 2, false);
            c.precision = precision;
            expect_refusal(c, &graph, precision.as_str())?;
        }
    }
    Ok(())
}

/// The zoo models an int8 engine is checked on, at 32×32: residual blocks with batch
/// norms (folded) and ReLUs (absorbed), ReLU6 and depthwise convolutions, SiLU and
/// squeeze-and-excitation gates (left in f32 between int8 layers).
pub const INT8_MODELS: [&str; 3] = ["resnet18", "mobilenet_v2", "efficientnet_b0"];

/// An int8 engine's answer against the f32 reference's on the same weights and input,
/// with ranges calibrated on the reference (as `run --precision int8` does): within
/// `verify`'s int8 tolerance of the output's largest magnitude, and pointing the same
/// way (cosine similarity at least [`INT8_MIN_COSINE`]). Returns, per model, the kernels
/// the engine reported choosing.
pub fn int8_against(
    engine: &dyn Engine,
    reference: &dyn Engine,
) -> Result<Vec<(String, cnnbench_engine::ChosenKernels)>> {
    let mut chosen = Vec::new();
    for name in INT8_MODELS {
        let graph = cnnbench_zoo::build(name, Some([3, 32, 32]))?;
        let weights = Weights::initial(&graph, 3);
        let calibration = cnnbench_bench::quantize::calibrate(reference, &graph, &weights, 5, 4)?;
        let mut inputs =
            cnnbench_engine::kit::InputBatches::new(&graph, &config(Mode::Infer, 2, true));
        let input = inputs.next_input();
        let output = |engine: &dyn Engine,
                      precision: Precision|
         -> Result<(HostTensor, cnnbench_engine::ChosenKernels)> {
            let config = SessionConfig {
                precision,
                calibration: Some(calibration.int8.clone()),
                ..config(Mode::Infer, 2, true)
            };
            let mut s = session(engine, &graph, &config)?;
            s.import_weights(&weights)?;
            s.set_input(&input)?;
            s.forward()?;
            s.sync()?;
            Ok((s.output()?, s.kernels_chosen()?))
        };
        let (expected, _) = output(reference, Precision::F32)?;
        let (got, kernels) = output(engine, Precision::Int8)?;
        let error = cnnbench_graph::max_relative_error(&got, &expected)?;
        let cosine = cnnbench_graph::cosine_similarity(&got, &expected)?;
        let tolerance = cnnbench_bench::verify::tolerance_for(Precision::Int8);
        if error > tolerance || cosine < INT8_MIN_COSINE {
            bail!(
                "{name} in int8 on {}: {error:.2e} off the f32 reference (tolerance {tolerance:.0e}), cosine {cosine:.5} (at least {INT8_MIN_COSINE})",
                engine.info().name
            );
        }
        chosen.push((name.to_string(), kernels));
    }
    Ok(chosen)
}

/// The least cosine similarity of an int8 output to the f32 one the conformance check
/// accepts (TorchBench's int8 check asks 0.99).
pub const INT8_MIN_COSINE: f64 = 0.99;

/// Generates the suite's tests for an engine: `engine` is an expression giving a
/// `Box<dyn Engine>` (or anything that derefs to `dyn Engine`); `reference`, one giving
/// `Option<Box<dyn Engine>>` to compare against (`None` skips those checks).
#[macro_export]
macro_rules! engine_conformance {
    (engine: $engine:expr, reference: $reference:expr $(,)?) => {
        #[test]
        fn conformance_op_gradients() {
            let engine = $engine;
            if let Err(e) = $crate::op_gradients(&*engine) {
                panic!("{e:#}");
            }
        }

        #[test]
        fn conformance_ops_against_reference() {
            let engine = $engine;
            if let Some(reference) = $reference {
                if let Err(e) = $crate::ops_against(&*engine, &*reference) {
                    panic!("{e:#}");
                }
            }
        }

        #[test]
        fn conformance_models_against_reference() {
            let engine = $engine;
            if let Some(reference) = $reference {
                if let Err(e) = $crate::models_against(&*engine, &*reference) {
                    panic!("{e:#}");
                }
            }
        }

        #[test]
        fn conformance_batch_norm_behaviour() {
            if let Err(e) = $crate::batch_norm_behaviour(&*$engine) {
                panic!("{e:#}");
            }
        }

        #[test]
        fn conformance_dropout_behaviour() {
            if let Err(e) = $crate::dropout_behaviour(&*$engine) {
                panic!("{e:#}");
            }
        }

        #[test]
        fn conformance_refusals() {
            if let Err(e) = $crate::refusals(&*$engine) {
                panic!("{e:#}");
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loss near one element: a line and a parabola plus kinks `(at, change of slope)`,
    /// as ReLUs and hardswish's corners put into the real loss.
    fn kinked(slope: f64, curvature: f64, kinks: &[(f64, f64)]) -> impl Fn(f64) -> f64 + '_ {
        move |t| {
            slope * t
                + curvature * t * t
                + kinks
                    .iter()
                    .map(|(at, change)| change * (t - at).max(0.0))
                    .sum::<f64>()
        }
    }

    /// Settles the slope of `loss` at 0 as the check does, the steps up to `drowned`
    /// lost in rounding (their evaluations off by up to 1e-2, as a small step divides
    /// the f32 forward pass's rounding into a slope).
    fn settle_on(
        loss: impl Fn(f64) -> f64,
        drowned: f64,
        rng: &mut cnnbench_graph::SplitMix64,
    ) -> Option<f64> {
        let base = loss(0.0);
        let mut slope = |step: f32| {
            let t = step as f64;
            let rounding = if t.abs() <= drowned {
                1e-2 * (2.0 * rng.next_f64() - 1.0)
            } else {
                0.0
            };
            Ok((loss(t) + rounding - base) / t)
        };
        settle_slope(&mut slope)
            .expect("a closed-form loss cannot fail")
            .0
    }

    #[test]
    fn a_settled_slope_is_the_gradient_wherever_kinks_and_rounding_lie() {
        // The slope at the element: each kink to its left has changed it.
        let at_zero = |kinks: &[(f64, f64)]| -> f64 {
            kinks
                .iter()
                .filter(|(at, _)| *at < 0.0)
                .map(|(_, c)| c)
                .sum()
        };
        // Random losses with as many kinks as a bias's channel puts near its element
        // (hardswish: ~30 per unit of the bias) and the curvature the op cases show.
        // Where no step is drowned in rounding, whatever settles is the derivative and
        // every loss without a kink within the largest step settles. Where the small
        // steps are drowned, the larger ones that remain hold kinks, and two whose
        // errors cancel across the sides can pass for smooth when they lie far nearer
        // the element than the step: under 1 % of what settles (judged on the one-sided
        // differences alone, such kinks failed a correct engine's hardswish).
        let mut rng = cnnbench_graph::SplitMix64::new(5);
        let largest = GRADIENT_STEPS[GRADIENT_STEPS.len() - 1] as f64;
        for drowned in [0.0, 3e-4, 1.5e-3] {
            let (mut settled, mut wrong, mut clear, mut clear_settled) = (0, 0, 0, 0);
            for _ in 0..10_000 {
                let mut uniform = |lo: f64, hi: f64| lo + (hi - lo) * rng.next_f64();
                let slope = uniform(-5.0, 5.0);
                let curvature = uniform(-5.0, 5.0);
                let count = uniform(0.0, 7.0) as usize;
                let kinks: Vec<(f64, f64)> = (0..count)
                    .map(|_| (uniform(-0.1, 0.1), uniform(-2.0, 2.0)))
                    .collect();
                let truth = slope + at_zero(&kinks);
                let estimate = settle_on(kinked(slope, curvature, &kinks), drowned, &mut rng);
                if let Some(estimate) = estimate {
                    settled += 1;
                    if !within_gradient_tolerance(estimate, truth) {
                        wrong += 1;
                        assert!(
                            drowned > 0.0,
                            "slope {slope}, curvature {curvature}, kinks {kinks:?}: settled at {estimate}, the derivative is {truth}"
                        );
                    }
                }
                if kinks.iter().all(|(at, _)| at.abs() > largest) {
                    clear += 1;
                    clear_settled += estimate.is_some() as usize;
                }
            }
            // Where rounding drowns the small steps, curvature at a larger one can pass
            // for a kink at the element (the sides lie 2·c·h apart): the element is
            // given up, never misjudged.
            let given_up = clear - clear_settled;
            assert!(
                given_up * 10 <= clear && (drowned > 0.0 || given_up == 0),
                "steps up to {drowned} drowned: {given_up} of {clear} losses without a kink near the element did not settle"
            );
            assert!(
                settled > 4_000,
                "steps up to {drowned} drowned: only {settled} of 10,000 losses settled"
            );
            assert!(
                wrong * 100 < settled,
                "steps up to {drowned} drowned: {wrong} of {settled} settled slopes are not the derivative"
            );
        }
    }

    #[test]
    fn slopes_that_bend_try_a_larger_step_and_straight_sides_that_disagree_give_up() {
        let straight = Slope {
            forward: 1.0,
            forward_half: 1.0,
            backward: 1.0,
            backward_half: 1.0,
        };
        assert_eq!(straight.verdict(), Verdict::Smooth(1.0));
        // A kink at the element itself: each side straight, the sides 0.09 apart.
        let kink = Slope {
            forward: -0.667,
            forward_half: -0.666,
            backward: -0.574,
            backward_half: -0.574,
        };
        assert!(
            matches!(kink.verdict(), Verdict::KinkNearer(_)),
            "{:?}",
            kink.verdict()
        );
        // Rounding at a small step: a side bends.
        let noisy = Slope {
            forward: 1.0,
            forward_half: 1.2,
            backward: 1.0,
            backward_half: 1.0,
        };
        assert!(matches!(noisy.verdict(), Verdict::Unsettled(_)));
        let nan = Slope {
            forward: f64::NAN,
            forward_half: 1.0,
            backward: 1.0,
            backward_half: 1.0,
        };
        assert!(matches!(nan.verdict(), Verdict::Unsettled(_)));
    }

    #[test]
    fn the_op_cases_cover_every_op_of_the_ir() {
        let cases = op_cases();
        for tag in cnnbench_graph::ops::OP_TAGS {
            let covered = cases
                .iter()
                .any(|c| c.ops.contains(tag) && c.graph.nodes().iter().any(|n| n.op.tag() == *tag));
            assert!(covered, "no conformance case exercises the op \"{tag}\"");
        }
    }
}
