//! Building blocks shared by the modern families: torchvision's `Conv2dNormActivation`,
//! `SqueezeExcitation` and the channel rounding of the MobileNets.

use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{GraphBuilder, T};

/// The non-linearities the modern families use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    Relu,
    Relu6,
    Silu,
    Hardswish,
    Hardsigmoid,
    Sigmoid,
}

impl Act {
    pub(crate) fn apply(self, b: &mut GraphBuilder, name: String, x: &T) -> T {
        match self {
            Act::Relu => b.relu(name, x),
            Act::Relu6 => b.relu6(name, x),
            Act::Silu => b.silu(name, x),
            Act::Hardswish => b.hardswish(name, x),
            Act::Hardsigmoid => b.hardsigmoid(name, x),
            Act::Sigmoid => b.sigmoid(name, x),
        }
    }
}

/// Batch-norm settings (eps, momentum); PyTorch's defaults are 1e-5 and 0.1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Norm {
    pub eps: f64,
    pub momentum: f64,
}

pub(crate) const BN: Norm = Norm {
    eps: 1e-5,
    momentum: 0.1,
};

/// torchvision `Conv2dNormActivation`: a bias-free convolution (`{prefix}.0`), batch
/// norm (`{prefix}.1`) and an optional activation (`{prefix}.2`). The padding keeps the
/// size ("same" for odd kernels) unless the convolution sets its own.
pub(crate) fn conv_norm_act(
    b: &mut GraphBuilder,
    prefix: &str,
    x: &T,
    conv: Conv2d,
    norm: Norm,
    act: Option<Act>,
) -> T {
    let conv = if conv.padding.is_zero() {
        let pad = [(conv.kernel.h - 1) / 2, (conv.kernel.w - 1) / 2];
        conv.padding(pad)
    } else {
        conv
    };
    let y = b.conv(format!("{prefix}.0"), x, conv.bias(false));
    let y = b.batch_norm_with(format!("{prefix}.1"), &y, norm.eps, norm.momentum);
    match act {
        Some(act) => act.apply(b, format!("{prefix}.2"), &y),
        None => y,
    }
}

/// torchvision `SqueezeExcitation`: global average pool, 1×1 convolution to `squeeze`
/// channels, `act`, 1×1 convolution back, `gate`, and the channel-wise product.
pub(crate) fn squeeze_excitation(
    b: &mut GraphBuilder,
    prefix: &str,
    x: &T,
    squeeze: usize,
    act: Act,
    gate: Act,
) -> T {
    let s = b.adaptive_avg_pool(format!("{prefix}.avgpool"), x, 1, 1);
    let s = b.conv(format!("{prefix}.fc1"), &s, Conv2d::new(squeeze, 1));
    let s = act.apply(b, format!("{prefix}.activation"), &s);
    let s = b.conv(format!("{prefix}.fc2"), &s, Conv2d::new(x.channels(), 1));
    let s = gate.apply(b, format!("{prefix}.scale_activation"), &s);
    b.mul(format!("{prefix}.scale"), x, &s)
}

/// The MobileNets' rounding of a channel count to a multiple of `divisor` that is at
/// least `divisor` and never more than 10% below `v`.
pub(crate) fn make_divisible(v: f64, divisor: usize) -> usize {
    let d = divisor as f64;
    let mut rounded = (((v + d / 2.0) / d).floor() * d).max(d);
    if rounded < 0.9 * v {
        rounded += d;
    }
    rounded as usize
}

/// A drop probability to four decimals, so that model files show (and read back)
/// short numbers rather than 0.0058823529411764705.
pub(crate) fn rounded(p: f64) -> f64 {
    (p * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn make_divisible_matches_torchvision() {
        assert_eq!(make_divisible(32.0, 8), 32);
        assert_eq!(make_divisible(32.0 * 0.75, 8), 24);
        assert_eq!(make_divisible(16.0 * 0.35, 8), 8);
        assert_eq!(make_divisible(240.0 / 4.0, 8), 64);
        assert_eq!(make_divisible(72.0 / 4.0, 8), 24);
        assert_eq!(make_divisible(90.0, 8), 88);
        assert_eq!(make_divisible(91.0, 8), 88);
        assert_eq!(make_divisible(83.0, 8), 80);
    }
}
