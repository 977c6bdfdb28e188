//! The matrix file, schema `cnnbench-matrix` version 1, and its cells.
//!
//! A matrix is a run spec with axes: every setting of the spec (but where a cell runs,
//! the device, and data parallelism, which are each host's) can be given, as one value
//! for every cell or as a list, an axis of the cells (the heap policy, set when the
//! process starts, is one value for the matrix). What is not given is `cnnbench run`'s default ([`RunSpec::new`]), so a matrix
//! has no defaults of its own that could drift from the command line's.
//!
//! ```toml
//! format = "cnnbench-matrix"
//! version = 1
//! models = ["resnet18", "resnet50"]
//! engines = ["burn-flex", "torch-cpu"]
//! batch_sizes = [16, 32]
//! modes = ["train"]
//! passes = 10
//! threads = [1, 4]      # a list: an axis of the cells
//! repeat = 5            # each cell in 5 fresh processes (`run --repeat`)
//! calibration = 16       # int8 cells: calibration images (`run --calibration`)
//!
//! [[exclude]]
//! model = "resnet50"
//! batch_size = 32
//!
//! [[exclude]]           # an engine's setting axis, with the engine
//! engine = "openvino-cpu"
//! precision = "int8"
//! engine_settings = { hint = "throughput" }
//!
//! # An engine's own settings: a value sets it for the engine's cells, a list is an
//! # axis of them. Only the engine's provider knows its keys (`cnnbench engines`).
//! [engine_settings.openvino-cpu]
//! hint = ["latency", "throughput"]
//! streams = 2
//! ```
//!
//! A serving scenario (`run --scenario`) is a top-level key like the run settings, and
//! so are its settings, named as `run`'s flags (`--latency-bound`: `latency_bound`),
//! so that `[[exclude]]` names them alike. Each setting reaches the cells of the
//! scenarios that take it (`qps` the server's), and one that no scenario of the matrix
//! takes is refused, as is any without `scenario`. A scenario serves inference: a
//! matrix with one and a train or step mode is refused (not cut down to its infer
//! cells). Without `batch_sizes`, a query scenario's batch is a query's samples, as
//! `run --scenario` makes it.
//!
//! ```toml
//! modes = ["infer"]
//! scenario = ["single-stream", "server"]   # a list: an axis
//! qps = [50, 100, 200]   # the server cells' load: an axis of them
//! latency_bound = 15     # the server cells' p99 bound, ms (a value or a list)
//! in_flight = 2          # server and offline (a value or a list)
//! scenario_time = 60     # every scenario: seconds at least (values only, as
//! min_queries = 1000     # are samples_per_query and find_peak)
//! ```
//!
//! Cells are numbered in the order models, engines, the engine's settings (its keys in
//! alphabetical order, each list's values in the order written), image sizes, batch
//! sizes, modes, precisions, the run settings given as lists (in the order of
//! [`RunSetting`]'s keys), then the scenarios in the order written, each with the lists
//! of the keys it takes (`qps`, `latency_bound`, `in_flight`); the last varies fastest.
//! A file without such lists numbers its cells as before they could be given. Changing
//! the meaning of a key bumps [`MATRIX_VERSION`].

use cnnbench_engine::{Mode, Precision};
use cnnbench_results::scenario::{ScenarioKind, ScenarioSpec};
use cnnbench_results::SettingsMap;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub const MATRIX_FORMAT: &str = "cnnbench-matrix";
pub const MATRIX_VERSION: u32 = 1;

/// Why a matrix file cannot be used. Each message names the key at fault.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// Unreadable, not a regular file (a FIFO, `/dev/zero`), or larger than
    /// [`MAX_MATRIX_BYTES`]; the message names the path.
    #[error("the matrix file: {0}")]
    Read(cnnbench_graph::ReadFileError),
    #[error("the matrix has {cells} cells, more than {MAX_CELLS}: split it into several files (or narrow its axes)")]
    TooManyCells { cells: u128 },
    /// Not TOML, an unknown key, or a value of the wrong type (toml names the key and line).
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("this is not a matrix file: it needs `format = \"{MATRIX_FORMAT}\"` and `version = {MATRIX_VERSION}` at the top")]
    NotAMatrix,
    #[error("`format` is \"{0}\"; a matrix file says `format = \"{MATRIX_FORMAT}\"`")]
    WrongFormat(String),
    #[error("matrix version {0} is not one this build reads (it reads version {MATRIX_VERSION})")]
    WrongVersion(u32),
    #[error("`{0}` is empty: the matrix would have no cells")]
    Empty(&'static str),
    #[error("`{key}` lists {value} twice")]
    Duplicate { key: &'static str, value: String },
    #[error("`models`: {0}")]
    UnknownModel(cnnbench_zoo::ZooError),
    #[error("`engines`: unknown engine \"{name}\"; cnnbench knows: {known}")]
    UnknownEngine { name: String, known: String },
    #[error("`engine_settings.{engine}`: {message}")]
    EngineSetting { engine: String, message: String },
    #[error("`{key}`: {message}")]
    BadValue { key: &'static str, message: String },
    #[error("`image_sizes`: {model} cannot take a {height}×{width} image ({reason}); drop the pair with an [[exclude]] entry")]
    ModelSize {
        model: String,
        height: usize,
        width: usize,
        reason: String,
    },
    #[error("exclude entry {index}: {message}")]
    Exclude { index: usize, message: String },
    #[error("every cell is excluded: the `exclude` entries leave nothing to run")]
    AllExcluded,
    /// A cell's run spec is one `cnnbench run` would refuse (`RunSpec::validate`).
    #[error("cell {index} ({cell}): {message}")]
    Spec {
        index: usize,
        cell: String,
        message: String,
    },
    #[error("there is no cell {index}: the matrix has {count} cells, 0 to {last}", last = count - 1)]
    NoSuchCell { index: usize, count: usize },
}

/// An image size of the matrix: `224` or `"299x299"` (the run spec's type).
pub use cnnbench_results::ImageSize;
use cnnbench_results::{Batches, ModelRef, RunSpec};

/// An image size as written: a number or a `HxW` string.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum ImageSizeSpec {
    Square(usize),
    Text(String),
}

impl ImageSizeSpec {
    fn resolve(&self, key: &'static str) -> Result<ImageSize, MatrixError> {
        let bad = |shown: String| {
            MatrixError::BadValue {
            key,
            message: format!("{shown} is not an image size: use N or \"HxW\" with positive integers, e.g. 224 or \"299x299\""),
        }
        };
        let positive = |v: &str| v.trim().parse::<usize>().ok().filter(|&n| n > 0);
        match self {
            ImageSizeSpec::Square(0) => Err(bad("0".into())),
            ImageSizeSpec::Square(n) => Ok(ImageSize {
                height: *n,
                width: *n,
            }),
            ImageSizeSpec::Text(s) => {
                let (h, w) = match s.split_once(['x', 'X', '×']) {
                    Some((h, w)) => (positive(h), positive(w)),
                    None => (positive(s), positive(s)),
                };
                match (h, w) {
                    (Some(height), Some(width)) => Ok(ImageSize { height, width }),
                    _ => Err(bad(format!("\"{s}\""))),
                }
            }
        }
    }
}

/// The file as written. Every key is listed here: anything else is an error naming it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    format: Option<String>,
    version: Option<u32>,
    models: Vec<String>,
    engines: Vec<String>,
    /// `None`: `cnnbench run`'s batch, or under a query scenario a query's samples.
    batch_sizes: Option<Vec<usize>>,
    image_sizes: Option<Vec<ImageSizeSpec>>,
    #[serde(default = "default_modes")]
    modes: Vec<Mode>,
    #[serde(default = "default_precisions")]
    precisions: Vec<Precision>,
    // The run settings: each one value, or a list that is an axis of the cells. Left
    // out, `cnnbench run`'s default.
    passes: Option<OneOrAxis<usize>>,
    warmup: Option<OneOrAxis<usize>>,
    seed: Option<OneOrAxis<u64>>,
    threads: Option<OneOrAxis<usize>>,
    min_time: Option<OneOrAxis<f64>>,
    max_time: Option<OneOrAxis<f64>>,
    target_ci: Option<OneOrAxis<f64>>,
    warmup_time: Option<OneOrAxis<f64>>,
    memory_limit: Option<OneOrAxis<MemoryAmount>>,
    repeat: Option<OneOrAxis<usize>>,
    /// int8 cells' calibration images; the other cells have none to take.
    calibration: Option<OneOrAxis<usize>>,
    cudnn_benchmark: Option<OneOrAxis<bool>>,
    tf32: Option<OneOrAxis<bool>>,
    channels_last: Option<OneOrAxis<bool>>,
    /// The serving scenario (`run --scenario`), or a list of them: an axis.
    scenario: Option<OneOrAxis<ScenarioKind>>,
    // The scenario's settings, each applied to the scenarios that take it
    // (`scenario_keys`); `qps`, `latency_bound` and `in_flight` may be axes.
    samples_per_query: Option<usize>,
    qps: Option<OneOrAxis<f64>>,
    latency_bound: Option<OneOrAxis<f64>>,
    scenario_time: Option<f64>,
    min_queries: Option<usize>,
    find_peak: Option<bool>,
    in_flight: Option<OneOrAxis<usize>>,
    /// The heap policy, one for the whole matrix: it is set when cnnbench starts.
    allocator: Option<String>,
    #[serde(default)]
    exclude: Vec<ExcludeEntry>,
    /// Per engine, its own settings: a value, or a list that is an axis of its cells.
    #[serde(default)]
    engine_settings: BTreeMap<String, BTreeMap<String, SettingValues>>,
}

/// An engine setting in a matrix: one value for every cell of the engine, or a list of
/// values, an axis.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum SettingValues {
    One(SettingScalar),
    Axis(Vec<SettingScalar>),
}

/// A value as TOML writes it, taken as the text the engine parses (`4`, `true`,
/// `"throughput"`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum SettingScalar {
    Text(String),
    Whole(i64),
    Switch(bool),
    Number(f64),
}

impl SettingScalar {
    fn text(&self) -> String {
        match self {
            SettingScalar::Text(t) => t.clone(),
            SettingScalar::Whole(n) => n.to_string(),
            SettingScalar::Switch(b) => b.to_string(),
            SettingScalar::Number(x) => x.to_string(),
        }
    }
}

/// Every combination of an engine's settings in a matrix, in cell order: its keys
/// alphabetically, each axis's values as written (the last key varies fastest).
fn setting_combinations(
    engine: &str,
    given: &BTreeMap<String, SettingValues>,
) -> Result<Vec<SettingsMap>, MatrixError> {
    let mut combinations = vec![SettingsMap::new()];
    for (key, values) in given {
        let values: Vec<String> = match values {
            SettingValues::One(v) => vec![v.text()],
            SettingValues::Axis(list) => list.iter().map(SettingScalar::text).collect(),
        };
        let bad = |message: String| MatrixError::EngineSetting {
            engine: engine.to_string(),
            message,
        };
        if values.is_empty() {
            return Err(bad(format!(
                "`{key}` is an empty list: the matrix would have no cells of {engine}"
            )));
        }
        if let Some(i) = (1..values.len()).find(|&i| values[..i].contains(&values[i])) {
            return Err(bad(format!("`{key}` lists {} twice", values[i])));
        }
        combinations = combinations
            .into_iter()
            .flat_map(|base| {
                values.iter().map(move |v| {
                    let mut next = base.clone();
                    next.insert(key.clone(), v.clone());
                    next
                })
            })
            .collect();
    }
    Ok(combinations)
}

/// `cnnbench run`'s batch size, the one cell size when the matrix gives none.
fn default_batch_sizes() -> Vec<usize> {
    vec![cnnbench_results::spec::DEFAULT_BATCH]
}
fn default_modes() -> Vec<Mode> {
    vec![Mode::Train]
}
fn default_precisions() -> Vec<Precision> {
    vec![Precision::F32]
}

