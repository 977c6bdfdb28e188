//! ConvNeXt-Tiny as torchvision builds it: a 4×4 patchify stem, four stages of
//! ConvNeXt blocks (depthwise 7×7, LayerNorm, inverted 4× MLP with GELU, layer scale,
//! stochastic depth) with LayerNorm + 2×2 convolutions between them.
//!
//! The blocks' pointwise `Linear` layers act on each pixel's channels; here they are
//! 1×1 convolutions, which have the same parameters and MACs.

use crate::blocks::rounded;
use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Liu, Mao, Wu, Feichtenhofer, Darrell, Xie. A ConvNet for the \
                        2020s. CVPR 2022";

const LN_EPS: f64 = 1e-6;
const LAYER_SCALE: f64 = 1e-6;

/// ConvNeXt-T's stages: width and blocks.
const TINY: [(usize, usize); 4] = [(96, 3), (192, 3), (384, 9), (768, 3)];

/// torchvision `CNBlock`.
fn cn_block(b: &mut GraphBuilder, p: &str, x: &T, drop: f64) -> T {
    let dim = x.channels();
    let y = b.conv(
        format!("{p}.block.0"),
        x,
        Conv2d::new(dim, 7).padding(3).groups(dim),
    );
    let y = b.layer_norm2d(format!("{p}.block.2"), &y, LN_EPS);
    let y = b.conv(format!("{p}.block.3"), &y, Conv2d::new(4 * dim, 1));
    let y = b.gelu(format!("{p}.block.4"), &y);
    let y = b.conv(format!("{p}.block.5"), &y, Conv2d::new(dim, 1));
    let y = b.layer_scale(format!("{p}.layer_scale"), &y, LAYER_SCALE);
    let y = b.stochastic_depth(format!("{p}.stochastic_depth"), &y, drop);
    b.sum(format!("{p}.add"), &[&y, x])
}

fn convnext(
    model: &ZooEntry,
    stages: &[(usize, usize)],
    stochastic_depth: f64,
    input: [usize; 3],
) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(model.name, input).info(model.info());
    let x = b.input();
    let x = b.conv("features.0.0", &x, Conv2d::new(stages[0].0, 4).stride(4));
    let mut x = b.layer_norm2d("features.0.1", &x, LN_EPS);
    let total: usize = stages.iter().map(|s| s.1).sum();
    let mut block_id = 0;
    for (i, &(width, blocks)) in stages.iter().enumerate() {
        if i > 0 {
            let p = format!("features.{}", 2 * i);
            let y = b.layer_norm2d(format!("{p}.0"), &x, LN_EPS);
            x = b.conv(format!("{p}.1"), &y, Conv2d::new(width, 2).stride(2));
        }
        for j in 0..blocks {
            let drop = rounded(stochastic_depth * block_id as f64 / (total as f64 - 1.0));
            x = cn_block(&mut b, &format!("features.{}.{j}", 2 * i + 1), &x, drop);
            block_id += 1;
        }
    }
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.layer_norm2d("classifier.0", &x, LN_EPS);
    let x = b.flatten("classifier.1", &x);
    let x = b.linear("classifier.2", &x, 1000);
    b.finish(&x)
}

/// The family's models. Counts and errors: torchvision's (the errors are 100 − the
/// ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[CONVNEXT_TINY];

const CONVNEXT_TINY: ZooEntry = ZooEntry {
    name: "convnext-tiny",
    aliases: &["convnext_tiny"],
    family: "convnext",
    source: "torchvision convnext_tiny",
    citation: CITATION,
    top1_error: Some(17.48),
    top5_error: Some(3.85),
    params: 28_589_128,
    macs: 4_455_531_264,
    default_input: IMAGENET,
    min_input: 32,
    legacy: false,
    build: convnext_tiny,
};

/// torchvision `convnext_tiny`: stages `[3, 3, 9, 3]` of widths 96–768, stochastic
/// depth 0.1.
pub fn convnext_tiny(input: [usize; 3]) -> Result<Graph, GraphError> {
    convnext(&CONVNEXT_TINY, &TINY, 0.1, input)
}
