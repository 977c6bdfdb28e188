//! The `openvino-cpu` engine: OpenVINO's CPU plugin through the `openvino` crate. The
//! Graph goes through cnnbench's ONNX exporter into an in-memory model with the
//! session's weights; OpenVINO reads it with its ONNX front end, fixes the batch, and
//! compiles it for the CPU with the run's precision hint (`f32`, or `bf16`/`f16` where
//! the CPU computes in them), performance hint (`latency`: one infer request;
//! `throughput`: the requests OpenVINO asks for, in flight together, the batch split
//! among them) and thread count. Inference only. What OpenVINO reports back after
//! compiling — the precision it will really run, its streams and requests — is recorded,
//! and a precision it would not honour is refused rather than run as something else.
//!
//! OpenVINO is a C++ library that cnnbench does not build or download: the feature
//! `openvino` compiles the bindings, and `libopenvino_c.so` is loaded at run time from
//! the PyPI wheel `openvino` (see [`library`]). Without the feature this crate builds
//! with nothing extra and only says how to get the engine.

use cnnbench_engine::{Capabilities, Precision};

pub mod library;
#[cfg(feature = "openvino")]
mod profiling;
mod provider;
#[cfg(feature = "openvino")]
mod session;
pub use provider::{providers, OpenVinoSettings, PerformanceHint};

#[cfg(feature = "openvino")]
pub use session::{engine, engine_side_by_side, OpenVinoEngine, OpenVinoRuntime};

/// The engine's name on the command line and in result files.
pub const ENGINE_NAME: &str = "openvino-cpu";
/// The `openvino` crate (the Rust bindings) this engine is built against (pinned in
/// Cargo.toml).
pub const OPENVINO_CRATE_VERSION: &str = "0.11.1";
/// Whether this build has the engine.
pub const BUILT: bool = cfg!(feature = "openvino");
/// How a build gets this engine, for error messages and `cnnbench engines`.
pub const SETUP_HINT: &str = "build with `cargo build --release --features cnnbench-cli/openvino`, then `pip install openvino==2026.4.1` into .venv-torch (or set OPENVINO_C_LIBRARY)";

/// What it may do, known without loading OpenVINO: inference on the CPU in f32, bf16,
/// f16 or int8 (cnnbench's QDQ export), weights exchanged. A started engine narrows the low precisions to those the
/// CPU plugin reports (`OPTIMIZATION_CAPABILITIES`).
pub fn capabilities() -> Capabilities {
    Capabilities {
        precisions: vec![
            Precision::F32,
            Precision::Bf16,
            Precision::F16,
            Precision::Int8,
        ],
        ..Capabilities::cpu_f32_inference(cnnbench_host::memory_bytes())
    }
}

/// Whether the engine can run here, and if not, what to do: not built, or OpenVINO's
/// library not found (nothing is loaded to answer).
pub fn availability() -> Result<(), String> {
    if BUILT {
        library::find(&library::search_places()).map(|_| ())
    } else {
        Err(cnnbench_engine::provider::not_in_this_build(SETUP_HINT))
    }
}

#[cfg(all(test, feature = "openvino"))]
mod tests;

#[cfg(all(test, not(feature = "openvino")))]
mod without_openvino {
    #[test]
    fn says_how_to_get_the_engine() {
        let why = super::availability().unwrap_err();
        assert!(why.contains("--features cnnbench-cli/openvino"), "{why}");
        assert!(why.contains("pip install openvino==2026.4.1"), "{why}");
        assert!(!super::capabilities().trains());
    }
}
