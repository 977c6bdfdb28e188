//! Reading result files: ours (`cnnbench-result` v1) and the original suite's, from
//! files and folders (recursively). A file that is not a result is skipped with a
//! warning naming it ([`LoadWarning`], which also says why as a value), or is an error
//! with `--strict`.

use crate::legacy;
use crate::record::{EngineDesc, Origin, Record};
use cnnbench_graph::{read_bounded_to_string, ReadFileError, ReadProblem};
use cnnbench_results::profile::PROFILE_FORMAT;
use cnnbench_results::{
    AllocatorRecord, BenchResult, Quantity, RESULT_FORMAT, RESULT_VERSION, RESULT_VERSIONS_READ,
};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

/// What loading found: the records and one warning per skipped file.
#[derive(Debug, Default)]
pub struct Loaded {
    pub records: Vec<Record>,
    pub warnings: Vec<LoadWarning>,
    /// How many files were looked at.
    pub files: usize,
}

/// A file or folder the loader skipped: the line a user reads (`skipping PATH: why`) and
/// what was skipped as a value, so that a caller that knows better (the report of
/// profiles, whose files the profile loader took) drops warnings by their kind, never by
/// their words. It reads as its line (`Display`, and `Deref` to `str`).
#[derive(Clone, Debug)]
pub struct LoadWarning {
    /// What was skipped and why: what callers match on.
    pub skipped: Skipped,
    line: String,
}

/// What the loader skipped.
#[derive(Clone, Debug, PartialEq)]
pub enum Skipped {
    /// A folder below the paths that could not be searched (unreadable, or too deep).
    Folder,
    /// A file that is not a result, and why.
    File(NotAResult),
}

impl LoadWarning {
    fn folder(line: String) -> LoadWarning {
        LoadWarning {
            skipped: Skipped::Folder,
            line,
        }
    }

    fn file(path: &Path, why: NotAResult) -> LoadWarning {
        LoadWarning {
            line: format!("skipping {}: {why}", path.display()),
            skipped: Skipped::File(why),
        }
    }

    /// Whether the skipped file is a profile (`cnnbench-profile`): not a result, but the
    /// profile loader's to read.
    pub fn is_profile(&self) -> bool {
        match &self.skipped {
            Skipped::File(why) => *why == NotAResult::Profile,
            Skipped::Folder => false,
        }
    }

    /// The line as printed.
    pub fn as_str(&self) -> &str {
        &self.line
    }
}

impl std::fmt::Display for LoadWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl std::ops::Deref for LoadWarning {
    type Target = str;
    fn deref(&self) -> &str {
        &self.line
    }
}

impl std::borrow::Borrow<str> for LoadWarning {
    fn borrow(&self) -> &str {
        &self.line
    }
}

/// Why a file is not a result, as the warning words it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum NotAResult {
    /// It could not be read as text: an I/O error, not a regular file, too large, not
    /// UTF-8 (the words say which).
    #[error("{0}")]
    Unreadable(String),
    /// Not JSON at all (a corrupt or half-written file), with the parser's words.
    #[error("not valid JSON ({0})")]
    NotJson(String),
    /// JSON, but not an object (an array, a number).
    #[error("not a result file (the JSON is not an object)")]
    NotAnObject,
    /// A profile (`cnnbench profile --json`): the report draws it with its own loader.
    #[error("a `{profile}` document, not a `{result}` result", profile = PROFILE_FORMAT, result = RESULT_FORMAT)]
    Profile,
    /// Another cnnbench document (a model file, a matrix…), by its `format`.
    #[error("a `{0}` document, not a `{result}` result", result = RESULT_FORMAT)]
    OtherFormat(String),
    /// A result of a schema version above ours: the user needs a newer cnnbench.
    #[error("written by a newer cnnbench (result schema version {0}; this one reads version {ours}): upgrade cnnbench", ours = RESULT_VERSION)]
    NewerVersion(u64),
    /// A result whose version this cnnbench never wrote (0, or one skipped).
    #[error("unknown result schema version {0}")]
    UnknownVersion(u64),
    /// Says it is a result but does not fit the schema, with serde's words.
    #[error("invalid cnnbench result ({0})")]
    InvalidResult(String),
    /// A time that no pass could take (negative, not finite, under a nanosecond, over a
    /// day), by the field's name, and why.
    #[error("`{0}` holds {1}")]
    NotATime(String, String),
    /// A scenario's record that no run can have written (a load, bound or count out of
    /// the range a run is held to), with what is wrong.
    #[error("{0}")]
    InvalidScenario(String),
    /// A result with no timings to report.
    #[error("no `total` samples and no phase samples to sum")]
    NoSamples,
    /// The same run as a file loaded before it (a copy: the same start, engine, model,
    /// configuration and samples): counted once, so that copies cannot outvote the runs of a comparison.
    #[error("the same run as {0} (a copy: same start, engine, model, configuration and samples), counted once")]
    Copy(String),
    /// Looks like the original suite's file but is not a valid one.
    #[error("invalid cnn-benchmarks file: {0}")]
    InvalidLegacy(String),
    /// JSON with no mark of ours nor of the original suite.
    #[error(
        "not a cnnbench result nor a cnn-benchmarks file (no `format` field, no `forward_times`)"
    )]
    Unrecognised,
}

