//! The run specification: everything that determines a measurement, in one type.
//!
//! `cnnbench run` turns its command line into a [`RunSpec`] once; a matrix cell of
//! `cnnbench plan` is one; the ranks `--nproc` starts and the probes of `-b max` receive
//! one (serialised, not rebuilt as arguments); and every result records the spec of its
//! own point, so that `cnnbench run --again RESULT.json` reruns exactly what produced it.
//! A setting added here reaches every one of those paths, or fails to compile.

use crate::engine_types::{Mode, Precision};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

/// What determines a measurement: the models, the engine and its options, the work of a
/// pass, the stop rule and the process's settings. Output (folder, table, label) is not
/// in it: the same spec gives the same numbers wherever they are written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSpec {
    /// In order; empty is refused.
    pub models: Vec<ModelRef>,
    pub engine: String,
    #[serde(default)]
    pub engine_options: EngineSettings,
    pub mode: Mode,
    pub precision: Precision,
    pub batch: Batches,
    /// Every model at each of these sizes; `None`: each model's own input size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_sizes: Option<Vec<ImageSize>>,
    /// Passes run and dropped before the timed ones.
    pub warmup: usize,
    /// Timed passes (at least this many under a time or confidence rule).
    pub passes: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_time_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci_pct: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_time_s: Option<f64>,
    /// The memory a batch must fit in (`--memory-limit`), else the device's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    pub seed: u64,
    /// The engine's thread pool; `None`: all cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<usize>,
    /// The heap policy (`keep` or `system`): it is set when the process starts, so a
    /// rerun under another policy is refused rather than silently different.
    pub allocator: String,
    /// Training data-parallel across processes; `None`: one process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_parallel: Option<DataParallel>,
    /// Runs (fresh processes) of each configuration, interleaved A-B-B-A… across the
    /// configurations (`--repeat`): processes differ more than the passes of one do, so
    /// a comparison needs several (`compare` judges runs).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub repeat: usize,
    /// Inference under one of MLPerf LoadGen's load scenarios (`--scenario`) instead of
    /// the closed loop of passes; `None`: the passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<crate::scenario::ScenarioSpec>,
    /// Calibration images of an int8 run (`--calibration N`); `None`:
    /// [`crate::quantization::DEFAULT_CALIBRATION_IMAGES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_images: Option<usize>,
}

fn one() -> usize {
    1
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

/// The most runs `--repeat` starts per configuration.
pub const MAX_REPEAT: usize = 100;

/// The most processes one `cnnbench run` starts for its configurations and their
/// repeats (`--again` results × `--repeat`, a spec's points × `--repeat`): beyond it a
/// typo or a hostile list of files would start processes for days. More is a matrix
/// (`plan`), whose cells run apart.
pub const MAX_RUN_PROCESSES: usize = 1000;

/// Refuses `configurations` × `runs` above [`MAX_RUN_PROCESSES`], in the command line's
/// words.
pub fn check_process_count(configurations: usize, runs: usize) -> Result<(), String> {
    let processes = configurations.saturating_mul(runs);
    if processes > MAX_RUN_PROCESSES {
        return Err(format!(
            "{configurations} configuration(s) × {runs} run(s) is {processes} processes, more than the {MAX_RUN_PROCESSES} one command starts: fewer --again results or a smaller --repeat, or list the configurations in a matrix file and run its cells (cnnbench plan)"
        ));
    }
    Ok(())
}

/// The most models one run takes. A run builds every model's graph before the first
/// measurement: a result file of 10⁵ models (3 MB of the 256 MiB a result may be) took
/// 2.4 GB and 20 s before anything ran. The zoo has far fewer; a sweep larger than this
/// is a matrix (`plan`), whose cells run apart.
pub const MAX_MODELS_PER_RUN: usize = 1000;

/// Refuses more than [`MAX_MODELS_PER_RUN`] models, in the words of the command line.
/// Part of [`RunSpec::validate`], and called on its own where a spec's models would be
/// read (model files hashed) before the spec is validated.
pub fn check_model_count(models: usize) -> Result<(), String> {
    if models > MAX_MODELS_PER_RUN {
        return Err(format!(
            "{models} models in one run, more than {MAX_MODELS_PER_RUN}: split them into several runs, or list them in a matrix file and run its cells (cnnbench plan)"
        ));
    }
    Ok(())
}

/// A model as the user named it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ModelRef {
    /// A zoo model by the name given (any alias).
    Zoo { name: String },
    /// A model file, with the SHA-256 of its bytes when the run started: a rerun of a
    /// file that changed since is refused.
    File { path: PathBuf, sha256: String },
}

