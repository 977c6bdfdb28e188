//! Normalisations and scales: `BatchNorm2d` → `BatchNormalization` (ONNX's momentum is
//! the old statistics' weight, PyTorch's the new ones'), `LayerNorm2d` →
//! `Transpose → LayerNormalization → Transpose` (as torchvision's ConvNeXt exports),
//! `LocalResponseNorm` → `LRN`, `LayerScale` → `Mul` by a C×1×1 constant.

use super::{input, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::Op;

pub(super) fn batch_norm(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::BatchNorm2d(b) = site.op else {
        return Err(wrong_op(site));
    };
    let c = b.num_features;
    let (scale, bias) = if b.affine {
        (
            emit.weight(site, "weight", None)?,
            emit.weight(site, "bias", None)?,
        )
    } else {
        // Without learned γ and β ONNX still wants them: ones and zeros.
        (
            emit.floats(site.sub("scale"), vec![c as i64], &vec![1.0; c]),
            emit.floats(site.sub("shift"), vec![c as i64], &vec![0.0; c]),
        )
    };
    let mean = emit.weight(site, "running_mean", None)?;
    let var = emit.weight(site, "running_var", None)?;
    emit.node(
        "BatchNormalization",
        site.name,
        &[input(site), &scale, &bias, &mean, &var],
        site.name,
        vec![
            attr::float("epsilon", b.eps as f32),
            attr::float("momentum", (1.0 - b.momentum) as f32),
        ],
    );
    Ok(())
}

pub(super) fn layer_norm(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::LayerNorm2d(l) = site.op else {
        return Err(wrong_op(site));
    };
    let scale = emit.weight(site, "weight", None)?;
    let bias = emit.weight(site, "bias", None)?;
    let (nhwc, normed) = (site.sub("nhwc"), site.sub("layer_norm"));
    emit.node(
        "Transpose",
        site.name,
        &[input(site)],
        &nhwc,
        vec![attr::ints("perm", &[0, 2, 3, 1])],
    );
    emit.node(
        "LayerNormalization",
        &normed,
        &[&nhwc, &scale, &bias],
        &normed,
        vec![attr::int("axis", -1), attr::float("epsilon", l.eps as f32)],
    );
    emit.node(
        "Transpose",
        &site.sub("nchw"),
        &[&normed],
        site.name,
        vec![attr::ints("perm", &[0, 3, 1, 2])],
    );
    Ok(())
}

pub(super) fn lrn(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::LocalResponseNorm(l) = site.op else {
        return Err(wrong_op(site));
    };
    emit.node(
        "LRN",
        site.name,
        &[input(site)],
        site.name,
        vec![
            attr::int("size", l.size as i64),
            attr::float("alpha", l.alpha as f32),
            attr::float("beta", l.beta as f32),
            attr::float("bias", l.k as f32),
        ],
    );
    Ok(())
}

pub(super) fn layer_scale(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::LayerScale(l) = site.op else {
        return Err(wrong_op(site));
    };
    let gamma = emit.weight(site, "scale", Some(vec![l.channels as i64, 1, 1]))?;
    emit.node(
        "Mul",
        site.name,
        &[input(site), &gamma],
        site.name,
        Vec::new(),
    );
    Ok(())
}
