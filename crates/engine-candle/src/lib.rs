//! The `candle` engine: Hugging Face's candle-core 0.11 on the CPU (pure Rust), trained
//! with candle's own autograd. It answers the Rust ML community's "burn or candle?" on the
//! same networks and weights as every other engine.
//!
//! The engine kit's interpreter runs the Graph; this crate supplies candle's kernels
//! (`lower.rs`: what candle lacks, such as padded or overlapping pooling with a
//! backward, is composed from candle's own ops there), the weights as candle variables,
//! an SGD step with momentum written as PyTorch defines it, and the session plumbing.
//!
//! candle is optional (feature `candle`): it adds about 4 CPU-minutes to a cold build, so
//! without the feature this crate builds with nothing extra and only says how to get the
//! engine.

#[cfg(feature = "candle")]
mod engine;
#[cfg(feature = "candle")]
mod lower;
mod provider;
pub use provider::providers;

#[cfg(feature = "candle")]
pub use engine::CandleEngine;
#[cfg(feature = "candle")]
pub use lower::Network;

use cnnbench_engine::Capabilities;

/// The engine's name on the command line and in result files.
pub const ENGINE_NAME: &str = "candle";
/// The candle version this engine is built against (pinned in Cargo.toml).
pub const CANDLE_VERSION: &str = "0.11.1";
/// Whether this build has candle.
pub const BUILT: bool = cfg!(feature = "candle");
/// How a build gets this engine, for error messages and `cnnbench engines`.
pub const SETUP_HINT: &str = "build with `--features candle` (pure Rust, nothing to install)";

/// What candle does here: every mode, f32, on the host's memory.
pub fn capabilities() -> Capabilities {
    Capabilities::cpu_f32(cnnbench_host::memory_bytes())
}

/// Whether the engine can run in this build, and if not, what to do.
pub fn availability() -> Result<(), String> {
    if BUILT {
        Ok(())
    } else {
        Err(cnnbench_engine::provider::not_in_this_build(SETUP_HINT))
    }
}

#[cfg(all(test, feature = "candle"))]
mod tests;

#[cfg(all(test, not(feature = "candle")))]
mod without_candle {
    #[test]
    fn says_how_to_get_the_engine() {
        let why = super::availability().unwrap_err();
        assert!(why.contains("--features candle"), "{why}");
        assert!(super::capabilities().trains());
    }
}
