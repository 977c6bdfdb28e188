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
//! scenario_time = 60     # every scenario: seconds at least
//! min_queries = 1000     # every scenario (any of these keys may be a list too)
//! ```
//!
//! Cells are numbered in the order models, engines, the engine's settings (its keys in
//! alphabetical order, each list's values in the order written), image sizes, batch
//! sizes, modes, precisions, the run settings given as lists (in the order of
//! `keys::KEYS`), then the scenarios in the order written, each with the lists of the
//! keys it takes (in the same order: `qps`, `latency_bound`, `in_flight`, …); the last
//! varies fastest.
//!
//! The run settings and scenario keys are read generically ([`axes`]): each value, one
//! or a list's, is read through [`CellKeys`] where it stands, and each cell's values
//! are deserialised into it, so a key a matrix may set is a field of `CellKeys`, a line
//! of `keys::KEYS` (its flag and the cells it reaches) and a line of its `apply`.
//! A file without such lists numbers its cells as before they could be given. Changing
//! the meaning of a key bumps [`MATRIX_VERSION`].

mod axes;
mod cell;
mod draft;
mod engine_settings;
mod exclude;
mod keys;

use axes::KeyAxes;
pub use axes::KeyValue;
pub use cell::Cell;
use cnnbench_engine::{Mode, Precision};
use cnnbench_results::scenario::{ScenarioSetting, ScenarioSpec};
use cnnbench_results::SettingsMap;
pub use draft::{ExcludeDraft, MatrixDraft};
use engine_settings::{setting_combinations, SettingValues};
use exclude::{Axes, Exclusion};
pub use keys::{CellKeys, MemoryAmount};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

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
    /// A key that is neither one of the file's own nor a cell's.
    #[error("{0}besides those, a matrix takes a cell's run settings and scenario keys: {keys}", keys = cell_key_names())]
    UnknownKey(toml::de::Error),
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

/// The file's own keys: the axes a cell is made of, the heap policy and the engines'
/// settings. The run settings and scenario keys are [`CellKeys`], read generically
/// ([`axes`]); `[[exclude]]` is read with the axes it names ([`exclude`]).
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
    /// The heap policy, one for the whole matrix: it is set when cnnbench starts.
    allocator: Option<String>,
    /// Per engine, its own settings: a value, or a list that is an axis of its cells.
    #[serde(default)]
    engine_settings: BTreeMap<String, BTreeMap<String, SettingValues>>,
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

/// The keys of a cell a matrix takes beside its own (each one value or a list): `run`'s
/// options of the same names, so that `run --plan` can refuse them beside a matrix.
pub fn cell_keys() -> impl Iterator<Item = &'static str> {
    keys::KEYS.iter().map(|k| k.name)
}

