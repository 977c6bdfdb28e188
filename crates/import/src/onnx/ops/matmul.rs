//! `MatMul` by a constant matrix as a linear layer (B is [in, out], so Linear's weight
//! is its transpose). When the product's only reader is an `Add` of a 1-D constant, that
//! Add is the layer's bias: it is folded in and skipped.

use super::{Ctx, Output};
use crate::onnx::node::{to_usize, Node};
use crate::onnx::weights::{Layout, WeightUse};
use crate::onnx::Val;
use crate::ImportError;
use cnnbench_graph::ops::{Linear, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    if ctx.weight(node, 0).is_some() {
        return adaptive_pool(ctx, node);
    }
    let x = ctx.tensor(node, 0)?;
    let w = ctx
        .weight(node, 1)
        .ok_or_else(|| node.error("its second operand is not an initializer"))?;
    let [_, out] = w.dims.as_slice() else {
        return Err(node.error("weight is not a matrix"));
    };
    let out = *out;
    let bias_add = bias_add(ctx, &node.output);
    let linear = Linear {
        bias: bias_add.is_some(),
        ..Linear::new(to_usize(node, "weight", out)?)
    };
    let name = &node.name;
    // B is [in, out]: Linear's weight is its transpose.
    ctx.uses.extend(WeightUse::inputs(
        name,
        node.proto,
        &[(1, "weight", Layout::Transpose)],
    ));
    let graph = ctx.graph;
    if let Some(j) = bias_add {
        if let Some(c) = graph.node[j].input.iter().find(|n| **n != node.output) {
            ctx.uses
                .push(WeightUse::new(name, "bias", c, Layout::Vector));
        }
    }
    let y = ctx.builder.add(name.clone(), Op::Linear(linear), &[&x]);
    if let Some(j) = bias_add {
        ctx.skip.insert(j);
        if let Some(o) = graph.node[j].output.first() {
            ctx.vals.insert(o.clone(), Val::Tensor(y.clone()));
        }
    }
    Ok(y.into())
}

/// `MatMul(Aₕ, x) → MatMul(·, A_wᵀ)` with constant `oh × h` and `w × ow` matrices: an
/// adaptive average pool to `oh × ow` (cnnbench's export of one whose input is not a
/// multiple of its output; the matrices are taken to be the averaging ones).
fn adaptive_pool(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let refuse = || {
        node.error(
            "MatMul with a constant first operand is supported only as adaptive average pooling \
             (MatMul(rows [oh, h], x) → MatMul(·, columns [w, ow]))",
        )
    };
    let x = ctx.tensor(node, 1)?;
    let (_, h, w) = x.shape().as_chw().ok_or_else(refuse)?;
    let rows = ctx
        .weight(node, 0)
        .map(|c| c.dims.clone())
        .unwrap_or_default();
    let [oh, rh] = rows.as_slice() else {
        return Err(refuse());
    };
    let graph = ctx.graph;
    let next = ctx.only_reader(&node.output, "MatMul").ok_or_else(refuse)?;
    let cols = graph.node[next]
        .input
        .get(1)
        .and_then(|n| ctx.consts.get(n))
        .map(|c| c.dims.clone())
        .unwrap_or_default();
    match cols.as_slice() {
        [cw, ow] if *rh as usize == h && *cw as usize == w && *oh > 0 && *ow > 0 => {
            let y = ctx.builder.adaptive_avg_pool(
                node.name.clone(),
                &x,
                to_usize(node, "rows", *oh)?,
                to_usize(node, "columns", *ow)?,
            );
            ctx.fold(&[next], &y);
            Ok(y.into())
        }
        _ => Err(refuse()),
    }
}

/// The index of the node that adds a bias to `product`: its only reader, an `Add` whose
/// other operand is a 1-D constant.
fn bias_add(ctx: &Ctx, product: &str) -> Option<usize> {
    let graph = ctx.graph;
    ctx.readers.get(product).and_then(|r| match r.as_slice() {
        [j] if graph.node[*j].op_type == "Add" => {
            let add = &graph.node[*j];
            add.input
                .iter()
                .find(|n| **n != product)
                .and_then(|n| ctx.consts.get(n))
                .filter(|c| c.dims.len() == 1)
                .map(|_| *j)
        }
        _ => None,
    })
}
