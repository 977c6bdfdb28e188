//! The schema stays what it was: every `cnnbench-result` file in the repository (the
//! published results under docs/results and the report's test fixtures) reads into
//! [`BenchResult`] and writes back unchanged — byte for byte where cnnbench wrote it.
#![allow(
    clippy::disallowed_macros,
    reason = "a test's count for whoever reads the test log"
)]

use cnnbench_results::{BenchResult, Quantity, RESULT_FORMAT, RESULT_VERSIONS_READ};
use std::path::{Path, PathBuf};

fn json_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for e in entries {
        if e.is_dir() {
            json_files(&e, out);
        } else if e.extension().is_some_and(|x| x == "json") {
            out.push(e);
        }
    }
}

/// A file as this build writes it: specs written before the engines declared their own
/// settings held OpenVINO's hint, the Python and `torch.compile`'s mode and freezing as
/// fields of `engine_options`; they are now its `settings` map, by key.
fn as_written_now(mut value: serde_json::Value) -> serde_json::Value {
    let Some(options) = value
        .pointer_mut("/spec/engine_options")
        .and_then(|o| o.as_object_mut())
    else {
        return value;
    };
    let mut own = serde_json::Map::new();
    for (older, key, default) in [
        ("performance_hint", "hint", Some("latency")),
        ("python", "python", None),
        ("compile_mode", "compile-mode", Some("default")),
        ("freezing", "freezing", Some("false")),
    ] {
        if let Some(v) = options.remove(older) {
            let text = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            if Some(text.as_str()) != default {
                own.insert(key.to_string(), text.into());
            }
        }
    }
    if !own.is_empty() {
        options.insert("settings".to_string(), own.into());
    }
    value
}

#[test]
fn every_result_file_in_the_repository_round_trips() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut files = Vec::new();
    json_files(&root.join("docs/results"), &mut files);
    json_files(&root.join("crates/report/tests/fixtures"), &mut files);
    let (mut checked, mut byte_for_byte) = (0, 0);
    let mut not_byte_for_byte = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue; // the loader's corrupt-file fixtures
        };
        if value.get("format").and_then(|f| f.as_str()) != Some(RESULT_FORMAT)
            || !value
                .get("version")
                .and_then(|v| v.as_u64())
                .is_some_and(|v| RESULT_VERSIONS_READ.contains(&(v as u32)))
            || value
                .get("model")
                .is_none_or(|m| m.as_object().is_none_or(|m| m.is_empty()))
        {
            continue;
        }
        let typed: BenchResult = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} does not load: {e}", path.display()));
        let value = as_written_now(value);
        assert_eq!(
            serde_json::to_value(&typed).unwrap(),
            value,
            "{} changes when read and written",
            path.display()
        );
        // Written by cnnbench (every field, in the schema's order): the same bytes. The
        // comparison is with the document as parsed, since serde_json's default float
        // parsing may differ from the file's text in the last digit.
        let written = serde_json::to_string_pretty(&typed).unwrap();
        if written == serde_json::to_string_pretty(&value).unwrap() {
            byte_for_byte += 1;
        } else {
            not_byte_for_byte.push(path.display().to_string());
        }
        assert!(typed.samples.contains_key(&Quantity::Total) || typed.samples.is_empty());
        checked += 1;
    }
    eprintln!("{checked} result files, {byte_for_byte} written back byte for byte; the rest: {not_byte_for_byte:?}");
    assert!(checked >= 60, "only {checked} result files found");
    assert!(
        byte_for_byte >= 50,
        "only {byte_for_byte} written by cnnbench"
    );
}

#[test]
fn samples_and_summaries_are_keyed_by_quantity_names() {
    let text = r#"{"backward": [2.0], "forward": [1.0], "total": [3.0], "update": [0.5]}"#;
    let typed: std::collections::BTreeMap<Quantity, Vec<f64>> = serde_json::from_str(text).unwrap();
    assert_eq!(typed[&Quantity::Update], [0.5]);
    assert_eq!(
        serde_json::to_string(&typed).unwrap(),
        text.replace(": ", ":").replace(", ", ",")
    );
}
