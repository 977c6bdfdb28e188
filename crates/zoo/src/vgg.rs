//! VGG-16 and VGG-19 (configurations D and E of the paper) as torchvision builds them,
//! without batch norm: the `features` list is read straight from the configuration.

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError};

const CITATION: &str = "Simonyan, Zisserman. Very Deep Convolutional Networks for Large-Scale \
                        Image Recognition. ICLR 2015";

/// One entry of a VGG configuration: a 3×3 convolution (+ReLU) of this width, or a 2×2
/// max pool.
#[derive(Clone, Copy, Debug)]
enum Layer {
    Conv(usize),
    Pool,
}
use Layer::{Conv as C, Pool as M};

/// Configuration D (16 weight layers).
#[rustfmt::skip]
const CONFIG_D: &[Layer] = &[
    C(64), C(64), M,
    C(128), C(128), M,
    C(256), C(256), C(256), M,
    C(512), C(512), C(512), M,
    C(512), C(512), C(512), M,
];

/// Configuration E (19 weight layers).
#[rustfmt::skip]
const CONFIG_E: &[Layer] = &[
    C(64), C(64), M,
    C(128), C(128), M,
    C(256), C(256), C(256), C(256), M,
    C(512), C(512), C(512), C(512), M,
    C(512), C(512), C(512), C(512), M,
];

/// A VGG network from its configuration: `features` (torchvision's module indices),
/// adaptive average pooling to 7×7 and the three-layer classifier with dropout.
fn vgg(model: &ZooEntry, config: &[Layer], input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(model.name, input).info(model.info());
    let mut x = b.input();
    let mut i = 0;
    for layer in config {
        match *layer {
            Layer::Conv(width) => {
                x = b.conv(
                    format!("features.{i}"),
                    &x,
                    Conv2d::new(width, 3).padding(1),
                );
                x = b.relu(format!("features.{}", i + 1), &x);
                i += 2;
            }
            Layer::Pool => {
                x = b.max_pool(format!("features.{i}"), &x, MaxPool2d::new(2, 2));
                i += 1;
            }
        }
    }
    let x = b.adaptive_avg_pool("avgpool", &x, 7, 7);
    let x = b.flatten("flatten", &x);
    let x = b.linear("classifier.0", &x, 4096);
    let x = b.relu("classifier.1", &x);
    let x = b.dropout("classifier.2", &x, 0.5);
    let x = b.linear("classifier.3", &x, 4096);
    let x = b.relu("classifier.4", &x);
    let x = b.dropout("classifier.5", &x, 0.5);
    let x = b.linear("classifier.6", &x, 1000);
    b.finish(&x)
}

/// The family's models, in display order.
pub(crate) const MODELS: &[ZooEntry] = &[VGG16, VGG19];

/// Counts: torchvision's. Errors: cnn-benchmarks lists dense-evaluation errors for the
/// VGG models.
const VGG16: ZooEntry = ZooEntry {
    name: "vgg16",
    aliases: &[],
    family: "vgg",
    source: "torchvision vgg16",
    citation: CITATION,
    top1_error: Some(27.00),
    top5_error: Some(8.80),
    params: 138_357_544,
    macs: 15_470_264_320,
    default_input: IMAGENET,
    min_input: 32,
    legacy: true,
    build: vgg16,
};

/// torchvision `vgg16` (configuration D, no batch norm).
pub fn vgg16(input: [usize; 3]) -> Result<Graph, GraphError> {
    vgg(&VGG16, CONFIG_D, input)
}

const VGG19: ZooEntry = ZooEntry {
    name: "vgg19",
    aliases: &[],
    family: "vgg",
    source: "torchvision vgg19",
    citation: CITATION,
    top1_error: Some(27.30),
    top5_error: Some(9.00),
    params: 143_667_240,
    macs: 19_632_062_464,
    default_input: IMAGENET,
    min_input: 32,
    legacy: true,
    build: vgg19,
};

/// torchvision `vgg19` (configuration E, no batch norm).
pub fn vgg19(input: [usize; 3]) -> Result<Graph, GraphError> {
    vgg(&VGG19, CONFIG_E, input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_are_16_and_19() {
        assert_eq!(vgg16([3, 224, 224]).unwrap().depth(), 16);
        assert_eq!(vgg19([3, 224, 224]).unwrap().depth(), 19);
    }

    #[test]
    fn node_names_follow_torchvision_indices() {
        let g = vgg16([3, 224, 224]).unwrap();
        let names: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names[0], "features.0");
        assert!(names.contains(&"features.30")); // the last max pool
        assert!(!names.contains(&"features.31"));
        assert_eq!(names.last(), Some(&"classifier.6"));
    }

    #[test]
    fn small_images_build_or_name_the_failing_pool() {
        // Five 2×2 pools: 32 → 1, and the adaptive pool brings it back to 7×7.
        assert_eq!(vgg16([3, 32, 32]).unwrap().params(), VGG16.params);
        let err = vgg16([3, 16, 16]).unwrap_err();
        assert!(
            matches!(&err, GraphError::Node { node, .. } if node == "features.30"),
            "{err}"
        );
    }
}