impl ModelRef {
    /// How the user would write it: the zoo name or the file's path.
    pub fn describe(&self) -> String {
        match self {
            ModelRef::Zoo { name } => name.clone(),
            ModelRef::File { path, .. } => path.display().to_string(),
        }
    }
}

/// The batch sizes to run: each given size, or the largest that fits (`-b max`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum Batches {
    Sizes(Vec<usize>),
    Max,
}

/// An engine's own settings as given (`--engine-setting KEY=VALUE`, a matrix's
/// `[engine_settings.ENGINE]`): key → value text. Only the engine's provider parses them
/// (`cnnbench_engine::settings`), so that a setting of one engine is a field of that
/// engine's crate and nothing here.
pub type SettingsMap = BTreeMap<String, String>;

/// The engine options every engine may be given, typed, and the engine's own settings
/// as one map; each engine reads the shared ones it has and refuses own settings it
/// does not take.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "EngineSettingsAsWritten")]
pub struct EngineSettings {
    /// The GPU (CUDA device or Vulkan adapter); `None`: 0, or LOCAL_RANK in a
    /// data-parallel run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<usize>,
    pub allow_cpu_adapter: bool,
    pub cudnn_benchmark: bool,
    /// `--tf32`, the spelling older than the `tf32` precision: an f32 run with it is a
    /// `tf32` run ([`RunSpec::settle_tf32`]).
    pub tf32: bool,
    pub channels_last: bool,
    /// The engine's own settings, as given.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: SettingsMap,
}

/// [`EngineSettings`] as files have written it: version-2 files before the engines
/// declared their own settings kept OpenVINO's hint, the pytorch engines' Python and
/// `torch.compile`'s mode and freezing as fields of their own; they read as the same
/// settings given by key.
#[derive(Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct EngineSettingsAsWritten {
    device: Option<usize>,
    allow_cpu_adapter: bool,
    cudnn_benchmark: bool,
    tf32: bool,
    channels_last: bool,
    settings: SettingsMap,
    performance_hint: Option<String>,
    python: Option<String>,
    compile_mode: Option<String>,
    freezing: bool,
}

impl From<EngineSettingsAsWritten> for EngineSettings {
    fn from(w: EngineSettingsAsWritten) -> EngineSettings {
        let mut settings = w.settings;
        // The older files left each out at its default, so a value present is one given.
        let older = [
            ("hint", w.performance_hint.filter(|h| h != "latency")),
            ("python", w.python),
            ("compile-mode", w.compile_mode.filter(|m| m != "default")),
            ("freezing", w.freezing.then(|| "true".to_string())),
        ];
        for (key, value) in older {
            if let Some(value) = value {
                settings.entry(key.to_string()).or_insert(value);
            }
        }
        EngineSettings {
            device: w.device,
            allow_cpu_adapter: w.allow_cpu_adapter,
            cudnn_benchmark: w.cudnn_benchmark,
            tf32: w.tf32,
            channels_last: w.channels_last,
            settings,
        }
    }
}

/// A data-parallel training run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DataParallel {
    /// `Some(N)`: cnnbench starts N ranks on this machine (`--nproc`); `None`: this
    /// process is one rank of a job a launcher started (`--distributed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_ranks: Option<usize>,
    /// Seconds a rank waits for the others before it gives up.
    pub timeout_s: f64,
}

/// An input image size, `HxW` in files and on the command line (`224` is `224x224`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ImageSize {
    pub height: usize,
    pub width: usize,
}

impl ImageSize {
    /// A square size.
    pub fn square(n: usize) -> ImageSize {
        ImageSize {
            height: n,
            width: n,
        }
    }
}

impl std::fmt::Display for ImageSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.height, self.width)
    }
}

impl FromStr for ImageSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let parse = |v: &str| {
            let n = v
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("\"{s}\" is not an image size: use N or HxW with positive integers, e.g. 224 or 299x299"))?;
            if n > cnnbench_base::MAX_DIMENSION {
                return Err(format!(
                    "image size {n} is larger than any network takes (at most {})",
                    cnnbench_base::MAX_DIMENSION
                ));
            }
            Ok(n)
        };
        match s.split_once(['x', 'X', '×']) {
            Some((h, w)) => Ok(ImageSize {
                height: parse(h)?,
                width: parse(w)?,
            }),
            None => Ok(ImageSize::square(parse(s)?)),
        }
    }
}

