//! The engine kit: the one interpreter every engine runs on.
//!
//! An engine supplies [`Kernels`] (one method per op family, on its own tensor type) and
//! a [`WeightStore`] (its weights, read and written as host tensors); the kit supplies
//! the rest once for all engines: the walk over the Graph in node order, moving each
//! value into its last reader and dropping it there (so an engine that reuses a uniquely
//! owned buffer does so), the in-place hints that autograd allows, weight keys and
//! PyTorch's initialisation, dropout and stochastic depth, the training constants, and
//! error messages that name the node; and ([`input`]) a session's input batches drawn
//! from its seed, with the check on an input given from outside.
//!
//! Adding an op to the IR makes [`Program::forward`]'s match non-exhaustive until the
//! op is routed to a kernel, and adding a kernel method makes every engine fail to
//! compile until it implements it: the compiler lists every place a new op touches.

use anyhow::{anyhow, Context, Result};
use cnnbench_graph::ops::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d, Conv2d, LayerNorm2d, LayerScale, Linear,
    LocalResponseNorm, MaxPool2d, SliceChannels,
};
use cnnbench_graph::{Activation, Graph, HostTensor, Op, Source, WeightSpec, Weights};

/// How a weight starts (PyTorch's layer defaults), as the Graph's weight specs say.
pub use cnnbench_graph::WeightInit;

pub mod input;
pub mod pass_state;
pub use input::{check_input_shape, InputBatches};
pub use pass_state::{last_gradients, BackwardFrom, PassState};

/// Learning rate of the SGD step in `step` mode (it does not change the timing).
pub const LEARNING_RATE: f64 = 0.01;
/// Momentum of the SGD step in `step` mode.
pub const MOMENTUM: f64 = 0.9;

/// A convolution's weights, as indices into [`Program::weights`].
#[derive(Clone, Copy, Debug)]
pub struct ConvWeights {
    pub weight: usize,
    pub bias: Option<usize>,
}

/// A batch norm's weights: scale and shift when affine, then the running statistics.
#[derive(Clone, Copy, Debug)]
pub struct NormWeights {
    pub affine: Option<(usize, usize)>,
    pub running_mean: usize,
    pub running_var: usize,
}

/// A linear layer's weights (`weight` in PyTorch's `[out, in]` layout).
#[derive(Clone, Copy, Debug)]
pub struct LinearWeights {
    pub weight: usize,
    pub bias: Option<usize>,
}

/// A channel layer norm's scale and shift.
#[derive(Clone, Copy, Debug)]
pub struct LayerNormWeights {
    pub weight: usize,
    pub bias: usize,
}

/// The tensor operations an engine provides, one per op family of the IR, on its own
/// value type. Weights are passed as indices into [`Program::weights`]; the engine
/// keeps them (see [`WeightStore`]). A kernel may assume its inputs have the shapes the
/// Graph inferred.
pub trait Kernels {
    /// A batch of feature maps `[N, C, H, W]` or flat vectors `[N, F]`.
    /// (`Send + 'static` so the kit can keep gradient probes, [`Kernels::gradient_probe`].)
    type Value: Clone + Send + 'static;

