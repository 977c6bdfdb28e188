//! `compare BASE NEW`: pairs rows across two sets of results and says which
//! differences are real: the ratio of medians with a bootstrap 95% confidence
//! interval, a verdict against a noise threshold, and a geometric-mean summary. The
//! bootstrap is `cnnbench_results::stats`'; every [`crate::export::Exporter`] renders a
//! [`Comparison`] (`render_comparison`) from its [`Comparison::cells`] and
//! [`Comparison::summary`].

use crate::fmt::natural_cmp;
use crate::group::{input_desc, Entry, TableKey};
use cnnbench_results::stats::{
    bootstrap_run_median_ratios, geomean_interval95, median_of_run_medians, percentile_interval95,
    SplitMix64,
};
use cnnbench_results::Quantity;
use serde::Serialize;
use std::collections::HashMap;

/// How to compare.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// Changes smaller than this fraction (0.02 = 2%) are noise.
    pub threshold: f64,
    /// The quantity compared: the total (default), or one phase.
    pub quantity: Quantity,
    /// Bootstrap resamples per pair.
    pub resamples: usize,
    /// Seed of the bootstrap, so a comparison prints the same every time.
    pub seed: u64,
    /// `--fail-on-regression`: a fraction (0.05 = 5%).
    pub fail_on_regression: Option<f64>,
    /// `--run-noise`: the machine's run-to-run noise, the relative standard deviation of
    /// one configuration's median from one process to the next (0.05 = 5%). When known,
    /// a pair with one run on a side is judged against it rather than not at all: a
    /// change must then exceed ±2.8 times it (the 95% band of the ratio of two runs).
    pub run_noise: Option<f64>,
}

/// How far the ratio of two single runs of one configuration strays, 95% of the time, in
/// units of the run-to-run noise: 1.96·√2.
pub const ONE_RUN_BAND: f64 = 2.77;

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            threshold: 0.02,
            quantity: Quantity::Total,
            resamples: 10_000,
            seed: 0x00c0_ffee,
            fail_on_regression: None,
            run_noise: None,
        }
    }
}

/// What a pair's numbers support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// NEW is faster by more than the threshold, with 95% confidence.
    Faster,
    /// NEW is slower by more than the threshold, with 95% confidence.
    Slower,
    /// The interval reaches inside the noise threshold.
    NoChange,
    /// A side has fewer than 2 samples: no interval can be had.
    TooFewSamples,
    /// A side holds one run (one process): the passes of one process agree with each
    /// other while processes differ (on a shared VM by ±15%), so no interval from them
    /// can separate a change from run-to-run variation.
    OneRun,
    /// A side was measured on a disturbed machine: its times may be inflated by the
    /// neighbour, so no change is called real.
    Disturbed,
    /// A side's median is not a time (0, or a ratio that is not finite): nothing can be
    /// said, and a gate must not pass on it. Loading refuses such times; this is the
    /// last guard.
    Implausible,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no change",
            Verdict::TooFewSamples => "too few samples",
            Verdict::OneRun => "not judged: one run",
            Verdict::Disturbed => "not judged: disturbed",
            Verdict::Implausible => "not judged: implausible times",
        }
    }
}

/// One model measured in both sets.
#[derive(Clone, Debug, Serialize)]
pub struct Pair {
    pub model: String,
    pub input: String,
    pub mode: String,
    pub base_config: String,
    pub new_config: String,
    pub base_median_ms: f64,
    pub new_median_ms: f64,
    pub base_samples: usize,
    pub new_samples: usize,
    /// Runs (result files, i.e. processes) on each side: the unit the interval resamples.
    pub base_runs: usize,
    pub new_runs: usize,
    /// NEW / BASE of the median of the runs' medians: below 1 NEW is faster.
    pub ratio: f64,
    /// The bootstrap 95% interval of `ratio`, resampling runs and then the passes within
    /// each; `None` when it cannot be had (one run or one sample on a side).
    pub ci95: Option<[f64; 2]>,
    pub verdict: Verdict,
    /// Slower than `--fail-on-regression` allows, with confidence.
    pub regression: bool,
    /// Why a side was judged disturbed (`base: file: reason`); empty when both were
    /// clean or unjudged.
    pub disturbed: Vec<String>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub quantity: Quantity,
    pub threshold: f64,
    pub fail_on_regression: Option<f64>,
    pub pairs: Vec<Pair>,
    /// Geometric mean of the ratios and its bootstrap 95% interval.
    pub geomean: Option<f64>,
    pub geomean_ci95: Option<[f64; 2]>,
    pub only_in_base: Vec<String>,
    pub only_in_new: Vec<String>,
    /// Machine or software differences between the sets.
    pub warnings: Vec<String>,
}

