//! The matrix file, schema `cnnbench-matrix` version 1, and its cells.
//!
//! ```toml
//! format = "cnnbench-matrix"
//! version = 1
//! models = ["resnet18", "resnet50"]
//! engines = ["burn-flex", "torch-cpu"]
//! batch_sizes = [16, 32]
//! modes = ["train"]
//! passes = 10
//!
//! [[exclude]]
//! model = "resnet50"
//! batch_size = 32
//!
//! # An engine's own settings: a value sets it for the engine's cells, a list is an
//! # axis of them. Only the engine's provider knows its keys (`cnnbench engines`).
//! [engine_settings.openvino-cpu]
//! hint = ["latency", "throughput"]
//! streams = 2
//! ```
//!
//! Cells are numbered in the order models, engines, the engine's settings (its keys in
//! alphabetical order, each list's values in the order written), image sizes, batch
//! sizes, modes, precisions (the last varies fastest). Changing the meaning of a key
//! bumps [`MATRIX_VERSION`].

use cnnbench_engine::{Mode, Precision};
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
    #[serde(default = "default_batch_sizes")]
    batch_sizes: Vec<usize>,
    image_sizes: Option<Vec<ImageSizeSpec>>,
    #[serde(default = "default_modes")]
    modes: Vec<Mode>,
    #[serde(default = "default_precisions")]
    precisions: Vec<Precision>,
    #[serde(default = "default_passes")]
    passes: usize,
    #[serde(default = "default_warmup")]
    warmup: usize,
    #[serde(default)]
    seed: u64,
    threads: Option<usize>,
    min_time: Option<f64>,
    max_time: Option<f64>,
    target_ci: Option<f64>,
    warmup_time: Option<f64>,
    #[serde(default)]
    cudnn_benchmark: bool,
    #[serde(default)]
    tf32: bool,
    #[serde(default)]
    channels_last: bool,
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

fn default_batch_sizes() -> Vec<usize> {
    vec![16]
}
fn default_modes() -> Vec<Mode> {
    vec![Mode::Train]
}
fn default_precisions() -> Vec<Precision> {
    vec![Precision::F32]
}
fn default_passes() -> usize {
    10
}
fn default_warmup() -> usize {
    1
}

/// One `[[exclude]]` entry: the cells matching every key given are dropped.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ExcludeEntry {
    model: Option<String>,
    engine: Option<String>,
    batch_size: Option<usize>,
    image_size: Option<ImageSizeSpec>,
    mode: Option<Mode>,
    precision: Option<Precision>,
}

/// The settings every cell runs with (the `run` options that are not axes).
#[derive(Clone, Debug, PartialEq)]
pub struct RunSettings {
    pub passes: usize,
    pub warmup: usize,
    pub seed: u64,
    /// The engine's thread pool; `None`: all the cores the job was given.
    pub threads: Option<usize>,
    pub min_time: Option<f64>,
    pub max_time: Option<f64>,
    pub target_ci: Option<f64>,
    pub warmup_time: Option<f64>,
    pub cudnn_benchmark: bool,
    pub tf32: bool,
    pub channels_last: bool,
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
}

impl Cell {
    /// `resnet18 burn-flex train b16 f32` (with `224x224` when the matrix gives sizes).
    pub fn describe(&self) -> String {
        let size = self.image_size.map_or(String::new(), |s| format!(" {s}"));
        let settings: String = self
            .settings
            .iter()
            .map(|(k, v)| format!(" {k}={v}"))
            .collect();
        format!(
            "{}{size} on {}{settings}, {}, batch {}, {}",
            self.model,
            self.engine,
            self.mode,
            self.batch_size,
            self.precision.as_str()
        )
    }
}

