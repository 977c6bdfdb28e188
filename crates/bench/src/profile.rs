//! `cnnbench profile`: where one run's time goes, node by node.
//!
//! Each node is benchmarked alone, through the public [`Engine`] API, on its own input
//! shapes: a one-op Graph is built around it, timed with the harness's pass (inputs made
//! untimed, a sync around each timed phase), and what had to be built around it is timed
//! on its own and subtracted. So every engine is profiled the same way, GPUs included,
//! and no nested timer distorts the end-to-end number, which the harness measures in the
//! same run on the whole network.
//!
//! The construction around a node ("feeders") gives each input the shape and the
//! gradient it has inside the network:
//! - an input that is the network's image input is fed directly (no gradient, as in
//!   the network: a first convolution computes only its weights' gradient);
//! - any other input is the output of a per-channel scale (`LayerScale`, one weight
//!   per channel), so that it needs a gradient as it does inside the network; a
//!   narrower input is first sliced from the image, a `C×1×1` gate is first pooled
//!   from it, and a flat vector is flattened after the scale.
//!
//! Each distinct feeder is timed alone (its own input is the image, so its backward
//! computes only its scale's gradient, as inside the node's graph) and its median is
//! subtracted from every pass of the node's graph. Nodes with the same op and input
//! shapes are benchmarked once and the figure is attributed to each.

use crate::harness::{self, one_pass, RunRequest};
use anyhow::{anyhow, Context, Result};
use chrono::Utc;
use cnnbench_engine::{Engine, Mode, Phase, Precision, SessionConfig};
use cnnbench_graph::ops::{AdaptiveAvgPool2d, LayerScale, NoParams, SliceChannels};
use cnnbench_graph::{Graph, Hw, ModelInfo, NodeSpec, Op, Shape, Source};
use cnnbench_results::profile::*;
use cnnbench_results::result::ToolInfo;
use cnnbench_results::roofline::LayerWork;
use cnnbench_results::stats::quantile;
use cnnbench_results::{Quantity, RunSpec};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What to profile and how: one point of a run spec (validated before it came here),
/// and what the profile records beside it.
#[derive(Clone, Debug)]
pub struct ProfileRequest {
    /// The point: `Train` (forward and backward) or `Infer` (forward only), its batch
    /// size, warm-up and timed passes, seed, threads and precision.
    pub point: RunSpec,
    pub model_source: String,
    pub tool: ToolInfo,
    /// The engine's best measured rate in the point's precision, when known, for "% of
    /// peak".
    pub peak: Option<cnnbench_results::peak::BestRate>,
    /// The machine's limits measured by `cnnbench peak` for this engine and precision,
    /// when known, for the roofline of the forward pass.
    pub ceilings: Option<cnnbench_results::roofline::Ceilings>,
}

/// Progress after each benchmark, for progress bars.
#[derive(Clone, Debug)]
pub struct ProfileProgress {
    pub done: usize,
    pub of: usize,
    /// What runs next (a node's name, or the end-to-end run).
    pub next: String,
}

/// How the per-node times are obtained, written into every profile.
pub const METHOD: &str = "each node benchmarked alone on its input shapes (nodes with the same op and input shapes once, attributed to each); inputs other than the image come from a per-channel scale (sliced or pooled from the image where needed) so they need a gradient as in the network; that construction is timed alone and its median subtracted; the end-to-end time is a separate harness run of the whole network";

/// The name of the benchmarked node in its isolated graph (feeders are `feed…`).
const ISOLATED_NODE: &str = "node";

/// Outside this range of (sum of nodes) / (end to end), a profile comes with a warning.
pub const SUM_RATIO_WARNING: (f64, f64) = (0.8, 1.25);

/// A node rebuilt alone: the graph to time and, per input, the feeder graph whose time
/// is subtracted (`None` for an input fed directly).
pub struct Isolated {
    pub graph: Graph,
    pub feeders: Vec<Option<Graph>>,
}

