//! The shape arithmetic exporters emit before a flattening `Reshape` (`Shape → Gather →
//! Unsqueeze → Concat`), folded at conversion time into small integer vectors
//! ([`Val::Ints`]; `None` stands for the batch size).

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::Val;
use crate::ImportError;

pub(super) fn shape(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let mut dims = vec![None];
    dims.extend(x.shape().0.iter().map(|&d| Some(d as i64)));
    Ok(Output::Value(Val::Ints(dims)))
}

/// Picks entries of a shape value by constant indices.
pub(super) fn gather(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let source = node.proto.input.first().and_then(|n| ctx.vals.get(n));
    let Some(Val::Ints(values)) = source else {
        return Err(node.error("only gathering from a shape is supported"));
    };
    let indices = ctx
        .weight(node, 1)
        .map(|c| c.ints.clone())
        .ok_or_else(|| node.error("indices must be a constant"))?;
    let picked: Vec<Option<i64>> = indices
        .iter()
        .map(|&i| {
            let i = if i < 0 { i + values.len() as i64 } else { i };
            values
                .get(i as usize)
                .copied()
                .ok_or_else(|| node.error(format!("index {i} out of range")))
        })
        .collect::<Result<_, _>>()?;
    Ok(Output::Value(Val::Ints(picked)))
}

/// `Unsqueeze` and `Squeeze` of a shape value leave it as it is.
pub(super) fn squeeze(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    match node.proto.input.first().and_then(|n| ctx.vals.get(n)) {
        Some(Val::Ints(values)) => Ok(Output::Value(Val::Ints(values.clone()))),
        _ => Err(node.error("only (un)squeezing shape values is supported")),
    }
}
