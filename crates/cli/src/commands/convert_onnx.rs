//! `cnnbench convert IN OUT.onnx`: any model cnnbench knows (a zoo name, a model JSON,
//! ONNX, a Caffe prototxt) as a standard ONNX model (opset 17) with weights, so that
//! ONNX Runtime, tract or any other ONNX runtime runs the network cnnbench benchmarks.
//! The weights: `--weights FILE`, else the complete set the input carries, else seeded
//! random ones (`--seed`) drawn from PyTorch's initial distributions.

use super::common::{exists_already, write_new_file};
use super::common::{file_model_and_weights, thousands, zoo_model};
use super::convert::{ConvertArgs, ExportPrecision};
use super::engines;
use anyhow::{anyhow, Context, Result};
use cnnbench_bench::images::ImageFolder;
use cnnbench_bench::quantize::{calibrate_on, CalibrationData};
use cnnbench_engine::provider::EngineOptions;
use cnnbench_graph::Weights;
use cnnbench_import::onnx::export::{to_onnx, to_onnx_int8, EXPORT_OPSET};
use cnnbench_results::quantization::{
    DEFAULT_CALIBRATION_IMAGES, MAX_CALIBRATION_IMAGES, QDQ_SCHEME,
};
use std::process::ExitCode;

/// The seed of the random weights when neither the input nor `--weights` gives any.
const DEFAULT_SEED: u64 = 1;

pub fn run(args: ConvertArgs) -> Result<ExitCode> {
    if args.output.exists() {
        return Err(exists_already(&args.output, ""));
    }
    let input_text = args.input.to_string_lossy().to_string();
    let (mut graph, carried) = if !args.input.exists() && cnnbench_zoo::find(&input_text).is_some()
    {
        (zoo_model(&input_text, args.image_size)?, None)
    } else if !args.input.exists() {
        return Err(anyhow!(
            "{} is neither a file nor a zoo model (cnnbench models lists them)",
            args.input.display()
        ));
    } else {
        file_model_and_weights(&args.input, args.image_size)?
    };
    if let Some(name) = &args.name {
        graph.set_name(name.clone());
    }
    let (weights, source) = match (&args.weights, carried, args.seed) {
        (Some(path), _, None) => {
            let w = Weights::load(path)
                .with_context(|| format!("cannot read the weights {}", path.display()))?;
            w.check(&graph, true).with_context(|| {
                format!("the weights {} do not fit {}", path.display(), graph.name())
            })?;
            (w, format!("from {}", path.display()))
        }
        (Some(_), _, Some(_)) => {
            return Err(anyhow!(
            "--weights and --seed exclude each other: give the weights, or a seed for random ones"
        ))
        }
        (None, Some(w), None) => (w, format!("from {}", args.input.display())),
        (None, _, seed) => {
            let seed = seed.unwrap_or(DEFAULT_SEED);
            (
                Weights::initial(&graph, seed),
                format!("random, seed {seed} (PyTorch's initial distributions)"),
            )
        }
    };
    let calibration = match (args.precision, args.calibration) {
        (ExportPrecision::F32, Some(_)) => {
            return Err(anyhow!(
                "--calibration measures the ranges of an int8 export: add --precision int8"
            ))
        }
        (ExportPrecision::F32, None) if args.calibration_images.is_some() => {
            return Err(anyhow!(
                "--calibration-images measures the ranges of an int8 export: add --precision int8"
            ))
        }
        (ExportPrecision::F32, None) => None,
        (ExportPrecision::Int8, images) => {
            let images = images.unwrap_or(DEFAULT_CALIBRATION_IMAGES);
            if !(1..=MAX_CALIBRATION_IMAGES).contains(&images) {
                return Err(anyhow!(
                    "--calibration takes 1 to {MAX_CALIBRATION_IMAGES} images, not {images}"
                ));
            }
            let reference =
                engines::create(cnnbench_engine_burn::ENGINE_NAME, &EngineOptions::default())?;
            let seed = args.seed.unwrap_or(DEFAULT_SEED);
            let folder = args
                .calibration_images
                .as_deref()
                .map(|folder| ImageFolder::load(folder, graph.input_shape()))
                .transpose()?;
            let data = match &folder {
                Some(folder) => CalibrationData::Folder { folder, images },
                None => CalibrationData::Random { seed, images },
            };
            Some(calibrate_on(reference.as_ref(), &graph, &weights, data)?)
        }
    };
    let bytes = match &calibration {
        Some(calibration) => to_onnx_int8(&graph, &weights, calibration.ranges()),
        None => to_onnx(&graph, &weights),
    }
    .with_context(|| format!("cannot write {} as ONNX", graph.name()))?;
    write_new_file(&args.output, &bytes)?;
    let [c, h, w] = graph.input_shape();
    errln!(
        "converted {} → {}: ONNX opset {EXPORT_OPSET}, {} nodes, {} params, {:.3} GMACs at {c}×{h}×{w}, batch dimension free",
        args.input.display(),
        args.output.display(),
        graph.nodes().len(),
        thousands(graph.params()),
        graph.macs() as f64 / 1e9,
    );
    errln!(
        "weights: {} tensors, {} values, {source}; {} bytes",
        weights.len(),
        thousands(weights.elements() as u64),
        thousands(bytes.len() as u64)
    );
    if let Some(calibration) = &calibration {
        let record = &calibration.record;
        let caveat = if record.real_data {
            ""
        } else {
            "; accuracy on real data not measured"
        };
        errln!(
            "int8: {QDQ_SCHEME}; activation ranges {} on {} in f32 ({}{caveat})",
            record.method,
            record.engine,
            record.data
        );
    }
    Ok(ExitCode::SUCCESS)
}
