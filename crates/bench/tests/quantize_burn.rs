//! int8's calibration on burn-flex against a hand computation: a network whose every
//! activation is a known function of its input, so each range follows from the images.

use cnnbench_bench::quantize::calibrate;
use cnnbench_engine::kit::InputBatches;
use cnnbench_engine::{Mode, Precision, SessionConfig};
use cnnbench_engine_burn::BurnFlexEngine;
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{GraphBuilder, HostTensor, Weights, INPUT_NAME};

#[test]
fn calibration_ranges_are_the_hand_computed_extremes_over_its_images() {
    // input → 1×1 convolution with weight 2 (no bias) → ReLU.
    let mut b = GraphBuilder::new("doubling", [1, 3, 3]);
    let x = b.input();
    let y = b.conv("double", &x, Conv2d::new(1, 1).bias(false));
    let y = b.relu("relu", &y);
    let graph = b.finish(&y).unwrap();
    let mut weights = Weights::new();
    weights.insert(
        "double.weight",
        HostTensor::new(vec![1, 1, 1, 1], vec![2.0]).unwrap(),
    );
    let (seed, images) = (11, 5);
    let engine = BurnFlexEngine::new(None).unwrap();
    let calibration = calibrate(&engine, &graph, &weights, seed, images).unwrap();

    // The same images, drawn as calibration draws them: one a pass from the seed.
    let config = SessionConfig {
        mode: Mode::Infer,
        batch_size: 1,
        seed,
        precision: Precision::F32,
        deterministic: true,
        calibration: None,
    };
    let mut inputs = InputBatches::new(&graph, &config);
    let (mut low, mut high) = (f32::INFINITY, f32::NEG_INFINITY);
    for _ in 0..images {
        for &v in &inputs.next_input().data {
            low = low.min(v);
            high = high.max(v);
        }
    }
    let ranges = &calibration.ranges;
    assert_eq!(ranges.images(), images);
    assert_eq!(ranges.range(INPUT_NAME), Some((low, high)));
    assert_eq!(ranges.range("double"), Some((2.0 * low, 2.0 * high)));
    assert_eq!(
        ranges.range("relu"),
        Some((0.0f32.max(2.0 * low), 2.0 * high))
    );
    let record = &calibration.record;
    assert_eq!((record.images, record.seed), (images, seed));
    assert_eq!(
        (record.method.as_str(), record.engine.as_str()),
        ("min-max", "burn-flex")
    );
    assert!(!record.real_data);
    assert!(record
        .caveat()
        .unwrap()
        .contains("accuracy on real data was not measured"));
}
