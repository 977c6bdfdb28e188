//! The operator set of the IR: each op's parameters, validation, shape inference and counts.
//!
//! Adding an op means adding a variant here and handling it in [`Op::infer`] and the
//! counting methods; nothing else in the graph crate changes. Engines match on [`Op`].

use crate::geometry::{Hw, Pad2d, Shape};
use serde::{Deserialize, Serialize};

fn one() -> usize {
    1
}
fn yes() -> bool {
    true
}
fn one_hw() -> Hw {
    Hw::square(1)
}
fn bn_eps() -> f64 {
    1e-5
}
fn bn_momentum() -> f64 {
    0.1
}
fn lrn_alpha() -> f64 {
    1e-4
}
fn lrn_beta() -> f64 {
    0.75
}
fn lrn_k() -> f64 {
    1.0
}
fn half() -> f64 {
    0.5
}
fn ln_eps() -> f64 {
    1e-6
}
fn layer_scale_init() -> f64 {
    1e-6
}

/// 2-D convolution (cross-correlation), PyTorch semantics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conv2d {
    /// Input channels. [`crate::GraphBuilder`] fills this in from the input's shape.
    pub in_channels: usize,
    pub out_channels: usize,
    pub kernel: Hw,
    #[serde(default = "one_hw")]
    pub stride: Hw,
    #[serde(default)]
    pub padding: Pad2d,
    #[serde(default = "one_hw")]
    pub dilation: Hw,
    #[serde(default = "one")]
    pub groups: usize,
    #[serde(default = "yes")]
    pub bias: bool,
}

impl Conv2d {
    /// A convolution with stride 1, no padding, one group and a bias; the builder fills in
    /// `in_channels`.
    pub fn new(out_channels: usize, kernel: impl Into<Hw>) -> Self {
        Self {
            in_channels: 0,
            out_channels,
            kernel: kernel.into(),
            stride: Hw::square(1),
            padding: Pad2d::default(),
            dilation: Hw::square(1),
            groups: 1,
            bias: true,
        }
    }
    pub fn stride(mut self, s: impl Into<Hw>) -> Self {
        self.stride = s.into();
        self
    }
    pub fn padding(mut self, p: impl Into<Pad2d>) -> Self {
        self.padding = p.into();
        self
    }
    pub fn dilation(mut self, d: impl Into<Hw>) -> Self {
        self.dilation = d.into();
        self
    }
    pub fn groups(mut self, g: usize) -> Self {
        self.groups = g;
        self
    }
    pub fn bias(mut self, bias: bool) -> Self {
        self.bias = bias;
        self
    }
}

/// Batch normalisation over the channel axis of a feature map.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchNorm2d {
    pub num_features: usize,
    #[serde(default = "bn_eps")]
    pub eps: f64,
    #[serde(default = "bn_momentum")]
    pub momentum: f64,
    /// Learned scale and shift (γ, β).
    #[serde(default = "yes")]
    pub affine: bool,
}

impl BatchNorm2d {
    /// PyTorch's defaults: eps 1e-5, momentum 0.1, affine.
    pub fn new(num_features: usize) -> Self {
        Self {
            num_features,
            eps: bn_eps(),
            momentum: bn_momentum(),
            affine: true,
        }
    }
}

/// Local response normalisation across channels (AlexNet, GoogLeNet), with Caffe/Torch
/// semantics: `x / (k + alpha/size · Σ_{window} x²)^beta`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LocalResponseNorm {
    pub size: usize,
    #[serde(default = "lrn_alpha")]
    pub alpha: f64,
    #[serde(default = "lrn_beta")]
    pub beta: f64,
    #[serde(default = "lrn_k")]
    pub k: f64,
}

/// Max pooling, PyTorch semantics (padding with -∞, ceil mode drops windows that start
/// in the right padding).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MaxPool2d {
    pub kernel: Hw,
    /// Defaults to the kernel size, as in PyTorch.
    #[serde(default)]
    pub stride: Option<Hw>,
    #[serde(default)]
    pub padding: Pad2d,
    #[serde(default)]
    pub ceil_mode: bool,
}

impl MaxPool2d {
    pub fn new(kernel: impl Into<Hw>, stride: impl Into<Hw>) -> Self {
        Self {
            kernel: kernel.into(),
            stride: Some(stride.into()),
            padding: Pad2d::default(),
            ceil_mode: false,
        }
    }
    pub fn padding(mut self, p: impl Into<Pad2d>) -> Self {
        self.padding = p.into();
        self
    }
    pub fn ceil_mode(mut self, on: bool) -> Self {
        self.ceil_mode = on;
        self
    }
    pub fn effective_stride(&self) -> Hw {
        self.stride.unwrap_or(self.kernel)
    }
}

/// Average pooling, PyTorch semantics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AvgPool2d {
    pub kernel: Hw,
    #[serde(default)]
    pub stride: Option<Hw>,
    #[serde(default)]
    pub padding: Pad2d,
    #[serde(default)]
    pub ceil_mode: bool,
    /// Whether zero padding counts in the divisor (PyTorch's default: yes).
    #[serde(default = "yes")]
    pub count_include_pad: bool,
}

impl AvgPool2d {
    pub fn new(kernel: impl Into<Hw>, stride: impl Into<Hw>) -> Self {
        Self {
            kernel: kernel.into(),
            stride: Some(stride.into()),
            padding: Pad2d::default(),
            ceil_mode: false,
            count_include_pad: true,
        }
    }
    pub fn effective_stride(&self) -> Hw {
        self.stride.unwrap_or(self.kernel)
    }
}

/// Average pooling to a fixed output size, whatever the input size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveAvgPool2d {
    pub output: Hw,
}

/// Dropout: active in training, identity in inference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dropout {
    #[serde(default = "half")]
    pub p: f64,
}

/// Fully connected layer over a flat vector.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Linear {
    /// Input features. [`crate::GraphBuilder`] fills this in from the input's shape.
    pub in_features: usize,
    pub out_features: usize,
    #[serde(default = "yes")]
    pub bias: bool,
}

impl Linear {
    pub fn new(out_features: usize) -> Self {
        Self {
            in_features: 0,
            out_features,
            bias: true,
        }
    }
}

