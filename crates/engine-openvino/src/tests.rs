//! openvino-cpu against burn-flex: the conformance suite's forward half (every op of the
//! IR and the suite's zoo models, same weights and input), `verify` on zoo models at
//! small sizes, bf16 against f32, the throughput split, and what the engine records and
//! refuses. These tests need OpenVINO's library: without it they fail with the install
//! line (they do not skip).

use crate::*;
use cnnbench_engine::{Engine, Mode, Precision, SessionConfig};
use cnnbench_engine_burn::BurnFlexEngine;
use cnnbench_graph::{HostTensor, Weights};

fn openvino_engine(threads: usize, hint: PerformanceHint) -> OpenVinoEngine {
    with_settings(
        threads,
        OpenVinoSettings {
            hint,
            ..OpenVinoSettings::default()
        },
    )
}

fn with_settings(threads: usize, settings: OpenVinoSettings) -> OpenVinoEngine {
    crate::engine(Some(threads), settings).unwrap_or_else(|e| panic!("{e:#}"))
}

fn openvino_cpu() -> Box<dyn Engine> {
    Box::new(openvino_engine(2, PerformanceHint::Latency))
}

fn burn() -> Option<Box<dyn Engine>> {
    Some(Box::new(BurnFlexEngine::new(None).unwrap()))
}

cnnbench_conformance::engine_conformance! {
    engine: openvino_cpu(),
    reference: burn(),
}

#[test]
fn verify_agrees_with_burn_flex_on_zoo_models_at_small_sizes() {
    let reference = burn().unwrap();
    if let Err(e) = cnnbench_conformance::small_zoo_models_against(&*openvino_cpu(), &*reference) {
        panic!("{e:#}");
    }
}

fn infer(precision: Precision, batch_size: usize) -> SessionConfig {
    SessionConfig {
        mode: Mode::Infer,
        batch_size,
        seed: 5,
        precision,
        deterministic: true,
        calibration: None,
    }
}

/// The output of `engine` on resnet18 at 32×32 with these weights and input.
fn output_of(
    engine: &dyn Engine,
    config: &SessionConfig,
    weights: &Weights,
    input: &HostTensor,
) -> (HostTensor, std::collections::BTreeMap<String, String>) {
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let mut session = engine
        .prepare(&graph, config)
        .unwrap_or_else(|e| panic!("{e:#}"));
    session.import_weights(weights).unwrap();
    session.set_input(input).unwrap();
    session.forward().unwrap();
    (session.output().unwrap(), session.reported_settings())
}

fn relative_l2(a: &HostTensor, b: &HostTensor) -> f64 {
    assert_eq!(a.shape, b.shape);
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (x, y) in a.data.iter().zip(&b.data) {
        diff += f64::from(x - y).powi(2);
        norm += f64::from(*y).powi(2);
    }
    (diff / norm).sqrt()
}