    fn conv2d(&self, x: Self::Value, op: &Conv2d, w: ConvWeights) -> Result<Self::Value>;
    /// `training`: normalise with batch statistics and update the running ones.
    fn batch_norm2d(
        &self,
        x: Self::Value,
        op: &BatchNorm2d,
        w: NormWeights,
        training: bool,
    ) -> Result<Self::Value>;
    fn linear(&self, x: Self::Value, op: &Linear, w: LinearWeights) -> Result<Self::Value>;
    fn layer_norm2d(
        &self,
        x: Self::Value,
        op: &LayerNorm2d,
        w: LayerNormWeights,
    ) -> Result<Self::Value>;
    fn layer_scale(&self, x: Self::Value, op: &LayerScale, scale: usize) -> Result<Self::Value>;
    /// `overwrite`: the engine may write the result into `x`'s buffer (autograd allows it).
    fn activation(&self, x: Self::Value, act: Activation, overwrite: bool) -> Result<Self::Value>;
    fn local_response_norm(&self, x: Self::Value, op: &LocalResponseNorm) -> Result<Self::Value>;
    fn max_pool2d(&self, x: Self::Value, op: &MaxPool2d) -> Result<Self::Value>;
    fn avg_pool2d(&self, x: Self::Value, op: &AvgPool2d) -> Result<Self::Value>;
    fn adaptive_avg_pool2d(&self, x: Self::Value, op: &AdaptiveAvgPool2d) -> Result<Self::Value>;
    /// Inverted dropout with probability `p`; called only when dropout is live.
    fn dropout(&self, x: Self::Value, p: f64) -> Result<Self::Value>;
    fn flatten(&self, x: Self::Value) -> Result<Self::Value>;
    /// Concatenation along channels of two or more maps.
    fn concat(&self, xs: Vec<Self::Value>) -> Result<Self::Value>;
    /// The sum of two or more values; `overwrite` as for [`Kernels::activation`], for
    /// the first input.
    fn add(&self, xs: Vec<Self::Value>, overwrite: bool) -> Result<Self::Value>;
    /// Element-wise product, broadcasting size-1 dimensions.
    fn mul(&self, a: Self::Value, b: Self::Value) -> Result<Self::Value>;
    fn channel_shuffle(&self, x: Self::Value, groups: usize) -> Result<Self::Value>;
    fn slice_channels(&self, x: Self::Value, op: &SliceChannels) -> Result<Self::Value>;
    /// Called on every node's output before later nodes read it: where a backend's own
    /// kernels misread some layouts, the engine can hand values on in one they read
    /// right. The default passes the value on as it is.
    fn settle(&self, value: Self::Value) -> Result<Self::Value> {
        Ok(value)
    }
    /// Copies a value to the host, for `verify --localize` (never on the timed path).
    fn to_host(&self, value: &Self::Value) -> Result<HostTensor>;
    /// For `verify --localize` in training: `value` plus zeros created as a leaf of the
    /// autodiff graph whose gradient the engine keeps, and that leaf (the probe). The kit
    /// probes every node's output (adding zero changes no value), so after backward each
    /// probe's gradient is the gradient arriving at its node, which autodiff engines do
    /// not keep for intermediate values. The engine adds with its own tensor op, not its
    /// `add` kernel, so a kernel under test cannot bend the probes. Engines without
    /// autodiff keep the default refusal.
    fn gradient_probe(&self, _value: Self::Value) -> Result<(Self::Value, Self::Value)> {
        Err(anyhow!(
            "this engine cannot show the gradient arriving at each node"
        ))
    }
}

/// An engine's weights seen as host tensors in PyTorch's layout, indexed like
/// [`Program::weights`]: what `verify` and weight files need.
pub trait WeightStore {
    fn read(&self, index: usize) -> Result<HostTensor>;
    /// Replaces the values of weight `index` (shape already checked), keeping whether
    /// it trains.
    fn write(&mut self, index: usize, value: &HostTensor) -> Result<()>;
    /// The gradient of trainable weight `index` after the last backward pass; `None`
    /// where the loss did not reach it.
    fn gradient(&self, index: usize) -> Result<Option<HostTensor>>;
}

/// How a forward pass runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Batch statistics (updating the running ones) and live dropout.
    pub training: bool,
    /// Dropout may zero elements (off for `cnnbench verify`, which needs one function).
    pub dropout: bool,
}

struct Step {
    node: usize,
    /// Indices into [`Program::weights`], in the order [`Op::weight_specs`] lists them.
    weights: Vec<usize>,
    /// For each input: whether this step is its last reader, so the value moves in.
    moves: Vec<bool>,
    /// Values this step is the last reader of (dropped after it runs).
    frees: Vec<usize>,
    overwrite: bool,
}

/// A Graph prepared for interpretation: its steps and its weights. Built once per
/// session; [`Program::forward`] runs it on any engine's kernels.
pub struct Program {
    graph: Graph,
    steps: Vec<Step>,
    weights: Vec<WeightSpec>,
    /// Every node's output of the last forward pass, as host tensors, when asked for
    /// ([`Program::keep_node_outputs`]); `None` otherwise, and then nothing is copied.
    kept: std::sync::Mutex<Option<Vec<NodeOutput>>>,
    /// The gradient probes of the last training pass ([`Kernels::gradient_probe`]), one
    /// per node in node order, each the engine's value type; `None` unless asked for
    /// ([`Program::keep_node_gradients`]).
    probes: std::sync::Mutex<Option<Vec<Box<dyn std::any::Any + Send>>>>,
}

