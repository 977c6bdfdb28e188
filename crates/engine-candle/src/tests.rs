//! candle-specific checks; correctness of every op, forward and backward, is the engine
//! kit's conformance suite, run here with burn-flex as the reference.

use crate::*;
use cnnbench_engine::Precision;
use cnnbench_graph::ops::*;
use cnnbench_graph::GraphBuilder;

fn candle() -> Box<dyn Engine> {
    Box::new(CandleEngine::new(None).unwrap())
}

fn burn() -> Box<dyn Engine> {
    Box::new(cnnbench_engine_burn::BurnFlexEngine::new(None).unwrap())
}

cnnbench_conformance::engine_conformance! {
    engine: candle(),
    reference: Some(burn()),
}

fn config(mode: Mode) -> SessionConfig {
    SessionConfig {
        mode,
        batch_size: 2,
        seed: 7,
        precision: Precision::F32,
        deterministic: true,
    }
}

/// Overlapping, padded, ceil-mode pooling — what candle cannot differentiate itself —
/// keeps PyTorch's output size and runs backward (its values and gradients are checked
/// against burn-flex by the conformance suite above).
#[test]
fn overlapping_padded_ceil_mode_pools_run_backward() {
    for avg in [false, true] {
        let mut b = GraphBuilder::new("pool", [2, 9, 9]);
        let x = b.input();
        let y = if avg {
            let mut p = AvgPool2d::new(3, 2);
            p.padding = cnnbench_graph::Pad2d::same(1);
            p.ceil_mode = true;
            b.add("pool", Op::AvgPool2d(p), &[&x])
        } else {
            let mut p = MaxPool2d::new(3, 2);
            p.padding = cnnbench_graph::Pad2d::same(1);
            p.ceil_mode = true;
            b.add("pool", Op::MaxPool2d(p), &[&x])
        };
        let graph = b.finish(&y).unwrap();
        let engine = candle();
        let mut s = engine.prepare(&graph, &config(Mode::Train)).unwrap();
        let input = HostTensor::standard_normal(vec![2, 2, 9, 9], 3);
        s.set_input(&input).unwrap();
        s.forward().unwrap();
        let out = s.output().unwrap();
        assert_eq!(
            out.shape,
            vec![2, 2, 5, 5],
            "ceil mode keeps the last window"
        );
        s.set_output_grad(&HostTensor::new(out.shape.clone(), vec![1.0; out.data.len()]).unwrap())
            .unwrap();
        s.backward().unwrap();
    }
}

#[test]
fn a_step_trains_the_weights_with_momentum() {
    let graph = cnnbench_zoo::find("resnet18").unwrap();
    let graph = (graph.build)([3, 32, 32]).unwrap();
    let engine = candle();
    let mut s = engine.prepare(&graph, &config(Mode::Step)).unwrap();
    let before = s.export_weights().unwrap();
    for _ in 0..2 {
        s.prepare_batch().unwrap();
        s.forward().unwrap();
        s.backward().unwrap();
        s.update().unwrap();
    }
    let after = s.export_weights().unwrap();
    let key = "fc.weight";
    let (a, b) = (before.get(key).unwrap(), after.get(key).unwrap());
    assert_ne!(a.data, b.data, "{key} did not change");
    assert_eq!(a.shape, b.shape);
}
