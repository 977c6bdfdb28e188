//! `Constant`: a tensor (`value`) or one of the scalar and list forms, kept with the
//! initializers (it may be a weight or a shape operand).

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::{read_const, Const, DATA_FLOAT, DATA_INT64};
use crate::ImportError;

pub(super) fn convert(_ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let value = node
        .attr("value")
        .and_then(|a| a.t.as_ref())
        .map(read_const)
        .or_else(|| {
            node.attr("value_ints").map(|a| Const {
                dims: vec![a.ints.len() as i64],
                ints: a.ints.clone(),
                data_type: DATA_INT64,
                ..Const::default()
            })
        })
        .or_else(|| {
            node.attr("value_int").map(|a| Const {
                ints: vec![a.i],
                data_type: DATA_INT64,
                ..Const::default()
            })
        })
        .or_else(|| {
            node.attr("value_float").map(|a| Const {
                floats: vec![a.f],
                data_type: DATA_FLOAT,
                ..Const::default()
            })
        })
        .ok_or_else(|| node.error("has no supported value attribute"))?;
    Ok(Output::Constant(value))
}
