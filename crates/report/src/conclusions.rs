//! `report --conclusions`: the original README's paragraph for any set of results ("cuDNN
//! is 2.2x to 3.0x faster than nn", "GPUs are critical: 49x to 74x faster than the
//! CPUs"). Every two configurations that differ in one way only — the device, the
//! software, or the precision — and share at least [`MIN_MODELS`] models give one
//! statement: the range of the per-model speed-ups, their geometric mean and, where every
//! model was measured in several runs a side, the bootstrap 95% interval of that mean.
//!
//! Nothing here is computed twice: the configurations and their pairing per model are
//! the speed-ups' ([`crate::speedup`]), and whether a model's pair of rows is trusted,
//! with its bootstrap draws, is `compare`'s ([`crate::compare::judge`]): a row measured
//! on a disturbed machine, or with fewer samples than `compare` needs, is left out of the
//! statement and listed as not concluded, with why.

use crate::compare::{self, CompareOptions, Verdict};
use crate::fmt::{natural_cmp, times};
use crate::group::{Entry, Stat};
use crate::record::{DeviceKind, EngineDesc};
use crate::speedup::{self, Config, Speedup};
use crate::table::Table;
use cnnbench_results::stats::geomean_interval95;
use cnnbench_results::Precision;

/// The fewest trusted models two configurations must share for a statement: one model
/// is an anecdote, not a conclusion across models.
pub const MIN_MODELS: usize = 2;

/// What the statements are, said once before them.
pub fn preamble(stat: Stat) -> String {
    format!(
        "Configurations that differ in one way only (device, software or precision), over the models both ran: the range of the per-model speed-ups of the {} total time, their geometric mean and, where every model has several runs a side, its bootstrap 95% interval.",
        stat.as_str()
    )
}

/// What the section says when there is nothing to conclude.
pub const NONE: &str =
    "No two configurations differ in one way only and share enough trusted models.";

/// The one way two configurations differ: what a statement is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dimension {
    /// Two GPUs with the same software at the same precision.
    GpuAgainstGpu,
    /// Two CPUs (two machines) with the same software at the same precision.
    CpuAgainstCpu,
    /// A GPU against a CPU with the same framework at the same precision. The libraries
    /// that come with a device (cuDNN and CUDA, MKL and oneDNN) change with it, and a
    /// CPU has no cuDNN to turn off, so a GPU configuration with cuDNN and one without
    /// both differ from the CPU's in the device alone.
    GpuAgainstCpu,
    /// Two engines or libraries (cuDNN against nn, one engine against another) on the
    /// same device at the same precision.
    Software,
    /// Two precisions of the same software on the same device.
    Precision,
}

impl Dimension {
    /// The heading of its statements, as the original README's bold lead-ins.
    pub fn title(self) -> &'static str {
        match self {
            Dimension::GpuAgainstGpu => "GPU against GPU",
            Dimension::CpuAgainstCpu => "CPU against CPU",
            Dimension::GpuAgainstCpu => "GPU against CPU",
            Dimension::Software => "Software against software",
            Dimension::Precision => "Precision against precision",
        }
    }
}

/// One statement: configuration A against B across the models both ran, A the faster by
/// the geometric mean.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Conclusion {
    pub dimension: Dimension,
    /// What both sides share, leading the sentence (`On GTX 1080 Ti`); `None` when the
    /// sides are named in full.
    pub context: Option<String>,
    /// The two sides by what tells them apart (`torch7 cuDNN 5.1.10`, `torch7 nn`), the
    /// per-model ratios (B's time over A's, by the report's statistic) and their range and
    /// geometric mean.
    pub speedup: Speedup,
    /// The two configurations' full names.
    pub a_config: String,
    pub b_config: String,
    /// The bootstrap 95% interval of the geometric mean (same direction as it).
    pub ci95: Option<[f64; 2]>,
    /// Why there is no interval, when there is none.
    pub no_interval: Option<String>,
}

impl Conclusion {
    /// One plain-English line in the original README's words: "On GTX 1080 Ti, torch7
    /// cuDNN 5.1.10 is 2.74x to 3.84x faster than torch7 nn across 6 models (geometric
    /// mean 3.19x; no interval: …)".
    pub fn sentence(&self) -> String {
        let more = match (self.ci95, &self.no_interval) {
            (Some(ci), _) => format!(", 95% CI {} to {}", times(ci[0]), times(ci[1])),
            (None, Some(why)) => format!("; no interval: {why}"),
            (None, None) => String::new(),
        };
        let line = self.speedup.sentence_with(&more);
        match &self.context {
            Some(c) => format!("{c}, {line}"),
            None => line,
        }
    }
}

