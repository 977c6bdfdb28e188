//! `LRN`: local response normalisation across channels (AlexNet, GoogLeNet).

use super::{Ctx, Output};
use crate::onnx::node::{to_usize, Node};
use crate::ImportError;
use cnnbench_graph::ops::LocalResponseNorm;

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let lrn = LocalResponseNorm {
        size: to_usize(node, "size", node.int("size", 0))?,
        alpha: node.float("alpha", 1e-4) as f64,
        beta: node.float("beta", 0.75) as f64,
        k: node.float("bias", 1.0) as f64,
    };
    let x = ctx.tensor(node, 0)?;
    Ok(ctx.builder.lrn(node.name.clone(), &x, lrn).into())
}
