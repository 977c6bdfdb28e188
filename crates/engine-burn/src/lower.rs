//! burn's kernels for the engine kit's interpreter, and the weights they read: one burn
//! parameter per weight of the Graph, in a module the optimizer can own.

use anyhow::{anyhow, Result};
use burn::module::{Module, Param, RunningState};
use burn::tensor::activation::{gelu, hard_sigmoid, relu, relu6, sigmoid, silu};
use burn::tensor::module::{
    adaptive_avg_pool2d, avg_pool2d, batch_norm, batch_norm_train, conv2d, layer_norm, linear,
    max_pool2d,
};
use burn::tensor::ops::{AvgPoolOptions, ConvOptions, MaxPoolOptions};
use burn::tensor::{Device, Distribution, Gradients, Tensor, TensorData};
use cnnbench_engine::kit::{
    ConvWeights, Kernels, LayerNormWeights, LinearWeights, NodeOutput, NormWeights, Pass, Program,
    WeightInit, WeightStore,
};
use cnnbench_graph::ops::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d, Conv2d, LayerNorm2d, LayerScale, Linear,
    LocalResponseNorm, MaxPool2d, SliceChannels,
};
use cnnbench_graph::{Activation, Graph, HostTensor, Pad2d, Weights};

/// The weights of a lowered network, grouped by rank so burn's optimizer can own them.
#[derive(Module, Debug)]
pub struct NetParams {
    pub vectors: Vec<Param<Tensor<1>>>,
    /// Linear weights in burn's `[in, out]` layout (PyTorch's transposed).
    pub matrices: Vec<Param<Tensor<2>>>,
    pub kernels: Vec<Param<Tensor<4>>>,
    /// Batch-norm running statistics.
    pub running: Vec<RunningState<Tensor<1>>>,
}

/// Where weight `i` of the program lives in [`NetParams`].
#[derive(Clone, Copy, Debug)]
enum Slot {
    Vector(usize),
    Matrix(usize),
    Kernel(usize),
    Running(usize),
}

/// A tensor flowing between nodes: a batch of feature maps or of flat vectors.
#[derive(Clone, Debug)]
pub enum Value {
    Map(Tensor<4>),
    Flat(Tensor<2>),
}

impl Value {
    pub fn into_map(self) -> Result<Tensor<4>> {
        match self {
            Value::Map(t) => Ok(t),
            Value::Flat(t) => Err(anyhow!(
                "expected a feature map, got a flat tensor {:?}",
                t.dims()
            )),
        }
    }
    pub fn into_flat(self) -> Result<Tensor<2>> {
        match self {
            Value::Flat(t) => Ok(t),
            Value::Map(t) => Ok(t.flatten(1, 3)),
        }
    }
    pub fn dims(&self) -> Vec<usize> {
        match self {
            Value::Map(t) => t.dims().to_vec(),
            Value::Flat(t) => t.dims().to_vec(),
        }
    }
    /// The same values, cut from the autodiff graph (a planted fault).
    #[cfg(test)]
    fn detached(self) -> Value {
        match self {
            Value::Map(t) => Value::Map(t.detach()),
            Value::Flat(t) => Value::Flat(t.detach()),
        }
    }
    /// A standard-normal tensor of the same shape (an upstream gradient).
    pub fn random_like(&self, device: &Device) -> Value {
        let normal = Distribution::Normal(0.0, 1.0);
        match self {
            Value::Map(t) => Value::Map(Tensor::random(t.dims(), normal, device)),
            Value::Flat(t) => Value::Flat(Tensor::random(t.dims(), normal, device)),
        }
    }
    /// Σ self ⊙ other, as a one-element tensor.
    pub fn dot_sum(self, other: Value) -> Result<Tensor<1>> {
        match (self, other) {
            (Value::Map(a), Value::Map(b)) => Ok((a * b).sum()),
            (Value::Flat(a), Value::Flat(b)) => Ok((a * b).sum()),
            _ => Err(anyhow!("gradient and output have different ranks")),
        }
    }
    /// Copies the value to the host.
    pub fn to_host(&self) -> Result<HostTensor> {
        match self {
            Value::Map(t) => to_host(t.clone()),
            Value::Flat(t) => to_host(t.clone()),
        }
    }
    /// A value of the same rank as `self` holding `host`, which must have its shape.
    pub fn like_from_host(&self, host: &HostTensor, device: &Device) -> Result<Value> {
        if host.shape != self.dims() {
            return Err(anyhow!(
                "the gradient has shape {:?} but the output has {:?}",
                host.shape,
                self.dims()
            ));
        }
        Ok(match self {
            Value::Map(_) => Value::Map(from_host(host, device)?),
            Value::Flat(_) => Value::Flat(from_host(host, device)?),
        })
    }

