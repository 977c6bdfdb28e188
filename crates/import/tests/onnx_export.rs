//! ONNX export: import(export(g)) is g again (parameters, MACs, shapes, weights) for every
//! zoo model and for one small graph per op; what ONNX cannot express is refused with the
//! node and op named. The independent check (the `onnx` checker and onnxruntime) is in
//! `onnx_export_python.rs`.

use cnnbench_graph::ops::*;
use cnnbench_graph::{Activation, Graph, GraphBuilder, Weights};
use cnnbench_import::onnx::export::{to_onnx, EXPORT_OPSET};
use cnnbench_import::onnx::{from_onnx_with_weights, ModelProto};
use prost::Message;
use rayon::prelude::*;

/// Exports with seeded weights, imports back and checks that nothing changed.
fn round_trip(g: &Graph) {
    let weights = Weights::initial(g, 3);
    let bytes = to_onnx(g, &weights).unwrap_or_else(|e| panic!("{}: {e}", g.name()));
    let model = ModelProto::decode(bytes.as_slice()).unwrap();
    assert_eq!(model.opset_import[0].version, EXPORT_OPSET);
    let back = from_onnx_with_weights(&bytes, "fallback", None)
        .unwrap_or_else(|e| panic!("{}: re-import: {e}", g.name()));
    let name = g.name();
    assert!(back.notes.is_empty(), "{name}: {:?}", back.notes);
    let h = &back.graph;
    assert_eq!(h.name(), name);
    assert_eq!(h.input_shape(), g.input_shape(), "{name}");
    assert_eq!(h.output_shape(), g.output_shape(), "{name}");
    assert_eq!(h.params(), g.params(), "{name} params");
    assert_eq!(h.buffers(), g.buffers(), "{name} buffers");
    assert_eq!(h.macs(), g.macs(), "{name} MACs");
    // Every node that survives keeps its name, shape and kind (identities may vanish).
    for n in h.nodes() {
        let original = g.nodes().iter().find(|o| o.name == n.name);
        let original = original.unwrap_or_else(|| panic!("{name}: new node {}", n.name));
        assert_eq!(n.shape, original.shape, "{name}: {}", n.name);
        let same_kind = n.op.describe() == original.op.describe()
            || matches!(
                (&original.op, &n.op),
                (Op::AdaptiveAvgPool2d(_), Op::AvgPool2d(_))
            )
            || matches!(
                (&original.op, &n.op),
                // A ceil-mode window larger than the padded input: end padding instead.
                (Op::MaxPool2d(a), Op::MaxPool2d(b))
                    if a.ceil_mode && !b.ceil_mode && a.kernel == b.kernel
                        && a.effective_stride() == b.effective_stride()
            );
        assert!(
            same_kind,
            "{name}: {} was {:?}, is {:?}",
            n.name, original.op, n.op
        );
    }
    assert_eq!(
        back.weights, weights,
        "{name}: the weights come back unchanged"
    );
}

#[test]
fn every_zoo_model_round_trips_through_onnx() {
    // One model after another, this was its test binary's whole time, on one core.
    cnnbench_zoo::entries().par_iter().for_each(|entry| {
        let g = cnnbench_zoo::build(entry.name, Some(entry.smallest_input())).unwrap();
        round_trip(&g);
    });
}

fn graph(f: impl FnOnce(&mut GraphBuilder, &cnnbench_graph::T) -> cnnbench_graph::T) -> Graph {
    let mut b = GraphBuilder::new("one_op", [4, 9, 9]);
    let x = b.input();
    let y = f(&mut b, &x);
    b.finish(&y).unwrap()
}

