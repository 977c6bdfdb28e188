//! `Gemm` as a linear layer (transA 0, alpha 1, beta 1): B is [out, in] with transB,
//! [in, out] without; the input is flattened first unless it already is.

use super::{Ctx, Output};
use crate::onnx::node::{to_usize, Node};
use crate::onnx::weights::{Layout, WeightUse};
use crate::ImportError;
use cnnbench_graph::ops::{Linear, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let w = ctx
        .weight(node, 1)
        .ok_or_else(|| node.error("its weight B is not an initializer"))?;
    if node.int("transA", 0) != 0
        || node.float("alpha", 1.0) != 1.0
        || node.float("beta", 1.0) != 1.0
    {
        return Err(
            node.error("only Gemm with transA 0, alpha 1 and beta 1 (a linear layer) is supported")
        );
    }
    let [d0, d1] = w.dims.as_slice() else {
        return Err(node.error("weight B is not a matrix"));
    };
    let trans_b = node.int("transB", 0) != 0;
    let out = if trans_b { *d0 } else { *d1 };
    let name = &node.name;
    let flat = if x.shape().rank() == 1 {
        x
    } else {
        ctx.builder.flatten(format!("{name}.flatten"), &x)
    };
    let linear = Linear {
        bias: node.has_input(2),
        ..Linear::new(to_usize(node, "B", out)?)
    };
    // B is [out, in] (Linear's layout) with transB, else [in, out].
    let layout = if trans_b {
        Layout::AsIs
    } else {
        Layout::Transpose
    };
    ctx.uses.extend(WeightUse::inputs(
        name,
        node.proto,
        &[(1, "weight", layout), (2, "bias", Layout::Vector)],
    ));
    Ok(ctx
        .builder
        .add(name.clone(), Op::Linear(linear), &[&flat])
        .into())
}