/// LayerNorm over the channels of each pixel of a C×H×W map (ConvNeXt's `LayerNorm2d`),
/// with a learned per-channel scale and shift.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerNorm2d {
    pub num_channels: usize,
    /// ConvNeXt's 1e-6 by default.
    #[serde(default = "ln_eps")]
    pub eps: f64,
}

impl LayerNorm2d {
    pub fn new(num_channels: usize) -> Self {
        Self {
            num_channels,
            eps: ln_eps(),
        }
    }
}

/// A learned per-channel scale (ConvNeXt's layer scale, `gamma ⊙ x`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayerScale {
    pub channels: usize,
    /// The scale's initial value (1e-6 in ConvNeXt).
    #[serde(default = "layer_scale_init")]
    pub init: f64,
}

impl LayerScale {
    pub fn new(channels: usize) -> Self {
        Self {
            channels,
            init: layer_scale_init(),
        }
    }
}

/// ShuffleNet's channel shuffle: view the channels as `groups × (C/groups)`, transpose.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelShuffle {
    pub groups: usize,
}

/// The channels `start..end` of a feature map (ShuffleNet-v2's channel split).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceChannels {
    pub start: usize,
    pub end: usize,
}

/// Stochastic depth (drop path): in a trained network a residual branch is dropped with
/// probability `p`; recorded in the graph, the identity when benchmarking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StochasticDepth {
    pub p: f64,
}

/// Ops without parameters carry an empty struct, so that unknown fields are still rejected.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// How a weight starts: PyTorch's layer defaults, so every engine draws its random
/// weights from the same distributions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WeightInit {
    /// Uniform in `[-bound, bound]` (Kaiming-uniform with a = √5 for weights, ±1/√fan_in
    /// for biases: the same bound).
    Uniform {
        bound: f64,
    },
    Constant(f64),
}

impl WeightInit {
    /// PyTorch's convolution and linear initialisation for `fan_in` inputs per output.
    pub fn fan_in(fan_in: usize) -> Self {
        WeightInit::Uniform {
            bound: 1.0 / (fan_in.max(1) as f64).sqrt(),
        }
    }
}

/// One tensor an op owns (see [`Op::weight_specs`]).
#[derive(Clone, Debug, PartialEq)]
pub struct OpWeight {
    /// `weight`, `bias`, `running_mean`, … as PyTorch names it.
    pub name: &'static str,
    pub shape: Vec<usize>,
    /// False for state that is not trained (batch-norm running statistics).
    pub trainable: bool,
    pub init: WeightInit,
}

/// An element-wise activation. One op with a kind, so that an engine lowers them in one
/// place and a new activation is one variant here and one arm per engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Activation {
    Relu,
    /// min(max(x, 0), 6).
    Relu6,
    /// x · sigmoid(x) (swish).
    Silu,
    /// x · Φ(x), the exact (erf) form.
    Gelu,
    /// x · relu6(x + 3) / 6.
    Hardswish,
    /// relu6(x + 3) / 6.
    Hardsigmoid,
    Sigmoid,
}

impl Activation {
    /// Every activation, for tests and tables.
    pub const ALL: [Activation; 7] = [
        Activation::Relu,
        Activation::Relu6,
        Activation::Silu,
        Activation::Gelu,
        Activation::Hardswish,
        Activation::Hardsigmoid,
        Activation::Sigmoid,
    ];

    /// The name people know it by, e.g. `ReLU6`.
    pub fn display_name(self) -> &'static str {
        match self {
            Activation::Relu => "ReLU",
            Activation::Relu6 => "ReLU6",
            Activation::Silu => "SiLU",
            Activation::Gelu => "GELU",
            Activation::Hardswish => "Hardswish",
            Activation::Hardsigmoid => "Hardsigmoid",
            Activation::Sigmoid => "Sigmoid",
        }
    }

    /// Whether the activation's backward needs only its output, so that it may overwrite
    /// its input (PyTorch's `inplace=True`): ReLU and ReLU6.
    pub fn may_run_in_place(self) -> bool {
        matches!(self, Activation::Relu | Activation::Relu6)
    }
}

/// One operation of the network. The JSON form is tagged by `"op"` and keeps one tag per
/// activation (`{"op": "relu"}`), as model files have always written them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "wire::OpFile", into = "wire::OpFile")]
pub enum Op {
    Conv2d(Conv2d),
    BatchNorm2d(BatchNorm2d),
    Activation(Activation),
    LocalResponseNorm(LocalResponseNorm),
    MaxPool2d(MaxPool2d),
    AvgPool2d(AvgPool2d),
    AdaptiveAvgPool2d(AdaptiveAvgPool2d),
    Dropout(Dropout),
    Flatten(NoParams),
    Linear(Linear),
    /// Concatenation along the channel axis.
    Concat(NoParams),
    /// Element-wise sum of inputs of identical shape.
    Add(NoParams),
    /// Element-wise product with broadcasting over size-1 dimensions (a C×H×W map times
    /// a C×1×1 gate in squeeze-and-excitation).
    Mul(NoParams),
    LayerNorm2d(LayerNorm2d),
    LayerScale(LayerScale),
    ChannelShuffle(ChannelShuffle),
    SliceChannels(SliceChannels),
    StochasticDepth(StochasticDepth),
}

/// The model file's form of an op: one tagged variant per JSON tag. [`OP_TAGS`] is
/// derived from it, so the list of supported tags cannot drift from what parses.
mod wire {
    use super::*;

    #[derive(Clone, Debug, Serialize, Deserialize, strum::VariantNames, strum::IntoStaticStr)]
    #[serde(tag = "op", rename_all = "snake_case")]
    #[strum(serialize_all = "snake_case")]
    pub enum OpFile {
        Conv2d(Conv2d),
        #[serde(rename = "batch_norm2d")]
        #[strum(serialize = "batch_norm2d")]
        BatchNorm2d(BatchNorm2d),
        Relu(NoParams),
        LocalResponseNorm(LocalResponseNorm),
        #[serde(rename = "max_pool2d")]
        #[strum(serialize = "max_pool2d")]
        MaxPool2d(MaxPool2d),
        #[serde(rename = "avg_pool2d")]
        #[strum(serialize = "avg_pool2d")]
        AvgPool2d(AvgPool2d),
        #[serde(rename = "adaptive_avg_pool2d")]
        #[strum(serialize = "adaptive_avg_pool2d")]
        AdaptiveAvgPool2d(AdaptiveAvgPool2d),
        Dropout(Dropout),
        Flatten(NoParams),
        Linear(Linear),
        Concat(NoParams),
        Add(NoParams),
        Relu6(NoParams),
        Silu(NoParams),
        Gelu(NoParams),
        Hardswish(NoParams),
        Hardsigmoid(NoParams),
        Sigmoid(NoParams),
        Mul(NoParams),
        #[serde(rename = "layer_norm2d")]
        #[strum(serialize = "layer_norm2d")]
        LayerNorm2d(LayerNorm2d),
        LayerScale(LayerScale),
        ChannelShuffle(ChannelShuffle),
        SliceChannels(SliceChannels),
        StochasticDepth(StochasticDepth),
    }