/// One `[[exclude]]` entry: the cells matching every key given are dropped.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExcludeEntry {
    model: Option<String>,
    engine: Option<String>,
    /// Values of the engine's own settings its `[engine_settings]` gives as lists.
    engine_settings: Option<BTreeMap<String, SettingScalar>>,
    batch_size: Option<usize>,
    image_size: Option<ImageSizeSpec>,
    mode: Option<Mode>,
    precision: Option<Precision>,
    // A value of a run setting the matrix gives as a list.
    passes: Option<usize>,
    warmup: Option<usize>,
    seed: Option<u64>,
    threads: Option<usize>,
    min_time: Option<f64>,
    max_time: Option<f64>,
    target_ci: Option<f64>,
    warmup_time: Option<f64>,
    memory_limit: Option<MemoryAmount>,
    repeat: Option<usize>,
    calibration: Option<usize>,
    cudnn_benchmark: Option<bool>,
    tf32: Option<bool>,
    channels_last: Option<bool>,
    // A value of a scenario key the matrix gives as a list.
    scenario: Option<ScenarioKind>,
    qps: Option<f64>,
    latency_bound: Option<f64>,
    in_flight: Option<usize>,
}

impl ExcludeEntry {
    /// The scenario-key values the entry names (each must be a value of its axis).
    fn scenario_settings(&self) -> Vec<ScenarioSetting> {
        [
            self.scenario.map(ScenarioSetting::Scenario),
            self.qps.map(ScenarioSetting::Qps),
            self.latency_bound.map(ScenarioSetting::LatencyBound),
            self.in_flight.map(ScenarioSetting::InFlight),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The run-setting values the entry names (each must be a value of its axis).
    fn run_settings(&self) -> Result<Vec<RunSetting>, MatrixError> {
        let memory_limit = match &self.memory_limit {
            Some(amount) => Some(RunSetting::MemoryLimit(amount.bytes()?)),
            None => None,
        };
        Ok([
            self.passes.map(RunSetting::Passes),
            self.warmup.map(RunSetting::Warmup),
            self.seed.map(RunSetting::Seed),
            self.threads.map(RunSetting::Threads),
            self.min_time.map(RunSetting::MinTime),
            self.max_time.map(RunSetting::MaxTime),
            self.target_ci.map(RunSetting::TargetCi),
            self.warmup_time.map(RunSetting::WarmupTime),
            memory_limit,
            self.repeat.map(RunSetting::Repeat),
            self.calibration.map(RunSetting::Calibration),
            self.cudnn_benchmark.map(RunSetting::CudnnBenchmark),
            self.tf32.map(RunSetting::Tf32),
            self.channels_last.map(RunSetting::ChannelsLast),
        ]
        .into_iter()
        .flatten()
        .collect())
    }
}

/// A run setting as a matrix writes it: one value for every cell, or a list of values,
/// an axis of the cells.
#[derive(Clone, Debug)]
enum OneOrAxis<T> {
    One(T),
    Axis(Vec<T>),
}

/// Read by hand rather than as an untagged enum, whose error ("did not match any
/// variant") would not say what the value should be; and not through `toml::Value`,
/// whose integers stop at `i64::MAX` (a seed may be any `u64`).
impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrAxis<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, IntoDeserializer, SeqAccess, Visitor};
        use std::marker::PhantomData;

        struct OneOrList<T>(PhantomData<T>);

        fn one<'de, T: Deserialize<'de>, E: Error>(
            value: impl IntoDeserializer<'de, E>,
        ) -> Result<OneOrAxis<T>, E> {
            T::deserialize(value.into_deserializer())
                .map(OneOrAxis::One)
                .map_err(|e| {
                    E::custom(format!(
                        "{} (one value, or a list of them: an axis)",
                        e.to_string().trim_end()
                    ))
                })
        }

        impl<'de, T: Deserialize<'de>> Visitor<'de> for OneOrList<T> {
            type Value = OneOrAxis<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("one value, or a list of them (an axis)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element::<T>()? {
                    items.push(item);
                }
                Ok(OneOrAxis::Axis(items))
            }
            fn visit_bool<E: Error>(self, v: bool) -> Result<Self::Value, E> {
                one(v)
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
                one(v)
            }
            fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
                one(v)
            }
            fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
                one(v)
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
                one(v)
            }
        }
        d.deserialize_any(OneOrList(PhantomData))
    }
}

/// `memory_limit` as written: bytes, or the text `run --memory-limit` takes (`512MiB`).
#[derive(Clone, Debug)]
enum MemoryAmount {
    Bytes(u64),
    Text(String),
}

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
                Ok(MemoryAmount::Bytes(v))
            }
            fn visit_i64<E: Error>(self, v: i64) -> Result<MemoryAmount, E> {
                u64::try_from(v)
                    .map(MemoryAmount::Bytes)
                    .map_err(|_| E::custom(format!("{v} is not an amount of memory")))
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<MemoryAmount, E> {
                Ok(MemoryAmount::Text(v.to_string()))
            }
        }
        d.deserialize_any(Amount)
    }
}

impl MemoryAmount {
    fn bytes(&self) -> Result<u64, MatrixError> {
        let parsed = match self {
            MemoryAmount::Bytes(n) => cnnbench_results::spec::parse_bytes(&n.to_string()),
            MemoryAmount::Text(t) => cnnbench_results::spec::parse_bytes(t),
        };
        parsed.map_err(|message| MatrixError::BadValue {
            key: "memory_limit",
            message,
        })
    }
}

/// One value of a run setting that is not an axis of its own (models, engines, sizes,
/// modes and precisions are): what a matrix key sets in a cell's [`RunSpec`]. A matrix
/// gives each as one value (the base spec every cell starts from) or as a list (an axis:
/// the cell carries its value). A new spec field a matrix may set is a variant here, a
/// field of `MatrixFile` and of `ExcludeEntry`, a line of `run_settings_given` and of
/// `ExcludeEntry::run_settings`, and a line of the test
/// `every_run_setting_axis_can_be_excluded_from`.
#[derive(Clone, Debug, PartialEq)]
pub enum RunSetting {
    Passes(usize),
    Warmup(usize),
    Seed(u64),
    /// The engine's thread pool.
    Threads(usize),
    MinTime(f64),
    MaxTime(f64),
    TargetCi(f64),
    WarmupTime(f64),
    MemoryLimit(u64),
    /// Runs (fresh processes) of the cell, interleaved (`run --repeat`).
    Repeat(usize),
    /// Calibration images of an int8 cell (`run --calibration`).
    Calibration(usize),
    CudnnBenchmark(bool),
    Tf32(bool),
    ChannelsLast(bool),
}

impl RunSetting {
    /// Its key in the matrix file.
    pub fn key(&self) -> &'static str {
        match self {
            RunSetting::Passes(_) => "passes",
            RunSetting::Warmup(_) => "warmup",
            RunSetting::Seed(_) => "seed",
            RunSetting::Threads(_) => "threads",
            RunSetting::MinTime(_) => "min_time",
            RunSetting::MaxTime(_) => "max_time",
            RunSetting::TargetCi(_) => "target_ci",
            RunSetting::WarmupTime(_) => "warmup_time",
            RunSetting::MemoryLimit(_) => "memory_limit",
            RunSetting::Repeat(_) => "repeat",
            RunSetting::Calibration(_) => "calibration",
            RunSetting::CudnnBenchmark(_) => "cudnn_benchmark",
            RunSetting::Tf32(_) => "tf32",
            RunSetting::ChannelsLast(_) => "channels_last",
        }
    }

    /// Its value as the file writes it.
    pub fn value(&self) -> String {
        match self {
            RunSetting::Passes(n)
            | RunSetting::Warmup(n)
            | RunSetting::Threads(n)
            | RunSetting::Repeat(n)
            | RunSetting::Calibration(n) => n.to_string(),
            RunSetting::Seed(n) | RunSetting::MemoryLimit(n) => n.to_string(),
            RunSetting::MinTime(x)
            | RunSetting::MaxTime(x)
            | RunSetting::TargetCi(x)
            | RunSetting::WarmupTime(x) => x.to_string(),
            RunSetting::CudnnBenchmark(b) | RunSetting::Tf32(b) | RunSetting::ChannelsLast(b) => {
                b.to_string()
            }
        }
    }

    /// Sets it in a spec.
    fn apply(&self, spec: &mut RunSpec) {
        match *self {
            RunSetting::Passes(n) => spec.passes = n,
            RunSetting::Warmup(n) => spec.warmup = n,
            RunSetting::Seed(n) => spec.seed = n,
            RunSetting::Threads(n) => spec.threads = Some(n),
            RunSetting::MinTime(s) => spec.min_time_s = Some(s),
            RunSetting::MaxTime(s) => spec.max_time_s = Some(s),
            RunSetting::TargetCi(pct) => spec.target_ci_pct = Some(pct),
            RunSetting::WarmupTime(s) => spec.warmup_time_s = Some(s),
            RunSetting::MemoryLimit(bytes) => spec.memory_limit_bytes = Some(bytes),
            RunSetting::Repeat(n) => spec.repeat = n,
            RunSetting::Calibration(n) => spec.calibration_images = Some(n),
            RunSetting::CudnnBenchmark(b) => spec.engine_options.cudnn_benchmark = b,
            RunSetting::Tf32(b) => spec.engine_options.tf32 = b,
            RunSetting::ChannelsLast(b) => spec.engine_options.channels_last = b,
        }
    }
}