/// FNV-1a, a stable hash for seeding (std's hasher may change between releases).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The verdict for an interval of ratios against a noise threshold.
pub fn verdict(ci: [f64; 2], threshold: f64) -> Verdict {
    if ci[0] > 1.0 + threshold {
        Verdict::Slower
    } else if ci[1] < 1.0 - threshold {
        Verdict::Faster
    } else {
        Verdict::NoChange
    }
}

fn model_name(e: &Entry) -> String {
    e.legacy_label
        .clone()
        .unwrap_or_else(|| e.model_name.clone())
}

fn describe(e: &Entry) -> String {
    format!(
        "{} ({}, {}) on {}",
        model_name(e),
        input_desc(&e.table),
        e.table.mode,
        e.config_name()
    )
}

type StrictKey = (TableKey, String, Option<String>, String);

fn strict_key(e: &Entry) -> StrictKey {
    (
        e.table.clone(),
        e.config.device_name.clone(),
        e.config.label.clone(),
        e.config.engine.name.clone(),
    )
}

/// Pairs rows: first by model, input, mode, device and engine; what is left, by
/// model, input and mode alone where each side has exactly one such row (a change
/// of machine or engine).
fn pair_up(base: &[Entry], new: &[Entry]) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let mut pairs = Vec::new();
    let mut used_b = vec![false; base.len()];
    let mut used_n = vec![false; new.len()];
    let mut by_key: HashMap<StrictKey, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (i, e) in base.iter().enumerate() {
        by_key.entry(strict_key(e)).or_default().0.push(i);
    }
    for (i, e) in new.iter().enumerate() {
        by_key.entry(strict_key(e)).or_default().1.push(i);
    }
    for (b, n) in by_key.values() {
        if b.len() == 1 && n.len() == 1 {
            pairs.push((b[0], n[0]));
            used_b[b[0]] = true;
            used_n[n[0]] = true;
        }
    }
    let mut by_table: HashMap<TableKey, (Vec<usize>, Vec<usize>)> = HashMap::new();
    for (i, e) in base.iter().enumerate().filter(|(i, _)| !used_b[*i]) {
        by_table.entry(e.table.clone()).or_default().0.push(i);
    }
    for (i, e) in new.iter().enumerate().filter(|(i, _)| !used_n[*i]) {
        by_table.entry(e.table.clone()).or_default().1.push(i);
    }
    for (b, n) in by_table.values() {
        if b.len() == 1 && n.len() == 1 {
            pairs.push((b[0], n[0]));
            used_b[b[0]] = true;
            used_n[n[0]] = true;
        }
    }
    let only_b = (0..base.len()).filter(|&i| !used_b[i]).collect();
    let only_n = (0..new.len()).filter(|&i| !used_n[i]).collect();
    (pairs, only_b, only_n)
}

