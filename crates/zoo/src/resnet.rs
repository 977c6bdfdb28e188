//! ResNets as torchvision builds them: a 7×7 stem, four stages of residual blocks given
//! by a `[3, 4, 6, 3]`-style table, global average pooling and one linear layer.
//! Bottleneck blocks put the stride on the 3×3 convolution (ResNet v1.5).

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CVPR_2016: &str = "He, Zhang, Ren, Sun. Deep Residual Learning for Image Recognition. \
                         CVPR 2016";
const ECCV_2016: &str = "He, Zhang, Ren, Sun. Identity Mappings in Deep Residual Networks. \
                         ECCV 2016";

const RESNEXT: &str = "Xie, Girshick, Dollár, Tu, He. Aggregated Residual Transformations for \
                       Deep Neural Networks. CVPR 2017";
const WIDE_RESNET: &str = "Zagoruyko, Komodakis. Wide Residual Networks. BMVC 2016";

/// The two residual block types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// Two 3×3 convolutions (ResNet-18/34).
    Basic,
    /// 1×1 reduce, 3×3, 1×1 expand by 4 (ResNet-50 and deeper).
    Bottleneck,
}

/// The inner 3×3 convolution of a bottleneck: `groups` groups of `width_per_group`
/// channels for a stage of width 64 (torchvision's `groups` and `width_per_group`).
/// ResNet is 1×64, ResNeXt-50 32×4d is 32×4, Wide ResNet-50-2 is 1×128.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Cardinality {
    groups: usize,
    width_per_group: usize,
}

const PLAIN: Cardinality = Cardinality {
    groups: 1,
    width_per_group: 64,
};

impl Cardinality {
    /// Channels of the grouped 3×3 convolution in a stage of `planes` width.
    fn width(self, planes: usize) -> usize {
        planes * self.width_per_group / 64 * self.groups
    }
}

impl Block {
    /// Output channels relative to the stage width.
    fn expansion(self) -> usize {
        match self {
            Block::Basic => 1,
            Block::Bottleneck => 4,
        }
    }
}

/// Stage widths and strides: conv2_x … conv5_x of the paper.
const STAGES: [(usize, usize); 4] = [(64, 1), (128, 2), (256, 2), (512, 2)];

/// A convolution without bias followed by batch norm (the unit every ResNet layer uses).
fn conv_bn(b: &mut GraphBuilder, prefix: &str, n: &str, x: &T, conv: Conv2d) -> T {
    let x = b.conv(format!("{prefix}.conv{n}"), x, conv.bias(false));
    b.batch_norm(format!("{prefix}.bn{n}"), &x)
}

/// The shortcut: identity, or a strided 1×1 projection with batch norm when the shape
/// changes (`downsample.0`, `downsample.1`).
fn shortcut(b: &mut GraphBuilder, prefix: &str, x: &T, out: usize, stride: usize) -> T {
    if stride == 1 && x.channels() == out {
        return x.clone();
    }
    let conv = Conv2d::new(out, 1).stride(stride).bias(false);
    let y = b.conv(format!("{prefix}.downsample.0"), x, conv);
    b.batch_norm(format!("{prefix}.downsample.1"), &y)
}

/// Adds the shortcut to the residual branch and applies the final ReLU.
fn merge(b: &mut GraphBuilder, prefix: &str, residual: &T, identity: &T) -> T {
    let y = b.sum(format!("{prefix}.add"), &[residual, identity]);
    b.relu(format!("{prefix}.relu"), &y)
}

/// torchvision `BasicBlock`: 3×3 (stride) → BN → ReLU → 3×3 → BN, plus the shortcut.
fn basic_block(b: &mut GraphBuilder, prefix: &str, x: &T, width: usize, stride: usize) -> T {
    let y = conv_bn(
        b,
        prefix,
        "1",
        x,
        Conv2d::new(width, 3).stride(stride).padding(1),
    );
    let y = b.relu(format!("{prefix}.relu1"), &y);
    let y = conv_bn(b, prefix, "2", &y, Conv2d::new(width, 3).padding(1));
    let identity = shortcut(b, prefix, x, width, stride);
    merge(b, prefix, &y, &identity)
}