impl Serialize for ImageSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ImageSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// `64MiB`, `2GB`, `1.5GiB`, `1000000` (bytes): `--memory-limit` and a matrix's
/// `memory_limit`, one parser for both.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let factor: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "kib" => 1024.0,
        "m" | "mb" => 1e6,
        "mib" => 1024.0 * 1024.0,
        "g" | "gb" => 1e9,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => f64::NAN,
    };
    match number.parse::<f64>() {
        // Below one byte (`0.5`) it would be 0 bytes, which switched the memory check off.
        Ok(v) if v > 0.0 && factor.is_finite() && v * factor >= 1.0 => Ok((v * factor) as u64),
        _ => Err(format!(
            "\"{}\" is not an amount of memory: use bytes or a unit, e.g. 512MiB or 2GB",
            crate::printable(s)
        )),
    }
}

/// The heap policies a spec may name.
pub const ALLOCATORS: [&str; 2] = ["keep", "system"];

/// The defaults of `cnnbench run` with no options, so that a spec written by hand or a
/// matrix cell starts where the command line does.
pub const DEFAULT_WARMUP: usize = 1;
/// See [`DEFAULT_WARMUP`].
pub const DEFAULT_PASSES: usize = 10;
/// See [`DEFAULT_WARMUP`].
pub const DEFAULT_BATCH: usize = 16;
/// The limit of `target_ci_pct` when no `max_time_s` is given.
pub const DEFAULT_TARGET_CI_MAX_TIME_S: f64 = 60.0;

impl RunSpec {
    /// A spec with `cnnbench run`'s defaults for these models on this engine.
    pub fn new(models: Vec<ModelRef>, engine: &str) -> RunSpec {
        RunSpec {
            models,
            engine: engine.to_string(),
            engine_options: EngineSettings::default(),
            mode: Mode::Train,
            precision: Precision::F32,
            batch: Batches::Sizes(vec![DEFAULT_BATCH]),
            image_sizes: None,
            warmup: DEFAULT_WARMUP,
            passes: DEFAULT_PASSES,
            min_time_s: None,
            max_time_s: None,
            target_ci_pct: None,
            warmup_time_s: None,
            memory_limit_bytes: None,
            seed: 0,
            threads: None,
            allocator: "keep".into(),
            data_parallel: None,
            repeat: 1,
            scenario: None,
            calibration_images: None,
        }
    }

    /// An f32 run with `--tf32` is a `tf32` run: labelled so, so that its results group
    /// with `--precision tf32`'s and never with strict f32's.
    pub fn settle_tf32(&mut self) {
        if self.engine_options.tf32 && self.precision == Precision::F32 {
            self.precision = Precision::Tf32;
        }
    }

    /// Whether the engine is to allow TF32 math.
    pub fn tf32(&self) -> bool {
        self.engine_options.tf32 || self.precision == Precision::Tf32
    }

