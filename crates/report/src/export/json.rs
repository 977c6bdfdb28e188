//! JSON: one object per row with every statistic, for other programs.

use super::Exporter;
use crate::compare::Comparison;
use crate::group::Entry;
use crate::report::Report;
use cnnbench_results::Quantity;
use serde::Serialize;
use std::collections::BTreeMap;

pub struct JsonExporter;

/// Statistics of one quantity, in milliseconds.
#[derive(Serialize)]
pub(crate) struct QuantityStats {
    pub count: usize,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub std_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub median_ci95_ms: [f64; 2],
    pub cv: f64,
    pub outliers: usize,
}

/// One row of the report, flat enough for CSV and complete enough for JSON.
#[derive(Serialize)]
pub(crate) struct Row {
    pub model: String,
    pub model_label: String,
    pub batch_size: usize,
    pub channels: usize,
    pub image_height: usize,
    pub image_width: usize,
    pub mode: String,
    pub device: String,
    pub device_name: String,
    pub engine: String,
    pub engine_name: String,
    pub framework: String,
    pub framework_version: String,
    pub backend: String,
    pub libraries: BTreeMap<String, String>,
    pub settings: BTreeMap<String, String>,
    pub precision: String,
    pub threads_requested: Option<usize>,
    pub origin: crate::record::Origin,
    pub runs: usize,
    pub stat: String,
    pub quantities: BTreeMap<Quantity, QuantityStats>,
    pub images_per_s: Option<f64>,
    pub gflops_per_s: Option<f64>,
    pub params: Option<u64>,
    pub macs: Option<u64>,
    pub peak_rss_bytes: Option<u64>,
    pub device_peak_bytes: Option<u64>,
    pub sources: Vec<String>,
}

pub(crate) fn rows(report: &Report) -> Vec<Row> {
    report
        .tables
        .iter()
        .flat_map(|t| report.rows(t))
        .map(|e| row(report, e))
        .collect()
}

fn row(report: &Report, e: &Entry) -> Row {
    let ms = 1000.0;
    let quantities = Quantity::ALL
        .into_iter()
        .filter_map(|q| {
            let s = e.summaries.get(&q)?;
            Some((
                q,
                QuantityStats {
                    count: s.count,
                    mean_ms: e.value(q, crate::group::Stat::Mean).unwrap_or(s.mean) * ms,
                    median_ms: s.median * ms,
                    std_ms: s.std * ms,
                    min_ms: s.min * ms,
                    max_ms: s.max * ms,
                    median_ci95_ms: [s.median_ci95[0] * ms, s.median_ci95[1] * ms],
                    cv: s.cv,
                    outliers: s.outliers,
                },
            ))
        })
        .collect();
    let g = &e.config.engine;
    Row {
        model: e.table.model_id.clone(),
        model_label: e
            .legacy_label
            .clone()
            .unwrap_or_else(|| e.model_name.clone()),
        batch_size: e.table.batch_size,
        channels: e.table.input[0],
        image_height: e.table.input[1],
        image_width: e.table.input[2],
        mode: e.table.mode.to_string(),
        device: e.device.clone(),
        device_name: e.config.device_name.clone(),
        engine: e.engine_label(),
        engine_name: g.name.clone(),
        framework: g.framework.clone(),
        framework_version: g.framework_version.clone(),
        backend: g.backend.clone(),
        libraries: g.libraries.clone(),
        settings: g.settings.clone(),
        precision: g.precision.as_str().to_string(),
        threads_requested: g.threads_requested,
        origin: e.origin,
        runs: e.runs,
        stat: report.stat.as_str().to_string(),
        quantities,
        images_per_s: e.images_per_s(report.stat),
        gflops_per_s: e.gflops_per_s(report.stat),
        params: e.params,
        macs: e.macs,
        peak_rss_bytes: e.peak_rss_bytes,
        device_peak_bytes: e.device_peak_bytes,
        sources: e.sources.iter().map(|p| p.display().to_string()).collect(),
    }
}

#[derive(Serialize)]
struct Document<'a> {
    format: &'static str,
    version: u32,
    stat: &'static str,
    results: Vec<Row>,
    speedups: &'a [crate::speedup::Speedup],
    /// Only when asked for, so that reports without them keep their shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    conclusions: Option<ConclusionsDoc<'a>>,
    notes: &'a [String],
}

/// The conclusions with each statement's sentence beside its numbers.
#[derive(Serialize)]
struct ConclusionsDoc<'a> {
    statements: Vec<StatementDoc<'a>>,
    not_concluded: &'a [String],
}

#[derive(Serialize)]
struct StatementDoc<'a> {
    sentence: String,
    #[serde(flatten)]
    conclusion: &'a crate::conclusions::Conclusion,
}

impl Exporter for JsonExporter {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let doc = Document {
            format: "cnnbench-report",
            version: 1,
            stat: report.stat.as_str(),
            results: rows(report),
            speedups: &report.speedups,
            conclusions: report.conclusions.as_ref().map(|c| ConclusionsDoc {
                statements: c
                    .statements
                    .iter()
                    .map(|s| StatementDoc {
                        sentence: s.sentence(),
                        conclusion: s,
                    })
                    .collect(),
                not_concluded: &c.not_concluded,
            }),
            notes: &report.notes,
        };
        let mut s = serde_json::to_string_pretty(&doc)?;
        s.push('\n');
        Ok(s)
    }

    /// The whole comparison: options, pairs, geometric mean, unmatched rows, warnings.
    fn render_comparison(&self, comparison: &Comparison) -> anyhow::Result<String> {
        Ok(serde_json::to_string_pretty(comparison)? + "\n")
    }
}
