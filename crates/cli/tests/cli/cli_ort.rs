//! The ort-cpu engine end to end (built with `--features ort`): an inference run that
//! records ONNX Runtime's version and the settings that change its numbers, `verify`
//! against burn-flex from the command line, a per-node profile, the refusal of training
//! modes, and the error when the library is missing. (Every op and the suite's zoo models
//! against burn-flex are the engine crate's conformance tests.)
//!
//! ONNX Runtime's library is found as a user's run finds it (ORT_DYLIB_PATH, the active
//! venv, `.venv-torch`, python3): where it is absent these tests fail with the install
//! line in cnnbench's error, they do not skip.
#![cfg(feature = "ort")]

use crate::common::*;
use predicates::prelude::*;

#[test]
fn an_inference_run_records_onnx_runtime_and_its_settings() {
    let result = tiny_run(
        "mobilenet-v2",
        "ort-cpu",
        &["--mode", "infer", "--threads", "2"],
    );
    let engine = &result["engine"];
    assert_eq!(engine["name"], "ort-cpu", "{engine}");
    assert_eq!(engine["framework"], "onnxruntime", "{engine}");
    // ONNX Runtime's own version string, as the library reports it.
    let version = engine["framework_version"].as_str().unwrap();
    assert!(
        version.starts_with("1.") && version.split('.').count() == 3,
        "{engine}"
    );
    assert_eq!(engine["libraries"]["onnxruntime"], version, "{engine}");
    assert_eq!(engine["threads"], 2, "{engine}");
    let settings = &engine["settings"];
    assert_eq!(settings["intra_op_threads"], "2", "{engine}");
    assert_eq!(settings["inter_op_threads"], "1", "{engine}");
    assert_eq!(
        settings["graph_optimization_level"], "all (ORT_ENABLE_ALL)",
        "{engine}"
    );
    assert_eq!(
        settings["execution_provider"], "CPUExecutionProvider",
        "{engine}"
    );
}

/// `graph-optimization`, declared by the engine's crate alone, reaches ONNX Runtime from
/// the generic flag, is recorded as given and labels the configuration.
#[test]
fn the_graph_optimization_setting_reaches_onnx_runtime_and_the_label() {
    let result = tiny_run(
        "resnet18",
        "ort-cpu",
        &[
            "--mode",
            "infer",
            "--engine-setting",
            "graph-optimization=basic",
        ],
    );
    let engine = &result["engine"];
    assert_eq!(
        engine["settings"]["graph_optimization_level"], "basic (ORT_ENABLE_BASIC)",
        "{engine}"
    );
    assert_eq!(
        engine["variant"],
        serde_json::json!(["graph optimization basic"])
    );
    assert_eq!(
        result["spec"]["engine_options"]["settings"],
        serde_json::json!({"graph-optimization": "basic"})
    );
}

#[test]
fn verify_against_burn_flex_compares_the_inference_output() {
    verify_against_burn_flex("ort-cpu", &[])
        .stdout(predicate::str::contains("output (infer)"))
        .stdout(predicate::str::contains(
            "compared: the inference output only (ort-cpu cannot train)",
        ));
}

#[test]
fn an_inference_profile_times_every_node() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    cnnbench()
        .args([
            "profile", "resnet18", "--engine", "ort-cpu", "--mode", "infer",
        ])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q", "-o"])
        .arg(&profile)
        .assert()
        .success();
    let doc: serde_json::Value = read_json(&profile);
    assert_eq!(doc["engine"]["name"], "ort-cpu", "{}", doc["engine"]);
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert!(nodes.len() > 20, "{} nodes", nodes.len());
}

#[test]
fn training_is_refused_with_what_ort_cpu_runs() {
    assert_training_refused("ort-cpu");
}

#[test]
fn a_missing_library_is_a_clear_error_with_the_install_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("libonnxruntime.so.1.32.0");
    cnnbench()
        .env("ORT_DYLIB_PATH", &missing)
        .args(["run", "resnet18", "--engine", "ort-cpu", "--mode", "infer"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("engine ort-cpu cannot run"))
        .stderr(predicate::str::contains(missing.to_string_lossy().as_ref()))
        .stderr(predicate::str::contains("pip install onnxruntime==1.32.0"));
    cnnbench()
        .env("ORT_DYLIB_PATH", &missing)
        .arg("engines")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"ort-cpu +\| no — ORT_DYLIB_PATH is").unwrap());
}
