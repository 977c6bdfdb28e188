//! tract against burn-flex: the conformance suite's forward half (every op of the IR and
//! the suite's zoo models, same weights and input), `verify` on zoo models at small
//! sizes, and what the engine records and refuses.

use crate::*;
use cnnbench_engine::Engine;
use cnnbench_engine_burn::BurnFlexEngine;

fn tract() -> Box<dyn Engine> {
    Box::new(crate::engine(Some(2)).unwrap())
}

fn burn() -> Option<Box<dyn Engine>> {
    Some(Box::new(BurnFlexEngine::new(None).unwrap()))
}

cnnbench_conformance::engine_conformance! {
    engine: tract(),
    reference: burn(),
}

#[test]
fn verify_agrees_with_burn_flex_on_zoo_models_at_small_sizes() {
    let reference = burn().unwrap();
    if let Err(e) = cnnbench_conformance::small_zoo_models_against(&*tract(), &*reference) {
        panic!("{e:#}");
    }
}

#[test]
fn info_records_the_version_threads_and_optimisation() {
    let info = crate::engine(Some(2)).unwrap().info();
    assert_eq!(info.name, "tract");
    assert_eq!(info.framework_version, TRACT_VERSION);
    assert_eq!(info.threads, 2);
    assert_eq!(info.settings["optimisation"], "into_optimized");
    assert!(info.settings["model"].contains("opset 17"));
}

#[test]
fn inference_only_and_at_least_one_thread() {
    let engine = crate::engine(Some(1)).unwrap();
    assert!(!engine.capabilities().trains());
    assert!(engine.capabilities().weight_exchange);
    let err = crate::engine(Some(0)).err().expect("refused").to_string();
    assert!(err.contains("at least 1"), "{err}");
}
