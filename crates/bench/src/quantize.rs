//! Calibration for int8: the activation ranges of a network with given weights,
//! measured by running it in f32 on a reference engine (burn-flex, the kit's
//! interpreter) and keeping every node's output. Whoever runs int8 measures the ranges
//! here and hands them to the int8 engine in its [`SessionConfig`]: the engines that
//! run int8 (ONNX Runtime, OpenVINO) then run the very same quantised network.

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::kit::InputBatches;
use cnnbench_engine::{Engine, Mode, Precision, SessionConfig};
use cnnbench_graph::quant::ActivationRanges;
use cnnbench_graph::{Graph, Weights, INPUT_NAME};
use cnnbench_results::quantization::{CalibrationRecord, QuantizationRecord, QDQ_SCHEME};
use std::sync::Arc;

/// Measured ranges and how they were measured.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub ranges: Arc<ActivationRanges>,
    pub record: CalibrationRecord,
}

impl Calibration {
    /// The result's record of a run quantised with these ranges.
    pub fn quantization_record(&self) -> QuantizationRecord {
        QuantizationRecord {
            scheme: QDQ_SCHEME.to_string(),
            calibration: self.record.clone(),
        }
    }
}

/// The ranges of `graph` with `weights` over `images` random images drawn from `seed`
/// (one image a pass, so that keeping every activation costs one image's worth),
/// computed in f32 by `reference`.
pub fn calibrate(
    reference: &dyn Engine,
    graph: &Graph,
    weights: &Weights,
    seed: u64,
    images: usize,
) -> Result<Calibration> {
    if images == 0 {
        return Err(anyhow!("calibration needs at least one image"));
    }
    let engine = reference.info().name;
    let config = SessionConfig {
        mode: Mode::Infer,
        batch_size: 1,
        seed,
        precision: Precision::F32,
        deterministic: true,
        calibration: None,
    };
    let context = || format!("calibrating {} for int8 on {engine}", graph.name());
    let mut session = reference.prepare(graph, &config).with_context(context)?;
    session.import_weights(weights).with_context(context)?;
    session.keep_node_outputs().with_context(context)?;
    let mut inputs = InputBatches::new(graph, &config);
    let mut ranges = ActivationRanges::new();
    for _ in 0..images {
        let input = inputs.next_input();
        session.set_input(&input).with_context(context)?;
        session.forward().with_context(context)?;
        session.sync().with_context(context)?;
        ranges.observe(INPUT_NAME, &input)?;
        for output in session.node_outputs().with_context(context)? {
            ranges.observe(&output.node, &output.value)?;
        }
        ranges.add_images(1);
    }
    Ok(Calibration {
        ranges: Arc::new(ranges),
        record: CalibrationRecord {
            method: "min-max".into(),
            images,
            seed,
            data: format!("{images} random images drawn from seed {seed}"),
            real_data: false,
            engine,
        },
    })
}
