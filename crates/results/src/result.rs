//! The result file, schema `cnnbench-result` version 1: one JSON document per
//! (model, engine, device, configuration) run. Everything a reader needs to trust or
//! reproduce the numbers is in it: raw samples, the configuration, the software and the
//! machine. Changing the meaning of a field bumps [`RESULT_VERSION`].

use crate::quantity::Quantity;
use crate::stats::Summary;
use chrono::{DateTime, Utc};
use cnnbench_engine::{EngineInfo, Mode, Precision};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RESULT_FORMAT: &str = "cnnbench-result";
pub const RESULT_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Always `cnnbench-result`.
    pub format: String,
    /// Schema version, 1.
    pub version: u32,
    pub tool: ToolInfo,
    /// A free label the user gave with `--label` (e.g. a host name), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub model: ModelRecord,
    pub config: RunConfig,
    pub engine: EngineInfo,
    pub machine: MachineInfo,
    /// UTC time at which the first warm-up pass started.
    pub started_at: DateTime<Utc>,
    /// Wall time of the whole run, preparation and warm-up included, in seconds.
    pub duration_s: f64,
    /// Every timed sample in seconds, per quantity (`forward`, `backward`, `update`,
    /// `total`), in pass order. Warm-up passes are not included.
    pub samples: BTreeMap<Quantity, Vec<f64>>,
    /// Statistics of each quantity in `samples`, in seconds.
    pub summary: BTreeMap<Quantity, Summary>,
    pub throughput: Throughput,
    pub memory: MemoryRecord,
    /// The engine's matrix-product rate measured by `cnnbench peak` on this machine, when
    /// one was cached: `throughput.gflops_per_s` over it is the run's "% of peak".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_gflops_per_s: Option<f64>,
    /// Things the reader should know about these numbers (wide spread, timer resolution…).
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// The git commit cnnbench was built from, when known.
    #[serde(default)]
    pub git_commit: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    pub name: String,
    /// `zoo` or the model file's path.
    pub source: String,
    pub params: u64,
    /// Multiply-accumulates of one forward pass of one example.
    pub macs: u64,
    pub depth: usize,
    /// `[C, H, W]` of one example.
    pub input: [usize; 3],
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub mode: Mode,
    pub batch_size: usize,
    /// `[H, W]`.
    pub image_size: [usize; 2],
    pub warmup: usize,
    pub passes: usize,
    pub seed: u64,
    /// Threads requested with `--threads`, or absent for the engine's default (all cores).
    #[serde(default)]
    pub threads_requested: Option<usize>,
    pub precision: Precision,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MachineInfo {
    pub cpu: String,
    pub cores_logical: usize,
    #[serde(default)]
    pub cores_physical: Option<usize>,
    pub memory_bytes: u64,
    pub os: String,
    pub kernel: String,
    pub arch: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Images per second from the median total time of a pass.
    pub images_per_s: f64,
    /// Achieved GFLOP/s: forward counts 2·MACs·batch, backward twice that.
    pub gflops_per_s: f64,
    /// The FLOPs counted for one pass.
    pub flops_per_pass: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    /// The process's resident-set high-water mark during this model's run, in bytes.
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    /// Whether the high-water mark was reset before this run (Linux `clear_refs`); if
    /// not, it may include earlier runs in the same process.
    pub peak_rss_reset: bool,
    /// Peak memory the device allocated, where the device tracks it (GPUs).
    #[serde(default)]
    pub device_peak_bytes: Option<u64>,
    /// The harness's estimate of the memory this run needs, in bytes.
    pub estimate_bytes: u64,
}

/// Ratio used for throughput: the FLOPs of one pass of this mode at this batch size.
pub fn flops_per_pass(mode: Mode, macs_per_example: u64, batch: usize) -> f64 {
    let forward = 2.0 * macs_per_example as f64 * batch as f64;
    match mode {
        Mode::Infer => forward,
        Mode::Train | Mode::Step => forward * 3.0,
    }
}
