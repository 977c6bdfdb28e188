//! Engines as providers: each engine crate exports its engines as [`Provider`]s (name,
//! description, capabilities, availability with its set-up hint, creation, and what it
//! can do beyond one process), so that the command line's registry is a list and no
//! engine is named outside its own crate.

use crate::distributed::{ProcessGroup, Rendezvous};
use crate::settings::{EngineSettingsRecord, SettingDoc, SettingsMap};
use crate::{Capabilities, Engine, Precision};
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
    /// The engine's own settings as given; its provider parses them
    /// ([`Provider::settings`]).
    pub settings: SettingsMap,
    /// Sessions the engine will run side by side (`run --in-flight N`; 0 or 1: one):
    /// an engine that pins its threads to cores must not pin every session's threads to
    /// the same ones.
    pub sessions_side_by_side: usize,
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
    /// Set-up of the process that must come before any thread starts (an environment
    /// variable a library reads once): called at start-up for every engine of the build.
    fn before_threads_start(&self) {}
    /// Its own settings (`--engine-setting KEY=VALUE`): none unless it declares some.
    fn settings(&self) -> DeclaredSettings {
        DeclaredSettings::none()
    }
    /// The devices it could run on, for `cnnbench engines` to list under its table: a
    /// heading (`Vulkan adapters`) and one line each; `None` for a CPU engine, or one
    /// whose devices are not in this build.
    fn listed_devices(&self) -> Option<(&'static str, Vec<String>)> {
        None
    }
    /// Its own settings worth trying when choosing how to deploy a model (`cnnbench
    /// choose`), each a key and the value to try besides the default (OpenVINO's
    /// throughput hint, inductor's freezing): none unless the engine says.
    fn deployment_settings(&self) -> Vec<(&'static str, &'static str)> {
        Vec::new()
    }
    /// Why it cannot compute in `precision` under these own settings, where it offers the
    /// precision but not with them (pytorch-compile's int8 needs freezing), so that
    /// `choose` leaves such a pair out rather than running it to fail.
    fn refuses(&self, _precision: Precision, _settings: &SettingsMap) -> Option<String> {
        None
    }
    /// How it computes several queries at once (`run --scenario server|offline
    /// --in-flight N`): one at a time unless the engine says.
    fn concurrent_serving(&self) -> ConcurrentServing {
        ConcurrentServing::OneAtATime(
            "its sessions have not been checked running side by side in one process",
        )
    }
    /// Data-parallel training across processes, where the engine has it.
    fn data_parallel(&self) -> Option<&dyn DataParallelProvider> {
        None
    }
}

/// How an engine computes several queries at once: one session per query in flight,
/// each driven from its own thread, and what the sessions share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConcurrentServing {
    /// Each session has a thread pool of its own (ONNX Runtime's, OpenVINO's, libtorch's
    /// per calling thread, a worker process's): the threads are divided between them,
    /// as OpenVINO's streams divide the cores.
    SessionsSplitTheThreads,
    /// The sessions compute on one pool the process holds (rayon's global pool, tract's
    /// executor): it is shared, not divided.
    SessionsShareOnePool,
    /// One query at a time, and why.
    OneAtATime(&'static str),
}

/// Why the GPU engines serve one query at a time.
pub const NOT_CHECKED_ON_A_GPU: &str = "several sessions on one GPU are not driven at once yet: cnnbench has had no GPU to check them on";

impl ConcurrentServing {
    /// The threads each of `in_flight` sessions gets out of `threads` (`None`: the
    /// engine's default), where the sessions divide them.
    pub fn threads_each(self, threads: Option<usize>, in_flight: usize) -> Option<usize> {
        match self {
            ConcurrentServing::SessionsSplitTheThreads => {
                let total = threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                Some((total / in_flight.max(1)).max(1))
            }
            ConcurrentServing::SessionsShareOnePool | ConcurrentServing::OneAtATime(_) => threads,
        }
    }
}

/// An engine's own settings as a provider declares them: what `cnnbench engines` lists
/// and refusals name, and the check of a given map (the words it adds to a label, or
/// why it is refused).
#[derive(Clone, Copy)]
pub struct DeclaredSettings {
    pub declared: fn() -> Vec<SettingDoc>,
    pub check: fn(&SettingsMap) -> Result<Vec<String>, String>,
}

impl DeclaredSettings {
    /// The settings of this struct.
    pub fn of<S: EngineSettingsRecord>() -> DeclaredSettings {
        DeclaredSettings {
            declared: S::declared,
            check: check_as::<S>,
        }
    }

    /// No settings of its own: any key is refused.
    pub fn none() -> DeclaredSettings {
        DeclaredSettings {
            declared: Vec::new,
            check: |given| crate::settings::refuse_unknown(given, &[]).map(|()| Vec::new()),
        }
    }
}

fn check_as<S: EngineSettingsRecord>(given: &SettingsMap) -> Result<Vec<String>, String> {
    S::parse(given).map(|s| s.label())
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
