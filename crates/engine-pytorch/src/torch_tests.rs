//! The pytorch engines running PyTorch itself (feature `torch-tests`): torch 2.11 must be
//! in `.venv-torch` or on the PATH's `python3`, where a user's run finds it; without it
//! these tests fail with the pip line, they do not skip.
//!
//! The eager engine runs the whole conformance suite against burn-flex (every op's
//! gradients against finite differences, every op and the suite's zoo models, batch
//! norm and dropout, refusals) and `verify` on small zoo models. The compiled engine
//! compiles for minutes on two cores: here it is checked on one small network in every
//! mode; `scripts/pytorch-compile-conformance.sh` runs the whole suite on it.

use crate::{Flavour, PytorchEngine, PytorchOptions};
use cnnbench_bench::verify::{tolerance_for, verify, VerifyRequest, DEFAULT_TOLERANCE};
use cnnbench_engine::{DeviceKind, Engine, Mode, Precision, SessionConfig};
use cnnbench_engine_burn::BurnFlexEngine;
use cnnbench_graph::ops::{Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder};

const EAGER: Flavour = Flavour {
    compiled: false,
    device: DeviceKind::Cpu,
};
const COMPILED: Flavour = Flavour {
    compiled: true,
    device: DeviceKind::Cpu,
};

fn engine(flavour: Flavour) -> PytorchEngine {
    let options = PytorchOptions {
        threads: Some(2),
        heap: "keep".into(),
        ..PytorchOptions::default()
    };
    PytorchEngine::new(flavour, options).unwrap_or_else(|e| panic!("{e:#}"))
}

fn eager() -> Box<dyn Engine> {
    Box::new(engine(EAGER))
}

fn burn() -> Option<Box<dyn Engine>> {
    Some(Box::new(BurnFlexEngine::new(None).unwrap()))
}

cnnbench_conformance::engine_conformance! {
    engine: eager(),
    reference: burn(),
}

#[test]
#[ignore = "40-60 s on 2 cores: scripts/slow-engine-tests.sh runs it (docs/src/architecture.md, \"Tests and CI time\")"]
fn verify_agrees_with_burn_flex_on_zoo_models_at_small_sizes() {
    let reference = burn().unwrap();
    if let Err(e) = cnnbench_conformance::small_zoo_models_against(&*eager(), &*reference) {
        panic!("{e:#}");
    }
}

/// A small residual network: convolution, batch norm, ReLU in place, max pool, add,
/// global pool, flatten, linear.
fn small_network() -> Graph {
    let mut b = GraphBuilder::new("small residual", [3, 16, 16]);
    let x = b.input();
    let stem = b.conv("stem", &x, Conv2d::new(8, 3).padding(1).bias(false));
    let bn = b.batch_norm("bn", &stem);
    let relu = b.relu("relu", &bn);
    let pool = b.max_pool("pool", &relu, MaxPool2d::new(2, 2));
    let conv = b.conv("conv", &pool, Conv2d::new(8, 3).padding(1));
    let sum = b.sum("sum", &[&conv, &pool]);
    let gap = b.adaptive_avg_pool("gap", &sum, 1, 1);
    let flat = b.flatten("flat", &gap);
    let fc = b.linear("fc", &flat, 5);
    b.finish(&fc).expect("a valid graph")
}

#[test]
#[ignore = "40-60 s on 2 cores: scripts/slow-engine-tests.sh runs it (docs/src/architecture.md, \"Tests and CI time\")"]
fn the_compiled_engine_computes_what_burn_flex_computes() {
    let reference = burn().unwrap();
    let compiled = engine(COMPILED);
    if let Err(e) = cnnbench_conformance::check_against(&compiled, &*reference, &small_network(), 2)
    {
        panic!("{e:#}");
    }
}

