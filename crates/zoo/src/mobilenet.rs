//! MobileNet v2 and v3 (large) as torchvision builds them: inverted residual blocks
//! (1×1 expand, depthwise 3×3/5×5, linear 1×1 projection) from the papers' tables, with
//! squeeze-and-excitation and hard-swish in v3.

use crate::blocks::{conv_norm_act, make_divisible, squeeze_excitation, Act, Norm, BN};
use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const V2_CITATION: &str = "Sandler, Howard, Zhu, Zhmoginov, Chen. MobileNetV2: Inverted \
                           Residuals and Linear Bottlenecks. CVPR 2018";
const V3_CITATION: &str = "Howard, Sandler, Chu, Chen, Chen, Tan, Wang, Zhu, Pang, \
                           Vasudevan, Le, Adam. Searching for MobileNetV3. ICCV 2019";

/// MobileNet v2's table: expansion t, output channels c, repeats n, first stride s.
const V2_SETTINGS: [(usize, usize, usize, usize); 7] = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
];

/// One inverted residual block: 1×1 expansion to `expanded` channels (skipped when it
/// would not change the width), depthwise k×k, optional squeeze-and-excitation, linear
/// 1×1 projection to `out`; a residual connection when the shape is kept.
struct InvertedResidual {
    kernel: usize,
    expanded: usize,
    out: usize,
    stride: usize,
    act: Act,
    /// Squeeze channels of the SE block, if any.
    se: Option<usize>,
    norm: Norm,
}

impl InvertedResidual {
    /// torchvision names the layers `{prefix}.block.{i}` (v3) or `{prefix}.conv.{i}` (v2).
    fn build(&self, b: &mut GraphBuilder, prefix: &str, seq: &str, x: &T) -> T {
        let mut i = 0;
        let mut y = x.clone();
        let next = |i: &mut usize| {
            *i += 1;
            format!("{prefix}.{seq}.{}", *i - 1)
        };
        if self.expanded != x.channels() {
            let name = next(&mut i);
            y = conv_norm_act(
                b,
                &name,
                &y,
                Conv2d::new(self.expanded, 1),
                self.norm,
                Some(self.act),
            );
        }
        let name = next(&mut i);
        y = conv_norm_act(
            b,
            &name,
            &y,
            Conv2d::new(self.expanded, self.kernel)
                .stride(self.stride)
                .groups(self.expanded),
            self.norm,
            Some(self.act),
        );
        if let Some(squeeze) = self.se {
            let name = next(&mut i);
            y = squeeze_excitation(b, &name, &y, squeeze, Act::Relu, Act::Hardsigmoid);
        }
        // v2 spells the projection as a bare conv and BN; the counts are the same.
        let name = next(&mut i);
        y = conv_norm_act(b, &name, &y, Conv2d::new(self.out, 1), self.norm, None);
        if self.stride == 1 && x.channels() == self.out {
            y = b.sum(format!("{prefix}.add"), &[&y, x]);
        }
        y
    }
}

/// The family's models, in display order. Counts and errors: torchvision's (the errors
/// are 100 − the ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[MOBILENET_V2, MOBILENET_V3_LARGE];

const MOBILENET_V2: ZooEntry = ZooEntry {
    name: "mobilenet-v2",
    aliases: &["mobilenet_v2"],
    family: "mobilenet",
    source: "torchvision mobilenet_v2",
    citation: V2_CITATION,
    top1_error: Some(28.12),
    top5_error: Some(9.71),
    params: 3_504_872,
    macs: 300_774_272,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: mobilenet_v2,
};