    fn map(self, f: impl FnOnce(Tensor<4>) -> Tensor<4>) -> Result<Value> {
        Ok(Value::Map(f(self.into_map()?)))
    }
}

/// A planted fault, for the conformance suite's own test: it must catch a wrong kernel.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Convolutions use their kernels transposed (H and W swapped).
    TransposedConvKernel,
    /// Convolutions swap their top/bottom and left/right padding (the output keeps
    /// its shape; only uneven padding computes something else).
    SwappedConvPadding,
    /// Sums stop the gradient of every addend after the first (the forward pass is
    /// unchanged: only backward computes something else).
    DetachedAddend,
}

/// Whether `device` (with or without autodiff) is burn-flex, whose kernels the lowering
/// takes as they are; burn's GPU backends (cubecl: wgpu, CUDA) need the work-arounds below.
fn on_flex(device: &Device) -> bool {
    device.clone().inner() == Device::flex()
}

/// How GELU is computed. burn-flex's `gelu` has an exact backward; burn 0.22.1's other
/// backends (cubecl: wgpu, CUDA) inherit the default `gelu_backward`, which differentiates
/// the tanh approximation although the forward is the exact erf form: gradients off by up
/// to 8.7e-4 relative to the function computed. There GELU is composed from tensor ops,
/// `x · (1 + erf(x / √2)) / 2`, whose autodiff gradient is exact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeluForm {
    /// burn's `gelu` activation (one kernel, and its own backward).
    Burn,
    /// erf and elementwise ops, differentiated op by op (GPU runtimes fuse them).
    ErfComposite,
}

impl GeluForm {
    /// The form whose gradient is exact on `device`'s backend.
    pub fn for_device(device: &Device) -> GeluForm {
        if on_flex(device) {
            GeluForm::Burn
        } else {
            GeluForm::ErfComposite
        }
    }

    /// What result files say about it (engine settings).
    pub fn describe(self) -> &'static str {
        match self {
            GeluForm::Burn => "burn's gelu",
            GeluForm::ErfComposite => {
                "x*(1+erf(x/sqrt2))/2 from tensor ops: exact gradient (burn 0.22.1's GPU gelu_backward differentiates the tanh approximation)"
            }
        }
    }

    pub(crate) fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        match self {
            GeluForm::Burn => gelu(x),
            GeluForm::ErfComposite => {
                x.clone()
                    .mul((x / std::f32::consts::SQRT_2).erf().add_scalar(1.0))
                    / 2.0
            }
        }
    }
}

/// How 1×1 feature maps (`[N, C, 1, 1]`) are handed from node to node. burn 0.22.1's
/// fused GPU kernels (burn-cubecl-fusion, on wgpu and CUDA) misread such a map when its
/// unit dimensions carry a channels-last buffer's strides, as a convolution's output or
/// a permuted view does: an elementwise chain that broadcasts a reduction over channels
/// back against it (a layer norm, ConvNeXt's head) computes values off by O(1). A
/// reshape through `[N, C]` gives the map canonical strides without copying it, in the
/// forward pass and, by the reshape's own backward, for the gradient flowing back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitMapLayout {
    /// As each op leaves it (burn-flex reads every layout right).
    AsProduced,
    /// Reshaped to row-major strides after every node.
    Canonical,
}

