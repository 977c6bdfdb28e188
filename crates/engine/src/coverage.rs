//! Whether a low-precision run ran as asked. A stack given an int8 network, or asked for
//! bf16 or f16, may keep layers in f32 it cannot lower, silently (ONNX Runtime without a
//! fused int8 kernel, OpenVINO's low-precision transformations, oneDNN); the result
//! records which of the network's convolutions and matrix products its stack ran in the
//! asked precision, from what the stack itself reports, and warns when too few did.

use crate::{ChosenKernels, Precision};
use cnnbench_graph::{Graph, Node, Op};
use std::collections::BTreeMap;

/// Below this share of the heavy layers in the asked precision a result warns and names
/// the layers that were not.
pub const SHARE_WARNING: f64 = 0.9;

/// Layers named in a warning before the rest are counted.
const NAMED_LAYERS: usize = 8;

/// What ran of the network's heavy layers (convolutions, linear layers), as kernels the
/// stack reported, against the precision the run asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelCoverage {
    /// The precision the run asked for (int8, bf16, f16).
    asked: Precision,
    /// Kernel (the stack's name of it) → how many times it ran.
    pub kernels: BTreeMap<String, usize>,
    /// MACs of the heavy layers matched to the network that ran in the asked precision /
    /// in another one.
    pub asked_macs: u64,
    pub other_macs: u64,
    /// Heavy kernels that ran in the asked precision / in another one, matched or not.
    pub asked_layers: usize,
    pub other_layers: usize,
    /// Heavy kernels whose stack name leads back to no node of the network (a stack
    /// that renames the layers it fuses: OpenVINO names a convolution after the batch
    /// norm folded into it). Their MACs are unknown, so the share is then counted in
    /// layers, not MACs.
    pub unmatched: usize,
    /// The heavy layers that ran in another precision, by the IR's names where the
    /// stack's names lead back to them.
    pub other_names: Vec<String>,
}

/// How a share was counted: in MACs when every heavy kernel was matched to the network,
/// in layers otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Share {
    OfMacs(f64),
    OfLayers(f64),
}

impl Share {
    pub fn value(self) -> f64 {
        match self {
            Share::OfMacs(share) | Share::OfLayers(share) => share,
        }
    }
}

impl KernelCoverage {
    /// Nothing counted yet, for a run that asked for `asked`.
    pub fn new(asked: Precision) -> Self {
        KernelCoverage {
            asked,
            kernels: BTreeMap::new(),
            asked_macs: 0,
            other_macs: 0,
            asked_layers: 0,
            other_layers: 0,
            unmatched: 0,
            other_names: Vec::new(),
        }
    }

    /// Counts one heavy kernel: the IR node it computes (found from the stack's name by
    /// [`node_named`]), whether it ran in the asked precision.
    pub fn add(&mut self, graph: &Graph, kernel: &str, stack_name: &str, as_asked: bool) {
        *self.kernels.entry(kernel.to_string()).or_insert(0) += 1;
        let node = node_named(graph, stack_name);
        if node.is_none() {
            self.unmatched += 1;
        }
        let macs = node.map_or(0, |n| n.op.macs(&n.shape));
        if as_asked {
            self.asked_layers += 1;
            self.asked_macs = self.asked_macs.saturating_add(macs);
        } else {
            self.other_layers += 1;
            self.other_macs = self.other_macs.saturating_add(macs);
            self.other_names
                .push(node.map_or(stack_name.to_string(), |n| n.name.clone()));
        }
    }

    /// The share of the heavy layers that ran in the asked precision: of their MACs when
    /// every kernel was matched to the network, of their count otherwise; `None` when
    /// the stack reported no heavy kernel at all.
    pub fn share(&self) -> Option<Share> {
        // In f64: each count may be `u64::MAX` (saturated), and their sum would wrap.
        let macs = self.asked_macs as f64 + self.other_macs as f64;
        let layers = self.asked_layers + self.other_layers;
        if self.unmatched == 0 && macs > 0.0 {
            Some(Share::OfMacs(self.asked_macs as f64 / macs))
        } else if layers > 0 {
            Some(Share::OfLayers(self.asked_layers as f64 / layers as f64))
        } else {
            None
        }
    }

