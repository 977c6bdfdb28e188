//! The `ort-cpu` engine: ONNX Runtime's CPU execution provider through the `ort` crate.
//! The Graph goes through cnnbench's ONNX exporter into an in-memory model with the
//! session's weights; ONNX Runtime optimises it (all graph optimisation levels: constant
//! folding, Conv+BatchNorm and activation fusions, the NCHWc layout) and runs it.
//! Inference only: ONNX Runtime's inference sessions have no backward pass. Weights are
//! exchanged (importing rebuilds the session), so `cnnbench verify` compares it with a
//! training engine's inference output.
//!
//! ONNX Runtime is a C++ library that cnnbench does not build or download: the feature
//! `ort` compiles the bindings, and the library is loaded at run time from the PyPI wheel
//! `onnxruntime` (see [`library`]). Without the feature this crate builds with nothing
//! extra and only says how to get the engine.

use cnnbench_engine::{Capabilities, Precision};

#[cfg(feature = "ort")]
pub mod library;
mod provider;
#[cfg(feature = "ort")]
mod session;
pub use provider::{cpu_has_vnni, providers, GraphOptimization, Int8Products, OrtSettings};

#[cfg(feature = "ort")]
pub use session::{engine, onnxruntime_version, OrtEngine, OrtRuntime};

/// The engine's name on the command line and in result files.
pub const ENGINE_NAME: &str = "ort-cpu";
/// The `ort` crate (the Rust bindings) this engine is built against (pinned in Cargo.toml).
pub const ORT_CRATE_VERSION: &str = "2.0.0-rc.15";
/// Whether this build has the engine.
pub const BUILT: bool = cfg!(feature = "ort");
/// How a build gets this engine, for error messages and `cnnbench engines`.
pub const SETUP_HINT: &str = "build with `cargo build --release --features cnnbench-cli/ort`, then `pip install onnxruntime==1.32.0` into .venv-torch (or set ORT_DYLIB_PATH)";

/// What it can do: inference in f32 and int8 (cnnbench's QDQ export) on the CPU, weights
/// exchanged. f16 was measured and
/// refused (`scripts/ort_f16.py`, docs/src/onnx.md): the CPU provider has no f16
/// convolution on x86 and runs an f16-converted model in f32 behind casts it inserts.
pub fn capabilities() -> Capabilities {
    let mut capabilities = Capabilities::cpu_f32_inference(cnnbench_host::memory_bytes());
    capabilities.precisions.push(Precision::Int8);
    capabilities
        .refusing(
            Precision::F16,
            "ONNX Runtime's CPU provider has no f16 convolution on x86: it runs a model converted to f16 in f32 behind casts it inserts, so the time would be f32's (docs/src/onnx.md)",
        )
        .refusing(
            Precision::Bf16,
            "ONNX Runtime's CPU provider has no bf16 convolution: openvino-cpu runs bf16 on a CPU that has it",
        )
}

/// Whether the engine can run here, and if not, what to do: not built, or ONNX Runtime's
/// library not found (nothing is loaded to answer).
pub fn availability() -> Result<(), String> {
    #[cfg(feature = "ort")]
    {
        library::find(&library::search_places()).map(|_| ())
    }
    #[cfg(not(feature = "ort"))]
    {
        Err(cnnbench_engine::provider::not_in_this_build(SETUP_HINT))
    }
}

#[cfg(all(test, feature = "ort"))]
mod tests;

#[cfg(test)]
mod capabilities_tests {
    use cnnbench_engine::{Mode, Precision};

    /// f16 and bf16 are refused with the measured reason, not a bare list.
    #[test]
    fn low_precisions_are_refused_with_the_reason() {
        let caps = super::capabilities();
        let f16 = caps
            .check("ort-cpu", Mode::Infer, Precision::F16)
            .unwrap_err();
        assert!(
            f16.to_string()
                .contains("no f16 convolution on x86: it runs a model converted to f16 in f32"),
            "{f16}"
        );
        assert!(
            f16.to_string().ends_with("it computes in: f32, int8"),
            "{f16}"
        );
        let bf16 = caps
            .check("ort-cpu", Mode::Infer, Precision::Bf16)
            .unwrap_err();
        assert!(
            bf16.to_string().contains("openvino-cpu runs bf16"),
            "{bf16}"
        );
        // Without a recorded reason the refusal is the plain list.
        let amp = caps
            .check("ort-cpu", Mode::Infer, Precision::AmpBf16)
            .unwrap_err();
        assert_eq!(
            amp.to_string(),
            "ort-cpu does not compute in amp-bf16; it computes in: f32, int8"
        );
    }
}

#[cfg(all(test, not(feature = "ort")))]
mod without_ort {
    #[test]
    fn says_how_to_get_the_engine() {
        let why = super::availability().unwrap_err();
        assert!(why.contains("--features cnnbench-cli/ort"), "{why}");
        assert!(why.contains("pip install onnxruntime==1.32.0"), "{why}");
        assert!(!super::capabilities().trains());
    }
}
