//! The openvino-cpu engine end to end (built with `--features openvino`): an inference
//! run that records OpenVINO's build and what it reports it runs, the throughput hint
//! from the command line and in the rerun spec, `verify` against burn-flex, the refusal
//! of training modes and of a precision this CPU lacks, and the error when the library
//! is missing. (Every op and the suite's zoo models against burn-flex are the engine
//! crate's conformance tests.)
//!
//! OpenVINO's library is found as a user's run finds it (OPENVINO_C_LIBRARY, the active
//! venv, `.venv-torch`, python3): where it is absent these tests fail with the install
//! line in cnnbench's error, they do not skip.
#![cfg(feature = "openvino")]

use crate::common::*;
use predicates::prelude::*;

#[test]
fn an_inference_run_records_openvino_and_what_it_reports() {
    let result = tiny_run(
        "mobilenet-v2",
        "openvino-cpu",
        &["--mode", "infer", "--threads", "2"],
    );
    let engine = &result["engine"];
    assert_eq!(engine["name"], "openvino-cpu", "{engine}");
    assert_eq!(engine["framework"], "openvino", "{engine}");
    let version = engine["framework_version"].as_str().unwrap();
    assert!(version.starts_with("20"), "{engine}");
    assert_eq!(engine["threads"], 2, "{engine}");
    let settings = &engine["settings"];
    assert_eq!(settings["performance_hint"], "latency", "{engine}");
    assert_eq!(settings["inference_precision"], "f32", "{engine}");
    assert_eq!(settings["infer_requests"], "1", "{engine}");
    assert_eq!(settings["inference_num_threads_reported"], "2", "{engine}");
    assert!(settings["optimization_capabilities"]
        .as_str()
        .unwrap()
        .contains("FP32"));
    // No setting given: the spec holds none, and the label adds nothing.
    assert!(result["spec"]["engine_options"].get("settings").is_none());
    assert!(engine.get("variant").is_none(), "{engine}");
}

/// int8 end to end on OpenVINO: the result records what OpenVINO's profiling says it
/// ran of the network's convolutions and classifier (issue #47's "ran as asked").
#[test]
fn an_int8_run_records_the_kernels_openvino_ran() {
    let result = tiny_run(
        "resnet18",
        "openvino-cpu",
        &[
            "--mode",
            "infer",
            "--precision",
            "int8",
            "--calibration",
            "2",
        ],
    );
    assert_eq!(result["config"]["precision"], "int8", "{result}");
    let settings = &result["engine"]["settings"];
    let kernels = settings["int8_kernels"].as_str().unwrap_or_default();
    assert!(kernels.contains("_I8 ×"), "{settings}");
    let share = settings["int8_mac_share"].as_str().unwrap_or_default();
    assert!(share.ends_with('%'), "{settings}");
    let warnings = result["warnings"].to_string();
    assert!(!warnings.contains("not run as asked"), "{warnings}");
}

