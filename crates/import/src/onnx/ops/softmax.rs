//! `Softmax` and `LogSoftmax` at the graph's output, which are dropped: the benchmark's
//! output is the class scores. Anywhere else they are not supported.

use super::{unsupported, Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::Val;
use crate::ImportError;

pub(super) fn convert(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    if !ctx.outputs.contains(node.output.as_str()) {
        return Err(unsupported(node));
    }
    Ok(Output::Value(Val::Tensor(ctx.tensor(node, 0)?)))
}
