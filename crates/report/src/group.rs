//! Keys and pooling. Runs of the same model, input, mode, device and software are
//! one row: by default their samples are pooled and the row says how many runs it
//! holds; `--duplicates` chooses otherwise.

use crate::aliases::Aliases;
use crate::catalog::ModelCatalog;
use crate::record::{DeviceKind, EngineDesc, Origin, Record};
use chrono::{DateTime, Utc};
use cnnbench_results::stats::{quantile, Summary};
use cnnbench_results::Mode;
use cnnbench_results::{MachineInfo, Quantity};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// The statistic that stands for a quantity in tables and speed-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    Mean,
    Median,
    Min,
}

impl Stat {
    /// The statistic of samples. The mean sums in sample order, as the original
    /// suite's script did, so legacy tables match it to the last digit.
    pub fn of(self, samples: &[f64]) -> f64 {
        if samples.is_empty() {
            return f64::NAN;
        }
        match self {
            Stat::Mean => samples.iter().sum::<f64>() / samples.len() as f64,
            Stat::Median => {
                let mut s = samples.to_vec();
                s.sort_by(f64::total_cmp);
                quantile(&s, 0.5)
            }
            Stat::Min => samples.iter().copied().fold(f64::INFINITY, f64::min),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::Median => "median",
            Stat::Min => "min",
        }
    }
}

/// What to do with several runs of the same configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Duplicates {
    /// One row with every run's samples (the default).
    Pool,
    /// One row per run.
    Separate,
    /// The run with the lowest total (by the report's statistic).
    Fastest,
    /// The most recent run (by its start time, else the file's modification time).
    Latest,
}

/// The software and hardware a row was measured on.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConfigKey {
    pub device_name: String,
    pub label: Option<String>,
    pub engine: EngineDesc,
}

/// What is measured: one table per key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TableKey {
    pub model_id: String,
    pub input: [usize; 3],
    pub batch_size: usize,
    pub mode: Mode,
}

/// One row: a configuration's runs of one model, pooled or chosen.
#[derive(Clone, Debug)]
pub struct Entry {
    pub table: TableKey,
    pub config: ConfigKey,
    /// The model's display name (alias, else the name in the files).
    pub model_name: String,
    /// The original suite's name for the model, when a row holds legacy runs.
    pub legacy_label: Option<String>,
    /// The device's display name (after aliases), with the run label if any.
    pub device: String,
    /// CPU or GPU, as its first run recorded (`report --conclusions` pairs a GPU with a
    /// CPU differently from two GPUs).
    pub device_kind: DeviceKind,
    pub origin: Origin,
    pub runs: usize,
    pub sources: Vec<PathBuf>,
    /// Raw samples in seconds, runs concatenated in file order.
    pub samples: BTreeMap<Quantity, Vec<f64>>,
    /// The same samples run by run (one list per result file, i.e. per process): what
    /// `compare` resamples, since processes differ more than the passes of one do.
    pub run_samples: BTreeMap<Quantity, Vec<Vec<f64>>>,
    pub summaries: BTreeMap<Quantity, Summary>,
    pub machines: Vec<MachineInfo>,
    pub tool_versions: Vec<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub params: Option<u64>,
    pub macs: Option<u64>,
    pub depth: Option<usize>,
    pub peak_rss_bytes: Option<u64>,
    pub device_peak_bytes: Option<u64>,
    /// The least time this machine's ceilings allow the forward pass (its runs'), for
    /// "% of roof".
    pub forward_roof_s: Option<f64>,
    pub warnings: Vec<String>,
    /// The largest run-to-run noise its runs recorded (percent), when every run recorded
    /// one (`cnnbench noise`).
    pub run_noise_pct: Option<f64>,
    /// Why any of its runs was measured on a disturbed machine (`file: reason`); empty
    /// when every run was clean or unjudged.
    pub disturbed: Vec<String>,
    /// Whether any of its runs carries a verdict at all.
    pub judged: bool,
    /// Median over its runs of the seconds to prepare the session, to compile it (over
    /// the runs that compiled) and of the first pass.
    pub cold_start: Option<crate::record::ColdStartSeconds>,
    /// The machines its ranks ran on, where its runs agree (data-parallel rows).
    pub hosts: Option<usize>,
    /// How its runs were loaded: `closed-loop passes`, a scenario's name (`server`), or
    /// both joined; `compare` says so when the two sides of a pair differ.
    pub load: String,
}

