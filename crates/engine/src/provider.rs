//! Engines as providers: each engine crate exports its engines as [`Provider`]s (name,
//! description, capabilities, availability with its set-up hint, creation, and what it
//! can do beyond one process), so that the command line's registry is a list and no
//! engine is named outside its own crate.

use crate::distributed::{ProcessGroup, Rendezvous};
use crate::{Capabilities, CompileMode, Engine, PerformanceHint};
use std::path::PathBuf;
use std::sync::Arc;

/// The settings the command line gives every engine; each uses those that apply to it
/// and leaves the others (a CPU engine has no device to choose).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EngineOptions {
    /// The engine's thread pool (`None`: its default, all cores).
    pub threads: Option<usize>,
    /// Which GPU (a CUDA device, a Vulkan adapter); `None`: the first.
    pub device: Option<usize>,
    /// burn-wgpu: accept a CPU software renderer when there is no GPU adapter.
    pub allow_cpu_adapter: bool,
    /// Let cuDNN time its algorithms on the warm-up passes.
    pub cudnn_benchmark: bool,
    /// TF32 tensor-core math for f32 convolutions and matrix products.
    pub tf32: bool,
    /// Channels-last (NHWC) memory for images and convolution weights.
    pub channels_last: bool,
    /// One infer request at a time, or several in flight (engines that schedule their
    /// own requests: [`Provider::performance_hints`]).
    pub performance_hint: PerformanceHint,
    /// The Python an engine that runs in a worker starts (`--python`; `None`: its own
    /// search, [`Provider::runs_python`]).
    pub python: Option<PathBuf>,
    /// `torch.compile`'s mode, for an engine that compiles ([`Provider::compiles`]).
    pub compile_mode: CompileMode,
    /// Inductor's freezing (weights folded into the compiled inference graph).
    pub freezing: bool,
}

/// The words of every "not in this build" answer, so that they read alike.
pub fn not_in_this_build(hint: &str) -> String {
    format!("not in this build: {hint}")
}

/// One engine as `cnnbench` sees it.
pub trait Provider: Send + Sync {
    /// Its name on the command line and in result files.
    fn name(&self) -> &'static str;
    /// One line for `cnnbench engines`.
    fn description(&self) -> &'static str;
    /// What it can do, known without starting it.
    fn capabilities(&self) -> Capabilities;
    /// Whether it can run here with these options; the reason says what to do.
    fn availability(&self, options: &EngineOptions) -> Result<(), String>;
    /// The same, as `cnnbench engines` shows it in its table (devices are listed
    /// under the table).
    fn listing_availability(&self) -> Result<(), String> {
        self.availability(&EngineOptions::default())
    }
    /// The engine, or why it cannot run (the reason names no engine: the caller does).
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>>;
    /// Asking [`Provider::availability`] opens a device driver (CUDA, Vulkan): asked only
    /// of engines a command names.
    fn asks_a_device(&self) -> bool {
        false
    }
    /// Whether it can hold images and weights channels-last (`--channels-last`).
    fn channels_last(&self) -> bool {
        false
    }
    /// Whether it takes a performance hint other than latency (`--ov-hint throughput`).
    fn performance_hints(&self) -> bool {
        false
    }
    /// Whether it compiles the network (`--compile-mode`, `--freezing`).
    fn compiles(&self) -> bool {
        false
    }
    /// Whether it runs in a worker on the user's Python (`--python`).
    fn runs_python(&self) -> bool {
        false
    }
    /// The devices it could run on, for `cnnbench engines` to list under its table: a
    /// heading (`Vulkan adapters`) and one line each; `None` for a CPU engine, or one
    /// whose devices are not in this build.
    fn listed_devices(&self) -> Option<(&'static str, Vec<String>)> {
        None
    }
    /// Data-parallel training across processes, where the engine has it.
    fn data_parallel(&self) -> Option<&dyn DataParallelProvider> {
        None
    }
}

/// An engine's data-parallel training: ranks that average gradients through a process
/// group.
pub trait DataParallelProvider {
    /// The collective backend, in words (`c10d's Gloo backend`).
    fn backend(&self) -> &'static str;
    /// Why this build cannot train this engine across processes, if it cannot.
    fn refusal(&self) -> Option<String>;
    /// GPUs the ranks could each take, for an engine on GPUs (`None`: a CPU engine).
    fn devices(&self) -> Option<usize>;
    /// One rank's engine, joined to the others at the rendezvous, and the job's group.
    fn create(
        &self,
        options: &EngineOptions,
        rendezvous: &Rendezvous,
    ) -> anyhow::Result<(Box<dyn Engine>, Arc<dyn ProcessGroup>)>;
}

/// An engine whose crate is not in this build at all (an optional dependency left
/// out): it is listed, and says how to get it.
pub struct NotBuilt {
    pub name: &'static str,
    pub description: &'static str,
    pub capabilities: Capabilities,
    pub hint: &'static str,
}

impl Provider for NotBuilt {
    fn name(&self) -> &'static str {
        self.name
    }
    fn description(&self) -> &'static str {
        self.description
    }
    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }
    fn availability(&self, _: &EngineOptions) -> Result<(), String> {
        Err(not_in_this_build(self.hint))
    }
    fn create(&self, _: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        Err(anyhow::anyhow!(not_in_this_build(self.hint)))
    }
}