/// Why loading stopped.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("no such file or folder: {0}")]
    Missing(PathBuf),
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A bad file under `--strict`.
    #[error("{0} (drop --strict to skip such files with a warning)")]
    Strict(String),
}

/// Loads every result under `paths`. Folders are searched recursively for `*.json`
/// files; files named directly are read whatever their extension.
pub fn load_paths(paths: &[PathBuf], strict: bool) -> Result<Loaded, LoadError> {
    let mut files = Vec::new();
    let mut out = Loaded::default();
    let io = |path: &PathBuf, e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing(path.clone()),
        _ => LoadError::Io {
            path: path.clone(),
            source: e,
        },
    };
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| io(p, e))?;
        if meta.is_dir() {
            let found = cnnbench_results::folders::json_files(p).map_err(|e| io(p, e))?;
            for skipped in found.skipped_folders() {
                if strict {
                    return Err(LoadError::Strict(skipped));
                }
                out.warnings.push(LoadWarning::folder(skipped));
            }
            files.extend(found.files);
        } else {
            files.push(p.clone());
        }
    }
    let mut seen_files = HashSet::new();
    let mut seen_runs = SeenRuns::default();
    for f in files {
        // The same file reached twice (a folder and a file in it) counts once.
        let canon = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
        if !seen_files.insert(canon) {
            continue;
        }
        out.files += 1;
        match load_file(&f) {
            Ok(r) => match seen_runs.copy_of(&r, &out.records) {
                // Not an error under --strict: the file is a good result, once.
                Some(first) => {
                    let why = NotAResult::Copy(first.display().to_string());
                    out.warnings.push(LoadWarning::file(&f, why));
                }
                None => {
                    seen_runs.add(&r, out.records.len());
                    out.records.push(r);
                }
            },
            Err(why) => {
                if strict {
                    return Err(LoadError::Strict(format!("{}: {why}", f.display())));
                }
                out.warnings.push(LoadWarning::file(&f, why));
            }
        }
    }
    Ok(out)
}

/// The runs loaded so far by what makes a run itself, to find copies of one: two processes
/// never start at the same instant with the same samples, so a file that matches one
/// loaded before it in start, engine, model, input, batch, mode, device and every sample
/// is that run again (a copy
/// made by hand, a folder copied into another), whatever its name or layout.
#[derive(Default)]
struct SeenRuns {
    by_key: std::collections::HashMap<u64, Vec<usize>>,
}

impl SeenRuns {
    fn key(r: &Record) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        r.started_at.hash(&mut h);
        r.engine.name.hash(&mut h);
        r.model_id.hash(&mut h);
        (r.input, r.batch_size, r.mode.to_string()).hash(&mut h);
        r.device_name.hash(&mut h);
        for (quantity, values) in &r.samples {
            quantity.as_str().hash(&mut h);
            for v in values {
                v.to_bits().hash(&mut h);
            }
        }
        h.finish()
    }

    fn same_run(a: &Record, b: &Record) -> bool {
        let bits = |r: &Record| -> Vec<(Quantity, Vec<u64>)> {
            r.samples
                .iter()
                .map(|(q, v)| (*q, v.iter().map(|x| x.to_bits()).collect()))
                .collect()
        };
        a.started_at == b.started_at
            && a.engine.name == b.engine.name
            && a.model_id == b.model_id
            && (a.input, a.batch_size, a.mode) == (b.input, b.batch_size, b.mode)
            && a.device_name == b.device_name
            && bits(a) == bits(b)
    }

    /// The path of the record in `records` that `r` is a copy of.
    fn copy_of<'a>(&self, r: &Record, records: &'a [Record]) -> Option<&'a Path> {
        self.by_key
            .get(&Self::key(r))?
            .iter()
            .map(|&i| &records[i])
            .find(|seen| Self::same_run(seen, r))
            .map(|seen| seen.path.as_path())
    }

    fn add(&mut self, r: &Record, index: usize) {
        self.by_key.entry(Self::key(r)).or_default().push(index);
    }
}

pub use cnnbench_results::folders::MAX_RESULT_FILE_BYTES;