#[test]
fn bf16_runs_in_bf16_where_the_cpu_has_it_and_is_refused_where_not() {
    let engine = openvino_engine(2, PerformanceHint::Latency);
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&graph, 3);
    let input = HostTensor::standard_normal(vec![2, 3, 32, 32], 4);
    let reference = burn().unwrap();
    let (f32_out, f32_reported) = output_of(&engine, &infer(Precision::F32, 2), &weights, &input);
    let (burn_out, _) = output_of(&*reference, &infer(Precision::F32, 2), &weights, &input);
    assert_eq!(f32_reported["inference_precision"], "f32");
    let f32_error = relative_l2(&f32_out, &burn_out);
    assert!(f32_error < 1e-4, "f32 off by {f32_error:.2e}");

    let has_bf16 = engine.info().settings["optimization_capabilities"]
        .split(' ')
        .any(|c| c == "BF16");
    let bf16 = engine.prepare(&graph, &infer(Precision::Bf16, 2));
    if has_bf16 {
        assert!(engine.capabilities().precisions.contains(&Precision::Bf16));
        let (bf16_out, reported) = output_of(&engine, &infer(Precision::Bf16, 2), &weights, &input);
        assert_eq!(reported["inference_precision"], "bf16");
        let mut session = engine.prepare(&graph, &infer(Precision::Bf16, 2)).unwrap();
        // OpenVINO renames the convolutions it folds a batch norm into, so the share is
        // counted in layers.
        let kernels = session.kernels_chosen().unwrap();
        assert!(
            kernels.settings["bf16_layer_share"].ends_with('%'),
            "{kernels:?}"
        );
        assert!(kernels.warnings.is_empty(), "{kernels:?}");
        // bf16 keeps 8 bits of mantissa: about 1e-2 off f32 through 18 layers, and
        // certainly not f32's 1e-6 (which would mean it ran f32).
        let error = relative_l2(&bf16_out, &burn_out);
        assert!(error < 5e-2 && error > 1e-4, "bf16 off f32 by {error:.2e}");
    } else {
        let why = format!("{:#}", bf16.err().expect("refused without BF16"));
        assert!(why.contains("no BF16"), "{why}");
    }
}

#[test]
fn throughput_splits_the_batch_among_the_requests_and_gives_the_same_answer() {
    let latency = openvino_engine(2, PerformanceHint::Latency);
    let throughput = openvino_engine(2, PerformanceHint::Throughput);
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&graph, 3);
    let input = HostTensor::standard_normal(vec![4, 3, 32, 32], 6);
    let (one, one_reported) = output_of(&latency, &infer(Precision::F32, 4), &weights, &input);
    let (split, reported) = output_of(&throughput, &infer(Precision::F32, 4), &weights, &input);
    assert_eq!(one_reported["infer_requests"], "1");
    assert_eq!(one_reported["num_streams"], "1");
    let requests: usize = reported["infer_requests"].parse().unwrap();
    assert!(requests >= 1, "{reported:?}");
    let error = relative_l2(&split, &one);
    assert!(error < 1e-5, "the split batch is off by {error:.2e}");
    assert_eq!(throughput.info().settings["performance_hint"], "throughput");
    assert_eq!(throughput.info().variant, vec!["throughput hint"]);
    assert!(latency.info().variant.is_empty());
}

/// `streams` is OpenVINO's `NUM_STREAMS`: asked for, the compiled model reports it, the
/// throughput hint keeps that many requests in flight, and the label says it.
#[test]
fn the_streams_setting_reaches_openvino_and_the_label() {
    let two = with_settings(
        2,
        OpenVinoSettings {
            hint: PerformanceHint::Throughput,
            streams: Some(2),
        },
    );
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&graph, 3);
    let input = HostTensor::standard_normal(vec![4, 3, 32, 32], 6);
    let (_, reported) = output_of(&two, &infer(Precision::F32, 4), &weights, &input);
    assert_eq!(reported["num_streams"], "2", "{reported:?}");
    assert_eq!(reported["infer_requests"], "2", "{reported:?}");
    assert_eq!(two.info().settings["num_streams_asked"], "2");
    assert_eq!(two.info().variant, vec!["throughput hint", "2 streams"]);
}

#[test]
fn sessions_side_by_side_are_not_pinned_to_the_same_cores() {
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&graph, 3);
    let input = HostTensor::standard_normal(vec![1, 3, 32, 32], 6);
    let alone = with_settings(1, OpenVinoSettings::default());
    let (_, reported) = output_of(&alone, &infer(Precision::F32, 1), &weights, &input);
    assert_eq!(
        reported["cpu_pinning"], "YES",
        "OpenVINO's default, kept for one session"
    );
    let side_by_side = crate::engine_side_by_side(Some(1), OpenVinoSettings::default(), 2)
        .unwrap_or_else(|e| panic!("{e:#}"));
    let (_, reported) = output_of(&side_by_side, &infer(Precision::F32, 1), &weights, &input);
    assert_eq!(reported["cpu_pinning"], "NO", "{reported:?}");
}

