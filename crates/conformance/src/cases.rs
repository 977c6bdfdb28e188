//! The graphs the suite runs: one small graph per op of the IR (with the options that
//! change its arithmetic), and a few whole zoo models at small sizes.

use cnnbench_graph::ops::{AvgPool2d, Conv2d, LocalResponseNorm, MaxPool2d};
use cnnbench_graph::{Activation, Graph, GraphBuilder, Pad2d, T};

/// A named test graph; `ops` are the IR tags it exercises (a failure names them).
pub struct Case {
    pub graph: Graph,
    pub ops: Vec<&'static str>,
}

fn case(
    name: &str,
    ops: &[&'static str],
    input: [usize; 3],
    f: impl FnOnce(&mut GraphBuilder, &T) -> T,
) -> Case {
    let mut b = GraphBuilder::new(name, input);
    let x = b.input();
    let y = f(&mut b, &x);
    let graph = b
        .finish(&y)
        .unwrap_or_else(|e| panic!("conformance case {name} is not a valid graph: {e}"));
    Case {
        graph,
        ops: ops.to_vec(),
    }
}

/// A convolution in front, so every op's backward is reached by a weight gradient.
fn stem(b: &mut GraphBuilder, x: &T, channels: usize) -> T {
    b.conv("stem", x, Conv2d::new(channels, 3).padding(1))
}

/// One case per op family; every tag in [`cnnbench_graph::ops::OP_TAGS`] appears in
/// some case's `ops` (a test checks it), so a new op needs a case here.
pub fn op_cases() -> Vec<Case> {
    let asymmetric = Pad2d {
        top: 1,
        left: 0,
        bottom: 2,
        right: 1,
    };
    // Pooling padding may be at most half the kernel.
    let uneven = Pad2d {
        top: 1,
        left: 0,
        bottom: 0,
        right: 1,
    };
    let mut cases = vec![
        case("conv2d", &["conv2d"], [4, 7, 6], |b, x| {
            let y = b.conv(
                "grouped",
                x,
                Conv2d::new(6, [3, 2])
                    .stride([2, 1])
                    .groups(2)
                    .dilation([1, 2])
                    .padding(asymmetric),
            );
            b.conv("nobias", &y, Conv2d::new(4, 3).padding(1).bias(false))
        }),
        case("batch_norm2d", &["batch_norm2d"], [3, 5, 5], |b, x| {
            let y = stem(b, x, 4);
            let y = b.batch_norm("bn", &y);
            b.batch_norm_with("bn2", &y, 1e-3, 0.01)
        }),
        case(
            "linear",
            &["flatten", "linear", "dropout"],
            [3, 3, 3],
            |b, x| {
                let y = stem(b, x, 2);
                let f = b.flatten("flat", &y);
                let f = b.dropout("drop", &f, 0.5);
                let f = b.linear("fc", &f, 5);
                b.linear("fc2", &f, 3)
            },
        ),
        case(
            "local_response_norm",
            &["local_response_norm"],
            [6, 4, 4],
            |b, x| {
                let y = stem(b, x, 6);
                b.lrn(
                    "lrn",
                    &y,
                    LocalResponseNorm {
                        size: 5,
                        alpha: 1e-1,
                        beta: 0.75,
                        k: 2.0,
                    },
                )
            },
        ),
        case(
            "max_pool2d",
            &["max_pool2d", "concat"],
            [3, 9, 9],
            |b, x| {
                let c = stem(b, x, 4);
                let m = b.max_pool("ceil", &c, MaxPool2d::new(3, 2).ceil_mode(true));
                let p = b.max_pool("pad", &c, MaxPool2d::new(3, 2).padding(1));
                let p = b.max_pool("pad-again", &p, MaxPool2d::new(3, 1));
                let u = b.max_pool("uneven", &c, MaxPool2d::new(3, 2).padding(uneven));
                let u = b.max_pool("smaller", &u, MaxPool2d::new(2, 1));
                let m = b.max_pool("again", &m, MaxPool2d::new(2, 1));
                b.concat("cat", &[&m, &p, &u])
            },
        ),
        case("avg_pool2d", &["avg_pool2d"], [3, 9, 9], |b, x| {
            let c = stem(b, x, 4);
            let mut avg = AvgPool2d::new(3, 2);
            avg.padding = Pad2d::same(1);
            avg.count_include_pad = false;
            avg.ceil_mode = true;
            let a = b.avg_pool("avg", &c, avg);
            let mut uneven_avg = AvgPool2d::new(3, 2);
            uneven_avg.padding = uneven;
            let a2 = b.avg_pool("avg-uneven", &c, uneven_avg);
            let a = b.avg_pool("avg-again", &a, AvgPool2d::new(2, 1));
            b.sum("add", &[&a, &a2])
        }),
        case(
            "adaptive_avg_pool2d",
            &["adaptive_avg_pool2d"],
            [3, 7, 5],
            |b, x| {
                let c = stem(b, x, 4);
                let g = b.adaptive_avg_pool("uneven", &c, 2, 3);
                b.adaptive_avg_pool("global", &g, 1, 1)
            },
        ),
        case("add", &["add"], [3, 4, 4], |b, x| {
            let c = stem(b, x, 4);
            let d = b.conv("other", x, Conv2d::new(4, 1));
            let r = b.relu("r", &d);
            b.sum("sum", &[&c, &r, &d])
        }),
        case("mul", &["mul"], [4, 5, 5], |b, x| {
            let x = stem(b, x, 4);
            let s = b.adaptive_avg_pool("squeeze", &x, 1, 1);
            let s = b.conv("fc1", &s, Conv2d::new(2, 1));
            let s = b.conv("fc2", &s, Conv2d::new(4, 1));
            let y = b.mul("scale", &x, &s);
            let z = b.mul("scale2", &s, &y);
            b.mul("same", &z, &x)
        }),
        case(
            "layer_norm2d",
            &["layer_norm2d", "layer_scale", "stochastic_depth"],
            [5, 3, 4],
            |b, x| {
                let y = stem(b, x, 5);
                let y = b.layer_norm2d("ln", &y, 1e-6);
                let y = b.layer_scale("gamma", &y, 0.7);
                b.stochastic_depth("drop_path", &y, 0.2)
            },
        ),
        // A convolution's 1×1 output into a layer norm that is the network's output, as
        // in ConvNeXt's last stage at small inputs: burn's fused GPU kernels misread the
        // strides of such maps, and every weight gradient came out wrong (see the burn
        // engine's `UnitMapLayout`). Eight channels: those kernels read four at a time.
        case("layer_norm2d_1x1", &["layer_norm2d"], [3, 4, 4], |b, x| {
            let y = stem(b, x, 8);
            let point = b.conv("to_point", &y, Conv2d::new(8, 4));
            b.layer_norm2d("ln", &point, 1e-6)
        }),
        case(
            "channel_shuffle",
            &["channel_shuffle", "slice_channels"],
            [6, 3, 3],
            |b, x| {
                let x = stem(b, x, 6);
                let left = b.slice_channels("left", &x, 0, 2);
                let right = b.slice_channels("right", &x, 2, 6);
                let right = b.conv("c", &right, Conv2d::new(4, 3).padding(1));
                let cat = b.concat("cat", &[&left, &right]);
                b.channel_shuffle("shuffle", &cat, 3)
            },
        ),
    ];
    for act in Activation::ALL {
        let tag: &'static str = cnnbench_graph::Op::Activation(act).tag();
        cases.push(case(tag, &[tag], [2, 4, 4], |b, x| {
            // Scaled so that values reach every piece of the activation (ReLU6's top,
            // hardswish's flat parts).
            let c = b.conv("c", x, Conv2d::new(3, 1));
            let c = b.layer_scale("spread", &c, 4.0);
            let y = b.add(tag, cnnbench_graph::Op::Activation(act), &[&c]);
            let f = b.flatten("flat", &y);
            let f = b.add("flat_act", cnnbench_graph::Op::Activation(act), &[&f]);
            b.linear("fc", &f, 3)
        }));
    }
    cases
}

/// Zoo models that together use every op family at sizes a test can afford: residual
/// blocks and batch norm, depthwise convolutions and ReLU6, squeeze-and-excitation
/// with SiLU and sigmoid, LRN with grouped convolutions and dropout.
pub fn model_cases() -> Vec<Graph> {
    [
        "resnet18",
        "mobilenet-v2",
        "efficientnet-b0",
        "alexnet-bvlc",
    ]
    .into_iter()
    .map(|name| {
        let entry = cnnbench_zoo::find(name)
            .unwrap_or_else(|| panic!("conformance model {name} is not in the zoo"));
        let [c, h, w] = entry.smallest_input();
        cnnbench_zoo::build(name, Some([c, h.max(32), w.max(32)]))
            .unwrap_or_else(|e| panic!("conformance model {name}: {e}"))
    })
    .collect()
}
