//! `cnnbench convert IN OUT.json`: any supported model file (ONNX, Caffe prototxt, model
//! JSON) to a cnnbench model JSON, which a person can read and edit.

use super::common::file_model;
use super::models::write_new;
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// The model to convert: an .onnx file, a Caffe deploy .prototxt or a cnnbench model .json.
    pub input: PathBuf,
    /// Where to write the cnnbench model JSON (must not exist).
    pub output: PathBuf,
    /// Name of the converted model (default: the name in the file).
    #[arg(long)]
    pub name: Option<String>,
}

pub fn run(args: ConvertArgs) -> Result<ExitCode> {
    let mut graph = file_model(&args.input, None)?;
    if let Some(name) = args.name {
        graph.set_name(name);
    }
    write_new(&args.output, &graph.to_json())?;
    eprintln!(
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
    Ok(ExitCode::SUCCESS)
}
