//! Activations: `Relu`, `Clip` [0, 6] for ReLU6, `Sigmoid`, `HardSwish`, `HardSigmoid`
//! (alpha 1/6, beta 0.5: PyTorch's), SiLU as `Sigmoid → Mul` and GELU as
//! `Div(√2) → Erf → Add(1) → Mul(x) → Mul(0.5)` (opset 17 has neither; these are the
//! patterns PyTorch's exporter writes, which the importer folds back).

use super::{input, wrong_op};
use crate::onnx::export::{attr, Emitter, ExportError, Site};
use cnnbench_graph::{Activation, Op};

pub(super) fn activation(emit: &mut Emitter, site: &Site) -> Result<(), ExportError> {
    let Op::Activation(a) = site.op else {
        return Err(wrong_op(site));
    };
    let x = input(site);
    let name = site.name;
    match a {
        Activation::Relu => emit.node("Relu", name, &[x], name, Vec::new()),
        Activation::Relu6 => {
            let lo = emit.floats(site.sub("min"), Vec::new(), &[0.0]);
            let hi = emit.floats(site.sub("max"), Vec::new(), &[6.0]);
            emit.node("Clip", name, &[x, &lo, &hi], name, Vec::new());
        }
        Activation::Sigmoid => emit.node("Sigmoid", name, &[x], name, Vec::new()),
        Activation::Hardswish => emit.node("HardSwish", name, &[x], name, Vec::new()),
        Activation::Hardsigmoid => emit.node(
            "HardSigmoid",
            name,
            &[x],
            name,
            vec![attr::float("alpha", 1.0 / 6.0), attr::float("beta", 0.5)],
        ),
        Activation::Silu => {
            let gate = site.sub("sigmoid");
            emit.node("Sigmoid", name, &[x], &gate, Vec::new());
            emit.node("Mul", &site.sub("mul"), &[x, &gate], name, Vec::new());
        }
        Activation::Gelu => {
            let sqrt2 = emit.floats(site.sub("sqrt2"), Vec::new(), &[std::f32::consts::SQRT_2]);
            let one = emit.floats(site.sub("one"), Vec::new(), &[1.0]);
            let half = emit.floats(site.sub("half"), Vec::new(), &[0.5]);
            let (scaled, erf, plus1, times_x) = (
                site.sub("div"),
                site.sub("erf"),
                site.sub("add"),
                site.sub("mul"),
            );
            emit.node("Div", name, &[x, &sqrt2], &scaled, Vec::new());
            emit.node("Erf", &erf, &[&scaled], &erf, Vec::new());
            emit.node("Add", &plus1, &[&erf, &one], &plus1, Vec::new());
            emit.node("Mul", &times_x, &[x, &plus1], &times_x, Vec::new());
            emit.node(
                "Mul",
                &site.sub("mul_half"),
                &[&times_x, &half],
                name,
                Vec::new(),
            );
        }
    }
    Ok(())
}
