//! GoogLeNet (Inception-v1) as torchvision builds it: every convolution is a
//! `BasicConv2d` (conv without bias, batch norm with eps 0.001, ReLU), max pools round
//! up, and there are no auxiliary heads and no input transform.

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{BatchNorm2d, Conv2d, MaxPool2d, Op};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Szegedy et al. Going Deeper with Convolutions. CVPR 2015";

/// One inception module's widths, in the paper's column order.
struct Inception {
    ch1x1: usize,
    ch3x3_reduce: usize,
    ch3x3: usize,
    ch5x5_reduce: usize,
    ch5x5: usize,
    pool_proj: usize,
}

/// The paper's Table 1 (inception 3a…5b): #1×1, #3×3 reduce, #3×3, #5×5 reduce, #5×5,
/// pool proj.
const fn inception(widths: [usize; 6]) -> Inception {
    let [ch1x1, ch3x3_reduce, ch3x3, ch5x5_reduce, ch5x5, pool_proj] = widths;
    Inception {
        ch1x1,
        ch3x3_reduce,
        ch3x3,
        ch5x5_reduce,
        ch5x5,
        pool_proj,
    }
}

const INCEPTION_3: [(&str, Inception); 2] = [
    ("inception3a", inception([64, 96, 128, 16, 32, 32])),
    ("inception3b", inception([128, 128, 192, 32, 96, 64])),
];
const INCEPTION_4: [(&str, Inception); 5] = [
    ("inception4a", inception([192, 96, 208, 16, 48, 64])),
    ("inception4b", inception([160, 112, 224, 24, 64, 64])),
    ("inception4c", inception([128, 128, 256, 24, 64, 64])),
    ("inception4d", inception([112, 144, 288, 32, 64, 64])),
    ("inception4e", inception([256, 160, 320, 32, 128, 128])),
];
const INCEPTION_5: [(&str, Inception); 2] = [
    ("inception5a", inception([256, 160, 320, 32, 128, 128])),
    ("inception5b", inception([384, 192, 384, 48, 128, 128])),
];

/// torchvision's `BasicConv2d`: `{name}.conv`, `{name}.bn` (eps 0.001), `{name}.relu`.
fn basic_conv(b: &mut GraphBuilder, name: &str, x: &T, conv: Conv2d) -> T {
    let x = b.conv(format!("{name}.conv"), x, conv.bias(false));
    let bn = BatchNorm2d {
        eps: 1e-3,
        ..BatchNorm2d::new(x.channels())
    };
    let x = b.add(format!("{name}.bn"), Op::BatchNorm2d(bn), &[&x]);
    b.relu(format!("{name}.relu"), &x)
}

/// Max pooling 3×3, stride 2, rounding up (between the stages).
fn stage_pool() -> MaxPool2d {
    MaxPool2d::new(3, 2).ceil_mode(true)
}

/// An inception module: four branches concatenated along channels. As in torchvision,
/// the "5×5" branch uses a 3×3 kernel (pytorch/vision#906, kept for weight compatibility).
fn inception_block(b: &mut GraphBuilder, name: &str, x: &T, m: &Inception) -> T {
    let branch1 = basic_conv(b, &format!("{name}.branch1"), x, Conv2d::new(m.ch1x1, 1));

    let y = basic_conv(
        b,
        &format!("{name}.branch2.0"),
        x,
        Conv2d::new(m.ch3x3_reduce, 1),
    );
    let branch2 = basic_conv(
        b,
        &format!("{name}.branch2.1"),
        &y,
        Conv2d::new(m.ch3x3, 3).padding(1),
    );

    let y = basic_conv(
        b,
        &format!("{name}.branch3.0"),
        x,
        Conv2d::new(m.ch5x5_reduce, 1),
    );
    let branch3 = basic_conv(
        b,
        &format!("{name}.branch3.1"),
        &y,
        Conv2d::new(m.ch5x5, 3).padding(1),
    );

    let pool = MaxPool2d::new(3, 1).padding(1).ceil_mode(true);
    let y = b.max_pool(format!("{name}.branch4.0"), x, pool);
    let branch4 = basic_conv(
        b,
        &format!("{name}.branch4.1"),
        &y,
        Conv2d::new(m.pool_proj, 1),
    );

    b.concat(
        format!("{name}.concat"),
        &[&branch1, &branch2, &branch3, &branch4],
    )
}