    /// The result's record: the kernels and the share as settings
    /// (`<precision>_kernels`, `<precision>_mac_share` or `<precision>_layer_share`), and
    /// the warning when too little ran in the asked precision.
    pub fn chosen_kernels(&self, stack: &str) -> ChosenKernels {
        let asked = self.asked.as_str();
        let mut chosen = ChosenKernels::default();
        let kernels: Vec<String> = self
            .kernels
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect();
        chosen
            .settings
            .insert(format!("{asked}_kernels"), kernels.join(", "));
        let share = self.share();
        let (key, of_what) = match share {
            Some(Share::OfLayers(_)) => ("layer_share", "convolutions and matrix products"),
            Some(Share::OfMacs(_)) | None => ("mac_share", "convolution and matrix-product MACs"),
        };
        if let Some(share) = share {
            chosen.settings.insert(
                format!("{asked}_{key}"),
                format!("{:.1}%", 100.0 * share.value()),
            );
        }
        if share.is_none_or(|s| s.value() < SHARE_WARNING) {
            let mut named: Vec<&str> = self
                .other_names
                .iter()
                .take(NAMED_LAYERS)
                .map(String::as_str)
                .collect();
            let more = self.other_names.len().saturating_sub(NAMED_LAYERS);
            let more = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            if named.is_empty() {
                named.push("none reported");
            }
            chosen.warnings.push(format!(
                "not run as asked: {stack} ran {} of the {of_what} in {asked} (below {:.0}%); in another precision: {}{more}",
                share.map_or("none".to_string(), |s| format!("{:.1}%", 100.0 * s.value())),
                100.0 * SHARE_WARNING,
                named.join(", ")
            ));
        }
        chosen
    }
}

/// The IR node a stack's kernel computes: the stack's name as it is, or with the suffix
/// a stack adds to a fused node (ONNX Runtime's `_token_N`) taken off.
fn node_named<'g>(graph: &'g Graph, stack_name: &str) -> Option<&'g Node> {
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

/// Whether an op is one a low precision speeds up: a convolution or a linear layer.
pub(crate) fn is_heavy(op: &Op) -> bool {
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
        let mut all = KernelCoverage::new(Precision::Int8);
        all.add(&g, "QLinearConv", "conv_token_3", true);
        all.add(&g, "QGemm", "fc", true);
        assert_eq!(all.share(), Some(Share::OfMacs(1.0)));
        let chosen = all.chosen_kernels("ONNX Runtime");
        assert_eq!(chosen.settings["int8_kernels"], "QGemm ×1, QLinearConv ×1");
        assert_eq!(chosen.settings["int8_mac_share"], "100.0%");
        assert!(chosen.warnings.is_empty());

        let mut fell_back = KernelCoverage::new(Precision::Int8);
        fell_back.add(&g, "Conv", "conv_token_1_token_2", false);
        fell_back.add(&g, "QGemm", "fc", true);
        let conv_macs = 4 * 3 * 9 * 64;
        let share = 2560.0 / (2560.0 + conv_macs as f64);
        assert!((fell_back.share().unwrap().value() - share).abs() < 1e-12);
        let chosen = fell_back.chosen_kernels("ONNX Runtime");
        assert!(
            chosen.warnings[0].contains("not run as asked") && chosen.warnings[0].contains("conv"),
            "{:?}",
            chosen.warnings
        );
    }

    #[test]
    fn kernels_named_after_no_layer_are_counted_in_layers_and_named_as_the_stack_named_them() {
        let g = graph();
        let mut renamed = KernelCoverage::new(Precision::Bf16);
        renamed.add(&g, "brgconv_avx512_f32", "Multiply_18005", false);
        renamed.add(&g, "brgemm_avx512_bf16", "fc", true);
        assert_eq!(renamed.share(), Some(Share::OfLayers(0.5)));
        let chosen = renamed.chosen_kernels("OpenVINO");
        assert_eq!(chosen.settings["bf16_layer_share"], "50.0%");
        assert!(!chosen.settings.contains_key("bf16_mac_share"));
        assert_eq!(
            chosen.warnings,
            ["not run as asked: OpenVINO ran 50.0% of the convolutions and matrix products in bf16 (below 90%); in another precision: Multiply_18005"]
        );
    }

    #[test]
    fn a_stack_that_reports_no_heavy_kernel_is_warned_about() {
        let chosen = KernelCoverage::new(Precision::F16).chosen_kernels("OpenVINO");
        assert_eq!(chosen.settings["f16_kernels"], "");
        assert!(
            chosen.warnings[0].contains("ran none of"),
            "{:?}",
            chosen.warnings
        );
    }
}