/// The names of the keys of a cell, for a refusal of an unknown key.
fn cell_key_names() -> String {
    cell_keys().collect::<Vec<_>>().join(", ")
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

/// A refusal of the toml reader, with the file's text to show the line.
fn toml_error(text: &str) -> impl Fn(toml::de::Error) -> MatrixError + '_ {
    move |mut e| {
        e.set_input(Some(text));
        if e.message().starts_with("unknown field") {
            MatrixError::UnknownKey(e)
        } else {
            MatrixError::Toml(e)
        }
    }
}

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
        let root = DeTable::parse(text).map_err(toml_error(text))?;
        // The file's own keys are read as `MatrixFile`, the cells' keys generically.
        let mut own = DeTable::new();
        let mut exclude = None;
        for (name, value) in root.get_ref().iter() {
            if name.get_ref() == "exclude" {
                exclude = Some(value);
            } else if keys::find(name.get_ref()).is_none() {
                own.insert(name.clone(), value.clone());
            }
        }
        let file = MatrixFile::deserialize(serde::de::IntoDeserializer::into_deserializer(
            Spanned::new(root.span(), own),
        ))
        .map_err(toml_error(text))?;
        match (&file.format, file.version) {
            (None, _) | (_, None) => return Err(MatrixError::NotAMatrix),
            (Some(f), _) if f != MATRIX_FORMAT => return Err(MatrixError::WrongFormat(f.clone())),
            (_, Some(v)) if v != MATRIX_VERSION => return Err(MatrixError::WrongVersion(v)),
            _ => {}
        }
        let key_axes = KeyAxes::read(text, root.get_ref().iter())?;
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
        key_axes.check_reach()?;
        // A scenario serves inference (`run --scenario` needs `--mode infer`): a matrix
        // that also lists train or step is refused, not cut down to its infer cells,
        // so that the file says what runs.
        let not_infer: Vec<String> = file
            .modes
            .iter()
            .filter(|m| **m != Mode::Infer)
            .map(|m| m.to_string())
            .collect();
        if key_axes.kinds().iter().any(Option::is_some) && !not_infer.is_empty() {
            return Err(MatrixError::BadValue {
                key: "scenario",
                message: format!(
                    "a scenario serves inference, and the matrix's modes include {} (`modes` defaults to train): give `modes = [\"infer\"]`",
                    not_infer.join(", ")
                ),
            });
        }
        let mut base = RunSpec::new(Vec::new(), "");
        if let Some(policy) = &file.allocator {
            base.allocator = policy.clone();
        }
        key_axes.base()?.apply(&mut base);
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
        ]
        .iter()
        .map(|&n| n as u128)
        .product::<u128>()
        .saturating_mul(key_axes.count());
        if cells > MAX_CELLS as u128 {
            return Err(MatrixError::TooManyCells { cells });
        }
        let excludes = match exclude.map(|e| e.get_ref()) {
            None => Vec::new(),
            Some(DeValue::Array(entries)) => entries
                .iter()
                .enumerate()
                .map(|(i, entry)| {
                    let axes = Axes {
                        image_sizes: &image_sizes,
                        batch_sizes: &batch_sizes,
                        keys: &key_axes,
                    };
                    Exclusion::read(i + 1, text, entry, &file, axes)
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err(MatrixError::BadValue {
                    key: "exclude",
                    message: "write each entry as `[[exclude]]` with its keys below".into(),
                })
            }
        };
        let key_cells = key_axes.cells()?;
        let mut cells = Vec::new();
        for model in &models {
            for (engine, combinations) in &engines {
                for settings in combinations {
                    for &image_size in &image_sizes {
                        for &batch_size in &batch_sizes {
                            for &mode in &file.modes {
                                for &precision in &file.precisions {
                                    for values in &key_cells {
                                        let scenario = values.scenario.clone();
                                        let batch_size = match file.batch_sizes {
                                            Some(_) => batch_size,
                                            None => {
                                                query_batch(scenario.as_ref()).unwrap_or(batch_size)
                                            }
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
                                            keys: values.keys.clone(),
                                            listed: values.listed.clone(),
                                            scenario,
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
                .and_then(|()| check_batcher(&cell.keys))
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
        cell.keys.apply(&mut spec);
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

/// `batch_timeout` is the dynamic batcher's, which `max_batch` turns on (as
/// `--batch-timeout` needs `--max-batch`).
fn check_batcher(keys: &CellKeys) -> Result<(), String> {
    match (keys.max_batch, keys.batch_timeout) {
        (None, Some(_)) => Err("`batch_timeout` is how long the dynamic batcher holds a batch open, and the cell has no batcher: give `max_batch` too, or leave it out".into()),
        (Some(_) | None, _) => Ok(()),
    }
}

/// A refusal of `RunSpec::validate` names `run`'s flags; the matrix's keys for them are
/// added, so that the user knows what to edit in the file. A flag is named where it
/// stands as a word (`--scenario` is not named by `--scenario-time`).
fn with_matrix_keys(message: String) -> String {
    const OWN: [(&str, &str); 3] = [
        ("heap policy", "allocator"),
        ("--mode", "modes"),
        ("-b", "batch_sizes"),
    ];
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '-');
    let mentions = |flag: &str| {
        message.match_indices(flag).any(|(at, _)| {
            !word(message[..at].chars().next_back())
                && !word(message[at + flag.len()..].chars().next())
        })
    };
    let named: Vec<String> = OWN
        .into_iter()
        .chain(keys::KEYS.iter().map(|k| (k.flag, k.name)))
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
    scenario
        .kind
        .rules()
        .batch_is_the_query
        .then_some(scenario.samples_per_query)
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
    let takes_samples = cell
        .scenario
        .as_ref()
        .is_some_and(|s| s.kind.takes(ScenarioSetting::SamplesPerQuery));
    let or_samples = if takes_samples {
        ", set `samples_per_query` to it"
    } else {
        ""
    };
    Err(format!(
        "a {kind} query's {samples} sample(s) are the batch the engine computes, and `batch_sizes` gives {}: leave out `batch_sizes` (the batch then follows the scenario){or_samples}, or exclude the cell",
        cell.batch_size
    ))
}

/// An axis must list something, and nothing twice (it would run the same cell twice).
/// A list longer than [`MAX_CELLS`] makes more cells than that alone, and is refused
/// before its values are compared pair by pair (half a million values, which a
/// megabyte holds, took minutes).
fn check_axis<T: PartialEq>(
    key: &'static str,
    values: &[T],
    show: impl Fn(&T) -> String,
) -> Result<(), MatrixError> {
    if values.is_empty() {
        return Err(MatrixError::Empty(key));
    }
    if values.len() > MAX_CELLS {
        return Err(MatrixError::TooManyCells {
            cells: values.len() as u128,
        });
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
mod tests;
