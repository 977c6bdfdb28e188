//! `cnnbench choose`'s answer: for one model on one machine, every stack and precision
//! that ran, ranked by latency at the small batch and throughput at the large one, each
//! with its accuracy cost against f32 beside it, the ones that did not run as asked
//! flagged; the Pareto front of speed against error; and the conclusion in the original
//! suite's words, with intervals where the runs allow them.
//!
//! The measurements are ordinary results (the command runs them as a plan, resumable);
//! the accuracy costs come from `verify` of each stack and precision against burn-flex
//! in f32 on the same weights and inputs, written beside them as JSON.

use crate::compare::{judge, CompareOptions, Verdict};
use crate::group::{Entry, Stat};
use cnnbench_results::engine_types::Precision;
use cnnbench_results::Quantity;
use serde::{Deserialize, Serialize};

/// The file beside the results that holds the accuracy costs.
pub const ACCURACY_FILE: &str = "choose-accuracy.json";

/// One stack and precision against burn-flex in f32, as `verify` measured it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AccuracyCost {
    pub engine: String,
    pub precision: Precision,
    /// The configuration label the stack's results carry (engine, version, precision,
    /// settings), so that the cost joins its rows.
    #[serde(default)]
    pub variant: Vec<String>,
    /// The weights it was measured with, in words (`random, seed 0`, or the file).
    #[serde(default)]
    pub weights: String,
    /// Largest error of the inference output, relative to f32's largest magnitude.
    pub max_relative_error: Option<f64>,
    /// Cosine similarity of the output to f32's.
    pub cosine_similarity: Option<f64>,
    /// `verify`'s verdict at the precision's tolerance (and own floor).
    pub passed: Option<bool>,
    /// Why it could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One configuration's row of the ranking.
#[derive(Clone, Debug, Serialize)]
pub struct Ranked {
    /// `openvino-cpu 2026.4.1, int8, throughput hint`.
    pub config: String,
    pub engine: String,
    pub precision: Precision,
    /// Median latency of a pass at the small batch, milliseconds.
    pub latency_ms: Option<f64>,
    /// Images per second at the large batch.
    pub images_per_s: Option<f64>,
    pub accuracy: Option<AccuracyCost>,
    /// Why its numbers are not what was asked: the stack's own record of layers left in
    /// another precision.
    pub not_as_asked: Vec<String>,
    /// Runs measured on a busy machine.
    pub disturbed: Vec<String>,
    /// Runs (processes) behind each of the two numbers.
    pub runs: [usize; 2],
}

/// The answer.
#[derive(Clone, Debug, Serialize)]
pub struct Choice {
    pub model: String,
    pub device: String,
    pub small_batch: usize,
    pub large_batch: usize,
    /// Fastest first at the small batch (configurations without a small-batch number
    /// after, by throughput).
    pub ranked: Vec<Ranked>,
    /// The Pareto front: configurations no other beats on both latency and error.
    pub pareto: Vec<String>,
    /// The conclusions, in sentences.
    pub conclusions: Vec<String>,
}

