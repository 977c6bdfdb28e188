//! ONNX Runtime (ort-cpu) as the command line's registry sees it, built in or not.

use cnnbench_engine::provider::{ConcurrentServing, DeclaredSettings, EngineOptions, Provider};
use cnnbench_engine::settings::EngineSettingsRecord;
use cnnbench_engine::{Capabilities, Engine};

cnnbench_engine::setting_choices! {
    /// ONNX Runtime's graph optimisation level (`GraphOptimizationLevel`): `all` is its
    /// default in Python, so the default times what a Python user gets.
    pub enum GraphOptimization {
        All = "all",
        Extended = "extended",
        Basic = "basic",
        Disabled = "disabled",
    }
}

impl GraphOptimization {
    /// The name ONNX Runtime's C and Python APIs give it.
    pub fn onnxruntime_name(self) -> &'static str {
        match self {
            GraphOptimization::All => "ORT_ENABLE_ALL",
            GraphOptimization::Extended => "ORT_ENABLE_EXTENDED",
            GraphOptimization::Basic => "ORT_ENABLE_BASIC",
            GraphOptimization::Disabled => "ORT_DISABLE_ALL",
        }
    }
}

cnnbench_engine::engine_settings! {
    /// ort-cpu's own settings.
    pub struct OrtSettings {
        /// The graph rewrites ONNX Runtime makes before running: `all` (its default:
        /// node fusions and the CPU's blocked NCHWc layout), `extended` (fusions
        /// without the layout), `basic` (constant folding, redundant nodes, Conv+BN),
        /// `disabled` (the exported graph as it is).
        #[setting(key = "graph-optimization", label = |g: &GraphOptimization| (*g != GraphOptimization::All).then(|| format!("graph optimization {}", g.as_str())))]
        pub graph_optimization: GraphOptimization = GraphOptimization::All,
    }
}

struct Ort;

impl Provider for Ort {
    fn name(&self) -> &'static str {
        crate::ENGINE_NAME
    }
    fn description(&self) -> &'static str {
        "ONNX Runtime's CPU provider (PyPI wheel, loaded at run time) on cnnbench's ONNX export"
    }
    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }
    /// Each session has its own threads.
    fn concurrent_serving(&self) -> ConcurrentServing {
        ConcurrentServing::SessionsSplitTheThreads
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        crate::availability()
    }
    fn settings(&self) -> DeclaredSettings {
        DeclaredSettings::of::<OrtSettings>()
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        let settings = OrtSettings::parse(&options.settings)
            .map_err(|e| anyhow::anyhow!("{}: {e}", crate::ENGINE_NAME))?;
        #[cfg(feature = "ort")]
        {
            Ok(Box::new(crate::engine(options.threads, settings)?))
        }
        #[cfg(not(feature = "ort"))]
        {
            let _ = (options, settings);
            Err(anyhow::anyhow!(
                cnnbench_engine::provider::not_in_this_build(crate::SETUP_HINT)
            ))
        }
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    vec![Box::new(Ort)]
}
