//! ort-cpu against burn-flex: the conformance suite's forward half (every op of the IR and
//! the suite's zoo models, same weights and input), `verify` on zoo models at small
//! sizes, and what the engine records and refuses. These tests need ONNX Runtime's
//! library: without it they fail with the install line (they do not skip).

use crate::*;
use cnnbench_engine::Engine;
use cnnbench_engine_burn::BurnFlexEngine;

fn ort_engine(threads: usize) -> OrtEngine {
    crate::engine(Some(threads), OrtSettings::default()).unwrap_or_else(|e| panic!("{e:#}"))
}

fn ort_cpu() -> Box<dyn Engine> {
    Box::new(ort_engine(2))
}

fn burn() -> Option<Box<dyn Engine>> {
    Some(Box::new(BurnFlexEngine::new(None).unwrap()))
}

cnnbench_conformance::engine_conformance! {
    engine: ort_cpu(),
    reference: burn(),
}

#[test]
fn verify_agrees_with_burn_flex_on_zoo_models_at_small_sizes() {
    let reference = burn().unwrap();
    if let Err(e) = cnnbench_conformance::small_zoo_models_against(&*ort_cpu(), &*reference) {
        panic!("{e:#}");
    }
}

#[test]
fn info_records_onnx_runtimes_own_version_threads_level_and_provider() {
    let engine = ort_engine(2);
    let info = engine.info();
    assert_eq!(info.name, "ort-cpu");
    assert_eq!(info.framework, "onnxruntime");
    // The library's own string, e.g. "1.32.0", and it is the file that was loaded.
    let version = onnxruntime_version(engine.runtime().library()).unwrap();
    assert_eq!(info.framework_version, version);
    assert!(
        version.split('.').count() == 3 && version.starts_with("1."),
        "{version}"
    );
    assert!(engine
        .runtime()
        .library()
        .to_string_lossy()
        .contains("libonnxruntime"));
    assert_eq!(info.libraries["onnxruntime"], version);
    assert_eq!(info.libraries["ort"], ORT_CRATE_VERSION);
    assert_eq!(info.threads, 2);
    assert_eq!(info.settings["intra_op_threads"], "2");
    assert_eq!(info.settings["inter_op_threads"], "1");
    assert_eq!(
        info.settings["graph_optimization_level"],
        "all (ORT_ENABLE_ALL)"
    );
    assert!(info.variant.is_empty());
    assert_eq!(info.settings["execution_provider"], "CPUExecutionProvider");
    assert!(info.settings["model"].contains("opset 17"));
}

#[test]
fn a_file_that_is_not_onnx_runtime_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("libonnxruntime.so.1.32.0");
    std::fs::write(&fake, b"not a library").unwrap();
    let err = format!("{:#}", onnxruntime_version(&fake).unwrap_err());
    assert!(err.contains("libonnxruntime.so.1.32.0"), "{err}");
    assert!(err.contains("pip install onnxruntime==1.32.0"), "{err}");
}

#[test]
fn inference_only_and_at_least_one_thread() {
    let engine = ort_engine(1);
    assert!(!engine.capabilities().trains());
    assert!(engine.capabilities().weight_exchange);
    let err = crate::engine(Some(0), OrtSettings::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("at least 1"), "{err}");
}

