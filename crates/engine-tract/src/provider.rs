//! tract as the command line's registry sees it, built in or not.

use cnnbench_engine::provider::{ConcurrentServing, EngineOptions, Provider};
use cnnbench_engine::{Capabilities, Engine};

struct Tract;

impl Provider for Tract {
    fn name(&self) -> &'static str {
        crate::ENGINE_NAME
    }
    fn description(&self) -> &'static str {
        "tract 0.23 (Sonos' pure-Rust ONNX inference) on cnnbench's ONNX export"
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
        #[cfg(feature = "tract")]
        {
            Ok(Box::new(crate::engine(options.threads)?))
        }
        #[cfg(not(feature = "tract"))]
        {
            let _ = options;
            Err(anyhow::anyhow!(
                cnnbench_engine::provider::not_in_this_build(crate::SETUP_HINT)
            ))
        }
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    vec![Box::new(Tract)]
}
