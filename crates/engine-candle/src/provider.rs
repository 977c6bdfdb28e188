//! candle as the command line's registry sees it.

use cnnbench_engine::provider::{EngineOptions, Provider};
use cnnbench_engine::{Capabilities, Engine};

/// The line `cnnbench engines` shows (the CLI shows the same when this crate is left out
/// of its build: `crates/cli/src/commands/engines.rs`).
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
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        Ok(())
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        Ok(Box::new(crate::CandleEngine::new(options.threads)?))
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    vec![Box::new(Candle)]
}