#[test]
fn the_throughput_hint_reaches_the_engine_and_the_rerun_spec() {
    let result = tiny_run(
        "resnet18",
        "openvino-cpu",
        &[
            "--mode",
            "infer",
            "--threads",
            "2",
            "--ov-hint",
            "throughput",
        ],
    );
    let settings = &result["engine"]["settings"];
    assert_eq!(settings["performance_hint"], "throughput", "{settings}");
    let requests: usize = settings["infer_requests"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(requests >= 1, "{settings}");
    assert_eq!(
        result["spec"]["engine_options"]["settings"]["hint"], "throughput",
        "{}",
        result["spec"]
    );
    assert_eq!(
        result["engine"]["variant"],
        serde_json::json!(["throughput hint"])
    );
}

/// `streams`, a setting only the engine's crate declares, reaches OpenVINO from the
/// generic flag, is recorded as given, and labels the configuration in the report.
#[test]
fn the_streams_setting_reaches_openvino_the_spec_and_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let run = |settings: &[&str]| {
        cnnbench()
            .args([
                "run",
                "resnet18",
                "--engine",
                "openvino-cpu",
                "--mode",
                "infer",
            ])
            .args([
                "--image-size",
                "32",
                "-b",
                "2",
                "--passes",
                "2",
                "--threads",
                "2",
            ])
            .args(settings)
            .arg("-q")
            .arg("-o")
            .arg(&out)
            .assert()
    };
    run(&["--ov-hint", "throughput", "--engine-setting", "streams=2"]).success();
    let result: serde_json::Value = only_result(&out);
    let settings = &result["engine"]["settings"];
    assert_eq!(settings["num_streams"], "2", "{settings}");
    assert_eq!(settings["infer_requests"], "2", "{settings}");
    assert_eq!(
        result["spec"]["engine_options"]["settings"],
        serde_json::json!({"hint": "throughput", "streams": "2"})
    );
    cnnbench()
        .args(["report"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("throughput hint, 2 streams"));
    // A value the setting does not take is refused before anything runs.
    run(&["--engine-setting", "streams=0"])
        .failure()
        .stderr(predicate::str::contains(
            "engine openvino-cpu: setting `streams`: \"0\" is not a whole number",
        ));
}

#[test]
fn verify_against_burn_flex_compares_the_inference_output() {
    verify_against_burn_flex("openvino-cpu", &[])
        .stdout(predicate::str::contains("output (infer)"))
        .stdout(predicate::str::contains(
            "compared: the inference output only (openvino-cpu cannot train)",
        ));
}

#[test]
fn training_is_refused_with_what_openvino_cpu_runs() {
    assert_training_refused("openvino-cpu");
}

#[test]
fn a_missing_library_is_a_clear_error_with_the_install_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("libopenvino_c.so.2641");
    cnnbench()
        .env("OPENVINO_C_LIBRARY", &missing)
        .args([
            "run",
            "resnet18",
            "--engine",
            "openvino-cpu",
            "--mode",
            "infer",
        ])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("engine openvino-cpu cannot run"))
        .stderr(predicate::str::contains(missing.to_string_lossy().as_ref()))
        .stderr(predicate::str::contains("pip install openvino==2026.4.1"));
    cnnbench()
        .env("OPENVINO_C_LIBRARY", &missing)
        .arg("engines")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"\| openvino-cpu +\| no +\|").unwrap())
        .stdout(predicate::str::contains("not here: OPENVINO_C_LIBRARY is"));
}

/// `choose` tries OpenVINO's throughput hint beside its default, as the engine declares:
/// a configuration of its own in the matrix and the ranking (or, where OpenVINO wants more
/// requests in flight than a batch splits into, said and left out).
#[test]
fn choose_tries_the_throughput_hint_the_engine_declares() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    let output = run_ok(
        cnnbench()
            .args([
                "choose",
                "resnet18",
                "--image-size",
                "32",
                "--engines",
                "openvino-cpu",
                "--precisions",
                "f32",
                "--passes",
                "2",
                "--warmup",
                "0",
                "-b",
                "2,4",
                "-o",
            ])
            .arg(&out),
    );
    let matrix = std::fs::read_to_string(out.join("choose.toml")).unwrap();
    let cells = cnnbench_plan::matrix::Matrix::parse(&matrix, &["openvino-cpu"])
        .unwrap_or_else(|e| panic!("{e}\n{matrix}"));
    let hints: Vec<&str> = cells
        .cells
        .iter()
        .filter_map(|c| c.settings.get("hint").map(String::as_str))
        .collect();
    assert!(
        hints.contains(&"latency") && hints.contains(&"throughput"),
        "{matrix}"
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(text.contains("| openvino-cpu 2026.4.1, f32 "), "{text}");
    assert!(
        text.contains("throughput hint") || stderr.contains("did not run"),
        "{text}\n{stderr}"
    );
    // A cell that cannot run is said once, with OpenVINO's reason.
    for line in stderr.lines().filter(|l| l.contains("did not run")) {
        assert!(line.contains("does not split evenly"), "{stderr}");
    }
    assert!(!stderr.contains("error: run 1 of"), "{stderr}");
    let costs = std::fs::read_to_string(out.join("choose-accuracy.json")).unwrap();
    assert!(costs.contains("throughput hint"), "{costs}");
}