/// The op family a node is summarised under: convolutions by kernel shape (and
/// grouping), then batch norm, activations, pooling, linear, element-wise…
pub fn category(op: &Op) -> String {
    match op {
        Op::Conv2d(c) => {
            let kind = if c.groups > 1 && c.groups == c.in_channels {
                " depthwise"
            } else if c.groups > 1 {
                " grouped"
            } else {
                ""
            };
            format!("conv {}×{}{kind}", c.kernel.h, c.kernel.w)
        }
        Op::BatchNorm2d(_) => "batch norm".into(),
        Op::LayerNorm2d(_) => "layer norm".into(),
        Op::LocalResponseNorm(_) => "LRN".into(),
        Op::Activation(_) => "activation".into(),
        Op::MaxPool2d(_) | Op::AvgPool2d(_) | Op::AdaptiveAvgPool2d(_) => "pooling".into(),
        Op::Linear(_) => "linear".into(),
        Op::Add(_) | Op::Mul(_) | Op::LayerScale(_) => "elementwise".into(),
        Op::Dropout(_) | Op::StochasticDepth(_) => "dropout".into(),
        Op::Flatten(_) | Op::Concat(_) | Op::ChannelShuffle(_) | Op::SliceChannels(_) => {
            "reshape/concat".into()
        }
    }
}

/// Bytes a node's forward pass moves for a batch of `batch` at `precision`: its
/// weights and buffers once, its inputs and output for every example (an engine that
/// fuses the node with its neighbours moves less; the roofline takes what the node
/// alone must).
pub fn forward_bytes(
    graph: &Graph,
    node: &cnnbench_graph::Node,
    batch: usize,
    precision: Precision,
) -> f64 {
    let per_value = crate::peak::element_bytes(precision);
    let weights = node.op.params().saturating_add(node.op.buffers()) as f64;
    let activations: f64 = node
        .inputs
        .iter()
        .map(|s| graph.source_shape(*s).elements() as f64)
        .sum::<f64>()
        + node.shape.elements() as f64;
    per_value * (weights + activations * batch as f64)
}

/// The least time the ceilings allow one forward pass of `graph` at `batch` in
/// `precision` (every node's FLOPs and [`forward_bytes`]), seconds; `None` when the
/// ceilings cannot judge.
pub fn forward_roof_time(
    graph: &Graph,
    batch: usize,
    precision: Precision,
    ceilings: &cnnbench_results::roofline::Ceilings,
) -> Option<f64> {
    let layers: Vec<LayerWork> = graph
        .nodes()
        .iter()
        .map(|node| LayerWork {
            flops: 2.0 * node.op.macs(&node.shape) as f64 * batch as f64,
            bytes: forward_bytes(graph, node, batch, precision),
            seconds: 0.0,
        })
        .collect();
    cnnbench_results::roofline::least_time(ceilings, &layers)
}

/// The layers that turn the isolated graph's input `x` into an input of shape `want`
/// that needs a gradient, or an error when no such construction exists.
fn feeder_ops(x: &Shape, want: &Shape) -> Result<Vec<Op>> {
    let scale = |channels| {
        Op::LayerScale(LayerScale {
            channels,
            init: 1.0,
        })
    };
    if let Some(f) = want.as_flat() {
        return Ok(vec![scale(f), Op::Flatten(NoParams {})]);
    }
    let ((c, h, w), (xc, xh, xw)) = want
        .as_chw()
        .zip(x.as_chw())
        .ok_or_else(|| anyhow!("cannot feed a {want} input from a {x} image"))?;
    let mut ops = Vec::new();
    if c < xc {
        ops.push(Op::SliceChannels(SliceChannels { start: 0, end: c }));
    }
    if (h, w) == (1, 1) && (xh, xw) != (1, 1) {
        ops.push(Op::AdaptiveAvgPool2d(AdaptiveAvgPool2d {
            output: Hw::new(1, 1),
        }));
    } else if (h, w) != (xh, xw) {
        return Err(anyhow!("cannot feed a {want} input from a {x} image"));
    }
    ops.push(scale(c));
    Ok(ops)
}

/// The image shape an isolated node is fed from: `[F, 1, 1]` for a flat input, else
/// the largest channels, height and width among its inputs.
fn isolated_input(shapes: &[&Shape]) -> Result<[usize; 3]> {
    if let [one] = shapes {
        if let Some(f) = one.as_flat() {
            return Ok([f, 1, 1]);
        }
    }
    let mut x = [0usize; 3];
    for s in shapes {
        let (c, h, w) = s
            .as_chw()
            .ok_or_else(|| anyhow!("mixes flat and feature-map inputs ({s})"))?;
        x = [x[0].max(c), x[1].max(h), x[2].max(w)];
    }
    Ok(x)
}

