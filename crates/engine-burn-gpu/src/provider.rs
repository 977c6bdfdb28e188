//! burn's GPU engines as the command line's registry sees them, built in or not.

use crate::{BurnGpu, BurnGpuOptions, Unavailable};
use cnnbench_engine::provider::{ConcurrentServing, EngineOptions, Provider, NOT_CHECKED_ON_A_GPU};
use cnnbench_engine::{Capabilities, Engine};

struct Gpu(BurnGpu);

fn burn_gpu_options(options: &EngineOptions) -> BurnGpuOptions {
    BurnGpuOptions {
        device: options.device.unwrap_or(0),
        allow_cpu_adapter: options.allow_cpu_adapter,
    }
}

/// Why it cannot run, with the flag that accepts a CPU renderer.
fn why(unavailable: &Unavailable) -> String {
    match unavailable {
        Unavailable::CpuAdapterOnly { .. } => format!(
            "{unavailable}: pass --allow-cpu-adapter to run on it anyway (to test, not to measure a GPU)"
        ),
        other => other.to_string(),
    }
}

impl Provider for Gpu {
    fn before_threads_start(&self) {
        if self.0 == BurnGpu::Wgpu {
            crate::quiet_mesa_device_select();
        }
    }
    fn name(&self) -> &'static str {
        self.0.engine_name()
    }
    fn description(&self) -> &'static str {
        self.0.describe()
    }
    fn capabilities(&self) -> Capabilities {
        crate::capabilities()
    }
    fn concurrent_serving(&self) -> ConcurrentServing {
        ConcurrentServing::OneAtATime(NOT_CHECKED_ON_A_GPU)
    }
    fn availability(&self, options: &EngineOptions) -> Result<(), String> {
        crate::availability(self.0, &burn_gpu_options(options)).map_err(|e| why(&e))
    }
    /// The adapters themselves are listed under `cnnbench engines`' table.
    fn listing_availability(&self) -> Result<(), String> {
        crate::availability(self.0, &BurnGpuOptions::default()).map_err(|e| match e {
            Unavailable::CpuAdapterOnly { .. } => {
                "only a CPU software renderer (listed below); --allow-cpu-adapter runs on it"
                    .to_string()
            }
            other => other.to_string(),
        })
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        crate::engine(self.0, &burn_gpu_options(options)).map_err(|e| anyhow::anyhow!(why(&e)))
    }
    fn listed_devices(&self) -> Option<(&'static str, Vec<String>)> {
        let heading = match self.0 {
            BurnGpu::Wgpu => "Vulkan adapters",
            BurnGpu::Cuda => "CUDA devices",
        };
        crate::adapters::listing()
            .into_iter()
            .find(|(backend, _)| *backend == self.0)
            .map(|(_, adapters)| (heading, adapters.iter().map(|a| a.to_string()).collect()))
    }
    /// Asking lists Vulkan adapters or opens CUDA.
    fn asks_a_device(&self) -> bool {
        true
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    BurnGpu::ALL
        .into_iter()
        .map(|backend| Box::new(Gpu(backend)) as Box<dyn Provider>)
        .collect()
}