impl UnitMapLayout {
    /// The handling `device`'s backend needs.
    pub fn for_device(device: &Device) -> UnitMapLayout {
        if on_flex(device) {
            UnitMapLayout::AsProduced
        } else {
            UnitMapLayout::Canonical
        }
    }

    /// What result files say about it (engine settings).
    pub fn describe(self) -> &'static str {
        match self {
            UnitMapLayout::AsProduced => "as each op leaves them",
            UnitMapLayout::Canonical => {
                "reshaped through [N, C] after every node: burn 0.22.1's fused GPU kernels misread channels-last strides on unit dimensions"
            }
        }
    }

    pub(crate) fn settle(self, value: Value) -> Value {
        match (self, value) {
            (UnitMapLayout::Canonical, Value::Map(x)) => {
                let [n, c, h, w] = x.dims();
                if h * w == 1 {
                    let rows: Tensor<2> = x.reshape([n, c]);
                    Value::Map(rows.reshape([n, c, 1, 1]))
                } else {
                    Value::Map(x)
                }
            }
            (_, value) => value,
        }
    }
}

/// A Graph lowered for burn: the kit's program plus where each weight lives.
pub struct Network {
    program: Program,
    slots: Vec<Slot>,
    gelu: GeluForm,
    unit_maps: UnitMapLayout,
    /// Off for `cnnbench verify`, where engines must compute the same function.
    dropout: bool,
    #[cfg(test)]
    pub(crate) fault: Option<Fault>,
}

impl Network {
    /// The interpreter this network runs on (for the node outputs `verify --localize`
    /// compares).
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Lowers `graph` and creates its weights on `device` as PyTorch initialises them.
    pub fn lower(graph: &Graph, device: &Device) -> Result<(Network, NetParams)> {
        let program = Program::new(graph);
        let mut params = NetParams {
            vectors: Vec::new(),
            matrices: Vec::new(),
            kernels: Vec::new(),
            running: Vec::new(),
        };
        let mut slots = Vec::with_capacity(program.weights().len());
        for weight in program.weights() {
            let shape = &weight.shape;
            let slot = match (shape.len(), weight.trainable) {
                (1, false) => {
                    let t = initial::<1>(weight.init, [shape[0]], device);
                    params.running.push(RunningState::new(t));
                    Slot::Running(params.running.len() - 1)
                }
                (1, true) => {
                    let t = initial::<1>(weight.init, [shape[0]], device);
                    params.vectors.push(Param::from_tensor(t));
                    Slot::Vector(params.vectors.len() - 1)
                }
                (2, true) => {
                    let t = initial::<2>(weight.init, [shape[1], shape[0]], device);
                    params.matrices.push(Param::from_tensor(t));
                    Slot::Matrix(params.matrices.len() - 1)
                }
                (4, true) => {
                    let dims = [shape[0], shape[1], shape[2], shape[3]];
                    params.kernels.push(Param::from_tensor(initial::<4>(
                        weight.init,
                        dims,
                        device,
                    )));
                    Slot::Kernel(params.kernels.len() - 1)
                }
                _ => {
                    return Err(anyhow!(
                        "weight \"{}\" of shape {shape:?} has no place in the burn engine",
                        weight.key
                    ))
                }
            };
            slots.push(slot);
        }
        let network = Network {
            program,
            slots,
            gelu: GeluForm::for_device(device),
            unit_maps: UnitMapLayout::for_device(device),
            dropout: true,
            #[cfg(test)]
            fault: None,
        };
        Ok((network, params))
    }

    /// Makes dropout the identity in training too.
    pub fn disable_dropout(&mut self) {
        self.dropout = false;
    }

    /// Elements of one example's output (the number of classes for a classifier).
    pub fn output_features(&self) -> usize {
        self.program.graph().output_shape().elements() as usize
    }