/// The conformance suite's checks against burn-flex on the compiled engine: every op
/// graph and the suite's zoo models (`scripts/pytorch-compile-conformance.sh`: tens of
/// minutes on two cores, so not in `.ci/run`).
#[test]
#[ignore = "tens of minutes on 2 cores: scripts/pytorch-compile-conformance.sh runs it"]
fn the_compiled_engine_passes_the_conformance_suite() {
    let reference = burn().unwrap();
    let compiled = engine(COMPILED);
    let failures: Vec<String> = [
        cnnbench_conformance::ops_against(&compiled, &*reference),
        cnnbench_conformance::models_against(&compiled, &*reference),
    ]
    .into_iter()
    .filter_map(|checked| checked.err().map(|e| format!("{e:#}")))
    .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_compiled_engine_compiles_apart_from_the_passes_and_warns_of_graphs_compiled_later() {
    let compiled = engine(COMPILED);
    let config = SessionConfig {
        mode: Mode::Train,
        batch_size: 2,
        seed: 1,
        precision: Precision::F32,
        deterministic: false,
        calibration: None,
    };
    let mut session = compiled.prepare(&small_network(), &config).unwrap();
    assert!(
        session.compile().unwrap(),
        "the compiled engine had nothing to compile"
    );
    session.begin_timed_passes().unwrap();
    for _ in 0..2 {
        session.prepare_batch().unwrap();
        session.forward().unwrap();
        session.prepare_output_grad().unwrap();
        session.backward().unwrap();
    }
    // Steady passes compile nothing more.
    assert_eq!(session.timed_pass_warnings().unwrap(), Vec::<String>::new());
    assert!(session.empty_call().is_some());
    assert!(session.worker_peak_rss().unwrap_or(0) > 1 << 20);
    // Dynamo's count is the worker's: another network compiled in the same worker while
    // these passes are timed shows as a compilation during them.
    session.begin_timed_passes().unwrap();
    let inference = SessionConfig {
        mode: Mode::Infer,
        ..config.clone()
    };
    let mut other = compiled.prepare(&small_network(), &inference).unwrap();
    assert!(other.compile().unwrap());
    let warnings = session.timed_pass_warnings().unwrap();
    assert!(
        warnings.len() == 1 && warnings[0].contains("during the timed passes"),
        "{warnings:?}"
    );
    // The eager engine has nothing to compile.
    let mut eager_session = eager().prepare(&small_network(), &config).unwrap();
    assert!(!eager_session.compile().unwrap());
}

#[test]
fn a_killed_worker_is_an_error_within_seconds_naming_the_engine() {
    let engine = engine(EAGER);
    let config = SessionConfig {
        mode: Mode::Infer,
        batch_size: 1,
        seed: 0,
        precision: Precision::F32,
        deterministic: false,
        calibration: None,
    };
    let mut session = engine.prepare(&small_network(), &config).unwrap();
    session.prepare_batch().unwrap();
    // SAFETY: kill(2) on the worker this test started.
    unsafe {
        libc::kill(engine.worker_pid() as i32, libc::SIGKILL);
    }
    let clock = std::time::Instant::now();
    let e = format!("{:#}", session.forward().unwrap_err());
    assert!(clock.elapsed() < std::time::Duration::from_secs(5));
    assert!(e.contains("pytorch's worker"), "{e}");
    assert!(
        e.contains("during 'forward'") || e.contains("during 'batch'"),
        "{e}"
    );
    assert!(e.contains("signal: 9"), "{e}");
}

#[test]
fn amp_bf16_is_within_bf16s_tolerance_of_f32_and_not_within_f32s() {
    let engine = engine(EAGER);
    let graph = small_network();
    let request = |tolerance| VerifyRequest {
        batch_size: 2,
        seed: 5,
        tolerance,
        weights: None,
        localize: false,
        precisions: [Precision::F32, Precision::AmpBf16],
        images: None,
    };
    let report = verify(
        &graph,
        &engine,
        &engine,
        &request(tolerance_for(Precision::AmpBf16)),
    )
    .unwrap();

    let outputs: Vec<_> = report
        .comparisons
        .iter()
        .filter(|c| c.name.starts_with("output"))
        .collect();
    assert!(!outputs.is_empty());
    let bf16 = tolerance_for(Precision::AmpBf16);
    for c in &outputs {
        assert!(
            c.passes(bf16),
            "{} off by {:.2e} at bf16's tolerance",
            c.name,
            c.max_relative_error
        );
    }
    // The raw error, not the verdict: across precisions a tensor also passes within its
    // own precision's floor, and bf16's explains this error.
    assert!(
        outputs
            .iter()
            .any(|c| c.max_relative_error > DEFAULT_TOLERANCE),
        "amp-bf16 matched f32 to 1e-4: autocast did not compute in bf16"
    );
}

#[test]
fn f16_on_the_cpu_is_refused_saying_what_it_computes_in() {
    let e = engine(EAGER)
        .capabilities()
        .check("pytorch", Mode::Infer, Precision::F16)
        .unwrap_err()
        .to_string();
    assert!(e.contains("amp-bf16"), "{e}");
}

/// After its timed passes a CPU session asks the worker which kernels ran: oneDNN's
/// convolutions and instruction set in f32 (the instruction set kept for a later
/// session of the same worker, which oneDNN does not name again); in bf16 either
/// oneDNN's bf16 kernels (AVX-512) or the warning that ATen's reference kernels ran.
#[test]
fn a_cpu_session_records_the_kernels_onednn_ran() {
    let engine = engine(EAGER);
    let graph = small_network();
    for round in 0..2 {
        let mut s = engine
            .prepare(&graph, &config(Mode::Train, Precision::F32))
            .unwrap();
        let chosen = s.kernels_chosen().unwrap();
        let conv = &chosen.settings["onednn_convolution"];
        assert!(
            !conv.starts_with("not oneDNN") && conv.contains('×'),
            "{chosen:?}"
        );
        assert!(
            chosen.settings.contains_key("onednn_isa"),
            "round {round}: {chosen:?}"
        );
        assert!(chosen.warnings.is_empty(), "{chosen:?}");
        // The session still runs afterwards.
        s.prepare_batch().unwrap();
        s.forward().unwrap();
    }
    let mut s = engine
        .prepare(&graph, &config(Mode::Infer, Precision::Bf16))
        .unwrap();
    let chosen = s.kernels_chosen().unwrap();
    let avx512 = std::arch::is_x86_feature_detected!("avx512bw")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx512dq");
    let fell_back = chosen.settings["onednn_convolution"] == "not oneDNN (ATen's own kernels)";
    assert_eq!(fell_back, !avx512, "{chosen:?}");
    assert_eq!(chosen.warnings.len(), usize::from(fell_back), "{chosen:?}");
}

fn config(mode: Mode, precision: Precision) -> SessionConfig {
    SessionConfig {
        mode,
        batch_size: 2,
        seed: 1,
        precision,
        deterministic: false,
        calibration: None,
    }
}

fn frozen_compiled() -> PytorchEngine {
    let options = PytorchOptions {
        threads: Some(2),
        heap: "keep".into(),
        freezing: true,
        ..PytorchOptions::default()
    };
    PytorchEngine::new(COMPILED, options).unwrap_or_else(|e| panic!("{e:#}"))
}

/// One inference output of `engine` in `precision` with `weights` on `input`.
fn infer(
    engine: &dyn Engine,
    graph: &Graph,
    precision: Precision,
    calibration: Option<&cnnbench_bench::quantize::Calibration>,
    weights: &cnnbench_graph::Weights,
    input: &cnnbench_graph::HostTensor,
) -> (cnnbench_graph::HostTensor, cnnbench_engine::ChosenKernels) {
    let config = SessionConfig {
        deterministic: true,
        calibration: calibration.map(|c| c.int8.clone()),
        ..config(Mode::Infer, precision)
    };
    let mut s = engine
        .prepare(graph, &config)
        .unwrap_or_else(|e| panic!("{e:#}"));
    s.exchange().unwrap().import_weights(weights).unwrap();
    // Before any pass: an int8 session quantises and compiles for it, outside the pass
    // whose kernels it reports.
    let chosen = s.kernels_chosen().unwrap_or_else(|e| panic!("{e:#}"));
    s.exchange().unwrap().set_input(input).unwrap();
    s.forward().unwrap_or_else(|e| panic!("{e:#}"));
    let output = s.exchange().unwrap().output().unwrap();
    (output, chosen)
}

/// pytorch-compile's int8 (torchao's PT2E with X86InductorQuantizer, freezing): on the
/// weights imported, calibrated on the images handed over, the output is within int8's
/// tolerance of burn-flex's f32 and not f32's own (it did quantise); oneDNN ran every
/// convolution and linear layer in int8, and the result says so; new weights are
/// quantised again (a network frozen with the old ones would miss them).
#[test]
fn int8_is_pt2e_quantised_and_runs_on_onednn_int8_kernels() {
    let reference = BurnFlexEngine::new(None).unwrap();
    let compiled = frozen_compiled();
    let graph = small_network();
    let input =
        cnnbench_engine::kit::InputBatches::new(&graph, &config(Mode::Infer, Precision::F32))
            .next_input();
    for seed in [3, 4] {
        let weights = cnnbench_graph::Weights::initial(&graph, seed);
        let calibration =
            cnnbench_bench::quantize::calibrate(&reference, &graph, &weights, seed, 8).unwrap();
        let (expected, _) = infer(&reference, &graph, Precision::F32, None, &weights, &input);
        let (got, chosen) = infer(
            &compiled,
            &graph,
            Precision::Int8,
            Some(&calibration),
            &weights,
            &input,
        );
        let error = cnnbench_graph::relative_l2_error(&got, &expected).unwrap();
        let cosine = cnnbench_graph::cosine_similarity(&got, &expected).unwrap();
        assert!(
            error < tolerance_for(Precision::Int8) && cosine > 0.99,
            "seed {seed}: relative error {error:.2e}, cosine {cosine:.5}"
        );
        assert!(
            error > 1e-5,
            "seed {seed}: matched f32 to {error:.1e}: nothing was quantised"
        );
        assert_eq!(
            chosen.settings.get("int8_layer_share").map(String::as_str),
            Some("100.0%"),
            "{chosen:?}"
        );
        // One primitive for each of the network's three heavy layers: none of compiling's.
        let kernels: usize = chosen.settings["int8_kernels"]
            .split(", ")
            .map(|k| k.rsplit_once('×').unwrap().1.parse::<usize>().unwrap())
            .sum();
        assert_eq!(kernels, 3, "{chosen:?}");
        assert!(chosen.warnings.is_empty(), "{chosen:?}");
        let record =
            calibration.quantization_record(&compiled.info().name, compiled.own_quantization());
        assert!(record.scheme.contains("X86InductorQuantizer"), "{record:?}");
        assert_eq!(record.calibration.engine, "pytorch-compile");
    }
}

/// int8 on pytorch-compile is inference with freezing: without it, or in a training
/// mode, the session is refused saying what to change.
#[test]
fn int8_without_freezing_or_in_training_is_refused_saying_what_to_change() {
    let reference = BurnFlexEngine::new(None).unwrap();
    let graph = small_network();
    let weights = cnnbench_graph::Weights::initial(&graph, 1);
    let calibration =
        cnnbench_bench::quantize::calibrate(&reference, &graph, &weights, 1, 1).unwrap();
    let int8 = |mode| SessionConfig {
        calibration: Some(calibration.int8.clone()),
        ..config(mode, Precision::Int8)
    };
    let e = engine(COMPILED)
        .prepare(&graph, &int8(Mode::Infer))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("--freezing"), "{e}");
    let frozen = frozen_compiled();
    for mode in [Mode::Train, Mode::Step] {
        let e = frozen
            .prepare(&graph, &int8(mode))
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("freezing") && e.contains("it runs: infer"),
            "{e}"
        );
    }
    // The eager engine has no int8, and says who has.
    let e = engine(EAGER)
        .prepare(&graph, &int8(Mode::Infer))
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("pytorch-compile"), "{e}");
}
