//! The keys of a cell's run spec that a matrix gives as one value or as a list: the run
//! settings and the serving scenario's. The matrix splits them generically (any of them
//! may be a list, an axis of the cells) and deserialises each cell's values into
//! [`CellKeys`], so a new key is a field of it, a line of [`KEYS`] and a line of
//! [`CellKeys::apply`].

use cnnbench_results::scenario::{BatcherSpec, ScenarioKind, ScenarioSetting, ScenarioSpec};
use cnnbench_results::RunSpec;
use serde::{Deserialize, Serialize};

/// Which cells a key reaches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Reach {
    /// Every cell: a run setting.
    Every,
    /// The key that names the scenario itself.
    Scenario,
    /// The cells of every scenario (a scenario's length).
    EveryScenario,
    /// The cells of the scenarios that take this setting (their rules say), so that one
    /// matrix can sweep `scenario = ["single-stream", "server"]` with a `qps` for its
    /// server cells.
    Setting(ScenarioSetting),
}

/// A key of [`CellKeys`]: its name in the file, `run`'s flag for it (a refusal of the
/// spec names the flag; the matrix adds the key), and the cells it reaches.
#[derive(Debug)]
pub(super) struct Key {
    pub name: &'static str,
    pub flag: &'static str,
    pub reach: Reach,
}

const fn key(name: &'static str, flag: &'static str, reach: Reach) -> Key {
    Key { name, flag, reach }
}

/// Every key of [`CellKeys`], in cell order: the lists among them vary in this order
/// (the last fastest), after models, engines, sizes, modes and precisions. The run
/// settings come first and the scenario before its keys, so that each scenario of a
/// list carries only the lists of the keys it takes.
pub(super) const KEYS: &[Key] = &[
    key("passes", "--passes", Reach::Every),
    key("warmup", "--warmup", Reach::Every),
    key("seed", "--seed", Reach::Every),
    key("threads", "--threads", Reach::Every),
    key("min_time", "--min-time", Reach::Every),
    key("max_time", "--max-time", Reach::Every),
    key("target_ci", "--target-ci", Reach::Every),
    key("warmup_time", "--warmup-time", Reach::Every),
    key("memory_limit", "--memory-limit", Reach::Every),
    key("repeat", "--repeat", Reach::Every),
    key("calibration", "--calibration", Reach::Every),
    key("cudnn_benchmark", "--cudnn-benchmark", Reach::Every),
    key("tf32", "--tf32", Reach::Every),
    key("channels_last", "--channels-last", Reach::Every),
    key("scenario", "--scenario", Reach::Scenario),
    key(
        "samples_per_query",
        "--samples-per-query",
        Reach::Setting(ScenarioSetting::SamplesPerQuery),
    ),
    key("qps", "--qps", Reach::Setting(ScenarioSetting::TargetQps)),
    key(
        "latency_bound",
        "--latency-bound",
        Reach::Setting(ScenarioSetting::LatencyBound),
    ),
    key("scenario_time", "--scenario-time", Reach::EveryScenario),
    key("min_queries", "--min-queries", Reach::EveryScenario),
    key(
        "find_peak",
        "--find-peak",
        Reach::Setting(ScenarioSetting::FindPeak),
    ),
    key(
        "in_flight",
        "--in-flight",
        Reach::Setting(ScenarioSetting::InFlight),
    ),
    key(
        "max_batch",
        "--max-batch",
        Reach::Setting(ScenarioSetting::Batcher),
    ),
    key(
        "batch_timeout",
        "--batch-timeout",
        Reach::Setting(ScenarioSetting::Batcher),
    ),
];

/// The key named `name`, if a cell takes it.
pub(super) fn find(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|k| k.name == name)
}

impl Key {
    /// Whether a cell of this scenario (`None`: passes back to back) takes the key.
    pub fn reaches(&self, scenario: Option<ScenarioKind>) -> bool {
        match self.reach {
            Reach::Every => true,
            Reach::Scenario | Reach::EveryScenario => scenario.is_some(),
            Reach::Setting(setting) => scenario.is_some_and(|k| k.takes(setting)),
        }
    }

    /// The scenarios that take it, for a refusal (`server and offline`).
    pub fn takers(&self) -> String {
        match self.reach {
            Reach::Every | Reach::Scenario | Reach::EveryScenario => "every".to_string(),
            Reach::Setting(setting) => setting.takers("and"),
        }
    }
}