/// torchvision `Bottleneck`: 1×1 → 3×3 (stride, grouped) → 1×1 to 4× the stage width,
/// each with BN, plus the shortcut.
fn bottleneck(
    b: &mut GraphBuilder,
    prefix: &str,
    x: &T,
    planes: usize,
    stride: usize,
    cardinality: Cardinality,
) -> T {
    let out = planes * Block::Bottleneck.expansion();
    let width = cardinality.width(planes);
    let y = conv_bn(b, prefix, "1", x, Conv2d::new(width, 1));
    let y = b.relu(format!("{prefix}.relu1"), &y);
    let y = conv_bn(
        b,
        prefix,
        "2",
        &y,
        Conv2d::new(width, 3)
            .stride(stride)
            .padding(1)
            .groups(cardinality.groups),
    );
    let y = b.relu(format!("{prefix}.relu2"), &y);
    let y = conv_bn(b, prefix, "3", &y, Conv2d::new(out, 1));
    let identity = shortcut(b, prefix, x, out, stride);
    merge(b, prefix, &y, &identity)
}

/// A ResNet from its block type and the number of blocks in each of the four stages.
fn resnet(
    model: &ZooEntry,
    block: Block,
    layers: [usize; 4],
    cardinality: Cardinality,
    input: [usize; 3],
) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(model.name, input).info(model.info());
    let x = b.input();

    let x = b.conv(
        "conv1",
        &x,
        Conv2d::new(64, 7).stride(2).padding(3).bias(false),
    );
    let x = b.batch_norm("bn1", &x);
    let x = b.relu("relu", &x);
    let mut x = b.max_pool("maxpool", &x, MaxPool2d::new(3, 2).padding(1));

    for (stage, (&(width, stride), &blocks)) in STAGES.iter().zip(&layers).enumerate() {
        for i in 0..blocks {
            let prefix = format!("layer{}.{i}", stage + 1);
            let stride = if i == 0 { stride } else { 1 };
            x = match block {
                Block::Basic => basic_block(&mut b, &prefix, &x, width, stride),
                Block::Bottleneck => bottleneck(&mut b, &prefix, &x, width, stride, cardinality),
            };
        }
    }

    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.linear("fc", &x, 1000);
    b.finish(&x)
}

/// The family's models (with ResNeXt and Wide ResNet, which are ResNets with other
/// bottleneck widths), in display order.
pub(crate) const MODELS: &[ZooEntry] = &[
    RESNET18,
    RESNET34,
    RESNET50,
    RESNET101,
    RESNET152,
    RESNET200,
    RESNEXT50_32X4D,
    WIDE_RESNET50_2,
];

// Counts: torchvision's (resnet200, which torchvision does not have, built the same way).
// Errors: the cnn-benchmarks README's for the fb.resnet.torch models; for ResNeXt and
// Wide ResNet, torchvision's.

const RESNET18: ZooEntry = ZooEntry {
    name: "resnet18",
    aliases: &[],
    family: "resnet",
    source: "torchvision resnet18",
    citation: CVPR_2016,
    top1_error: Some(30.43),
    top5_error: Some(10.76),
    params: 11_689_512,
    macs: 1_814_073_344,
    default_input: IMAGENET,
    min_input: 1,
    legacy: true,
    build: resnet18,
};

/// torchvision `resnet18`: basic blocks `[2, 2, 2, 2]`.
pub fn resnet18(input: [usize; 3]) -> Result<Graph, GraphError> {
    resnet(&RESNET18, Block::Basic, [2, 2, 2, 2], PLAIN, input)
}

