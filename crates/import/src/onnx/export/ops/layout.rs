//! Ops that move values around: `Flatten` → `Flatten` (axis 1), `Concat` → `Concat` (axis
//! 1), `ChannelShuffle` → `Reshape → Transpose → Reshape` (as PyTorch exports it),
//! `SliceChannels` → `Slice` on axis 1.

use super::{input, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::Op;

pub(super) fn flatten(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    emit.node(
        "Flatten",
        site.name,
        &[input(site)],
        site.name,
        vec![attr::int("axis", 1)],
    );
    Ok(())
}

pub(super) fn concat(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let inputs: Vec<&str> = site.inputs.iter().map(String::as_str).collect();
    emit.node(
        "Concat",
        site.name,
        &inputs,
        site.name,
        vec![attr::int("axis", 1)],
    );
    Ok(())
}

pub(super) fn channel_shuffle(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::ChannelShuffle(s) = site.op else {
        return Err(wrong_op(site));
    };
    let Some((c, h, w)) = site.shape.as_chw() else {
        return Err(site.unsupported("needs a C×H×W input"));
    };
    let g = s.groups as i64;
    let (c, h, w) = (c as i64, h as i64, w as i64);
    let grouped_shape = emit.ints(site.sub("grouped_shape"), &[-1, g, c / g, h, w]);
    let map_shape = emit.ints(site.sub("map_shape"), &[-1, c, h, w]);
    let (grouped, swapped) = (site.sub("grouped"), site.sub("swapped"));
    emit.node(
        "Reshape",
        site.name,
        &[input(site), &grouped_shape],
        &grouped,
        Vec::new(),
    );
    emit.node(
        "Transpose",
        &swapped,
        &[&grouped],
        &swapped,
        vec![attr::ints("perm", &[0, 2, 1, 3, 4])],
    );
    emit.node(
        "Reshape",
        &site.sub("merged"),
        &[&swapped, &map_shape],
        site.name,
        Vec::new(),
    );
    Ok(())
}

pub(super) fn slice_channels(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::SliceChannels(s) = site.op else {
        return Err(wrong_op(site));
    };
    let starts = emit.ints(site.sub("starts"), &[s.start as i64]);
    let ends = emit.ints(site.sub("ends"), &[s.end as i64]);
    let axes = emit.ints(site.sub("axes"), &[1]);
    emit.node(
        "Slice",
        site.name,
        &[input(site), &starts, &ends, &axes],
        site.name,
        Vec::new(),
    );
    Ok(())
}