    impl From<OpFile> for Op {
        fn from(op: OpFile) -> Op {
            let act = Op::Activation;
            match op {
                OpFile::Conv2d(c) => Op::Conv2d(c),
                OpFile::BatchNorm2d(b) => Op::BatchNorm2d(b),
                OpFile::Relu(_) => act(Activation::Relu),
                OpFile::LocalResponseNorm(l) => Op::LocalResponseNorm(l),
                OpFile::MaxPool2d(p) => Op::MaxPool2d(p),
                OpFile::AvgPool2d(p) => Op::AvgPool2d(p),
                OpFile::AdaptiveAvgPool2d(p) => Op::AdaptiveAvgPool2d(p),
                OpFile::Dropout(d) => Op::Dropout(d),
                OpFile::Flatten(n) => Op::Flatten(n),
                OpFile::Linear(l) => Op::Linear(l),
                OpFile::Concat(n) => Op::Concat(n),
                OpFile::Add(n) => Op::Add(n),
                OpFile::Relu6(_) => act(Activation::Relu6),
                OpFile::Silu(_) => act(Activation::Silu),
                OpFile::Gelu(_) => act(Activation::Gelu),
                OpFile::Hardswish(_) => act(Activation::Hardswish),
                OpFile::Hardsigmoid(_) => act(Activation::Hardsigmoid),
                OpFile::Sigmoid(_) => act(Activation::Sigmoid),
                OpFile::Mul(n) => Op::Mul(n),
                OpFile::LayerNorm2d(l) => Op::LayerNorm2d(l),
                OpFile::LayerScale(l) => Op::LayerScale(l),
                OpFile::ChannelShuffle(c) => Op::ChannelShuffle(c),
                OpFile::SliceChannels(s) => Op::SliceChannels(s),
                OpFile::StochasticDepth(d) => Op::StochasticDepth(d),
            }
        }
    }

    impl From<Op> for OpFile {
        fn from(op: Op) -> OpFile {
            let none = NoParams {};
            match op {
                Op::Conv2d(c) => OpFile::Conv2d(c),
                Op::BatchNorm2d(b) => OpFile::BatchNorm2d(b),
                Op::Activation(a) => match a {
                    Activation::Relu => OpFile::Relu(none),
                    Activation::Relu6 => OpFile::Relu6(none),
                    Activation::Silu => OpFile::Silu(none),
                    Activation::Gelu => OpFile::Gelu(none),
                    Activation::Hardswish => OpFile::Hardswish(none),
                    Activation::Hardsigmoid => OpFile::Hardsigmoid(none),
                    Activation::Sigmoid => OpFile::Sigmoid(none),
                },
                Op::LocalResponseNorm(l) => OpFile::LocalResponseNorm(l),
                Op::MaxPool2d(p) => OpFile::MaxPool2d(p),
                Op::AvgPool2d(p) => OpFile::AvgPool2d(p),
                Op::AdaptiveAvgPool2d(p) => OpFile::AdaptiveAvgPool2d(p),
                Op::Dropout(d) => OpFile::Dropout(d),
                Op::Flatten(n) => OpFile::Flatten(n),
                Op::Linear(l) => OpFile::Linear(l),
                Op::Concat(n) => OpFile::Concat(n),
                Op::Add(n) => OpFile::Add(n),
                Op::Mul(n) => OpFile::Mul(n),
                Op::LayerNorm2d(l) => OpFile::LayerNorm2d(l),
                Op::LayerScale(l) => OpFile::LayerScale(l),
                Op::ChannelShuffle(c) => OpFile::ChannelShuffle(c),
                Op::SliceChannels(s) => OpFile::SliceChannels(s),
                Op::StochasticDepth(d) => OpFile::StochasticDepth(d),
            }
        }
    }
}

/// Every op's JSON tag, for error messages that list what is supported.
pub const OP_TAGS: &[&str] = <wire::OpFile as strum::VariantNames>::VARIANTS;

/// The largest size any dimension, channel count, kernel, stride or padding may have
/// (defined in `cnnbench-base`, which the run spec's image-size check shares).
pub use cnnbench_base::MAX_DIMENSION;

/// Why an op cannot be applied to its inputs (the graph adds the node's name).
pub type OpResult<T> = Result<T, String>;

