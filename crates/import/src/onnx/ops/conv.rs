//! `Conv` (2-D, any groups and dilation): W must be an initializer, whose shape gives
//! the output channels and, when `kernel_shape` is absent, the kernel.

use super::{Ctx, Output};
use crate::onnx::node::{padding, to_usize, Node};
use crate::onnx::weights::{Layout, WeightUse};
use crate::ImportError;
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::Hw;

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let w = ctx
        .weight(node, 1)
        .ok_or_else(|| node.error("its weight W is not an initializer"))?;
    let [out_channels, _, kh, kw] = w.dims.as_slice() else {
        return Err(node.error(format!(
            "weight has shape {:?}; only 2-D convolutions are supported",
            w.dims
        )));
    };
    let kernel = match node.hw("kernel_shape", 0)? {
        k if k.h == 0 => Hw::new(to_usize(node, "W", *kh)?, to_usize(node, "W", *kw)?),
        k => k,
    };
    let stride = node.hw("strides", 1)?;
    let dilation = node.hw("dilations", 1)?;
    let pad = padding(node, &x, kernel, stride, dilation)?;
    let conv = Conv2d::new(to_usize(node, "W", *out_channels)?, kernel)
        .stride(stride)
        .dilation(dilation)
        .padding(pad)
        .groups(to_usize(node, "group", node.int("group", 1))?)
        .bias(node.has_input(2));
    ctx.uses.extend(WeightUse::inputs(
        &node.name,
        node.proto,
        &[(1, "weight", Layout::AsIs), (2, "bias", Layout::Vector)],
    ));
    Ok(ctx.builder.conv(node.name.clone(), &x, conv).into())
}