#[test]
fn one_graph_per_op_round_trips() {
    let mut graphs: Vec<(&str, Graph)> = vec![
        (
            "conv",
            graph(|b, x| {
                b.conv(
                    "conv",
                    x,
                    Conv2d::new(8, [3, 2])
                        .stride([2, 1])
                        .padding(cnnbench_graph::Pad2d {
                            top: 1,
                            left: 0,
                            bottom: 2,
                            right: 1,
                        })
                        .dilation([1, 2])
                        .groups(2)
                        .bias(false),
                )
            }),
        ),
        ("batch_norm", graph(|b, x| b.batch_norm("bn", x))),
        (
            "lrn",
            graph(|b, x| {
                b.lrn(
                    "lrn",
                    x,
                    LocalResponseNorm {
                        size: 3,
                        alpha: 1e-3,
                        beta: 0.75,
                        k: 2.0,
                    },
                )
            }),
        ),
        (
            "max_pool",
            graph(|b, x| b.max_pool("pool", x, MaxPool2d::new(3, 2).padding(1).ceil_mode(true))),
        ),
        (
            "avg_pool",
            graph(|b, x| {
                let mut p = AvgPool2d::new(3, 2);
                p.padding = 1.into();
                p.count_include_pad = false;
                b.avg_pool("pool", x, p)
            }),
        ),
        (
            "global_pool",
            graph(|b, x| b.adaptive_avg_pool("gap", x, 1, 1)),
        ),
        (
            "adaptive_pool_3",
            graph(|b, x| b.adaptive_avg_pool("pool", x, 3, 3)),
        ),
        (
            "adaptive_pool_same",
            graph(|b, x| {
                let p = b.adaptive_avg_pool("pool", x, 9, 9);
                b.relu("relu", &p)
            }),
        ),
        ("dropout", graph(|b, x| b.dropout("drop", x, 0.2))),
        (
            "flatten_linear",
            graph(|b, x| {
                let f = b.flatten("flat", x);
                let l = b.linear("fc", &f, 5);
                b.add(
                    "fc2",
                    Op::Linear(Linear {
                        bias: false,
                        ..Linear::new(3)
                    }),
                    &[&l],
                )
            }),
        ),
        (
            "concat_sum",
            graph(|b, x| {
                let a = b.relu("a", x);
                let c = b.sigmoid("c", x);
                let d = b.sum("sum3", &[x, &a, &c]);
                let e = b.sum("sum2", &[&d, &a]);
                b.concat("cat", &[&e, x, &a])
            }),
        ),
        (
            "squeeze_excite",
            graph(|b, x| {
                let s = b.adaptive_avg_pool("squeeze", x, 1, 1);
                let g = b.hardsigmoid("gate", &s);
                b.mul("excite", x, &g)
            }),
        ),
        ("layer_norm", graph(|b, x| b.layer_norm2d("ln", x, 1e-6))),
        ("layer_scale", graph(|b, x| b.layer_scale("ls", x, 1e-6))),
        (
            "channel_shuffle",
            graph(|b, x| b.channel_shuffle("shuffle", x, 2)),
        ),
        (
            "slice_channels",
            graph(|b, x| b.slice_channels("split", x, 1, 3)),
        ),
        (
            "stochastic_depth",
            graph(|b, x| {
                let d = b.stochastic_depth("drop_path", x, 0.1);
                b.relu("relu", &d)
            }),
        ),
    ];
    for a in Activation::ALL {
        graphs.push((
            a.display_name(),
            graph(|b, x| b.add("act", Op::Activation(a), &[x])),
        ));
    }
    for (what, mut g) in graphs {
        g.set_name(what);
        round_trip(&g);
    }
}

#[test]
fn a_ceil_mode_max_pool_window_larger_than_its_input_becomes_end_padding() {
    // Caffe's AlexNet at small sizes: a 3×3 window, stride 2, over a 2×2 map gives one
    // value in ceil mode; ONNX readers such as OpenVINO refuse the window, so the
    // export pads the end instead (the same windows: padding is never the maximum).
    let mut b = GraphBuilder::new("small_ceil", [4, 2, 2]);
    let x = b.input();
    let y = b.max_pool("pool", &x, MaxPool2d::new(3, 2).ceil_mode(true));
    let mut g = b.finish(&y).unwrap();
    g.set_name("small_ceil");
    let bytes = to_onnx(&g, &Weights::initial(&g, 3)).unwrap();
    let back = from_onnx_with_weights(&bytes, "fallback", None).unwrap();
    let Op::MaxPool2d(p) = &back.graph.nodes()[0].op else {
        panic!("{:?}", back.graph.nodes()[0].op);
    };
    assert!(!p.ceil_mode);
    assert_eq!((p.padding.bottom, p.padding.right), (1, 1));
    assert_eq!(back.graph.output_shape(), g.output_shape());
    round_trip(&g);
}

#[test]
fn uneven_adaptive_pooling_exports_as_two_averaging_matmuls() {
    // 9×9 to 4×4 and 2×2 to 5×5 (upsampling): PyTorch's overlapping windows.
    for (size, out) in [(9, 4), (2, 5)] {
        let mut b = GraphBuilder::new("uneven", [4, size, size]);
        let x = b.input();
        let y = b.adaptive_avg_pool("odd_pool", &x, out, out);
        let mut g = b.finish(&y).unwrap();
        g.set_name(format!("uneven_{size}_{out}"));
        round_trip(&g);
    }
}

#[test]
fn missing_weights_are_refused_before_anything_is_written() {
    let g = graph(|b, x| b.batch_norm("bn", x));
    let err = to_onnx(&g, &Weights::new()).unwrap_err().to_string();
    assert!(err.contains("bn.weight"), "{err}");
}