/// One line per kind of difference between the machines or software of the pairs.
fn differences(base: &[Entry], new: &[Entry], pairs: &[(usize, usize)]) -> Vec<String> {
    let mut seen: Vec<(String, String, String)> = Vec::new();
    let mut note = |what: &str, a: String, b: String| {
        if a != b {
            let item = (what.to_string(), a, b);
            if !seen.contains(&item) {
                seen.push(item);
            }
        }
    };
    for &(i, j) in pairs {
        let (a, b) = (&base[i], &new[j]);
        note("device", a.device.clone(), b.device.clone());
        let (ga, gb) = (&a.config.engine, &b.config.engine);
        note("engine", ga.name.clone(), gb.name.clone());
        note(
            "framework version",
            format!("{} {}", ga.framework, ga.framework_version),
            format!("{} {}", gb.framework, gb.framework_version),
        );
        let libs = |m: &std::collections::BTreeMap<String, String>| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        // A scenario's samples are the engine's compute time per query under its load,
        // paired with closed-loop passes only when nothing else pairs: said, not hidden.
        note("load", a.load.clone(), b.load.clone());
        note("libraries", libs(&ga.libraries), libs(&gb.libraries));
        note("settings", libs(&ga.settings), libs(&gb.settings));
        note(
            "precision",
            ga.precision.as_str().into(),
            gb.precision.as_str().into(),
        );
        note(
            "allocator",
            ga.allocator.clone().unwrap_or_default(),
            gb.allocator.clone().unwrap_or_default(),
        );
        note(
            "threads",
            ga.threads_requested
                .map_or("default".into(), |t| t.to_string()),
            gb.threads_requested
                .map_or("default".into(), |t| t.to_string()),
        );
        if let (Some(ma), Some(mb)) = (a.machines.first(), b.machines.first()) {
            note("CPU", ma.cpu.clone(), mb.cpu.clone());
            note(
                "operating system",
                format!("{} {}", ma.os, ma.kernel),
                format!("{} {}", mb.os, mb.kernel),
            );
            note(
                "memory",
                format!("{} GiB", ma.memory_bytes >> 30),
                format!("{} GiB", mb.memory_bytes >> 30),
            );
        }
        note(
            "cnnbench version",
            a.tool_versions.join(", "),
            b.tool_versions.join(", "),
        );
    }
    seen.into_iter()
        .map(|(what, a, b)| {
            let show = |s: String| {
                if s.trim().is_empty() {
                    "(none)".to_string()
                } else {
                    s
                }
            };
            format!(
                "the {what} differs: BASE {} vs NEW {}; the difference in speed may come from it",
                show(a),
                show(b)
            )
        })
        .collect()
}

/// The fewest samples a side needs before a pair is judged (`compare`) or counted in a
/// conclusion (`report --conclusions`): one sample has no spread, so no interval.
pub const MIN_SAMPLES: usize = 2;

/// One pair of rows judged: the pair as the table shows it, and the bootstrap draws of
/// the log of its ratio where the interval came from the bootstrap (both sides hold
/// several runs), for an interval of a geometric mean over pairs.
#[derive(Clone, Debug)]
pub struct Judged {
    pub pair: Pair,
    pub log_draws: Option<Vec<f64>>,
    /// The interval is the band of the run-to-run noise the results recorded (one run
    /// on a side, no `--run-noise` given).
    pub noise_from_results: bool,
}

