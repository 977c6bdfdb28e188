//! ShuffleNet v2 (1.0×) as torchvision builds it: stages of units that split the
//! channels in two, transform one half (1×1, depthwise 3×3, 1×1), concatenate and
//! shuffle; the first unit of a stage downsamples both halves.

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Ma, Zhang, Zheng, Sun. ShuffleNet V2: Practical Guidelines for \
                        Efficient CNN Architecture Design. ECCV 2018";

/// Units per stage (stage2–stage4) and the output channels of conv1, the three stages
/// and conv5, for the 1.0× model.
const REPEATS: [usize; 3] = [4, 8, 4];
const CHANNELS_X1_0: [usize; 5] = [24, 116, 232, 464, 1024];

/// A bias-free convolution and batch norm, optionally followed by ReLU, named
/// `{p}.{i}`, `{p}.{i+1}` (and `{p}.{i+2}`).
fn conv_bn(b: &mut GraphBuilder, p: &str, i: usize, x: &T, conv: Conv2d, relu: bool) -> T {
    let y = b.conv(format!("{p}.{i}"), x, conv.bias(false));
    let y = b.batch_norm(format!("{p}.{}", i + 1), &y);
    if relu {
        b.relu(format!("{p}.{}", i + 2), &y)
    } else {
        y
    }
}

/// torchvision `InvertedResidual`'s `branch2` (and, stride 2, `branch1`).
fn branch2(b: &mut GraphBuilder, p: &str, x: &T, out: usize, stride: usize) -> T {
    let y = conv_bn(b, p, 0, x, Conv2d::new(out, 1), true);
    let dw = Conv2d::new(out, 3).stride(stride).padding(1).groups(out);
    let y = conv_bn(b, p, 3, &y, dw, false);
    conv_bn(b, p, 5, &y, Conv2d::new(out, 1), true)
}

fn unit(b: &mut GraphBuilder, p: &str, x: &T, out: usize, stride: usize) -> T {
    let half = out / 2;
    let (left, right) = if stride == 1 {
        let c = x.channels();
        let left = b.slice_channels(format!("{p}.split.0"), x, 0, c / 2);
        let right = b.slice_channels(format!("{p}.split.1"), x, c / 2, c);
        let right = branch2(b, &format!("{p}.branch2"), &right, half, 1);
        (left, right)
    } else {
        let p1 = format!("{p}.branch1");
        let c = x.channels();
        let dw = Conv2d::new(c, 3).stride(stride).padding(1).groups(c);
        let left = conv_bn(b, &p1, 0, x, dw, false);
        let left = conv_bn(b, &p1, 2, &left, Conv2d::new(half, 1), true);
        let right = branch2(b, &format!("{p}.branch2"), x, half, stride);
        (left, right)
    };
    let y = b.concat(format!("{p}.cat"), &[&left, &right]);
    b.channel_shuffle(format!("{p}.shuffle"), &y, 2)
}

/// The family's models. Counts: torchvision's. Errors: 100 − the acc@1 and acc@5 of
/// torchvision's ImageNet weights; note that these are shufflenet_v2_x0_5's (60.552,
/// 81.746), not x1_0's (69.362, 88.316), kept as published in the README until checked.
pub(crate) const MODELS: &[ZooEntry] = &[SHUFFLENET_V2_X1_0];

const SHUFFLENET_V2_X1_0: ZooEntry = ZooEntry {
    name: "shufflenet-v2-x1.0",
    aliases: &["shufflenet_v2_x1_0"],
    family: "shufflenet",
    source: "torchvision shufflenet_v2_x1_0",
    citation: CITATION,
    top1_error: Some(39.45),
    top5_error: Some(18.25),
    params: 2_278_604,
    macs: 144_907_992,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: shufflenet_v2_x1_0,
};

/// torchvision `shufflenet_v2_x1_0`.
pub fn shufflenet_v2_x1_0(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(SHUFFLENET_V2_X1_0.name, input).info(SHUFFLENET_V2_X1_0.info());
    let c = CHANNELS_X1_0;
    let x = b.input();
    let x = conv_bn(
        &mut b,
        "conv1",
        0,
        &x,
        Conv2d::new(c[0], 3).stride(2).padding(1),
        true,
    );
    let mut x = b.max_pool("maxpool", &x, MaxPool2d::new(3, 2).padding(1));
    for (s, &repeats) in REPEATS.iter().enumerate() {
        for i in 0..repeats {
            let p = format!("stage{}.{i}", s + 2);
            x = unit(&mut b, &p, &x, c[s + 1], if i == 0 { 2 } else { 1 });
        }
    }
    let x = conv_bn(&mut b, "conv5", 0, &x, Conv2d::new(c[4], 1), true);
    // torchvision takes the mean over H and W: a global average pool.
    let x = b.adaptive_avg_pool("mean", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.linear("fc", &x, 1000);
    b.finish(&x)
}
