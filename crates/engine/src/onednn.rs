//! What oneDNN says it ran, read from its verbose output (`ONEDNN_VERBOSE`, or
//! `torch.backends.mkldnn.verbose` switched on for one pass): the instruction set it
//! dispatches to and the implementation of every primitive it executed. The libtorch
//! engines in cnnbench's process and PyTorch in its worker both record it, so a result
//! says which kernels its number came from.

use crate::{ChosenKernels, Precision};
use cnnbench_graph::{Graph, Op};
use std::collections::BTreeMap;

/// Why a bf16 run on a CPU without AVX-512 is slow: PyTorch's check before it hands a
/// bf16 convolution to oneDNN (`ideep::has_bf16_type_support`) fails.
pub const BF16_WITHOUT_ONEDNN: &str = "the bf16 convolutions ran in ATen's own reference kernels, not oneDNN's: PyTorch hands bf16 convolutions to oneDNN only on CPUs with AVX-512 (BW, VL, DQ) or AVX2-VNNI-2, which this one lacks, so bf16 is much slower than f32 here";

/// What a PyTorch CPU result records of one pass of `graph` in `precision`: the
/// settings of `report`, convolutions expected where the graph has any, and the
/// warning when bf16 convolutions never reached oneDNN.
pub fn chosen_kernels(report: &OneDnnReport, graph: &Graph, precision: Precision) -> ChosenKernels {
    let convolves = graph.nodes().iter().any(|n| matches!(n.op, Op::Conv2d(_)));
    let expected: &[&str] = if convolves { &["convolution"] } else { &[] };
    let low = matches!(precision, Precision::Bf16 | Precision::AmpBf16);
    let fell_back = low && convolves && !report.primitives.contains_key("convolution");
    ChosenKernels {
        settings: report.settings(expected),
        warnings: fell_back
            .then(|| BF16_WITHOUT_ONEDNN.to_string())
            .into_iter()
            .collect(),
    }
}

/// What oneDNN said while a pass ran: its instruction set (printed once per process,
/// so kept from the first capture) and, per primitive kind (convolution, matmul,
/// inner_product, …), the implementations it executed and how often.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OneDnnReport {
    pub isa: Option<String>,
    pub primitives: BTreeMap<String, BTreeMap<String, usize>>,
}

impl OneDnnReport {
    /// Reads `onednn_verbose,v1,info,cpu,isa:…` and
    /// `onednn_verbose,v1,primitive,exec,cpu,<kind>,<implementation>,…` lines; others
    /// are ignored.
    pub fn parse(text: &str) -> Self {
        let mut report = OneDnnReport::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split(',').collect();
            match fields.as_slice() {
                ["onednn_verbose", _, "info", "cpu", isa, ..] if isa.starts_with("isa:") => {
                    report.isa = Some(isa.trim_start_matches("isa:").trim().to_string());
                }
                ["onednn_verbose", _, "primitive", "exec", "cpu", kind, implementation, ..] => {
                    *report
                        .primitives
                        .entry(kind.to_string())
                        .or_default()
                        .entry(implementation.to_string())
                        .or_default() += 1;
                }
                _ => {}
            }
        }
        report
    }

    /// The kinds that matter for a convolutional network's speed, as result settings:
    /// `onednn_isa` and `onednn_<kind>` = "impl ×count, …" (most used first); a kind
    /// in `expected` that oneDNN never executed is recorded as not having run in it
    /// (ATen's own kernels did the work).
    pub fn settings(&self, expected: &[&str]) -> BTreeMap<String, String> {
        let mut settings = BTreeMap::new();
        if let Some(isa) = &self.isa {
            settings.insert("onednn_isa".to_string(), isa.clone());
        }
        for kind in SHOWN {
            let key = format!("onednn_{kind}");
            match self.primitives.get(kind) {
                Some(implementations) => {
                    let mut by_use: Vec<(&String, &usize)> = implementations.iter().collect();
                    by_use.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
                    let text: Vec<String> = by_use
                        .iter()
                        .map(|(name, n)| format!("{name} ×{n}"))
                        .collect();
                    settings.insert(key, text.join(", "));
                }
                None if expected.contains(&kind) => {
                    settings.insert(key, "not oneDNN (ATen's own kernels)".to_string());
                }
                None => {}
            }
        }
        settings
    }
}

/// Which primitive kinds appear in a result's settings: those that carry a
/// convolutional network's arithmetic (reorders, eltwise and the like are left out).
const SHOWN: [&str; 5] = [
    "convolution",
    "inner_product",
    "matmul",
    "batch_normalization",
    "pooling",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// oneDNN's verbose lines as PyTorch 2.11's oneDNN 3.10 prints them.
    #[test]
    fn onednn_verbose_output_is_read_into_settings() {
        let text = "\
onednn_verbose,v1,info,oneDNN v3.10.2 (commit f1d4719)
onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2
onednn_verbose,v1,info,cpu,isa:Intel AVX2
onednn_verbose,v1,primitive,exec,cpu,reorder,jit:blk,undef,src:f32::blocked:abcd::f0,,2x16x16x16,7.4
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,src:f32,,alg:convolution_direct,mb2_ic16oc32,0.17
onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx2,forward_training,src:f32,,alg:convolution_direct,mb2_ic32oc32,0.2
onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx2,forward_training,src:f32,,alg:convolution_direct,mb2_ic16oc32,0.17
unrelated output
    ";
        let report = OneDnnReport::parse(text);
        assert_eq!(report.isa.as_deref(), Some("Intel AVX2"));
        let settings = report.settings(&["convolution"]);
        assert_eq!(settings["onednn_isa"], "Intel AVX2");
        assert_eq!(
            settings["onednn_convolution"],
            "jit:avx2 ×2, brg_conv_fwd:avx2 ×1"
        );
        assert!(!settings.contains_key("onednn_reorder"));
        // Convolutions that never reached oneDNN (bf16 without AVX512_BF16) are said so.
        let none = OneDnnReport::parse("").settings(&["convolution"]);
        assert_eq!(
            none["onednn_convolution"],
            "not oneDNN (ATen's own kernels)"
        );
        assert!(OneDnnReport::parse("").settings(&[]).is_empty());
    }
}
