//! MNASNet 1.0 as torchvision builds it: a depthwise-separable stem and six stacks of
//! inverted residuals (expansion 3 or 6, kernels 3 or 5) found by architecture search.

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Tan, Chen, Pang, Vasudevan, Sandler, Howard, Le. MnasNet: \
                        Platform-Aware Neural Architecture Search for Mobile. CVPR 2019";

/// torchvision's batch-norm momentum for MNASNet (1 − 0.9997).
const BN_MOMENTUM: f64 = 1.0 - 0.9997;

/// The stacks: output channels, kernel, first stride, expansion, repeats (depth 1.0).
const STACKS: [(usize, usize, usize, usize, usize); 6] = [
    (24, 3, 2, 3, 3),
    (40, 5, 2, 3, 3),
    (80, 5, 2, 6, 3),
    (96, 3, 1, 6, 2),
    (192, 5, 2, 6, 4),
    (320, 3, 1, 6, 1),
];

/// A bias-free convolution at `{p}.{i}`, batch norm at `{p}.{i+1}` and, if asked, ReLU
/// at `{p}.{i+2}`.
fn conv_bn(b: &mut GraphBuilder, p: &str, i: usize, x: &T, conv: Conv2d, relu: bool) -> T {
    let y = b.conv(format!("{p}.{i}"), x, conv.bias(false));
    let y = b.batch_norm_with(format!("{p}.{}", i + 1), &y, 1e-5, BN_MOMENTUM);
    if relu {
        b.relu(format!("{p}.{}", i + 2), &y)
    } else {
        y
    }
}

/// torchvision `_InvertedResidual`: 1×1 expand, depthwise k×k, 1×1 linear projection.
fn inverted_residual(
    b: &mut GraphBuilder,
    p: &str,
    x: &T,
    (out, kernel, stride, expansion): (usize, usize, usize, usize),
) -> T {
    let mid = x.channels() * expansion;
    let lp = format!("{p}.layers");
    let y = conv_bn(b, &lp, 0, x, Conv2d::new(mid, 1), true);
    let dw = Conv2d::new(mid, kernel)
        .stride(stride)
        .padding(kernel / 2)
        .groups(mid);
    let y = conv_bn(b, &lp, 3, &y, dw, true);
    let y = conv_bn(b, &lp, 6, &y, Conv2d::new(out, 1), false);
    if stride == 1 && x.channels() == out {
        b.sum(format!("{p}.add"), &[&y, x])
    } else {
        y
    }
}

/// The family's models. Counts and errors: torchvision's (the errors are 100 − the
/// ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[MNASNET1_0];

const MNASNET1_0: ZooEntry = ZooEntry {
    name: "mnasnet1.0",
    aliases: &["mnasnet1_0"],
    family: "mnasnet",
    source: "torchvision mnasnet1_0",
    citation: CITATION,
    top1_error: Some(26.54),
    top5_error: Some(8.49),
    params: 4_383_312,
    macs: 314_415_872,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: mnasnet1_0,
};

/// torchvision `mnasnet1_0`.
pub fn mnasnet1_0(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(MNASNET1_0.name, input).info(MNASNET1_0.info());
    let x = b.input();
    let x = conv_bn(
        &mut b,
        "layers",
        0,
        &x,
        Conv2d::new(32, 3).stride(2).padding(1),
        true,
    );
    let dw = Conv2d::new(32, 3).padding(1).groups(32);
    let x = conv_bn(&mut b, "layers", 3, &x, dw, true);
    let mut x = conv_bn(&mut b, "layers", 6, &x, Conv2d::new(16, 1), false);
    for (s, &(out, kernel, stride, expansion, repeats)) in STACKS.iter().enumerate() {
        for i in 0..repeats {
            let p = format!("layers.{}.{i}", s + 8);
            let stride = if i == 0 { stride } else { 1 };
            x = inverted_residual(&mut b, &p, &x, (out, kernel, stride, expansion));
        }
    }
    let x = conv_bn(&mut b, "layers", 14, &x, Conv2d::new(1280, 1), true);
    // torchvision takes the mean over H and W: a global average pool.
    let x = b.adaptive_avg_pool("mean", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.dropout("classifier.0", &x, 0.2);
    let x = b.linear("classifier.1", &x, 1000);
    b.finish(&x)
}
