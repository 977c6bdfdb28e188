//! int8's calibration on burn-flex against a hand computation: a network whose every
//! activation is a known function of its input, so each range follows from the images.

use cnnbench_bench::images::ImageFolder;
use cnnbench_bench::quantize::{calibrate, calibrate_on, CalibrationData};
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
    let ranges = calibration.ranges();
    assert_eq!(ranges.images(), images);
    assert_eq!(ranges.range(INPUT_NAME), Some((low, high)));
    assert_eq!(ranges.range("double"), Some((2.0 * low, 2.0 * high)));
    assert_eq!(
        ranges.range("relu"),
        Some((0.0f32.max(2.0 * low), 2.0 * high))
    );
    let record = &calibration.record;
    assert_eq!((record.images, record.seed), (images, Some(seed)));
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

/// Calibration on the user's own images: the first N of the folder, prepared as the
/// network sees them, recorded as real data without a seed.
#[test]
fn calibration_on_a_folder_ranges_over_its_first_images_and_records_real_data() {
    let mut b = GraphBuilder::new("doubling", [3, 4, 4]);
    let x = b.input();
    let y = b.conv("double", &x, Conv2d::new(1, 1).bias(false));
    let graph = b.finish(&y).unwrap();
    let mut weights = Weights::new();
    weights.insert(
        "double.weight",
        HostTensor::new(vec![1, 3, 1, 1], vec![2.0, 0.0, 0.0]).unwrap(),
    );
    // Flat images: red 0, 100 and 255, named so that the brightest sorts last and is
    // left out of a calibration on the first two.
    let dir = tempfile::tempdir().unwrap();
    for (name, red) in [("a.png", 100u8), ("b.png", 0), ("c.png", 255)] {
        image::RgbImage::from_pixel(9, 7, image::Rgb([red, 50, 50]))
            .save(dir.path().join(name))
            .unwrap();
    }
    let folder = ImageFolder::load(dir.path(), [3, 4, 4]).unwrap();
    let engine = BurnFlexEngine::new(None).unwrap();
    let data = CalibrationData::Folder {
        folder: &folder,
        images: 2,
    };
    let calibration = calibrate_on(&engine, &graph, &weights, data).unwrap();
    let red = |value: f32| (value / 255.0 - 0.485) / 0.229;
    let (low, high) = calibration.ranges().range("double").unwrap();
    assert!((low - 2.0 * red(0.0)).abs() < 1e-4, "{low}");
    assert!((high - 2.0 * red(100.0)).abs() < 1e-4, "{high}");
    let record = &calibration.record;
    assert_eq!((record.images, record.seed), (2, None));
    assert!(record.real_data);
    assert_eq!(
        record.data,
        format!("2 images from {}", dir.path().display())
    );
    assert_eq!(record.caveat(), None);
}
