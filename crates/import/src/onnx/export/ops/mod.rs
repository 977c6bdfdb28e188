//! One exporter per IR op, all with the same signature, and the exhaustive match that
//! picks one: an op added to the IR does not compile here until it exports (or refuses
//! with a reason).

mod activations;
mod conv;
mod elementwise;
mod layout;
mod linear;
mod norm;
mod pass;
mod pool;

use super::{Emitter, ExportError, Site};
use cnnbench_graph::Op;

/// The signature every exporter has: it adds the node's ONNX nodes (the last one
/// produces the value named after the IR node) and their constants.
type Export = fn(&mut Emitter, &Site) -> Result<(), ExportError>;

/// The exporter of an op.
fn exporter(op: &Op) -> Export {
    match op {
        Op::Conv2d(_) => conv::conv,
        Op::BatchNorm2d(_) => norm::batch_norm,
        Op::LayerNorm2d(_) => norm::layer_norm,
        Op::LocalResponseNorm(_) => norm::lrn,
        Op::LayerScale(_) => norm::layer_scale,
        Op::Activation(_) => activations::activation,
        Op::MaxPool2d(_) => pool::max_pool,
        Op::AvgPool2d(_) => pool::avg_pool,
        Op::AdaptiveAvgPool2d(_) => pool::adaptive_avg_pool,
        Op::Linear(_) => linear::linear,
        Op::Flatten(_) => layout::flatten,
        Op::Concat(_) => layout::concat,
        Op::ChannelShuffle(_) => layout::channel_shuffle,
        Op::SliceChannels(_) => layout::slice_channels,
        Op::Add(_) => elementwise::add,
        Op::Mul(_) => elementwise::mul,
        Op::Dropout(_) => pass::dropout,
        Op::StochasticDepth(_) => pass::stochastic_depth,
    }
}

/// Exports one node.
pub(super) fn export(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    exporter(site.op)(emit, site)
}

/// ONNX pads: `[top, left, bottom, right]`.
fn pads(p: cnnbench_graph::Pad2d) -> [i64; 4] {
    [p.top, p.left, p.bottom, p.right].map(|v| v as i64)
}

/// `[h, w]` as ONNX's 2-D attributes.
fn hw(v: cnnbench_graph::Hw) -> [i64; 2] {
    [v.h as i64, v.w as i64]
}

/// The exporter's view of an op it was not given (a dispatch bug, not a user error).
fn wrong_op(site: &Site) -> ExportError {
    site.unsupported("internal error: exporter called for another op")
}

/// The single input of a one-input op.
fn input<'s>(site: &'s Site) -> &'s str {
    site.inputs.first().map_or("", String::as_str)
}
