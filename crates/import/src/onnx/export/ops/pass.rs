//! Ops that are the identity in inference: `Dropout` → `Dropout` (ratio as input 1, so
//! the file says what the network had), `StochasticDepth` → `Identity`.

use super::{input, wrong_op};
use crate::onnx::export::{Emitter, ExportError, Site};
use cnnbench_graph::Op;

pub(super) fn dropout(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::Dropout(d) = site.op else {
        return Err(wrong_op(site));
    };
    let ratio = emit.floats(site.sub("ratio"), Vec::new(), &[d.p as f32]);
    emit.node(
        "Dropout",
        site.name,
        &[input(site), &ratio],
        site.name,
        Vec::new(),
    );
    Ok(())
}

pub(super) fn stochastic_depth(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    emit.node("Identity", site.name, &[input(site)], site.name, Vec::new());
    Ok(())
}
