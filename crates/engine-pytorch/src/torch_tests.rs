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
#[ignore]
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
