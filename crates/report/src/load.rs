//! Reading result files: ours (`cnnbench-result` v1) and the original suite's, from
//! files and folders (recursively). A file that is not a result is skipped with a
//! warning naming it, or is an error with `--strict`.

use crate::legacy;
use crate::record::{EngineDesc, Origin, Record};
use cnnbench_graph::{read_bounded_to_string, ReadFileError, ReadProblem};
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
    pub warnings: Vec<String>,
    /// How many files were looked at.
    pub files: usize,
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
                out.warnings.push(skipped);
            }
            files.extend(found.files);
        } else {
            files.push(p.clone());
        }
    }
    let mut seen_files = HashSet::new();
    for f in files {
        // The same file reached twice (a folder and a file in it) counts once.
        let canon = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
        if !seen_files.insert(canon) {
            continue;
        }
        out.files += 1;
        match load_file(&f) {
            Ok(r) => out.records.push(r),
            Err(why) => {
                let msg = format!("{}: {why}", f.display());
                if strict {
                    return Err(LoadError::Strict(msg));
                }
                out.warnings.push(format!("skipping {msg}"));
            }
        }
    }
    Ok(out)
}

pub use cnnbench_results::folders::MAX_RESULT_FILE_BYTES;

/// Reads one file; the error is a short reason for the warning. What is not a regular
/// file (a pipe, a device) or is over [`MAX_RESULT_FILE_BYTES`] is refused before reading.
pub fn load_file(path: &Path) -> Result<Record, String> {
    let why = |e: ReadFileError| match e.problem {
        ReadProblem::Io(e) => format!("cannot read it ({e})"),
        ReadProblem::NotUtf8 => "not UTF-8 text, so not a result file".to_string(),
        problem => format!("it {problem}"),
    };
    let text = read_bounded_to_string(path, MAX_RESULT_FILE_BYTES, "result files").map_err(why)?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("not valid JSON ({e})"))?;
    let mut record = parse_value(path, v)?;
    record.make_printable();
    Ok(record)
}

/// Recognises a parsed document as ours or legacy.
pub fn parse_value(path: &Path, v: Value) -> Result<Record, String> {
    if !v.is_object() {
        return Err("not a result file (the JSON is not an object)".into());
    }
    if let Some(format) = v.get("format").and_then(Value::as_str) {
        if format != RESULT_FORMAT {
            return Err(format!(
                "a `{format}` document, not a `{RESULT_FORMAT}` result"
            ));
        }
        let version = v.get("version").and_then(Value::as_u64).unwrap_or(0);
        if version > RESULT_VERSION as u64 {
            return Err(format!(
                "written by a newer cnnbench (result schema version {version}; this one reads version {RESULT_VERSION}): upgrade cnnbench"
            ));
        }
        if !RESULT_VERSIONS_READ.contains(&(version as u32)) {
            return Err(format!("unknown result schema version {version}"));
        }
        let r: BenchResult =
            serde_json::from_value(v).map_err(|e| format!("invalid cnnbench result ({e})"))?;
        return from_result(path, r);
    }
    if legacy::looks_legacy(&v) {
        return legacy::parse(path, &v).map_err(|e| format!("invalid cnn-benchmarks file: {e}"));
    }
    Err(
        "not a cnnbench result nor a cnn-benchmarks file (no `format` field, no `forward_times`)"
            .into(),
    )
}

fn from_result(path: &Path, r: BenchResult) -> Result<Record, String> {
    let mut samples: BTreeMap<Quantity, Vec<f64>> = BTreeMap::new();
    for (k, v) in r.samples {
        if v.is_empty() {
            continue;
        }
        if v.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(format!("samples `{k}` hold a value that is not a time"));
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
            return Err("no `total` samples and no phase samples to sum".into());
        }
        let total = (0..n).map(|i| phases.iter().map(|p| p[i]).sum()).collect();
        samples.insert(Quantity::Total, total);
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
    })
}
