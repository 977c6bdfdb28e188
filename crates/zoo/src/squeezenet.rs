//! SqueezeNet 1.0 as torchvision builds it: fire modules (a 1×1 squeeze feeding
//! parallel 1×1 and 3×3 expands) between ceil-mode max pools, and a convolutional
//! classifier.

use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::{Conv2d, MaxPool2d};
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Iandola, Han, Moskewicz, Ashraf, Dally, Keutzer. SqueezeNet: \
                        AlexNet-level accuracy with 50x fewer parameters and <0.5MB model \
                        size. arXiv:1602.07360, 2016";

/// One layer of `features` after the stem: a fire module (squeeze, expand 1×1, expand
/// 3×3 channels) or a max pool.
enum Layer {
    Fire(usize, usize, usize),
    Pool,
}
use Layer::{Fire, Pool};

/// SqueezeNet 1.0's `features` from index 3 on (0–2 are the stem).
const FEATURES_1_0: [Layer; 10] = [
    Fire(16, 64, 64),
    Fire(16, 64, 64),
    Fire(32, 128, 128),
    Pool,
    Fire(32, 128, 128),
    Fire(48, 192, 192),
    Fire(48, 192, 192),
    Fire(64, 256, 256),
    Pool,
    Fire(64, 256, 256),
];

fn pool(b: &mut GraphBuilder, name: String, x: &T) -> T {
    b.max_pool(name, x, MaxPool2d::new(3, 2).ceil_mode(true))
}

/// torchvision `Fire`: squeeze 1×1 + ReLU, then 1×1 and 3×3 expands (+ ReLU) concatenated.
fn fire(b: &mut GraphBuilder, p: &str, x: &T, squeeze: usize, e1: usize, e3: usize) -> T {
    let s = b.conv(format!("{p}.squeeze"), x, Conv2d::new(squeeze, 1));
    let s = b.relu(format!("{p}.squeeze_activation"), &s);
    let a = b.conv(format!("{p}.expand1x1"), &s, Conv2d::new(e1, 1));
    let a = b.relu(format!("{p}.expand1x1_activation"), &a);
    let c = b.conv(format!("{p}.expand3x3"), &s, Conv2d::new(e3, 3).padding(1));
    let c = b.relu(format!("{p}.expand3x3_activation"), &c);
    b.concat(format!("{p}.cat"), &[&a, &c])
}

/// The family's models. Counts and errors: torchvision's (the errors are 100 − the
/// ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[SQUEEZENET1_0];

const SQUEEZENET1_0: ZooEntry = ZooEntry {
    name: "squeezenet1.0",
    aliases: &["squeezenet1_0"],
    family: "squeezenet",
    source: "torchvision squeezenet1_0",
    citation: CITATION,
    top1_error: Some(41.91),
    top5_error: Some(19.58),
    params: 1_248_424,
    macs: 818_924_576,
    default_input: IMAGENET,
    min_input: 21,
    legacy: false,
    build: squeezenet1_0,
};

/// torchvision `squeezenet1_0`.
pub fn squeezenet1_0(input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(SQUEEZENET1_0.name, input).info(SQUEEZENET1_0.info());
    let x = b.input();
    let x = b.conv("features.0", &x, Conv2d::new(96, 7).stride(2));
    let x = b.relu("features.1", &x);
    let mut x = pool(&mut b, "features.2".into(), &x);
    for (i, layer) in FEATURES_1_0.iter().enumerate() {
        let name = format!("features.{}", i + 3);
        x = match *layer {
            Fire(s, e1, e3) => fire(&mut b, &name, &x, s, e1, e3),
            Pool => pool(&mut b, name, &x),
        };
    }
    let x = b.dropout("classifier.0", &x, 0.5);
    let x = b.conv("classifier.1", &x, Conv2d::new(1000, 1));
    let x = b.relu("classifier.2", &x);
    let x = b.adaptive_avg_pool("classifier.3", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    b.finish(&x)
}
