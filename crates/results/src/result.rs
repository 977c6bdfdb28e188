//! The result file, schema `cnnbench-result` version 2: one JSON document per
//! (model, engine, device, configuration) run. Everything a reader needs to trust or
//! reproduce the numbers is in it: raw samples, the configuration, the software and the
//! machine. Changing the meaning of a field bumps [`RESULT_VERSION`].

use crate::engine_types::{EngineInfo, Mode, Precision};
use crate::peak::PeakUsed;
use crate::quantity::Quantity;
use crate::stats::Summary;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const RESULT_FORMAT: &str = "cnnbench-result";
/// Version 2 added, all optional so that a version 1 file reads unchanged: percentiles
/// in each summary, the time-based and adaptive settings of the run (`min_time_s`,
/// `max_time_s`, `target_ci_pct`, `warmup_time_s`), what stopped the run (`stop`) and how
/// `-b max` chose the batch (`batch_search`). Later, equally optional: data-parallel
/// runs (`config.world_size`, `distributed`, the `allreduce` quantity); what the machine
/// did during the timed passes (`validity`) and before them (`cold_start`).
pub const RESULT_VERSION: u32 = 2;
/// The schema versions this build reads.
pub const RESULT_VERSIONS_READ: std::ops::RangeInclusive<u32> = 1..=RESULT_VERSION;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    /// Always `cnnbench-result`.
    pub format: String,
    /// Schema version: 2 when written by this build; 1 in older files.
    pub version: u32,
    pub tool: ToolInfo,
    /// A free label the user gave with `--label` (e.g. a host name), else absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub model: ModelRecord,
    pub config: RunConfig,
    /// Everything that determined this measurement, as `cnnbench run --again` reads it
    /// back (absent in results written before cnnbench recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<crate::spec::RunSpec>,
    pub engine: EngineInfo,
    pub machine: MachineInfo,
    /// UTC time at which the first warm-up pass started.
    pub started_at: DateTime<Utc>,
    /// Wall time of the whole run, preparation and warm-up included, in seconds.
    pub duration_s: f64,
    /// What ended the timed passes (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopRecord>,
    /// How `--batch-size max` found the batch size (version 2; absent for a batch the
    /// user gave).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_search: Option<BatchSearch>,
    /// Every timed sample in seconds, per quantity (`forward`, `backward`, `update`,
    /// `total`), in pass order. Warm-up passes are not included.
    pub samples: BTreeMap<Quantity, Vec<f64>>,
    /// Statistics of each quantity in `samples`, in seconds.
    pub summary: BTreeMap<Quantity, Summary>,
    pub throughput: Throughput,
    pub memory: MemoryRecord,
    /// The peak "% of peak" is against: `throughput.gflops_per_s` over it.
    #[serde(flatten)]
    pub peak: PeakUsed,
    /// The forward pass against this machine's ceilings, when `cnnbench peak` had
    /// measured them for the engine and precision (absent before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<crate::roofline::RunRoofline>,
    /// Things the reader should know about these numbers (wide spread, timer resolution…).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// A data-parallel run across processes (`config.world_size` > 1 or `--distributed`):
    /// how the gradients travelled and every rank's samples. `samples` and `summary`
    /// above are rank 0's; `throughput` counts the images of every rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<DistributedRecord>,
    /// What the machine did during the timed passes and whether the run is to be
    /// trusted (absent in results written before cnnbench watched the machine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<crate::validity::Validity>,
    /// What the run paid before its first timed pass (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_start: Option<crate::validity::ColdStart>,
    /// For an engine that computes in another process (a worker on the user's
    /// Python): the median time of an empty call to it, seconds. Every timed phase
    /// contains one such round trip; nothing is subtracted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_floor_s: Option<f64>,
    /// This machine's run-to-run noise as `cnnbench noise` last measured it, when it
    /// has: what a comparison of one run a side must clear (`compare`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_noise: Option<crate::noise::RunNoise>,
    /// A run under one of LoadGen's scenarios (`--scenario`): its queries' latencies and
    /// verdicts. The samples above are then the engine's compute time per query (batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<crate::scenario::ScenarioRecord>,
    /// An int8 run: how its network was quantised and calibrated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<crate::quantization::QuantizationRecord>,
}

/// How a data-parallel run averaged its gradients, and what each rank measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistributedRecord {
    /// The collective library's backend: `gloo` (CPUs) or `nccl` (NVIDIA GPUs).
    pub backend: String,
    /// How its messages travelled, e.g. `tcp`.
    pub transport: String,
    /// Gradients were all-reduced in buckets of at most this many bytes (DDP's 25 MiB).
    pub bucket_bytes: usize,
    /// Whether the all-reduce overlapped the backward pass (DDP's hooks); when not, the
    /// `allreduce` phase follows backward and is timed alone.
    pub overlap: bool,
    /// Every rank's timed samples, in rank order (rank 0's are also `samples`).
    pub ranks: Vec<RankRecord>,
}