impl Entry {
    /// Whether a run of this row was measured on a disturbed machine.
    pub fn is_disturbed(&self) -> bool {
        !self.disturbed.is_empty()
    }

    /// Device and software in one name, e.g. `GTX 1080 Ti · torch7 cuDNN 5.1.10`.
    pub fn config_name(&self) -> String {
        format!("{} · {}", self.device, self.engine_label())
    }

    pub fn engine_label(&self) -> String {
        self.config.engine.label()
    }

    /// The statistic of a quantity in seconds, if the row has that quantity. The median
    /// of a row of several runs is the median of the runs' medians: the run, not the
    /// pass, is the unit (each run counts once, however many passes it timed).
    pub fn value(&self, quantity: Quantity, stat: Stat) -> Option<f64> {
        match (stat, self.run_samples.get(&quantity)) {
            (Stat::Median, Some(runs)) if runs.len() > 1 => {
                Some(cnnbench_results::stats::median_of_run_medians(runs))
            }
            _ => self.samples.get(&quantity).map(|s| stat.of(s)),
        }
    }

    /// Sample standard deviation of a quantity in seconds.
    pub fn std(&self, quantity: Quantity) -> Option<f64> {
        self.summaries.get(&quantity).map(|s| s.std)
    }

    /// Images per second from the statistic of the total time of a pass; a
    /// data-parallel pass trains every rank's batch.
    pub fn images_per_s(&self, stat: Stat) -> Option<f64> {
        let t = self.value(Quantity::Total, stat)?;
        (t > 0.0).then(|| self.images_per_pass() as f64 / t)
    }

    /// The images one pass trains: the batch, on every rank.
    pub fn images_per_pass(&self) -> usize {
        self.table.batch_size * self.config.engine.world_size.max(1)
    }

    /// Achieved GFLOP/s (forward 2·MACs per example, backward twice that).
    pub fn gflops_per_s(&self, stat: Stat) -> Option<f64> {
        let macs = self.macs?;
        let t = self.value(Quantity::Total, stat)?;
        let flops = cnnbench_results::flops_per_pass(self.table.mode, macs, self.images_per_pass());
        (t > 0.0).then(|| flops / t / 1e9)
    }

    /// The cuDNN column of the original layout: the version, or `None`.
    pub fn cudnn_column(&self) -> String {
        self.config
            .engine
            .cudnn_version()
            .unwrap_or("None")
            .to_string()
    }
}

