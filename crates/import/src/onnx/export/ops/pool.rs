//! Pooling: `MaxPool2d` → `MaxPool`, `AvgPool2d` → `AveragePool`, `AdaptiveAvgPool2d` →
//! `GlobalAveragePool` (to 1×1), `AveragePool` with kernel = stride = input/output when
//! the input size is a multiple of the output size, `Identity` when they are equal, and
//! otherwise (ONNX has no adaptive pooling) `MatMul(Aₕ, x) → MatMul(·, A_wᵀ)` with
//! PyTorch's averaging windows `[⌊i·in/out⌋, ⌈(i+1)·in/out⌉)` as constant matrices:
//! exact, for any sizes (AlexNet's and VGG's fixed 6×6 / 7×7 pools at small inputs).

use super::{hw, input, pads, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::Op;

/// A ceil-mode window larger than the padded input (Caffe's AlexNet at small sizes: a
/// 3×3 pool of a 2×2 map) becomes explicit end padding in floor mode, which OpenVINO
/// reads where it refuses the other: for a max, padding is never the maximum, so the
/// windows and their values are the same. Every other pool keeps its ceil mode.
pub(super) fn max_pool(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::MaxPool2d(p) = site.op else {
        return Err(wrong_op(site));
    };
    let mut padding = pads(p.padding);
    let mut ceil_mode = p.ceil_mode;
    let [kh, kw] = hw(p.kernel);
    let window_too_large = site
        .input_shapes
        .first()
        .and_then(|s| s.as_chw())
        .is_some_and(|(_, h, w)| {
            kh > h as i64 + padding[0] + padding[2] || kw > w as i64 + padding[1] + padding[3]
        });
    if ceil_mode && window_too_large {
        ceil_mode = false;
        let (Some((_, h, w)), Some((_, oh, ow))) = (
            site.input_shapes.first().and_then(|s| s.as_chw()),
            site.shape.as_chw(),
        ) else {
            return Err(site.unsupported("needs a C×H×W input and output"));
        };
        let [sh, sw] = hw(p.effective_stride());
        // The floor-mode output (n + pads − k) / s + 1 is the ceil-mode one when the
        // padded input ends where the last window does.
        let end = |out: usize, stride: i64, kernel: i64, n: usize, begin: i64, end: i64| {
            ((out as i64 - 1) * stride + kernel - n as i64 - begin).max(end)
        };
        padding[2] = end(oh, sh, kh, h, padding[0], padding[2]);
        padding[3] = end(ow, sw, kw, w, padding[1], padding[3]);
    }
    emit.node(
        "MaxPool",
        site.name,
        &[input(site)],
        site.name,
        vec![
            attr::ints("kernel_shape", &hw(p.kernel)),
            attr::ints("strides", &hw(p.effective_stride())),
            attr::ints("pads", &padding),
            attr::int("ceil_mode", ceil_mode as i64),
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
        let rows = averaging(h, oh);
        let mut cols_t = vec![0.0f32; w * ow];
        for (i, row) in averaging(w, ow).chunks_exact(w).enumerate() {
            for (j, v) in row.iter().enumerate() {
                cols_t[j * ow + i] = *v;
            }
        }
        let a_rows = emit.floats(site.sub("row_average"), vec![oh as i64, h as i64], &rows);
        let a_cols = emit.floats(
            site.sub("column_average"),
            vec![w as i64, ow as i64],
            &cols_t,
        );
        let pooled_rows = site.sub("rows");
        emit.node("MatMul", site.name, &[&a_rows, x], &pooled_rows, Vec::new());
        emit.node(
            "MatMul",
            &site.sub("columns"),
            &[&pooled_rows, &a_cols],
            site.name,
            Vec::new(),
        );
    }
    Ok(())
}

/// The `out × size` matrix whose row i averages PyTorch's adaptive window i of `size`.
pub(crate) fn averaging(size: usize, out: usize) -> Vec<f32> {
    let mut a = vec![0.0f32; out * size];
    for i in 0..out {
        let start = i * size / out;
        let end = ((i + 1) * size).div_ceil(out);
        for j in start..end {
            a[i * size + j] = 1.0 / (end - start) as f32;
        }
    }
    a
}
