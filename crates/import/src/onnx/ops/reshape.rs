//! `Flatten` (axis 1) and `Reshape` when it flattens: the target shape is a constant or
//! was computed from `Shape` at conversion time (see [`super::shape`]).

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::Val;
use crate::ImportError;

pub(super) fn flatten(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    if node.int("axis", 1) != 1 {
        return Err(node.error("only axis 1 is supported"));
    }
    let x = ctx.tensor(node, 0)?;
    Ok(ctx.builder.flatten(node.name.clone(), &x).into())
}

pub(super) fn reshape(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let shape_value = node.proto.input.get(1).and_then(|n| ctx.vals.get(n));
    let target: Vec<Option<i64>> = match (shape_value, ctx.weight(node, 1)) {
        (Some(Val::Ints(v)), _) => v.clone(),
        (_, Some(c)) => c.ints.iter().map(|&v| Some(v)).collect(),
        _ => return Err(node.error("the target shape must be computable at conversion time")),
    };
    let features = x.shape().elements() as i64;
    // The batch entry: symbolic, 0 (copy), -1 (infer) or the export's batch size.
    let is_batch = |d: &Option<i64>| match d {
        None | Some(0) => true,
        Some(-1) => true,
        Some(n) => Some(*n) == ctx.export_batch,
    };
    let flattens = match target.as_slice() {
        [batch, Some(rest)] => {
            is_batch(batch) && (*rest == features || (*rest == -1 && *batch != Some(-1)))
        }
        _ => false,
    };
    if !flattens {
        return Err(node.error(format!(
            "reshape to {target:?} is not a flatten; only flattening reshapes are supported"
        )));
    }
    Ok(ctx.builder.flatten(node.name.clone(), &x).into())
}
