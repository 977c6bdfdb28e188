//! `Linear` → `Gemm` with transB = 1 (B is Linear's `[out, in]` weight as it is).

use super::{input, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::Op;

pub(super) fn linear(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::Linear(l) = site.op else {
        return Err(wrong_op(site));
    };
    let w = emit.weight(site, "weight", None)?;
    let mut inputs = vec![input(site).to_string(), w];
    if l.bias {
        inputs.push(emit.weight(site, "bias", None)?);
    }
    let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
    emit.node(
        "Gemm",
        site.name,
        &inputs,
        site.name,
        vec![attr::int("transB", 1)],
    );
    Ok(())
}
