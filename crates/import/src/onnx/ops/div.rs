//! `Div` only as the start of GELU's exact form, as PyTorch (and cnnbench's exporter)
//! write it at opsets without a `Gelu` operator:
//! `Div(x, √2) → Erf → Add(1) → Mul(x) → Mul(0.5)`, folded into one GELU.

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::ImportError;
use cnnbench_graph::{Activation, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let chain = gelu_chain(ctx, node).ok_or_else(|| {
        node.error(
            "Div is supported only as the start of GELU (Div by √2 → Erf → Add 1 → Mul by the input → Mul by 0.5)",
        )
    })?;
    let y = ctx
        .builder
        .add(node.name.clone(), Op::Activation(Activation::Gelu), &[&x]);
    ctx.fold(&chain, &y);
    Ok(y.into())
}

/// The indices of the Erf, Add, Mul and Mul that complete GELU after this Div.
fn gelu_chain(ctx: &Ctx, node: &Node) -> Option<[usize; 4]> {
    let graph = ctx.graph;
    let near = |v: f32, want: f32| (v - want).abs() <= 1e-4 * want.abs();
    let x = node.proto.input.first()?;
    let other = |j: usize, one: &str| -> Option<&String> {
        let inputs = &graph.node[j].input;
        match inputs.as_slice() {
            [a, b] if a == one => Some(b),
            [a, b] if b == one => Some(a),
            _ => None,
        }
    };
    let out = |j: usize| graph.node[j].output.first();
    if !near(
        ctx.scalar(node.proto.input.get(1)?)?,
        std::f32::consts::SQRT_2,
    ) {
        return None;
    }
    let erf = ctx.only_reader(&node.output, "Erf")?;
    let add = ctx.only_reader(out(erf)?, "Add")?;
    if !near(ctx.scalar(other(add, out(erf)?)?)?, 1.0) {
        return None;
    }
    let times_x = ctx.only_reader(out(add)?, "Mul")?;
    if other(times_x, out(add)?)? != x {
        return None;
    }
    let half = ctx.only_reader(out(times_x)?, "Mul")?;
    if !near(ctx.scalar(other(half, out(times_x)?)?)?, 0.5) {
        return None;
    }
    Some([erf, add, times_x, half])
}