/// A checked matrix: its cells and settings, and the text it was read from (which the
/// generated jobs carry, so that a later edit of the file cannot renumber a running array).
#[derive(Clone, Debug)]
pub struct Matrix {
    pub cells: Vec<Cell>,
    pub settings: RunSettings,
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
        check_axis("batch_sizes", &file.batch_sizes, usize::to_string)?;
        if file.batch_sizes.contains(&0) {
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
        let settings = settings(&file)?;
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
            file.batch_sizes.len(),
            file.modes.len(),
            file.precisions.len(),
        ]
        .iter()
        .map(|&n| n as u128)
        .product();
        if cells > MAX_CELLS as u128 {
            return Err(MatrixError::TooManyCells { cells });
        }
        let excludes = file
            .exclude
            .iter()
            .enumerate()
            .map(|(i, e)| Exclusion::check(i + 1, e, &file, &image_sizes))
            .collect::<Result<Vec<_>, _>>()?;
        let mut cells = Vec::new();
        for model in &models {
            for (engine, combinations) in &engines {
                for settings in combinations {
                    for &image_size in &image_sizes {
                        for &batch_size in &file.batch_sizes {
                            for &mode in &file.modes {
                                for &precision in &file.precisions {
                                    let cell = Cell {
                                        index: cells.len(),
                                        model: model.clone(),
                                        engine: (*engine).clone(),
                                        settings: settings.clone(),
                                        image_size,
                                        batch_size,
                                        mode,
                                        precision,
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
        if cells.is_empty() {
            return Err(MatrixError::AllExcluded);
        }
        check_sizes_fit(&cells)?;
        Ok(Matrix {
            cells,
            settings,
            text: text.to_string(),
        })
    }

    /// The cell with this number, or an error that gives the range.
    pub fn cell(&self, index: usize) -> Result<&Cell, MatrixError> {
        self.cells.get(index).ok_or(MatrixError::NoSuchCell {
            index,
            count: self.cells.len(),
        })
    }

    /// What a cell runs: its run spec, with the matrix's settings and `cnnbench run`'s
    /// defaults for everything the matrix does not set. The task that runs the cell
    /// receives this spec itself, so no setting is lost on the way.
    pub fn spec(&self, cell: &Cell) -> RunSpec {
        let s = &self.settings;
        let mut spec = RunSpec::new(
            vec![ModelRef::Zoo {
                name: cell.model.clone(),
            }],
            &cell.engine,
        );
        spec.mode = cell.mode;
        spec.precision = cell.precision;
        spec.batch = Batches::Sizes(vec![cell.batch_size]);
        spec.image_sizes = cell.image_size.map(|size| vec![size]);
        spec.warmup = s.warmup;
        spec.passes = s.passes;
        spec.seed = s.seed;
        spec.threads = s.threads;
        spec.min_time_s = s.min_time;
        spec.max_time_s = s.max_time;
        spec.target_ci_pct = s.target_ci;
        spec.warmup_time_s = s.warmup_time;
        spec.engine_options.cudnn_benchmark = s.cudnn_benchmark;
        // The matrix's `tf32` is for its f32 cells, which it makes tf32 cells.
        spec.engine_options.tf32 =
            s.tf32 && matches!(cell.precision, Precision::F32 | Precision::Tf32);
        spec.settle_tf32();
        spec.engine_options.channels_last = s.channels_last;
        spec.engine_options.settings = cell.settings.clone();
        spec
    }
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

fn settings(file: &MatrixFile) -> Result<RunSettings, MatrixError> {
    if file.passes == 0 {
        return Err(MatrixError::BadValue {
            key: "passes",
            message: "at least 1 timed pass is needed".into(),
        });
    }
    if file.threads == Some(0) {
        return Err(MatrixError::BadValue {
            key: "threads",
            message: "at least 1 thread is needed (leave it out for all cores)".into(),
        });
    }
    for (key, value) in [
        ("min_time", file.min_time),
        ("max_time", file.max_time),
        ("target_ci", file.target_ci),
        ("warmup_time", file.warmup_time),
    ] {
        if let Some(v) = value {
            if !(v > 0.0 && v.is_finite()) {
                return Err(MatrixError::BadValue {
                    key,
                    message: format!("must be a positive number, not {v}"),
                });
            }
        }
    }
    if let (Some(min), Some(max)) = (file.min_time, file.max_time) {
        if min > max {
            return Err(MatrixError::BadValue {
                key: "min_time",
                message: format!("{min} s is above max_time ({max} s)"),
            });
        }
    }
    Ok(RunSettings {
        passes: file.passes,
        warmup: file.warmup,
        seed: file.seed,
        threads: file.threads,
        min_time: file.min_time,
        max_time: file.max_time,
        target_ci: file.target_ci,
        warmup_time: file.warmup_time,
        cudnn_benchmark: file.cudnn_benchmark,
        tf32: file.tf32,
        channels_last: file.channels_last,
    })
}

/// An exclude entry checked against the axes: each value it names is one of theirs.
struct Exclusion {
    model: Option<String>,
    engine: Option<String>,
    batch_size: Option<usize>,
    image_size: Option<ImageSize>,
    mode: Option<Mode>,
    precision: Option<Precision>,
}

impl Exclusion {
    fn check(
        index: usize,
        e: &ExcludeEntry,
        file: &MatrixFile,
        image_sizes: &[Option<ImageSize>],
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
        if let Some(b) = e.batch_size {
            if !file.batch_sizes.contains(&b) {
                return Err(not_in("batch_size", b.to_string(), "batch_sizes"));
            }
        }
        let image_size = match &e.image_size {
            None => None,
            Some(spec) => {
                let size = spec.resolve("exclude.image_size")?;
                if !image_sizes.contains(&Some(size)) {
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
        let exclusion = Exclusion {
            model,
            engine: e.engine.clone(),
            batch_size: e.batch_size,
            image_size,
            mode: e.mode,
            precision: e.precision,
        };
        if exclusion.model.is_none()
            && exclusion.engine.is_none()
            && exclusion.batch_size.is_none()
            && exclusion.image_size.is_none()
            && exclusion.mode.is_none()
            && exclusion.precision.is_none()
        {
            return Err(MatrixError::Exclude {
                index,
                message: "it names no key, so it would exclude every cell; give model, engine, batch_size, image_size, mode or precision".into(),
            });
        }
        Ok(exclusion)
    }

    fn matches(&self, c: &Cell) -> bool {
        self.model.as_ref().is_none_or(|m| *m == c.model)
            && self.engine.as_ref().is_none_or(|e| *e == c.engine)
            && self.batch_size.is_none_or(|b| b == c.batch_size)
            && self.image_size.is_none_or(|s| Some(s) == c.image_size)
            && self.mode.is_none_or(|m| m == c.mode)
            && self.precision.is_none_or(|p| p == c.precision)
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
        assert_eq!(m.settings.passes, 10);
        assert_eq!(m.settings.warmup, 1);
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