/// Reads one file; the error says why it is not a result. What is not a regular file (a
/// pipe, a device) or is over [`MAX_RESULT_FILE_BYTES`] is refused before reading.
pub fn load_file(path: &Path) -> Result<Record, NotAResult> {
    let why = |e: ReadFileError| {
        NotAResult::Unreadable(match e.problem {
            ReadProblem::Io(e) => format!("cannot read it ({e})"),
            ReadProblem::NotUtf8 => "not UTF-8 text, so not a result file".to_string(),
            problem => format!("it {problem}"),
        })
    };
    let text = read_bounded_to_string(path, MAX_RESULT_FILE_BYTES, "result files").map_err(why)?;
    let mut record = parse_text(path, &text)?;
    record.make_printable();
    Ok(record)
}

/// The two fields that say what a document is, read without building the rest.
#[derive(serde::Deserialize)]
struct Head {
    format: Option<String>,
    version: Option<u64>,
}

/// Recognises a document's text as ours or legacy. A result of ours is read straight into
/// its types: a tree of JSON values first cost some 16 times the file's size (a 134 MiB
/// result took 2.1 GB to report); only what is not ours goes through [`parse_value`].
fn parse_text(path: &Path, text: &str) -> Result<Record, NotAResult> {
    if let Ok(Head {
        format: Some(format),
        version,
    }) = serde_json::from_str::<Head>(text)
    {
        if format == RESULT_FORMAT {
            check_version(version.unwrap_or(0))?;
            let r: BenchResult =
                serde_json::from_str(text).map_err(|e| NotAResult::InvalidResult(e.to_string()))?;
            return from_result(path, r);
        }
    }
    let v: Value = serde_json::from_str(text).map_err(|e| NotAResult::NotJson(e.to_string()))?;
    parse_value(path, v)
}

/// A result of this schema version is one this cnnbench reads.
fn check_version(version: u64) -> Result<(), NotAResult> {
    if version > RESULT_VERSION as u64 {
        return Err(NotAResult::NewerVersion(version));
    }
    if !RESULT_VERSIONS_READ.contains(&(version as u32)) {
        return Err(NotAResult::UnknownVersion(version));
    }
    Ok(())
}

/// Recognises a parsed document as ours or legacy.
pub fn parse_value(path: &Path, v: Value) -> Result<Record, NotAResult> {
    if !v.is_object() {
        return Err(NotAResult::NotAnObject);
    }
    if let Some(format) = v.get("format").and_then(Value::as_str) {
        if format == PROFILE_FORMAT {
            return Err(NotAResult::Profile);
        }
        if format != RESULT_FORMAT {
            return Err(NotAResult::OtherFormat(format.to_string()));
        }
        check_version(v.get("version").and_then(Value::as_u64).unwrap_or(0))?;
        let r: BenchResult =
            serde_json::from_value(v).map_err(|e| NotAResult::InvalidResult(e.to_string()))?;
        return from_result(path, r);
    }
    if legacy::looks_legacy(&v) {
        return legacy::parse(path, &v).map_err(NotAResult::InvalidLegacy);
    }
    Err(NotAResult::Unrecognised)
}