/// One node's output, copied to the host by [`Program::keep_node_outputs`].
#[derive(Clone, Debug)]
pub struct NodeOutput {
    pub node: String,
    pub value: HostTensor,
}

impl Program {
    pub fn new(graph: &Graph) -> Program {
        let weights = graph.weight_specs();
        let mut weights_of_node: Vec<Vec<usize>> = vec![Vec::new(); graph.nodes().len()];
        for (index, spec) in weights.iter().enumerate() {
            weights_of_node[spec.node].push(index);
        }
        let last = graph.last_uses();
        let readers = graph.reader_counts();
        let frees = graph.values_to_free();
        let steps = graph
            .nodes()
            .iter()
            .zip(frees)
            .zip(weights_of_node)
            .enumerate()
            .map(|(i, ((node, frees), weights))| {
                let moves = node
                    .inputs
                    .iter()
                    .map(|s| match s {
                        Source::Input => false,
                        Source::Node(j) => {
                            last[*j] == i && node.inputs.iter().filter(|t| *t == s).count() == 1
                        }
                    })
                    .collect();
                Step {
                    node: i,
                    weights,
                    moves,
                    frees,
                    overwrite: may_overwrite(graph, i, &readers),
                }
            })
            .collect();
        Program {
            graph: graph.clone(),
            steps,
            weights,
            kept: std::sync::Mutex::new(None),
            probes: std::sync::Mutex::new(None),
        }
    }

    /// From the next training pass on, adds a gradient probe to every node's output
    /// (see [`Kernels::gradient_probe`]), so that after backward the engine can read the
    /// gradient arriving at each node ([`Program::gradient_probes`]). In-place kernels
    /// are turned off while probing, so no later node writes into a probed value. Only
    /// `verify --localize` asks for it, never a timed run.
    pub fn keep_node_gradients(&self) {
        self.probes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(Vec::new);
    }

