//! The profile file, schema `cnnbench-profile` version 1: where one run's time goes,
//! node by node, beside the end-to-end time of the same run. Written by
//! `cnnbench profile --json`, read by `cnnbench report`. Changing the meaning of a field
//! bumps [`PROFILE_VERSION`].

use crate::engine_types::{EngineInfo, Mode, Precision};
use crate::result::{MachineInfo, ModelRecord, ToolInfo};
use crate::stats::Summary;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub const PROFILE_FORMAT: &str = "cnnbench-profile";
pub const PROFILE_VERSION: u32 = 1;

/// One profiling run of one model on one engine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileDoc {
    /// Always `cnnbench-profile`.
    pub format: String,
    /// Schema version, 1.
    pub version: u32,
    pub tool: ToolInfo,
    pub model: ModelRecord,
    pub config: ProfileConfig,
    pub engine: EngineInfo,
    pub machine: MachineInfo,
    /// UTC time at which profiling started.
    pub started_at: DateTime<Utc>,
    /// Wall time of the whole profile (every isolated benchmark and the end-to-end run).
    pub duration_s: f64,
    /// How the per-node times were obtained, in words, for the reader of the numbers.
    pub method: String,
    /// The denominator of every "% of peak".
    #[serde(flatten)]
    pub peak: crate::peak::PeakUsed,
    /// The machine's limits the roofline judges the forward pass by, when `cnnbench
    /// peak` had measured them for this engine and precision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<crate::roofline::Ceilings>,
    /// The network's forward pass against the ceilings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<crate::roofline::NetworkRoof>,
    /// The whole network timed by the harness, apart from the per-node benchmarks.
    pub end_to_end: PhaseTimes,
    /// The sum of the per-node medians, per phase, to set beside `end_to_end`.
    pub sum_of_nodes: PhaseSums,
    /// Every node of the graph, in the graph's order.
    pub nodes: Vec<NodeProfile>,
    /// How many isolated benchmarks ran (nodes with the same op and input shapes share one).
    pub benchmarks: usize,
    #[serde(default)]
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileConfig {
    /// `train` (forward and backward) or `infer` (forward only).
    pub mode: Mode,
    pub batch_size: usize,
    /// What every benchmark computed in (profiles from before it was recorded: f32).
    #[serde(default)]
    pub precision: Precision,
    /// `[H, W]`.
    pub image_size: [usize; 2],
    /// Warm-up passes of every benchmark, dropped.
    pub warmup: usize,
    /// Timed passes of every benchmark.
    pub passes: usize,
    pub seed: u64,
    #[serde(default)]
    pub threads_requested: Option<usize>,
    /// What the process's heap did with freed memory (absent before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocator: Option<crate::result::AllocatorRecord>,
}

/// Statistics of the timed phases, in seconds (`backward` absent in infer mode).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseTimes {
    pub forward: Summary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward: Option<Summary>,
    pub total: Summary,
}

/// Sums of per-node medians, in seconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PhaseSums {
    pub forward: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward: Option<f64>,
    pub total: f64,
}

/// One node's share of the work and of the time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeProfile {
    /// Position in the graph's node order.
    pub index: usize,
    pub name: String,
    /// The op's model-file tag, e.g. `conv2d`, `relu`.
    pub op: String,
    /// The op with its settings, e.g. `Conv2d 64→64 k3×3 p1`.
    pub description: String,
    /// The group of the per-op-type summary, e.g. `conv 3×3`, `batch norm`.
    pub category: String,
    /// Shapes of one example's inputs (no batch dimension).
    pub input_shapes: Vec<Vec<usize>>,
    pub output_shape: Vec<usize>,
    /// Multiply-accumulates of one example's forward pass.
    pub macs: u64,
    /// FLOPs of the whole batch's forward pass (2·MACs·batch).
    pub forward_flops: f64,
    /// FLOPs of the whole batch's backward pass: the input's gradient (when it needs
    /// one) and the weights' gradient, each as many as the forward pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward_flops: Option<f64>,
    pub forward: NodeTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backward: Option<NodeTime>,
    /// The index of the node whose benchmark this node's times come from, when an
    /// earlier node has the same op and input shapes (the figure is attributed to both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_as: Option<usize>,
    /// The node's forward pass against the profile's ceilings (nodes that compute
    /// FLOPs, when the ceilings are known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<crate::roofline::LayerRoof>,
    /// Bytes the forward pass moves at the precision: weights and buffers, inputs and
    /// output, for the whole batch (absent before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_bytes: Option<f64>,
}

