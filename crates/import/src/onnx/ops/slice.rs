//! `Slice` of the channel axis with step 1 (ShuffleNet-v2's channel split), into
//! SliceChannels; starts, ends and axes must be constants.

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::ImportError;

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let x = ctx.tensor(node, 0)?;
    let ints = |i: usize| ctx.weight(node, i).map(|c| c.ints.clone());
    let (Some(starts), Some(ends)) = (ints(1), ints(2)) else {
        return Err(node.error("starts and ends must be constants"));
    };
    let axes = if node.has_input(3) {
        ints(3).ok_or_else(|| node.error("axes must be a constant"))?
    } else {
        (0..starts.len() as i64).collect()
    };
    let steps = if node.has_input(4) {
        ints(4).ok_or_else(|| node.error("steps must be a constant"))?
    } else {
        vec![1; starts.len()]
    };
    let channels = x.channels() as i64;
    let (start, end) = match (starts.as_slice(), ends.as_slice(), axes.as_slice(), steps.as_slice())
    {
        ([s], [e], [1 | -3], [1]) => {
            // ONNX clamps out-of-range bounds and counts negative ones from the end.
            let clamp = |v: i64| (if v < 0 { v + channels } else { v }).clamp(0, channels);
            (clamp(*s), clamp(*e))
        }
        _ => {
            return Err(node.error(format!(
                "slice of axes {axes:?} with steps {steps:?}; only a slice of the channel axis (1) with step 1 is supported"
            )))
        }
    };
    Ok(ctx
        .builder
        .slice_channels(node.name.clone(), &x, start as usize, end as usize)
        .into())
}
