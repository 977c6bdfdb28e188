//! candle-specific checks; correctness of every op, forward and backward, is the engine
//! kit's conformance suite, run here with burn-flex as the reference.

use crate::CandleEngine;
use cnnbench_engine::{Engine, Mode, Precision, SessionConfig};
use cnnbench_graph::ops::*;
use cnnbench_graph::GraphBuilder;
use cnnbench_graph::HostTensor;

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
        calibration: None,
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

/// candle's max pool hands the gradient to every place that ties for the maximum (burn
/// and PyTorch to the first), so after a ReLU, whose zeros tie, the gradients arriving at
/// the ReLU differ at its zeros — where ReLU's backward discards them. `verify --localize`
/// compares gradients where the output is not zero, so the two engines agree at every
/// node; the tied zeros really are there (a max pool over a window of zeros).
#[test]
fn localize_leaves_out_the_tied_zeros_a_max_pool_routes_differently() {
    let mut b = GraphBuilder::new("tied", [3, 12, 12]);
    let x = b.input();
    let c = b.conv("conv", &x, Conv2d::new(4, 3).padding(1));
    let r = b.relu("relu", &c);
    let p = b.add("pool", Op::MaxPool2d(MaxPool2d::new(3, 2)), &[&r]);
    let f = b.flatten("flat", &p);
    let y = b.linear("fc", &f, 5);
    let graph = b.finish(&y).unwrap();
    // A negative bias leaves most of the ReLU's outputs zero: many pooling windows tie.
    let mut weights = burn()
        .prepare(&graph, &config(Mode::Train))
        .unwrap()
        .export_weights()
        .unwrap();
    weights.insert(
        "conv.bias",
        HostTensor::new(vec![4], vec![-0.5; 4]).unwrap(),
    );
    let request = cnnbench_bench::verify::VerifyRequest {
        batch_size: 2,
        seed: 0,
        tolerance: 1e-4,
        weights: Some(weights),
        localize: true,
        precisions: [Precision::F32; 2],
        images: None,
    };
    let report = cnnbench_bench::verify::verify(&graph, &*burn(), &*candle(), &request).unwrap();
    assert!(report.passed(), "{:#?}", report.comparisons);
    assert!(
        report.first_departures.is_empty(),
        "{:#?}",
        report.first_departures
    );
    let pooled = report
        .nodes
        .iter()
        .find(|n| n.node == "pool" && n.mode == "train")
        .unwrap();
    assert_eq!(pooled.shape, [2, 4, 5, 5]);
}
