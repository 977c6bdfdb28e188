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
use crate::serving::ServingSeries;
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
    /// With the user's images (`choose --images`): the share of them whose top class is
    /// f32's, and whose f32 class is among the five highest scores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top1_agreement: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top5_agreement: Option<f64>,
    /// The images they were measured on, in words (`92 images from photos/ (the 8
    /// calibration images left out)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<String>,
    /// The folder of images the cost was measured with (`100 images from photos/`), so
    /// that a resumed choice with other images measures again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_folder: Option<String>,
    /// Why it could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl AccuracyCost {
    /// Whether this is the cost of `engine` in `precision` with these settings (its
    /// configuration label's `variant`): how a cost joins its rows, and how a resumed
    /// choice finds what it measured.
    pub fn is_for(&self, engine: &str, precision: Precision, variant: &[String]) -> bool {
        self.engine == engine && self.precision == precision && self.variant == variant
    }
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
    /// The small batch's forward pass over the least time this machine's ceilings allow
    /// it ("% of roof"), when its runs recorded a roofline.
    pub of_roof: Option<f64>,
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
                    .find(|c| c.is_for(&engine.name, engine.precision, &engine.variant))
                    .cloned();
                rows.push((
                    Ranked {
                        config: config.clone(),
                        engine: engine.name.clone(),
                        precision: engine.precision,
                        latency_ms: None,
                        images_per_s: None,
                        of_roof: None,
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
            row.of_roof = entry
                .forward_roof_s
                .zip(entry.value(Quantity::Forward, Stat::Median))
                .filter(|(_, forward)| *forward > 0.0)
                .map(|(roof, forward)| roof / forward);
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
    front(rows.filter_map(|r| {
        Some((
            r.config.clone(),
            r.latency_ms?,
            r.accuracy.as_ref()?.max_relative_error?,
        ))
    }))
}

/// The names of the points no other beats on both costs (each lower is better): `(name,
/// cost, error)`.
fn front(points: impl Iterator<Item = (String, f64, f64)>) -> Vec<String> {
    let points: Vec<(String, f64, f64)> = points.collect();
    points
        .iter()
        .filter(|(_, cost, error)| {
            !points
                .iter()
                .any(|(_, c, e)| c <= cost && e <= error && (c < cost || e < error))
        })
        .map(|(name, _, _)| name.clone())
        .collect()
}

/// A configuration's accuracy cost in a conclusion's words, after a semicolon: the
/// output's error and, with the user's images, how often it picks f32's class.
fn cost_words(accuracy: Option<&AccuracyCost>) -> String {
    let agreement = accuracy
        .and_then(|a| Some((a.top1_agreement?, a.images.as_deref()?)))
        .map_or(String::new(), |(top1, images)| {
            format!(
                "; it picks f32's class for {:.1}% of {images}",
                100.0 * top1
            )
        });
    output_words(accuracy) + &agreement
}

/// The output's error against f32, in words.
fn output_words(accuracy: Option<&AccuracyCost>) -> String {
    match accuracy {
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
    }
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
        let cost = cost_words(best.accuracy.as_ref());
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

/// `choose --scenario server`'s answer: each stack and precision ranked by the highest
/// load it serves (queries a second, one image each, arriving as a Poisson process) with
/// its p99 latency within the bound, as `run --find-peak` found it; the accuracy cost
/// beside each.
#[derive(Clone, Debug, Serialize)]
pub struct ServingChoice {
    pub model: String,
    pub device: String,
    pub bound_ms: f64,
    /// Highest peak first; those that met the bound at no load last.
    pub ranked: Vec<ServingRanked>,
    /// The configurations no other beats on both peak load (higher) and error (lower).
    pub pareto: Vec<String>,
    pub conclusions: Vec<String>,
}

/// One configuration's row of [`ServingChoice`].
#[derive(Clone, Debug, Serialize)]
pub struct ServingRanked {
    /// `openvino-cpu 2026.4.1, int8`.
    pub config: String,
    pub engine: String,
    pub precision: Precision,
    /// The highest offered load whose run was valid; `None`: no load was.
    pub peak_qps: Option<f64>,
    /// The median and p99 latency at the peak, milliseconds.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    /// Why no load was valid, in the serving table's words.
    pub no_valid_load: Option<String>,
    pub accuracy: Option<AccuracyCost>,
    /// Server runs and peak-search probes it was judged from.
    pub probes: usize,
}

/// The server scenario's series of one model under one bound (the serving table's rows,
/// highest peak first), each with its accuracy cost, ranked.
pub fn choose_serving(
    series: &[ServingSeries],
    costs: &[AccuracyCost],
    bound_ms: f64,
) -> ServingChoice {
    let mut ranked: Vec<ServingRanked> = series
        .iter()
        .filter(|s| s.bound_ms == Some(bound_ms))
        .map(|s| {
            let peak = s.peak();
            ServingRanked {
                config: format!("{}, {}", s.engine, s.precision.as_str()),
                engine: s.engine_name.clone(),
                precision: s.precision,
                peak_qps: peak.map(|p| p.target_qps),
                p50_ms: peak.and_then(|p| p.p50_s).map(|v| v * 1e3),
                p99_ms: peak.and_then(|p| p.p99_s).map(|v| v * 1e3),
                no_valid_load: peak.is_none().then(|| s.no_valid_load()),
                accuracy: costs
                    .iter()
                    .find(|c| c.is_for(&s.engine_name, s.precision, &s.variant))
                    .cloned(),
                probes: s.runs + s.probes,
            }
        })
        .collect();
    // Highest peak first, then those with none, in the order given.
    ranked.sort_by(|a, b| match (a.peak_qps, b.peak_qps) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    // Higher is better for the load: its negative is the cost.
    let pareto = front(ranked.iter().filter_map(|r| {
        Some((
            r.config.clone(),
            -r.peak_qps?,
            r.accuracy.as_ref()?.max_relative_error?,
        ))
    }));
    let conclusions = serving_conclusions(&ranked, bound_ms);
    ServingChoice {
        model: series.first().map(|s| s.model.clone()).unwrap_or_default(),
        device: series.first().map(|s| s.device.clone()).unwrap_or_default(),
        bound_ms,
        ranked,
        pareto,
        conclusions,
    }
}

/// The sentence: the configuration serving the highest load against the best in f32.
/// One peak search a configuration gives no interval, and the sentence says so.
fn serving_conclusions(ranked: &[ServingRanked], bound_ms: f64) -> Vec<String> {
    let served = |r: &&ServingRanked| r.peak_qps.is_some();
    let Some(best) = ranked.iter().find(served) else {
        return vec![format!(
            "No configuration held its p99 latency within {bound_ms} ms at any load: raise --latency-bound."
        )];
    };
    let base = ranked
        .iter()
        .filter(served)
        .find(|r| r.precision == Precision::F32 && r.config != best.config);
    let cost = cost_words(best.accuracy.as_ref());
    let peak = best.peak_qps.unwrap_or(0.0);
    vec![match base {
        None => format!(
            "Under p99 ≤ {bound_ms} ms, {} serves the most, {peak:.1} queries a second; no other configuration in f32 held the bound to compare it with{cost}.",
            best.config
        ),
        Some(base) => {
            let base_peak = base.peak_qps.unwrap_or(0.0);
            format!(
                "Under p99 ≤ {bound_ms} ms, {} serves {peak:.1} queries a second, {:.2}× the {base_peak:.1} of {} (one peak search each, known to the search's 2% resolution and the probes' own spread: no interval){cost}.",
                best.config,
                peak / base_peak,
                base.config
            )
        }
    }]
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
            of_roof: None,
            accuracy: error.map(|e| AccuracyCost {
                engine: config.into(),
                precision: Precision::F32,
                variant: Vec::new(),
                weights: "random, seed 0".into(),
                max_relative_error: Some(e),
                cosine_similarity: Some(1.0),
                passed: Some(true),
                top1_agreement: None,
                top5_agreement: None,
                images: None,
                image_folder: None,
                error: None,
            }),
            not_as_asked: Vec::new(),
            disturbed: Vec::new(),
            runs: [1, 0],
        }
    }

    fn series(engine: &str, precision: Precision, peak: Option<f64>) -> ServingSeries {
        use crate::serving::LoadPoint;
        let point = |qps: f64, valid: bool| LoadPoint {
            target_qps: qps,
            achieved_qps: qps,
            p50_s: Some(0.01),
            p99_s: Some(if valid { 0.04 } else { 0.2 }),
            valid,
            invalid_reasons: Vec::new(),
        };
        ServingSeries {
            model: "resnet50".into(),
            input: [3, 224, 224],
            batch_size: 1,
            device: "cpu".into(),
            engine: format!("{engine} 1.0"),
            precision,
            engine_name: engine.into(),
            variant: Vec::new(),
            in_flight: 1,
            batcher: None,
            bound_ms: Some(50.0),
            points: match peak {
                Some(qps) => vec![point(qps, true), point(qps * 1.02, false)],
                None => vec![point(1.0, false)],
            },
            runs: 0,
            probes: 2,
            bounds_differ: false,
        }
    }

    fn cost(engine: &str, precision: Precision, error: f64) -> AccuracyCost {
        AccuracyCost {
            engine: engine.into(),
            precision,
            variant: Vec::new(),
            weights: "random, seed 0".into(),
            max_relative_error: Some(error),
            cosine_similarity: Some(0.999),
            passed: Some(true),
            top1_agreement: None,
            top5_agreement: None,
            images: None,
            image_folder: None,
            error: None,
        }
    }

    #[test]
    fn a_cost_on_the_users_images_says_how_often_the_class_is_f32s() {
        let mut measured = cost("ort", Precision::Int8, 8.1e-3);
        assert_eq!(
            cost_words(Some(&measured)),
            "; its outputs are within 8.1e-3 of f32's (cosine 0.99900)"
        );
        measured.top1_agreement = Some(0.97);
        measured.images = Some("92 images from photos (the 8 calibration images left out)".into());
        assert_eq!(
            cost_words(Some(&measured)),
            "; its outputs are within 8.1e-3 of f32's (cosine 0.99900); it picks f32's class for 97.0% of 92 images from photos (the 8 calibration images left out)"
        );
    }

    #[test]
    fn a_serving_choice_ranks_by_peak_and_joins_each_cost() {
        let served = [
            series("ort", Precision::F32, Some(36.0)),
            series("slow", Precision::F32, None),
            series("ov", Precision::F32, Some(40.0)),
            series("ov", Precision::Int8, Some(120.0)),
        ];
        let costs = [
            cost("ov", Precision::Int8, 2e-2),
            cost("ov", Precision::F32, 1e-7),
            cost("ort", Precision::F32, 1e-6),
        ];
        let choice = choose_serving(&served, &costs, 50.0);
        let configs: Vec<&str> = choice.ranked.iter().map(|r| r.config.as_str()).collect();
        assert_eq!(
            configs,
            [
                "ov 1.0, int8",
                "ov 1.0, f32",
                "ort 1.0, f32",
                "slow 1.0, f32"
            ]
        );
        assert_eq!(choice.ranked[0].peak_qps, Some(120.0));
        assert_eq!(choice.ranked[0].p99_ms, Some(40.0));
        assert_eq!(
            choice.ranked[2]
                .accuracy
                .as_ref()
                .and_then(|c| c.max_relative_error),
            Some(1e-6)
        );
        let none = &choice.ranked[3];
        assert_eq!(none.peak_qps, None);
        assert!(
            none.no_valid_load
                .as_deref()
                .is_some_and(|w| w.starts_with("no valid load")),
            "{none:?}"
        );
        // ort serves less and is less exact than ov f32: off the front.
        assert_eq!(choice.pareto, ["ov 1.0, int8", "ov 1.0, f32"]);
        let said = &choice.conclusions[0];
        assert!(
            said.starts_with("Under p99 ≤ 50 ms, ov 1.0, int8 serves 120.0 queries a second, 3.00× the 40.0 of ov 1.0, f32"),
            "{said}"
        );
        assert!(said.contains("within 2.0e-2 of f32's"), "{said}");
        // Another bound's series are not this choice's.
        assert!(choose_serving(&served, &costs, 100.0).ranked.is_empty());
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
