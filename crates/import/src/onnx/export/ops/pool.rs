//! Pooling: `MaxPool2d` → `MaxPool`, `AvgPool2d` → `AveragePool`, `AdaptiveAvgPool2d` →
//! `GlobalAveragePool` (to 1×1), `AveragePool` with kernel = stride = input/output when
//! the input size is a multiple of the output size, `Identity` when they are equal.
//! ONNX has no adaptive pooling, so other sizes are refused with the sizes that work.

use super::{hw, input, pads, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::Op;

pub(super) fn max_pool(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::MaxPool2d(p) = site.op else {
        return Err(wrong_op(site));
    };
    emit.node(
        "MaxPool",
        site.name,
        &[input(site)],
        site.name,
        vec![
            attr::ints("kernel_shape", &hw(p.kernel)),
            attr::ints("strides", &hw(p.effective_stride())),
            attr::ints("pads", &pads(p.padding)),
            attr::int("ceil_mode", p.ceil_mode as i64),
        ],
    );
    Ok(())
}

pub(super) fn avg_pool(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::AvgPool2d(p) = site.op else {
        return Err(wrong_op(site));
    };
    emit.node(
        "AveragePool",
        site.name,
        &[input(site)],
        site.name,
        vec![
            attr::ints("kernel_shape", &hw(p.kernel)),
            attr::ints("strides", &hw(p.effective_stride())),
            attr::ints("pads", &pads(p.padding)),
            attr::int("ceil_mode", p.ceil_mode as i64),
            attr::int("count_include_pad", p.count_include_pad as i64),
        ],
    );
    Ok(())
}

pub(super) fn adaptive_avg_pool(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::AdaptiveAvgPool2d(p) = site.op else {
        return Err(wrong_op(site));
    };
    let Some((_, h, w)) = site.input_shapes.first().and_then(|s| s.as_chw()) else {
        return Err(site.unsupported("needs a C×H×W input"));
    };
    let (oh, ow) = (p.output.h, p.output.w);
    let x = input(site);
    if (oh, ow) == (1, 1) {
        emit.node("GlobalAveragePool", site.name, &[x], site.name, Vec::new());
    } else if (oh, ow) == (h, w) {
        emit.node("Identity", site.name, &[x], site.name, Vec::new());
    } else if h % oh == 0 && w % ow == 0 {
        let k = [(h / oh) as i64, (w / ow) as i64];
        emit.node(
            "AveragePool",
            site.name,
            &[x],
            site.name,
            vec![attr::ints("kernel_shape", &k), attr::ints("strides", &k)],
        );
    } else {
        return Err(site.unsupported(format!(
            "pooling {h}×{w} to {oh}×{ow}: ONNX has no adaptive pooling, and {h}×{w} is not a \
             multiple of {oh}×{ow}; build the model at an image size where it is (e.g. its \
             default size)"
        )));
    }
    Ok(())
}
