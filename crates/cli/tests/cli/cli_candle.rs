//! The candle engine end to end (built with `--features candle`): every mode through
//! `run`, and `verify` against burn-flex. (Every op and four zoo models against burn-flex
//! are the engine crate's conformance suite.) Run by `.ci/run`.
#![cfg(feature = "candle")]

use crate::common::*;
use predicates::prelude::*;

#[test]
fn runs_every_mode_and_records_candle() {
    for mode in ["train", "infer", "step"] {
        let result = tiny_run("resnet18", "candle", &["--mode", mode]);
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
    verify_against_burn_flex("candle", &["-b", "2"]).stdout(
        predicate::str::contains("PASS").and(predicate::str::contains("every weight gradient")),
    );
}