    /// Everything a spec must be before anything runs; the message says what to change,
    /// in the command line's words.
    pub fn validate(&self) -> Result<(), String> {
        if self.engine_options.tf32 && !matches!(self.precision, Precision::F32 | Precision::Tf32) {
            return Err(format!(
                "--tf32 is TF32 math for f32 tensors and this run's precision is {}: leave out --tf32, or use --precision tf32",
                self.precision.as_str()
            ));
        }
        if self.models.is_empty() {
            return Err("no model to run".into());
        }
        check_model_count(self.models.len())?;
        if self.engine.trim().is_empty() {
            return Err("no engine named".into());
        }
        if self.passes == 0 {
            return Err("--passes must be at least 1".into());
        }
        match &self.batch {
            Batches::Sizes(sizes) if sizes.is_empty() => {
                return Err("no batch size given".into());
            }
            Batches::Sizes(sizes) if sizes.contains(&0) => {
                return Err("a batch size must be at least 1".into());
            }
            Batches::Sizes(_) | Batches::Max => {}
        }
        if let Some(sizes) = &self.image_sizes {
            if sizes.is_empty() {
                return Err("an empty list of image sizes".into());
            }
            if sizes.iter().any(|s| s.height == 0 || s.width == 0) {
                return Err("an image size must be positive".into());
            }
        }
        if self.threads == Some(0) {
            return Err("--threads must be at least 1".into());
        }
        if self.repeat == 0 || self.repeat > MAX_REPEAT {
            return Err(format!(
                "--repeat {} is not between 1 and {MAX_REPEAT}",
                self.repeat
            ));
        }
        if self.repeat > 1 && self.data_parallel.is_some() {
            return Err(
                "--repeat cannot be combined with a data-parallel run: repeat the job itself (each run of --nproc N is one run)"
                    .into(),
            );
        }
        if self.repeat > 1 && self.batch == Batches::Max {
            return Err(
                "--repeat with -b max would search for the batch in every run: give the batch size the search found (-b N)"
                    .into(),
            );
        }
        if !ALLOCATORS.contains(&self.allocator.as_str()) {
            return Err(format!(
                "allocator \"{}\" is not a heap policy: keep or system",
                crate::printable(&self.allocator)
            ));
        }
        for (value, flag) in [
            (self.min_time_s, "--min-time"),
            (self.max_time_s, "--max-time"),
            (self.warmup_time_s, "--warmup-time"),
        ] {
            if let Some(s) = value {
                if !(s > 0.0 && s.is_finite() && s < 1e12) {
                    return Err(format!(
                        "{flag} must be a positive number of seconds, not {s}"
                    ));
                }
            }
        }
        if let Some(pct) = self.target_ci_pct {
            if !(pct > 0.0 && pct.is_finite()) {
                return Err(format!(
                    "--target-ci must be a positive percentage, e.g. 2 for ±2%, not {pct}"
                ));
            }
        }
        if let (Some(min), Some(max)) = (self.min_time_s, self.effective_max_time_s()) {
            if min > max {
                return Err(format!(
                    "--min-time ({min} s) is above --max-time ({max} s)"
                ));
            }
        }
        if let Some(dp) = &self.data_parallel {
            self.check_data_parallel(dp)?;
        }
        if let Some(scenario) = &self.scenario {
            self.check_scenario(scenario)?;
        }
        self.check_int8()?;
        Ok(())
    }

    /// What int8 needs of the rest of the spec: inference, and a calibration count
    /// only where there is something to calibrate.
    fn check_int8(&self) -> Result<(), String> {
        let int8 = self.precision == Precision::Int8;
        if int8 && self.mode != Mode::Infer {
            return Err(format!(
                "int8 is post-training quantisation for inference: use --mode infer (this run's mode is {})",
                self.mode.as_str()
            ));
        }
        match self.calibration_images {
            Some(_) if !int8 => Err(format!(
                "--calibration measures an int8 network's activation ranges, and this run's precision is {}: leave it out, or use --precision int8",
                self.precision.as_str()
            )),
            Some(n) if !(1..=crate::quantization::MAX_CALIBRATION_IMAGES).contains(&n) => {
                Err(format!(
                    "--calibration takes 1 to {} images, not {n}",
                    crate::quantization::MAX_CALIBRATION_IMAGES
                ))
            }
            Some(_) | None => Ok(()),
        }
    }

    /// The calibration images of an int8 run.
    pub fn effective_calibration_images(&self) -> usize {
        self.calibration_images
            .unwrap_or(crate::quantization::DEFAULT_CALIBRATION_IMAGES)
    }

    /// What a scenario needs of the rest of the spec: inference, in one process, its
    /// queries' samples as the batch.
    fn check_scenario(&self, scenario: &crate::scenario::ScenarioSpec) -> Result<(), String> {
        scenario.validate()?;
        let kind = scenario.kind;
        if self.mode != Mode::Infer {
            return Err(format!(
                "--scenario {kind} serves inference: use --mode infer"
            ));
        }
        if self.data_parallel.is_some() {
            return Err(format!(
                "--scenario {kind} serves inference in one process; --nproc trains"
            ));
        }
        let one_batch = matches!(&self.batch, Batches::Sizes(sizes) if sizes.len() == 1);
        if !one_batch {
            return Err(format!(
                "--scenario {kind} runs one batch size (-b N, or --samples-per-query): not a list or max"
            ));
        }
        if kind.rules().batch_is_the_query
            && self.batch != Batches::Sizes(vec![scenario.samples_per_query])
        {
            return Err(format!(
                "a {kind} query's samples are the batch the engine computes: -b and --samples-per-query must agree (give one of them)"
            ));
        }
        for (given, flag) in [
            // A spec always holds a number of passes: any other than the default was
            // asked for, by flag, matrix or a result's spec.
            (self.passes != DEFAULT_PASSES, "--passes"),
            (self.min_time_s.is_some(), "--min-time"),
            (self.max_time_s.is_some(), "--max-time"),
            (self.target_ci_pct.is_some(), "--target-ci"),
        ] {
            if given {
                return Err(format!(
                    "{flag} rules the passes of a closed loop; a scenario runs for --scenario-time and --min-queries: leave out {flag}"
                ));
            }
        }
        Ok(())
    }

