//! OpenVINO (openvino-cpu) as the command line's registry sees it, built in or not.

use cnnbench_engine::provider::{ConcurrentServing, DeclaredSettings, EngineOptions, Provider};
use cnnbench_engine::settings::EngineSettingsRecord;
use cnnbench_engine::{Capabilities, Engine};

cnnbench_engine::setting_choices! {
    /// How OpenVINO is asked to run infer requests (its performance hint): one at a
    /// time for the shortest pass, or several in flight, the batch split among them,
    /// for the most images per second.
    pub enum PerformanceHint { Latency = "latency", Throughput = "throughput" }
}

impl PerformanceHint {
    /// The value of OpenVINO's `PERFORMANCE_HINT`.
    pub fn openvino_name(self) -> &'static str {
        match self {
            PerformanceHint::Latency => "LATENCY",
            PerformanceHint::Throughput => "THROUGHPUT",
        }
    }
}

cnnbench_engine::engine_settings! {
    /// openvino-cpu's own settings.
    pub struct OpenVinoSettings {
        /// `latency` runs one infer request at a time; `throughput` keeps the requests
        /// OpenVINO asks for in flight together, the batch split evenly among them
        /// (images/s over all of them).
        #[setting(key = "hint", flag = "ov-hint", label = |h: &PerformanceHint| (*h == PerformanceHint::Throughput).then(|| "throughput hint".to_string()))]
        pub hint: PerformanceHint = PerformanceHint::Latency,
        /// The CPU plugin's streams (`NUM_STREAMS`): groups of cores that each run
        /// requests of their own; with the throughput hint, as many requests are kept
        /// in flight (not given: OpenVINO's choice for the hint).
        #[setting(key = "streams", label = |n: &Option<usize>| n.map(|n| format!("{n} streams")))]
        pub streams: Option<usize> = None,
    }
}

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
    /// Each session has its own threads.
    fn concurrent_serving(&self) -> ConcurrentServing {
        ConcurrentServing::SessionsSplitTheThreads
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        crate::availability()
    }
    fn settings(&self) -> DeclaredSettings {
        DeclaredSettings::of::<OpenVinoSettings>()
    }
    /// The throughput hint: several requests in flight, streams OpenVINO chooses.
    fn deployment_settings(&self) -> Vec<(&'static str, &'static str)> {
        vec![("hint", "throughput")]
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        let settings = OpenVinoSettings::parse(&options.settings)
            .map_err(|e| anyhow::anyhow!("{}: {e}", crate::ENGINE_NAME))?;
        #[cfg(feature = "openvino")]
        {
            Ok(Box::new(crate::engine_side_by_side(
                options.threads,
                settings,
                options.sessions_side_by_side,
            )?))
        }
        #[cfg(not(feature = "openvino"))]
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
    vec![Box::new(OpenVino)]
}
