//! `Add`, `Sum` and `Mul` of two tensors (residual sums, squeeze-and-excitation gates).
//! A constant operand is refused, except a MatMul's bias, which [`super::matmul`] folds.

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::ImportError;
use cnnbench_graph::ops::{NoParams, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let a = ctx.tensor(node, 0)?;
    let c = ctx.tensor(node, 1).map_err(|e| match e {
        ImportError::Layer { message, .. } if message.contains("constant") => node.error(format!(
            "{} with a constant operand is not supported (only between two tensors, or as a MatMul's bias)",
            node.op_type()
        )),
        other => other,
    })?;
    let op = if node.op_type() == "Mul" {
        Op::Mul(NoParams {})
    } else {
        Op::Add(NoParams {})
    };
    // The smaller operand (a squeeze-excitation gate) goes second.
    let (first, second) = if a.shape().elements() >= c.shape().elements() {
        (a, c)
    } else {
        (c, a)
    };
    Ok(ctx
        .builder
        .add(node.name.clone(), op, &[&first, &second])
        .into())
}
