//! DenseNet-121 as torchvision builds it: four dense blocks `[6, 12, 24, 16]` in which
//! every layer (BN-ReLU-1×1-BN-ReLU-3×3) adds 32 channels to the running
//! concatenation, with halving transitions between the blocks.

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{AvgPool2d, Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Huang, Liu, van der Maaten, Weinberger. Densely Connected \
                        Convolutional Networks. CVPR 2017";

/// torchvision `_DenseLayer`: BN, ReLU, 1×1 to `bn_size · growth`, BN, ReLU, 3×3 to
/// `growth`; the result is concatenated to the layer's input.
fn dense_layer(b: &mut GraphBuilder, p: &str, x: &T, growth: usize, bn_size: usize) -> T {
    let y = b.batch_norm(format!("{p}.norm1"), x);
    let y = b.relu(format!("{p}.relu1"), &y);
    let y = b.conv(
        format!("{p}.conv1"),
        &y,
        Conv2d::new(bn_size * growth, 1).bias(false),
    );
    let y = b.batch_norm(format!("{p}.norm2"), &y);
    let y = b.relu(format!("{p}.relu2"), &y);
    let y = b.conv(
        format!("{p}.conv2"),
        &y,
        Conv2d::new(growth, 3).padding(1).bias(false),
    );
    b.concat(format!("{p}.cat"), &[x, &y])
}

/// torchvision `_Transition`: BN, ReLU, 1×1 to half the channels, 2×2 average pool.
fn transition(b: &mut GraphBuilder, p: &str, x: &T) -> T {
    let y = b.batch_norm(format!("{p}.norm"), x);
    let y = b.relu(format!("{p}.relu"), &y);
    let y = b.conv(
        format!("{p}.conv"),
        &y,
        Conv2d::new(x.channels() / 2, 1).bias(false),
    );
    b.avg_pool(format!("{p}.pool"), &y, AvgPool2d::new(2, 2))
}

/// A DenseNet from its growth rate, layers per block and stem width (bottleneck 4×).
fn densenet(
    model: &ZooEntry,
    growth: usize,
    blocks: [usize; 4],
    init_features: usize,
    input: [usize; 3],
) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(model.name, input).info(model.info());
    let x = b.input();
    let stem = Conv2d::new(init_features, 7)
        .stride(2)
        .padding(3)
        .bias(false);
    let x = b.conv("features.conv0", &x, stem);
    let x = b.batch_norm("features.norm0", &x);
    let x = b.relu("features.relu0", &x);
    let mut x = b.max_pool("features.pool0", &x, MaxPool2d::new(3, 2).padding(1));
    for (i, &layers) in blocks.iter().enumerate() {
        for l in 0..layers {
            let p = format!("features.denseblock{}.denselayer{}", i + 1, l + 1);
            x = dense_layer(&mut b, &p, &x, growth, 4);
        }
        if i + 1 < blocks.len() {
            x = transition(&mut b, &format!("features.transition{}", i + 1), &x);
        }
    }
    let x = b.batch_norm("features.norm5", &x);
    let x = b.relu("relu", &x);
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.linear("classifier", &x, 1000);
    b.finish(&x)
}

/// The family's models. Counts and errors: torchvision's (the errors are 100 − the
/// ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[DENSENET121];

const DENSENET121: ZooEntry = ZooEntry {
    name: "densenet121",
    aliases: &[],
    family: "densenet",
    source: "torchvision densenet121",
    citation: CITATION,
    top1_error: Some(25.57),
    top5_error: Some(8.03),
    params: 7_978_856,
    macs: 2_834_161_664,
    default_input: IMAGENET,
    min_input: 29,
    legacy: false,
    build: densenet121,
};

/// torchvision `densenet121`: growth 32, blocks `[6, 12, 24, 16]`, 64 stem channels.
pub fn densenet121(input: [usize; 3]) -> Result<Graph, GraphError> {
    densenet(&DENSENET121, 32, [6, 12, 24, 16], 64, input)
}