    /// The probes of the last training pass, in node order, as the engine's value type
    /// `V`: the engine reads each one's gradient after backward.
    pub fn gradient_probes<V: Clone + 'static>(&self) -> Result<Vec<(String, V)>> {
        let probes = self.probes.lock().unwrap_or_else(|e| e.into_inner());
        let probes = match probes.as_ref() {
            Some(probes) if !probes.is_empty() => probes,
            Some(_) => {
                return Err(anyhow!(
                    "no training pass has run since node gradients were asked for"
                ))
            }
            None => {
                return Err(anyhow!(
                    "node gradients were not kept: ask before the forward pass"
                ))
            }
        };
        probes
            .iter()
            .zip(self.graph.nodes())
            .map(|(probe, node)| {
                probe
                    .downcast_ref::<V>()
                    .cloned()
                    .map(|v| (node.name.clone(), v))
                    .ok_or_else(|| anyhow!("the gradient probes are of another value type"))
            })
            .collect()
    }

    /// From the next forward pass on, copies every node's output to the host (for
    /// `verify --localize`: which node is the first where two engines part). It costs a
    /// copy of every activation, so only verify asks for it, never a timed run.
    pub fn keep_node_outputs(&self) {
        self.kept
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(Vec::new);
    }

    /// The outputs of the last forward pass, in node order; an error unless
    /// [`Program::keep_node_outputs`] was called before it.
    pub fn node_outputs(&self) -> Result<Vec<NodeOutput>> {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        match kept.as_ref() {
            Some(outputs) if !outputs.is_empty() => Ok(outputs.clone()),
            Some(_) => Err(anyhow!(
                "no forward pass has run since node outputs were asked for"
            )),
            None => Err(anyhow!(
                "node outputs were not kept: ask before the forward pass"
            )),
        }
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Every weight tensor (key, shape, whether it trains, how it starts), in the order
    /// of [`Graph::weight_specs`].
    pub fn weights(&self) -> &[WeightSpec] {
        &self.weights
    }

    /// The nodes that may overwrite their first input (see [`Kernels::activation`]).
    pub fn overwriting_nodes(&self) -> Vec<&str> {
        self.steps
            .iter()
            .filter(|s| s.overwrite)
            .map(|s| self.graph.nodes()[s.node].name.as_str())
            .collect()
    }

    /// Refuses the first op `supports` rejects, naming the node, so a session fails
    /// when it is prepared rather than in the middle of a timed pass.
    pub fn check_support(&self, supports: impl Fn(&Op) -> Result<(), String>) -> Result<()> {
        for node in self.graph.nodes() {
            supports(&node.op)
                .map_err(|why| anyhow!("node \"{}\" ({}): {why}", node.name, node.op.tag()))?;
        }
        Ok(())
    }

    /// Runs the network on `input` (`[N, C, H, W]`) with `kernels`.
    pub fn forward<K: Kernels>(
        &self,
        kernels: &K,
        input: K::Value,
        pass: Pass,
    ) -> Result<K::Value> {
        let nodes = self.graph.nodes();
        let mut values: Vec<Option<K::Value>> = vec![None; nodes.len()];
        // A pass that panicked left the lock poisoned; what it kept is cleared below.
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(outputs) = kept.as_mut() {
            outputs.clear();
        }
        let mut probes = self.probes.lock().unwrap_or_else(|e| e.into_inner());
        let probing = pass.training && probes.is_some();
        if let Some(probes) = probes.as_mut().filter(|_| probing) {
            probes.clear();
        }
        for step in &self.steps {
            let node = &nodes[step.node];
            let mut xs = Vec::with_capacity(node.inputs.len());
            for (source, &moves) in node.inputs.iter().zip(&step.moves) {
                let value = match source {
                    Source::Input => Some(input.clone()),
                    Source::Node(j) if moves => values[*j].take(),
                    Source::Node(j) => values[*j].clone(),
                };
                xs.push(value.ok_or_else(|| {
                    anyhow!("node \"{}\" read a value that was already freed", node.name)
                })?);
            }
            let out = self
                .apply(
                    kernels,
                    step,
                    &node.op,
                    xs,
                    pass,
                    step.overwrite && !probing,
                )
                .and_then(|out| kernels.settle(out))
                .with_context(|| format!("node \"{}\" ({})", node.name, node.op.tag()))?;
            if let Some(outputs) = kept.as_mut() {
                let value = kernels
                    .to_host(&out)
                    .with_context(|| format!("copying node \"{}\"'s output", node.name))?;
                outputs.push(NodeOutput {
                    node: node.name.clone(),
                    value,
                });
            }
            let out = match probes.as_mut() {
                Some(probes) if probing => {
                    let (out, probe) = kernels
                        .gradient_probe(out)
                        .with_context(|| format!("probing node \"{}\"'s gradient", node.name))?;
                    probes.push(Box::new(probe));
                    out
                }
                _ => out,
            };
            values[step.node] = Some(out);
            for &j in &step.frees {
                values[j] = None;
            }
        }
        values[self.graph.output_index()]
            .take()
            .ok_or_else(|| anyhow!("the output node produced no value"))
    }

    fn apply<K: Kernels>(
        &self,
        k: &K,
        step: &Step,
        op: &Op,
        xs: Vec<K::Value>,
        pass: Pass,
        overwrite: bool,
    ) -> Result<K::Value> {
        let w = &step.weights;
        let mut inputs = xs.into_iter();
        let mut x = || inputs.next().ok_or_else(|| anyhow!("missing an input"));
        match op {
            Op::Conv2d(c) => k.conv2d(
                x()?,
                c,
                ConvWeights {
                    weight: w[0],
                    bias: c.bias.then(|| w[1]),
                },
            ),
            Op::BatchNorm2d(b) => {
                let (affine, running) = if b.affine {
                    (Some((w[0], w[1])), &w[2..])
                } else {
                    (None, &w[..])
                };
                let weights = NormWeights {
                    affine,
                    running_mean: running[0],
                    running_var: running[1],
                };
                k.batch_norm2d(x()?, b, weights, pass.training)
            }
            Op::Linear(l) => k.linear(
                x()?,
                l,
                LinearWeights {
                    weight: w[0],
                    bias: l.bias.then(|| w[1]),
                },
            ),
            Op::LayerNorm2d(l) => k.layer_norm2d(
                x()?,
                l,
                LayerNormWeights {
                    weight: w[0],
                    bias: w[1],
                },
            ),
            Op::LayerScale(l) => k.layer_scale(x()?, l, w[0]),
            Op::Activation(a) => k.activation(x()?, *a, overwrite),
            Op::LocalResponseNorm(l) => k.local_response_norm(x()?, l),
            Op::MaxPool2d(p) => k.max_pool2d(x()?, p),
            Op::AvgPool2d(p) => k.avg_pool2d(x()?, p),
            Op::AdaptiveAvgPool2d(p) => k.adaptive_avg_pool2d(x()?, p),
            Op::Dropout(d) => {
                if pass.training && pass.dropout && d.p > 0.0 {
                    k.dropout(x()?, d.p)
                } else {
                    x()
                }
            }
            // Recorded for the model's description; the benchmark runs it as the
            // identity (as torchvision does in evaluation).
            Op::StochasticDepth(_) => x(),
            Op::Flatten(_) => k.flatten(x()?),
            Op::Concat(_) => k.concat(inputs.collect()),
            Op::Add(_) => k.add(inputs.collect(), overwrite),
            Op::Mul(_) => {
                let a = x()?;
                k.mul(a, x()?)
            }
            Op::ChannelShuffle(c) => k.channel_shuffle(x()?, c.groups),
            Op::SliceChannels(s) => k.slice_channels(x()?, s),
        }
    }

    /// Every weight (parameters and running statistics), keyed as the Graph names them.
    pub fn export_weights(&self, store: &impl WeightStore) -> Result<Weights> {
        let mut out = Weights::new();
        for (i, slot) in self.weights.iter().enumerate() {
            out.insert(slot.key.clone(), store.read(i)?);
        }
        Ok(out)
    }

    /// Replaces every weight; `weights` must be complete and fit the graph.
    pub fn import_weights(&self, store: &mut impl WeightStore, weights: &Weights) -> Result<()> {
        weights.check(&self.graph, true)?;
        for (i, slot) in self.weights.iter().enumerate() {
            let value = weights
                .get(&slot.key)
                .with_context(|| format!("the weights have no tensor \"{}\"", slot.key))?;
            store.write(i, value)?;
        }
        Ok(())
    }

    /// The gradient of every trainable weight; one the loss did not reach is zero, as
    /// PyTorch accumulates it.
    pub fn weight_gradients(&self, store: &impl WeightStore) -> Result<Weights> {
        let mut out = Weights::new();
        for (i, slot) in self.weights.iter().enumerate() {
            if !slot.trainable {
                continue;
            }
            let grad = match store.gradient(i)? {
                Some(g) => g,
                None => zeros(&slot.shape)?,
            };
            out.insert(slot.key.clone(), grad);
        }
        Ok(out)
    }
}

