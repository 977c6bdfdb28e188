//! Lowering of Graph nodes onto burn modules and tensor ops, and the interpreter that
//! runs them.

use anyhow::{anyhow, Result};
use burn::module::RunningState;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::{
    BatchNorm, BatchNormConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig, PaddingConfig2d,
};
use burn::tensor::activation::{gelu, hard_sigmoid, relu, relu6, sigmoid, silu};
use burn::tensor::module::{adaptive_avg_pool2d, avg_pool2d, max_pool2d};
use burn::tensor::ops::{AvgPoolOptions, MaxPoolOptions};
use burn::tensor::{Device, Distribution, Gradients, Tensor, TensorData};
use cnnbench_graph::{Graph, HostTensor, Op, Pad2d, Source, Weights};

/// The trainable state of a lowered network: one burn module per parameterised node.
#[derive(Module, Debug)]
pub struct NetParams {
    pub convs: Vec<Conv2d>,
    pub norms: Vec<BatchNorm>,
    pub linears: Vec<Linear>,
    /// Channel LayerNorms (ConvNeXt), applied channels-last.
    pub layer_norms: Vec<LayerNorm>,
    /// Per-channel scales (ConvNeXt's layer scale).
    pub scales: Vec<Param<Tensor<1>>>,
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
}

/// Element-wise activations, which apply to feature maps and flat vectors alike.
#[derive(Clone, Copy)]
enum Activation {
    Relu,
    Relu6,
    Silu,
    Gelu,
    Hardswish,
    Hardsigmoid,
    Sigmoid,
}

impl Activation {
    fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Activation::Relu => relu(x),
            Activation::Relu6 => relu6(x),
            Activation::Silu => silu(x),
            Activation::Gelu => gelu(x),
            // PyTorch: x · relu6(x + 3) / 6 and relu6(x + 3) / 6.
            Activation::Hardswish => x.clone() * hard_sigmoid(x, 1.0 / 6.0, 0.5),
            Activation::Hardsigmoid => hard_sigmoid(x, 1.0 / 6.0, 0.5),
            Activation::Sigmoid => sigmoid(x),
        }
    }
}

enum Lowered {
    Conv(usize),
    /// The index and whether it has learned scale and shift.
    Norm(usize, bool),
    Linear(usize),
    LayerNorm(usize),
    Scale(usize),
    Act(Activation),
    Mul,
    Shuffle(usize),
    Slice(usize, usize),
    Identity,
    Lrn {
        size: usize,
        alpha: f64,
        beta: f64,
        k: f64,
    },
    MaxPool(MaxPoolOptions<2>),
    AvgPool(AvgPoolOptions<2>),
    AdaptiveAvgPool([usize; 2]),
    Dropout(f64),
    Flatten,
    Concat,
    Add,
}

struct Step {
    name: String,
    op: Lowered,
    inputs: Vec<Source>,
    /// Nodes whose last reader is this step: their values are dropped after it runs.
    frees: Vec<usize>,
}

/// A Graph lowered for burn: the steps to interpret, without the parameters (which live
/// in [`NetParams`] so an optimizer can own them).
pub struct Network {
    steps: Vec<Step>,
    output: usize,
    output_features: usize,
    /// Off for `cnnbench verify`, where engines must compute the same function.
    dropout: bool,
}

fn pad_pairs(p: Pad2d) -> [(usize, usize); 2] {
    [(p.top, p.bottom), (p.left, p.right)]
}

