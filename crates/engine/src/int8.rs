//! Whether an int8 run ran as asked. A stack given a quantised network may keep layers
//! in f32 it cannot quantise, silently (ONNX Runtime without a fused int8 kernel,
//! OpenVINO's low-precision transformations, oneDNN); each int8 result records which of
//! the network's convolutions and matrix products its stack ran in int8, and the share
//! of their MACs, from what the stack reports, and warns when the share is low.

use crate::{ChosenKernels, Precision, SessionConfig};
use cnnbench_graph::quant::ActivationRanges;
use cnnbench_graph::{Graph, Op};
use std::collections::BTreeMap;

/// The activation ranges an int8 session quantises to (`None` in every other
/// precision); an int8 session without them is refused, naming `engine`.
pub fn ranges_of<'c>(
    config: &'c SessionConfig,
    engine: &str,
) -> anyhow::Result<Option<&'c ActivationRanges>> {
    match config.precision {
        Precision::Int8 => config.calibration.as_deref().map(Some).ok_or_else(|| {
            anyhow::anyhow!(
                "{engine}: an int8 session needs the network's calibrated activation ranges"
            )
        }),
        Precision::F32
        | Precision::Tf32
        | Precision::Bf16
        | Precision::F16
        | Precision::AmpBf16
        | Precision::AmpF16 => Ok(None),
    }
}

/// Below this share of MACs in int8 a result warns and names the layers that were not.
pub const INT8_SHARE_WARNING: f64 = 0.9;

/// Layers named in a warning before the rest are counted.
const NAMED_LAYERS: usize = 8;

/// What ran of the network's heavy layers (convolutions, linear layers), as kernels the
/// stack reported.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Int8Coverage {
    /// Kernel (the stack's op) → how many times it ran.
    pub kernels: BTreeMap<String, usize>,
    /// MACs of the heavy layers that ran in int8 / in a float type.
    pub int8_macs: u64,
    pub float_macs: u64,
    /// The heavy layers that ran in a float type, by the IR's names where the stack's
    /// names lead back to them.
    pub float_layers: Vec<String>,
}

impl Int8Coverage {
    /// Counts one heavy kernel: the IR node it computes (found from the stack's name by
    /// `node_of`), whether it ran in int8.
    pub fn add(&mut self, graph: &Graph, kernel: &str, stack_name: &str, int8: bool) {
        *self.kernels.entry(kernel.to_string()).or_insert(0) += 1;
        let node = node_named(graph, stack_name);
        let macs = node.map_or(0, |n| n.op.macs(&n.shape));
        if int8 {
            self.int8_macs = self.int8_macs.saturating_add(macs);
        } else {
            self.float_macs = self.float_macs.saturating_add(macs);
            self.float_layers
                .push(node.map_or(stack_name.to_string(), |n| n.name.clone()));
        }
    }

    /// The share of the heavy layers' MACs that ran in int8 (`None` when none were
    /// matched to the network).
    pub fn int8_share(&self) -> Option<f64> {
        // In f64: each count may be `u64::MAX` (saturated), and their sum would wrap.
        let total = self.int8_macs as f64 + self.float_macs as f64;
        (total > 0.0).then(|| self.int8_macs as f64 / total)
    }

    /// The result's record: the kernels and the share as settings, and the warning when
    /// too little ran in int8.
    pub fn chosen_kernels(&self, stack: &str) -> ChosenKernels {
        let mut chosen = ChosenKernels::default();
        let kernels: Vec<String> = self
            .kernels
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        chosen
            .settings
            .insert("int8_kernels".into(), kernels.join(", "));
        let share = self.int8_share();
        if let Some(share) = share {
            chosen
                .settings
                .insert("int8_mac_share".into(), format!("{:.1}%", 100.0 * share));
        }
        if share.is_none_or(|s| s < INT8_SHARE_WARNING) {
            let mut named: Vec<&str> = self
                .float_layers
                .iter()
                .take(NAMED_LAYERS)
                .map(String::as_str)
                .collect();
            let more = self.float_layers.len().saturating_sub(NAMED_LAYERS);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            if named.is_empty() {
                named.push("none matched to the network");
            }
            chosen.warnings.push(format!(
                "not run as asked: {stack} ran {} of the convolution and matrix-product MACs in int8 (below {:.0}%); in a float type: {}{more}",
                share.map_or("none".to_string(), |s| format!("{:.1}%", 100.0 * s)),
                100.0 * INT8_SHARE_WARNING,
                named.join(", ")
            ));
        }
        chosen
    }
}

/// The IR node a stack's kernel computes: the stack's name as it is, or with the suffix
/// a stack adds to a fused node (ONNX Runtime's `_token_N`) taken off.
fn node_named<'g>(graph: &'g Graph, stack_name: &str) -> Option<&'g cnnbench_graph::Node> {
    let mut name = stack_name;
    loop {
        if let Some(node) = graph.nodes().iter().find(|n| n.name == name) {
            return Some(node).filter(|n| is_heavy(&n.op));
        }
        let (head, tail) = name.rsplit_once("_token_")?;
        if tail.is_empty() || !tail.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        name = head;
    }
}

/// Whether an op is one int8 speeds up: a convolution or a linear layer.
fn is_heavy(op: &Op) -> bool {
    match op {
        Op::Conv2d(_) | Op::Linear(_) => true,
        Op::BatchNorm2d(_)
        | Op::Activation(_)
        | Op::LocalResponseNorm(_)
        | Op::MaxPool2d(_)
        | Op::AvgPool2d(_)
        | Op::AdaptiveAvgPool2d(_)
        | Op::Dropout(_)
        | Op::Flatten(_)
        | Op::Concat(_)
        | Op::Add(_)
        | Op::Mul(_)
        | Op::LayerNorm2d(_)
        | Op::LayerScale(_)
        | Op::ChannelShuffle(_)
        | Op::SliceChannels(_)
        | Op::StochasticDepth(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::ops::Conv2d;
    use cnnbench_graph::GraphBuilder;

    fn graph() -> Graph {
        let mut b = GraphBuilder::new("two", [3, 8, 8]);
        let x = b.input();
        let c = b.conv("conv", &x, Conv2d::new(4, 3).padding(1));
        let f = b.flatten("flat", &c);
        let l = b.linear("fc", &f, 10);
        b.finish(&l).unwrap()
    }

    #[test]
    fn a_float_layer_lowers_the_share_and_is_named_in_the_warning() {
        let g = graph();
        let mut all = Int8Coverage::default();
        all.add(&g, "QLinearConv", "conv_token_3", true);
        all.add(&g, "QGemm", "fc", true);
        assert_eq!(all.int8_share(), Some(1.0));
        let chosen = all.chosen_kernels("ONNX Runtime");
        assert_eq!(chosen.settings["int8_kernels"], "QGemm ×1, QLinearConv ×1");
        assert_eq!(chosen.settings["int8_mac_share"], "100.0%");
        assert!(chosen.warnings.is_empty());

        let mut fell_back = Int8Coverage::default();
        fell_back.add(&g, "Conv", "conv_token_1_token_2", false);
        fell_back.add(&g, "QGemm", "fc", true);
        let conv_macs = 4 * 3 * 9 * 64;
        let share = 2560.0 / (2560.0 + conv_macs as f64);
        assert!((fell_back.int8_share().unwrap() - share).abs() < 1e-12);
        let chosen = fell_back.chosen_kernels("ONNX Runtime");
        assert!(
            chosen.warnings[0].contains("not run as asked") && chosen.warnings[0].contains("conv"),
            "{:?}",
            chosen.warnings
        );
    }
}
