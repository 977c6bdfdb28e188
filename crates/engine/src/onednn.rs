//! What oneDNN says it ran, read from its verbose output (`ONEDNN_VERBOSE`, or
//! `torch.backends.mkldnn.verbose` switched on for one pass): the instruction set it
//! dispatches to and the implementation of every primitive it executed. The libtorch
//! engines in cnnbench's process and PyTorch in its worker both record it, so a result
//! says which kernels its number came from.

use crate::coverage::KernelCoverage;
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

/// What an int8 pass of PyTorch's ran of `graph`'s heavy layers, from oneDNN's verbose
/// lines with their memory descriptors: each executed convolution, inner product and
/// matmul, in int8 when its source is u8 or s8. oneDNN names no layer, so the share is
/// counted in layers; and a layer computed outside oneDNN (ATen's own f32 kernels)
/// leaves no line at all, so the graph's heavy layers beyond the lines are counted as
/// run in another precision.
pub fn int8_coverage(text: &str, graph: &Graph) -> KernelCoverage {
    let mut coverage = KernelCoverage::new(Precision::Int8);
    let mut seen = 0;
    for line in text.lines() {
        let fields: Vec<&str> = line.split(',').collect();
        let ["onednn_verbose", _, "primitive", "exec", "cpu", kind, implementation, _, descriptors, ..] =
            fields.as_slice()
        else {
            continue;
        };
        if !HEAVY_KINDS.contains(kind) {
            continue;
        }
        let source = descriptors
            .split_whitespace()
            .find_map(|d| d.strip_prefix("src:"))
            .and_then(|d| d.split(':').next())
            .unwrap_or("?");
        let int8 = matches!(source, "u8" | "s8");
        seen += 1;
        coverage.add(
            graph,
            &format!("{kind} {implementation}"),
            &format!("a {kind} in {source} ({implementation})"),
            int8,
        );
    }
    let heavy = graph
        .nodes()
        .iter()
        .filter(|n| crate::coverage::is_heavy(&n.op))
        .count();
    for _ in seen..heavy {
        coverage.add(
            graph,
            "ATen (not oneDNN)",
            "a layer in ATen's own f32 kernels",
            false,
        );
    }
    coverage
}

/// The primitives that carry a network's convolutions and linear layers.
const HEAVY_KINDS: [&str; 3] = ["convolution", "inner_product", "matmul"];

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

    /// An int8 pass as PyTorch 2.11's inductor runs a PT2E-quantised network (the lines
    /// as the worker cuts them, up to the memory descriptors): convolutions and matmuls
    /// on u8 sources are int8; one on f32 is not; and a heavy layer with no line at all
    /// ran outside oneDNN, which counts against the share.
    #[test]
    fn an_int8_pass_counts_the_heavy_primitives_by_their_source_type() {
        use cnnbench_graph::ops::Conv2d;
        let mut b = cnnbench_graph::GraphBuilder::new("three", [3, 8, 8]);
        let x = b.input();
        let c1 = b.conv("c1", &x, Conv2d::new(4, 3).padding(1));
        let c2 = b.conv("c2", &c1, Conv2d::new(4, 3).padding(1));
        let f = b.flatten("flat", &c2);
        let l = b.linear("fc", &f, 10);
        let graph = b.finish(&l).unwrap();
        let int8_conv = "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core_vnni,forward_inference,src:u8::blocked:acdb::f0 wei:s8:ap:blocked:AcdB16a4b::f8:zpm1 bia:f32:a:blocked:a::f0 dst:u8::blocked:acdb::f0";
        let int8_matmul = "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_vnni,undef,src:u8:a:blocked:ab::f0 wei:s8:p:blocked:AB16a64b4a::f8:zpm2 bia:f32:a:blocked:ab::f0_mask2 dst:f32:a:blocked:ab::f0";
        let f32_conv = "onednn_verbose,v1,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core,forward_inference,src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb16a::f0 bia:f32:a:blocked:a::f0 dst:f32::blocked:acdb::f0";
        let reorder = "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:u8::blocked:acdb::f0";

        let all = [int8_conv, int8_conv, reorder, int8_matmul].join("\n");
        let chosen = int8_coverage(&all, &graph).chosen_kernels("PyTorch");
        assert_eq!(chosen.settings["int8_layer_share"], "100.0%");
        assert_eq!(
            chosen.settings["int8_kernels"],
            "convolution brg_conv_fwd:avx512_core_vnni ×2, matmul brg_matmul:avx512_core_vnni ×1"
        );
        assert!(chosen.warnings.is_empty(), "{chosen:?}");

        let one_f32 = [int8_conv, f32_conv, int8_matmul].join("\n");
        let chosen = int8_coverage(&one_f32, &graph).chosen_kernels("PyTorch");
        assert_eq!(chosen.settings["int8_layer_share"], "66.7%");
        assert!(
            chosen.warnings[0].contains("a convolution in f32 (brg_conv_fwd:avx512_core)"),
            "{chosen:?}"
        );

        // The linear layer left no line: ATen computed it.
        let no_linear = [int8_conv, int8_conv].join("\n");
        let chosen = int8_coverage(&no_linear, &graph).chosen_kernels("PyTorch");
        assert_eq!(chosen.settings["int8_layer_share"], "66.7%");
        assert!(
            chosen.warnings[0].contains("a layer in ATen's own f32 kernels"),
            "{chosen:?}"
        );
    }
}