/// Groups records into rows. `notes` receives one line per row that holds several
/// runs, saying what was done with them.
pub fn group(
    records: Vec<Record>,
    aliases: &Aliases,
    catalog: &dyn ModelCatalog,
    duplicates: Duplicates,
    stat: Stat,
    notes: &mut Vec<String>,
) -> Vec<Entry> {
    let mut order: Vec<(TableKey, ConfigKey)> = Vec::new();
    let mut groups: HashMap<(TableKey, ConfigKey), Vec<Record>> = HashMap::new();
    for mut r in records {
        if let Some(c) = catalog.canonical_name(&r.model_id) {
            r.model_id = c;
        }
        let key = (
            TableKey {
                model_id: r.model_id.clone(),
                input: r.input,
                batch_size: r.batch_size,
                mode: r.mode,
            },
            ConfigKey {
                device_name: r.device_name.clone(),
                label: r.label.clone(),
                engine: r.engine.clone(),
            },
        );
        let g = groups.entry(key.clone()).or_default();
        if g.is_empty() {
            order.push(key);
        }
        g.push(r);
    }
    let mut out = Vec::new();
    for key in order {
        let Some(runs) = groups.remove(&key) else {
            continue;
        };
        let n = runs.len();
        let chosen: Vec<Vec<Record>> = if n == 1 {
            vec![runs]
        } else {
            match duplicates {
                Duplicates::Pool => vec![runs],
                Duplicates::Separate => runs.into_iter().map(|r| vec![r]).collect(),
                Duplicates::Fastest => {
                    let best = runs
                        .into_iter()
                        .min_by(|a, b| {
                            let total = |r: &Record| {
                                r.samples
                                    .get(&Quantity::Total)
                                    .map_or(f64::INFINITY, |s| stat.of(s))
                            };
                            let (ta, tb) = (total(a), total(b));
                            ta.total_cmp(&tb)
                        })
                        .into_iter()
                        .collect();
                    vec![best]
                }
                Duplicates::Latest => {
                    let latest = runs.into_iter().max_by_key(|r| {
                        r.started_at.or_else(|| {
                            std::fs::metadata(&r.path)
                                .and_then(|m| m.modified())
                                .ok()
                                .map(DateTime::<Utc>::from)
                        })
                    });
                    vec![latest.into_iter().collect()]
                }
            }
        };
        let mut made: Vec<Entry> = chosen
            .into_iter()
            .filter_map(|rs| make_entry(&key, rs, aliases, catalog))
            .collect();
        if n > 1 {
            if let Some(e) = made.first() {
                let model = e.legacy_label.as_ref().unwrap_or(&e.model_name);
                let what = format!("{model} ({}) on {}", input_desc(&key.0), e.config_name());
                let files: Vec<String> = made
                    .iter()
                    .flat_map(|e| e.sources.iter())
                    .map(|p| p.display().to_string())
                    .collect();
                notes.push(match duplicates {
                    Duplicates::Pool => format!(
                        "{what}: {n} runs pooled ({} samples), its median the median of the runs' medians; --duplicates separate shows them apart",
                        e.samples.get(&Quantity::Total).map_or(0, Vec::len)
                    ),
                    Duplicates::Separate => format!("{what}: {n} runs shown as separate rows"),
                    Duplicates::Fastest => format!("{what}: fastest of {n} runs kept ({})", files.join(", ")),
                    Duplicates::Latest => format!("{what}: latest of {n} runs kept ({})", files.join(", ")),
                });
            }
        }
        out.append(&mut made);
    }
    out
}

/// `16 x 3 x 224 x 224`, as the original wrote inputs.
pub fn input_desc(k: &TableKey) -> String {
    format!(
        "{} x {} x {} x {}",
        k.batch_size, k.input[0], k.input[1], k.input[2]
    )
}

