//! `Transpose` only as the start of a LayerNorm over channels, as torchvision's ConvNeXt
//! (and cnnbench's exporter) write it:
//! `Transpose(0,2,3,1) → LayerNormalization(last axis) → Transpose(0,3,1,2)`, folded into
//! one LayerNorm2d whose scale and bias are the LayerNormalization's.

use super::{Ctx, Output};
use crate::onnx::node::{decimal, Node};
use crate::onnx::weights::{Layout, WeightUse};
use crate::ImportError;
use cnnbench_graph::ops::{LayerNorm2d, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let (norm, back) = layer_norm_chain(ctx, node).ok_or_else(|| {
        node.error(
            "Transpose is supported only around a LayerNormalization over channels \
             (Transpose 0,2,3,1 → LayerNormalization on the last axis → Transpose 0,3,1,2)",
        )
    })?;
    let graph = ctx.graph;
    let ln = &graph.node[norm];
    let eps = ln
        .attribute
        .iter()
        .find(|a| a.name == "epsilon")
        .map_or(1e-5, |a| a.f);
    let op = LayerNorm2d {
        eps: decimal(eps),
        ..LayerNorm2d::new(x.channels())
    };
    ctx.uses.extend(WeightUse::inputs(
        &node.name,
        ln,
        &[(1, "weight", Layout::Vector), (2, "bias", Layout::Vector)],
    ));
    let y = ctx
        .builder
        .add(node.name.clone(), Op::LayerNorm2d(op), &[&x]);
    ctx.fold(&[norm, back], &y);
    Ok(y.into())
}

/// The indices of the LayerNormalization and the Transpose back to N×C×H×W.
fn layer_norm_chain(ctx: &Ctx, node: &Node) -> Option<(usize, usize)> {
    let graph = ctx.graph;
    let perm = |j: usize| {
        graph.node[j]
            .attribute
            .iter()
            .find(|a| a.name == "perm")
            .map(|a| a.ints.clone())
    };
    if node.ints("perm") != [0, 2, 3, 1] {
        return None;
    }
    let norm = ctx.only_reader(&node.output, "LayerNormalization")?;
    let ln = &graph.node[norm];
    let axis = ln
        .attribute
        .iter()
        .find(|a| a.name == "axis")
        .map_or(-1, |a| a.i);
    if !(axis == -1 || axis == 3) || ln.input.first() != Some(&node.output) {
        return None;
    }
    let back = ctx.only_reader(ln.output.first()?, "Transpose")?;
    (perm(back)? == [0, 3, 1, 2]).then_some((norm, back))
}
