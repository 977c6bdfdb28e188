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

/// Checks every trainable weight's gradient of one graph against central finite
/// differences of `Σ output ⊙ R` (R a fixed random upstream gradient), at a few
/// elements of each weight. Names the graph, weight and element that disagree.
pub fn check_gradients(engine: &dyn Engine, graph: &Graph) -> Result<()> {
    let name = graph.name();
    let mut s = session(engine, graph, &config(Mode::Train, BATCH, true))?;
    let weights = s.export_weights()?;
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
    // One-sided differences on both sides of each element: where they disagree, a kink
    // (ReLU, max pooling, ReLU6) lies within the step and the element says nothing about
    // the gradient, so another is tried; where they agree, their mean (the central
    // difference) is compared with the engine's gradient. Where they disagree at the
    // small step, a step four times larger is tried before the element is given up: the
    // f32 forward pass's rounding, divided by the step, can look like a kink on its own
    // (a layer norm's bias failed so about once in twenty runs, as the summation order of
    // a parallel reduction changed), while a real kink stays within the larger step too.
    let base = loss(&weights)?;
    let tolerance = |a: f64, b: f64| 2e-2 + 3e-2 * a.abs().max(b.abs());
    for (key, grad) in grads.iter() {
        let n = grad.data.len();
        let (mut smooth, mut tried) = (0, 0);
        let mut widest_gap = 0.0f64;
        while smooth < 3.min(n) && tried < 12.min(n) {
            let i = (tried * 104_729 + 5) % n;
            tried += 1;
            let mut at = |delta: f32| -> Result<f64> {
                let mut moved = weights.clone();
                let mut t = weights.get(key).context("weight vanished")?.clone();
                t.data[i] += delta;
                moved.insert(key.clone(), t);
                loss(&moved)
            };
            let mut central = None;
            for step in [5e-3f32, 2e-2] {
                let forward = (at(step)? - base) / step as f64;
                let backward = (base - at(-step)?) / step as f64;
                let gap = (forward - backward).abs() / tolerance(forward, backward);
                if gap <= 1.0 {
                    central = Some((forward + backward) / 2.0);
                    break;
                }
                widest_gap = widest_gap.max(gap);
            }
            let Some(numeric) = central else {
                continue;
            };
            smooth += 1;
            let analytic = grad.data[i] as f64;
            if (analytic - numeric).abs() > tolerance(analytic, numeric) || !analytic.is_finite() {
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
        weights: None,
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
