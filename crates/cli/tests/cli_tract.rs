//! The tract engine end to end (built with `--features tract`): an inference run that
//! records tract's version and optimisation, `verify` against burn-flex from the command
//! line, and the refusal of training modes. (Every op and the suite's zoo models against
//! burn-flex are the engine crate's conformance tests.)
#![cfg(feature = "tract")]

mod common;

use common::{cnnbench, result_files};
use predicates::prelude::*;

#[test]
fn an_inference_run_records_tract_and_its_settings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    cnnbench()
        .args([
            "run",
            "mobilenet-v2",
            "--engine",
            "tract",
            "--mode",
            "infer",
        ])
        .args(["--image-size", "32", "-b", "2", "--passes", "2", "-q", "-o"])
        .arg(&out)
        .assert()
        .success();
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let engine = &result["engine"];
    assert_eq!(engine["name"], "tract", "{engine}");
    assert_eq!(engine["framework_version"], "0.23.9", "{engine}");
    assert_eq!(
        engine["settings"]["optimisation"], "into_optimized",
        "{engine}"
    );
}

#[test]
fn verify_against_burn_flex_compares_the_inference_output() {
    cnnbench()
        .args(["verify", "resnet18", "--engines", "burn-flex,tract"])
        .args(["--image-size", "32"])
        .assert()
        .success()
        .stdout(predicate::str::contains("output (infer)"));
}

#[test]
fn training_is_refused_with_what_tract_runs() {
    cnnbench()
        .args(["run", "resnet18", "--engine", "tract", "--mode", "train"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "tract cannot run train mode; it runs: infer",
        ));
}
