//! The libtorch engines as the command line's registry sees them, built in or not:
//! torch-cpu, torch-cuda and torch-cuda-nocudnn, each able to train data-parallel on
//! c10d where this build compiled it in.

use crate::{TorchBackend, TorchOptions};
use cnnbench_engine::distributed::{ProcessGroup, Rendezvous};
use cnnbench_engine::provider::{
    ConcurrentServing, DataParallelProvider, EngineOptions, Provider, NOT_CHECKED_ON_A_GPU,
};
use cnnbench_engine::{Capabilities, DeviceKind, Engine};
use std::sync::Arc;

struct Torch(TorchBackend);

fn torch_options(options: &EngineOptions) -> TorchOptions {
    TorchOptions {
        threads: options.threads,
        device: options.device.unwrap_or(0),
        cudnn_benchmark: options.cudnn_benchmark,
        tf32: options.tf32,
        channels_last: options.channels_last,
    }
}

impl Provider for Torch {
    fn name(&self) -> &'static str {
        self.0.engine_name()
    }
    fn description(&self) -> &'static str {
        self.0.describe()
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    /// On the CPU each calling thread has its own team of libtorch's threads.
    fn concurrent_serving(&self) -> ConcurrentServing {
        match self.0.capabilities().device {
            DeviceKind::Cpu => ConcurrentServing::SessionsSplitTheThreads,
            DeviceKind::Gpu => ConcurrentServing::OneAtATime(NOT_CHECKED_ON_A_GPU),
        }
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        crate::availability(self.0)
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        crate::engine(self.0, &torch_options(options))
    }
    /// Asking opens libtorch (and CUDA for the GPU engines).
    fn asks_a_device(&self) -> bool {
        true
    }
    fn channels_last(&self) -> bool {
        true
    }
    fn data_parallel(&self) -> Option<&dyn DataParallelProvider> {
        Some(self)
    }
}

impl DataParallelProvider for Torch {
    fn backend(&self) -> &'static str {
        match self.0 {
            TorchBackend::Cpu => "c10d's Gloo backend",
            TorchBackend::Cuda { .. } => "c10d's NCCL backend",
        }
    }
    fn refusal(&self) -> Option<String> {
        crate::data_parallel_refusal(self.0)
    }
    fn devices(&self) -> Option<usize> {
        match self.0 {
            TorchBackend::Cpu => None,
            TorchBackend::Cuda { .. } => Some(crate::cuda_device_count()),
        }
    }
    fn create(
        &self,
        options: &EngineOptions,
        rendezvous: &Rendezvous,
    ) -> anyhow::Result<(Box<dyn Engine>, Arc<dyn ProcessGroup>)> {
        crate::data_parallel_engine(self.0, &torch_options(options), rendezvous)
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    TorchBackend::ALL
        .into_iter()
        .map(|backend| Box::new(Torch(backend)) as Box<dyn Provider>)
        .collect()
}
