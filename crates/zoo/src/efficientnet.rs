//! EfficientNet-B0 as torchvision builds it: MBConv blocks (inverted residuals with
//! squeeze-and-excitation and SiLU) from the paper's stage table, with stochastic depth
//! rising linearly to 0.2 over the blocks.

use crate::blocks::{conv_norm_act, make_divisible, rounded, squeeze_excitation, Act, BN};
use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Tan, Le. EfficientNet: Rethinking Model Scaling for Convolutional \
                        Neural Networks. ICML 2019";

/// EfficientNet-B0's stages: expansion, kernel, first stride, output channels, blocks.
const B0_STAGES: [(usize, usize, usize, usize, usize); 7] = [
    (1, 3, 1, 16, 1),
    (6, 3, 2, 24, 2),
    (6, 5, 2, 40, 2),
    (6, 3, 2, 80, 3),
    (6, 5, 1, 112, 3),
    (6, 5, 2, 192, 4),
    (6, 3, 1, 320, 1),
];

const STOCHASTIC_DEPTH: f64 = 0.2;

/// torchvision `MBConv`: 1×1 expansion (+SiLU) unless the ratio is 1, depthwise k×k
/// (+SiLU), squeeze-and-excitation to a quarter of the *input* channels, linear 1×1
/// projection; stochastic depth and a residual connection when the shape is kept.
#[allow(clippy::too_many_arguments)]
fn mbconv(
    b: &mut GraphBuilder,
    p: &str,
    x: &T,
    expand: usize,
    kernel: usize,
    stride: usize,
    out: usize,
    drop: f64,
) -> T {
    let input = x.channels();
    let expanded = make_divisible((input * expand) as f64, 8);
    let mut y = x.clone();
    let mut i = 0;
    if expanded != input {
        let e = Conv2d::new(expanded, 1);
        y = conv_norm_act(b, &format!("{p}.block.0"), &y, e, BN, Some(Act::Silu));
        i = 1;
    }
    let dw = Conv2d::new(expanded, kernel)
        .stride(stride)
        .groups(expanded);
    y = conv_norm_act(b, &format!("{p}.block.{i}"), &y, dw, BN, Some(Act::Silu));
    let squeeze = (input / 4).max(1);
    let se = format!("{p}.block.{}", i + 1);
    y = squeeze_excitation(b, &se, &y, squeeze, Act::Silu, Act::Sigmoid);
    let proj = format!("{p}.block.{}", i + 2);
    y = conv_norm_act(b, &proj, &y, Conv2d::new(out, 1), BN, None);
    if stride == 1 && input == out {
        y = b.stochastic_depth(format!("{p}.stochastic_depth"), &y, drop);
        y = b.sum(format!("{p}.add"), &[&y, x]);
    }
    y
}

/// The family's models. Counts and errors: torchvision's (the errors are 100 − the
/// ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[EFFICIENTNET_B0];

const EFFICIENTNET_B0: ZooEntry = ZooEntry {
    name: "efficientnet-b0",
    aliases: &["efficientnet_b0"],
    family: "efficientnet",
    source: "torchvision efficientnet_b0",
    citation: CITATION,
    top1_error: Some(22.31),
    top5_error: Some(6.47),
    params: 5_288_548,
    macs: 385_814_752,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: efficientnet_b0,
};

/// torchvision `efficientnet_b0`.
pub fn efficientnet_b0(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(EFFICIENTNET_B0.name, input).info(EFFICIENTNET_B0.info());
    let x = b.input();
    let stem = Conv2d::new(32, 3).stride(2);
    let mut x = conv_norm_act(&mut b, "features.0", &x, stem, BN, Some(Act::Silu));
    let total: usize = B0_STAGES.iter().map(|s| s.4).sum();
    let mut block_id = 0;
    for (stage, &(expand, kernel, stride, out, blocks)) in B0_STAGES.iter().enumerate() {
        for i in 0..blocks {
            let drop = rounded(STOCHASTIC_DEPTH * block_id as f64 / total as f64);
            let prefix = format!("features.{}.{i}", stage + 1);
            let s = if i == 0 { stride } else { 1 };
            x = mbconv(&mut b, &prefix, &x, expand, kernel, s, out, drop);
            block_id += 1;
        }
    }
    let head = Conv2d::new(4 * x.channels(), 1);
    let name = format!("features.{}", B0_STAGES.len() + 1);
    let x = conv_norm_act(&mut b, &name, &x, head, BN, Some(Act::Silu));
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.dropout("classifier.0", &x, 0.2);
    let x = b.linear("classifier.1", &x, 1000);
    b.finish(&x)
}
