//! Element-wise activations: `Relu`, `Sigmoid` (SiLU when followed by a Mul by its input), `HardSwish`, `HardSigmoid` (PyTorch's
//! constants only) and `Clip` when it is a ReLU ([0, ∞)) or a ReLU6 ([0, 6]).

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::ImportError;
use cnnbench_graph::ops::Op;
use cnnbench_graph::Activation;

pub(super) fn relu(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    Ok(ctx.builder.relu(node.name.clone(), &x).into())
}

fn activation(ctx: &mut Ctx, node: &Node, activation: Activation) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    Ok(ctx
        .builder
        .add(node.name.clone(), Op::Activation(activation), &[&x])
        .into())
}

/// A Sigmoid whose only reader multiplies it by its own input is SiLU (PyTorch's
/// export of `nn.SiLU` before opset 24, and cnnbench's): the Mul is folded in.
pub(super) fn sigmoid(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let graph = ctx.graph;
    let silu_mul = ctx.only_reader(&node.output, "Mul").filter(|&j| {
        let inputs = &graph.node[j].input;
        let x = node.proto.input.first();
        inputs.len() == 2 && inputs.iter().any(|i| Some(i) == x) && inputs.contains(&node.output)
    });
    match silu_mul {
        Some(j) => {
            let x = ctx.tensor(node, 0)?;
            let y = ctx
                .builder
                .add(node.name.clone(), Op::Activation(Activation::Silu), &[&x]);
            ctx.fold(&[j], &y);
            Ok(y.into())
        }
        None => activation(ctx, node, Activation::Sigmoid),
    }
}

pub(super) fn hard_swish(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    activation(ctx, node, Activation::Hardswish)
}

pub(super) fn hard_sigmoid(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let (alpha, beta) = (node.float("alpha", 0.2), node.float("beta", 0.5));
    if (alpha - 1.0 / 6.0).abs() > 1e-4 || (beta - 0.5).abs() > 1e-6 {
        return Err(node.error(format!(
            "alpha {alpha}, beta {beta}: only PyTorch's hardsigmoid (alpha 1/6, beta 0.5) is supported"
        )));
    }
    activation(ctx, node, Activation::Hardsigmoid)
}

/// The bounds are inputs 1 and 2 from opset 11, attributes `min` and `max` before.
pub(super) fn clip(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let bound = |i: usize, attr: &str| -> Option<f32> {
        if ctx.opset >= 11 {
            ctx.weight(node, i).and_then(|c| c.floats.first().copied())
        } else {
            node.attr(attr).map(|a| a.f)
        }
    };
    let (lo, hi) = (bound(1, "min"), bound(2, "max"));
    let x = ctx.tensor(node, 0)?;
    let name = node.name.clone();
    match (lo, hi) {
        (Some(l), Some(h)) if l == 0.0 && h == 6.0 => Ok(ctx.builder.relu6(name, &x).into()),
        (Some(0.0), None) => Ok(ctx.builder.relu(name, &x).into()),
        _ => Err(node.error(format!(
            "clip to [{lo:?}, {hi:?}] is not supported; only ReLU ([0, ∞)) and ReLU6 ([0, 6])"
        ))),
    }
}
