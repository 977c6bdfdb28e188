//! The candidates as a matrix (`OUT/choose.toml`): each runs as one of its cells, in a
//! fresh process. The matrix is serialised from a [`MatrixDraft`], never pieced together
//! as text.

use super::*;
use cnnbench_plan::matrix::{ExcludeDraft, MatrixDraft};

/// The candidates as a matrix file in the output folder: the engines × precisions × the
/// two batches in inference, the pairs an engine does not offer excluded.
pub(super) fn write_matrix(
    args: &ChooseArgs,
    graph: &cnnbench_graph::Graph,
    candidates: &[Candidate],
    output: &Path,
    [small, large]: [usize; 2],
    server: Option<ServerRanking>,
) -> Result<PathBuf> {
    let mut engines: Vec<String> = Vec::new();
    let mut precisions: Vec<Precision> = Vec::new();
    for c in candidates {
        if !engines.contains(&c.engine) {
            engines.push(c.engine.clone());
        }
        if !precisions.contains(&c.precision) {
            precisions.push(c.precision);
        }
    }
    let [_, h, w] = graph.input_shape();
    let mut draft = MatrixDraft::new(vec![args.model.clone()], engines.clone());
    draft.image_sizes = Some(vec![format!("{h}x{w}")]);
    draft.precisions = precisions.clone();
    draft.keys.warmup = Some(args.warmup);
    draft.keys.seed = Some(args.seed);
    draft.keys.repeat = Some(args.repeat);
    draft.keys.threads = args.threads;
    match server {
        // A server query is one image: the batch is the query's.
        Some(server) => {
            draft.keys.scenario = Some(ScenarioKind::Server);
            draft.keys.find_peak = Some(true);
            draft.keys.latency_bound = Some(server.bound_ms);
            draft.keys.min_queries = Some(server.min_queries);
            draft.keys.scenario_time = server.scenario_time;
        }
        // The passes rule the closed loop; a scenario runs for its time and queries.
        None => {
            draft.batch_sizes = Some(vec![small, large]);
            draft.keys.passes = Some(args.passes);
        }
    }
    // The engines' deployment settings as axes of their cells; the pairs an engine
    // does not offer (a precision, or one under some of its settings) excluded.
    for engine in &engines {
        let axes = setting_axes(engines::find(engine)?.as_ref());
        let variants = combinations(&axes);
        if !axes.is_empty() {
            draft.engine_settings.insert(
                engine.clone(),
                axes.into_iter().map(|(k, v)| (k, v.to_vec())).collect(),
            );
        }
        for precision in &precisions {
            let offered: Vec<&SettingsMap> = candidates
                .iter()
                .filter(|c| c.engine == *engine && c.precision == *precision)
                .map(|c| &c.settings)
                .collect();
            let exclude = |engine_settings: SettingsMap| ExcludeDraft {
                engine: engine.clone(),
                precision: *precision,
                engine_settings,
            };
            if offered.is_empty() {
                draft.exclude.push(exclude(SettingsMap::new()));
                continue;
            }
            // A precision the engine offers, but not under every one of its settings.
            for variant in variants.iter().filter(|v| !offered.contains(v)) {
                draft.exclude.push(exclude(variant.clone()));
            }
        }
    }
    let text = draft
        .to_toml(&format!(
            "Written by `cnnbench choose {}`: its runs, one cell each.",
            args.model
        ))
        .context("cannot write the candidates as a matrix")?;
    let path = output.join("choose.toml");
    cnnbench_graph::write_owned(&path, |out| out.write_all(text.as_bytes()))?;
    Ok(path)
}