    /// `max_time_s`, or the default limit `target_ci_pct` brings with it.
    pub fn effective_max_time_s(&self) -> Option<f64> {
        self.max_time_s
            .or(self.target_ci_pct.map(|_| DEFAULT_TARGET_CI_MAX_TIME_S))
    }

    /// What a data-parallel run cannot do: every rank must run the same passes (an
    /// all-reduce in each), so nothing may decide them per rank.
    fn check_data_parallel(&self, dp: &DataParallel) -> Result<(), String> {
        if dp.local_ranks == Some(0) {
            return Err("--nproc must be at least 1".into());
        }
        if !(dp.timeout_s > 0.0 && dp.timeout_s.is_finite() && dp.timeout_s < 1e12) {
            return Err(format!(
                "--dist-timeout must be a positive number of seconds, not {}",
                dp.timeout_s
            ));
        }
        let per_rank = [
            (self.min_time_s.is_some(), "--min-time"),
            (self.max_time_s.is_some(), "--max-time"),
            (self.target_ci_pct.is_some(), "--target-ci"),
            (self.warmup_time_s.is_some(), "--warmup-time"),
            (self.batch == Batches::Max, "-b max"),
        ];
        if let Some((_, flag)) = per_rank.iter().find(|(given, _)| *given) {
            return Err(format!(
                "{flag} cannot be used in a data-parallel run: each rank would decide its own passes or batch and the ranks' all-reduces would no longer meet; give --passes and --batch-size"
            ));
        }
        if self.mode == Mode::Infer {
            return Err(
                "a data-parallel run trains: use --mode train or step (inference has no gradients to average)"
                    .into(),
            );
        }
        Ok(())
    }

    /// The spec of one point of this run: one model at one image size and one batch
    /// size, what one result file holds.
    pub fn point(&self, model: &ModelRef, image_size: Option<ImageSize>, batch: usize) -> RunSpec {
        RunSpec {
            models: vec![model.clone()],
            batch: Batches::Sizes(vec![batch]),
            image_sizes: image_size.map(|s| vec![s]),
            ..self.clone()
        }
    }

