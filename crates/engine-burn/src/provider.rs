//! burn-flex as the command line's registry sees it.

use cnnbench_engine::provider::{ConcurrentServing, EngineOptions, Provider};
use cnnbench_engine::{Capabilities, Engine};

struct BurnFlex;

impl Provider for BurnFlex {
    fn name(&self) -> &'static str {
        crate::ENGINE_NAME
    }
    fn description(&self) -> &'static str {
        if cfg!(feature = "x86-v4") {
            "burn 0.22 flex CPU backend with autodiff, x86-v4 build (gemm's AVX-512 kernels)"
        } else {
            "burn 0.22 flex CPU backend with autodiff (pure Rust, always built)"
        }
    }
    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }
    /// Its sessions compute on the one pool of the process.
    fn concurrent_serving(&self) -> ConcurrentServing {
        ConcurrentServing::SessionsShareOnePool
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        crate::availability()
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        Ok(Box::new(crate::BurnFlexEngine::new(options.threads)?))
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    vec![Box::new(BurnFlex)]
}
