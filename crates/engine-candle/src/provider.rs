//! candle as the command line's registry sees it, built in or not.

use cnnbench_engine::provider::{ConcurrentServing, EngineOptions, Provider};
use cnnbench_engine::{Capabilities, Engine};

/// The line `cnnbench engines` shows.
const DESCRIPTION: &str = "candle 0.11 CPU backend with its autograd (pure Rust, feature `candle`)";

struct Candle;

impl Provider for Candle {
    fn name(&self) -> &'static str {
        crate::ENGINE_NAME
    }
    fn description(&self) -> &'static str {
        DESCRIPTION
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
        #[cfg(feature = "candle")]
        {
            Ok(Box::new(crate::CandleEngine::new(options.threads)?))
        }
        #[cfg(not(feature = "candle"))]
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
    vec![Box::new(Candle)]
}