    /// Every configuration of the spec (model × image size × batch size) as its own
    /// one-run spec, in the order a run measures them; `None` with `-b max`, whose batch
    /// sizes are found by running.
    pub fn points(&self) -> Option<Vec<RunSpec>> {
        let Batches::Sizes(batches) = &self.batch else {
            return None;
        };
        let sizes: Vec<Option<ImageSize>> = match &self.image_sizes {
            Some(sizes) => sizes.iter().copied().map(Some).collect(),
            None => vec![None],
        };
        let mut out = Vec::new();
        for model in &self.models {
            for size in &sizes {
                for &batch in batches {
                    out.push(RunSpec {
                        repeat: 1,
                        ..self.point(model, *size, batch)
                    });
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        RunSpec::new(
            vec![ModelRef::Zoo {
                name: "resnet18".into(),
            }],
            "burn-flex",
        )
    }

    #[test]
    fn a_spec_reads_back_as_written() {
        let mut s = spec();
        s.image_sizes = Some(vec![ImageSize::square(64), "32x48".parse().unwrap()]);
        s.batch = Batches::Max;
        s.models.push(ModelRef::File {
            path: "m.onnx".into(),
            sha256: "ab".into(),
        });
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("\"32x48\""), "{text}");
        assert_eq!(serde_json::from_str::<RunSpec>(&text).unwrap(), s);
        // A key this build does not know is an error, not silently dropped.
        let extra = text.replacen('{', "{\"passses\":3,", 1);
        assert!(serde_json::from_str::<RunSpec>(&extra).is_err());
    }

    #[test]
    fn validate_refuses_what_the_command_line_refuses() {
        assert_eq!(spec().validate(), Ok(()));
        let refused = |f: fn(&mut RunSpec), says: &str| {
            let mut s = spec();
            f(&mut s);
            let e = s.validate().unwrap_err();
            assert!(e.contains(says), "{e}");
        };
        refused(|s| s.passes = 0, "--passes");
        refused(|s| s.models.clear(), "no model");
        refused(|s| s.batch = Batches::Sizes(vec![0]), "batch size");
        refused(|s| s.target_ci_pct = Some(f64::NAN), "--target-ci");
        refused(|s| s.min_time_s = Some(-1.0), "--min-time");
        refused(
            |s| {
                s.min_time_s = Some(90.0);
                s.target_ci_pct = Some(2.0);
            },
            "above --max-time (60 s)",
        );
        refused(|s| s.allocator = "jemalloc".into(), "heap policy");
        let dp = Some(DataParallel {
            local_ranks: Some(2),
            timeout_s: 300.0,
        });
        let mut s = spec();
        s.data_parallel = dp.clone();
        assert_eq!(s.validate(), Ok(()));
        s.batch = Batches::Max;
        assert!(s.validate().unwrap_err().contains("-b max cannot be used"));
        let mut s = spec();
        s.data_parallel = dp;
        s.mode = Mode::Infer;
        assert!(s.validate().unwrap_err().contains("trains"));
    }

    /// `--again` results × `--repeat` started a process each, without a cap. (#63)
    #[test]
    fn a_command_starts_at_most_a_thousand_processes() {
        assert_eq!(check_process_count(10, 100), Ok(()));
        let e = check_process_count(5000, 100).unwrap_err();
        assert!(e.contains("500000 processes"), "{e}");
        assert!(check_process_count(usize::MAX, 2).is_err());
    }

    /// A spec of 10⁵ models built every graph before the first measurement (2.4 GB,
    /// 20 s); the count is refused however the spec arrives. (Hostile input, round three.)
    #[test]
    fn validate_refuses_more_models_than_a_run_takes() {
        let mut s = spec();
        s.models = vec![s.models[0].clone(); MAX_MODELS_PER_RUN];
        assert_eq!(s.validate(), Ok(()));
        s.models.push(s.models[0].clone());
        let e = s.validate().unwrap_err();
        assert!(e.contains("1001 models in one run, more than 1000"), "{e}");
        assert!(e.contains("cnnbench plan"), "{e}");
        s.models = vec![s.models[0].clone(); 100_000];
        assert!(s.validate().unwrap_err().contains("100000 models"));
    }

    /// Specs written before the engines declared their own settings kept OpenVINO's
    /// hint, the Python and `torch.compile`'s mode and freezing as fields: they read as
    /// the same settings given by key (defaults were left out then, and stay out).
    #[test]
    fn an_older_spec_reads_its_engine_fields_as_engine_settings() {
        let older = r#"{"device": 1, "channels_last": true, "performance_hint": "throughput",
            "python": "/opt/py", "compile_mode": "max-autotune", "freezing": true}"#;
        let s: EngineSettings = serde_json::from_str(older).unwrap();
        assert_eq!(s.device, Some(1));
        assert!(s.channels_last);
        let own: Vec<(&str, &str)> = s
            .settings
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            own,
            vec![
                ("compile-mode", "max-autotune"),
                ("freezing", "true"),
                ("hint", "throughput"),
                ("python", "/opt/py")
            ]
        );
        let defaults: EngineSettings =
            serde_json::from_str(r#"{"performance_hint": "latency", "compile_mode": "default"}"#)
                .unwrap();
        assert_eq!(defaults, EngineSettings::default());
        // Written now, the settings are one map, and read back the same.
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains(r#""settings":{"compile-mode""#), "{text}");
        assert_eq!(serde_json::from_str::<EngineSettings>(&text).unwrap(), s);
        assert!(serde_json::from_str::<EngineSettings>(r#"{"hint": "x"}"#).is_err());
    }

    #[test]
    fn a_point_is_one_model_one_size_one_batch() {
        let mut s = spec();
        s.batch = Batches::Sizes(vec![1, 2]);
        s.image_sizes = Some(vec![ImageSize::square(32), ImageSize::square(64)]);
        let m = s.models[0].clone();
        let p = s.point(&m, Some(ImageSize::square(64)), 2);
        assert_eq!(p.batch, Batches::Sizes(vec![2]));
        assert_eq!(p.image_sizes, Some(vec![ImageSize::square(64)]));
        assert_eq!(p.models, vec![m]);
        assert_eq!(p.passes, s.passes);
    }
}