impl Network {
    /// Lowers every node; parameters are initialised on `device` with burn's defaults
    /// (Kaiming-uniform convolutions and linear layers, unit batch-norm scale).
    pub fn lower(graph: &Graph, device: &Device) -> Result<(Network, NetParams)> {
        let mut params = NetParams {
            convs: Vec::new(),
            norms: Vec::new(),
            linears: Vec::new(),
            layer_norms: Vec::new(),
            scales: Vec::new(),
        };
        let frees = graph.values_to_free();
        let mut steps = Vec::with_capacity(graph.nodes().len());
        for (node, frees) in graph.nodes().iter().zip(frees) {
            let op = match &node.op {
                Op::Conv2d(c) => {
                    let conv =
                        Conv2dConfig::new([c.in_channels, c.out_channels], c.kernel.as_array())
                            .with_stride(c.stride.as_array())
                            .with_dilation(c.dilation.as_array())
                            .with_groups(c.groups)
                            .with_padding(PaddingConfig2d::Explicit(
                                c.padding.top,
                                c.padding.left,
                                c.padding.bottom,
                                c.padding.right,
                            ))
                            .with_bias(c.bias)
                            .init(device);
                    params.convs.push(conv);
                    Lowered::Conv(params.convs.len() - 1)
                }
                Op::BatchNorm2d(b) => {
                    let mut norm = BatchNormConfig::new(b.num_features)
                        .with_epsilon(b.eps)
                        .with_momentum(b.momentum)
                        .init(device);
                    if !b.affine {
                        norm.gamma = norm.gamma.set_require_grad(false);
                        norm.beta = norm.beta.set_require_grad(false);
                    }
                    params.norms.push(norm);
                    Lowered::Norm(params.norms.len() - 1, b.affine)
                }
                Op::Linear(l) => {
                    let linear = LinearConfig::new(l.in_features, l.out_features)
                        .with_bias(l.bias)
                        .init(device);
                    params.linears.push(linear);
                    Lowered::Linear(params.linears.len() - 1)
                }
                Op::LayerNorm2d(l) => {
                    let norm = LayerNormConfig::new(l.num_channels)
                        .with_epsilon(l.eps)
                        .init(device);
                    params.layer_norms.push(norm);
                    Lowered::LayerNorm(params.layer_norms.len() - 1)
                }
                Op::LayerScale(l) => {
                    let scale = Tensor::<1>::full([l.channels], l.init, device);
                    params.scales.push(Param::from_tensor(scale));
                    Lowered::Scale(params.scales.len() - 1)
                }
                Op::Relu(_) => Lowered::Act(Activation::Relu),
                Op::Relu6(_) => Lowered::Act(Activation::Relu6),
                Op::Silu(_) => Lowered::Act(Activation::Silu),
                Op::Gelu(_) => Lowered::Act(Activation::Gelu),
                Op::Hardswish(_) => Lowered::Act(Activation::Hardswish),
                Op::Hardsigmoid(_) => Lowered::Act(Activation::Hardsigmoid),
                Op::Sigmoid(_) => Lowered::Act(Activation::Sigmoid),
                Op::Mul(_) => Lowered::Mul,
                Op::ChannelShuffle(c) => Lowered::Shuffle(c.groups),
                Op::SliceChannels(c) => Lowered::Slice(c.start, c.end),
                // Recorded for the model's description; the benchmark runs it as the
                // identity (as torchvision does in evaluation).
                Op::StochasticDepth(_) => Lowered::Identity,
                Op::LocalResponseNorm(l) => Lowered::Lrn {
                    size: l.size,
                    alpha: l.alpha,
                    beta: l.beta,
                    k: l.k,
                },
                Op::MaxPool2d(p) => Lowered::MaxPool(
                    MaxPoolOptions::new(p.kernel.as_array())
                        .with_stride(p.effective_stride().as_array())
                        .with_padding_pairs(pad_pairs(p.padding))
                        .with_ceil_mode(p.ceil_mode),
                ),
                Op::AvgPool2d(p) => Lowered::AvgPool(
                    AvgPoolOptions::new(p.kernel.as_array())
                        .with_stride(p.effective_stride().as_array())
                        .with_padding_pairs(pad_pairs(p.padding))
                        .with_ceil_mode(p.ceil_mode)
                        .with_count_include_pad(p.count_include_pad),
                ),
                Op::AdaptiveAvgPool2d(p) => Lowered::AdaptiveAvgPool(p.output.as_array()),
                Op::Dropout(d) => Lowered::Dropout(d.p),
                Op::Flatten(_) => Lowered::Flatten,
                Op::Concat(_) => Lowered::Concat,
                Op::Add(_) => Lowered::Add,
            };
            steps.push(Step {
                name: node.name.clone(),
                op,
                inputs: node.inputs.clone(),
                frees,
            });
        }
        let network = Network {
            steps,
            output: graph.output_index(),
            output_features: graph.output_shape().elements() as usize,
            dropout: true,
        };
        Ok((network, params))
    }

