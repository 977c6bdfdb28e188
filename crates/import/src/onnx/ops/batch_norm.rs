//! `BatchNormalization` (inference form): scale, bias, running mean and variance are the
//! layer's weights; ONNX's momentum is the weight of the old statistics, PyTorch's that of
//! the new.

use super::{Ctx, Output};
use crate::onnx::node::{complement, decimal, Node};
use crate::onnx::weights::{Layout, WeightUse};
use crate::ImportError;
use cnnbench_graph::ops::{BatchNorm2d, Op};

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let mut bn = BatchNorm2d::new(x.channels());
    bn.eps = decimal(node.float("epsilon", 1e-5));
    bn.momentum = complement(node.float("momentum", 0.9));
    ctx.uses.extend(WeightUse::inputs(
        &node.name,
        node.proto,
        &[
            (1, "weight", Layout::Vector),
            (2, "bias", Layout::Vector),
            (3, "running_mean", Layout::Vector),
            (4, "running_var", Layout::Vector),
        ],
    ));
    Ok(ctx
        .builder
        .add(node.name.clone(), Op::BatchNorm2d(bn), &[&x])
        .into())
}
