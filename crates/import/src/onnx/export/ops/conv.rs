//! `Conv2d` → `Conv` (weight W `[out, in/groups, kh, kw]`, optional bias B).

use super::{hw, input, pads, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::Op;

pub(super) fn conv(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::Conv2d(c) = site.op else {
        return Err(wrong_op(site));
    };
    let w = emit.weight(site, "weight", None)?;
    let mut inputs = vec![input(site).to_string(), w];
    if c.bias {
        inputs.push(emit.weight(site, "bias", None)?);
    }
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    emit.node(
        "Conv",
        site.name,
        &inputs,
        site.name,
        vec![
            attr::ints("kernel_shape", &hw(c.kernel)),
            attr::ints("strides", &hw(c.stride)),
            attr::ints("pads", &pads(c.padding)),
            attr::ints("dilations", &hw(c.dilation)),
            attr::int("group", c.groups as i64),
        ],
    );
    Ok(())
}