/// The run settings the file gives, in cell order (the order of [`RunSetting`]'s
/// variants), each as its values: one value, or an axis's list.
fn run_settings_given(
    file: &MatrixFile,
) -> Result<Vec<(&'static str, OneOrAxis<RunSetting>)>, MatrixError> {
    fn given<T: Clone>(
        out: &mut Vec<(&'static str, OneOrAxis<RunSetting>)>,
        key: &'static str,
        value: &Option<OneOrAxis<T>>,
        make: impl Fn(T) -> Result<RunSetting, MatrixError>,
    ) -> Result<(), MatrixError> {
        let values = match value {
            None => return Ok(()),
            Some(OneOrAxis::One(v)) => OneOrAxis::One(make(v.clone())?),
            Some(OneOrAxis::Axis(list)) => OneOrAxis::Axis(
                list.iter()
                    .map(|v| make(v.clone()))
                    .collect::<Result<_, _>>()?,
            ),
        };
        out.push((key, values));
        Ok(())
    }
    let mut out = Vec::new();
    given(&mut out, "passes", &file.passes, |n| {
        Ok(RunSetting::Passes(n))
    })?;
    given(&mut out, "warmup", &file.warmup, |n| {
        Ok(RunSetting::Warmup(n))
    })?;
    given(&mut out, "seed", &file.seed, |n| Ok(RunSetting::Seed(n)))?;
    given(&mut out, "threads", &file.threads, |n| {
        Ok(RunSetting::Threads(n))
    })?;
    given(&mut out, "min_time", &file.min_time, |s| {
        Ok(RunSetting::MinTime(s))
    })?;
    given(&mut out, "max_time", &file.max_time, |s| {
        Ok(RunSetting::MaxTime(s))
    })?;
    given(&mut out, "target_ci", &file.target_ci, |p| {
        Ok(RunSetting::TargetCi(p))
    })?;
    given(&mut out, "warmup_time", &file.warmup_time, |s| {
        Ok(RunSetting::WarmupTime(s))
    })?;
    given(&mut out, "memory_limit", &file.memory_limit, |m| {
        Ok(RunSetting::MemoryLimit(m.bytes()?))
    })?;
    given(&mut out, "repeat", &file.repeat, |n| {
        Ok(RunSetting::Repeat(n))
    })?;
    given(&mut out, "calibration", &file.calibration, |n| {
        Ok(RunSetting::Calibration(n))
    })?;
    given(&mut out, "cudnn_benchmark", &file.cudnn_benchmark, |b| {
        Ok(RunSetting::CudnnBenchmark(b))
    })?;
    given(&mut out, "tf32", &file.tf32, |b| Ok(RunSetting::Tf32(b)))?;
    given(&mut out, "channels_last", &file.channels_last, |b| {
        Ok(RunSetting::ChannelsLast(b))
    })?;
    Ok(out)
}

/// The spec every cell starts from (`cnnbench run`'s defaults with the run settings the
/// file gives as one value), the run settings it gives as lists (each key's values), and
/// each combination of those in cell order (the last varies fastest).
struct RunSettingAxes {
    base: RunSpec,
    axes: Vec<(&'static str, Vec<RunSetting>)>,
    combinations: Vec<Vec<RunSetting>>,
}

fn base_and_axes(file: &MatrixFile) -> Result<RunSettingAxes, MatrixError> {
    let mut base = RunSpec::new(Vec::new(), "");
    if let Some(policy) = &file.allocator {
        base.allocator = policy.clone();
    }
    let mut axes = Vec::new();
    let mut combinations: Vec<Vec<RunSetting>> = vec![Vec::new()];
    for (key, values) in run_settings_given(file)? {
        match values {
            OneOrAxis::One(v) => v.apply(&mut base),
            OneOrAxis::Axis(list) => {
                check_axis(key, &list, RunSetting::value)?;
                combinations = combinations
                    .into_iter()
                    .flat_map(|before| {
                        list.iter().map(move |v| {
                            let mut next = before.clone();
                            next.push(v.clone());
                            next
                        })
                    })
                    .collect();
                axes.push((key, list));
            }
        }
    }
    Ok(RunSettingAxes {
        base,
        axes,
        combinations,
    })
}

/// A scenario key's value in a cell, where the matrix gives the key as a list: the axes
/// of the scenario part of the cells (`scenario`, `qps`, `latency_bound`, `in_flight`).
#[derive(Clone, Debug, PartialEq)]
pub enum ScenarioSetting {
    Scenario(ScenarioKind),
    /// Server: queries per second arriving.
    Qps(f64),
    /// Server: the p99 latency a valid run stays within, milliseconds.
    LatencyBound(f64),
    /// Server and offline: queries computed at once.
    InFlight(usize),
}

impl ScenarioSetting {
    /// Its key in the matrix file.
    pub fn key(&self) -> &'static str {
        match self {
            ScenarioSetting::Scenario(_) => "scenario",
            ScenarioSetting::Qps(_) => "qps",
            ScenarioSetting::LatencyBound(_) => "latency_bound",
            ScenarioSetting::InFlight(_) => "in_flight",
        }
    }

    /// Its value as the file writes it.
    pub fn value(&self) -> String {
        match self {
            ScenarioSetting::Scenario(kind) => kind.as_str().to_string(),
            ScenarioSetting::Qps(x) | ScenarioSetting::LatencyBound(x) => x.to_string(),
            ScenarioSetting::InFlight(n) => n.to_string(),
        }
    }

    /// Sets it in a scenario made for its kind.
    fn apply(&self, spec: &mut ScenarioSpec) {
        match *self {
            // The spec was made from this kind's defaults (`ScenarioSpec::new`).
            ScenarioSetting::Scenario(_) => {}
            ScenarioSetting::Qps(qps) => spec.target_qps = Some(qps),
            ScenarioSetting::LatencyBound(ms) => spec.latency_bound_ms = Some(ms),
            ScenarioSetting::InFlight(n) => spec.in_flight = n,
        }
    }
}

/// The keys a scenario takes. A key reaches the cells of the scenarios that take it, so
/// that one matrix can sweep `scenario = ["single-stream", "server"]` with a `qps` for
/// its server cells; a key that no scenario of the matrix takes is refused.
fn scenario_keys(kind: ScenarioKind) -> &'static [&'static str] {
    match kind {
        // A single-stream or server query is one sample, an offline run's queries the
        // samples of one (LoadGen's definitions): only multi-stream has a count to set.
        ScenarioKind::SingleStream => &["scenario_time", "min_queries"],
        ScenarioKind::MultiStream => &["samples_per_query", "scenario_time", "min_queries"],
        ScenarioKind::Server => &[
            "qps",
            "latency_bound",
            "scenario_time",
            "min_queries",
            "find_peak",
            "in_flight",
        ],
        ScenarioKind::Offline => &["scenario_time", "min_queries", "in_flight"],
    }
}

/// The scenarios the matrix gives, each with the axes of the keys it takes.
struct ScenarioAxes {
    /// Each scenario in the order written: its spec (its defaults with the keys given as
    /// one value) and the lists of the keys it takes (in the order `qps`,
    /// `latency_bound`, `in_flight`; the last varies fastest). Empty: no scenario.
    kinds: Vec<(ScenarioSpec, Vec<Vec<ScenarioSetting>>)>,
    /// Whether `scenario` is a list, so that a cell's kind is one of its axis values.
    kind_is_axis: bool,
    /// The keys given as lists and their values, for `[[exclude]]`.
    axes: Vec<(&'static str, Vec<ScenarioSetting>)>,
}

impl ScenarioAxes {
    /// How many scenario parts of cells there are (1 without a scenario), counted
    /// before they are made.
    fn count(&self) -> u128 {
        if self.kinds.is_empty() {
            return 1;
        }
        self.kinds
            .iter()
            .map(|(_, axes)| axes.iter().map(|a| a.len() as u128).product::<u128>())
            .sum()
    }

    /// Each cell's scenario and its axis values, in cell order: `[(None, [])]` without a
    /// scenario, so that a file without one numbers its cells as before.
    fn cells(&self) -> Vec<(Option<ScenarioSpec>, Vec<ScenarioSetting>)> {
        if self.kinds.is_empty() {
            return vec![(None, Vec::new())];
        }
        let mut out = Vec::new();
        for (spec, axes) in &self.kinds {
            let first = if self.kind_is_axis {
                vec![ScenarioSetting::Scenario(spec.kind)]
            } else {
                Vec::new()
            };
            let mut combinations = vec![first];
            for list in axes {
                combinations = combinations
                    .into_iter()
                    .flat_map(|before| {
                        list.iter().map(move |v| {
                            let mut next = before.clone();
                            next.push(v.clone());
                            next
                        })
                    })
                    .collect();
            }
            for values in combinations {
                let mut cell = spec.clone();
                for v in &values {
                    v.apply(&mut cell);
                }
                out.push((Some(cell), values));
            }
        }
        out
    }
}

/// A scenario key given as one value or a list.
struct ScenarioKeyGiven {
    key: &'static str,
    one: Option<ScenarioSetting>,
    /// Checked as an axis: not empty, nothing twice.
    list: Option<Vec<ScenarioSetting>>,
}

fn one_or_axis<T: Clone>(
    key: &'static str,
    given: &Option<OneOrAxis<T>>,
    make: fn(T) -> ScenarioSetting,
) -> Result<ScenarioKeyGiven, MatrixError> {
    let (one, list) = match given {
        None => (None, None),
        Some(OneOrAxis::One(v)) => (Some(make(v.clone())), None),
        Some(OneOrAxis::Axis(list)) => {
            let list: Vec<ScenarioSetting> = list.iter().cloned().map(make).collect();
            check_axis(key, &list, ScenarioSetting::value)?;
            (None, Some(list))
        }
    };
    Ok(ScenarioKeyGiven { key, one, list })
}

/// The scenario part of the cells: the scenarios the file gives, each with its keys.
fn scenario_axes(file: &MatrixFile) -> Result<ScenarioAxes, MatrixError> {
    let given = [
        ("samples_per_query", file.samples_per_query.is_some()),
        ("qps", file.qps.is_some()),
        ("latency_bound", file.latency_bound.is_some()),
        ("scenario_time", file.scenario_time.is_some()),
        ("min_queries", file.min_queries.is_some()),
        ("find_peak", file.find_peak.is_some()),
        ("in_flight", file.in_flight.is_some()),
    ];
    let (kinds, kind_is_axis) = match &file.scenario {
        None => {
            if let Some((key, _)) = given.iter().find(|(_, g)| *g) {
                return Err(MatrixError::BadValue {
                    key,
                    message: "it is a setting of a serving scenario, and the matrix gives no `scenario`: add one (`scenario = \"server\"`: single-stream, multi-stream, server or offline), or leave the key out".into(),
                });
            }
            return Ok(ScenarioAxes {
                kinds: Vec::new(),
                kind_is_axis: false,
                axes: Vec::new(),
            });
        }
        Some(OneOrAxis::One(kind)) => (vec![*kind], false),
        Some(OneOrAxis::Axis(list)) => {
            check_axis("scenario", list, |k| k.as_str().to_string())?;
            (list.clone(), true)
        }
    };
    for (key, is_given) in given {
        if is_given && !kinds.iter().any(|k| scenario_keys(*k).contains(&key)) {
            let takers: Vec<&str> = [
                ScenarioKind::SingleStream,
                ScenarioKind::MultiStream,
                ScenarioKind::Server,
                ScenarioKind::Offline,
            ]
            .into_iter()
            .filter(|k| scenario_keys(*k).contains(&key))
            .map(ScenarioKind::as_str)
            .collect();
            let listed: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
            return Err(MatrixError::BadValue {
                key,
                message: format!(
                    "it is a setting of the {} scenario{}, and the matrix's `scenario` is {}: it would reach no cell",
                    takers.join(" and "),
                    if takers.len() > 1 { "s" } else { "" },
                    listed.join(", ")
                ),
            });
        }
    }
    let axes_given = [
        one_or_axis("qps", &file.qps, ScenarioSetting::Qps)?,
        one_or_axis(
            "latency_bound",
            &file.latency_bound,
            ScenarioSetting::LatencyBound,
        )?,
        one_or_axis("in_flight", &file.in_flight, ScenarioSetting::InFlight)?,
    ];
    let mut axes: Vec<(&'static str, Vec<ScenarioSetting>)> = Vec::new();
    if kind_is_axis {
        axes.push((
            "scenario",
            kinds
                .iter()
                .copied()
                .map(ScenarioSetting::Scenario)
                .collect(),
        ));
    }
    for given in &axes_given {
        if let Some(list) = &given.list {
            axes.push((given.key, list.clone()));
        }
    }
    let kinds = kinds
        .into_iter()
        .map(|kind| {
            let takes = |key: &str| scenario_keys(kind).contains(&key);
            let mut spec = ScenarioSpec::new(kind);
            if let Some(n) = file
                .samples_per_query
                .filter(|_| takes("samples_per_query"))
            {
                spec.samples_per_query = n;
            }
            if let Some(s) = file.scenario_time.filter(|_| takes("scenario_time")) {
                spec.min_duration_s = s;
            }
            if let Some(n) = file.min_queries.filter(|_| takes("min_queries")) {
                spec.min_queries = n;
            }
            if let Some(on) = file.find_peak.filter(|_| takes("find_peak")) {
                spec.find_peak = on;
            }
            let mut lists = Vec::new();
            for given in axes_given.iter().filter(|g| takes(g.key)) {
                if let Some(v) = &given.one {
                    v.apply(&mut spec);
                }
                if let Some(list) = &given.list {
                    lists.push(list.clone());
                }
            }
            (spec, lists)
        })
        .collect();
    Ok(ScenarioAxes {
        kinds,
        kind_is_axis,
        axes,
    })
}

/// One cell: one model on one engine in one configuration, one result file.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Its number, from 0: the array index of the job that runs it.
    pub index: usize,
    /// The zoo's name of the model.
    pub model: String,
    pub engine: String,
    /// The engine's own settings for this cell (`[engine_settings.ENGINE]`).
    pub settings: SettingsMap,
    /// `None`: the model's own input size.
    pub image_size: Option<ImageSize>,
    pub batch_size: usize,
    pub mode: Mode,
    pub precision: Precision,
    /// This cell's values of the run settings the matrix gives as lists (empty when it
    /// gives none); the others are the matrix's base spec.
    pub run_settings: Vec<RunSetting>,
    /// The serving scenario the cell runs (`scenario = …`); `None`: passes back to back.
    pub scenario: Option<ScenarioSpec>,
    /// This cell's values of the scenario keys the matrix gives as lists.
    pub scenario_settings: Vec<ScenarioSetting>,
}

impl Cell {
    /// `resnet18 on burn-flex, train, batch 16, f32` (with `224x224` when the matrix
    /// gives sizes, the run settings it gives as lists, `threads 4`, and the scenario
    /// with the values of its lists, `scenario server, qps 100`).
    pub fn describe(&self) -> String {
        let size = self.image_size.map_or(String::new(), |s| format!(" {s}"));
        let settings: String = self
            .settings
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect();
        let run_settings: String = self
            .axis_values()
            .iter()
            .map(|(key, value)| format!(", {key} {value}"))
            .collect();
        format!(
            "{}{size} on {}{settings}, {}, batch {}, {}{run_settings}",
            self.model,
            self.engine,
            self.mode,
            self.batch_size,
            self.precision.as_str()
        )
    }