impl Op {
    /// The JSON tag, e.g. `conv2d` (`relu` for a ReLU activation).
    pub fn tag(&self) -> &'static str {
        wire::OpFile::from(self.clone()).into()
    }

    /// A short human description of the op and its settings for per-layer summaries.
    pub fn describe(&self) -> String {
        match self {
            Op::Conv2d(c) => {
                let mut s = format!("Conv2d {}→{} k{}", c.in_channels, c.out_channels, c.kernel);
                if c.stride != Hw::square(1) {
                    s += &format!(" s{}", c.stride);
                }
                if !c.padding.is_zero() {
                    s += &format!(" p{}", c.padding);
                }
                if c.dilation != Hw::square(1) {
                    s += &format!(" d{}", c.dilation);
                }
                if c.groups != 1 {
                    s += &format!(" g{}", c.groups);
                }
                s
            }
            Op::BatchNorm2d(b) => format!("BatchNorm2d {}", b.num_features),
            Op::Activation(a) => a.display_name().into(),
            Op::LocalResponseNorm(l) => format!("LRN size {}", l.size),
            Op::MaxPool2d(p) => pool_description(
                "MaxPool2d",
                p.kernel,
                p.effective_stride(),
                p.padding,
                p.ceil_mode,
            ),
            Op::AvgPool2d(p) => pool_description(
                "AvgPool2d",
                p.kernel,
                p.effective_stride(),
                p.padding,
                p.ceil_mode,
            ),
            Op::AdaptiveAvgPool2d(p) => format!("AdaptiveAvgPool2d {}", p.output),
            Op::Dropout(d) => format!("Dropout p={}", d.p),
            Op::Flatten(_) => "Flatten".into(),
            Op::Linear(l) => format!("Linear {}→{}", l.in_features, l.out_features),
            Op::Concat(_) => "Concat".into(),
            Op::Add(_) => "Add".into(),
            Op::Mul(_) => "Mul".into(),
            Op::LayerNorm2d(l) => format!("LayerNorm2d {}", l.num_channels),
            Op::LayerScale(l) => format!("LayerScale {}", l.channels),
            Op::ChannelShuffle(c) => format!("ChannelShuffle groups {}", c.groups),
            Op::SliceChannels(s) => format!("SliceChannels {}..{}", s.start, s.end),
            Op::StochasticDepth(d) => format!("StochasticDepth p={}", d.p),
        }
    }

    /// How many inputs the op takes: `(min, max)`.
    pub fn arity(&self) -> (usize, usize) {
        match self {
            Op::Concat(_) | Op::Add(_) => (2, usize::MAX),
            Op::Mul(_) => (2, 2),
            Op::Conv2d(_)
            | Op::BatchNorm2d(_)
            | Op::Activation(_)
            | Op::LocalResponseNorm(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::AdaptiveAvgPool2d(_)
            | Op::Dropout(_)
            | Op::Flatten(_)
            | Op::Linear(_)
            | Op::LayerNorm2d(_)
            | Op::LayerScale(_)
            | Op::ChannelShuffle(_)
            | Op::SliceChannels(_)
            | Op::StochasticDepth(_) => (1, 1),
        }
    }

    /// Fills in the fields that the builder derives from the input shape.
    pub(crate) fn adapt_to_input(&mut self, input: &Shape) {
        match self {
            Op::Conv2d(c) => {
                if let Some((ch, _, _)) = input.as_chw() {
                    c.in_channels = ch;
                }
            }
            Op::Linear(l) => {
                if let Some(f) = input.as_flat() {
                    l.in_features = f;
                }
            }
            // Their fields are all the user's (or checked against the input, like batch
            // norm's features): nothing to derive.
            Op::BatchNorm2d(_)
            | Op::Activation(_)
            | Op::LocalResponseNorm(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::AdaptiveAvgPool2d(_)
            | Op::Dropout(_)
            | Op::Flatten(_)
            | Op::Concat(_)
            | Op::Add(_)
            | Op::Mul(_)
            | Op::LayerNorm2d(_)
            | Op::LayerScale(_)
            | Op::ChannelShuffle(_)
            | Op::SliceChannels(_)
            | Op::StochasticDepth(_) => {}
        }
    }

    /// Checks the op's own parameters, independent of its inputs.
    pub fn validate(&self) -> OpResult<()> {
        fn positive(what: &str, v: usize) -> OpResult<()> {
            if v == 0 {
                Err(format!("{what} must be at least 1"))
            } else {
                bounded(what, v)
            }
        }
        fn positive_hw(what: &str, v: Hw) -> OpResult<()> {
            if v.h == 0 || v.w == 0 {
                Err(format!(
                    "{what} must be at least 1 in both dimensions, got {v}"
                ))
            } else {
                bounded(what, v.h.max(v.w))
            }
        }
        fn bounded(what: &str, v: usize) -> OpResult<()> {
            if v > MAX_DIMENSION {
                Err(format!(
                    "{what} {v} is implausibly large (the limit is {MAX_DIMENSION})"
                ))
            } else {
                Ok(())
            }
        }
        fn pool_padding(kernel: Hw, padding: Pad2d) -> OpResult<()> {
            bounded(
                "padding",
                padding
                    .top
                    .max(padding.bottom)
                    .max(padding.left)
                    .max(padding.right),
            )?;
            if padding.top.max(padding.bottom) * 2 > kernel.h
                || padding.left.max(padding.right) * 2 > kernel.w
            {
                Err(format!(
                    "pooling padding {padding} is more than half the kernel {kernel}"
                ))
            } else {
                Ok(())
            }
        }
        fn finite(what: &str, v: f64) -> OpResult<()> {
            if v.is_finite() {
                Ok(())
            } else {
                Err(format!("{what} must be a finite number"))
            }
        }
        match self {
            Op::Conv2d(c) => {
                positive("in_channels", c.in_channels)?;
                positive("out_channels", c.out_channels)?;
                positive_hw("kernel", c.kernel)?;
                positive_hw("stride", c.stride)?;
                positive_hw("dilation", c.dilation)?;
                positive("groups", c.groups)?;
                bounded(
                    "padding",
                    c.padding
                        .top
                        .max(c.padding.bottom)
                        .max(c.padding.left)
                        .max(c.padding.right),
                )?;
                if c.in_channels % c.groups != 0 || c.out_channels % c.groups != 0 {
                    return Err(format!(
                        "groups {} must divide in_channels {} and out_channels {}",
                        c.groups, c.in_channels, c.out_channels
                    ));
                }
                Ok(())
            }
            Op::BatchNorm2d(b) => {
                positive("num_features", b.num_features)?;
                finite("momentum", b.momentum)?;
                if !(b.eps > 0.0 && b.eps.is_finite()) {
                    return Err("eps must be a positive number".into());
                }
                Ok(())
            }
            Op::LocalResponseNorm(l) => {
                positive("size", l.size)?;
                finite("alpha", l.alpha)?;
                finite("beta", l.beta)?;
                finite("k", l.k)
            }
            Op::MaxPool2d(p) => {
                positive_hw("kernel", p.kernel)?;
                positive_hw("stride", p.effective_stride())?;
                pool_padding(p.kernel, p.padding)
            }
            Op::AvgPool2d(p) => {
                positive_hw("kernel", p.kernel)?;
                positive_hw("stride", p.effective_stride())?;
                pool_padding(p.kernel, p.padding)
            }
            Op::AdaptiveAvgPool2d(p) => positive_hw("output", p.output),
            Op::Dropout(d) => {
                if (0.0..1.0).contains(&d.p) {
                    Ok(())
                } else {
                    Err(format!("dropout probability {} must be in [0, 1)", d.p))
                }
            }
            Op::Linear(l) => {
                positive("in_features", l.in_features)?;
                positive("out_features", l.out_features)
            }
            Op::LayerNorm2d(l) => {
                positive("num_channels", l.num_channels)?;
                if !(l.eps > 0.0 && l.eps.is_finite()) {
                    return Err("eps must be a positive number".into());
                }
                Ok(())
            }
            Op::LayerScale(l) => {
                positive("channels", l.channels)?;
                finite("init", l.init)
            }
            Op::ChannelShuffle(c) => positive("groups", c.groups),
            Op::SliceChannels(s) => {
                if s.start >= s.end {
                    Err(format!(
                        "the channel range {}..{} is empty (start must be below end)",
                        s.start, s.end
                    ))
                } else {
                    Ok(())
                }
            }
            Op::StochasticDepth(d) => {
                if (0.0..1.0).contains(&d.p) {
                    Ok(())
                } else {
                    Err(format!(
                        "stochastic depth probability {} must be in [0, 1)",
                        d.p
                    ))
                }
            }
            Op::Activation(_) | Op::Flatten(_) | Op::Concat(_) | Op::Add(_) | Op::Mul(_) => Ok(()),
        }
    }

    /// The output shape for these input shapes, or why the inputs do not fit.
    pub fn infer(&self, inputs: &[&Shape]) -> OpResult<Shape> {
        let first = inputs.first().ok_or("has no input")?;
        let feature_map = |what: &str| {
            first
                .as_chw()
                .ok_or_else(|| format!("{what} needs a C×H×W feature map, got {first}"))
        };
        match self {
            Op::Conv2d(c) => {
                let (ch, h, w) = feature_map("conv2d")?;
                if ch != c.in_channels {
                    return Err(format!(
                        "expects {} input channels, got {ch} (input {first})",
                        c.in_channels
                    ));
                }
                let oh = window_count(
                    h,
                    c.kernel.h,
                    c.stride.h,
                    c.dilation.h,
                    c.padding.top,
                    c.padding.bottom,
                    false,
                );
                let ow = window_count(
                    w,
                    c.kernel.w,
                    c.stride.w,
                    c.dilation.w,
                    c.padding.left,
                    c.padding.right,
                    false,
                );
                spatial_result(c.out_channels, oh, ow, first)
            }
            Op::BatchNorm2d(b) => {
                let (ch, _, _) = feature_map("batch_norm2d")?;
                if ch != b.num_features {
                    return Err(format!(
                        "expects {} channels, got {ch} (input {first})",
                        b.num_features
                    ));
                }
                Ok((*first).clone())
            }
            Op::LocalResponseNorm(_) => {
                feature_map("local_response_norm")?;
                Ok((*first).clone())
            }
            Op::MaxPool2d(p) => {
                let (ch, h, w) = feature_map("max_pool2d")?;
                let s = p.effective_stride();
                let oh = window_count(
                    h,
                    p.kernel.h,
                    s.h,
                    1,
                    p.padding.top,
                    p.padding.bottom,
                    p.ceil_mode,
                );
                let ow = window_count(
                    w,
                    p.kernel.w,
                    s.w,
                    1,
                    p.padding.left,
                    p.padding.right,
                    p.ceil_mode,
                );
                spatial_result(ch, oh, ow, first)
            }
            Op::AvgPool2d(p) => {
                let (ch, h, w) = feature_map("avg_pool2d")?;
                let s = p.effective_stride();
                let oh = window_count(
                    h,
                    p.kernel.h,
                    s.h,
                    1,
                    p.padding.top,
                    p.padding.bottom,
                    p.ceil_mode,
                );
                let ow = window_count(
                    w,
                    p.kernel.w,
                    s.w,
                    1,
                    p.padding.left,
                    p.padding.right,
                    p.ceil_mode,
                );
                spatial_result(ch, oh, ow, first)
            }
            Op::AdaptiveAvgPool2d(p) => {
                let (ch, _, _) = feature_map("adaptive_avg_pool2d")?;
                Ok(Shape::chw(ch, p.output.h, p.output.w))
            }
            Op::Activation(_) | Op::Dropout(_) => Ok((*first).clone()),
            Op::StochasticDepth(_) => {
                feature_map("stochastic_depth")?;
                Ok((*first).clone())
            }
            Op::Mul(_) => {
                let a = &first.0;
                let b = &inputs[inputs.len() - 1].0;
                let fits = a.len() == b.len()
                    && a.iter().zip(b).all(|(x, y)| x == y || *x == 1 || *y == 1);
                if !fits {
                    return Err(format!(
                        "multiplies shapes that do not broadcast (each dimension must be equal or 1): {}",
                        list_shapes(inputs)
                    ));
                }
                Ok(Shape(a.iter().zip(b).map(|(x, y)| *x.max(y)).collect()))
            }
            Op::LayerNorm2d(l) => {
                let (ch, _, _) = feature_map("layer_norm2d")?;
                if ch != l.num_channels {
                    return Err(format!(
                        "expects {} channels, got {ch} (input {first})",
                        l.num_channels
                    ));
                }
                Ok((*first).clone())
            }
            Op::LayerScale(l) => {
                let (ch, _, _) = feature_map("layer_scale")?;
                if ch != l.channels {
                    return Err(format!(
                        "expects {} channels, got {ch} (input {first})",
                        l.channels
                    ));
                }
                Ok((*first).clone())
            }
            Op::ChannelShuffle(c) => {
                let (ch, _, _) = feature_map("channel_shuffle")?;
                if ch % c.groups != 0 {
                    return Err(format!(
                        "{} groups must divide the {ch} channels (input {first})",
                        c.groups
                    ));
                }
                Ok((*first).clone())
            }
            Op::SliceChannels(s) => {
                let (ch, h, w) = feature_map("slice_channels")?;
                if s.end > ch {
                    return Err(format!(
                        "takes channels {}..{} of an input with {ch} (input {first})",
                        s.start, s.end
                    ));
                }
                Ok(Shape::chw(s.end - s.start, h, w))
            }
            Op::Flatten(_) => Ok(Shape::flat(first.elements() as usize)),
            Op::Linear(l) => {
                let f = first.as_flat().ok_or_else(|| {
                    format!("linear needs a flat vector, got {first} (add a flatten node)")
                })?;
                if f != l.in_features {
                    return Err(format!("expects {} input features, got {f}", l.in_features));
                }
                Ok(Shape::flat(l.out_features))
            }
            Op::Concat(_) => {
                let mut channels = 0;
                let (_, h, w) = feature_map("concat")?;
                for s in inputs {
                    match s.as_chw() {
                        Some((c, sh, sw)) if sh == h && sw == w => channels += c,
                        _ => {
                            return Err(format!(
                                "concatenates along channels, so every input needs spatial size {h}×{w}; got {}",
                                list_shapes(inputs)
                            ))
                        }
                    }
                }
                Ok(Shape::chw(channels, h, w))
            }
            Op::Add(_) => {
                if inputs.iter().any(|s| *s != *first) {
                    return Err(format!(
                        "adds inputs of different shapes: {}",
                        list_shapes(inputs)
                    ));
                }
                Ok((*first).clone())
            }
        }
    }

    /// Trainable parameters (batch-norm running statistics are buffers, not parameters).
    /// Counted from [`Op::weight_specs`], so a new op with weights is counted once.
    pub fn params(&self) -> u64 {
        self.weight_elements(true)
    }

    /// The tensors this op owns, in PyTorch's layout and naming (`weight`, `bias`,
    /// `running_mean`, …), whether each is trained, and how PyTorch's layer initialises
    /// it. Weight files and engines key them as `<node>.<name>`, so weights move between
    /// engines and from imported files. Every op is listed (no catch-all): an op with
    /// weights cannot be added without saying what they are and how they start.
    pub fn weight_specs(&self) -> Vec<OpWeight> {
        let trained = |name, shape, init| OpWeight {
            name,
            shape,
            trainable: true,
            init,
        };
        let running = |name, shape, value| OpWeight {
            name,
            shape,
            trainable: false,
            init: WeightInit::Constant(value),
        };
        match self {
            Op::Conv2d(c) => {
                let in_per_group = c.in_channels / c.groups.max(1);
                let init = WeightInit::fan_in(in_per_group * c.kernel.h * c.kernel.w);
                let shape = vec![c.out_channels, in_per_group, c.kernel.h, c.kernel.w];
                let mut specs = vec![trained("weight", shape, init)];
                if c.bias {
                    specs.push(trained("bias", vec![c.out_channels], init));
                }
                specs
            }
            Op::BatchNorm2d(b) => {
                let c = b.num_features;
                let mut specs = Vec::new();
                if b.affine {
                    specs.push(trained("weight", vec![c], WeightInit::Constant(1.0)));
                    specs.push(trained("bias", vec![c], WeightInit::Constant(0.0)));
                }
                specs.push(running("running_mean", vec![c], 0.0));
                specs.push(running("running_var", vec![c], 1.0));
                specs
            }
            Op::Linear(l) => {
                let init = WeightInit::fan_in(l.in_features);
                let mut specs = vec![trained("weight", vec![l.out_features, l.in_features], init)];
                if l.bias {
                    specs.push(trained("bias", vec![l.out_features], init));
                }
                specs
            }
            Op::LayerNorm2d(l) => vec![
                trained("weight", vec![l.num_channels], WeightInit::Constant(1.0)),
                trained("bias", vec![l.num_channels], WeightInit::Constant(0.0)),
            ],
            Op::LayerScale(l) => vec![trained(
                "scale",
                vec![l.channels],
                WeightInit::Constant(l.init),
            )],
            Op::Activation(_)
            | Op::LocalResponseNorm(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::AdaptiveAvgPool2d(_)
            | Op::Dropout(_)
            | Op::Flatten(_)
            | Op::Concat(_)
            | Op::Add(_)
            | Op::Mul(_)
            | Op::ChannelShuffle(_)
            | Op::SliceChannels(_)
            | Op::StochasticDepth(_) => Vec::new(),
        }
    }

    /// Non-trainable state that still occupies memory (batch-norm running mean and variance).
    pub fn buffers(&self) -> u64 {
        self.weight_elements(false)
    }

    fn weight_elements(&self, trainable: bool) -> u64 {
        crate::graph::saturating_sum(
            self.weight_specs()
                .iter()
                .filter(|w| w.trainable == trainable)
                .map(|w| product(&w.shape)),
        )
    }

    /// Multiply-accumulates for one example, by the fvcore/torchvision convention:
    /// convolutions and linear layers only.
    pub fn macs(&self, output: &Shape) -> u64 {
        match self {
            Op::Conv2d(c) => {
                let spatial = output.elements(); // Cout·Hout·Wout
                spatial.saturating_mul(product(&[
                    c.in_channels / c.groups.max(1),
                    c.kernel.h,
                    c.kernel.w,
                ]))
            }
            Op::Linear(l) => product(&[l.in_features, l.out_features]),
            Op::BatchNorm2d(_)
            | Op::Activation(_)
            | Op::LocalResponseNorm(_)
            | Op::MaxPool2d(_)
            | Op::AvgPool2d(_)
            | Op::AdaptiveAvgPool2d(_)
            | Op::Dropout(_)
            | Op::Flatten(_)
            | Op::Concat(_)
            | Op::Add(_)
            | Op::Mul(_)
            | Op::LayerNorm2d(_)
            | Op::LayerScale(_)
            | Op::ChannelShuffle(_)
            | Op::SliceChannels(_)
            | Op::StochasticDepth(_) => 0,
        }
    }

    /// Whether the op counts as a layer for the network's depth (the "Layers" column).
    pub fn counts_for_depth(&self) -> bool {
        matches!(self, Op::Conv2d(_) | Op::Linear(_))
    }
}

/// A product of sizes that saturates instead of overflowing.
fn product(factors: &[usize]) -> u64 {
    factors
        .iter()
        .fold(1u64, |acc, &f| acc.saturating_mul(f as u64))
}

fn pool_description(name: &str, kernel: Hw, stride: Hw, padding: Pad2d, ceil_mode: bool) -> String {
    let mut s = format!("{name} k{kernel} s{stride}");
    if !padding.is_zero() {
        s += &format!(" p{padding}");
    }
    if ceil_mode {
        s += " ceil";
    }
    s
}

fn list_shapes(inputs: &[&Shape]) -> String {
    inputs
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn spatial_result(channels: usize, oh: i64, ow: i64, input: &Shape) -> OpResult<Shape> {
    if oh < 1 || ow < 1 {
        return Err(format!(
            "input {input} is too small: the output would be {oh}×{ow}; use a larger image size"
        ));
    }
    Ok(Shape::chw(channels, oh as usize, ow as usize))
}

/// Number of sliding-window positions along one axis, as PyTorch computes it (in ceil
/// mode a last window that would start in the right padding is dropped).
pub fn window_count(
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    pad_before: usize,
    pad_after: usize,
    ceil_mode: bool,
) -> i64 {
    let span = (size + pad_before + pad_after) as i64 - (dilation * (kernel - 1)) as i64 - 1;
    let stride = stride as i64;
    // PyTorch: floor((span + (ceil ? stride - 1 : 0)) / stride) + 1, zero when negative.
    let numerator = if ceil_mode { span + stride - 1 } else { span };
    if numerator < 0 {
        return 0;
    }
    let mut out = numerator / stride + 1;
    if ceil_mode && (out - 1) * stride >= (size + pad_before) as i64 {
        out -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_count_matches_pytorch_formulas() {
        // conv 7x7/2 pad 3 on 224 -> 112
        assert_eq!(window_count(224, 7, 2, 1, 3, 3, false), 112);
        // maxpool 3/2 pad 1 on 112 -> 56
        assert_eq!(window_count(112, 3, 2, 1, 1, 1, false), 56);
        // Caffe AlexNet: pool 3/2 ceil on 55 -> 27, on 13 -> 6
        assert_eq!(window_count(55, 3, 2, 1, 0, 0, true), 27);
        assert_eq!(window_count(13, 3, 2, 1, 0, 0, true), 6);
        // GoogLeNet: pool 3/2 ceil on 112 -> 56 (floor would give 55)
        assert_eq!(window_count(112, 3, 2, 1, 0, 0, true), 56);
        assert_eq!(window_count(112, 3, 2, 1, 0, 0, false), 55);
        // ceil mode never starts a window in the right padding
        assert_eq!(window_count(5, 2, 2, 1, 1, 1, true), 3);
        // dilation 2: effective kernel 5
        assert_eq!(window_count(10, 3, 1, 2, 0, 0, false), 6);
        // too small
        assert_eq!(window_count(2, 3, 1, 1, 0, 0, false), 0);
        // ceil mode keeps a partial window on an input smaller than the kernel (PyTorch
        // gives 1 for a 2x2/2 ceil-mode pool on 1x1)
        assert_eq!(window_count(1, 2, 2, 1, 0, 0, true), 1);
        assert_eq!(window_count(1, 2, 2, 1, 0, 0, false), 0);
    }

    #[test]
    fn conv_counts() {
        let mut c = Conv2d::new(64, 7).stride(2).padding(3).bias(false);
        c.in_channels = 3;
        let op = Op::Conv2d(c);
        let out = op.infer(&[&Shape::chw(3, 224, 224)]).unwrap();
        assert_eq!(out, Shape::chw(64, 112, 112));
        assert_eq!(op.params(), 64 * 3 * 49);
        assert_eq!(op.macs(&out), 64 * 112 * 112 * 3 * 49);
    }

    #[test]
    fn grouped_conv_counts_and_validation() {
        let mut c = Conv2d::new(256, 5).padding(2).groups(2);
        c.in_channels = 96;
        let op = Op::Conv2d(c.clone());
        assert_eq!(op.params(), 256 * 48 * 25 + 256);
        let out = op.infer(&[&Shape::chw(96, 27, 27)]).unwrap();
        assert_eq!(op.macs(&out), 256 * 27 * 27 * 48 * 25);
        c.groups = 5;
        let err = Op::Conv2d(c).validate().unwrap_err();
        assert!(err.contains("groups 5 must divide"), "{err}");
    }

    #[test]
    fn shape_errors_say_what_is_wrong() {
        let add = Op::Add(NoParams {});
        let err = add
            .infer(&[&Shape::chw(64, 8, 8), &Shape::chw(32, 8, 8)])
            .unwrap_err();
        assert!(err.contains("different shapes"), "{err}");
        let cat = Op::Concat(NoParams {});
        let err = cat
            .infer(&[&Shape::chw(64, 8, 8), &Shape::chw(32, 4, 4)])
            .unwrap_err();
        assert!(err.contains("spatial size"), "{err}");
        let lin = Op::Linear(Linear {
            in_features: 10,
            out_features: 2,
            bias: true,
        });
        let err = lin.infer(&[&Shape::flat(12)]).unwrap_err();
        assert!(err.contains("expects 10 input features, got 12"), "{err}");
        let pool = Op::MaxPool2d(MaxPool2d::new(3, 2));
        let err = pool.infer(&[&Shape::chw(8, 2, 2)]).unwrap_err();
        assert!(err.contains("too small"), "{err}");
    }

    #[test]
    fn implausible_sizes_are_refused() {
        let mut c = Conv2d::new(1 << 40, 3);
        c.in_channels = 3;
        let err = Op::Conv2d(c).validate().unwrap_err();
        assert!(err.contains("implausibly large"), "{err}");
        let pool = Op::MaxPool2d(MaxPool2d::new(3, 2).padding(usize::MAX));
        assert!(pool.validate().unwrap_err().contains("implausibly large"));
    }

    #[test]
    fn batch_norm_params_exclude_running_stats() {
        let bn = Op::BatchNorm2d(BatchNorm2d::new(64));
        assert_eq!(bn.params(), 128);
        assert_eq!(bn.buffers(), 128);
    }

    #[test]
    fn modern_ops_infer_count_and_round_trip() {
        let map = Shape::chw(8, 5, 5);
        let gate = Shape::chw(8, 1, 1);
        let unit = || NoParams {};
        let ops = [
            Op::Activation(Activation::Relu6),
            Op::Activation(Activation::Silu),
            Op::Activation(Activation::Gelu),
            Op::Activation(Activation::Hardswish),
            Op::Activation(Activation::Hardsigmoid),
            Op::Activation(Activation::Sigmoid),
            Op::LayerNorm2d(LayerNorm2d::new(8)),
            Op::LayerScale(LayerScale::new(8)),
            Op::ChannelShuffle(ChannelShuffle { groups: 2 }),
            Op::StochasticDepth(StochasticDepth { p: 0.1 }),
        ];
        for op in ops {
            op.validate().unwrap();
            assert_eq!(op.infer(&[&map]).unwrap(), map, "{}", op.tag());
            assert_eq!(op.macs(&map), 0, "{}", op.tag());
            assert_eq!(op.buffers(), 0, "{}", op.tag());
            let json = serde_json::to_value(&op).unwrap();
            assert_eq!(json["op"], op.tag());
            let back: Op = serde_json::from_value(json).unwrap();
            assert_eq!(back, op);
            assert!(OP_TAGS.contains(&op.tag()));
            assert!(!op.describe().is_empty());
        }
        assert_eq!(Op::LayerNorm2d(LayerNorm2d::new(8)).params(), 16);
        assert_eq!(Op::LayerScale(LayerScale::new(8)).params(), 8);
        // Defaults: ConvNeXt's eps and layer-scale init.
        let ln: Op = serde_json::from_str(r#"{"op": "layer_norm2d", "num_channels": 4}"#).unwrap();
        assert_eq!(ln, Op::LayerNorm2d(LayerNorm2d::new(4)));

        let mul = Op::Mul(unit());
        assert_eq!(mul.arity(), (2, 2));
        assert_eq!(mul.infer(&[&map, &gate]).unwrap(), map);
        assert_eq!(mul.infer(&[&gate, &map]).unwrap(), map);
        assert_eq!(mul.infer(&[&map, &map]).unwrap(), map);
        let err = mul.infer(&[&map, &Shape::chw(4, 1, 1)]).unwrap_err();
        assert!(err.contains("do not broadcast"), "{err}");
        let err = mul.infer(&[&map, &Shape::flat(8)]).unwrap_err();
        assert!(err.contains("do not broadcast"), "{err}");

        let slice = Op::SliceChannels(SliceChannels { start: 2, end: 6 });
        assert_eq!(slice.infer(&[&map]).unwrap(), Shape::chw(4, 5, 5));
        let err = Op::SliceChannels(SliceChannels { start: 4, end: 12 })
            .infer(&[&map])
            .unwrap_err();
        assert!(err.contains("channels 4..12 of an input with 8"), "{err}");
        let err = Op::SliceChannels(SliceChannels { start: 3, end: 3 })
            .validate()
            .unwrap_err();
        assert!(err.contains("empty"), "{err}");

        let err = Op::ChannelShuffle(ChannelShuffle { groups: 3 })
            .infer(&[&map])
            .unwrap_err();
        assert!(err.contains("must divide the 8 channels"), "{err}");
        let err = Op::LayerNorm2d(LayerNorm2d::new(4))
            .infer(&[&map])
            .unwrap_err();
        assert!(err.contains("expects 4 channels, got 8"), "{err}");
        let err = Op::LayerScale(LayerScale::new(4))
            .infer(&[&map])
            .unwrap_err();
        assert!(err.contains("expects 4 channels, got 8"), "{err}");
        let err = Op::StochasticDepth(StochasticDepth { p: 1.0 })
            .validate()
            .unwrap_err();
        assert!(err.contains("[0, 1)"), "{err}");
        let err = Op::LayerNorm2d(LayerNorm2d {
            num_channels: 4,
            eps: 0.0,
        })
        .validate()
        .unwrap_err();
        assert!(err.contains("eps"), "{err}");
    }

    /// One op of every JSON tag.
    fn one_of_each_tag() -> Vec<Op> {
        let mut conv = Conv2d::new(4, 3);
        conv.in_channels = 4;
        let mut ops: Vec<Op> = Activation::ALL.iter().map(|a| Op::Activation(*a)).collect();
        ops.extend([
            Op::Conv2d(conv),
            Op::BatchNorm2d(BatchNorm2d::new(4)),
            Op::LocalResponseNorm(LocalResponseNorm {
                size: 3,
                alpha: 1e-4,
                beta: 0.75,
                k: 1.0,
            }),
            Op::MaxPool2d(MaxPool2d::new(2, 2)),
            Op::AvgPool2d(AvgPool2d::new(2, 2)),
            Op::AdaptiveAvgPool2d(AdaptiveAvgPool2d {
                output: Hw::square(1),
            }),
            Op::Dropout(Dropout { p: 0.5 }),
            Op::Flatten(NoParams {}),
            Op::Linear(Linear::new(3)),
            Op::Concat(NoParams {}),
            Op::Add(NoParams {}),
            Op::Mul(NoParams {}),
            Op::LayerNorm2d(LayerNorm2d::new(4)),
            Op::LayerScale(LayerScale::new(4)),
            Op::ChannelShuffle(ChannelShuffle { groups: 2 }),
            Op::SliceChannels(SliceChannels { start: 0, end: 2 }),
            Op::StochasticDepth(StochasticDepth { p: 0.1 }),
        ]);
        ops
    }

    #[test]
    fn op_tags_are_exactly_the_tags_that_parse() {
        let ops = one_of_each_tag();
        let mut tags: Vec<&str> = ops.iter().map(|op| op.tag()).collect();
        for op in &ops {
            let json = serde_json::to_value(op).unwrap();
            assert_eq!(json["op"], op.tag(), "{op:?}");
            let back: Op = serde_json::from_value(json).unwrap();
            assert_eq!(&back, op);
        }
        tags.sort_unstable();
        let mut listed = OP_TAGS.to_vec();
        listed.sort_unstable();
        assert_eq!(tags, listed, "OP_TAGS and the ops that parse differ");
    }

    #[test]
    fn activations_keep_their_own_tags() {
        let relu: Op = serde_json::from_str(r#"{"op": "relu"}"#).unwrap();
        assert_eq!(relu, Op::Activation(Activation::Relu));
        let hs: Op = serde_json::from_str(r#"{"op": "hardswish"}"#).unwrap();
        assert_eq!(hs.describe(), "Hardswish");
        let err = serde_json::from_str::<Op>(r#"{"op": "relu", "inplace": true}"#).unwrap_err();
        assert!(err.to_string().contains("inplace"), "{err}");
    }

    #[test]
    fn counts_come_from_the_weight_specs() {
        for op in one_of_each_tag() {
            let (params, buffers): (Vec<_>, Vec<_>) =
                op.weight_specs().into_iter().partition(|w| w.trainable);
            let size = |v: &[OpWeight]| -> u64 {
                v.iter()
                    .map(|w| w.shape.iter().product::<usize>() as u64)
                    .sum()
            };
            assert_eq!(op.params(), size(&params), "{}", op.tag());
            assert_eq!(op.buffers(), size(&buffers), "{}", op.tag());
        }
    }
}