    /// Runs the network on a batch `[N, C, H, W]`. Layers train when `input` lives on an
    /// autodiff device and evaluate otherwise.
    pub fn forward(&self, params: &NetParams, input: Tensor<4>) -> Result<Value> {
        let pass = Pass {
            training: input.device().is_autodiff(),
            dropout: self.dropout,
        };
        let kernels = BurnKernels {
            params,
            slots: &self.slots,
            gelu: self.gelu,
            unit_maps: self.unit_maps,
            #[cfg(test)]
            fault: self.fault,
        };
        self.program.forward(&kernels, Value::Map(input), pass)
    }

    /// Every weight (parameters and running statistics) in PyTorch's layout.
    pub fn export_weights(&self, params: &NetParams) -> Result<Weights> {
        self.program.export_weights(&self.store(params, None))
    }

    /// The gradient arriving at every node in the last backward pass, read from the
    /// probes the kit added ([`Program::keep_node_gradients`]).
    pub fn node_gradients(&self, grads: &Gradients) -> Result<Vec<NodeOutput>> {
        self.program
            .gradient_probes::<Value>()?
            .into_iter()
            .map(|(node, probe)| {
                // A node the loss does not reach (a detached path) gets zeros.
                let value = match &probe {
                    Value::Map(t) => t.grad(grads).map(to_host),
                    Value::Flat(t) => t.grad(grads).map(to_host),
                }
                .unwrap_or_else(|| Ok(HostTensor::zeros(probe.dims())))?;
                Ok(NodeOutput { node, value })
            })
            .collect()
    }

    /// The gradient of every trainable weight, in PyTorch's layout.
    pub fn weight_gradients(&self, params: &NetParams, grads: &Gradients) -> Result<Weights> {
        self.program
            .weight_gradients(&self.store(params, Some(grads)))
    }

    /// Replaces every weight; `weights` must be complete and fit the graph.
    pub fn import_weights(
        &self,
        params: &mut NetParams,
        weights: &Weights,
        device: &Device,
    ) -> Result<()> {
        let mut store = Store {
            params: Target::Mut(params, device),
            slots: &self.slots,
            grads: None,
        };
        self.program.import_weights(&mut store, weights)
    }

    fn store<'a>(&'a self, params: &'a NetParams, grads: Option<&'a Gradients>) -> Store<'a> {
        Store {
            params: Target::Ref(params),
            slots: &self.slots,
            grads,
        }
    }
}

fn initial<const D: usize>(init: WeightInit, dims: [usize; D], device: &Device) -> Tensor<D> {
    match init {
        WeightInit::Uniform { bound } => {
            Tensor::random(dims, Distribution::Uniform(-bound, bound), device)
        }
        WeightInit::Constant(v) => Tensor::full(dims, v, device),
    }
}

struct BurnKernels<'a> {
    params: &'a NetParams,
    slots: &'a [Slot],
    gelu: GeluForm,
    unit_maps: UnitMapLayout,
    #[cfg(test)]
    fault: Option<Fault>,
}

impl BurnKernels<'_> {
    fn vector(&self, i: usize) -> Result<Tensor<1>> {
        match self.slots[i] {
            Slot::Vector(k) => Ok(self.params.vectors[k].val()),
            Slot::Running(k) => Ok(self.params.running[k].value()),
            other => Err(anyhow!("weight {i} is a {other:?}, not a vector")),
        }
    }
    fn running(&self, i: usize) -> Result<&RunningState<Tensor<1>>> {
        match self.slots[i] {
            Slot::Running(k) => Ok(&self.params.running[k]),
            other => Err(anyhow!(
                "weight {i} is a {other:?}, not a running statistic"
            )),
        }
    }
    fn kernel(&self, i: usize) -> Result<Tensor<4>> {
        match self.slots[i] {
            Slot::Kernel(k) => Ok(self.params.kernels[k].val()),
            other => Err(anyhow!("weight {i} is a {other:?}, not a kernel")),
        }
    }
    fn matrix(&self, i: usize) -> Result<Tensor<2>> {
        match self.slots[i] {
            Slot::Matrix(k) => Ok(self.params.matrices[k].val()),
            other => Err(anyhow!("weight {i} is a {other:?}, not a matrix")),
        }
    }
}

