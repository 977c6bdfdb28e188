//! `cnnbench convert IN OUT.json`: any supported model file (ONNX, Caffe prototxt, model
//! JSON) to a cnnbench model JSON, which a person can read and edit. The weights the file
//! carries (ONNX initializers) go beside it, to OUT.safetensors, for `cnnbench verify`.
//! An OUT ending in `.onnx` writes a standard ONNX model instead (see `convert_onnx`).

use super::common::{exists_already, file_model_with_weights, write_new_file};
use super::models::write_new;
use anyhow::{anyhow, Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// The model to convert: an .onnx file, a Caffe deploy .prototxt or a cnnbench model
    /// .json (or, for an .onnx output, a zoo model name).
    pub input: PathBuf,
    /// Where to write the cnnbench model JSON (must not exist). Weights the input carries
    /// go beside it with the extension .safetensors (which must not exist either). With
    /// the extension .onnx: a standard ONNX model (opset 17) with its weights.
    pub output: PathBuf,
    /// Name of the converted model (default: the name in the file).
    #[arg(long)]
    pub name: Option<String>,
    /// ONNX output: the weights to write (a safetensors file as `cnnbench verify
    /// --save-weights` or this command write), instead of the ones the input carries.
    #[arg(long, value_name = "FILE.safetensors")]
    pub weights: Option<PathBuf>,
    /// ONNX output: seed of the random weights (PyTorch's initial distributions) written
    /// when the input carries none and no --weights is given [default: 1].
    #[arg(long)]
    pub seed: Option<u64>,
    /// ONNX output: input image size, N or HxW (default: the model's own).
    #[arg(long)]
    pub image_size: Option<super::common::ImageSize>,
    /// ONNX output: `int8` writes the network quantised in QDQ form (weights int8 per
    /// output channel, activations uint8 per tensor), as `run --precision int8` runs it.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: ExportPrecision,
    /// ONNX output in int8: calibration images (random, drawn from --seed, or the first
    /// of --calibration-images) whose activation ranges the quantisation takes
    /// [default: 8].
    #[arg(long, value_name = "N")]
    pub calibration: Option<usize>,
    /// ONNX output in int8: calibrate on your own images (a folder of JPEG and PNG
    /// files, prepared as torchvision prepares ImageNet) instead of random ones; what a
    /// trained network deployed from this file needs.
    #[arg(long, value_name = "DIR")]
    pub calibration_images: Option<PathBuf>,
}

/// The precisions an ONNX export is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportPrecision {
    F32,
    Int8,
}

pub fn run(args: ConvertArgs) -> Result<ExitCode> {
    if args
        .output
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
    {
        return super::convert_onnx::run(args);
    }
    if args.weights.is_some()
        || args.seed.is_some()
        || args.image_size.is_some()
        || args.precision != ExportPrecision::F32
        || args.calibration.is_some()
        || args.calibration_images.is_some()
    {
        return Err(anyhow!(
            "--weights, --seed, --image-size, --precision, --calibration and --calibration-images apply to an ONNX output (OUT.onnx); a model JSON carries no weights and keeps the input's size"
        ));
    }
    let imported = file_model_with_weights(&args.input)?;
    let complete = imported.weights_complete();
    let (mut graph, weights, notes) = (imported.graph, imported.weights, imported.notes);
    if let Some(name) = args.name {
        graph.set_name(name);
    }
    // Weights go beside the JSON; both are checked before either is written.
    let weights_path = (!weights.is_empty()).then(|| args.output.with_extension("safetensors"));
    if args.output.exists() {
        return Err(exists_already(&args.output, ""));
    }
    if let Some(path) = &weights_path {
        if *path == args.output {
            return Err(anyhow!(
                "{} would be both the model JSON and its weights: name the output .json",
                path.display()
            ));
        }
        if path.exists() {
            return Err(exists_already(path, " for the weights"));
        }
    }
    let encoded = weights_path
        .as_ref()
        .map(|_| weights.to_safetensors())
        .transpose()
        .context("cannot encode the weights")?;
    write_new(&args.output, &graph.to_json())?;
    if let (Some(path), Some(bytes)) = (&weights_path, &encoded) {
        write_new_file(path, bytes)?;
    }
    errln!(
        "converted {} → {}: {} nodes, {} params, {:.3} GMACs at {}",
        args.input.display(),
        args.output.display(),
        graph.nodes().len(),
        super::common::thousands(graph.params()),
        graph.macs() as f64 / 1e9,
        {
            let [c, h, w] = graph.input_shape();
            format!("{c}×{h}×{w}")
        }
    );
    if let Some(path) = &weights_path {
        let total = graph.weight_specs().len();
        errln!(
            "weights → {}: {} tensors, {} values ({})",
            path.display(),
            weights.len(),
            super::common::thousands(weights.elements() as u64),
            if complete {
                "complete".to_string()
            } else {
                format!("partial: {} of the model's {total} tensors", weights.len())
            }
        );
    }
    for note in &notes {
        errln!("note: {note}");
    }
    Ok(ExitCode::SUCCESS)
}