    /// What sets the cell apart beside its model, engine, sizes, mode and precision:
    /// the values of the run settings the matrix lists, then its scenario (named even
    /// when it is one for every cell: it is no closed loop) and the values of the
    /// scenario keys it lists.
    pub fn axis_values(&self) -> Vec<(&'static str, String)> {
        let mut values: Vec<(&'static str, String)> = self
            .run_settings
            .iter()
            .map(|s| (s.key(), s.value()))
            .collect();
        if let Some(scenario) = &self.scenario {
            values.push(("scenario", scenario.kind.as_str().to_string()));
            values.extend(
                self.scenario_settings
                    .iter()
                    .filter(|s| !matches!(s, ScenarioSetting::Scenario(_)))
                    .map(|s| (s.key(), s.value())),
            );
        }
        values
    }
}

/// A checked matrix: its cells, the spec they share, and the text it was read from
/// (which the generated jobs carry, so that a later edit of the file cannot renumber a
/// running array).
#[derive(Clone, Debug)]
pub struct Matrix {
    pub cells: Vec<Cell>,
    /// What every cell shares: `cnnbench run`'s defaults with the run settings the file
    /// gives as one value. Its models and engine are empty: each cell names its own.
    pub base: RunSpec,
    /// The heap policy the file names (`allocator = "system"`): every cell must run
    /// under it, so the jobs start cnnbench with `--allocator`; `None`: each host's own.
    pub allocator: Option<String>,
    pub text: String,
}

/// The largest matrix file read: real ones are a few kilobytes.
pub const MAX_MATRIX_BYTES: u64 = 1 << 20;

/// The most cells a matrix may have (before exclusions): each is a benchmark run, and
/// 10⁵ is already weeks of them; a million took over a minute and 1.75 GB to plan.
pub const MAX_CELLS: usize = 100_000;

impl Matrix {
    /// Reads and checks a matrix file; `known_engines` are the engine names cnnbench
    /// knows (built into this binary or not: the cluster's build may differ).
    pub fn load(path: &Path, known_engines: &[&str]) -> Result<Matrix, MatrixError> {
        let text = cnnbench_graph::read_bounded_to_string(path, MAX_MATRIX_BYTES, "matrix files")
            .map_err(MatrixError::Read)?;
        Matrix::parse(&text, known_engines)
    }