fn pad_pairs(p: Pad2d) -> [(usize, usize); 2] {
    [(p.top, p.bottom), (p.left, p.right)]
}

impl Kernels for BurnKernels<'_> {
    type Value = Value;

    fn to_host(&self, value: &Value) -> Result<HostTensor> {
        value.to_host()
    }

    fn gradient_probe(&self, value: Value) -> Result<(Value, Value)> {
        Ok(match value {
            Value::Map(t) => {
                let probe = t.zeros_like().require_grad();
                (Value::Map(t + probe.clone()), Value::Map(probe))
            }
            Value::Flat(t) => {
                let probe = t.zeros_like().require_grad();
                (Value::Flat(t + probe.clone()), Value::Flat(probe))
            }
        })
    }

    fn conv2d(&self, x: Value, c: &Conv2d, w: ConvWeights) -> Result<Value> {
        let weight = self.kernel(w.weight)?;
        #[cfg(test)]
        let weight = if self.fault == Some(Fault::TransposedConvKernel) {
            weight.swap_dims(2, 3)
        } else {
            weight
        };
        let bias = w.bias.map(|b| self.vector(b)).transpose()?;
        #[allow(unused_mut)]
        let mut padding = c.padding;
        #[cfg(test)]
        if self.fault == Some(Fault::SwappedConvPadding) {
            padding = Pad2d {
                top: padding.bottom,
                bottom: padding.top,
                left: padding.right,
                right: padding.left,
            };
        }
        let options = ConvOptions::new_with_padding(
            c.stride.as_array(),
            pad_pairs(padding),
            c.dilation.as_array(),
            c.groups,
        );
        x.map(|x| conv2d(x, weight, bias, options))
    }

    fn batch_norm2d(
        &self,
        x: Value,
        b: &BatchNorm2d,
        w: NormWeights,
        training: bool,
    ) -> Result<Value> {
        let x = x.into_map()?;
        let (gamma, beta) = match w.affine {
            Some((g, s)) => (self.vector(g)?, self.vector(s)?),
            None => {
                let device = x.device();
                (
                    Tensor::ones([b.num_features], &device),
                    Tensor::zeros([b.num_features], &device),
                )
            }
        };
        let (mean, var) = (self.running(w.running_mean)?, self.running(w.running_var)?);
        if !training {
            let out = batch_norm(x, gamma, beta, mean.value(), var.value(), b.eps);
            return Ok(Value::Map(out));
        }
        let [n, _, h, w] = x.dims();
        let result = batch_norm_train(x, gamma, beta, b.eps);
        let m = b.momentum;
        let update = |state: &RunningState<Tensor<1>>, batch: Tensor<1>| {
            let next = state
                .value_sync()
                .mul_scalar(1.0 - m)
                .add(batch.detach().mul_scalar(m));
            state.update(next.detach());
        };
        // burn returns the biased batch variance; PyTorch's running variance follows the
        // unbiased one (n / (n − 1) times larger, n values per channel).
        let count = (n * h * w) as f64;
        let unbiased = if count > 1.0 {
            count / (count - 1.0)
        } else {
            1.0
        };
        update(mean, result.mean);
        update(var, result.variance.mul_scalar(unbiased));
        Ok(Value::Map(result.output))
    }

    fn linear(&self, x: Value, _: &Linear, w: LinearWeights) -> Result<Value> {
        let weight = self.matrix(w.weight)?;
        let bias = w.bias.map(|b| self.vector(b)).transpose()?;
        Ok(Value::Flat(linear(x.into_flat()?, weight, bias)))
    }

    fn layer_norm2d(&self, x: Value, l: &LayerNorm2d, w: LayerNormWeights) -> Result<Value> {
        let (gamma, beta) = (self.vector(w.weight)?, self.vector(w.bias)?);
        x.map(|x| {
            let [n, c, h, w] = x.dims();
            if h * w == 1 {
                // Already one row of channels per image: no permutes, whose unit
                // dimensions' strides burn's fused GPU kernels misread (UnitMapLayout).
                let rows: Tensor<2> = x.reshape([n, c]);
                layer_norm(rows, gamma, Some(beta), l.eps).reshape([n, c, 1, 1])
            } else {
                // Channels last, normalise, channels first again.
                layer_norm(x.permute([0, 2, 3, 1]), gamma, Some(beta), l.eps).permute([0, 3, 1, 2])
            }
        })
    }

    fn layer_scale(&self, x: Value, _: &LayerScale, scale: usize) -> Result<Value> {
        let scale = self.vector(scale)?;
        let [c] = scale.dims();
        x.map(|x| x.mul(scale.reshape([1, c, 1, 1])))
    }

    /// burn reuses a uniquely owned buffer by itself, so the overwrite hint is not needed.
    fn activation(&self, x: Value, act: Activation, _overwrite: bool) -> Result<Value> {
        fn apply<const D: usize>(act: Activation, gelu: GeluForm, x: Tensor<D>) -> Tensor<D> {
            match act {
                Activation::Relu => relu(x),
                Activation::Relu6 => relu6(x),
                Activation::Silu => silu(x),
                Activation::Gelu => gelu.apply(x),
                // PyTorch: x · relu6(x + 3) / 6 and relu6(x + 3) / 6.
                Activation::Hardswish => x.clone() * hard_sigmoid(x, 1.0 / 6.0, 0.5),
                Activation::Hardsigmoid => hard_sigmoid(x, 1.0 / 6.0, 0.5),
                Activation::Sigmoid => sigmoid(x),
            }
        }
        Ok(match x {
            Value::Map(t) => Value::Map(apply(act, self.gelu, t)),
            Value::Flat(t) => Value::Flat(apply(act, self.gelu, t)),
        })
    }

    fn local_response_norm(&self, x: Value, l: &LocalResponseNorm) -> Result<Value> {
        x.map(|x| local_response_norm(x, l.size, l.alpha, l.beta, l.k))
    }

    fn max_pool2d(&self, x: Value, p: &MaxPool2d) -> Result<Value> {
        let options = MaxPoolOptions::new(p.kernel.as_array())
            .with_stride(p.effective_stride().as_array())
            .with_padding_pairs(pad_pairs(p.padding))
            .with_ceil_mode(p.ceil_mode);
        x.map(|x| max_pool2d(x, options))
    }

    fn avg_pool2d(&self, x: Value, p: &AvgPool2d) -> Result<Value> {
        let options = AvgPoolOptions::new(p.kernel.as_array())
            .with_stride(p.effective_stride().as_array())
            .with_padding_pairs(pad_pairs(p.padding))
            .with_ceil_mode(p.ceil_mode)
            .with_count_include_pad(p.count_include_pad);
        x.map(|x| avg_pool2d(x, options))
    }

    fn adaptive_avg_pool2d(&self, x: Value, p: &AdaptiveAvgPool2d) -> Result<Value> {
        x.map(|x| adaptive_avg_pool2d(x, p.output.as_array()))
    }

    fn dropout(&self, x: Value, p: f64) -> Result<Value> {
        Ok(match x {
            Value::Map(t) => Value::Map(dropout(t, p)),
            Value::Flat(t) => Value::Flat(dropout(t, p)),
        })
    }

    fn flatten(&self, x: Value) -> Result<Value> {
        Ok(Value::Flat(x.into_flat()?))
    }

    fn concat(&self, xs: Vec<Value>) -> Result<Value> {
        let maps = xs
            .into_iter()
            .map(Value::into_map)
            .collect::<Result<Vec<_>>>()?;
        Ok(Value::Map(Tensor::cat(maps, 1)))
    }

    fn add(&self, xs: Vec<Value>, _overwrite: bool) -> Result<Value> {
        let mut xs = xs.into_iter();
        let mut acc = xs.next().ok_or_else(|| anyhow!("add has no inputs"))?;
        for x in xs {
            #[cfg(test)]
            let x = if self.fault == Some(Fault::DetachedAddend) {
                x.detached()
            } else {
                x
            };
            acc = match (acc, x) {
                (Value::Map(a), Value::Map(b)) => Value::Map(a + b),
                (Value::Flat(a), Value::Flat(b)) => Value::Flat(a + b),
                _ => return Err(anyhow!("adds tensors of different ranks")),
            };
        }
        Ok(acc)
    }

    fn mul(&self, a: Value, b: Value) -> Result<Value> {
        match (a, b) {
            (Value::Map(a), Value::Map(b)) => Ok(Value::Map(broadcast_mul(a, b))),
            (Value::Flat(a), Value::Flat(b)) => Ok(Value::Flat(a * b)),
            _ => Err(anyhow!("multiplies tensors of different ranks")),
        }
    }

    fn channel_shuffle(&self, x: Value, groups: usize) -> Result<Value> {
        x.map(|x| {
            let [n, c, h, w] = x.dims();
            let x: Tensor<5> = x.reshape([n, groups, c / groups, h, w]);
            x.swap_dims(1, 2).reshape([n, c, h, w])
        })
    }

    fn slice_channels(&self, x: Value, s: &SliceChannels) -> Result<Value> {
        x.map(|x| x.narrow(1, s.start, s.end - s.start))
    }

    fn settle(&self, value: Value) -> Result<Value> {
        Ok(self.unit_maps.settle(value))
    }
}