#[test]
fn info_records_openvinos_build_threads_hint_and_cpu() {
    let engine = openvino_engine(1, PerformanceHint::Latency);
    let info = engine.info();
    assert_eq!(info.name, "openvino-cpu");
    assert_eq!(info.framework, "openvino");
    assert!(info.framework_version.starts_with("20"), "{info:?}");
    assert!(info.libraries["openvino"].starts_with(&info.framework_version));
    assert_eq!(info.libraries["openvino-crate"], OPENVINO_CRATE_VERSION);
    assert_eq!(info.threads, 1);
    assert_eq!(info.settings["inference_num_threads"], "1");
    assert_eq!(info.settings["performance_hint"], "latency");
    assert!(info.settings["optimization_capabilities"].contains("FP32"));
    assert!(info.settings["model"].contains("opset 17"));
    assert!(engine
        .runtime()
        .library()
        .to_string_lossy()
        .contains("libopenvino_c"));
    assert!(!engine.capabilities().trains());
    let err = crate::engine(Some(0), OpenVinoSettings::default())
        .err()
        .expect("refused")
        .to_string();
    assert!(err.contains("at least 1"), "{err}");
}

/// int8: OpenVINO runs the QDQ export within int8's tolerance of the f32 answer, where
/// its CPU plugin reports INT8; where it does not, int8 is refused saying so.
#[test]
fn int8_computes_the_f32_answer_within_its_tolerance_or_is_refused_saying_why() {
    let engine = openvino_cpu();
    let reference = burn().unwrap();
    if engine.capabilities().precisions.contains(&Precision::Int8) {
        let chosen = cnnbench_conformance::int8_against(&*engine, &*reference)
            .unwrap_or_else(|e| panic!("{e:#}"));
        // The convolutions (depthwise and squeeze-and-excitation ones too) and the
        // classifier, by OpenVINO's own profiling records: all of them on the AVX-512
        // CPUs seen (a CPU whose kernels differ may leave a small layer in f32, so
        // what is asked is the warning's threshold).
        for (model, kernels) in chosen {
            let share: f64 = kernels.settings["int8_mac_share"]
                .trim_end_matches('%')
                .parse()
                .unwrap();
            assert!(share >= 90.0, "{model}: {kernels:?}");
            assert!(
                kernels.settings["int8_kernels"].contains("_I8"),
                "{model}: {kernels:?}"
            );
            assert!(kernels.warnings.is_empty(), "{model}: {kernels:?}");
        }
    } else {
        let err = engine
            .capabilities()
            .check("openvino-cpu", Mode::Infer, Precision::Int8)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no INT8"), "{err}");
    }
}

/// "Ran as asked" on OpenVINO itself: the f32 network, profiled as if int8 had been
/// asked, ran none of its layers in int8, and the warning says so and names them (the
/// fallback OpenVINO makes silently when it cannot quantise a layer).
#[test]
fn a_network_openvino_ran_in_f32_is_caught_when_int8_was_asked() {
    drop(openvino_cpu()); // loads the library
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&graph, 3);
    let bytes = cnnbench_import::onnx::export::to_onnx_as(&graph, &weights, None).unwrap();
    let properties = [("INFERENCE_NUM_THREADS".to_string(), "2".to_string())];
    let layers = crate::profiling::executed_layers(&bytes, &properties, [1, 3, 32, 32])
        .unwrap_or_else(|e| panic!("{e:#}"));
    assert!(
        layers.iter().any(|l| l.node_type == "Convolution"),
        "{layers:?}"
    );
    let chosen =
        crate::profiling::coverage_of(&graph, &layers, Precision::Int8).chosen_kernels("OpenVINO");
    let warning = chosen.warnings.first().expect("a warning");
    assert!(
        warning.starts_with("not run as asked: OpenVINO ran 0.0% of the")
            && warning.contains(" and "),
        "{warning}"
    );
}
