//! Calibration for int8: the activation ranges of a network with given weights,
//! measured by running it in f32 on a reference engine (burn-flex, the kit's
//! interpreter) and keeping every node's output. Whoever runs int8 measures the ranges
//! here and hands them to the int8 engine in its [`SessionConfig`], with the images:
//! ONNX Runtime and OpenVINO then run the very same quantised network, and PyTorch's
//! own quantiser calibrates on the same images.

use crate::images::ImageFolder;
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::int8::{Int8Calibration, OwnQuantization};
use cnnbench_engine::kit::InputBatches;
use cnnbench_engine::{Engine, Mode, Precision, SessionConfig};
use cnnbench_graph::quant::ActivationRanges;
use cnnbench_graph::{Graph, Weights, INPUT_NAME};
use cnnbench_results::quantization::{CalibrationRecord, QuantizationRecord, QDQ_SCHEME};
use std::sync::Arc;

/// Measured ranges, the images they were measured on, and how.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub int8: Arc<Int8Calibration>,
    pub record: CalibrationRecord,
}

impl Calibration {
    /// The measured ranges.
    pub fn ranges(&self) -> &ActivationRanges {
        &self.int8.ranges
    }

    /// The result's record of a run of `engine` quantised with this calibration: the
    /// QDQ scheme with these ranges, or the engine's own quantiser calibrated on these
    /// images (`own`, [`Engine::own_quantization`]).
    pub fn quantization_record(
        &self,
        engine: &str,
        own: Option<OwnQuantization>,
    ) -> QuantizationRecord {
        match own {
            None => QuantizationRecord {
                scheme: QDQ_SCHEME.to_string(),
                calibration: self.record.clone(),
            },
            Some(own) => QuantizationRecord {
                scheme: own.scheme,
                calibration: CalibrationRecord {
                    method: own.method,
                    engine: engine.to_string(),
                    ..self.record.clone()
                },
            },
        }
    }
}

/// The images a calibration runs: random ones drawn from a seed (the default: the time
/// int8 takes does not depend on them), or the first of the user's own.
#[derive(Clone, Copy, Debug)]
pub enum CalibrationData<'a> {
    /// `images` standard-normal images drawn from `seed`.
    Random { seed: u64, images: usize },
    /// The first `images` of a folder (all of it when it holds fewer).
    Folder {
        folder: &'a ImageFolder,
        images: usize,
    },
}

impl CalibrationData<'_> {
    /// How many images the calibration runs.
    pub fn images(&self) -> usize {
        match self {
            CalibrationData::Random { images, .. } => *images,
            CalibrationData::Folder { folder, images } => (*images).min(folder.len()),
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
    calibrate_on(
        reference,
        graph,
        weights,
        CalibrationData::Random { seed, images },
    )
}

/// The ranges of `graph` with `weights` over the images of `data`, one image a pass,
/// computed in f32 by `reference`.
pub fn calibrate_on(
    reference: &dyn Engine,
    graph: &Graph,
    weights: &Weights,
    data: CalibrationData,
) -> Result<Calibration> {
    let images = data.images();
    if images == 0 {
        return Err(anyhow!("calibration needs at least one image"));
    }
    let seed = match data {
        CalibrationData::Random { seed, .. } => Some(seed),
        CalibrationData::Folder { .. } => None,
    };
    let engine = reference.info().name;
    let config = SessionConfig {
        mode: Mode::Infer,
        batch_size: 1,
        seed: seed.unwrap_or_default(),
        precision: Precision::F32,
        deterministic: true,
        calibration: None,
    };
    let context = || format!("calibrating {} for int8 on {engine}", graph.name());
    let mut session = reference.prepare(graph, &config).with_context(context)?;
    session.import_weights(weights).with_context(context)?;
    session.keep_node_outputs().with_context(context)?;
    let mut random = InputBatches::new(graph, &config);
    let mut ranges = ActivationRanges::new();
    let mut kept = Vec::with_capacity(images);
    for image in 0..images {
        let input = match data {
            CalibrationData::Random { .. } => random.next_input(),
            CalibrationData::Folder { folder, .. } => folder.batch(image, 1),
        };
        session.set_input(&input).with_context(context)?;
        session.forward().with_context(context)?;
        session.sync().with_context(context)?;
        ranges.observe(INPUT_NAME, &input)?;
        for output in session.node_outputs().with_context(context)? {
            ranges.observe(&output.node, &output.value)?;
        }
        ranges.add_images(1);
        kept.push(input);
    }
    let (words, real_data) = match data {
        CalibrationData::Random { seed, .. } => (
            format!("{images} random images drawn from seed {seed}"),
            false,
        ),
        CalibrationData::Folder { folder, .. } => (folder.describe(images), true),
    };
    Ok(Calibration {
        int8: Arc::new(Int8Calibration {
            ranges,
            images: kept,
        }),
        record: CalibrationRecord {
            method: "min-max".into(),
            images,
            seed,
            data: words,
            real_data,
            engine,
        },
    })
}
