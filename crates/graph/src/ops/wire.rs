//! The model file's form of an op: one tagged variant per JSON tag. [`OP_TAGS`] is
//! derived from it, so the list of supported tags cannot drift from what parses.

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