/// Judges one pair, BASE row `a` against NEW row `b`: the ratio of the medians of the
/// runs' medians (NEW / BASE), its interval and the verdict. `None` when a side has no
/// samples of the compared quantity. `compare` judges every pair with it, and
/// `report --conclusions` the models two configurations share, so that both trust the
/// same pairs.
pub fn judge(a: &Entry, b: &Entry, opts: &CompareOptions) -> Option<Judged> {
    let q = opts.quantity;
    let (ra, rb) = (a.run_samples.get(&q)?, b.run_samples.get(&q)?);
    let (ma, mb) = (median_of_run_medians(ra), median_of_run_medians(rb));
    let ratio = mb / ma;
    let plausible = [ma, mb, ratio].iter().all(|v| v.is_finite() && *v > 0.0);
    let disturbed: Vec<String> = (a.disturbed.iter().map(|w| format!("base {w}")))
        .chain(b.disturbed.iter().map(|w| format!("new {w}")))
        .collect();
    let count = |runs: &[Vec<f64>]| runs.iter().map(Vec::len).sum::<usize>();
    let (na, nb) = (count(ra), count(rb));
    let mut log_draws = None;
    let mut noise_from_results = false;
    let (ci, v) = if !plausible {
        (None, Verdict::Implausible)
    } else if na < MIN_SAMPLES || nb < MIN_SAMPLES {
        (None, Verdict::TooFewSamples)
    } else if !disturbed.is_empty() {
        (None, Verdict::Disturbed)
    } else if ra.len() < 2 || rb.len() < 2 {
        // Given on the command line, else what both sides' results recorded.
        let recorded = match (a.run_noise_pct, b.run_noise_pct) {
            (Some(x), Some(y)) => Some(x.max(y) / 100.0),
            _ => None,
        };
        if opts.run_noise.is_none() && recorded.is_some() {
            noise_from_results = true;
        }
        match opts.run_noise.or(recorded) {
            // The runs cannot show their own spread: the machine's known noise sets
            // the band a change must leave.
            Some(noise) => {
                let band = (ONE_RUN_BAND * noise).max(opts.threshold);
                let ci = [ratio * (1.0 - band), ratio * (1.0 + band)];
                (Some(ci), verdict(ci, opts.threshold))
            }
            None => (None, Verdict::OneRun),
        }
    } else {
        // Each pair draws from its own stream, seeded by its names, so a pair's
        // interval does not depend on which other results were compared.
        let seed = opts.seed ^ fnv1a(&format!("{}|{}", describe(a), describe(b)));
        let boot = bootstrap_run_median_ratios(
            ra,
            rb,
            opts.resamples.max(100),
            &mut SplitMix64::new(seed),
        );
        let ci = percentile_interval95(boot.clone());
        log_draws = Some(boot.iter().map(|r| r.ln()).collect());
        (Some(ci), verdict(ci, opts.threshold))
    };
    let judged = !matches!(
        v,
        Verdict::TooFewSamples | Verdict::Disturbed | Verdict::OneRun | Verdict::Implausible
    );
    let regression = judged
        && opts
            .fail_on_regression
            .is_some_and(|p| ci.is_some_and(|ci| ci[0] > 1.0 + p));
    Some(Judged {
        pair: Pair {
            model: model_name(a),
            input: input_desc(&a.table),
            mode: a.table.mode.to_string(),
            base_config: a.config_name(),
            new_config: b.config_name(),
            base_median_ms: ma * 1000.0,
            new_median_ms: mb * 1000.0,
            base_samples: na,
            new_samples: nb,
            base_runs: ra.len(),
            new_runs: rb.len(),
            ratio,
            ci95: ci,
            verdict: v,
            regression,
            disturbed,
        },
        log_draws,
        noise_from_results,
    })
}

/// Compares two sets of rows.
pub fn compare(base: &[Entry], new: &[Entry], opts: &CompareOptions) -> Comparison {
    let (mut pairs, only_b, only_n) = pair_up(base, new);
    pairs.sort_by_cached_key(|&(i, j)| (describe(&base[i]), describe(&new[j])));
    let warnings = differences(base, new, &pairs);
    let mut out = Vec::new();
    let mut boots: Vec<Vec<f64>> = Vec::new();
    let q = opts.quantity;
    let mut missing = Vec::new();
    let mut noise_from_results = false;
    for &(i, j) in &pairs {
        let (a, b) = (&base[i], &new[j]);
        let Some(judged) = judge(a, b, opts) else {
            missing.push(describe(a));
            continue;
        };
        noise_from_results |= judged.noise_from_results;
        boots.extend(judged.log_draws);
        out.push(judged.pair);
    }
    out.sort_by(|x, y| {
        natural_cmp(&x.model, &y.model)
            .then(x.input.cmp(&y.input))
            .then(x.base_config.cmp(&y.base_config))
    });
    // Pairs measured on a disturbed machine, or with one run on a side, say nothing about
    // the change: left out.
    let trusted: Vec<&Pair> = out
        .iter()
        .filter(|p| {
            !matches!(
                p.verdict,
                Verdict::Disturbed | Verdict::OneRun | Verdict::Implausible
            )
        })
        .collect();
    let geomean = (!trusted.is_empty())
        .then(|| (trusted.iter().map(|p| p.ratio.ln()).sum::<f64>() / trusted.len() as f64).exp());
    // The bootstrap of the geometric mean combines the pairs' draws index by index.
    // Only when every trusted pair has draws (none has too few samples).
    let geomean_ci95 = if boots.len() == trusted.len() && !boots.is_empty() {
        geomean_interval95(&boots)
    } else {
        None
    };
    let mut warnings = warnings;
    if noise_from_results {
        warnings.push(
            "a pair with one run a side was judged against the run-to-run noise its results recorded (`cnnbench noise` on their machine): a change must exceed 2.8 times it; more runs a side (run --repeat) judge it better"
                .to_string(),
        );
    }
    for m in missing {
        warnings.push(format!("{m}: no `{q}` samples on one side, not compared"));
    }
    let mut only_in_base: Vec<String> = only_b.into_iter().map(|i| describe(&base[i])).collect();
    let mut only_in_new: Vec<String> = only_n.into_iter().map(|i| describe(&new[i])).collect();
    only_in_base.sort_by(|a, b| natural_cmp(a, b));
    only_in_new.sort_by(|a, b| natural_cmp(a, b));
    Comparison {
        quantity: opts.quantity,
        threshold: opts.threshold,
        fail_on_regression: opts.fail_on_regression,
        pairs: out,
        geomean,
        geomean_ci95,
        only_in_base,
        only_in_new,
        warnings,
    }
}