/// A cell's run settings and scenario keys, as the file writes them (each `None` where
/// the matrix gives none for the cell: `cnnbench run`'s default). The one typed view of
/// a key's value: every value of the file, one or a list's, is read through it, so a
/// value of the wrong type is refused naming its line, and values compare as what they
/// mean (`5` and `5.0` are one `qps`, `"1MiB"` and `1048576` one `memory_limit`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellKeys {
    pub passes: Option<usize>,
    pub warmup: Option<usize>,
    pub seed: Option<u64>,
    /// The engine's thread pool.
    pub threads: Option<usize>,
    pub min_time: Option<f64>,
    pub max_time: Option<f64>,
    pub target_ci: Option<f64>,
    pub warmup_time: Option<f64>,
    /// Bytes, or the text `run --memory-limit` takes (`"512MiB"`).
    pub memory_limit: Option<MemoryAmount>,
    /// Runs (fresh processes) of the cell, interleaved (`run --repeat`).
    pub repeat: Option<usize>,
    /// Calibration images of an int8 cell (`run --calibration`).
    pub calibration: Option<usize>,
    pub cudnn_benchmark: Option<bool>,
    pub tf32: Option<bool>,
    pub channels_last: Option<bool>,
    /// The serving scenario (`run --scenario`); `None`: passes back to back.
    pub scenario: Option<ScenarioKind>,
    pub samples_per_query: Option<usize>,
    /// Server: queries per second arriving.
    pub qps: Option<f64>,
    /// Server: the p99 latency a valid run stays within, milliseconds.
    pub latency_bound: Option<f64>,
    /// Seconds at least.
    pub scenario_time: Option<f64>,
    pub min_queries: Option<usize>,
    pub find_peak: Option<bool>,
    /// Server and offline: queries computed at once.
    pub in_flight: Option<usize>,
    /// Server: the dynamic batcher's largest batch (`run --max-batch`).
    pub max_batch: Option<usize>,
    /// Server: how long the batcher holds a batch open, milliseconds.
    pub batch_timeout: Option<f64>,
}

/// `memory_limit` as bytes: written as a number, or as the text `run --memory-limit`
/// takes (`512MiB`), and held as bytes so that the two spellings are one value.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct MemoryAmount(pub u64);

impl<'de> Deserialize<'de> for MemoryAmount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, Visitor};

        struct Amount;

        impl Visitor<'_> for Amount {
            type Value = MemoryAmount;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an amount of memory: bytes or a unit, e.g. 1000000 or \"512MiB\"")
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<MemoryAmount, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<MemoryAmount, E> {
                self.visit_str(&v.to_string())
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<MemoryAmount, E> {
                cnnbench_results::spec::parse_bytes(v)
                    .map(MemoryAmount)
                    .map_err(E::custom)
            }
        }
        d.deserialize_any(Amount)
    }
}

impl CellKeys {
    /// Sets what it gives in a cell's spec: the run settings, and the scenario made from
    /// its kind's defaults with the scenario keys given (the matrix leaves out the keys
    /// the cell's scenario does not take).
    pub fn apply(&self, spec: &mut RunSpec) {
        set(&mut spec.passes, self.passes);
        set(&mut spec.warmup, self.warmup);
        set(&mut spec.seed, self.seed);
        set_some(&mut spec.threads, self.threads);
        set_some(&mut spec.min_time_s, self.min_time);
        set_some(&mut spec.max_time_s, self.max_time);
        set_some(&mut spec.target_ci_pct, self.target_ci);
        set_some(&mut spec.warmup_time_s, self.warmup_time);
        set_some(&mut spec.memory_limit_bytes, self.memory_limit.map(|m| m.0));
        set(&mut spec.repeat, self.repeat);
        set_some(&mut spec.calibration_images, self.calibration);
        set(
            &mut spec.engine_options.cudnn_benchmark,
            self.cudnn_benchmark,
        );
        set(&mut spec.engine_options.tf32, self.tf32);
        set(&mut spec.engine_options.channels_last, self.channels_last);
        spec.scenario = self.scenario_spec();
    }

    /// The scenario, made from its kind's defaults with the scenario keys given.
    pub fn scenario_spec(&self) -> Option<ScenarioSpec> {
        let mut scenario = ScenarioSpec::new(self.scenario?);
        set(&mut scenario.samples_per_query, self.samples_per_query);
        set_some(&mut scenario.target_qps, self.qps);
        set_some(&mut scenario.latency_bound_ms, self.latency_bound);
        set(&mut scenario.min_duration_s, self.scenario_time);
        set(&mut scenario.min_queries, self.min_queries);
        set(&mut scenario.find_peak, self.find_peak);
        set(&mut scenario.in_flight, self.in_flight);
        // `batch_timeout` without `max_batch` is refused with the file (`Matrix::parse`).
        scenario.batcher = self.max_batch.map(|max_batch| BatcherSpec {
            max_batch,
            timeout_ms: self.batch_timeout.unwrap_or(0.0),
        });
        Some(scenario)
    }
}

/// A value the file gives replaces the default.
fn set<T: Copy>(field: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *field = v;
    }
}

fn set_some<T: Copy>(field: &mut Option<T>, value: Option<T>) {
    if value.is_some() {
        *field = value;
    }
}