impl NodeProfile {
    /// Forward plus backward median, in seconds.
    pub fn total_median(&self) -> f64 {
        self.forward.median + self.backward.as_ref().map_or(0.0, |b| b.median)
    }
}

/// One node's time in one phase, in seconds, after the construction around it is
/// subtracted; quantiles are over the timed passes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeTime {
    pub median: f64,
    /// 25th and 75th percentiles: the spread over passes.
    pub p25: f64,
    pub p75: f64,
    pub min: f64,
    pub max: f64,
    /// The median of the construction subtracted (feeding layers), in seconds.
    pub subtracted: f64,
}

/// One op type's share of a profile: the per-op-type summary.
#[derive(Clone, Debug, PartialEq)]
pub struct CategoryShare {
    pub category: String,
    pub nodes: usize,
    /// Sums of the nodes' medians, in seconds.
    pub forward: f64,
    pub backward: f64,
    pub total: f64,
    /// Fraction of the sum of all nodes' times.
    pub time_share: f64,
    pub macs: u64,
    /// Fraction of the network's MACs.
    pub macs_share: f64,
    /// FLOPs of both phases over their time, when the category computes any.
    pub gflops_per_s: Option<f64>,
}

impl ProfileDoc {
    /// The nodes by descending forward-plus-backward median time (ties in graph order).
    pub fn nodes_by_time(&self) -> Vec<&NodeProfile> {
        let mut nodes: Vec<&NodeProfile> = self.nodes.iter().collect();
        nodes.sort_by(|a, b| b.total_median().total_cmp(&a.total_median()));
        nodes
    }

    /// The per-op-type summary, by descending share of time.
    pub fn by_category(&self) -> Vec<CategoryShare> {
        let total_time: f64 = self.nodes.iter().map(NodeProfile::total_median).sum();
        // Saturating: a node's count may be `u64::MAX` (a model of huge dimensions).
        let total_macs = self
            .nodes
            .iter()
            .map(|n| n.macs)
            .fold(0, u64::saturating_add);
        let mut rows: Vec<CategoryShare> = Vec::new();
        let mut flops: Vec<f64> = Vec::new();
        for n in &self.nodes {
            let i = match rows.iter().position(|r| r.category == n.category) {
                Some(i) => i,
                None => {
                    rows.push(CategoryShare {
                        category: n.category.clone(),
                        nodes: 0,
                        forward: 0.0,
                        backward: 0.0,
                        total: 0.0,
                        time_share: 0.0,
                        macs: 0,
                        macs_share: 0.0,
                        gflops_per_s: None,
                    });
                    flops.push(0.0);
                    rows.len() - 1
                }
            };
            let r = &mut rows[i];
            r.nodes += 1;
            r.forward += n.forward.median;
            r.backward += n.backward.as_ref().map_or(0.0, |b| b.median);
            r.total += n.total_median();
            r.macs = r.macs.saturating_add(n.macs);
            flops[i] += n.forward_flops + n.backward_flops.unwrap_or(0.0);
        }
        for (r, f) in rows.iter_mut().zip(flops) {
            r.time_share = ratio(r.total, total_time);
            r.macs_share = ratio(r.macs as f64, total_macs as f64);
            r.gflops_per_s = (f > 0.0 && r.total > 0.0).then(|| f / r.total / 1e9);
        }
        rows.sort_by(|a, b| b.total.total_cmp(&a.total));
        rows
    }
}

fn ratio(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

impl NodeProfile {
    /// Achieved GFLOP/s over both phases, for nodes that compute FLOPs.
    pub fn gflops_per_s(&self) -> Option<f64> {
        let flops = self.forward_flops + self.backward_flops.unwrap_or(0.0);
        let t = self.total_median();
        (flops > 0.0 && t > 0.0).then(|| flops / t / 1e9)
    }
}
