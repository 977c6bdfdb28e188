//! `Add` → `Add` (two inputs) or `Sum` (more); `Mul` → `Mul` (ONNX broadcasting covers
//! a squeeze-and-excitation gate C×1×1 against the C×H×W map).

use crate::onnx::export::{Emitter, ExportError, Site};

pub(super) fn add(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let op_type = if site.inputs.len() == 2 { "Add" } else { "Sum" };
    let inputs: Vec<&str> = site.inputs.iter().map(String::as_str).collect();
    emit.node(op_type, site.name, &inputs, site.name, Vec::new());
    Ok(())
}

pub(super) fn mul(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let inputs: Vec<&str> = site.inputs.iter().map(String::as_str).collect();
    emit.node("Mul", site.name, &inputs, site.name, Vec::new());
    Ok(())
}
