//! Each op's parameters, with their defaults, checks and counts.

use super::*;

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