/// `a ⊙ b` where either side may have size 1 in a dimension the other does not.
fn broadcast_mul(a: Tensor<4>, b: Tensor<4>) -> Tensor<4> {
    let (da, db) = (a.dims(), b.dims());
    if da == db {
        return a * b;
    }
    let mut out = [0usize; 4];
    for (o, (x, y)) in out.iter_mut().zip(da.iter().zip(db.iter())) {
        *o = (*x).max(*y);
    }
    let a = if da == out { a } else { a.expand(out) };
    let b = if db == out { b } else { b.expand(out) };
    a * b
}

/// Inverted dropout: zero each element with probability `p`, scale the rest by 1/(1−p).
fn dropout<const D: usize>(x: Tensor<D>, p: f64) -> Tensor<D> {
    let keep = 1.0 - p;
    let mask = x.random_like(Distribution::Bernoulli(keep));
    x * mask * (1.0 / keep)
}

/// Cross-channel LRN as PyTorch composes `local_response_norm` (and as Caffe defines it):
/// `x / (k + alpha · mean_{window of size}(x²))^beta`, the window centred on the channel
/// and zero-padded at the ends.
fn local_response_norm(x: Tensor<4>, size: usize, alpha: f64, beta: f64, k: f64) -> Tensor<4> {
    let [n, c, h, w] = x.dims();
    let squares = (x.clone() * x.clone()).reshape([n, 1, c, h * w]);
    let window = AvgPoolOptions::new([size, 1])
        .with_stride([1, 1])
        .with_padding_pairs([(size / 2, (size - 1) / 2), (0, 0)])
        .with_count_include_pad(true);
    let mean = avg_pool2d(squares, window).reshape([n, c, h, w]);
    let denominator = (mean * alpha + k).powf_scalar(beta);
    x / denominator
}

