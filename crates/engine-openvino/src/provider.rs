//! OpenVINO (openvino-cpu) as the command line's registry sees it, built in or not.

use cnnbench_engine::provider::{EngineOptions, Provider};
use cnnbench_engine::{Capabilities, Engine};

struct OpenVino;

impl Provider for OpenVino {
    fn name(&self) -> &'static str {
        crate::ENGINE_NAME
    }
    fn description(&self) -> &'static str {
        "OpenVINO's CPU plugin (PyPI wheel, loaded at run time) on cnnbench's ONNX export"
    }
    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        crate::availability()
    }
    fn performance_hints(&self) -> bool {
        true
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        #[cfg(feature = "openvino")]
        {
            Ok(Box::new(crate::OpenVinoEngine::new(
                options.threads,
                options.performance_hint,
            )?))
        }
        #[cfg(not(feature = "openvino"))]
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
    vec![Box::new(OpenVino)]
}