fn chain(name: &str, start: &str, ops: &[Op], specs: &mut Vec<NodeSpec>) -> String {
    let mut prev = start.to_string();
    for (j, op) in ops.iter().enumerate() {
        let node = format!("{name}_{j}");
        specs.push(NodeSpec {
            name: node.clone(),
            op: op.clone(),
            inputs: vec![prev],
        });
        prev = node;
    }
    prev
}

/// Rebuilds node `index` of `graph` alone (see the module's documentation).
pub fn isolate(graph: &Graph, index: usize) -> Result<Isolated> {
    let node = graph
        .nodes()
        .get(index)
        .ok_or_else(|| anyhow!("the graph has no node {index}"))?;
    let shapes: Vec<&Shape> = node.inputs.iter().map(|s| graph.source_shape(*s)).collect();
    let x = isolated_input(&shapes)
        .with_context(|| format!("node \"{}\" cannot be benchmarked alone", node.name))?;
    let x_shape = Shape(x.to_vec());
    let mut specs = Vec::new();
    let mut feeders = Vec::new();
    let mut fed: HashMap<Source, String> = HashMap::new();
    let mut inputs = Vec::new();
    for (i, (source, shape)) in node.inputs.iter().zip(&shapes).enumerate() {
        if let Some(name) = fed.get(source) {
            // The same value read twice is fed once, as in the network.
            inputs.push(name.clone());
            continue;
        }
        let direct = *source == Source::Input && **shape == x_shape;
        let name = if direct {
            feeders.push(None);
            cnnbench_graph::INPUT_NAME.to_string()
        } else {
            let ops = feeder_ops(&x_shape, shape)
                .with_context(|| format!("node \"{}\" cannot be benchmarked alone", node.name))?;
            let mut alone = Vec::new();
            let out = chain("feed", cnnbench_graph::INPUT_NAME, &ops, &mut alone);
            feeders.push(Some(
                Graph::new("feeder", x, alone, Some(&out), ModelInfo::default())
                    .context("building a feeder graph")?,
            ));
            chain(
                &format!("feed{i}"),
                cnnbench_graph::INPUT_NAME,
                &ops,
                &mut specs,
            )
        };
        fed.insert(*source, name.clone());
        inputs.push(name);
    }
    // A fixed name that no feeder takes, whatever the node is called.
    specs.push(NodeSpec {
        name: ISOLATED_NODE.into(),
        op: node.op.clone(),
        inputs,
    });
    let graph = Graph::new(
        node.name.clone(),
        x,
        specs,
        Some(ISOLATED_NODE),
        ModelInfo::default(),
    )
    .with_context(|| format!("node \"{}\" cannot be benchmarked alone", node.name))?;
    Ok(Isolated { graph, feeders })
}

/// Forward and (in train mode) backward samples of `graph`, in seconds, warm-up dropped.
pub struct Samples {
    pub forward: Vec<f64>,
    pub backward: Option<Vec<f64>>,
}

/// How an isolated graph is timed.
#[derive(Clone, Copy)]
pub struct Timing<'e> {
    pub mode: Mode,
    pub batch_size: usize,
    pub seed: u64,
    pub warmup: usize,
    pub passes: usize,
    pub precision: Precision,
    /// The f32 engine an int8 graph is calibrated on first (its activation ranges over
    /// [`INT8_CALIBRATION_IMAGES`] random images, on the weights the session starts
    /// from), as `run` calibrates; `None` outside int8.
    pub int8_reference: Option<&'e dyn Engine>,
}

/// Random images an isolated graph is calibrated on for int8: its ranges are the
/// timing's, not an accuracy's, so fewer than a run's.
pub const INT8_CALIBRATION_IMAGES: usize = 8;

/// The calibration an int8 timing of `graph` needs (`None` in other precisions).
pub fn int8_calibration(
    graph: &Graph,
    seed: u64,
    precision: Precision,
    reference: Option<&dyn Engine>,
) -> Result<Option<crate::quantize::Calibration>> {
    if precision != Precision::Int8 {
        return Ok(None);
    }
    let reference = reference.ok_or_else(|| {
        anyhow!(
            "an int8 timing needs an f32 engine to calibrate {} on",
            graph.name()
        )
    })?;
    let weights = cnnbench_graph::Weights::initial(graph, seed);
    crate::quantize::calibrate(reference, graph, &weights, seed, INT8_CALIBRATION_IMAGES).map(Some)
}

