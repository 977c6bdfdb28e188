//! The peak file, schema `cnnbench-peak` version 1: what an engine achieves on this
//! machine at its best (a dense f32 matrix product, a streaming element-wise op) beside
//! the CPU's theoretical rate, so that `run` and `profile` can say "% of peak".

use crate::engine_types::EngineInfo;
use crate::result::{MachineInfo, ToolInfo};
use crate::stats::Summary;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const PEAK_FORMAT: &str = "cnnbench-peak";
pub const PEAK_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeakDoc {
    /// Always `cnnbench-peak`.
    pub format: String,
    /// Schema version, 1.
    pub version: u32,
    pub tool: ToolInfo,
    pub engine: EngineInfo,
    pub machine: MachineInfo,
    pub measured_at: DateTime<Utc>,
    pub matmul: MatmulPeak,
    pub bandwidth: BandwidthPeak,
    /// The CPU's theoretical f32 rate, where its vector width, cores and clock can be
    /// read (CPU engines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical: Option<TheoreticalPeak>,
}

/// A dense f32 product `[n, k] × [k, m]` run through the engine as a Linear layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatmulPeak {
    pub n: usize,
    pub k: usize,
    pub m: usize,
    /// 2·n·k·m.
    pub flops: f64,
    /// Seconds per product.
    pub time: Summary,
    /// FLOPs over the median time.
    pub gflops_per_s: f64,
}

/// A streaming element-wise op (ReLU) over a large tensor, read once and written once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandwidthPeak {
    pub elements: u64,
    /// Bytes read plus bytes written (4 each per f32 element).
    pub bytes: f64,
    pub time: Summary,
    pub gb_per_s: f64,
}

/// cores × clock × f32 lanes × 2 (a fused multiply-add is two FLOPs) × FMA units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TheoreticalPeak {
    /// The widest vector instructions found, e.g. `avx512f`, `avx2+fma`.
    pub isa: String,
    /// f32 values per vector register.
    pub lanes: usize,
    /// Whether the CPU has fused multiply-add (otherwise 1 FLOP per lane per unit).
    pub fma: bool,
    /// FMA (or vector arithmetic) units per core: assumed, not read.
    pub fma_units_assumed: usize,
    /// Cores counted (those the engine's threads run on, at most the physical cores).
    pub cores: usize,
    pub ghz: f64,
    /// Where the clock came from (`cpufreq max` or `/proc/cpuinfo MHz`).
    pub clock_source: String,
    pub gflops_per_s: f64,
}
