//! The peak file, schema `cnnbench-peak` version 1: what an engine achieves on this
//! machine at its best in one precision (a dense matrix product, a 3×3 convolution, a
//! streaming element-wise op) beside the CPU's theoretical f32 rate, so that `run` and
//! `profile` can say "% of peak".

use crate::engine_types::{EngineInfo, Precision};
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
    /// The precision every measurement ran in (files from before it was recorded: f32).
    #[serde(default)]
    pub precision: Precision,
    pub matmul: MatmulPeak,
    /// A 3×3 convolution as ResNet's middle stages have it: the primitive a CNN spends
    /// its time in, which some stacks run on other kernels than their matrix product
    /// (files from before it was measured have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conv: Option<ConvPeak>,
    pub bandwidth: BandwidthPeak,
    /// The CPU's theoretical f32 rate, where its vector width, cores and clock can be
    /// read (CPU engines only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub theoretical: Option<TheoreticalPeak>,
    /// The ISA's nominal rate in the doc's precision, where it is known (CPU engines:
    /// f32's theoretical rate, or what bf16, f16 and int8 instructions do per cycle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal: Option<NominalPeak>,
    /// The machine's bandwidth at each cache level and at DRAM, streamed by a copy on
    /// the engine's thread count (files from before it was measured have none: their
    /// roofline takes the streaming op's bandwidth as DRAM's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memory_levels: Vec<MemoryLevelPeak>,
}

/// What the instructions for a precision compute per cycle on every core counted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NominalPeak {
    pub gflops_per_s: f64,
    /// How it was reckoned, e.g. `AMX-INT8: 2,048 ops/cycle/core × 2 cores × 3.1 GHz`.
    pub reckoning: String,
}

/// One memory level's streamed bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryLevelPeak {
    /// `L2`, `L3`, `DRAM`.
    pub level: String,
    /// The bytes the level holds over the instances the threads use; `None` for DRAM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holds_bytes: Option<u64>,
    /// The source and destination buffers together (half of what the level holds).
    pub working_set_bytes: u64,
    /// Bytes read plus written per timed pass.
    pub bytes: f64,
    pub time: Summary,
    /// Bytes over the fastest pass: the level's ceiling.
    pub gb_per_s: f64,
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

/// A 3×3 convolution, stride 1, padding 1, `channels` → `channels` on `size`×`size`
/// maps, `batch` images at a time, run through the engine as one Conv2d layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvPeak {
    pub batch: usize,
    pub channels: usize,
    pub size: usize,
    /// 2 · batch · channels² · 9 · size².
    pub flops: f64,
    /// Seconds per convolution.
    pub time: Summary,
    /// FLOPs over the median time.
    pub gflops_per_s: f64,
}

/// The best compute rate measured, and the primitive it was measured with.
#[derive(Clone, Debug, PartialEq)]
pub struct BestRate {
    pub gflops_per_s: f64,
    /// `matrix product` or `3×3 convolution`.
    pub primitive: &'static str,
}

impl PeakDoc {
    /// The faster of the matrix product and the convolution: the denominator of "% of
    /// peak", so that a network whose convolutions run other kernels than the matrix
    /// product is not measured against a rate it beats.
    pub fn best(&self) -> BestRate {
        let matmul = BestRate {
            gflops_per_s: self.matmul.gflops_per_s,
            primitive: "matrix product",
        };
        match &self.conv {
            Some(c) if c.gflops_per_s > matmul.gflops_per_s => BestRate {
                gflops_per_s: c.gflops_per_s,
                primitive: "3×3 convolution",
            },
            Some(_) | None => matmul,
        }
    }

    /// The roofline's ceilings: the best compute rate, each memory level's bandwidth
    /// (files from before the levels were measured: the streaming op's, as DRAM's), and
    /// the nominal rate where known.
    pub fn ceilings(&self) -> crate::roofline::Ceilings {
        use crate::roofline::{Ceilings, MemoryCeiling};
        let best = self.best();
        let memory = if self.memory_levels.is_empty() {
            vec![MemoryCeiling {
                level: "DRAM".into(),
                holds_bytes: None,
                gb_per_s: self.bandwidth.gb_per_s,
            }]
        } else {
            self.memory_levels
                .iter()
                .map(|m| MemoryCeiling {
                    level: m.level.clone(),
                    holds_bytes: m.holds_bytes,
                    gb_per_s: m.gb_per_s,
                })
                .collect()
        };
        Ceilings {
            compute_gflops_per_s: best.gflops_per_s,
            compute_primitive: best.primitive.to_string(),
            memory,
            nominal_gflops_per_s: self.nominal.as_ref().map(|n| n.gflops_per_s),
        }
    }
}

/// The peak a result or a profile was measured against, as its file records it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PeakUsed {
    /// The engine's best compute rate measured by `cnnbench peak` on this machine in the
    /// run's precision, when one was cached.
    #[serde(
        rename = "peak_gflops_per_s",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub gflops_per_s: Option<f64>,
    /// What that rate was measured with (`matrix product`, `3×3 convolution`); files from
    /// before the convolution was measured have none (the matrix product).
    #[serde(
        rename = "peak_primitive",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub primitive: Option<String>,
}

impl From<Option<BestRate>> for PeakUsed {
    fn from(best: Option<BestRate>) -> PeakUsed {
        PeakUsed {
            gflops_per_s: best.as_ref().map(|b| b.gflops_per_s),
            primitive: best.map(|b| b.primitive.to_string()),
        }
    }
}

impl PeakUsed {
    /// The primitive, "matrix product" for files from before it was recorded.
    pub fn primitive(&self) -> &str {
        self.primitive.as_deref().unwrap_or("matrix product")
    }
}

/// A streaming element-wise op (ReLU) over a large tensor, read once and written once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BandwidthPeak {
    pub elements: u64,
    /// Bytes read plus bytes written: 4 each per element in f32, tf32 and the amp values
    /// (element-wise ops stay f32), 2 in a whole-model bf16 or f16.
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside a result or a profile, the peak's fields sit at the top level as they
    /// always have, and files from before the primitive was recorded still read.
    #[test]
    fn the_peak_used_reads_and_writes_the_fields_files_have() {
        #[derive(Serialize, Deserialize)]
        struct Holder {
            name: String,
            #[serde(flatten)]
            peak: PeakUsed,
        }
        let old: Holder =
            serde_json::from_str(r#"{"name": "r", "peak_gflops_per_s": 12.5}"#).unwrap();
        assert_eq!(old.peak.gflops_per_s, Some(12.5));
        assert_eq!(old.peak.primitive(), "matrix product");
        let none: Holder = serde_json::from_str(r#"{"name": "r"}"#).unwrap();
        assert_eq!(none.peak, PeakUsed::default());
        assert_eq!(serde_json::to_string(&none).unwrap(), r#"{"name":"r"}"#);
        let new = Holder {
            name: "r".into(),
            peak: Some(BestRate {
                gflops_per_s: 3.0,
                primitive: "3×3 convolution",
            })
            .into(),
        };
        assert_eq!(
            serde_json::to_string(&new).unwrap(),
            r#"{"name":"r","peak_gflops_per_s":3.0,"peak_primitive":"3×3 convolution"}"#
        );
    }
}