fn pct(r: f64) -> String {
    format!("{:+.1}%", (r - 1.0) * 100.0)
}

impl Comparison {
    /// Whether `--fail-on-regression` was crossed.
    pub fn failed(&self) -> bool {
        self.pairs.iter().any(|p| p.regression)
    }

    /// Pairs not judged because a side was measured on a disturbed machine, holds one
    /// run, or holds times no pass could take: a gate (`--fail-on-regression`) cannot
    /// pass on them.
    pub fn undecided(&self) -> usize {
        self.pairs
            .iter()
            .filter(|p| {
                matches!(
                    p.verdict,
                    Verdict::Disturbed | Verdict::OneRun | Verdict::Implausible
                )
            })
            .count()
    }

    /// Header and cells of the pair table.
    pub fn cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let same_config = self.pairs.iter().all(|p| p.base_config == p.new_config);
        let head: Vec<String> = [
            "Model",
            "Input",
            "Configuration",
            "Base (ms)",
            "New (ms)",
            "New/Base",
            "95% CI",
            "Change",
            "Verdict",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .pairs
            .iter()
            .map(|p| {
                let config = if same_config || p.base_config == p.new_config {
                    p.base_config.clone()
                } else {
                    // `CPU · burn-flex 0.22.1 → 0.22.2` when only the software changed.
                    match (
                        p.base_config.split_once(" · "),
                        p.new_config.split_once(" · "),
                    ) {
                        (Some((da, ea)), Some((db, eb))) if da == db => {
                            format!("{da} · {ea} → {eb}")
                        }
                        _ => format!("{} → {}", p.base_config, p.new_config),
                    }
                };
                let mut verdict = p.verdict.as_str().to_string();
                if p.regression {
                    verdict.push_str(" (regression)");
                }
                vec![
                    p.model.clone(),
                    format!("{}, {}", p.input, p.mode),
                    config,
                    format!("{:.2}", p.base_median_ms),
                    format!("{:.2}", p.new_median_ms),
                    format!("{:.3}", p.ratio),
                    p.ci95
                        .map_or("-".into(), |ci| format!("{:.3}–{:.3}", ci[0], ci[1])),
                    pct(p.ratio),
                    verdict,
                ]
            })
            .collect();
        (head, rows)
    }