/// One rank's measurements in a data-parallel run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankRecord {
    pub rank: usize,
    /// The machine the rank ran on (absent in results written before cnnbench said).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The address the rank's collectives travelled from (Gloo), its interface and why
    /// that one ("GLOO_SOCKET_IFNAME=eth1", "route to 10.0.0.1"); absent for NCCL, which
    /// chooses its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_chosen_by: Option<String>,
    /// Its timed samples in seconds, per quantity, as the top-level `samples`.
    pub samples: BTreeMap<Quantity, Vec<f64>>,
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
    /// `--min-time`: timed passes went on until this much timed work (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_time_s: Option<f64>,
    /// `--max-time`: no timed pass started after this much timed work (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<f64>,
    /// `--target-ci`: the run stopped once the 95% interval of the median total was
    /// within ± this many percent of it (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci_pct: Option<f64>,
    /// `--warmup-time`: warm-up went on for at least this long (version 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_time_s: Option<f64>,
    /// Processes that trained together, each on its own `batch_size` images, averaging
    /// their gradients (absent: one process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub world_size: Option<usize>,
    /// What the process's heap did with freed memory (absent in results written before
    /// cnnbench recorded it, which ran with the C library's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<AllocatorRecord>,
    /// Which of `run --repeat N`'s runs this is (absent: a run of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<Round>,
}

/// One run of a configuration that `run --repeat N` measured in N processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Round {
    /// 1-based.
    pub index: usize,
    /// N.
    pub of: usize,
}

/// The heap policy a run had: it changes CPU times by up to a fifth (fresh pages for
/// every large tensor, or reused ones), so results record it and reports keep runs with
/// different policies apart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorRecord {
    /// `keep` (freed memory kept for reuse, cnnbench's default) or `system` (the C
    /// library's defaults).
    pub policy: String,
    /// The allocator and its settings in words, e.g. `glibc 2.36: mmap threshold 1 GiB,
    /// trimming off`.
    pub detail: String,
}

impl AllocatorRecord {
    /// The policy of a result that has no record: the C library's defaults.
    pub const SYSTEM: &'static str = "system";
}

/// Why the timed passes ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The requested number of passes ran (and `--min-time`, if any, was already met).
    Passes,
    /// The passes ran before `--min-time` was reached; passes went on until it was.
    MinTime,
    /// The median's 95% interval reached `--target-ci`.
    TargetCi,
    /// `--max-time` was reached first.
    MaxTime,
    /// A scenario's minimum duration and query count were met (`--scenario`).
    Scenario,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::Passes => "passes",
            StopReason::MinTime => "min-time",
            StopReason::TargetCi => "target-ci",
            StopReason::MaxTime => "max-time",
            StopReason::Scenario => "scenario",
        })
    }
}

/// What ended the timed passes, and the precision reached then: a reader can tell a run
/// that stopped because its median was pinned down from one that ran out of time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopRecord {
    pub reason: StopReason,
    /// Timed passes run (warm-up excluded).
    pub passes: usize,
    /// Warm-up passes run.
    pub warmup_passes: usize,
    /// Seconds of timed work (the sum of the totals).
    pub timed_s: f64,
    /// Half-width of the bootstrap 95% interval of the median total, relative to the
    /// median (0.02 = ±2%), when there were enough passes to compute it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ci95_rel: Option<f64>,
}

/// How `--batch-size max` chose the batch: the memory it assumed, the estimate, and every
/// batch it tried in a child process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchSearch {
    /// The memory the batch had to fit in, in bytes.
    pub available_bytes: u64,
    /// Where that number came from (`--memory-limit`, host available memory, GPU memory).
    pub available_from: String,
    /// The largest batch whose estimate fits (0 when not even batch 1 does).
    pub estimated_batch: usize,
    /// The batches tried by running them, in the order tried.
    pub probes: Vec<BatchProbe>,
    /// The batch chosen: the largest that ran and fit.
    pub chosen: usize,
}

/// One batch tried by running one pass in a child process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BatchProbe {
    pub batch_size: usize,
    pub outcome: ProbeOutcome,
    /// The memory the child measured (device peak for GPUs, else peak resident set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_bytes: Option<u64>,
    /// The engine's error or how the child ended, when it did not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// The outcome of one probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeOutcome {
    /// It ran, within the memory.
    Fits,
    /// It ran but used more than the memory limit.
    OverLimit,
    /// The engine ran out of memory or the child died.
    OutOfMemory,
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
    /// The resident-set high-water mark of the worker process the engine computes in
    /// (the pytorch engines), since its session was prepared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_peak_rss_bytes: Option<u64>,
    /// The harness's estimate of the memory this run needs, in bytes.
    pub estimate_bytes: u64,
}

impl MemoryRecord {
    /// The host memory the run held at its peak: this process's high-water mark plus
    /// its worker's, for an engine that computes in a worker process (the two peaks
    /// need not coincide, so this is an upper bound there).
    pub fn host_peak_bytes(&self) -> Option<u64> {
        match (self.peak_rss_bytes, self.worker_peak_rss_bytes) {
            (Some(own), Some(worker)) => Some(own.saturating_add(worker)),
            (own, worker) => own.or(worker),
        }
    }
}

/// Ratio used for throughput: the FLOPs of one pass of this mode at this batch size.
pub fn flops_per_pass(mode: Mode, macs_per_example: u64, batch: usize) -> f64 {
    let forward = 2.0 * macs_per_example as f64 * batch as f64;
    match mode {
        Mode::Infer => forward,
        Mode::Train | Mode::Step => forward * 3.0,
    }
}
