//! The operator set of the IR: each op's parameters, validation, shape inference and counts.
//!
//! Adding an op means adding a variant here (its parameters in `params.rs`, its tag in
//! the model file's form, `wire.rs`) and handling it in [`Op::infer`] and the counting
//! methods; nothing else in the graph crate changes. Engines match on [`Op`].

use crate::geometry::{Hw, Pad2d, Shape};
use serde::{Deserialize, Serialize};

mod params;
mod wire;

pub use params::*;

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
mod tests;