/// Times `graph` with the harness's pass, outside any result file.
pub fn time_graph(
    engine: &dyn Engine,
    graph: &Graph,
    timing: Timing,
    cancel: &AtomicBool,
) -> Result<Samples> {
    let Timing {
        mode,
        batch_size,
        seed,
        warmup,
        passes,
        precision,
        int8_reference,
    } = timing;
    let config = SessionConfig {
        mode,
        batch_size,
        seed,
        precision,
        deterministic: false,
        calibration: int8_calibration(graph, seed, precision, int8_reference)?
            .map(|calibration| calibration.int8),
    };
    let mut session = crate::measure::ready(engine, graph, &config)?.session;
    let mut forward = Vec::with_capacity(passes);
    let mut backward = Vec::with_capacity(passes);
    for pass in 0..warmup + passes {
        if cancel.load(Ordering::SeqCst) {
            return Err(harness::HarnessError::Interrupted.into());
        }
        let times = one_pass(session.as_mut(), mode)?;
        if pass >= warmup {
            for (phase, t) in mode.phases().iter().zip(times) {
                match phase {
                    Phase::Forward => forward.push(t.as_secs_f64()),
                    Phase::Backward => backward.push(t.as_secs_f64()),
                    Phase::Allreduce | Phase::Update => {}
                }
            }
        }
    }
    Ok(Samples {
        forward,
        backward: (mode == Mode::Train).then_some(backward),
    })
}

fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    crate::stats::median_in_place(&mut v)
}

/// A node's time in one phase: each pass of its graph less the feeders' medians.
fn node_time(samples: &[f64], subtracted: f64) -> Result<NodeTime> {
    let mut net: Vec<f64> = samples.iter().map(|t| (t - subtracted).max(0.0)).collect();
    if net.is_empty() {
        return Err(anyhow!("no timed passes"));
    }
    net.sort_by(f64::total_cmp);
    Ok(NodeTime {
        median: quantile(&net, 0.5),
        p25: quantile(&net, 0.25),
        p75: quantile(&net, 0.75),
        min: net[0],
        max: net[net.len() - 1],
        subtracted,
    })
}