/// The statements, fastest first, and what could not be concluded.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Conclusions {
    pub statements: Vec<Conclusion>,
    /// One line per pair, or per model of a pair, left out, saying why.
    pub not_concluded: Vec<String>,
}

/// The parts of the software that must agree when the device kind changes: the framework
/// and what the user chose of it, not the libraries and settings that come with the
/// device.
fn framework(e: &EngineDesc) -> (&str, &str, &[String], usize, Option<&str>) {
    (
        &e.framework,
        &e.framework_version,
        &e.variant,
        e.world_size,
        e.allocator.as_deref(),
    )
}

/// The software without its precision (which is a dimension of its own).
fn software(e: &EngineDesc) -> EngineDesc {
    EngineDesc {
        precision: Precision::F32,
        ..e.clone()
    }
}

/// The one way `a` and `b` differ, or the ways (none, or several) when not one.
fn dimension(
    a: &Config,
    b: &Config,
    kinds: (DeviceKind, DeviceKind),
) -> Result<Dimension, Vec<&'static str>> {
    let (ea, eb) = (&a.key.engine, &b.key.engine);
    let cross = kinds.0 != kinds.1;
    let device = cross || a.device != b.device;
    let software = if cross {
        framework(ea) != framework(eb)
    } else {
        software(ea) != software(eb)
    };
    let precision = ea.precision != eb.precision;
    match (device, software, precision) {
        (true, false, false) => Ok(match kinds {
            (DeviceKind::Gpu, DeviceKind::Gpu) => Dimension::GpuAgainstGpu,
            (DeviceKind::Cpu, DeviceKind::Cpu) => Dimension::CpuAgainstCpu,
            (DeviceKind::Gpu, DeviceKind::Cpu) | (DeviceKind::Cpu, DeviceKind::Gpu) => {
                Dimension::GpuAgainstCpu
            }
        }),
        (false, true, false) => Ok(Dimension::Software),
        (false, false, true) => Ok(Dimension::Precision),
        _ => Err([
            (device, "the device"),
            (software, "the software"),
            (precision, "the precision"),
        ]
        .into_iter()
        .filter(|(d, _)| *d)
        .map(|(_, w)| w)
        .collect()),
    }
}

/// What leads a statement and what names its sides, for a pair that differs in `d`.
fn wording(d: Dimension, a: &Config, b: &Config) -> (Option<String>, String, String) {
    match d {
        Dimension::GpuAgainstGpu | Dimension::CpuAgainstCpu => (
            Some(format!("With {}", a.engine)),
            a.device.clone(),
            b.device.clone(),
        ),
        Dimension::GpuAgainstCpu => (None, a.name.clone(), b.name.clone()),
        Dimension::Software => (
            Some(format!("On {}", a.device)),
            a.engine.clone(),
            b.engine.clone(),
        ),
        Dimension::Precision => (
            Some(format!(
                "On {} with {}",
                a.device,
                software(&a.key.engine).label()
            )),
            a.key.engine.precision.as_str().to_string(),
            b.key.engine.precision.as_str().to_string(),
        ),
    }
}

