//! The candle engine end to end (built with `--features candle`): every mode through
//! `run`, and `verify` against burn-flex. (Every op and four zoo models against burn-flex
//! are the engine crate's conformance suite.) Run by `.ci/run`.
#![cfg(feature = "candle")]

mod common;

use common::{cnnbench, result_files};
use predicates::prelude::*;

#[test]
fn runs_every_mode_and_records_candle() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["train", "infer", "step"] {
        let out = dir.path().join(mode);
        cnnbench()
            .args(["run", "resnet18", "--engine", "candle", "--mode", mode])
            .args(["--image-size", "32", "-b", "2", "--passes", "2", "-q", "-o"])
            .arg(&out)
            .assert()
            .success();
        let files = result_files(&out);
        assert_eq!(files.len(), 1, "{files:?}");
        let result: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
        assert_eq!(result["engine"]["name"], "candle");
        assert_eq!(result["engine"]["framework"], "candle");
        assert_eq!(result["engine"]["libraries"]["candle-core"], "0.11.1");
        assert!(result["engine"]["settings"]["pooling"]
            .as_str()
            .is_some_and(|s| s.contains("strided shifts")));
        assert_eq!(result["config"]["mode"], mode);
    }
}

#[test]
fn verify_against_burn_flex_passes_on_a_network_with_overlapping_pools() {
    // ResNet-18's stem max pool (3×3, stride 2, padded) is what candle cannot
    // differentiate itself; the gradients must still match burn-flex's.
    cnnbench()
        .args(["verify", "resnet18", "--engines", "burn-flex,candle"])
        .args(["--image-size", "32", "-b", "2"])
        .assert()
        .success()
        .stdout(
            predicate::str::contains("PASS").and(predicate::str::contains("every weight gradient")),
        );
}