fn from_result(path: &Path, r: BenchResult) -> Result<Record, NotAResult> {
    let mut samples: BTreeMap<Quantity, Vec<f64>> = BTreeMap::new();
    for (k, v) in r.samples {
        if v.is_empty() {
            continue;
        }
        let zero_allowed = k != Quantity::Total;
        if let Some(why) = v
            .iter()
            .find_map(|&x| cnnbench_results::stats::implausible_time(x, zero_allowed))
        {
            return Err(NotAResult::NotATime(format!("samples.{k}"), why));
        }
        samples.insert(k, v);
    }
    if !samples.contains_key(&Quantity::Total) {
        // Sum the phases pass by pass when the file has no total.
        let phases: Vec<&Vec<f64>> = r
            .config
            .mode
            .phases()
            .iter()
            .filter_map(|p| samples.get(&Quantity::from(*p)))
            .collect();
        let n = phases.first().map_or(0, |p| p.len());
        if phases.is_empty() || phases.iter().any(|p| p.len() != n) {
            return Err(NotAResult::NoSamples);
        }
        let total = (0..n).map(|i| phases.iter().map(|p| p[i]).sum()).collect();
        samples.insert(Quantity::Total, total);
    }
    if let Some(c) = &r.cold_start {
        for (field, seconds) in [
            ("cold_start.prepare_s", Some(c.prepare_s)),
            ("cold_start.compile_s", c.compile_s),
            ("cold_start.first_pass_s", Some(c.first_pass_s)),
        ] {
            if let Some(why) =
                seconds.and_then(|s| cnnbench_results::stats::implausible_time(s, true))
            {
                return Err(NotAResult::NotATime(field.to_string(), why));
            }
        }
    }
    if let Some(scenario) = &r.scenario {
        scenario.check().map_err(NotAResult::InvalidScenario)?;
    }
    if let Some(scenario) = r.spec.as_ref().and_then(|spec| spec.scenario.as_ref()) {
        scenario
            .validate()
            .map_err(|why| NotAResult::InvalidScenario(format!("its `spec.scenario`: {why}")))?;
    }
    let mut variant = r.engine.variant_words();
    // How a scenario's queries were served changes the compute time per sample (the
    // threads split between sessions, a call of several queries): such runs are rows
    // of their own, never pooled with the engine served one query at a time.
    if let Some(scenario) = &r.scenario {
        if scenario.in_flight > 1 {
            variant.push(format!("{} in flight", scenario.in_flight));
        }
        if let Some(batcher) = &scenario.batcher {
            variant.push(format!(
                "batches ≤ {} within {} ms",
                batcher.max_batch, batcher.timeout_ms
            ));
        }
    }
    Ok(Record {
        path: path.to_path_buf(),
        origin: Origin::Cnnbench,
        model_label: r.model.name.clone(),
        model_id: r.model.name,
        input: r.model.input,
        batch_size: r.config.batch_size,
        mode: r.config.mode,
        device_name: r.engine.device_name,
        device: r.engine.device,
        label: r.label,
        engine: EngineDesc {
            name: r.engine.name,
            framework: r.engine.framework,
            framework_version: r.engine.framework_version,
            backend: r.engine.backend,
            variant,
            libraries: r.engine.libraries,
            settings: r.engine.settings,
            threads_requested: r.config.threads_requested,
            precision: r.config.precision,
            world_size: r.config.world_size.unwrap_or(1).max(1),
            allocator: Some(
                r.config
                    .allocator
                    .map(|a| a.policy)
                    .unwrap_or_else(|| AllocatorRecord::SYSTEM.to_string()),
            ),
        },
        machine: Some(r.machine),
        tool_version: Some(r.tool.version),
        started_at: Some(r.started_at),
        samples,
        params: Some(r.model.params),
        macs: Some(r.model.macs),
        depth: Some(r.model.depth),
        peak_rss_bytes: r.memory.host_peak_bytes(),
        forward_roof_s: r.roofline.as_ref().map(|roof| roof.forward_roof_s),
        device_peak_bytes: r.memory.device_peak_bytes,
        warnings: r.warnings,
        disturbed: r.validity.map(|v| match v.verdict {
            cnnbench_results::Verdict::Clean => Vec::new(),
            cnnbench_results::Verdict::Disturbed => v.reasons,
        }),
        cold_start: r.cold_start.map(|c| crate::record::ColdStartSeconds {
            prepare: c.prepare_s,
            compile: c.compile_s,
            first_pass: c.first_pass_s,
        }),
        hosts: r.distributed.as_ref().and_then(|d| {
            let hosts: Option<std::collections::BTreeSet<&str>> =
                d.ranks.iter().map(|k| k.host.as_deref()).collect();
            hosts.map(|h| h.len())
        }),
        // A figure no measurement gives (a hand-edited file) is not believed.
        run_noise_pct: r.run_noise.filter(|n| n.check().is_ok()).map(|n| n.pct),
        scenario: r.scenario.map(|mut s| {
            s.latencies_s = Vec::new();
            s
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_is_skipped_as_a_profile_whatever_its_words() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("p.json", r#"{"format":"cnnbench-profile","version":1}"#);
        // Named like a profile and mentioning one, but neither: a warning of its own kind.
        write("cnnbench-profile.json", r#"{"note":"cnnbench-profile"}"#);
        write("m.json", r#"{"format":"cnnbench-model","version":1}"#);
        let loaded = load_paths(&[dir.path().to_path_buf()], false).unwrap();
        assert_eq!(loaded.warnings.len(), 3);
        let kind = |file: &str| {
            let w = loaded
                .warnings
                .iter()
                .find(|w| w.contains(&format!("/{file}:")))
                .unwrap();
            assert!(w.starts_with("skipping "), "{w}");
            w.skipped.clone()
        };
        assert_eq!(kind("p.json"), Skipped::File(NotAResult::Profile));
        assert_eq!(
            kind("cnnbench-profile.json"),
            Skipped::File(NotAResult::Unrecognised)
        );
        assert_eq!(
            kind("m.json"),
            Skipped::File(NotAResult::OtherFormat("cnnbench-model".into()))
        );
        let profiles: Vec<_> = loaded.warnings.iter().filter(|w| w.is_profile()).collect();
        assert_eq!(profiles.len(), 1);
        assert!(
            profiles[0].ends_with("a `cnnbench-profile` document, not a `cnnbench-result` result"),
            "{}",
            profiles[0]
        );
    }
}