const RESNET34: ZooEntry = ZooEntry {
    name: "resnet34",
    aliases: &[],
    family: "resnet",
    source: "torchvision resnet34",
    citation: CVPR_2016,
    top1_error: Some(26.73),
    top5_error: Some(8.74),
    params: 21_797_672,
    macs: 3_663_761_408,
    default_input: IMAGENET,
    min_input: 1,
    legacy: true,
    build: resnet34,
};

/// torchvision `resnet34`: basic blocks `[3, 4, 6, 3]`.
pub fn resnet34(input: [usize; 3]) -> Result<Graph, GraphError> {
    resnet(&RESNET34, Block::Basic, [3, 4, 6, 3], PLAIN, input)
}

const RESNET50: ZooEntry = ZooEntry {
    name: "resnet50",
    aliases: &[],
    family: "resnet",
    source: "torchvision resnet50",
    citation: CVPR_2016,
    top1_error: Some(24.01),
    top5_error: Some(7.02),
    params: 25_557_032,
    macs: 4_089_184_256,
    default_input: IMAGENET,
    min_input: 1,
    legacy: true,
    build: resnet50,
};

/// torchvision `resnet50`: bottleneck blocks `[3, 4, 6, 3]`.
pub fn resnet50(input: [usize; 3]) -> Result<Graph, GraphError> {
    resnet(&RESNET50, Block::Bottleneck, [3, 4, 6, 3], PLAIN, input)
}

const RESNET101: ZooEntry = ZooEntry {
    name: "resnet101",
    aliases: &[],
    family: "resnet",
    source: "torchvision resnet101",
    citation: CVPR_2016,
    top1_error: Some(22.44),
    top5_error: Some(6.21),
    params: 44_549_160,
    macs: 7_801_405_440,
    default_input: IMAGENET,
    min_input: 1,
    legacy: true,
    build: resnet101,
};

/// torchvision `resnet101`: bottleneck blocks `[3, 4, 23, 3]`.
pub fn resnet101(input: [usize; 3]) -> Result<Graph, GraphError> {
    resnet(&RESNET101, Block::Bottleneck, [3, 4, 23, 3], PLAIN, input)
}

const RESNET152: ZooEntry = ZooEntry {
    name: "resnet152",
    aliases: &[],
    family: "resnet",
    source: "torchvision resnet152",
    citation: CVPR_2016,
    top1_error: Some(22.16),
    top5_error: Some(6.16),
    params: 60_192_808,
    macs: 11_513_626_624,
    default_input: IMAGENET,
    min_input: 1,
    legacy: true,
    build: resnet152,
};

/// torchvision `resnet152`: bottleneck blocks `[3, 8, 36, 3]`.
pub fn resnet152(input: [usize; 3]) -> Result<Graph, GraphError> {
    resnet(&RESNET152, Block::Bottleneck, [3, 8, 36, 3], PLAIN, input)
}

const RESNET200: ZooEntry = ZooEntry {
    name: "resnet200",
    aliases: &[],
    family: "resnet",
    source: "torchvision-style resnet200 (bottleneck [3, 24, 36, 3]; the paper's model is \
             pre-activation)",
    citation: ECCV_2016,
    top1_error: Some(21.66),
    top5_error: Some(5.79),
    params: 64_673_832,
    macs: 15_007_481_856,
    default_input: IMAGENET,
    min_input: 1,
    legacy: true,
    build: resnet200,
};

/// ResNet-200 in torchvision's layout: bottleneck blocks `[3, 24, 36, 3]`.
pub fn resnet200(input: [usize; 3]) -> Result<Graph, GraphError> {
    resnet(&RESNET200, Block::Bottleneck, [3, 24, 36, 3], PLAIN, input)
}

const RESNEXT50_32X4D: ZooEntry = ZooEntry {
    name: "resnext50-32x4d",
    aliases: &["resnext50_32x4d"],
    family: "resnext",
    source: "torchvision resnext50_32x4d",
    citation: RESNEXT,
    top1_error: Some(22.38),
    top5_error: Some(6.30),
    params: 25_028_904,
    macs: 4_230_479_872,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: resnext50_32x4d,
};