fn inception_stage(b: &mut GraphBuilder, x: T, stage: &[(&str, Inception)]) -> T {
    stage
        .iter()
        .fold(x, |x, (name, m)| inception_block(b, name, &x, m))
}

/// The family's models (Inception-v3 has its own file).
pub(crate) const MODELS: &[ZooEntry] = &[INCEPTION_V1];

/// Counts: torchvision's. Errors: the cnn-benchmarks README gives only the top-5.
const INCEPTION_V1: ZooEntry = ZooEntry {
    name: "inception-v1",
    aliases: &["googlenet"],
    family: "inception",
    source: "torchvision googlenet (no auxiliary heads, no input transform)",
    citation: CITATION,
    top1_error: None,
    top5_error: Some(10.07),
    params: 6_624_904,
    macs: 1_498_376_192,
    default_input: IMAGENET,
    min_input: 15,
    legacy: true,
    build: inception_v1,
};

/// torchvision `googlenet` (Inception-v1) without auxiliary classifiers.
pub fn inception_v1(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(INCEPTION_V1.name, input).info(INCEPTION_V1.info());
    let x = b.input();

    let x = basic_conv(&mut b, "conv1", &x, Conv2d::new(64, 7).stride(2).padding(3));
    let x = b.max_pool("maxpool1", &x, stage_pool());
    let x = basic_conv(&mut b, "conv2", &x, Conv2d::new(64, 1));
    let x = basic_conv(&mut b, "conv3", &x, Conv2d::new(192, 3).padding(1));
    let x = b.max_pool("maxpool2", &x, stage_pool());

    let x = inception_stage(&mut b, x, &INCEPTION_3);
    let x = b.max_pool("maxpool3", &x, stage_pool());
    let x = inception_stage(&mut b, x, &INCEPTION_4);
    let x = b.max_pool("maxpool4", &x, MaxPool2d::new(2, 2).ceil_mode(true));
    let x = inception_stage(&mut b, x, &INCEPTION_5);

    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.dropout("dropout", &x, 0.2);
    let x = b.linear("fc", &x, 1000);
    b.finish(&x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::Shape;

    #[test]
    fn googlenet_is_22_layers_deep() {
        let g = inception_v1([3, 224, 224]).unwrap();
        assert_eq!(g.depth(), 22);
        assert_eq!(g.output_shape(), &Shape::flat(1000));
    }

    #[test]
    fn shapes_follow_torchvision_comments() {
        let g = inception_v1([3, 224, 224]).unwrap();
        let shape = |name: &str| {
            g.nodes()
                .iter()
                .find(|n| n.name == name)
                .unwrap()
                .shape
                .clone()
        };
        assert_eq!(shape("maxpool1"), Shape::chw(64, 56, 56));
        assert_eq!(shape("maxpool2"), Shape::chw(192, 28, 28));
        assert_eq!(shape("inception3b.concat"), Shape::chw(480, 28, 28));
        assert_eq!(shape("inception4e.concat"), Shape::chw(832, 14, 14));
        assert_eq!(shape("maxpool4"), Shape::chw(832, 7, 7));
        assert_eq!(shape("inception5b.concat"), Shape::chw(1024, 7, 7));
    }

    #[test]
    fn batch_norm_uses_tensorflow_eps() {
        let g = inception_v1([3, 224, 224]).unwrap();
        let bn = g.nodes().iter().find(|n| n.name == "conv1.bn").unwrap();
        assert!(matches!(&bn.op, Op::BatchNorm2d(bn) if bn.eps == 1e-3));
    }

    #[test]
    fn builds_at_small_sizes() {
        let g = inception_v1([3, 32, 32]).unwrap();
        assert_eq!(g.params(), INCEPTION_V1.params);
        // Five stride-2 stages leave nothing of an 8×8 image: the error names the pool.
        let err = inception_v1([3, 8, 8]).unwrap_err();
        assert!(
            matches!(&err, GraphError::Node { node, .. } if node.starts_with("maxpool")),
            "{err}"
        );
    }
}