/// "and"-joined words: `the device and the software`.
fn joined(words: &[&str]) -> String {
    match words {
        [] => "nothing the report shows".into(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The statements of a report's rows: every pair of configurations that differ in one
/// way and share at least [`MIN_MODELS`] trusted models, by the report's statistic.
pub fn conclude(entries: &[Entry], tables: &[Table], stat: Stat) -> Conclusions {
    let configs = speedup::configs(entries, tables, stat);
    let kind = |c: &Config| {
        c.rows
            .values()
            .next()
            .map_or(DeviceKind::Cpu, |&i| entries[i].device_kind)
    };
    let opts = CompareOptions::default();
    let mut out = Conclusions::default();
    for i in 0..configs.len() {
        for j in i + 1..configs.len() {
            let (a, b) = (&configs[i], &configs[j]);
            let common = speedup::common_tables(a, b);
            if common.is_empty() {
                continue;
            }
            let pair = format!("{} against {}", a.name, b.name);
            let d = match dimension(a, b, (kind(a), kind(b))) {
                Ok(d) => d,
                Err(ways) => {
                    if common.len() >= MIN_MODELS {
                        out.not_concluded.push(format!(
                            "{pair}: they differ in {}; a conclusion needs one difference (--speedups compares them anyway)",
                            joined(&ways)
                        ));
                    }
                    continue;
                }
            };
            let mut ratios = Vec::new();
            let mut draws = Vec::new();
            let mut one_run = 0;
            for (t, ratio) in common {
                let model = speedup::model_name(&tables[t], tables);
                let (Some(&ra), Some(&rb)) = (a.rows.get(&t), b.rows.get(&t)) else {
                    continue;
                };
                let (ea, eb) = (&entries[ra], &entries[rb]);
                let left_out = |why: String| format!("{pair}, {model}: {why}");
                let Some(judged) = compare::judge(ea, eb, &opts) else {
                    out.not_concluded.push(left_out(format!(
                        "no `{}` samples on a side",
                        opts.quantity
                    )));
                    continue;
                };
                let p = &judged.pair;
                match p.verdict {
                    Verdict::Implausible => {
                        out.not_concluded
                            .push(left_out("a time no pass could take".into()));
                        continue;
                    }
                    Verdict::TooFewSamples => {
                        out.not_concluded.push(left_out(format!(
                            "{} and {} samples, fewer than the {} a side compare needs",
                            p.base_samples,
                            p.new_samples,
                            compare::MIN_SAMPLES
                        )));
                        continue;
                    }
                    Verdict::Disturbed => {
                        let why: Vec<String> = [(a, ea), (b, eb)]
                            .iter()
                            .filter(|(_, e)| e.is_disturbed())
                            .map(|(c, e)| format!("{} ({})", c.name, e.disturbed.join("; ")))
                            .collect();
                        out.not_concluded.push(left_out(format!(
                            "measured on a disturbed machine: {}",
                            why.join("; ")
                        )));
                        continue;
                    }
                    Verdict::OneRun | Verdict::Faster | Verdict::Slower | Verdict::NoChange => {}
                }
                // Only several runs a side give bootstrap draws; without them the pair
                // has one run on a side (judged, if at all, against recorded noise).
                match judged.log_draws {
                    Some(d) => draws.push(d),
                    None => one_run += 1,
                }
                ratios.push((model, ratio));
            }
            let n = ratios.len();
            if n < MIN_MODELS {
                out.not_concluded.push(format!(
                    "{pair}: {n} trusted model{} in common, fewer than the {MIN_MODELS} a conclusion needs",
                    if n == 1 { "" } else { "s" }
                ));
                continue;
            }
            let (context, name_a, name_b) = wording(d, a, b);
            let Some(s) = Speedup::new(name_a, name_b, ratios) else {
                continue;
            };
            let mut ci95 = None;
            let no_interval = if one_run > 0 {
                Some(if one_run == n {
                    "one run a side for every model".to_string()
                } else {
                    format!("one run a side for {one_run} of the {n} models")
                })
            } else if stat != Stat::Median {
                Some(format!(
                    "the bootstrap resamples medians, and this report shows the {} (--stat median)",
                    stat.as_str()
                ))
            } else {
                ci95 = geomean_interval95(&draws);
                ci95.is_none().then(|| "no bootstrap draws".to_string())
            };
            let faster_first = s.geomean >= 1.0;
            out.statements.push(Conclusion {
                dimension: d,
                context,
                a_config: if faster_first { &a.name } else { &b.name }.clone(),
                b_config: if faster_first { &b.name } else { &a.name }.clone(),
                ci95: ci95.map(|c| {
                    if faster_first {
                        c
                    } else {
                        [1.0 / c[1], 1.0 / c[0]]
                    }
                }),
                speedup: if faster_first { s } else { s.flipped() },
                no_interval,
            });
        }
    }
    out.statements.sort_by(|x, y| {
        y.speedup
            .geomean
            .total_cmp(&x.speedup.geomean)
            .then_with(|| natural_cmp(&x.a_config, &y.a_config))
    });
    out.not_concluded.sort_by(|a, b| natural_cmp(a, b));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::{group, Duplicates};
    use crate::record::{Origin, Record};
    use crate::table::{make_tables, Layout};
    use cnnbench_results::{Mode, Quantity};
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// A run of `model` on `device` with `engine`, its total times `ms` in milliseconds.
    fn record(model: &str, device: &str, engine: EngineDesc, ms: &[f64], file: &str) -> Record {
        let mut samples = BTreeMap::new();
        samples.insert(Quantity::Total, ms.iter().map(|t| t / 1000.0).collect());
        let cpu = device == "cpu";
        Record {
            path: PathBuf::from(file),
            origin: Origin::Cnnbench,
            model_label: model.into(),
            model_id: model.into(),
            input: [3, 224, 224],
            batch_size: 16,
            mode: Mode::Train,
            device_name: if cpu { "Xeon".into() } else { device.into() },
            device: if cpu { "cpu".into() } else { "cuda:0".into() },
            label: None,
            engine,
            machine: None,
            tool_version: None,
            started_at: None,
            samples,
            params: None,
            macs: None,
            depth: None,
            peak_rss_bytes: None,
            forward_roof_s: None,
            device_peak_bytes: None,
            warnings: Vec::new(),
            disturbed: None,
            cold_start: None,
            hosts: None,
            run_noise_pct: None,
            scenario: None,
        }
    }

    fn engine(name: &str, backend: &str, precision: Precision) -> EngineDesc {
        EngineDesc {
            name: name.into(),
            framework: "libtorch".into(),
            framework_version: "2.5".into(),
            backend: backend.into(),
            libraries: BTreeMap::new(),
            settings: BTreeMap::new(),
            variant: Vec::new(),
            threads_requested: None,
            precision,
            world_size: 1,
            allocator: None,
        }
    }

    fn conclusions_of(records: Vec<Record>, stat: Stat) -> Conclusions {
        let entries = group(
            records,
            &Default::default(),
            &crate::NoCatalog,
            Duplicates::Pool,
            stat,
            &mut Vec::new(),
        );
        let tables = make_tables(&entries, Layout::Default, stat);
        conclude(&entries, &tables, stat)
    }

    /// Two GPUs, cuDNN on and off, a CPU and a second precision: each pair that differs in
    /// one way gives one statement, of the right kind, with the ratios of the times.
    #[test]
    fn each_kind_of_pair_gives_its_statement() {
        let cudnn = || engine("torch-cuda", "cuda", Precision::F32);
        let nn = || engine("torch-cuda-nocudnn", "cuda-nocudnn", Precision::F32);
        let cpu = || engine("torch-cpu", "cpu", Precision::F32);
        let bf16 = || engine("torch-cpu", "cpu", Precision::Bf16);
        let mut rs = Vec::new();
        for (m, base) in [("m1", 10.0), ("m2", 20.0), ("m3", 40.0)] {
            rs.push(record(m, "GPU A", cudnn(), &[base; 3], "a"));
            rs.push(record(m, "GPU B", cudnn(), &[base * 1.5; 3], "b"));
            rs.push(record(m, "GPU A", nn(), &[base * 3.0; 3], "c"));
            rs.push(record(m, "cpu", cpu(), &[base * 50.0; 3], "d"));
            rs.push(record(m, "cpu", bf16(), &[base * 40.0; 3], "e"));
        }
        let c = conclusions_of(rs, Stat::Median);
        let found: Vec<(Dimension, String)> = c
            .statements
            .iter()
            .map(|s| (s.dimension, s.sentence()))
            .collect();
        let has = |d: Dimension, words: &str| {
            assert!(
                found.iter().any(|(k, s)| *k == d && s.contains(words)),
                "{d:?} {words}: {found:#?}"
            )
        };
        has(
            Dimension::GpuAgainstGpu,
            "With torch-cuda 2.5, GPU A is 1.50x faster than GPU B across 3 models (geometric mean 1.50x; no interval: one run a side for every model)",
        );
        has(
            Dimension::Software,
            "On GPU A, torch-cuda 2.5 is 3.00x faster than torch-cuda-nocudnn 2.5 across 3 models",
        );
        has(
            Dimension::GpuAgainstCpu,
            "GPU A · torch-cuda 2.5 is 50.00x faster than Xeon · torch-cpu 2.5 across 3 models",
        );
        has(
            Dimension::GpuAgainstCpu,
            "GPU A · torch-cuda-nocudnn 2.5 is 16.67x faster than Xeon · torch-cpu 2.5",
        );
        has(
            Dimension::Precision,
            "On Xeon with torch-cpu 2.5, bf16 is 1.25x faster than f32 across 3 models",
        );
        // Fastest first.
        let means: Vec<f64> = c.statements.iter().map(|s| s.speedup.geomean).collect();
        assert!(means.windows(2).all(|w| w[0] >= w[1]), "{means:?}");
        // GPU B against the CPU at bf16 differs in device and precision: not a statement.
        assert!(
            c.not_concluded
                .iter()
                .any(|l| l.contains("bf16") && l.contains("the device and the precision")),
            "{:#?}",
            c.not_concluded
        );
    }

    /// Several runs a side give the geometric mean an interval around it; a disturbed
    /// row and one with a single sample are left out and named.
    #[test]
    fn trusted_pairs_only_and_an_interval_from_several_runs() {
        let e = || engine("torch-cuda", "cuda", Precision::F32);
        let mut rs = Vec::new();
        for (m, base) in [("m1", 10.0), ("m2", 20.0), ("m3", 30.0)] {
            for run in 0..3 {
                let jitter = 1.0 + run as f64 * 0.01;
                let a: Vec<f64> = (0..5).map(|k| base * jitter + k as f64 * 0.01).collect();
                let b: Vec<f64> = a.iter().map(|t| t * 2.0).collect();
                rs.push(record(m, "GPU A", e(), &a, &format!("a{m}{run}")));
                rs.push(record(m, "GPU B", e(), &b, &format!("b{m}{run}")));
            }
        }
        // m4: one sample on GPU B. m5: GPU A disturbed.
        rs.push(record("m4", "GPU A", e(), &[10.0, 10.0], "a4"));
        rs.push(record("m4", "GPU B", e(), &[20.0], "b4"));
        let mut disturbed = record("m5", "GPU A", e(), &[10.0, 10.0], "a5");
        disturbed.disturbed = Some(vec!["steal 40%".into()]);
        rs.push(disturbed);
        rs.push(record("m5", "GPU B", e(), &[20.0, 20.0], "b5"));
        let c = conclusions_of(rs, Stat::Median);
        assert_eq!(c.statements.len(), 1, "{:#?}", c.statements);
        let s = &c.statements[0];
        assert_eq!(s.speedup.ratios.len(), 3);
        let ci = s.ci95.expect("several runs a side give an interval");
        assert!(
            ci[0] <= s.speedup.geomean && s.speedup.geomean <= ci[1],
            "{ci:?}"
        );
        assert!(
            (s.speedup.geomean - 2.0).abs() < 0.02,
            "{}",
            s.speedup.geomean
        );
        assert!(s.sentence().contains(", 95% CI "), "{}", s.sentence());
        let why = c.not_concluded.join("\n");
        assert!(
            why.contains("m4: 2 and 1 samples, fewer than the 2 a side compare needs"),
            "{why}"
        );
        assert!(
            why.contains(
                "m5: measured on a disturbed machine: GPU A · torch-cuda 2.5 (a5: steal 40%)"
            ),
            "{why}"
        );
        // The mean is not what the bootstrap resamples: no interval, and why.
        let by_mean = conclusions_of(
            (0..2)
                .flat_map(|r| {
                    [("m1", 10.0), ("m2", 20.0)]
                        .map(|(m, t)| record(m, "GPU A", e(), &[t, t], &format!("{m}{r}")))
                })
                .chain((0..2).flat_map(|r| {
                    [("m1", 10.0), ("m2", 20.0)].map(|(m, t)| {
                        record(m, "GPU B", e(), &[t * 3.0, t * 3.0], &format!("b{m}{r}"))
                    })
                }))
                .collect(),
            Stat::Mean,
        );
        assert!(
            by_mean.statements[0].sentence().contains(
                "no interval: the bootstrap resamples medians, and this report shows the mean"
            ),
            "{}",
            by_mean.statements[0].sentence()
        );
    }

    /// A slower side comes second, and a pair sharing a single model says so.
    #[test]
    fn faster_first_and_too_few_models() {
        let e = || engine("torch-cuda", "cuda", Precision::F32);
        let rs = vec![
            record("m1", "GPU A", e(), &[30.0; 3], "a1"),
            record("m2", "GPU A", e(), &[60.0; 3], "a2"),
            record("m1", "GPU B", e(), &[10.0; 3], "b1"),
            record("m2", "GPU B", e(), &[15.0; 3], "b2"),
            record("m1", "GPU C", e(), &[10.0; 3], "c1"),
        ];
        let c = conclusions_of(rs, Stat::Median);
        let s = c
            .statements
            .iter()
            .find(|s| s.a_config.contains("GPU B") && s.b_config.contains("GPU A"))
            .expect("B against A");
        assert_eq!((s.speedup.min, s.speedup.max), (3.0, 4.0));
        assert!(s.sentence().starts_with(
            "With torch-cuda 2.5, GPU B is 3.00x to 4.00x faster than GPU A across 2 models"
        ));
        assert!(
            c.not_concluded.iter().any(|l| l.contains("GPU C")
                && l.contains("1 trusted model in common, fewer than the 2")),
            "{:#?}",
            c.not_concluded
        );
    }
}
