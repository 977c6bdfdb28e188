//! AlexNet, twice: torchvision's single-tower version (what PyTorch users run today) and
//! the Caffe BVLC model that the original cnn-benchmarks suite ran (grouped
//! convolutions, LRN, ceil-mode pooling).

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{Conv2d, LocalResponseNorm, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Krizhevsky, Sutskever, Hinton. ImageNet Classification with Deep \
                        Convolutional Neural Networks. NIPS 2012";

/// The family's models, in display order.
pub(crate) const MODELS: &[ZooEntry] = &[ALEXNET, ALEXNET_BVLC];

/// The original README lists one AlexNet row (BVLC AlexNet): 42.90 / 19.80.
const TOP1_ERROR: Option<f64> = Some(42.90);
const TOP5_ERROR: Option<f64> = Some(19.80);

/// Counts: torchvision's.
const ALEXNET: ZooEntry = ZooEntry {
    name: "alexnet",
    aliases: &[],
    family: "alexnet",
    source:
        "torchvision alexnet (the single-tower variant of Krizhevsky 2014, \"One weird trick\")",
    citation: CITATION,
    top1_error: TOP1_ERROR,
    top5_error: TOP5_ERROR,
    params: 61_100_840,
    macs: 714_188_480,
    default_input: IMAGENET,
    min_input: 63,
    legacy: false,
    build: alexnet,
};

/// torchvision `alexnet`: five convolutions (64/192/384/256/256), adaptive average
/// pooling to 6×6 and three fully connected layers with dropout.
pub fn alexnet(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(ALEXNET.name, input).info(ALEXNET.info());
    let x = b.input();

    // `features`: (out_channels, kernel, stride, padding, max-pool after?).
    let features: [(usize, usize, usize, usize, bool); 5] = [
        (64, 11, 4, 2, true),
        (192, 5, 1, 2, true),
        (384, 3, 1, 1, false),
        (256, 3, 1, 1, false),
        (256, 3, 1, 1, true),
    ];
    let mut i = 0;
    let mut x = x;
    for (out, kernel, stride, padding, pool) in features {
        let conv = Conv2d::new(out, kernel).stride(stride).padding(padding);
        x = b.conv(format!("features.{i}"), &x, conv);
        x = b.relu(format!("features.{}", i + 1), &x);
        i += 2;
        if pool {
            x = b.max_pool(format!("features.{i}"), &x, MaxPool2d::new(3, 2));
            i += 1;
        }
    }

    let x = b.adaptive_avg_pool("avgpool", &x, 6, 6);
    let x = b.flatten("flatten", &x);
    let x = b.dropout("classifier.0", &x, 0.5);
    let x = b.linear("classifier.1", &x, 4096);
    let x = b.relu("classifier.2", &x);
    let x = b.dropout("classifier.3", &x, 0.5);
    let x = b.linear("classifier.4", &x, 4096);
    let x = b.relu("classifier.5", &x);
    let x = b.linear("classifier.6", &x, 1000);
    b.finish(&x)
}

/// Caffe's LRN as used by BVLC AlexNet: 5 channels, alpha 1e-4, beta 0.75, k 1.
fn caffe_lrn() -> LocalResponseNorm {
    LocalResponseNorm {
        size: 5,
        alpha: 1e-4,
        beta: 0.75,
        k: 1.0,
    }
}

/// Caffe pooling rounds up: 3×3 windows, stride 2, ceil mode.
fn caffe_pool() -> MaxPool2d {
    MaxPool2d::new(3, 2).ceil_mode(true)
}

/// One Caffe convolution followed by its in-place ReLU (`convN`, `reluN`).
fn conv_relu(b: &mut GraphBuilder, n: usize, x: &T, conv: Conv2d) -> T {
    let x = b.conv(format!("conv{n}"), x, conv);
    b.relu(format!("relu{n}"), &x)
}

/// One fully connected layer with its ReLU and dropout (`fcN`, `reluN`, `dropN`).
fn fc_relu_dropout(b: &mut GraphBuilder, n: usize, x: &T, out: usize) -> T {
    let x = b.linear(format!("fc{n}"), x, out);
    let x = b.relu(format!("relu{n}"), &x);
    b.dropout(format!("drop{n}"), &x, 0.5)
}

/// Counts: Caffe's (the parameters exactly; Caffe's published MACs, ≈721 M, are rounded,
/// and this exact count is within 0.1% of them).
const ALEXNET_BVLC: ZooEntry = ZooEntry {
    name: "alexnet-bvlc",
    aliases: &["bvlc-alexnet", "caffe-alexnet"],
    family: "alexnet",
    source: "Caffe BVLC AlexNet (cnn-benchmarks)",
    citation: CITATION,
    top1_error: TOP1_ERROR,
    top5_error: TOP5_ERROR,
    params: 60_965_224,
    macs: 720_608_384,
    default_input: IMAGENET,
    min_input: 39,
    // The original suite ran the Caffe model, converted with loadcaffe.
    legacy: true,
    build: alexnet_bvlc,
};

/// Caffe BVLC AlexNet as the original cnn-benchmarks ran it (at 224×224, so conv1 gives
/// 54×54). Layer names follow the Caffe prototxt. fc6 takes whatever the flattened
/// pool5 output is, so other input sizes build too.
pub fn alexnet_bvlc(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(ALEXNET_BVLC.name, input).info(ALEXNET_BVLC.info());
    let x = b.input();

    let x = conv_relu(&mut b, 1, &x, Conv2d::new(96, 11).stride(4));
    let x = b.lrn("norm1", &x, caffe_lrn());
    let x = b.max_pool("pool1", &x, caffe_pool());

    let x = conv_relu(&mut b, 2, &x, Conv2d::new(256, 5).padding(2).groups(2));
    let x = b.lrn("norm2", &x, caffe_lrn());
    let x = b.max_pool("pool2", &x, caffe_pool());

    let x = conv_relu(&mut b, 3, &x, Conv2d::new(384, 3).padding(1));
    let x = conv_relu(&mut b, 4, &x, Conv2d::new(384, 3).padding(1).groups(2));
    let x = conv_relu(&mut b, 5, &x, Conv2d::new(256, 3).padding(1).groups(2));
    let x = b.max_pool("pool5", &x, caffe_pool());

    let x = b.flatten("flatten", &x);
    let x = fc_relu_dropout(&mut b, 6, &x, 4096);
    let x = fc_relu_dropout(&mut b, 7, &x, 4096);
    let x = b.linear("fc8", &x, 1000);
    b.finish(&x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_graph::Shape;

    #[test]
    fn torchvision_alexnet_shape() {
        // The counts are checked against the entry in the registry's tests.
        let g = alexnet([3, 224, 224]).unwrap();
        assert_eq!(g.depth(), 8);
        assert_eq!(g.output_shape(), &Shape::flat(1000));
    }

    #[test]
    fn bvlc_alexnet_shapes() {
        // Caffe's published MACs (≈721 M) are rounded: the exact count is within 0.1%.
        let macs = ALEXNET_BVLC.macs as f64;
        assert!((macs - 721e6).abs() / 721e6 < 1e-3, "MACs {macs}");
        let g = alexnet_bvlc([3, 224, 224]).unwrap();
        assert_eq!(g.depth(), 8);
        let conv1 = g.nodes().iter().find(|n| n.name == "conv1").unwrap();
        assert_eq!(conv1.shape, Shape::chw(96, 54, 54));
        let pool5 = g.nodes().iter().find(|n| n.name == "pool5").unwrap();
        assert_eq!(pool5.shape, Shape::chw(256, 6, 6));
    }

    #[test]
    fn bvlc_alexnet_follows_the_input_size() {
        // The classic Caffe crop: 227×227 gives conv1 55×55 and the same fc6.
        let g = alexnet_bvlc([3, 227, 227]).unwrap();
        assert_eq!(g.params(), ALEXNET_BVLC.params);
        // A larger image only changes fc6's inputs.
        let g = alexnet_bvlc([3, 256, 256]).unwrap();
        assert!(g.params() > ALEXNET_BVLC.params);
    }

    #[test]
    fn too_small_images_name_the_layer() {
        let err = alexnet_bvlc([3, 32, 32]).unwrap_err();
        assert!(
            matches!(&err, GraphError::Node { node, .. } if node == "pool5"),
            "{err}"
        );
        assert!(err.to_string().contains("too small"), "{err}");
        let err = alexnet([3, 32, 32]).unwrap_err();
        assert!(
            matches!(&err, GraphError::Node { node, .. } if node == "features.12"),
            "{err}"
        );
    }
}