/// torchvision `mobilenet_v2` (width multiplier 1.0).
pub fn mobilenet_v2(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(MOBILENET_V2.name, input).info(MOBILENET_V2.info());
    let x = b.input();
    let stem = Conv2d::new(32, 3).stride(2);
    let mut x = conv_norm_act(&mut b, "features.0", &x, stem, BN, Some(Act::Relu6));
    let mut index = 1;
    for &(t, c, n, s) in &V2_SETTINGS {
        for i in 0..n {
            let block = InvertedResidual {
                kernel: 3,
                expanded: x.channels() * t,
                out: make_divisible(c as f64, 8),
                stride: if i == 0 { s } else { 1 },
                act: Act::Relu6,
                se: None,
                norm: BN,
            };
            x = block.build(&mut b, &format!("features.{index}"), "conv", &x);
            index += 1;
        }
    }
    let head = Conv2d::new(1280, 1);
    let name = format!("features.{index}");
    let x = conv_norm_act(&mut b, &name, &x, head, BN, Some(Act::Relu6));
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.dropout("classifier.0", &x, 0.2);
    let x = b.linear("classifier.1", &x, 1000);
    b.finish(&x)
}

/// MobileNet v3's batch norm: eps 1e-3, momentum 0.01.
const V3_NORM: Norm = Norm {
    eps: 1e-3,
    momentum: 0.01,
};

/// MobileNet v3-Large's table: kernel, expanded channels, output channels, SE,
/// hard-swish (else ReLU), stride.
const V3_LARGE: [(usize, usize, usize, bool, bool, usize); 15] = [
    (3, 16, 16, false, false, 1),
    (3, 64, 24, false, false, 2),
    (3, 72, 24, false, false, 1),
    (5, 72, 40, true, false, 2),
    (5, 120, 40, true, false, 1),
    (5, 120, 40, true, false, 1),
    (3, 240, 80, false, true, 2),
    (3, 200, 80, false, true, 1),
    (3, 184, 80, false, true, 1),
    (3, 184, 80, false, true, 1),
    (3, 480, 112, true, true, 1),
    (3, 672, 112, true, true, 1),
    (5, 672, 160, true, true, 2),
    (5, 960, 160, true, true, 1),
    (5, 960, 160, true, true, 1),
];

const MOBILENET_V3_LARGE: ZooEntry = ZooEntry {
    name: "mobilenet-v3-large",
    aliases: &["mobilenet_v3_large"],
    family: "mobilenet",
    source: "torchvision mobilenet_v3_large",
    citation: V3_CITATION,
    top1_error: Some(25.96),
    top5_error: Some(8.66),
    params: 5_483_032,
    macs: 216_589_760,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: mobilenet_v3_large,
};

/// torchvision `mobilenet_v3_large` (width multiplier 1.0).
pub fn mobilenet_v3_large(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(MOBILENET_V3_LARGE.name, input).info(MOBILENET_V3_LARGE.info());
    let x = b.input();
    let stem = Conv2d::new(16, 3).stride(2);
    let mut x = conv_norm_act(
        &mut b,
        "features.0",
        &x,
        stem,
        V3_NORM,
        Some(Act::Hardswish),
    );
    for (i, &(kernel, expanded, out, se, hs, stride)) in V3_LARGE.iter().enumerate() {
        let expanded = make_divisible(expanded as f64, 8);
        let block = InvertedResidual {
            kernel,
            expanded,
            out: make_divisible(out as f64, 8),
            stride,
            act: if hs { Act::Hardswish } else { Act::Relu },
            se: se.then(|| make_divisible((expanded / 4) as f64, 8)),
            norm: V3_NORM,
        };
        x = block.build(&mut b, &format!("features.{}", i + 1), "block", &x);
    }
    let last = Conv2d::new(6 * x.channels(), 1);
    let name = format!("features.{}", V3_LARGE.len() + 1);
    let x = conv_norm_act(&mut b, &name, &x, last, V3_NORM, Some(Act::Hardswish));
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.linear("classifier.0", &x, 1280);
    let x = b.hardswish("classifier.1", &x);
    let x = b.dropout("classifier.2", &x, 0.2);
    let x = b.linear("classifier.3", &x, 1000);
    b.finish(&x)
}
