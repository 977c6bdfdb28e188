//! `Dropout` and `Identity`: of a constant, another name for it; of a tensor, a dropout
//! layer (with the ratio of input 1 or the `ratio` attribute) or the tensor itself.

use super::{Ctx, Output};
use crate::onnx::node::{decimal, Node};
use crate::onnx::Val;
use crate::ImportError;

pub(super) fn dropout(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    pass_through(ctx, node, true)
}

pub(super) fn identity(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    pass_through(ctx, node, false)
}

fn pass_through(ctx: &mut Ctx, node: &Node, dropout: bool) -> Result<Output, ImportError> {
    let input = node
        .proto
        .input
        .first()
        .ok_or_else(|| node.error("has no input"))?;
    if let Some(c) = ctx.consts.get(input) {
        return Ok(Output::Constant(c.clone()));
    }
    let x = ctx.tensor(node, 0)?;
    if !dropout {
        return Ok(Output::Value(Val::Tensor(x)));
    }
    let p = ctx
        .weight(node, 1)
        .and_then(|c| c.floats.first().copied())
        .unwrap_or_else(|| node.float("ratio", 0.5));
    Ok(ctx
        .builder
        .dropout(node.name.clone(), &x, decimal(p))
        .into())
}
