//! The tract engine end to end (built with `--features tract`): an inference run that
//! records tract's version and optimisation, `verify` against burn-flex from the command
//! line, and the refusal of training modes. (Every op and the suite's zoo models against
//! burn-flex are the engine crate's conformance tests.)
#![cfg(feature = "tract")]

use crate::common::*;
use predicates::prelude::*;

#[test]
fn an_inference_run_records_tract_and_its_settings() {
    let result = tiny_run("mobilenet-v2", "tract", &["--mode", "infer"]);
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
    verify_against_burn_flex("tract", &[]).stdout(predicate::str::contains("output (infer)"));
}

#[test]
fn training_is_refused_with_what_tract_runs() {
    assert_training_refused("tract");
}

/// tract runs the model as a whole: `--localize` says it cannot look inside, not
/// something vaguer.
#[test]
fn localize_is_refused_for_a_whole_model_engine() {
    cnnbench()
        .args(["verify", "resnet18", "--engines", "burn-flex,tract"])
        .args(["--image-size", "32", "-b", "1", "--localize"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "tract cannot be localized: this engine cannot show its nodes' outputs",
        ));
}