    /// Checks a matrix given as text; see [`Matrix::load`].
    pub fn parse(text: &str, known_engines: &[&str]) -> Result<Matrix, MatrixError> {
        let file: MatrixFile = toml::from_str(text)?;
        match (&file.format, file.version) {
            (None, _) | (_, None) => return Err(MatrixError::NotAMatrix),
            (Some(f), _) if f != MATRIX_FORMAT => return Err(MatrixError::WrongFormat(f.clone())),
            (_, Some(v)) if v != MATRIX_VERSION => return Err(MatrixError::WrongVersion(v)),
            _ => {}
        }
        let models = check_models(&file.models)?;
        check_axis("engines", &file.engines, |e| e.clone())?;
        for name in &file.engines {
            if !known_engines.contains(&name.as_str()) {
                return Err(MatrixError::UnknownEngine {
                    name: name.clone(),
                    known: known_engines.join(", "),
                });
            }
        }
        let batch_sizes = file.batch_sizes.clone().unwrap_or_else(default_batch_sizes);
        check_axis("batch_sizes", &batch_sizes, usize::to_string)?;
        if batch_sizes.contains(&0) {
            return Err(MatrixError::BadValue {
                key: "batch_sizes",
                message: "a batch size must be at least 1".into(),
            });
        }
        let image_sizes: Vec<Option<ImageSize>> = match &file.image_sizes {
            None => vec![None],
            Some(specs) => {
                let sizes = specs
                    .iter()
                    .map(|s| s.resolve("image_sizes"))
                    .collect::<Result<Vec<_>, _>>()?;
                check_axis("image_sizes", &sizes, ImageSize::to_string)?;
                sizes.into_iter().map(Some).collect()
            }
        };
        check_axis("modes", &file.modes, |m| m.to_string())?;
        check_axis("precisions", &file.precisions, |p| p.as_str().to_string())?;
        let scenarios = scenario_axes(&file)?;
        // A scenario serves inference (`run --scenario` needs `--mode infer`): a matrix
        // that also lists train or step is refused, not cut down to its infer cells,
        // so that the file says what runs.
        let not_infer: Vec<String> = file
            .modes
            .iter()
            .filter(|m| **m != Mode::Infer)
            .map(|m| m.to_string())
            .collect();
        if !scenarios.kinds.is_empty() && !not_infer.is_empty() {
            return Err(MatrixError::BadValue {
                key: "scenario",
                message: format!(
                    "a scenario serves inference, and the matrix's modes include {} (`modes` defaults to train): give `modes = [\"infer\"]`",
                    not_infer.join(", ")
                ),
            });
        }
        let RunSettingAxes {
            base,
            axes: run_setting_axes,
            combinations: run_settings,
        } = base_and_axes(&file)?;
        for engine in file.engine_settings.keys() {
            if !file.engines.contains(engine) {
                return Err(MatrixError::EngineSetting {
                    engine: engine.clone(),
                    message: format!(
                        "{engine} is not in `engines`, so these settings would reach no cell"
                    ),
                });
            }
        }
        let engines: Vec<(&String, Vec<SettingsMap>)> = file
            .engines
            .iter()
            .map(|e| {
                let combinations = match file.engine_settings.get(e) {
                    Some(given) => setting_combinations(e, given)?,
                    None => vec![SettingsMap::new()],
                };
                Ok((e, combinations))
            })
            .collect::<Result<_, MatrixError>>()?;

        // Counted before they are made: 2×10⁹ cells took 23.6 GB before the kernel
        // stopped it.
        let engine_cells: usize = engines.iter().map(|(_, c)| c.len()).sum();
        let cells: u128 = [
            models.len(),
            engine_cells,
            image_sizes.len(),
            batch_sizes.len(),
            file.modes.len(),
            file.precisions.len(),
            run_settings.len(),
        ]
        .iter()
        .map(|&n| n as u128)
        .product::<u128>()
        .saturating_mul(scenarios.count());
        if cells > MAX_CELLS as u128 {
            return Err(MatrixError::TooManyCells { cells });
        }
        let excludes = file
            .exclude
            .iter()
            .enumerate()
            .map(|(i, e)| {
                Exclusion::check(
                    i + 1,
                    e,
                    &file,
                    Axes {
                        image_sizes: &image_sizes,
                        batch_sizes: &batch_sizes,
                        run_settings: &run_setting_axes,
                        scenario: &scenarios.axes,
                    },
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let scenario_cells = scenarios.cells();
        let mut cells = Vec::new();
        for model in &models {
            for (engine, combinations) in &engines {
                for settings in combinations {
                    for &image_size in &image_sizes {
                        for &batch_size in &batch_sizes {
                            for &mode in &file.modes {
                                for &precision in &file.precisions {
                                    for values in &run_settings {
                                        for (scenario, scenario_settings) in &scenario_cells {
                                            let batch_size = match file.batch_sizes {
                                                Some(_) => batch_size,
                                                None => query_batch(scenario.as_ref())
                                                    .unwrap_or(batch_size),
                                            };
                                            let cell = Cell {
                                                index: cells.len(),
                                                model: model.clone(),
                                                engine: (*engine).clone(),
                                                settings: settings.clone(),
                                                image_size,
                                                batch_size,
                                                mode,
                                                precision,
                                                run_settings: values.clone(),
                                                scenario: scenario.clone(),
                                                scenario_settings: scenario_settings.clone(),
                                            };
                                            if !excludes.iter().any(|e| e.matches(&cell)) {
                                                cells.push(cell);
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        if cells.is_empty() {
            return Err(MatrixError::AllExcluded);
        }
        check_sizes_fit(&cells)?;
        let matrix = Matrix {
            cells,
            base,
            allocator: file.allocator.clone(),
            text: text.to_string(),
        };
        // Each cell is a spec `cnnbench run` takes, or the matrix is refused now rather
        // than in the job that runs the cell.
        // The scenario first: its refusal names its key where the spec's would name only
        // the batch its samples make (`samples_per_query = 0`).
        for cell in &matrix.cells {
            let spec = matrix.spec(cell);
            spec.scenario
                .as_ref()
                .map_or(Ok(()), ScenarioSpec::validate)
                .and_then(|()| check_query_batch(cell))
                .and_then(|()| spec.validate())
                .map_err(|message| MatrixError::Spec {
                    index: cell.index,
                    cell: cell.describe(),
                    message: with_matrix_keys(message),
                })?;
        }
        Ok(matrix)
    }

    /// The cell with this number, or an error that gives the range.
    pub fn cell(&self, index: usize) -> Result<&Cell, MatrixError> {
        self.cells.get(index).ok_or(MatrixError::NoSuchCell {
            index,
            count: self.cells.len(),
        })
    }

    /// What a cell runs: the matrix's base spec with the cell's model, engine, axes'
    /// values and engine settings. The task that runs the cell receives this spec itself,
    /// so no setting is lost on the way.
    pub fn spec(&self, cell: &Cell) -> RunSpec {
        let mut spec = RunSpec {
            models: vec![ModelRef::Zoo {
                name: cell.model.clone(),
            }],
            engine: cell.engine.clone(),
            mode: cell.mode,
            precision: cell.precision,
            batch: Batches::Sizes(vec![cell.batch_size]),
            image_sizes: cell.image_size.map(|size| vec![size]),
            ..self.base.clone()
        };
        spec.engine_options.settings = cell.settings.clone();
        for setting in &cell.run_settings {
            setting.apply(&mut spec);
        }
        spec.scenario = cell.scenario.clone();
        // The matrix's `tf32` is for its f32 cells, which it makes tf32 cells.
        spec.engine_options.tf32 &= matches!(cell.precision, Precision::F32 | Precision::Tf32);
        // Its `calibration` is for its int8 cells.
        if cell.precision != Precision::Int8 {
            spec.calibration_images = None;
        }
        spec.settle_tf32();
        spec
    }
}

/// A refusal of `RunSpec::validate` names `run`'s flags; the matrix's keys for them are
/// added, so that the user knows what to edit in the file. A flag is named where it
/// stands as a word (`--scenario` is not named by `--scenario-time`).
fn with_matrix_keys(message: String) -> String {
    const KEYS: [(&str, &str); 20] = [
        ("--passes", "passes"),
        ("--calibration", "calibration"),
        ("--threads", "threads"),
        ("--repeat", "repeat"),
        ("--min-time", "min_time"),
        ("--max-time", "max_time"),
        ("--target-ci", "target_ci"),
        ("--warmup-time", "warmup_time"),
        ("--tf32", "tf32"),
        ("heap policy", "allocator"),
        ("--mode", "modes"),
        ("-b", "batch_sizes"),
        ("--scenario", "scenario"),
        ("--samples-per-query", "samples_per_query"),
        ("--qps", "qps"),
        ("--latency-bound", "latency_bound"),
        ("--scenario-time", "scenario_time"),
        ("--min-queries", "min_queries"),
        ("--find-peak", "find_peak"),
        ("--in-flight", "in_flight"),
    ];
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-');
    let mentions = |flag: &str| {
        message.match_indices(flag).any(|(at, _)| {
            !word(message[..at].chars().next_back())
                && !word(message[at + flag.len()..].chars().next())
        })
    };
    let named: Vec<String> = KEYS
        .iter()
        .filter(|(flag, _)| mentions(flag))
        .map(|(_, key)| format!("`{key}`"))
        .collect();
    if named.is_empty() {
        message
    } else {
        format!("{message} (in the matrix: {})", named.join(", "))
    }
}

/// The batch of a cell under a query scenario, when the matrix gives no `batch_sizes`:
/// a query's samples, as `run --scenario` makes it when `-b` is not given (a matrix
/// that gives them keeps them, and each must agree, as `-b` must). `None`: the batch
/// is `run`'s default (offline computes its samples a batch at a time).
fn query_batch(scenario: Option<&ScenarioSpec>) -> Option<usize> {
    let scenario = scenario?;
    match scenario.kind {
        ScenarioKind::SingleStream | ScenarioKind::MultiStream | ScenarioKind::Server => {
            Some(scenario.samples_per_query)
        }
        ScenarioKind::Offline => None,
    }
}

/// A query scenario's batch is its query's samples: a batch size the matrix gives must
/// be that, said in the file's words (`run`'s refusal names `-b` and
/// `--samples-per-query`, which a server matrix has no key for).
fn check_query_batch(cell: &Cell) -> Result<(), String> {
    let Some(samples) = query_batch(cell.scenario.as_ref()) else {
        return Ok(());
    };
    if samples == cell.batch_size {
        return Ok(());
    }
    let kind = cell.scenario.as_ref().map_or("", |s| s.kind.as_str());
    let or_samples = match cell.scenario.as_ref().map(|s| s.kind) {
        Some(ScenarioKind::MultiStream) => ", set `samples_per_query` to it",
        Some(ScenarioKind::SingleStream | ScenarioKind::Server | ScenarioKind::Offline) | None => {
            ""
        }
    };
    Err(format!(
        "a {kind} query's {samples} sample(s) are the batch the engine computes, and `batch_sizes` gives {}: leave out `batch_sizes` (the batch then follows the scenario){or_samples}, or exclude the cell",
        cell.batch_size
    ))
}

/// An axis must list something, and nothing twice (it would run the same cell twice).
fn check_axis<T: PartialEq>(
    key: &'static str,
    values: &[T],
    show: impl Fn(&T) -> String,
) -> Result<(), MatrixError> {
    if values.is_empty() {
        return Err(MatrixError::Empty(key));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(MatrixError::Duplicate {
                key,
                value: show(v),
            });
        }
    }
    Ok(())
}

/// The zoo's names of the models (so `ResNet-18` and `resnet18` are one model).
fn check_models(names: &[String]) -> Result<Vec<String>, MatrixError> {
    if names.is_empty() {
        return Err(MatrixError::Empty("models"));
    }
    let mut canonical = Vec::new();
    for name in names {
        let entry = cnnbench_zoo::find(name).ok_or_else(|| {
            MatrixError::UnknownModel(cnnbench_zoo::ZooError::Unknown {
                name: name.clone(),
                suggestions: cnnbench_zoo::suggest(name),
            })
        })?;
        canonical.push(entry.name.to_string());
    }
    check_axis("models", &canonical, String::clone)?;
    Ok(canonical)
}

/// An exclude entry checked against the axes: each value it names is one of theirs.
struct Exclusion {
    model: Option<String>,
    engine: Option<String>,
    /// Values of the engine's setting axes: a cell of the engine with every one matches.
    engine_settings: Vec<(String, String)>,
    batch_size: Option<usize>,
    image_size: Option<ImageSize>,
    mode: Option<Mode>,
    precision: Option<Precision>,
    /// Values of run-setting axes: a cell with every one of them matches.
    run_settings: Vec<RunSetting>,
    /// Values of scenario-key axes: likewise.
    scenario_settings: Vec<ScenarioSetting>,
}

/// The matrix's axes an exclusion is checked against, beside the file's own lists.
struct Axes<'a> {
    image_sizes: &'a [Option<ImageSize>],
    batch_sizes: &'a [usize],
    run_settings: &'a [(&'static str, Vec<RunSetting>)],
    scenario: &'a [(&'static str, Vec<ScenarioSetting>)],
}

impl Exclusion {
    fn check(
        index: usize,
        e: &ExcludeEntry,
        file: &MatrixFile,
        axes: Axes,
    ) -> Result<Exclusion, MatrixError> {
        let not_in = |key: &str, value: String, axis: &str| MatrixError::Exclude {
            index,
            message: format!("{key} {value} is not in `{axis}`, so it would exclude nothing"),
        };
        let model = match &e.model {
            None => None,
            Some(name) => {
                let canonical = cnnbench_zoo::find(name)
                    .map(|m| m.name.to_string())
                    .filter(|c| {
                        file.models
                            .iter()
                            .any(|m| cnnbench_zoo::find(m).is_some_and(|f| f.name == c))
                    })
                    .ok_or_else(|| not_in("model", format!("\"{name}\""), "models"))?;
                Some(canonical)
            }
        };
        if let Some(engine) = &e.engine {
            if !file.engines.contains(engine) {
                return Err(not_in("engine", format!("\"{engine}\""), "engines"));
            }
        }
        let mut engine_settings = Vec::new();
        for (key, value) in e.engine_settings.iter().flatten() {
            let value = value.text();
            let Some(engine) = &e.engine else {
                return Err(MatrixError::Exclude {
                    index,
                    message: format!(
                        "engine_settings {key} = {value} names no engine: an engine's settings are its own, so give `engine` too"
                    ),
                });
            };
            match file.engine_settings.get(engine).and_then(|s| s.get(key)) {
                Some(SettingValues::Axis(values)) if values.iter().any(|v| v.text() == value) => {}
                Some(SettingValues::Axis(_)) => {
                    return Err(not_in(
                        &format!("engine_settings {key}"),
                        value,
                        &format!("engine_settings.{engine}.{key}"),
                    ))
                }
                Some(SettingValues::One(_)) | None => {
                    return Err(MatrixError::Exclude {
                        index,
                        message: format!(
                            "`engine_settings.{engine}.{key}` is not a list in the matrix, so it is no axis to exclude from"
                        ),
                    })
                }
            }
            engine_settings.push((key.clone(), value));
        }
        if let Some(b) = e.batch_size {
            if !axes.batch_sizes.contains(&b) {
                return Err(not_in("batch_size", b.to_string(), "batch_sizes"));
            }
        }
        let image_size = match &e.image_size {
            None => None,
            Some(spec) => {
                let size = spec.resolve("exclude.image_size")?;
                if !axes.image_sizes.contains(&Some(size)) {
                    return Err(not_in("image_size", size.to_string(), "image_sizes"));
                }
                Some(size)
            }
        };
        if let Some(m) = e.mode {
            if !file.modes.contains(&m) {
                return Err(not_in("mode", m.to_string(), "modes"));
            }
        }
        if let Some(p) = e.precision {
            if !file.precisions.contains(&p) {
                return Err(not_in("precision", p.as_str().to_string(), "precisions"));
            }
        }
        /// Each value must be one of its key's list.
        fn on_axes<S: PartialEq>(
            index: usize,
            named: &[S],
            axes: &[(&'static str, Vec<S>)],
            key_value: impl Fn(&S) -> (&'static str, String),
        ) -> Result<(), MatrixError> {
            for setting in named {
                let (key, value) = key_value(setting);
                let message = match axes.iter().find(|(axis, _)| *axis == key) {
                    Some((_, values)) if values.contains(setting) => continue,
                    Some(_) => {
                        format!("{key} {value} is not in `{key}`, so it would exclude nothing")
                    }
                    None => format!(
                        "`{key}` is not a list in the matrix, so it is no axis to exclude from"
                    ),
                };
                return Err(MatrixError::Exclude { index, message });
            }
            Ok(())
        }
        let run_settings = e.run_settings()?;
        on_axes(index, &run_settings, axes.run_settings, |s| {
            (s.key(), s.value())
        })?;
        let scenario_settings = e.scenario_settings();
        on_axes(index, &scenario_settings, axes.scenario, |s| {
            (s.key(), s.value())
        })?;
        let exclusion = Exclusion {
            model,
            engine: e.engine.clone(),
            engine_settings,
            batch_size: e.batch_size,
            image_size,
            mode: e.mode,
            precision: e.precision,
            run_settings,
            scenario_settings,
        };
        if exclusion.model.is_none()
            && exclusion.engine.is_none()
            && exclusion.batch_size.is_none()
            && exclusion.image_size.is_none()
            && exclusion.mode.is_none()
            && exclusion.precision.is_none()
            && exclusion.run_settings.is_empty()
            && exclusion.scenario_settings.is_empty()
        {
            return Err(MatrixError::Exclude {
                index,
                message: "it names no key, so it would exclude every cell; give model, engine, batch_size, image_size, mode, precision, or a run setting or scenario key the matrix lists".into(),
            });
        }
        Ok(exclusion)
    }

    fn matches(&self, c: &Cell) -> bool {
        self.model.as_ref().is_none_or(|m| *m == c.model)
            && self.engine.as_ref().is_none_or(|e| *e == c.engine)
            && self
                .engine_settings
                .iter()
                .all(|(key, value)| c.settings.get(key) == Some(value))
            && self.batch_size.is_none_or(|b| b == c.batch_size)
            && self.image_size.is_none_or(|s| Some(s) == c.image_size)
            && self.mode.is_none_or(|m| m == c.mode)
            && self.precision.is_none_or(|p| p == c.precision)
            && self.run_settings.iter().all(|s| c.run_settings.contains(s))
            && self
                .scenario_settings
                .iter()
                .all(|s| c.scenario_settings.contains(s))
    }
}

/// Every model the matrix runs at a size must be buildable at it (a 32×32 AlexNet is
/// not), so that a typo fails now and not in job 417.
fn check_sizes_fit(cells: &[Cell]) -> Result<(), MatrixError> {
    let mut checked: Vec<(&str, ImageSize)> = Vec::new();
    for c in cells {
        let Some(size) = c.image_size else { continue };
        if checked.contains(&(c.model.as_str(), size)) {
            continue;
        }
        checked.push((c.model.as_str(), size));
        if let Some(entry) = cnnbench_zoo::find(&c.model) {
            let input = [entry.default_input[0], size.height, size.width];
            if let Err(e) = (entry.build)(input) {
                return Err(MatrixError::ModelSize {
                    model: c.model.clone(),
                    height: size.height,
                    width: size.width,
                    reason: e.to_string(),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENGINES: &[&str] = &["burn-flex", "torch-cpu", "torch-cuda"];

    fn parse(body: &str) -> Result<Matrix, MatrixError> {
        Matrix::parse(
            &format!("format = \"cnnbench-matrix\"\nversion = 1\n{body}"),
            ENGINES,
        )
    }

    fn err(body: &str) -> String {
        match parse(body) {
            Ok(m) => panic!("expected an error, got {} cells", m.cells.len()),
            Err(e) => e.to_string(),
        }
    }

    /// 2×10⁹ cells were made until the kernel killed the process at 23.6 GB; they are
    /// counted first now, and the file is read with the bounds the other readers have.
    #[test]
    fn huge_matrices_and_files_that_are_not_matrices_are_refused_at_once() {
        let batches: Vec<String> = (1..=400).map(|b| b.to_string()).collect();
        let sizes: Vec<String> = (32..132).map(|s| s.to_string()).collect();
        let started = std::time::Instant::now();
        let e = err(&format!(
            "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nbatch_sizes = [{}]\nimage_sizes = [{}]\nmodes = [\"train\", \"infer\", \"step\"]",
            batches.join(", "),
            sizes.join(", ")
        ));
        assert!(e.contains("120000 cells") && e.contains("split"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        for path in ["/dev/zero", "/"] {
            let e = Matrix::load(Path::new(path), ENGINES)
                .unwrap_err()
                .to_string();
            assert!(e.contains(path), "{e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; (MAX_MATRIX_BYTES + 1) as usize]).unwrap();
        let e = Matrix::load(&big, ENGINES).unwrap_err().to_string();
        assert!(e.contains("big.toml"), "{e}");
    }

    #[test]
    fn cells_are_the_cross_product_in_a_fixed_order() {
        let m = parse(
            r#"models = ["resnet18", "ResNet-50"]
engines = ["burn-flex", "torch-cpu"]
batch_sizes = [16, 32]
precisions = ["f32", "bf16"]"#,
        )
        .unwrap();
        assert_eq!(m.cells.len(), 2 * 2 * 2 * 2);
        let first = &m.cells[0];
        assert_eq!(
            (
                first.model.as_str(),
                first.engine.as_str(),
                first.batch_size
            ),
            ("resnet18", "burn-flex", 16)
        );
        assert_eq!(first.precision, Precision::F32);
        assert_eq!(m.cells[1].precision, Precision::Bf16);
        assert_eq!(m.cells[2].batch_size, 32);
        assert_eq!(m.cells[4].engine, "torch-cpu");
        // Aliases become the zoo's own name.
        assert_eq!(m.cells[8].model, "resnet50");
        assert!(m.cells.iter().enumerate().all(|(i, c)| c.index == i));
        assert_eq!(m.cells[0].mode, Mode::Train);
        assert_eq!(m.base.passes, 10);
        assert_eq!(m.base.warmup, 1);
    }

    #[test]
    fn exclusions_drop_exactly_the_matching_cells_and_renumber() {
        let m = parse(
            r#"models = ["resnet18", "resnet50"]
engines = ["burn-flex", "torch-cpu"]
batch_sizes = [16, 32]
image_sizes = [64, "32x48"]

[[exclude]]
model = "resnet50"
engine = "torch-cpu"

[[exclude]]
batch_size = 32
image_size = "32x48"
"#,
        )
        .unwrap();
        // 16 cells; the first entry drops resnet50 × torch-cpu (4), the second every
        // 32x48 at batch 32 (4, one of them already dropped).
        assert_eq!(m.cells.len(), 16 - 4 - 3);
        assert!(!m
            .cells
            .iter()
            .any(|c| c.model == "resnet50" && c.engine == "torch-cpu"));
        assert!(!m.cells.iter().any(|c| c.batch_size == 32
            && c.image_size
                == Some(ImageSize {
                    height: 32,
                    width: 48
                })));
        assert!(m.cells.iter().enumerate().all(|(i, c)| c.index == i));
        assert_eq!(m.cell(8).unwrap().index, 8);
        assert!(m.cell(9).unwrap_err().to_string().contains("0 to 8"));
    }

    #[test]
    fn unknown_keys_are_errors_naming_the_key() {
        let e = err("modles = [\"resnet18\"]\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]");
        assert!(e.contains("modles"), "{e}");
        let e = err(
            "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n[[exclude]]\nmodels = \"resnet18\"",
        );
        assert!(e.contains("models") && e.contains("unknown field"), "{e}");
    }

    #[test]
    fn unknown_models_and_engines_are_named() {
        let e = err("models = [\"resnet181\"]\nengines = [\"burn-flex\"]");
        assert!(e.contains("`models`") && e.contains("resnet181"), "{e}");
        let e = err("models = [\"resnet18\"]\nengines = [\"burn-flux\"]");
        assert!(
            e.contains("`engines`") && e.contains("burn-flux") && e.contains("torch-cpu"),
            "{e}"
        );
        let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmodes = [\"trian\"]");
        assert!(e.contains("modes") && e.contains("trian"), "{e}");
    }

    #[test]
    fn empty_axes_and_empty_products_are_errors_naming_the_key() {
        for key in [
            "models",
            "engines",
            "batch_sizes",
            "image_sizes",
            "modes",
            "precisions",
        ] {
            let mut body = String::from("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n");
            body = body
                .lines()
                .filter(|l| !l.starts_with(&format!("{key} ")))
                .map(|l| format!("{l}\n"))
                .collect();
            body.push_str(&format!("{key} = []\n"));
            let e = err(&body);
            assert!(e.contains(&format!("`{key}` is empty")), "{key}: {e}");
        }
        let e = err(
            "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n[[exclude]]\nengine = \"burn-flex\"",
        );
        assert!(e.contains("every cell is excluded"), "{e}");
    }

    #[test]
    fn bad_exclusions_and_values_are_named() {
        let base =
            "models = [\"resnet18\", \"resnet34\"]\nengines = [\"burn-flex\", \"torch-cpu\"]\n";
        let e = err(&format!("{base}[[exclude]]\nmodel = \"resnet50\""));
        assert!(
            e.contains("exclude entry 1") && e.contains("resnet50") && e.contains("`models`"),
            "{e}"
        );
        let e = err(&format!(
            "{base}[[exclude]]\nengine = \"burn-flex\"\n[[exclude]]\n"
        ));
        assert!(
            e.contains("exclude entry 2") && e.contains("names no key"),
            "{e}"
        );
        let e = err(&format!("{base}[[exclude]]\nbatch_size = 32"));
        assert!(
            e.contains("batch_size 32") && e.contains("`batch_sizes`"),
            "{e}"
        );
        let e = err(&format!("{base}batch_sizes = [16, 16]"));
        assert!(e.contains("`batch_sizes` lists 16 twice"), "{e}");
        let e = err(&format!("{base}batch_sizes = [0]"));
        assert!(e.contains("`batch_sizes`"), "{e}");
        let e = err(&format!("{base}image_sizes = [\"32x\"]"));
        assert!(e.contains("`image_sizes`") && e.contains("32x"), "{e}");
        let e = err(&format!("{base}passes = 0"));
        assert!(e.contains("`passes`"), "{e}");
        let e = err(&format!("{base}min_time = 5.0\nmax_time = 1.0"));
        assert!(e.contains("`min_time`") && e.contains("max_time"), "{e}");
        let e = err("models = [\"alexnet\"]\nengines = [\"burn-flex\"]\nimage_sizes = [32]");
        assert!(e.contains("alexnet cannot take a 32×32 image"), "{e}");
    }

    /// `[engine_settings.ENGINE]`: a value sets it for the engine's cells, a list is an
    /// axis of them; other engines' cells are untouched; the spec carries the settings.
    #[test]
    fn an_engine_setting_list_is_an_axis_of_that_engines_cells() {
        let m = Matrix::parse(
            r#"format = "cnnbench-matrix"
version = 1
models = ["resnet18"]
engines = ["burn-flex", "openvino-cpu"]
modes = ["infer"]
precisions = ["f32", "bf16"]

[engine_settings.openvino-cpu]
hint = ["latency", "throughput"]
streams = 2
"#,
            &["burn-flex", "openvino-cpu"],
        )
        .unwrap();
        // burn-flex × 2 precisions, openvino-cpu × 2 hints × 2 precisions.
        assert_eq!(m.cells.len(), 2 + 4);
        assert!(m.cells[..2].iter().all(|c| c.settings.is_empty()));
        let ov: Vec<(String, Precision)> = m.cells[2..]
            .iter()
            .map(|c| (c.settings["hint"].clone(), c.precision))
            .collect();
        assert_eq!(
            ov,
            vec![
                ("latency".into(), Precision::F32),
                ("latency".into(), Precision::Bf16),
                ("throughput".into(), Precision::F32),
                ("throughput".into(), Precision::Bf16),
            ]
        );
        assert!(m.cells[2..].iter().all(|c| c.settings["streams"] == "2"));
        let spec = m.spec(&m.cells[4]);
        assert_eq!(spec.engine_options.settings["hint"], "throughput");
        assert!(m.cells[4]
            .describe()
            .contains("openvino-cpu hint=throughput streams=2"));
    }

    /// An exclude entry names values of an engine's setting axes with the engine: the
    /// cells of that engine with those values go (a stack that cannot run a precision
    /// under one setting, as pytorch-compile's int8 without freezing); an entry that
    /// names no engine, a setting that is no axis, or a value not on it, is refused.
    #[test]
    fn an_engine_setting_axis_can_be_excluded_from_with_its_engine() {
        let base = r#"format = "cnnbench-matrix"
version = 1
models = ["resnet18"]
engines = ["burn-flex", "openvino-cpu"]
modes = ["infer"]
precisions = ["f32", "int8"]

[engine_settings.openvino-cpu]
hint = ["latency", "throughput"]
streams = 2
"#;
        let parse = |extra: &str| {
            Matrix::parse(&format!("{base}{extra}"), &["burn-flex", "openvino-cpu"])
                .map_err(|e| e.to_string())
        };
        let m = parse(
            "[[exclude]]\nengine = \"openvino-cpu\"\nprecision = \"int8\"\nengine_settings = { hint = \"throughput\" }\n",
        )
        .unwrap();
        let ov: Vec<(String, Precision)> = m
            .cells
            .iter()
            .filter(|c| c.engine == "openvino-cpu")
            .map(|c| (c.settings["hint"].clone(), c.precision))
            .collect();
        assert_eq!(
            ov,
            vec![
                ("latency".into(), Precision::F32),
                ("latency".into(), Precision::Int8),
                ("throughput".into(), Precision::F32),
            ]
        );
        assert_eq!(m.cells.len(), 2 + 3);
        let e = parse("[[exclude]]\nengine_settings = { hint = \"throughput\" }\n").unwrap_err();
        assert!(
            e.contains("exclude entry 1") && e.contains("give `engine` too"),
            "{e}"
        );
        let e =
            parse("[[exclude]]\nengine = \"openvino-cpu\"\nengine_settings = { streams = 2 }\n")
                .unwrap_err();
        assert!(
            e.contains("`engine_settings.openvino-cpu.streams` is not a list"),
            "{e}"
        );
        let e = parse(
            "[[exclude]]\nengine = \"openvino-cpu\"\nengine_settings = { hint = \"cumulative\" }\n",
        )
        .unwrap_err();
        assert!(
            e.contains("cumulative") && e.contains("would exclude nothing"),
            "{e}"
        );
        let e = parse(
            "[[exclude]]\nengine = \"burn-flex\"\nengine_settings = { hint = \"latency\" }\n",
        )
        .unwrap_err();
        assert!(
            e.contains("`engine_settings.burn-flex.hint` is not a list"),
            "{e}"
        );
    }

    #[test]
    fn engine_settings_for_no_engine_of_the_matrix_or_empty_axes_are_refused() {
        let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
        let e = err(&format!("{base}[engine_settings.torch-cpu]\nthreads = 2"));
        assert!(
            e.contains("`engine_settings.torch-cpu`") && e.contains("not in `engines`"),
            "{e}"
        );
        let e = err(&format!("{base}[engine_settings.burn-flex]\nhint = []"));
        assert!(e.contains("`hint` is an empty list"), "{e}");
        let e = err(&format!(
            "{base}[engine_settings.burn-flex]\nhint = [\"a\", \"a\"]"
        ));
        assert!(e.contains("`hint` lists a twice"), "{e}");
    }

    /// The matrix has no defaults of its own: a cell of a matrix that gives nothing but
    /// its axes is `cnnbench run`'s spec for that model and engine.
    #[test]
    fn a_cell_of_a_bare_matrix_is_runs_default_spec() {
        let m = parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]").unwrap();
        let run = RunSpec::new(
            vec![ModelRef::Zoo {
                name: "resnet18".into(),
            }],
            "burn-flex",
        );
        assert_eq!(m.spec(&m.cells[0]), run);
        assert_eq!((run.passes, run.warmup, run.seed), (10, 1, 0));
        assert_eq!(run.batch, Batches::Sizes(vec![16]));
        assert_eq!((run.mode, run.precision), (Mode::Train, Precision::F32));
    }

    /// Every run setting a matrix may give reaches the cell's spec.
    #[test]
    fn every_run_setting_reaches_the_cells_spec() {
        let m = parse(
            r#"models = ["resnet18"]
engines = ["burn-flex"]
passes = 3
warmup = 2
seed = 7
threads = 2
min_time = 1.5
max_time = 9
target_ci = 4.0
warmup_time = 0.5
memory_limit = "512MiB"
repeat = 3
cudnn_benchmark = true
tf32 = true
channels_last = true"#,
        )
        .unwrap();
        let spec = m.spec(&m.cells[0]);
        assert_eq!((spec.passes, spec.warmup, spec.seed), (3, 2, 7));
        assert_eq!(spec.threads, Some(2));
        assert_eq!(
            (
                spec.min_time_s,
                spec.max_time_s,
                spec.target_ci_pct,
                spec.warmup_time_s
            ),
            (Some(1.5), Some(9.0), Some(4.0), Some(0.5))
        );
        assert_eq!(spec.memory_limit_bytes, Some(512 << 20));
        assert_eq!(spec.repeat, 3);
        let o = &spec.engine_options;
        assert!(o.cudnn_benchmark && o.tf32 && o.channels_last);
        assert_eq!(spec.precision, Precision::Tf32);
        assert_eq!(m.allocator, None);
        assert_eq!(spec.allocator, "keep");
        // The heap policy: one for the matrix, a policy `run` knows.
        let m = parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nallocator = \"system\"")
            .unwrap();
        assert_eq!(m.allocator.as_deref(), Some("system"));
        assert_eq!(m.spec(&m.cells[0]).allocator, "system");
        let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nallocator = \"jemalloc\"");
        assert!(e.contains("jemalloc") && e.contains("`allocator`"), "{e}");
        // Bytes as a number; text the way `run --memory-limit` takes it, or refused.
        let m = parse("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmemory_limit = 1000000")
            .unwrap();
        assert_eq!(m.spec(&m.cells[0]).memory_limit_bytes, Some(1_000_000));
        let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmemory_limit = \"lots\"");
        assert!(e.contains("`memory_limit`") && e.contains("512MiB"), "{e}");
        // A value of the wrong type says what it should be, and where.
        let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\npasses = \"ten\"");
        assert!(
            e.contains("passes = \"ten\"") && e.contains("expected usize"),
            "{e}"
        );
        let e = err("models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nthreads = [1, \"two\"]");
        assert!(e.contains("\"two\"") && e.contains("expected usize"), "{e}");
        // A seed may be any u64.
        let m = parse(
            "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\nseed = [18446744073709551615]",
        )
        .unwrap();
        assert_eq!(m.spec(&m.cells[0]).seed, u64::MAX);
    }

    /// A run setting given as a list is an axis that varies fastest, so a file without
    /// one numbers its cells as before (the documented example's numbering, which
    /// `docs/src/cluster.md` shows).
    #[test]
    fn a_run_setting_list_is_an_axis_after_the_others() {
        let documented = include_str!("../../../docs/src/cluster/matrix.toml");
        let m = Matrix::parse(documented, ENGINES).unwrap();
        let cells: Vec<(&str, &str, usize)> = m
            .cells
            .iter()
            .map(|c| (c.model.as_str(), c.engine.as_str(), c.batch_size))
            .collect();
        assert_eq!(
            cells,
            [
                ("resnet18", "burn-flex", 16),
                ("resnet18", "burn-flex", 32),
                ("resnet18", "torch-cpu", 16),
                ("resnet18", "torch-cpu", 32),
                ("resnet50", "burn-flex", 16),
                ("resnet50", "torch-cpu", 16),
                ("resnet50", "torch-cpu", 32),
            ]
        );
        assert!(m.cells.iter().all(|c| c.run_settings.is_empty()));
        // threads × repeat as axes: each cell of the file becomes four, in place.
        let with_axes = Matrix::parse(
            &documented.replacen(
                "passes = 10",
                "passes = 10\nthreads = [1, 2]\nrepeat = [1, 3]",
                1,
            ),
            ENGINES,
        )
        .unwrap();
        assert_eq!(with_axes.cells.len(), 4 * m.cells.len());
        for (i, c) in with_axes.cells.iter().enumerate() {
            let before = &m.cells[i / 4];
            assert_eq!(
                (&c.model, &c.engine, c.batch_size),
                (&before.model, &before.engine, before.batch_size)
            );
            let threads = [1, 1, 2, 2][i % 4];
            let repeat = [1, 3, 1, 3][i % 4];
            assert_eq!(
                c.run_settings,
                [RunSetting::Threads(threads), RunSetting::Repeat(repeat)]
            );
            let spec = with_axes.spec(c);
            assert_eq!((spec.threads, spec.repeat), (Some(threads), repeat));
            assert_eq!(spec.passes, 10);
        }
        assert!(
            with_axes.cells[3]
                .describe()
                .ends_with("batch 16, f32, threads 2, repeat 3"),
            "{}",
            with_axes.cells[3].describe()
        );
    }

    /// A cell `cnnbench run` would refuse is refused with the file, naming the cell and
    /// the key; a list is an axis like the others (not empty, nothing twice).
    #[test]
    fn a_cell_whose_spec_run_refuses_is_refused_naming_the_key() {
        let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
        let e = err(&format!("{base}repeat = 0"));
        assert!(e.contains("cell 0") && e.contains("`repeat`"), "{e}");
        let e = err(&format!("{base}threads = [2, 0]"));
        assert!(e.contains("cell 1 (") && e.contains("`threads`"), "{e}");
        let e = err(&format!("{base}target_ci = 2.0\nmin_time = 90.0"));
        assert!(e.contains("`min_time`"), "{e}");
        let e = err(&format!("{base}passes = []"));
        assert!(e.contains("`passes` is empty"), "{e}");
        let e = err(&format!("{base}repeat = [2, 2]"));
        assert!(e.contains("`repeat` lists 2 twice"), "{e}");
        // `tf32` is for the f32 cells: the others keep their precision.
        let m = parse(&format!(
            "{base}precisions = [\"f32\", \"bf16\"]\ntf32 = true"
        ))
        .unwrap();
        assert_eq!(m.spec(&m.cells[0]).precision, Precision::Tf32);
        let bf16 = m.spec(&m.cells[1]);
        assert_eq!(bf16.precision, Precision::Bf16);
        assert!(!bf16.engine_options.tf32);
    }

    /// Every run setting given as a list is an axis an `[[exclude]]` entry can name;
    /// a value not in the list, or a key that is no list, is refused.
    #[test]
    fn every_run_setting_axis_can_be_excluded_from() {
        let keys = [
            ("passes", "[1, 2]", "1"),
            ("warmup", "[0, 1]", "0"),
            ("seed", "[1, 2]", "1"),
            ("threads", "[1, 2]", "1"),
            ("min_time", "[1.0, 2.0]", "1.0"),
            ("max_time", "[1.0, 2.0]", "1"),
            ("target_ci", "[1.0, 2.0]", "1.0"),
            ("warmup_time", "[1.0, 2.0]", "1.0"),
            ("memory_limit", "[\"1MiB\", 2000000]", "1048576"),
            ("repeat", "[1, 2]", "1"),
            ("calibration", "[4, 8]", "4"),
            ("cudnn_benchmark", "[false, true]", "false"),
            ("tf32", "[false, true]", "false"),
            ("channels_last", "[false, true]", "false"),
        ];
        let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
        for (key, list, excluded) in keys {
            let m = parse(&format!(
                "{base}{key} = {list}\n[[exclude]]\n{key} = {excluded}"
            ))
            .unwrap_or_else(|e| panic!("{key}: {e}"));
            assert_eq!(m.cells.len(), 1, "{key}");
            assert_eq!(m.cells[0].run_settings.len(), 1, "{key}");
            assert_eq!(m.cells[0].run_settings[0].key(), key);
            assert_eq!(m.cells[0].index, 0);
        }
        // Every key the file takes as a run setting is listed above.
        let every: String = keys
            .iter()
            .map(|(k, l, _)| format!("{k} = {l}\n"))
            .collect();
        let file: MatrixFile = toml::from_str(&format!("{base}{every}")).unwrap();
        assert_eq!(run_settings_given(&file).unwrap().len(), keys.len());
        let e = err(&format!("{base}threads = [1, 2]\n[[exclude]]\nthreads = 3"));
        assert!(e.contains("threads 3 is not in `threads`"), "{e}");
        let e = err(&format!("{base}threads = 2\n[[exclude]]\nthreads = 2"));
        assert!(e.contains("`threads` is not a list"), "{e}");
        // With the other keys: resnet18 at threads 2 only.
        let m = parse(
            "models = [\"resnet18\", \"resnet34\"]\nengines = [\"burn-flex\"]\nthreads = [1, 2]\n[[exclude]]\nmodel = \"resnet18\"\nthreads = 1",
        )
        .unwrap();
        let left: Vec<(&str, Vec<RunSetting>)> = m
            .cells
            .iter()
            .map(|c| (c.model.as_str(), c.run_settings.clone()))
            .collect();
        assert_eq!(
            left,
            [
                ("resnet18", vec![RunSetting::Threads(2)]),
                ("resnet34", vec![RunSetting::Threads(1)]),
                ("resnet34", vec![RunSetting::Threads(2)]),
            ]
        );
    }

    /// The scenario and its lists vary fastest, after the run settings, so a file
    /// without them numbers its cells as before (the documented example's numbering).
    #[test]
    fn a_scenario_and_its_lists_are_axes_after_the_run_settings() {
        let documented = include_str!("../../../docs/src/cluster/matrix.toml").replacen(
            "modes = [\"train\"]",
            "modes = [\"infer\"]",
            1,
        );
        let m = Matrix::parse(&documented, ENGINES).unwrap();
        assert!(m.cells.iter().all(|c| c.scenario.is_none()));
        let with_axes = Matrix::parse(
            &documented.replacen(
                "passes = 10",
                "passes = 10\nthreads = [1, 2]\nscenario = \"offline\"\nin_flight = [1, 2]\nmin_queries = 64",
                1,
            ),
            ENGINES,
        )
        .unwrap();
        assert_eq!(with_axes.cells.len(), 4 * m.cells.len());
        for (i, c) in with_axes.cells.iter().enumerate() {
            let before = &m.cells[i / 4];
            // Offline keeps the matrix's batch sizes.
            assert_eq!(
                (&c.model, &c.engine, c.batch_size),
                (&before.model, &before.engine, before.batch_size)
            );
            let threads = [1, 1, 2, 2][i % 4];
            let in_flight = [1, 2, 1, 2][i % 4];
            assert_eq!(c.run_settings, [RunSetting::Threads(threads)]);
            assert_eq!(c.scenario_settings, [ScenarioSetting::InFlight(in_flight)]);
            let spec = with_axes.spec(c);
            let scenario = spec.scenario.expect("the cell's scenario");
            assert_eq!(
                scenario,
                ScenarioSpec {
                    in_flight,
                    min_queries: 64,
                    ..ScenarioSpec::new(ScenarioKind::Offline)
                }
            );
            assert_eq!(spec.threads, Some(threads));
        }
        assert!(
            with_axes.cells[3]
                .describe()
                .ends_with("batch 16, f32, threads 2, scenario offline, in_flight 2"),
            "{}",
            with_axes.cells[3].describe()
        );
    }

    /// Every scenario key reaches the spec of the cells whose scenario takes it; each
    /// scenario starts from its own defaults, and a query scenario's batch is a query's
    /// samples when the matrix gives no `batch_sizes`.
    #[test]
    fn each_scenario_key_reaches_the_scenarios_that_take_it() {
        let m = parse(
            r#"models = ["resnet18"]
engines = ["burn-flex"]
modes = ["infer"]
scenario = ["single-stream", "multi-stream", "server", "offline"]
samples_per_query = 4
qps = [10, 20.5]
latency_bound = [15, 30]
in_flight = 2
scenario_time = 0.5
min_queries = 600
find_peak = true"#,
        )
        .unwrap();
        // single-stream 1, multi-stream 1, server 2 qps × 2 bounds, offline 1.
        let kinds: Vec<(ScenarioKind, usize)> = m
            .cells
            .iter()
            .map(|c| (c.scenario.as_ref().unwrap().kind, c.batch_size))
            .collect();
        assert_eq!(
            kinds,
            [
                (ScenarioKind::SingleStream, 1),
                (ScenarioKind::MultiStream, 4),
                (ScenarioKind::Server, 1),
                (ScenarioKind::Server, 1),
                (ScenarioKind::Server, 1),
                (ScenarioKind::Server, 1),
                (ScenarioKind::Offline, 16),
            ]
        );
        let common = |kind| ScenarioSpec {
            min_duration_s: 0.5,
            min_queries: 600,
            ..ScenarioSpec::new(kind)
        };
        let specs: Vec<ScenarioSpec> = m
            .cells
            .iter()
            .map(|c| m.spec(c).scenario.unwrap())
            .collect();
        assert_eq!(specs[0], common(ScenarioKind::SingleStream));
        assert_eq!(
            specs[1],
            ScenarioSpec {
                samples_per_query: 4,
                ..common(ScenarioKind::MultiStream)
            }
        );
        let server = |qps, ms| ScenarioSpec {
            target_qps: Some(qps),
            latency_bound_ms: Some(ms),
            find_peak: true,
            in_flight: 2,
            ..common(ScenarioKind::Server)
        };
        assert_eq!(
            specs[2..6],
            [
                server(10.0, 15.0),
                server(10.0, 30.0),
                server(20.5, 15.0),
                server(20.5, 30.0)
            ]
        );
        assert_eq!(
            specs[6],
            ScenarioSpec {
                in_flight: 2,
                ..common(ScenarioKind::Offline)
            }
        );
        assert_eq!(
            m.cells[3].scenario_settings,
            [
                ScenarioSetting::Scenario(ScenarioKind::Server),
                ScenarioSetting::Qps(10.0),
                ScenarioSetting::LatencyBound(30.0)
            ]
        );
        assert!(
            m.cells[3]
                .describe()
                .ends_with("infer, batch 1, f32, scenario server, qps 10, latency_bound 30"),
            "{}",
            m.cells[3].describe()
        );
        // The spec is the run's own: the scenario's batch, every other field run's.
        let spec = m.spec(&m.cells[1]);
        assert_eq!(spec.batch, Batches::Sizes(vec![4]));
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(m.base.scenario, None);
    }

    /// A scenario key the matrix cannot use is refused naming it: without `scenario`,
    /// for no scenario of the matrix, with a mode that is not inference, or a value
    /// `cnnbench run` would refuse (naming the cell and the matrix's key).
    #[test]
    fn scenario_keys_that_cannot_be_run_are_refused_naming_the_key() {
        let base = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
        let infer = format!("{base}modes = [\"infer\"]\n");
        let server = format!("{infer}scenario = \"server\"\nlatency_bound = 15\n");
        let e = err(&format!("{infer}qps = 100"));
        assert!(
            e.contains("`qps`") && e.contains("the matrix gives no `scenario`"),
            "{e}"
        );
        let e = err(&format!("{infer}scenario = \"offline\"\nqps = [100, 200]"));
        assert!(
            e.contains("`qps`: it is a setting of the server scenario")
                && e.contains("`scenario` is offline: it would reach no cell"),
            "{e}"
        );
        let e = err(&format!(
            "{infer}scenario = [\"single-stream\", \"server\"]\nsamples_per_query = 2\nqps = 1\nlatency_bound = 1"
        ));
        assert!(
            e.contains("`samples_per_query`")
                && e.contains("multi-stream scenario")
                && e.contains("single-stream, server"),
            "{e}"
        );
        let e = err(&format!("{base}scenario = \"single-stream\""));
        assert!(
            e.contains("`scenario`")
                && e.contains("modes include train")
                && e.contains("modes = [\"infer\"]"),
            "{e}"
        );
        let e = err(&format!(
            "{base}modes = [\"infer\", \"step\"]\nscenario = \"offline\""
        ));
        assert!(e.contains("modes include step"), "{e}");
        let e = err(&format!("{infer}scenario = \"server\"\nqps = 100"));
        assert!(
            e.contains("cell 0 (")
                && e.contains("--latency-bound")
                && e.contains("(in the matrix: `scenario`, `latency_bound`)"),
            "{e}"
        );
        let e = err(&format!("{server}qps = [100, 0]"));
        assert!(e.contains("cell 1 (") && e.contains("`qps`"), "{e}");
        let e = err(&format!("{server}qps = 10\nin_flight = 65"));
        assert!(
            e.contains("--in-flight 65") && e.contains("`in_flight`"),
            "{e}"
        );
        let e = err(&format!("{server}qps = 10\nscenario_time = -1"));
        assert!(
            e.contains("`scenario_time`") && !e.contains("`scenario`,"),
            "{e}"
        );
        let e = err(&format!("{server}find_peak = true\nmin_queries = 10"));
        assert!(
            e.contains("`find_peak`") && e.contains("`min_queries`"),
            "{e}"
        );
        let e = err(&format!(
            "{infer}scenario = \"multi-stream\"\nsamples_per_query = 0"
        ));
        assert!(e.contains("`samples_per_query`"), "{e}");
        // Given batch sizes are kept, and must be a query's samples.
        let e = err(&format!("{server}qps = 10\nbatch_sizes = [1, 2]"));
        assert!(
            e.contains("cell 1 (")
                && e.contains("a server query's 1 sample(s)")
                && e.contains("`batch_sizes` gives 2"),
            "{e}"
        );
        let e = err(&format!(
            "{infer}scenario = \"multi-stream\"\nbatch_sizes = [4]"
        ));
        assert!(e.contains("set `samples_per_query`"), "{e}");
        let m = parse(&format!(
            "{infer}scenario = \"multi-stream\"\nbatch_sizes = [4]\nsamples_per_query = 4"
        ))
        .unwrap();
        assert_eq!(m.spec(&m.cells[0]).batch, Batches::Sizes(vec![4]));
        let e = err(&format!("{server}qps = 10\nmin_time = 1.0"));
        assert!(e.contains("`min_time`"), "{e}");
        // Lists are axes like the others: not empty, nothing twice, each value typed.
        let e = err(&format!("{infer}scenario = []"));
        assert!(e.contains("`scenario` is empty"), "{e}");
        let e = err(&format!("{infer}scenario = [\"offline\", \"offline\"]"));
        assert!(e.contains("`scenario` lists offline twice"), "{e}");
        let e = err(&format!("{server}qps = [5, 5.0]"));
        assert!(e.contains("`qps` lists 5 twice"), "{e}");
        let e = err(&format!("{infer}scenario = \"sever\""));
        assert!(e.contains("sever") && e.contains("scenario"), "{e}");
        let e = err(&format!("{server}qps = 10\nsamples_per_query = [1, 2]"));
        assert!(e.contains("samples_per_query"), "{e}");
    }

    /// `scenario`, `qps`, `latency_bound` and `in_flight` as lists are axes an
    /// `[[exclude]]` entry can name; a value not listed, or a key that is no list, is
    /// refused.
    #[test]
    fn every_scenario_axis_can_be_excluded_from() {
        let base = "models = [\"resnet18\", \"resnet34\"]\nengines = [\"burn-flex\"]\nmodes = [\"infer\"]\n";
        let m = parse(&format!(
            "{base}scenario = [\"server\", \"offline\"]\nqps = [10, 20]\nlatency_bound = [5, 50]\nin_flight = [1, 2]\n[[exclude]]\nscenario = \"offline\"\nin_flight = 2\n[[exclude]]\nmodel = \"resnet34\"\nqps = 20\n[[exclude]]\nlatency_bound = 5\n"
        ))
        .unwrap();
        // Per model: server 2 × 2 × 2 and offline 2, less offline at 2 in flight, the
        // bound 5, and for resnet34 20 qps.
        let left: Vec<(&str, Vec<ScenarioSetting>)> = m
            .cells
            .iter()
            .map(|c| (c.model.as_str(), c.scenario_settings.clone()))
            .collect();
        use ScenarioSetting::{InFlight, LatencyBound, Qps, Scenario};
        let server = Scenario(ScenarioKind::Server);
        let offline = Scenario(ScenarioKind::Offline);
        assert_eq!(
            left,
            [
                (
                    "resnet18",
                    vec![server.clone(), Qps(10.0), LatencyBound(50.0), InFlight(1)]
                ),
                (
                    "resnet18",
                    vec![server.clone(), Qps(10.0), LatencyBound(50.0), InFlight(2)]
                ),
                (
                    "resnet18",
                    vec![server.clone(), Qps(20.0), LatencyBound(50.0), InFlight(1)]
                ),
                (
                    "resnet18",
                    vec![server.clone(), Qps(20.0), LatencyBound(50.0), InFlight(2)]
                ),
                ("resnet18", vec![offline.clone(), InFlight(1)]),
                (
                    "resnet34",
                    vec![server.clone(), Qps(10.0), LatencyBound(50.0), InFlight(1)]
                ),
                (
                    "resnet34",
                    vec![server, Qps(10.0), LatencyBound(50.0), InFlight(2)]
                ),
                ("resnet34", vec![offline, InFlight(1)]),
            ]
        );
        assert!(m.cells.iter().enumerate().all(|(i, c)| c.index == i));
        let server = format!("{base}scenario = \"server\"\nlatency_bound = 15\n");
        let e = err(&format!("{server}qps = [10, 20]\n[[exclude]]\nqps = 30"));
        assert!(
            e.contains("exclude entry 1") && e.contains("qps 30 is not in `qps`"),
            "{e}"
        );
        let e = err(&format!("{server}qps = 10\n[[exclude]]\nqps = 10"));
        assert!(e.contains("`qps` is not a list"), "{e}");
        let e = err(&format!(
            "{server}qps = [10, 20]\n[[exclude]]\nscenario = \"server\""
        ));
        assert!(e.contains("`scenario` is not a list"), "{e}");
        let e = err(&format!("{server}qps = 10\n[[exclude]]\nscenario_time = 1"));
        assert!(
            e.contains("scenario_time") && e.contains("unknown field"),
            "{e}"
        );
    }

    /// A flag is named by its matrix key where it stands as a word.
    #[test]
    fn refusals_name_the_matrix_keys_of_the_flags_they_name() {
        let m = with_matrix_keys("--scenario-time must be a number of seconds".into());
        assert!(m.ends_with("(in the matrix: `scenario_time`)"), "{m}");
        let m = with_matrix_keys("-b and --samples-per-query must agree".into());
        assert!(
            m.ends_with("(in the matrix: `batch_sizes`, `samples_per_query`)"),
            "{m}"
        );
        let m = with_matrix_keys("--latency-bound must be positive".into());
        assert!(m.ends_with("(in the matrix: `latency_bound`)"), "{m}");
    }

    #[test]
    fn the_format_and_version_are_required_and_checked() {
        let body = "models = [\"resnet18\"]\nengines = [\"burn-flex\"]\n";
        let e = Matrix::parse(body, ENGINES).unwrap_err().to_string();
        assert!(e.contains("format = \"cnnbench-matrix\""), "{e}");
        let e = Matrix::parse(
            &format!("format = \"cnnbench-matrix\"\nversion = 2\n{body}"),
            ENGINES,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("version 2"), "{e}");
        let e = Matrix::parse(
            &format!("format = \"cnnbench-model\"\nversion = 1\n{body}"),
            ENGINES,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("cnnbench-model"), "{e}");
    }
}