fn zeros(shape: &[usize]) -> Result<HostTensor> {
    Ok(HostTensor::new(
        shape.to_vec(),
        vec![0.0; shape.iter().product()],
    )?)
}

/// Whether node `index` may overwrite its first input: the op can run in place (ReLU,
/// ReLU6, Add, as torchvision's `ReLU(inplace=True)` and `out += identity`), the input is
/// another node's value that nothing else reads and that is not the network's output,
/// and its producer's backward needs only its own inputs (convolution, batch norm,
/// linear, add), so autograd's saved tensors stay intact.
fn may_overwrite(graph: &Graph, index: usize, readers: &[usize]) -> bool {
    let node = &graph.nodes()[index];
    let in_place_op = match &node.op {
        Op::Activation(a) => a.may_run_in_place(),
        Op::Add(_) => true,
        Op::Conv2d(_)
        | Op::BatchNorm2d(_)
        | Op::LocalResponseNorm(_)
        | Op::MaxPool2d(_)
        | Op::AvgPool2d(_)
        | Op::AdaptiveAvgPool2d(_)
        | Op::Dropout(_)
        | Op::Flatten(_)
        | Op::Linear(_)
        | Op::Concat(_)
        | Op::Mul(_)
        | Op::LayerNorm2d(_)
        | Op::LayerScale(_)
        | Op::ChannelShuffle(_)
        | Op::SliceChannels(_)
        | Op::StochasticDepth(_) => false,
    };
    let Some(Source::Node(producer)) = node.inputs.first().copied() else {
        return false;
    };
    in_place_op
        && readers[producer] == 1
        && producer != graph.output_index()
        && matches!(
            graph.nodes()[producer].op,
            Op::Conv2d(_) | Op::BatchNorm2d(_) | Op::Linear(_) | Op::Add(_)
        )
}

#[cfg(test)]
mod tests;
