//! `Flatten` (axis 1) and `Reshape` when it flattens: the target shape is a constant or
//! was computed from `Shape` at conversion time (see [`super::shape`]). A `Reshape` to
//! N×g×(C/g)×H×W followed by `Transpose(0,2,1,3,4)` and a `Reshape` back to N×C×H×W is a
//! channel shuffle (PyTorch's export of ShuffleNet's, and cnnbench's).

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::Val;
use crate::ImportError;
use cnnbench_graph::T;

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
        if let Some((groups, chain)) = shuffle_chain(ctx, node, &x, &target) {
            let y = ctx.builder.channel_shuffle(node.name.clone(), &x, groups);
            ctx.fold(&chain, &y);
            return Ok(y.into());
        }
        return Err(node.error(format!(
            "reshape to {target:?} is neither a flatten nor the start of a channel shuffle"
        )));
    }
    Ok(ctx.builder.flatten(node.name.clone(), &x).into())
}

/// The groups of a channel shuffle that starts with this reshape to `target`, and the
/// Transpose and Reshape that complete it.
fn shuffle_chain(
    ctx: &Ctx,
    node: &Node,
    x: &T,
    target: &[Option<i64>],
) -> Option<(usize, [usize; 2])> {
    let (c, h, w) = x.shape().as_chw()?;
    let [_, Some(g), Some(per_group), Some(th), Some(tw)] = *target else {
        return None;
    };
    let (c, h, w) = (c as i64, h as i64, w as i64);
    if g < 1 || g.checked_mul(per_group)? != c || (th, tw) != (h, w) {
        return None;
    }
    let graph = ctx.graph;
    let swap = ctx.only_reader(&node.output, "Transpose")?;
    let perm = graph.node[swap]
        .attribute
        .iter()
        .find(|a| a.name == "perm")
        .map(|a| a.ints.clone())?;
    if perm != [0, 2, 1, 3, 4] {
        return None;
    }
    let back = ctx.only_reader(graph.node[swap].output.first()?, "Reshape")?;
    let back_target = graph.node[back]
        .input
        .get(1)
        .and_then(|n| ctx.consts.get(n))
        .map(|k| k.ints.clone())?;
    match back_target.as_slice() {
        [_, tc, th, tw] if (*tc, *th, *tw) == (c, h, w) => Some((g as usize, [swap, back])),
        _ => None,
    }
}