enum Target<'a> {
    Ref(&'a NetParams),
    Mut(&'a mut NetParams, &'a Device),
}

/// [`NetParams`] seen by the kit as host tensors in PyTorch's layout.
struct Store<'a> {
    params: Target<'a>,
    slots: &'a [Slot],
    grads: Option<&'a Gradients>,
}

impl Store<'_> {
    fn params(&self) -> &NetParams {
        match &self.params {
            Target::Ref(p) => p,
            Target::Mut(p, _) => p,
        }
    }
}

/// `new` in place of a parameter's value, keeping whether it trains.
fn replace_param<const D: usize>(param: &mut Param<Tensor<D>>, new: Tensor<D>) {
    let trains = param.is_require_grad();
    *param = param.clone().map(|_| new.set_require_grad(trains));
}

impl WeightStore for Store<'_> {
    fn read(&self, i: usize) -> Result<HostTensor> {
        let p = self.params();
        match self.slots[i] {
            Slot::Vector(k) => to_host(p.vectors[k].val()),
            Slot::Matrix(k) => to_host(p.matrices[k].val().transpose()),
            Slot::Kernel(k) => to_host(p.kernels[k].val()),
            // Synchronised: the last training pass's update may still be pending.
            Slot::Running(k) => to_host(p.running[k].value_sync()),
        }
    }

    fn write(&mut self, i: usize, value: &HostTensor) -> Result<()> {
        let Target::Mut(p, device) = &mut self.params else {
            return Err(anyhow!("these weights are read-only"));
        };
        let device = *device;
        match self.slots[i] {
            Slot::Vector(k) => replace_param(&mut p.vectors[k], from_host(value, device)?),
            Slot::Matrix(k) => {
                let weight: Tensor<2> = from_host(value, device)?;
                replace_param(&mut p.matrices[k], weight.transpose());
            }
            Slot::Kernel(k) => replace_param(&mut p.kernels[k], from_host(value, device)?),
            Slot::Running(k) => p.running[k] = RunningState::new(from_host(value, device)?),
        }
        Ok(())
    }

    fn gradient(&self, i: usize) -> Result<Option<HostTensor>> {
        let grads = self
            .grads
            .ok_or_else(|| anyhow!("no gradients: run backward first"))?;
        let p = self.params();
        Ok(match self.slots[i] {
            Slot::Vector(k) => p.vectors[k].val().grad(grads).map(to_host).transpose()?,
            Slot::Matrix(k) => p.matrices[k]
                .val()
                .grad(grads)
                .map(|g| to_host(g.transpose()))
                .transpose()?,
            Slot::Kernel(k) => p.kernels[k].val().grad(grads).map(to_host).transpose()?,
            Slot::Running(_) => None,
        })
    }
}

