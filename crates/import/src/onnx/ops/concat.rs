//! `Concat`: of shape values (folded at conversion time, constants included) or of
//! tensors along the channels.

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::Val;
use crate::ImportError;
use cnnbench_graph::T;

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let first = node.proto.input.first().and_then(|n| {
        ctx.vals.get(n).cloned().or_else(|| {
            ctx.consts
                .get(n)
                .map(|c| Val::Ints(c.ints.iter().map(|&v| Some(v)).collect()))
        })
    });
    if let Some(Val::Ints(_)) = first {
        return shapes(ctx, node);
    }
    let axis = node.int("axis", 1);
    if axis != 1 && axis != -3 {
        return Err(node.error(format!(
            "concatenation along axis {axis}; only channels (axis 1) are supported"
        )));
    }
    let xs: Vec<T> = (0..node.proto.input.len())
        .map(|i| ctx.tensor(node, i))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&T> = xs.iter().collect();
    Ok(ctx.builder.concat(node.name.clone(), &refs).into())
}

/// Shape values and integer constants, joined.
fn shapes(ctx: &Ctx, node: &Node) -> Result<Output, ImportError> {
    let mut all = Vec::new();
    for n in &node.proto.input {
        match (ctx.vals.get(n), ctx.consts.get(n)) {
            (Some(Val::Ints(v)), _) => all.extend(v.iter().copied()),
            (None, Some(c)) => all.extend(c.ints.iter().map(|&v| Some(v))),
            _ => return Err(node.error("mixes shape values and tensors")),
        }
    }
    Ok(Output::Value(Val::Ints(all)))
}
