//! `cnnbench models`: the zoo at a glance, one model's layers, model files.

use super::common::{
    align_right, file_model, new_table, saturated_prefix, thousands, zoo_model, ImageSize,
};
use anyhow::{anyhow, Context, Result};
use cnnbench_graph::Graph;
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct ModelsArgs {
    /// Show this model's per-layer summary (any name or alias from the list).
    pub name: Option<String>,
    /// Load, validate and summarise a model file (model JSON, .onnx, Caffe .prototxt).
    #[arg(long, value_name = "FILE", conflicts_with = "name")]
    pub file: Option<PathBuf>,
    /// Recompute shapes and counts for another input size: N or HxW.
    #[arg(long, value_name = "SIZE")]
    pub image_size: Option<ImageSize>,
    /// Write the model as a cnnbench model file (JSON).
    #[arg(long, value_name = "FILE.json")]
    pub export: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

/// One row of `cnnbench models --json`; the field names are a stable interface.
#[derive(Serialize)]
struct ModelRow {
    name: String,
    aliases: Vec<String>,
    family: String,
    params: u64,
    macs: u64,
    depth: usize,
    input: [usize; 3],
    top1_error: Option<f64>,
    top5_error: Option<f64>,
    source: Option<String>,
    citation: Option<String>,
}

fn row(graph: &Graph, aliases: &[&str], family: &str) -> ModelRow {
    let info = graph.info();
    ModelRow {
        name: graph.name().to_string(),
        aliases: aliases.iter().map(|s| s.to_string()).collect(),
        family: family.to_string(),
        params: graph.params(),
        macs: graph.macs(),
        depth: graph.depth(),
        input: graph.input_shape(),
        top1_error: info.top1_error,
        top5_error: info.top5_error,
        source: info.source.clone(),
        citation: info.citation.clone(),
    }
}

pub fn run(args: ModelsArgs) -> Result<ExitCode> {
    let graph = match (&args.name, &args.file) {
        (Some(name), _) => Some(zoo_model(name, args.image_size)?),
        (None, Some(path)) => Some(file_model(path, args.image_size)?),
        (None, None) => None,
    };
    let Some(graph) = graph else {
        if args.export.is_some() {
            return Err(anyhow!(
                "--export needs a model: cnnbench models NAME --export FILE.json"
            ));
        }
        return list_zoo(&args);
    };
    if let Some(path) = &args.export {
        write_new(path, &graph.to_json())?;
        errln!("wrote {} ({} nodes)", path.display(), graph.nodes().len());
        return Ok(ExitCode::SUCCESS);
    }
    if args.json {
        let entry = cnnbench_zoo::find(graph.name());
        let (aliases, family) = entry.map_or((&[][..], "file"), |e| (e.aliases, e.family));
        outln!(
            "{}",
            serde_json::to_string_pretty(&row(&graph, aliases, family))?
        );
    } else {
        print_layers(&graph);
    }
    Ok(ExitCode::SUCCESS)
}

fn list_zoo(args: &ModelsArgs) -> Result<ExitCode> {
    let mut rows = Vec::new();
    for entry in cnnbench_zoo::entries() {
        let [c, h, w] = entry.default_input;
        let input = args
            .image_size
            .map_or([c, h, w], |s| [c, s.height, s.width]);
        let graph = (entry.build)(input)
            .with_context(|| format!("{} at {}×{}", entry.name, input[1], input[2]))?;
        rows.push(row(&graph, entry.aliases, entry.family));
    }
    // Families together, in the order each first appears in the zoo.
    let mut family_order: Vec<String> = Vec::new();
    for r in &rows {
        if !family_order.contains(&r.family) {
            family_order.push(r.family.clone());
        }
    }
    rows.sort_by_key(|r| family_order.iter().position(|f| *f == r.family));
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut table = new_table(&[
        "Family",
        "Model",
        "Aliases",
        "Layers",
        "Params",
        "GMACs",
        "Input",
        "Top-1 / Top-5 error",
        "Reference",
    ]);
    for r in &rows {
        let errors = match (r.top1_error, r.top5_error) {
            (None, None) => String::new(),
            (t1, t5) => format!(
                "{} / {}",
                t1.map_or("–".into(), |v| format!("{v:.2}")),
                t5.map_or("–".into(), |v| format!("{v:.2}"))
            ),
        };
        table.add_row(vec![
            r.family.clone(),
            r.name.clone(),
            r.aliases.join(", "),
            r.depth.to_string(),
            thousands(r.params),
            format!("{}{:.3}", saturated_prefix(r.macs), r.macs as f64 / 1e9),
            format!("{}×{}×{}", r.input[0], r.input[1], r.input[2]),
            errors,
            r.citation.clone().unwrap_or_default(),
        ]);
    }
    align_right(&mut table, &[3, 4, 5]);
    outln!("{table}");
    Ok(ExitCode::SUCCESS)
}

fn print_layers(graph: &Graph) {
    let [c, h, w] = graph.input_shape();
    outln!("{} — input {c}×{h}×{w}", graph.name());
    if let Some(source) = &graph.info().source {
        outln!("{source}");
    }
    let mut table = new_table(&["Node", "Op", "Inputs", "Output", "Params", "MACs"]);
    for node in graph.nodes() {
        let inputs: Vec<&str> = node.inputs.iter().map(|s| graph.source_name(*s)).collect();
        let macs = node.op.macs(&node.shape);
        table.add_row(vec![
            node.name.clone(),
            node.op.describe(),
            inputs.join(", "),
            node.shape.to_string(),
            thousands(node.op.params()),
            thousands(macs),
        ]);
    }
    table.add_row(vec![
        "Total".to_string(),
        format!(
            "{} nodes, {} layers deep",
            graph.nodes().len(),
            graph.depth()
        ),
        String::new(),
        graph.output_shape().to_string(),
        thousands(graph.params()),
        thousands(graph.macs()),
    ]);
    align_right(&mut table, &[4, 5]);
    outln!("{table}");
    outln!(
        "params {} ({:.1} MiB as f32), {}{:.3} GMACs per image, {} activation values per image",
        thousands(graph.params()),
        graph.params() as f64 * 4.0 / (1024.0 * 1024.0),
        saturated_prefix(graph.macs()),
        graph.macs() as f64 / 1e9,
        thousands(graph.activation_elements()),
    );
}

/// Writes a new model JSON; an existing file is an error rather than silently replaced.
pub fn write_new(path: &std::path::Path, text: &str) -> Result<()> {
    super::common::write_new_file(path, format!("{text}\n").as_bytes())
}
