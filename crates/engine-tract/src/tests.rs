//! tract against burn-flex: the conformance suite's forward half (every op of the IR and
//! the suite's zoo models, same weights and input), `verify` on zoo models at small
//! sizes, and what the engine records and refuses.

use crate::*;
use cnnbench_bench::verify::{verify, VerifyRequest, DEFAULT_TOLERANCE};
use cnnbench_engine::Engine;
use cnnbench_engine_burn::BurnFlexEngine;

fn tract() -> Box<dyn Engine> {
    Box::new(TractEngine::new(Some(2)).unwrap())
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
    for (name, size) in [
        ("resnet18", 32),
        ("mobilenet-v3-large", 32),
        ("efficientnet-b0", 32),
        ("convnext-tiny", 32),
        ("shufflenet-v2-x1.0", 32),
        ("inception-v1", 64),
        // A 1×1 map pooled to 6×6: the exporter's averaging MatMuls.
        ("alexnet", 64),
    ] {
        let g = cnnbench_zoo::build(name, Some([3, size, size])).unwrap();
        let request = VerifyRequest {
            batch_size: 2,
            seed: 3,
            tolerance: DEFAULT_TOLERANCE,
            weights: None,
        };
        let reference = burn().unwrap();
        let report = verify(&g, &*reference, &*tract(), &request).unwrap();
        assert!(report.passed(), "{name}: {:?}", report.failures());
    }
}

#[test]
fn info_records_the_version_threads_and_optimisation() {
    let info = TractEngine::new(Some(2)).unwrap().info();
    assert_eq!(info.name, "tract");
    assert_eq!(info.framework_version, TRACT_VERSION);
    assert_eq!(info.threads, 2);
    assert_eq!(info.settings["optimisation"], "into_optimized");
    assert!(info.settings["model"].contains("opset 17"));
}

#[test]
fn inference_only_and_at_least_one_thread() {
    let engine = TractEngine::new(Some(1)).unwrap();
    assert!(!engine.capabilities().trains());
    assert!(engine.capabilities().weight_exchange);
    let err = TractEngine::new(Some(0))
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("at least 1"), "{err}");
}