fn make_entry(
    key: &(TableKey, ConfigKey),
    runs: Vec<Record>,
    aliases: &Aliases,
    catalog: &dyn ModelCatalog,
) -> Option<Entry> {
    let first = runs.first()?;
    let (table, config) = key.clone();
    let legacy_label = runs
        .iter()
        .find(|r| r.origin == Origin::Legacy)
        .map(|r| r.model_label.clone());
    let model_name = aliases
        .model(&first.model_label, &table.model_id)
        .map(str::to_string)
        .unwrap_or_else(|| table.model_id.clone());
    let mut device = aliases.device(&config.device_name).to_string();
    if let Some(l) = &config.label {
        device = format!("{device} ({l})");
    }
    let mut samples: BTreeMap<Quantity, Vec<f64>> = BTreeMap::new();
    let mut machines: Vec<MachineInfo> = Vec::new();
    let mut tool_versions: Vec<String> = Vec::new();
    let mut warnings = Vec::new();
    for r in &runs {
        for (q, s) in &r.samples {
            samples.entry(*q).or_default().extend_from_slice(s);
        }
        if let Some(m) = &r.machine {
            if !machines.contains(m) {
                machines.push(m.clone());
            }
        }
        if let Some(v) = &r.tool_version {
            if !tool_versions.contains(v) {
                tool_versions.push(v.clone());
            }
        }
        for w in &r.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    // A quantity missing from some runs cannot be pooled fairly: keep only those all have.
    samples.retain(|q, _| runs.iter().all(|r| r.samples.contains_key(q)));
    let run_samples: BTreeMap<Quantity, Vec<Vec<f64>>> = samples
        .keys()
        .map(|q| {
            let per_run = runs
                .iter()
                .filter_map(|r| r.samples.get(q).cloned())
                .collect();
            (*q, per_run)
        })
        .collect();
    let summaries = samples
        .iter()
        .filter_map(|(q, s)| Summary::of(s).map(|x| (*q, x)))
        .collect();
    let mut disturbed = Vec::new();
    for r in &runs {
        for why in r.disturbed.iter().flatten() {
            disturbed.push(format!("{}: {why}", r.path.display()));
        }
    }
    let cold: Vec<crate::record::ColdStartSeconds> =
        runs.iter().filter_map(|r| r.cold_start).collect();
    let cold_start = (!cold.is_empty()).then(|| {
        let median = |values: Vec<f64>| {
            let mut v = values;
            (!v.is_empty()).then(|| cnnbench_results::stats::median_in_place(&mut v))
        };
        crate::record::ColdStartSeconds {
            prepare: median(cold.iter().map(|c| c.prepare).collect()).unwrap_or(0.0),
            compile: median(cold.iter().filter_map(|c| c.compile).collect()),
            first_pass: median(cold.iter().map(|c| c.first_pass).collect()).unwrap_or(0.0),
        }
    });
    let facts = catalog.facts(&table.model_id, table.input);
    let pick = |f: &dyn Fn(&Record) -> Option<u64>| runs.iter().find_map(f);
    Some(Entry {
        model_name,
        legacy_label,
        device,
        device_kind: first.device_kind(),
        origin: if runs.iter().any(|r| r.origin == Origin::Legacy) {
            Origin::Legacy
        } else {
            Origin::Cnnbench
        },
        runs: runs.len(),
        sources: runs.iter().map(|r| r.path.clone()).collect(),
        samples,
        run_samples,
        summaries,
        machines,
        tool_versions,
        started_at: runs.iter().filter_map(|r| r.started_at).max(),
        params: pick(&|r| r.params).or(facts.as_ref().map(|f| f.params)),
        macs: pick(&|r| r.macs).or(facts.as_ref().map(|f| f.macs)),
        depth: runs
            .iter()
            .find_map(|r| r.depth)
            .or(facts.as_ref().map(|f| f.depth)),
        peak_rss_bytes: runs.iter().filter_map(|r| r.peak_rss_bytes).max(),
        forward_roof_s: runs.iter().find_map(|r| r.forward_roof_s),
        device_peak_bytes: runs.iter().filter_map(|r| r.device_peak_bytes).max(),
        warnings,
        judged: runs.iter().any(|r| r.disturbed.is_some()),
        run_noise_pct: runs
            .iter()
            .map(|r| r.run_noise_pct)
            .collect::<Option<Vec<f64>>>()
            .and_then(|all| all.into_iter().reduce(f64::max)),
        disturbed,
        cold_start,
        hosts: runs
            .first()
            .and_then(|r| r.hosts)
            .filter(|h| runs.iter().all(|r| r.hosts == Some(*h))),
        load: {
            let mut loads: Vec<String> = runs
                .iter()
                .map(|r| match &r.scenario {
                    Some(s) => format!("{} scenario runs", s.kind),
                    None => "closed-loop passes".to_string(),
                })
                .collect();
            loads.sort();
            loads.dedup();
            loads.join(" and ")
        },
        table,
        config,
    })
}