/// `graph-optimization` reaches ONNX Runtime: the unoptimised graph computes the same
/// function, and the record and the label say which graph ran.
#[test]
fn the_graph_optimization_setting_reaches_onnx_runtime_and_the_label() {
    use cnnbench_engine::{Mode, Precision, SessionConfig};
    use cnnbench_graph::{HostTensor, Weights};
    let disabled = crate::engine(
        Some(1),
        OrtSettings {
            graph_optimization: GraphOptimization::Disabled,
            ..OrtSettings::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e:#}"));
    let info = disabled.info();
    assert_eq!(
        info.settings["graph_optimization_level"],
        "disabled (ORT_DISABLE_ALL)"
    );
    assert_eq!(info.variant, vec!["graph optimization disabled"]);
    assert!(ort_engine(1).info().variant.is_empty());
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let config = SessionConfig {
        mode: Mode::Infer,
        batch_size: 2,
        seed: 1,
        precision: Precision::F32,
        deterministic: true,
        calibration: None,
    };
    let weights = Weights::initial(&graph, 5);
    let input = HostTensor::standard_normal(vec![2, 3, 32, 32], 9);
    let output = |engine: &dyn Engine| {
        let mut session = engine
            .prepare(&graph, &config)
            .unwrap_or_else(|e| panic!("{e:#}"));
        session.import_weights(&weights).unwrap();
        session.set_input(&input).unwrap();
        session.forward().unwrap();
        session.output().unwrap()
    };
    let (plain, optimised) = (output(&disabled), output(&ort_engine(1)));
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (a, b) in plain.data.iter().zip(&optimised.data) {
        diff += f64::from(a - b).powi(2);
        norm += f64::from(*b).powi(2);
    }
    let error = (diff / norm).sqrt();
    assert!(error < 1e-4, "the unoptimised graph is off by {error:.2e}");
}

/// int8: the QDQ export with burn-flex's calibration computes what f32 does, within
/// int8's tolerance, and ONNX Runtime runs every convolution and linear layer of the
/// zoo's models in int8 (its optimised graph says so).
#[test]
fn int8_computes_the_f32_answer_within_its_tolerance_all_in_int8_kernels() {
    let reference = burn().unwrap();
    let chosen = cnnbench_conformance::int8_against(&ort_engine(2), &*reference)
        .unwrap_or_else(|e| panic!("{e:#}"));
    for (model, kernels) in chosen {
        assert_eq!(
            kernels.settings["int8_mac_share"], "100.0%",
            "{model}: {kernels:?}"
        );
        assert!(
            kernels.settings["int8_kernels"].contains("QLinearConv"),
            "{model}: {kernels:?}"
        );
        assert!(kernels.warnings.is_empty(), "{model}: {kernels:?}");
    }
}

/// An int8 session of one image for `graph` with `weights`, its ranges calibrated on
/// burn-flex (two images, as `run --precision int8` calibrates).
fn int8_config(
    graph: &cnnbench_graph::Graph,
    weights: &cnnbench_graph::Weights,
) -> cnnbench_engine::SessionConfig {
    use cnnbench_engine::{Mode, Precision, SessionConfig};
    let reference = burn().unwrap();
    let calibration =
        cnnbench_bench::quantize::calibrate(&*reference, graph, weights, 1, 2).unwrap();
    SessionConfig {
        mode: Mode::Infer,
        batch_size: 1,
        seed: 1,
        precision: Precision::Int8,
        deterministic: true,
        calibration: Some(calibration.int8),
    }
}

/// `int8-products` reaches ONNX Runtime: `fast` runs every int8 convolution on s8
/// weights (its u8 × s8 kernels); on a CPU without VNNI, whose u8 × s8 pair sums
/// saturate, `exact` and `auto` run them on u8 weights (its exact u8 × u8 kernels),
/// and on one with VNNI `auto` keeps the fast ones. The record and the label say which.
#[test]
fn the_int8_products_setting_reaches_onnx_runtime_the_record_and_the_label() {
    use cnnbench_graph::Weights;
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&graph, 2);
    let config = int8_config(&graph, &weights);
    let exact_weights = "u8 (exact products)";
    let vnni = cpu_has_vnni();
    let mut cases = vec![
        (Int8Products::Fast, Some("s8")),
        (
            Int8Products::Auto,
            Some(if vnni { "s8" } else { exact_weights }),
        ),
    ];
    // With VNNI ONNX Runtime may keep s8 weights when asked for exact products (its
    // u8 × s8 kernels are exact there); without it, it must rewrite them.
    cases.push((Int8Products::Exact, (!vnni).then_some(exact_weights)));
    for (products, expected) in cases {
        let engine = crate::engine(
            Some(1),
            OrtSettings {
                int8_products: products,
                ..OrtSettings::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
        let info = engine.info();
        let record = &info.settings["int8_products"];
        assert!(record.starts_with(products.as_str()), "{record}");
        let exact = products.exact_kernels(vnni);
        assert_eq!(record.contains("exact: u8 x u8"), exact, "{record}");
        assert_eq!(record.contains("has no VNNI"), !vnni, "{record}");
        let label = info.variant.join(", ");
        match products {
            Int8Products::Auto => assert!(info.variant.is_empty(), "{label}"),
            Int8Products::Exact | Int8Products::Fast => {
                assert_eq!(label, format!("int8 products {}", products.as_str()))
            }
        }
        let mut session = engine
            .prepare(&graph, &config)
            .unwrap_or_else(|e| panic!("{e:#}"));
        let kernels = session.kernels_chosen().unwrap();
        let weights = &kernels.settings["int8_conv_weights"];
        if let Some(expected) = expected {
            assert_eq!(weights, expected, "{products:?}: {kernels:?}");
        }
        assert_eq!(kernels.settings["int8_mac_share"], "100.0%", "{kernels:?}");
    }
    assert!(Int8Products::Exact.exact_kernels(true));
    assert!(!Int8Products::Fast.exact_kernels(false));
    assert!(Int8Products::Auto.exact_kernels(false));
    assert!(!Int8Products::Auto.exact_kernels(true));
}

/// A convolution whose output is the network's output has no quantised output to fuse
/// into ONNX Runtime's `QLinearConv`: it runs in f32, and the record says so by name.
#[test]
fn a_convolution_left_in_f32_is_caught_and_named() {
    use cnnbench_engine::SessionConfig;
    use cnnbench_graph::ops::Conv2d;
    use cnnbench_graph::{GraphBuilder, Weights};
    let mut b = GraphBuilder::new("float tail", [3, 16, 16]);
    let x = b.input();
    let y = b.conv("small", &x, Conv2d::new(4, 3).padding(1));
    let y = b.relu("relu", &y);
    let y = b.conv("large_tail", &y, Conv2d::new(64, 3).padding(1));
    let graph = b.finish(&y).unwrap();
    let weights = Weights::initial(&graph, 1);
    let config = int8_config(&graph, &weights);
    let mut session = ort_engine(1)
        .prepare(&graph, &config)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let kernels = session.kernels_chosen().unwrap();
    assert_eq!(kernels.warnings.len(), 1, "{kernels:?}");
    let warning = &kernels.warnings[0];
    assert!(
        warning.contains("not run as asked") && warning.contains("large_tail"),
        "{warning}"
    );
    assert!(!warning.contains("small"), "{warning}");
    // Without ranges an int8 session is refused, saying what it lacks.
    let err = ort_engine(1)
        .prepare(
            &graph,
            &SessionConfig {
                calibration: None,
                ..config
            },
        )
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("calibrated activation ranges"), "{err}");
}