/// torchvision `resnext50_32x4d`: bottleneck blocks `[3, 4, 6, 3]` whose 3×3
/// convolutions have 32 groups of 4 channels per 64 of stage width.
pub fn resnext50_32x4d(input: [usize; 3]) -> Result<Graph, GraphError> {
    let cardinality = Cardinality {
        groups: 32,
        width_per_group: 4,
    };
    resnet(
        &RESNEXT50_32X4D,
        Block::Bottleneck,
        [3, 4, 6, 3],
        cardinality,
        input,
    )
}

const WIDE_RESNET50_2: ZooEntry = ZooEntry {
    name: "wide-resnet50-2",
    aliases: &["wide_resnet50_2"],
    family: "wide-resnet",
    source: "torchvision wide_resnet50_2",
    citation: WIDE_RESNET,
    top1_error: Some(21.53),
    top5_error: Some(5.91),
    params: 68_883_240,
    macs: 11_398_021_120,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: wide_resnet50_2,
};

/// torchvision `wide_resnet50_2`: ResNet-50 with bottlenecks twice as wide inside.
pub fn wide_resnet50_2(input: [usize; 3]) -> Result<Graph, GraphError> {
    let cardinality = Cardinality {
        groups: 1,
        width_per_group: 128,
    };
    resnet(
        &WIDE_RESNET50_2,
        Block::Bottleneck,
        [3, 4, 6, 3],
        cardinality,
        input,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::Shape;

    /// The counts are checked against the entries in the registry's tests; the depth is
    /// the number in the name.
    #[test]
    fn depths_match_the_names() {
        for (model, depth) in [
            (RESNET18, 18),
            (RESNET34, 34),
            (RESNET50, 50),
            (RESNET101, 101),
            (RESNET152, 152),
            (RESNET200, 200),
            (RESNEXT50_32X4D, 50),
            (WIDE_RESNET50_2, 50),
        ] {
            let g = (model.build)(model.default_input).unwrap();
            assert_eq!(g.depth(), depth, "{}", model.name);
            assert_eq!(g.output_shape(), &Shape::flat(1000));
        }
    }

    #[test]
    fn node_names_follow_torchvision() {
        let g = resnet50([3, 224, 224]).unwrap();
        let names: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
        for name in [
            "conv1",
            "bn1",
            "layer1.0.conv1",
            "layer1.0.bn3",
            "layer1.0.downsample.0",
            "layer2.0.downsample.1",
            "layer4.2.conv3",
            "fc",
        ] {
            assert!(names.contains(&name), "{name}");
        }
        // Identity shortcuts need no projection.
        assert!(!names.contains(&"layer1.1.downsample.0"));
        let g = resnet18([3, 224, 224]).unwrap();
        assert!(!g.nodes().iter().any(|n| n.name == "layer1.0.downsample.0"));
        assert!(g.nodes().iter().any(|n| n.name == "layer2.0.downsample.0"));
    }

    #[test]
    fn stride_is_on_the_3x3() {
        let g = resnet50([3, 224, 224]).unwrap();
        let shape = |name: &str| {
            g.nodes()
                .iter()
                .find(|n| n.name == name)
                .unwrap()
                .shape
                .clone()
        };
        assert_eq!(shape("layer2.0.conv1"), Shape::chw(128, 56, 56));
        assert_eq!(shape("layer2.0.conv2"), Shape::chw(128, 28, 28));
        assert_eq!(shape("layer4.2.relu"), Shape::chw(2048, 7, 7));
    }

    #[test]
    fn small_images_build() {
        // CIFAR-sized images run through every stage (layer4 is 1×1).
        let g = resnet18([3, 32, 32]).unwrap();
        assert_eq!(g.params(), RESNET18.params);
        // Padding keeps every stage at least 1×1, so ResNets accept even tiny images.
        assert!(resnet50([3, 8, 8]).is_ok());
        assert!(resnet50([3, 1, 1]).is_ok());
    }
}