    /// Makes dropout the identity in training too.
    pub fn disable_dropout(&mut self) {
        self.dropout = false;
    }

    /// Elements of one example's output (the number of classes for a classifier).
    pub fn output_features(&self) -> usize {
        self.output_features
    }

    /// Runs the network on a batch `[N, C, H, W]`. Layers train when `input` lives on an
    /// autodiff device and evaluate otherwise.
    pub fn forward(&self, params: &NetParams, input: Tensor<4>) -> Result<Value> {
        let training = input.device().is_autodiff();
        let input = Value::Map(input);
        let mut values: Vec<Option<Value>> = vec![None; self.steps.len()];
        for (i, step) in self.steps.iter().enumerate() {
            let fetch = |s: &Source| -> Result<Value> {
                match s {
                    Source::Input => Ok(input.clone()),
                    Source::Node(j) => values[*j]
                        .clone()
                        .ok_or_else(|| anyhow!("node \"{}\" read a freed value", step.name)),
                }
            };
            let first = fetch(&step.inputs[0])?;
            let out = match &step.op {
                Lowered::Conv(k) => Value::Map(params.convs[*k].forward(first.into_map()?)),
                Lowered::Norm(k, _) => Value::Map(params.norms[*k].forward(first.into_map()?)),
                Lowered::Linear(k) => Value::Flat(params.linears[*k].forward(first.into_flat()?)),
                Lowered::LayerNorm(k) => {
                    // Channels last, normalise, channels first again.
                    let x = first.into_map()?.permute([0, 2, 3, 1]);
                    Value::Map(params.layer_norms[*k].forward(x).permute([0, 3, 1, 2]))
                }
                Lowered::Scale(k) => {
                    let scale = params.scales[*k].val();
                    let [c] = scale.dims();
                    Value::Map(first.into_map()?.mul(scale.reshape([1, c, 1, 1])))
                }
                Lowered::Act(a) => match first {
                    Value::Map(t) => Value::Map(a.apply(t)),
                    Value::Flat(t) => Value::Flat(a.apply(t)),
                },
                Lowered::Mul => {
                    let other = fetch(&step.inputs[1])?;
                    match (first, other) {
                        (Value::Map(a), Value::Map(b)) => Value::Map(broadcast_mul(a, b)),
                        (Value::Flat(a), Value::Flat(b)) => Value::Flat(a * b),
                        _ => {
                            return Err(anyhow!(
                                "node \"{}\" multiplies tensors of different ranks",
                                step.name
                            ))
                        }
                    }
                }
                Lowered::Shuffle(groups) => {
                    let x = first.into_map()?;
                    let [n, c, h, w] = x.dims();
                    let x: Tensor<5> = x.reshape([n, *groups, c / groups, h, w]);
                    Value::Map(x.swap_dims(1, 2).reshape([n, c, h, w]))
                }
                Lowered::Slice(start, end) => {
                    Value::Map(first.into_map()?.narrow(1, *start, end - start))
                }
                Lowered::Identity => first,
                Lowered::Lrn {
                    size,
                    alpha,
                    beta,
                    k,
                } => Value::Map(local_response_norm(
                    first.into_map()?,
                    *size,
                    *alpha,
                    *beta,
                    *k,
                )),
                Lowered::MaxPool(o) => Value::Map(max_pool2d(first.into_map()?, o.clone())),
                Lowered::AvgPool(o) => Value::Map(avg_pool2d(first.into_map()?, o.clone())),
                Lowered::AdaptiveAvgPool(size) => {
                    Value::Map(adaptive_avg_pool2d(first.into_map()?, *size))
                }
                Lowered::Dropout(p) => {
                    if training && self.dropout && *p > 0.0 {
                        match first {
                            Value::Map(t) => Value::Map(dropout(t, *p)),
                            Value::Flat(t) => Value::Flat(dropout(t, *p)),
                        }
                    } else {
                        first
                    }
                }
                Lowered::Flatten => Value::Flat(first.into_flat()?),
                Lowered::Concat => {
                    let mut maps = vec![first.into_map()?];
                    for s in &step.inputs[1..] {
                        maps.push(fetch(s)?.into_map()?);
                    }
                    Value::Map(Tensor::cat(maps, 1))
                }
                Lowered::Add => {
                    let mut acc = first;
                    for s in &step.inputs[1..] {
                        acc = match (acc, fetch(s)?) {
                            (Value::Map(a), Value::Map(b)) => Value::Map(a + b),
                            (Value::Flat(a), Value::Flat(b)) => Value::Flat(a + b),
                            _ => {
                                return Err(anyhow!(
                                    "node \"{}\" adds tensors of different ranks",
                                    step.name
                                ))
                            }
                        };
                    }
                    acc
                }
            };
            values[i] = Some(out);
            for &j in &step.frees {
                values[j] = None;
            }
        }
        values[self.output]
            .take()
            .ok_or_else(|| anyhow!("the output node produced no value"))
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

/// One weight tensor of [`NetParams`], seen through the PyTorch layout of its key.
enum Slot<'a> {
    Vector(&'a Param<Tensor<1>>),
    /// A burn `Linear` weight, stored `[in, out]`: transposed to and from PyTorch's.
    LinearWeight(&'a Param<Tensor<2>>),
    Kernel(&'a Param<Tensor<4>>),
    Running(&'a RunningState<Tensor<1>>),
}

impl Value {
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
}

/// Copies a tensor to the host in row-major order.
pub fn to_host<const D: usize>(tensor: Tensor<D>) -> Result<HostTensor> {
    let shape = tensor.dims().to_vec();
    let data = tensor
        .into_data()
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

/// `new` in place of a parameter's value, keeping whether it trains.
fn replace_param<const D: usize>(param: &mut Param<Tensor<D>>, new: Tensor<D>) {
    let trains = param.is_require_grad();
    *param = param.clone().map(|_| new.set_require_grad(trains));
}

impl Network {
    /// Every weight of the network with its `<node>.<tensor>` key, in node order.
    fn slots<'a>(&self, params: &'a NetParams) -> Vec<(String, Slot<'a>)> {
        let mut slots = Vec::new();
        for step in &self.steps {
            let key = |name: &str| format!("{}.{name}", step.name);
            match step.op {
                Lowered::Conv(k) => {
                    let conv = &params.convs[k];
                    slots.push((key("weight"), Slot::Kernel(&conv.weight)));
                    if let Some(bias) = &conv.bias {
                        slots.push((key("bias"), Slot::Vector(bias)));
                    }
                }
                Lowered::Norm(k, affine) => {
                    let norm = &params.norms[k];
                    if affine {
                        slots.push((key("weight"), Slot::Vector(&norm.gamma)));
                        slots.push((key("bias"), Slot::Vector(&norm.beta)));
                    }
                    slots.push((key("running_mean"), Slot::Running(&norm.running_mean)));
                    slots.push((key("running_var"), Slot::Running(&norm.running_var)));
                }
                Lowered::Linear(k) => {
                    let linear = &params.linears[k];
                    slots.push((key("weight"), Slot::LinearWeight(&linear.weight)));
                    if let Some(bias) = &linear.bias {
                        slots.push((key("bias"), Slot::Vector(bias)));
                    }
                }
                Lowered::LayerNorm(k) => {
                    let norm = &params.layer_norms[k];
                    slots.push((key("weight"), Slot::Vector(&norm.gamma)));
                    if let Some(beta) = &norm.beta {
                        slots.push((key("bias"), Slot::Vector(beta)));
                    }
                }
                Lowered::Scale(k) => slots.push((key("scale"), Slot::Vector(&params.scales[k]))),
                _ => {}
            }
        }
        slots
    }

    /// Every weight (parameters and running statistics) in PyTorch's layout.
    pub fn export_weights(&self, params: &NetParams) -> Result<Weights> {
        let mut weights = Weights::new();
        for (key, slot) in self.slots(params) {
            let host = match slot {
                Slot::Vector(p) => to_host(p.val()),
                Slot::LinearWeight(p) => to_host(p.val().transpose()),
                Slot::Kernel(p) => to_host(p.val()),
                Slot::Running(r) => to_host(r.value()),
            }?;
            weights.insert(key, host);
        }
        Ok(weights)
    }

    /// The gradient of every trainable weight, in PyTorch's layout. A weight the loss
    /// does not reach gets a zero gradient, as PyTorch would accumulate.
    pub fn weight_gradients(&self, params: &NetParams, grads: &Gradients) -> Result<Weights> {
        fn grad_of<const D: usize>(p: &Param<Tensor<D>>, grads: &Gradients) -> Tensor<D> {
            let value = p.val();
            value.grad(grads).unwrap_or_else(|| value.zeros_like())
        }
        let mut weights = Weights::new();
        for (key, slot) in self.slots(params) {
            let host = match slot {
                Slot::Vector(p) => to_host(grad_of(p, grads)),
                Slot::LinearWeight(p) => to_host(grad_of(p, grads).transpose()),
                Slot::Kernel(p) => to_host(grad_of(p, grads)),
                Slot::Running(_) => continue,
            }?;
            weights.insert(key, host);
        }
        Ok(weights)
    }

    /// Replaces every weight with the given values (which must be complete and checked
    /// against the graph by the caller).
    pub fn import_weights(
        &self,
        params: &mut NetParams,
        weights: &Weights,
        device: &Device,
    ) -> Result<()> {
        let get = |key: String| -> Result<&HostTensor> {
            weights
                .get(&key)
                .ok_or_else(|| anyhow!("the weights have no tensor \"{key}\""))
        };
        for step in &self.steps {
            let key = |name: &str| format!("{}.{name}", step.name);
            match step.op {
                Lowered::Conv(k) => {
                    let conv = &mut params.convs[k];
                    replace_param(&mut conv.weight, from_host(get(key("weight"))?, device)?);
                    if let Some(bias) = &mut conv.bias {
                        replace_param(bias, from_host(get(key("bias"))?, device)?);
                    }
                }
                Lowered::Norm(k, affine) => {
                    let norm = &mut params.norms[k];
                    if affine {
                        replace_param(&mut norm.gamma, from_host(get(key("weight"))?, device)?);
                        replace_param(&mut norm.beta, from_host(get(key("bias"))?, device)?);
                    }
                    norm.running_mean =
                        RunningState::new(from_host(get(key("running_mean"))?, device)?);
                    norm.running_var =
                        RunningState::new(from_host(get(key("running_var"))?, device)?);
                }
                Lowered::Linear(k) => {
                    let linear = &mut params.linears[k];
                    let weight: Tensor<2> = from_host(get(key("weight"))?, device)?;
                    replace_param(&mut linear.weight, weight.transpose());
                    if let Some(bias) = &mut linear.bias {
                        replace_param(bias, from_host(get(key("bias"))?, device)?);
                    }
                }
                Lowered::LayerNorm(k) => {
                    let norm = &mut params.layer_norms[k];
                    replace_param(&mut norm.gamma, from_host(get(key("weight"))?, device)?);
                    if let Some(beta) = &mut norm.beta {
                        replace_param(beta, from_host(get(key("bias"))?, device)?);
                    }
                }
                Lowered::Scale(k) => replace_param(
                    &mut params.scales[k],
                    from_host(get(key("scale"))?, device)?,
                ),
                _ => {}
            }
        }
        Ok(())
    }
}
