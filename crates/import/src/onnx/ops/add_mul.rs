//! `Add`, `Sum` and `Mul` of tensors (residual sums, squeeze-and-excitation gates), and
//! `Mul` by a per-channel constant (C, C×1×1 or 1×C×1×1): a LayerScale. Other constant
//! operands are refused, except a MatMul's bias, which [`super::matmul`] folds.

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::weights::{Layout, WeightUse};
use crate::ImportError;
use cnnbench_graph::ops::{LayerScale, NoParams, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    if node.op_type() == "Mul" {
        if let Some(scaled) = layer_scale(ctx, node)? {
            return Ok(scaled);
        }
    }
    let constant_error = |e: ImportError| {
        match e {
        ImportError::Layer { message, .. } if message.contains("constant") => node.error(format!(
            "{} with a constant operand is not supported (only between two tensors, as a MatMul's bias or a per-channel scale)",
            node.op_type()
        )),
        other => other,
    }
    };
    let a = ctx.tensor(node, 0).map_err(constant_error)?;
    let c = ctx.tensor(node, 1).map_err(constant_error)?;
    if node.op_type() == "Sum" {
        let mut all = vec![a, c];
        for i in 2..node.proto.input.len() {
            all.push(ctx.tensor(node, i).map_err(constant_error)?);
        }
        let refs: Vec<_> = all.iter().collect();
        return Ok(ctx
            .builder
            .add(node.name.clone(), Op::Add(NoParams {}), &refs)
            .into());
    }
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

/// A Mul of a feature map by a constant with one value per channel.
fn layer_scale(ctx: &mut Ctx, node: &Node) -> Result<Option<Output>, ImportError> {
    let (tensor_at, constant_at) = match (ctx.weight(node, 0), ctx.weight(node, 1)) {
        (None, Some(_)) => (0, 1),
        (Some(_), None) => (1, 0),
        _ => return Ok(None),
    };
    let x = ctx.tensor(node, tensor_at)?;
    let Some((channels, _, _)) = x.shape().as_chw() else {
        return Ok(None);
    };
    let dims = ctx
        .weight(node, constant_at)
        .map(|c| c.dims.clone())
        .unwrap_or_default();
    let per_channel =
        matches!(dims.as_slice(), [c] | [c, 1, 1] | [1, c, 1, 1] if *c as usize == channels);
    if !per_channel {
        return Ok(None);
    }
    ctx.uses.extend(WeightUse::inputs(
        &node.name,
        node.proto,
        &[(constant_at, "scale", Layout::PerChannel)],
    ));
    Ok(Some(
        ctx.builder
            .add(
                node.name.clone(),
                Op::LayerScale(LayerScale::new(channels)),
                &[&x],
            )
            .into(),
    ))
}