/// The configurations' rows at the two batches, ranked, with their accuracy costs.
pub fn choose(
    entries: &[Entry],
    costs: &[AccuracyCost],
    small_batch: usize,
    large_batch: usize,
) -> Choice {
    let mut rows: Vec<(Ranked, Option<&Entry>, Option<&Entry>)> = Vec::new();
    for entry in entries {
        // f32 named too, so that a conclusion reads "… than ort-cpu 1.32.0, f32".
        let config = match entry.config.engine.precision {
            Precision::F32 => format!("{}, f32", entry.engine_label()),
            Precision::Tf32
            | Precision::Bf16
            | Precision::F16
            | Precision::AmpBf16
            | Precision::AmpF16
            | Precision::Int8 => entry.engine_label(),
        };
        let at = rows.iter().position(|(r, _, _)| r.config == config);
        let index = match at {
            Some(i) => i,
            None => {
                let engine = &entry.config.engine;
                let accuracy = costs
                    .iter()
                    .find(|c| {
                        c.engine == engine.name
                            && c.precision == engine.precision
                            && c.variant == engine.variant
                    })
                    .cloned();
                rows.push((
                    Ranked {
                        config: config.clone(),
                        engine: engine.name.clone(),
                        precision: engine.precision,
                        latency_ms: None,
                        images_per_s: None,
                        accuracy,
                        not_as_asked: Vec::new(),
                        disturbed: Vec::new(),
                        runs: [0, 0],
                    },
                    None,
                    None,
                ));
                rows.len() - 1
            }
        };
        let (row, small, large) = &mut rows[index];
        let batch = entry.table.batch_size;
        if batch == small_batch {
            row.latency_ms = entry.value(Quantity::Total, Stat::Median).map(|s| s * 1e3);
            row.runs[0] = entry.runs;
            *small = Some(entry);
        }
        if batch == large_batch {
            row.images_per_s = entry.images_per_s(Stat::Median);
            row.runs[1] = entry.runs;
            *large = Some(entry);
        }
        if batch == small_batch || batch == large_batch {
            for warning in &entry.warnings {
                if warning.contains("not run as asked") && !row.not_as_asked.contains(warning) {
                    row.not_as_asked.push(warning.clone());
                }
            }
            for why in &entry.disturbed {
                row.disturbed.push(format!("batch {batch}: {why}"));
            }
        }
    }
    rows.sort_by(|a, b| {
        let key = |r: &Ranked| {
            (
                r.latency_ms.unwrap_or(f64::INFINITY),
                -r.images_per_s.unwrap_or(0.0),
            )
        };
        key(&a.0)
            .partial_cmp(&key(&b.0))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let pareto = pareto_front(rows.iter().map(|(r, _, _)| r));
    let conclusions = conclusions(&rows, small_batch, large_batch);
    let first = entries.first();
    Choice {
        model: first.map(|e| e.model_name.clone()).unwrap_or_default(),
        device: first
            .map(|e| e.config.device_name.clone())
            .unwrap_or_default(),
        small_batch,
        large_batch,
        ranked: rows.into_iter().map(|(r, _, _)| r).collect(),
        pareto,
        conclusions,
    }
}

/// The configurations no other beats on both latency (lower) and error (lower), among
/// those with both numbers.
fn pareto_front<'a>(rows: impl Iterator<Item = &'a Ranked> + Clone) -> Vec<String> {
    let point = |r: &Ranked| Some((r.latency_ms?, r.accuracy.as_ref()?.max_relative_error?));
    let mut front = Vec::new();
    for r in rows.clone() {
        let Some((latency, error)) = point(r) else {
            continue;
        };
        let beaten = rows
            .clone()
            .filter_map(point)
            .any(|(l, e)| l <= latency && e <= error && (l < latency || e < error));
        if !beaten {
            front.push(r.config.clone());
        }
    }
    front
}

/// The sentences: the fastest configuration at each batch against the fastest that
/// computes in f32 (what one gets without lowering precision), with the interval of the
/// ratio where each side has several runs, and its accuracy cost.
fn conclusions(
    rows: &[(Ranked, Option<&Entry>, Option<&Entry>)],
    small_batch: usize,
    large_batch: usize,
) -> Vec<String> {
    let mut out = Vec::new();
    for (batch, pick) in [(small_batch, 0usize), (large_batch, 1)] {
        let with = |i: usize| -> Vec<(&Ranked, &Entry)> {
            rows.iter()
                .filter_map(|(r, s, l)| {
                    let e = if i == 0 { s } else { l };
                    e.map(|e| (r, e))
                })
                .collect()
        };
        let candidates = with(pick);
        let time = |e: &Entry| {
            e.value(Quantity::Total, Stat::Median)
                .unwrap_or(f64::INFINITY)
        };
        let Some(&(best, best_entry)) = candidates
            .iter()
            .min_by(|a, b| time(a.1).total_cmp(&time(b.1)))
        else {
            continue;
        };
        let baseline = candidates
            .iter()
            .filter(|(r, _)| r.precision == Precision::F32 && r.config != best.config)
            .min_by(|a, b| time(a.1).total_cmp(&time(b.1)));
        let what = if pick == 0 { "latency" } else { "throughput" };
        let Some(&(base, base_entry)) = baseline else {
            out.push(format!(
                "At batch {batch}, {} has the best {what}; no other configuration in f32 ran to compare it with.",
                best.config
            ));
            continue;
        };
        let opts = CompareOptions::default();
        let speedup = time(base_entry) / time(best_entry);
        let interval = judge(base_entry, best_entry, &opts)
            .and_then(|j| match j.pair.verdict {
                Verdict::Faster | Verdict::Slower | Verdict::NoChange => j.pair.ci95,
                Verdict::TooFewSamples
                | Verdict::OneRun
                | Verdict::Disturbed
                | Verdict::Implausible => None,
            })
            .map_or_else(
                || "; no interval: fewer than two runs a side (--repeat)".to_string(),
                |[lo, hi]| format!(" (95% CI {:.2}–{:.2}×)", 1.0 / hi, 1.0 / lo),
            );
        let cost = match best.accuracy.as_ref() {
            Some(AccuracyCost {
                max_relative_error: Some(error),
                cosine_similarity: Some(cosine),
                ..
            }) if *error == 0.0 => format!(
                "; its outputs equal f32's here (cosine {cosine:.5}: on random weights a deep network's output can be its last layer's bias alone)"
            ),
            Some(AccuracyCost {
                max_relative_error: Some(error),
                cosine_similarity: Some(cosine),
                ..
            }) => format!("; its outputs are within {error:.1e} of f32's (cosine {cosine:.5})"),
            Some(AccuracyCost {
                error: Some(why), ..
            }) => format!("; its accuracy cost was not measured: {why}"),
            Some(_) | None => "; its accuracy cost was not measured".to_string(),
        };
        let flagged = if best.not_as_asked.is_empty() {
            String::new()
        } else {
            " (flagged: it did not run entirely as asked)".to_string()
        };
        out.push(format!(
            "At batch {batch} ({what}), {}{flagged} is {speedup:.2}× faster than {}{interval}{cost}.",
            best.config, base.config
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(config: &str, latency: f64, error: Option<f64>) -> Ranked {
        Ranked {
            config: config.into(),
            engine: config.into(),
            precision: Precision::F32,
            latency_ms: Some(latency),
            images_per_s: None,
            accuracy: error.map(|e| AccuracyCost {
                engine: config.into(),
                precision: Precision::F32,
                variant: Vec::new(),
                weights: "random, seed 0".into(),
                max_relative_error: Some(e),
                cosine_similarity: Some(1.0),
                passed: Some(true),
                error: None,
            }),
            not_as_asked: Vec::new(),
            disturbed: Vec::new(),
            runs: [1, 0],
        }
    }

    #[test]
    fn the_pareto_front_keeps_what_nothing_beats_on_both_speed_and_error() {
        let rows = [
            ranked("int8", 10.0, Some(2e-2)),
            ranked("f32", 40.0, Some(1e-7)),
            ranked("bf16", 60.0, Some(5e-3)), // slower and less exact than f32
            ranked("f16", 30.0, Some(1e-3)),
            ranked("unmeasured", 5.0, None),
        ];
        assert_eq!(pareto_front(rows.iter()), ["int8", "f32", "f16"]);
    }
}
