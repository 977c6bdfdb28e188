//! The `tract` engine: Sonos' pure-Rust ONNX inference engine. The Graph goes through
//! cnnbench's ONNX exporter into an in-memory model, which tract optimises
//! (`into_optimized`: operator fusion, layout and kernel selection) and runs. Inference
//! only: tract has no backward pass. Weights are exchanged (importing rebuilds the plan),
//! so `cnnbench verify` compares it with a training engine's inference output.
//!
//! tract is optional (feature `tract`): it adds minutes to a cold build, so without the
//! feature this crate builds with nothing extra and only says how to get the engine.

use cnnbench_engine::Capabilities;

mod provider;
#[cfg(feature = "tract")]
mod session;
pub use provider::providers;

#[cfg(feature = "tract")]
pub use session::{engine, TractEngine, TractRuntime};

/// The engine's name on the command line and in result files.
pub const ENGINE_NAME: &str = "tract";
/// The tract version this engine is built against (pinned in Cargo.toml).
pub const TRACT_VERSION: &str = "0.23.9";
/// Whether this build has tract.
pub const BUILT: bool = cfg!(feature = "tract");
/// How a build gets this engine, for error messages and `cnnbench engines`.
pub const SETUP_HINT: &str =
    "build with `cargo build --release --features cnnbench-cli/tract` (pure Rust, no set-up)";

/// What it can do: inference in f32 on the CPU, weights exchanged.
pub fn capabilities() -> Capabilities {
    Capabilities::cpu_f32_inference(cnnbench_host::memory_bytes())
}

/// Whether the engine can run in this build, and if not, what to do.
pub fn availability() -> Result<(), String> {
    if BUILT {
        Ok(())
    } else {
        Err(cnnbench_engine::provider::not_in_this_build(SETUP_HINT))
    }
}

#[cfg(all(test, feature = "tract"))]
mod tests;

#[cfg(all(test, not(feature = "tract")))]
mod without_tract {
    #[test]
    fn says_how_to_get_the_engine() {
        let why = super::availability().unwrap_err();
        assert!(why.contains("--features cnnbench-cli/tract"), "{why}");
        assert!(!super::capabilities().trains());
    }
}