/// Profiles `graph` on `engine`: every node alone, then the whole network end to end.
pub fn profile(
    engine: &dyn Engine,
    int8_reference: Option<&dyn Engine>,
    graph: &Graph,
    request: &ProfileRequest,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(ProfileProgress),
) -> Result<ProfileDoc> {
    let point = &request.point;
    if !matches!(point.mode, Mode::Train | Mode::Infer) {
        return Err(anyhow!(
            "profile times forward and backward per node; it runs train or infer mode, not {}",
            point.mode
        ));
    }
    let batch_size = harness::point_batch_size(point)?;
    let started_at = Utc::now();
    let clock = Instant::now();
    let nodes = graph.nodes();
    // One benchmark per distinct (op, input shapes, inputs fed directly).
    let key_of = |i: usize| {
        let n = &nodes[i];
        let inputs: Vec<(bool, &Shape)> = n
            .inputs
            .iter()
            .map(|s| (*s == Source::Input, graph.source_shape(*s)))
            .collect();
        format!("{:?}|{inputs:?}", n.op)
    };
    let mut first_with_key: HashMap<String, usize> = HashMap::new();
    let mut same_as: Vec<Option<usize>> = Vec::with_capacity(nodes.len());
    for i in 0..nodes.len() {
        let key = key_of(i);
        match first_with_key.get(&key) {
            Some(&j) => same_as.push(Some(j)),
            None => {
                first_with_key.insert(key, i);
                same_as.push(None);
            }
        }
    }
    let to_run: Vec<usize> = (0..nodes.len()).filter(|&i| same_as[i].is_none()).collect();
    let of = to_run.len() + 1;
    let run = |g: &Graph, cancel: &AtomicBool| {
        let timing = Timing {
            mode: point.mode,
            batch_size,
            seed: point.seed,
            warmup: point.warmup,
            passes: point.passes,
            precision: point.precision,
            int8_reference,
        };
        time_graph(engine, g, timing, cancel)
    };

    let mut feeder_medians: HashMap<String, (f64, Option<f64>)> = HashMap::new();
    let mut measured: HashMap<usize, (NodeTime, Option<NodeTime>)> = HashMap::new();
    let mut warnings = Vec::new();
    let mut unresolved = Vec::new();
    for (done, &i) in to_run.iter().enumerate() {
        on_progress(ProfileProgress {
            done,
            of,
            next: nodes[i].name.clone(),
        });
        let isolated = isolate(graph, i)?;
        let mut sub_forward = 0.0;
        let mut sub_backward = 0.0;
        for feeder in isolated.feeders.iter().flatten() {
            let key = format!("{:?}|{:?}", feeder.input_shape(), feeder.specs());
            let (f, b) = match feeder_medians.get(&key) {
                Some(m) => *m,
                None => {
                    let s = run(feeder, cancel).with_context(|| {
                        format!("timing the construction around node \"{}\"", nodes[i].name)
                    })?;
                    let m = (median(&s.forward), s.backward.as_deref().map(median));
                    feeder_medians.insert(key, m);
                    m
                }
            };
            sub_forward += f;
            sub_backward += b.unwrap_or(0.0);
        }
        let s = run(&isolated.graph, cancel)
            .with_context(|| format!("timing node \"{}\" alone", nodes[i].name))?;
        let forward = node_time(&s.forward, sub_forward)?;
        let backward = match &s.backward {
            Some(b) => Some(node_time(b, sub_backward)?),
            None => None,
        };
        if forward.median == 0.0 || backward.as_ref().is_some_and(|b| b.median == 0.0) {
            unresolved.push(nodes[i].name.clone());
        }
        measured.insert(i, (forward, backward));
    }

    if !unresolved.is_empty() {
        warnings.push(format!(
            "{} node(s) read 0 in a phase because the construction around them took as long as the node with it (below what this method resolves): {}",
            unresolved.len(),
            unresolved.join(", ")
        ));
    }
    on_progress(ProfileProgress {
        done: of - 1,
        of,
        next: "end to end".into(),
    });
    // The end-to-end figure is a fixed number of passes, like the nodes'.
    let run_request = RunRequest {
        model_source: request.model_source.clone(),
        calibration: int8_calibration(graph, point.seed, point.precision, int8_reference)?,
        ..RunRequest::new(point.clone(), request.tool.clone())
    };
    let whole = harness::run(engine, graph, &run_request, cancel, &mut |_| {})?;
    let summary = |q: Quantity| whole.summary.get(&q).cloned();
    let end_to_end = PhaseTimes {
        forward: summary(Quantity::Forward)
            .ok_or_else(|| anyhow!("the end-to-end run recorded no forward time"))?,
        backward: summary(Quantity::Backward),
        total: summary(Quantity::Total)
            .ok_or_else(|| anyhow!("the end-to-end run recorded no total time"))?,
    };
    warnings.extend(whole.warnings.iter().map(|w| format!("end to end: {w}")));

    let batch = batch_size as f64;
    let mut profiles = Vec::with_capacity(nodes.len());
    for (i, node) in nodes.iter().enumerate() {
        let source = same_as[i].unwrap_or(i);
        let (forward, backward) = measured
            .get(&source)
            .cloned()
            .ok_or_else(|| anyhow!("node \"{}\" was not measured", node.name))?;
        let macs = node.op.macs(&node.shape);
        let forward_flops = 2.0 * macs as f64 * batch;
        // The weights' gradient costs a forward pass, and so does the input's when the
        // input is another layer's output.
        let input_needs_grad = node.inputs.iter().any(|s| *s != Source::Input);
        let backward_flops = (point.mode == Mode::Train)
            .then_some(forward_flops * if input_needs_grad { 2.0 } else { 1.0 });
        let bytes = forward_bytes(graph, node, batch_size, point.precision);
        let roofline = request.ceilings.as_ref().and_then(|c| {
            cnnbench_results::roofline::layer(c, forward_flops, bytes, forward.median)
        });
        profiles.push(NodeProfile {
            index: i,
            name: node.name.clone(),
            op: node.op.tag().to_string(),
            description: node.op.describe(),
            category: category(&node.op),
            input_shapes: node
                .inputs
                .iter()
                .map(|s| graph.source_shape(*s).0.clone())
                .collect(),
            output_shape: node.shape.0.clone(),
            macs,
            forward_flops,
            backward_flops,
            forward,
            backward,
            same_as: same_as[i],
            roofline,
            forward_bytes: Some(bytes),
        });
    }
    let roofline = request.ceilings.as_ref().and_then(|c| {
        let layers: Vec<LayerWork> = profiles
            .iter()
            .map(|n| LayerWork {
                flops: n.forward_flops,
                bytes: n.forward_bytes.unwrap_or(0.0),
                seconds: n.forward.median,
            })
            .collect();
        cnnbench_results::roofline::network(c, &layers, end_to_end.forward.median)
    });
    let forward_sum: f64 = profiles.iter().map(|n| n.forward.median).sum();
    let backward_sum = (point.mode == Mode::Train).then(|| {
        profiles
            .iter()
            .filter_map(|n| n.backward.as_ref().map(|b| b.median))
            .sum::<f64>()
    });
    let total_sum = forward_sum + backward_sum.unwrap_or(0.0);
    let ratio = total_sum / end_to_end.total.median;
    if !(SUM_RATIO_WARNING.0..=SUM_RATIO_WARNING.1).contains(&ratio) {
        warnings.push(format!(
            "the nodes add up to {ratio:.2}× the end-to-end time: the machine was busy, or each node alone pays costs that the network spreads over all its layers (waking the engine's thread pool, fresh allocations); compare shares rather than absolute times, and rerun on a quiet machine"
        ));
    }
    let [_, h, w] = graph.input_shape();
    Ok(ProfileDoc {
        format: PROFILE_FORMAT.into(),
        version: PROFILE_VERSION,
        tool: request.tool.clone(),
        model: whole.model.clone(),
        config: ProfileConfig {
            mode: point.mode,
            batch_size,
            precision: point.precision,
            image_size: [h, w],
            warmup: point.warmup,
            passes: point.passes,
            seed: point.seed,
            threads_requested: point.threads,
            allocator: Some(crate::env::allocator_record()),
        },
        engine: whole.engine.clone(),
        machine: whole.machine.clone(),
        started_at,
        duration_s: clock.elapsed().as_secs_f64(),
        method: METHOD.into(),
        peak: request.peak.clone().into(),
        ceilings: request.ceilings.clone(),
        roofline,
        end_to_end,
        sum_of_nodes: PhaseSums {
            forward: forward_sum,
            backward: backward_sum,
            total: total_sum,
        },
        nodes: profiles,
        benchmarks: to_run.len(),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_engine::Session;
    use cnnbench_graph::ops::Conv2d;
    use cnnbench_graph::GraphBuilder;
    use std::time::Duration;

    fn branchy() -> Graph {
        let mut b = GraphBuilder::new("branchy", [3, 8, 8]);
        let x = b.input();
        let c1 = b.conv("c1", &x, Conv2d::new(4, 3).padding(1));
        let r1 = b.relu("r1", &c1);
        let c2 = b.conv("c2", &r1, Conv2d::new(6, 1));
        let cat = b.concat("cat", &[&r1, &c2]);
        let sum = b.sum("sum", &[&cat, &cat]);
        let pool = b.adaptive_avg_pool("pool", &sum, 1, 1);
        let gated = b.mul("gated", &sum, &pool);
        let flat = b.flatten("flat", &gated);
        let fc = b.linear("fc", &flat, 5);
        b.finish(&fc).unwrap()
    }

    #[test]
    fn every_node_can_be_isolated_with_its_shapes() {
        let g = branchy();
        for (i, node) in g.nodes().iter().enumerate() {
            let iso = isolate(&g, i).unwrap();
            let last = iso.graph.nodes().last().unwrap();
            assert_eq!(last.op, node.op, "{}", node.name);
            assert_eq!(last.shape, node.shape, "{}", node.name);
            let want: Vec<&Shape> = node.inputs.iter().map(|s| g.source_shape(*s)).collect();
            let got: Vec<&Shape> = last
                .inputs
                .iter()
                .map(|s| iso.graph.source_shape(*s))
                .collect();
            assert_eq!(got, want, "{}", node.name);
        }
    }

    #[test]
    fn image_inputs_are_fed_directly_and_others_need_a_gradient() {
        let g = branchy();
        // c1 reads the image: no feeder, so no input gradient, as in the network.
        let c1 = isolate(&g, 0).unwrap();
        assert_eq!(c1.graph.nodes().len(), 1);
        assert!(c1.feeders.iter().all(Option::is_none));
        // The sum reads one value twice: fed once.
        let sum = g.nodes().iter().position(|n| n.name == "sum").unwrap();
        let iso = isolate(&g, sum).unwrap();
        assert_eq!(iso.feeders.len(), 1);
        let last = iso.graph.nodes().last().unwrap();
        assert_eq!(last.inputs[0], last.inputs[1]);
        // Every fed input ends in a per-channel scale (or its flattening).
        for (i, node) in g.nodes().iter().enumerate().skip(1) {
            let iso = isolate(&g, i).unwrap();
            for f in iso.feeders.iter().flatten() {
                let ops: Vec<&str> = f.nodes().iter().map(|n| n.op.tag()).collect();
                assert!(ops.contains(&"layer_scale"), "{}: {ops:?}", node.name);
            }
        }
    }

    #[test]
    fn categories_group_convolutions_by_kernel() {
        let conv = Op::Conv2d(Conv2d::new(8, 3));
        assert_eq!(category(&conv), "conv 3×3");
        let mut dw = Conv2d::new(8, 3).groups(8);
        dw.in_channels = 8;
        assert_eq!(category(&Op::Conv2d(dw)), "conv 3×3 depthwise");
        assert_eq!(category(&Op::Add(NoParams {})), "elementwise");
    }

    /// A fake engine whose every op takes a known time, slept rather than computed: a
    /// neighbour on the cores barely moves a sleep, so what the profile adds up is its
    /// own accounting, not the machine's load. A convolution takes [`CONV_MS`] forward,
    /// any other op (the feeders' scales) [`OTHER_MS`]; backward twice the forward.
    struct SleepingOps;
    struct SleepingOpsSession {
        forward: Duration,
    }
    const CONV_MS: f64 = 6.0;
    const OTHER_MS: f64 = 4.0;
    impl Session for SleepingOpsSession {
        fn prepare_batch(&mut self) -> Result<()> {
            Ok(())
        }
        fn forward(&mut self) -> Result<()> {
            std::thread::sleep(self.forward);
            Ok(())
        }
        fn prepare_output_grad(&mut self) -> Result<()> {
            Ok(())
        }
        fn backward(&mut self) -> Result<()> {
            std::thread::sleep(2 * self.forward);
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }
    impl Engine for SleepingOps {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            cnnbench_engine::Capabilities::cpu_f32(None)
        }
        fn info(&self) -> cnnbench_results::EngineInfo {
            cnnbench_results::EngineInfo {
                name: "sleeping-ops".into(),
                framework: "test".into(),
                framework_version: "0".into(),
                backend: "none".into(),
                device: "cpu".into(),
                device_name: "test".into(),
                threads: 1,
                libraries: Default::default(),
                settings: Default::default(),
                variant: Vec::new(),
            }
        }
        fn lower(&self, graph: &Graph, _: &SessionConfig) -> Result<Box<dyn Session>> {
            let ms: f64 = graph
                .nodes()
                .iter()
                .map(|n| match n.op {
                    Op::Conv2d(_) => CONV_MS,
                    _ => OTHER_MS,
                })
                .sum();
            Ok(Box::new(SleepingOpsSession {
                forward: Duration::from_secs_f64(ms / 1e3),
            }))
        }
    }

    /// A profile of the slept engine at batch 2: `warmup` and `passes` of each benchmark.
    fn slept_request(
        model: &str,
        mode: Mode,
        warmup: usize,
        passes: usize,
        ceilings: Option<cnnbench_results::roofline::Ceilings>,
    ) -> ProfileRequest {
        let mut point = RunSpec::new(
            vec![cnnbench_results::ModelRef::Zoo { name: model.into() }],
            "sleeping-ops",
        );
        point.mode = mode;
        point.batch = cnnbench_results::Batches::Sizes(vec![2]);
        point.warmup = warmup;
        point.passes = passes;
        ProfileRequest {
            point,
            model_source: "test".into(),
            tool: ToolInfo {
                name: "cnnbench".into(),
                version: "test".into(),
                git_commit: None,
            },
            peak: None,
            ceilings,
        }
    }

    /// The nodes add up to the whole network, and each node is its own time, not its
    /// feeders': a phase counted twice (nested timers, Caffe's bug #4453) would double
    /// the sum, a lost backward cut it to a third, a feeder not subtracted add to it.
    #[test]
    fn nodes_add_up_to_the_end_to_end_time_and_feeders_are_subtracted() {
        let mut b = GraphBuilder::new("three-convs", [8, 8, 8]);
        let x = b.input();
        let c1 = b.conv("c1", &x, Conv2d::new(8, 3).padding(1));
        let c2 = b.conv("c2", &c1, Conv2d::new(8, 3).padding(1));
        let c3 = b.conv("c3", &c2, Conv2d::new(8, 1));
        let g = b.finish(&c3).unwrap();
        let request = slept_request("three-convs", Mode::Train, 1, 5, None);
        let doc = profile(
            &SleepingOps,
            None,
            &g,
            &request,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        let ratio = doc.sum_of_nodes.total / doc.end_to_end.total.median;
        assert!((0.8..=1.25).contains(&ratio), "ratio {ratio}: {doc:#?}");
        // Each node's forward is its own 6 ms, its feeder's 4 ms taken off (a sleep
        // wakes late, never early, but the feeder's may wake later than the node's:
        // 2 ms either way beside a busy neighbour, short of a feeder left in).
        for n in &doc.nodes {
            let forward_ms = n.forward.median * 1e3;
            assert!(
                (CONV_MS - 2.0..CONV_MS + 3.0).contains(&forward_ms),
                "{}: forward {forward_ms:.2} ms",
                n.name
            );
            let backward_ms = n.backward.as_ref().map(|b| b.median * 1e3);
            assert!(
                backward_ms
                    .is_some_and(|ms| (2.0 * CONV_MS - 2.0..2.0 * CONV_MS + 3.0).contains(&ms)),
                "{}: backward {backward_ms:?} ms",
                n.name
            );
        }
    }

    /// With ceilings, every convolution's forward pass is set against the roof of its
    /// bytes' level and the network against the sum of the roofs' least times: a 6 ms
    /// sleep is far below any roof, so overhead-bound, and the share is the least time
    /// over the measured one.
    #[test]
    fn with_ceilings_each_node_and_the_network_are_set_against_the_roofs() {
        use cnnbench_results::roofline::{Bound, Ceilings, MemoryCeiling};
        let mut b = GraphBuilder::new("two-convs", [8, 8, 8]);
        let x = b.input();
        let c1 = b.conv("c1", &x, Conv2d::new(8, 3).padding(1));
        let r1 = b.relu("r1", &c1);
        let c2 = b.conv("c2", &r1, Conv2d::new(4, 1));
        let g = b.finish(&c2).unwrap();
        let ceilings = Ceilings {
            compute_gflops_per_s: 100.0,
            compute_primitive: "matrix product".into(),
            memory: vec![MemoryCeiling {
                level: "DRAM".into(),
                holds_bytes: None,
                gb_per_s: 10.0,
            }],
            nominal_gflops_per_s: None,
        };
        let request = slept_request("two-convs", Mode::Infer, 0, 2, Some(ceilings.clone()));
        let doc = profile(
            &SleepingOps,
            None,
            &g,
            &request,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(doc.ceilings.as_ref(), Some(&ceilings));
        // c2, a 1×1 convolution 8 → 4 on 8×8 maps: its weights and bias once, its input
        // (512 values) and output (256) for each of 2 examples, 4 bytes each in f32.
        let c2 = &doc.nodes[2];
        let weights = g.nodes()[2].op.params() as f64;
        assert_eq!(
            c2.forward_bytes,
            Some(4.0 * (weights + 2.0 * (512.0 + 256.0)))
        );
        for n in &doc.nodes {
            match (&n.roofline, n.forward_flops > 0.0) {
                (Some(roof), true) => {
                    assert_eq!(roof.bound, Bound::Overhead, "{}: {roof:?}", n.name);
                    assert_eq!(roof.memory_level, "DRAM");
                    let achieved = n.forward_flops / n.forward.median / 1e9;
                    assert!((roof.achieved_gflops_per_s - achieved).abs() <= 1e-9 * achieved);
                }
                (None, false) => {}
                (roof, computes) => panic!("{}: computes {computes}, roof {roof:?}", n.name),
            }
        }
        let net = doc.roofline.as_ref().expect("the network's roofline");
        let least: f64 = doc
            .nodes
            .iter()
            .map(|n| {
                let bytes = n.forward_bytes.unwrap();
                (n.forward_flops / 100e9).max(bytes / 10e9)
            })
            .sum();
        assert!((net.roof_time_s - least).abs() <= 1e-12, "{net:?}");
        assert_eq!(net.measured_s, doc.end_to_end.forward.median);
        assert!((net.of_roof - least / net.measured_s).abs() <= 1e-12);
        let judged = net.compute_bound_s + net.memory_bound_s + net.overhead_bound_s;
        assert_eq!(
            net.overhead_bound_s, judged,
            "every sleep is overhead: {net:?}"
        );
    }
}
