//! Pooling: `MaxPool` and `AveragePool` (2-D, undilated), `GlobalAveragePool`, and
//! `ReduceMean` over the spatial axes, which is a global average pool (flattened unless
//! `keepdims`).

use super::{Ctx, Output};
use crate::onnx::node::{padding, Node};
use crate::ImportError;
use cnnbench_graph::ops::{AvgPool2d, MaxPool2d};
use cnnbench_graph::Hw;

pub(super) fn max_or_average(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let kernel = node.hw("kernel_shape", 0)?;
    let stride = node.hw("strides", 1)?;
    if node.ints("dilations").iter().any(|&d| d != 1) {
        return Err(node.error("dilated pooling is not supported"));
    }
    let pad = padding(node, &x, kernel, stride, Hw::square(1))?;
    let ceil = node.int("ceil_mode", 0) != 0;
    let name = node.name.clone();
    let y = if node.op_type() == "MaxPool" {
        ctx.builder.max_pool(
            name,
            &x,
            MaxPool2d::new(kernel, stride).padding(pad).ceil_mode(ceil),
        )
    } else {
        let mut pool = AvgPool2d::new(kernel, stride);
        pool.padding = pad;
        pool.ceil_mode = ceil;
        pool.count_include_pad = node.int("count_include_pad", 0) != 0;
        ctx.builder.avg_pool(name, &x, pool)
    };
    Ok(y.into())
}

pub(super) fn global_average(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    Ok(ctx
        .builder
        .adaptive_avg_pool(node.name.clone(), &x, 1, 1)
        .into())
}

/// The axes are input 1 from opset 18, the attribute `axes` before.
pub(super) fn reduce_mean(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let axes = if node.has_input(1) {
        ctx.weight(node, 1)
            .map(|c| c.ints.clone())
            .ok_or_else(|| node.error("axes must be a constant"))?
    } else {
        node.ints("axes")
    };
    let mut axes: Vec<i64> = axes
        .iter()
        .map(|&a| if a < 0 { a + 4 } else { a })
        .collect();
    axes.sort_unstable();
    if axes != [2, 3] {
        return Err(node.error(format!(
            "mean over axes {axes:?}; only the spatial axes [2, 3] are supported"
        )));
    }
    let name = &node.name;
    let pooled = ctx.builder.adaptive_avg_pool(name.clone(), &x, 1, 1);
    if node.int("keepdims", 1) == 0 {
        Ok(ctx
            .builder
            .flatten(format!("{name}.flatten"), &pooled)
            .into())
    } else {
        Ok(pooled.into())
    }
}