/// Copies a tensor to the host in row-major order. A device's failure to compute it (a
/// GPU out of memory, say) is an error here, not a panic.
pub fn to_host<const D: usize>(tensor: Tensor<D>) -> Result<HostTensor> {
    let shape = tensor.dims().to_vec();
    let data = tensor
        .try_into_data()
        .map_err(|e| {
            // burn lists every queued operation the failure skipped: keep the causes.
            let causes: Vec<String> = e
                .to_string()
                .lines()
                .filter(|line| !line.trim_start().starts_with("skipped"))
                .map(str::to_string)
                .collect();
            anyhow!(
                "the device could not compute a tensor: {}",
                causes.join("\n")
            )
        })?
        .convert::<f32>()
        .try_to_vec::<f32>()
        .map_err(|e| anyhow!("cannot read a tensor back from burn: {e:?}"))?;
    Ok(HostTensor::new(shape, data)?)
}

/// A burn tensor with a host tensor's values; its rank must be `D`.
pub fn from_host<const D: usize>(host: &HostTensor, device: &Device) -> Result<Tensor<D>> {
    if host.shape.len() != D {
        return Err(anyhow!(
            "expected a rank-{D} tensor, got shape {:?}",
            host.shape
        ));
    }
    Ok(Tensor::from_data(
        TensorData::new(host.data.clone(), host.shape.clone()),
        device,
    ))
}