    /// The closing lines: geometric mean, verdict counts, unmatched rows.
    pub fn summary(&self) -> Vec<String> {
        let mut out = Vec::new();
        let count = |v: Verdict| self.pairs.iter().filter(|p| p.verdict == v).count();
        if let Some(g) = self.geomean {
            let ci = self.geomean_ci95.map_or(String::new(), |c| {
                format!(" (95% CI {:.3}–{:.3})", c[0], c[1])
            });
            let direction = if (g - 1.0).abs() < 0.0005 {
                "NEW is as fast as BASE".to_string()
            } else if g < 1.0 {
                format!(
                    "NEW is {:.1}% faster ({:.2}x speed-up)",
                    (1.0 - g) * 100.0,
                    1.0 / g
                )
            } else {
                format!(
                    "NEW is {:.1}% slower ({:.2}x slow-down)",
                    (g - 1.0) * 100.0,
                    g
                )
            };
            // Say so when the interval does not clear the noise threshold.
            let clear = self
                .geomean_ci95
                .is_none_or(|c| c[0] > 1.0 + self.threshold || c[1] < 1.0 - self.threshold);
            let direction = if clear || (g - 1.0).abs() < 0.0005 {
                direction
            } else {
                format!(
                    "{direction}, but the interval reaches into the ±{}% noise threshold: not a clear change",
                    trim_num(self.threshold * 100.0)
                )
            };
            out.push(format!(
                "Geometric mean of new/base ({} time, medians) over {} pairs: {:.3}{ci}: {direction}.",
                self.quantity,
                self.pairs.len()
                    - count(Verdict::Disturbed)
                    - count(Verdict::OneRun)
                    - count(Verdict::Implausible),
                g
            ));
            let mut counts = format!(
                "{} faster, {} slower, {} no change (noise threshold ±{}%)",
                count(Verdict::Faster),
                count(Verdict::Slower),
                count(Verdict::NoChange),
                trim_num(self.threshold * 100.0)
            );
            let few = count(Verdict::TooFewSamples);
            if few > 0 {
                counts.push_str(&format!(", {few} with too few samples to tell"));
            }
            let disturbed = count(Verdict::Disturbed);
            if disturbed > 0 {
                counts.push_str(&format!(
                    ", {disturbed} not judged (measured on a disturbed machine)"
                ));
            }
            let one_run = count(Verdict::OneRun);
            if one_run > 0 {
                counts.push_str(&format!(", {one_run} not judged (one run on a side)"));
            }
            let implausible = count(Verdict::Implausible);
            if implausible > 0 {
                counts.push_str(&format!(
                    ", {implausible} not judged (times no pass could take)"
                ));
            }
            out.push(counts + ".");
        } else if self.pairs.is_empty() {
            out.push("No result in BASE has a counterpart in NEW: nothing to compare.".into());
        } else if count(Verdict::Disturbed) == self.pairs.len() {
            out.push(format!(
                "Every one of the {} pairs was measured on a disturbed machine on one side or both: no change is called real; rerun on a quiet machine (run --require-clean, --retries N).",
                self.pairs.len()
            ));
        } else {
            let why: Vec<String> = [
                (count(Verdict::OneRun), "with one run on a side"),
                (count(Verdict::Disturbed), "measured on a disturbed machine"),
                (
                    count(Verdict::Implausible),
                    "holding times no pass could take",
                ),
            ]
            .into_iter()
            .filter(|(n, _)| *n > 0)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
            out.push(format!("No pair can be judged: {}.", why.join(", ")));
        }
        if count(Verdict::OneRun) > 0 {
            out.push(
                "One run per side cannot separate a change from run-to-run variation: the passes of one process agree with each other while processes differ. Measure each side in several processes (run --repeat N, at least 3; 5 or more to find a change of a few percent) and compare those.".into(),
            );
        }
        for p in self
            .pairs
            .iter()
            .filter(|p| p.verdict == Verdict::Disturbed)
        {
            out.push(format!(
                "Not judged, {} ({}, {}): {}",
                p.model,
                p.input,
                p.mode,
                p.disturbed.join("; ")
            ));
        }
        if !self.only_in_base.is_empty() {
            out.push(format!(
                "Only in BASE ({}): {}",
                self.only_in_base.len(),
                self.only_in_base.join("; ")
            ));
        }
        if !self.only_in_new.is_empty() {
            out.push(format!(
                "Only in NEW ({}): {}",
                self.only_in_new.len(),
                self.only_in_new.join("; ")
            ));
        }
        if let Some(p) = self.fail_on_regression {
            let bad: Vec<&Pair> = self.pairs.iter().filter(|x| x.regression).collect();
            if bad.is_empty() {
                out.push(format!(
                    "No pair is slower by more than {}% with 95% confidence.",
                    trim_num(p * 100.0)
                ));
            } else {
                out.push(format!(
                    "REGRESSION: {} pair(s) slower by more than {}% with 95% confidence: {}",
                    bad.len(),
                    trim_num(p * 100.0),
                    bad.iter()
                        .map(|x| format!("{} on {} ({})", x.model, x.new_config, pct(x.ratio)))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
        out
    }
}

fn trim_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_respect_the_threshold() {
        assert_eq!(verdict([1.05, 1.10], 0.02), Verdict::Slower);
        assert_eq!(verdict([0.90, 0.95], 0.02), Verdict::Faster);
        assert_eq!(verdict([0.99, 1.01], 0.02), Verdict::NoChange);
        // Significant but within the noise threshold.
        assert_eq!(verdict([1.005, 1.015], 0.02), Verdict::NoChange);
    }
}
