//! import(export_int8(g)): small networks exported in QDQ form and read back, against
//! the same networks with their batch norms folded by hand; the weights against a hand
//! dequantisation of the file's integers; refusals of what is not QDQ.

use super::*;
use crate::onnx::export::to_onnx_int8_model;
use crate::onnx::{
    from_onnx_with_weights, AttributeProto, GraphProto, ModelProto, OperatorSetIdProto,
    TensorProto, ValueInfoProto,
};
use crate::Imported;
use cnnbench_graph::ops::{Conv2d, MaxPool2d, Op};
use cnnbench_graph::quant::ActivationRanges;
use cnnbench_graph::{Activation, Graph, GraphBuilder, HostTensor, Weights, INPUT_NAME};
use prost::Message;
use rayon::prelude::*;

/// Calibration ranges set by hand: the input's, then each named node's.
fn ranges(input: (f32, f32), nodes: &[(&str, f32, f32)]) -> ActivationRanges {
    let mut r = ActivationRanges::new();
    let mut observe = |name: &str, low: f32, high: f32| {
        r.observe(name, &HostTensor::new(vec![2], vec![low, high]).unwrap())
            .unwrap()
    };
    observe(INPUT_NAME, input.0, input.1);
    for &(name, low, high) in nodes {
        observe(name, low, high);
    }
    r
}

/// The int8 model of `g` with seeded weights, and what the importer makes of it.
fn round_trip(g: &Graph, r: &ActivationRanges) -> (Weights, ModelProto, Imported) {
    let weights = Weights::initial(g, 7);
    let model = to_onnx_int8_model(g, &weights, r).unwrap();
    let back = from_onnx_with_weights(&model.encode_to_vec(), "fallback", None).unwrap();
    (weights, model, back)
}

/// Each node's name, op and the names of what it reads.
fn ops(g: &Graph) -> Vec<(String, String, Vec<String>)> {
    g.nodes()
        .iter()
        .map(|n| {
            (
                n.name.clone(),
                n.op.describe(),
                n.inputs
                    .iter()
                    .map(|&s| g.source_name(s).to_string())
                    .collect(),
            )
        })
        .collect()
}

fn initializer<'m>(model: &'m ModelProto, name: &str) -> &'m TensorProto {
    let graph = model.graph.as_ref().unwrap();
    let found = graph.initializer.iter().find(|t| t.name == name);
    found.unwrap_or_else(|| panic!("no initializer {name}"))
}

fn f32s(t: &TensorProto) -> Vec<f32> {
    t.raw_data
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// `(q − 0) × scale[channel]` by hand, from the file's int8 (or int32) values.
fn hand_dequantised(model: &ModelProto, value: &str, int: &str) -> Vec<f32> {
    let q = initializer(model, &format!("{value}/{int}"));
    let scales = f32s(initializer(model, &format!("{value}/scale")));
    let ints: Vec<i64> = if int == "int8" {
        q.raw_data.iter().map(|&b| b as i8 as i64).collect()
    } else {
        q.raw_data
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64)
            .collect()
    };
    let per_channel = ints.len() / scales.len();
    ints.iter()
        .enumerate()
        .map(|(i, &v)| v as f32 * scales[i / per_channel])
        .collect()
}

fn plain() -> Graph {
    let mut b = GraphBuilder::new("plain", [3, 8, 8]);
    let x = b.input();
    let c = b.conv("conv", &x, Conv2d::new(4, 3).padding(1).bias(false));
    let n = b.batch_norm("bn", &c);
    let r = b.relu("relu", &n);
    let p = b.max_pool("pool", &r, MaxPool2d::new(2, 2));
    let f = b.flatten("flat", &p);
    let y = b.linear("fc", &f, 5);
    b.finish(&y).unwrap()
}

/// `plain` with its batch norm folded into the convolution (which gains a bias).
fn plain_folded() -> Graph {
    let mut b = GraphBuilder::new("plain", [3, 8, 8]);
    let x = b.input();
    let c = b.conv("conv", &x, Conv2d::new(4, 3).padding(1).bias(true));
    let r = b.relu("relu", &c);
    let p = b.max_pool("pool", &r, MaxPool2d::new(2, 2));
    let f = b.flatten("flat", &p);
    let y = b.linear("fc", &f, 5);
    b.finish(&y).unwrap()
}

fn plain_ranges() -> ActivationRanges {
    ranges(
        (-2.0, 2.0),
        &[
            ("conv", -3.0, 3.0),
            ("bn", -2.5, 2.5),
            ("relu", 0.0, 2.5),
            ("fc", -4.0, 4.0),
        ],
    )
}

#[test]
fn a_qdq_network_reads_back_as_its_folded_float_network() {
    let g = plain();
    let (weights, model, back) = round_trip(&g, &plain_ranges());
    let folded = plain_folded();
    let h = &back.graph;
    // Conv → BN → ReLU → pool → flatten → linear came back as Conv (with bias) → ReLU →
    // pool → flatten → linear: the ReLU put back where the range started at 0, none
    // after the max pool (already non-negative), none at the input.
    assert_eq!(ops(h), ops(&folded));
    assert_eq!(h.name(), "plain");
    assert_eq!(h.output_shape(), g.output_shape());
    assert_eq!(h.params(), folded.params());
    assert_eq!(h.params(), g.params() - 2 * 4 + 4, "BN's γ, β gone, a bias");
    assert_eq!(h.macs(), folded.macs());
    assert!(back.weights_complete(), "{:?}", back.notes);
    // The weights are the file's integers dequantised, exactly.
    let conv_w = hand_dequantised(&model, "bn/folded_weight", "int8");
    assert_eq!(back.weights.get("conv.weight").unwrap().data, conv_w);
    let conv_b = hand_dequantised(&model, "bn/folded_bias", "int32");
    assert_eq!(back.weights.get("conv.bias").unwrap().data, conv_b);
    let fc_w = hand_dequantised(&model, "fc.weight", "int8");
    assert_eq!(back.weights.get("fc.weight").unwrap().data, fc_w);
    // One weight by hand: element 0 of channel 1 (27 values a channel).
    let q = initializer(&model, "bn/folded_weight/int8").raw_data[27] as i8;
    let scale = f32s(initializer(&model, "bn/folded_weight/scale"))[1];
    assert_eq!(
        back.weights.get("conv.weight").unwrap().data[27],
        q as f32 * scale
    );
    // And within half a step of the folded float weights (γ = 1, β = 0, μ = 0, σ² = 1).
    let scales = f32s(initializer(&model, "bn/folded_weight/scale"));
    let factor = 1.0 / (1.0f32 + 1e-5).sqrt();
    for (i, (&w, &back_w)) in weights
        .get("conv.weight")
        .unwrap()
        .data
        .iter()
        .zip(&conv_w)
        .enumerate()
    {
        let step = scales[i / 27];
        assert!(
            (w * factor - back_w).abs() <= step / 2.0 + 1e-6,
            "weight {i}: {} against {back_w}",
            w * factor
        );
    }
    let fc_scales = f32s(initializer(&model, "fc.weight/scale"));
    let per_row = fc_w.len() / fc_scales.len();
    for (i, (&w, &back_w)) in weights
        .get("fc.weight")
        .unwrap()
        .data
        .iter()
        .zip(&fc_w)
        .enumerate()
    {
        assert!((w - back_w).abs() <= fc_scales[i / per_row] / 2.0 + 1e-6);
    }
    let [note] = back.notes.as_slice() else {
        panic!("{:?}", back.notes);
    };
    // Pairs on the input, relu, pool and flat; conv's weight and bias and fc's.
    assert!(note.contains("int8 in QDQ form"), "{note}");
    assert!(
        note.contains("4 QuantizeLinear → DequantizeLinear pairs"),
        "{note}"
    );
    assert!(note.contains("4 quantised constants"), "{note}");
    assert!(note.contains("1 ReLU put back"), "{note}");
}

#[test]
fn a_residual_network_keeps_its_sum_and_both_relus() {
    let mut b = GraphBuilder::new("residual", [4, 6, 6]);
    let x = b.input();
    let c1 = b.conv("conv1", &x, Conv2d::new(4, 3).padding(1).bias(false));
    let n1 = b.batch_norm("bn1", &c1);
    let r1 = b.relu("relu1", &n1);
    let c2 = b.conv("conv2", &r1, Conv2d::new(4, 3).padding(1).bias(false));
    let n2 = b.batch_norm("bn2", &c2);
    let s = b.sum("add", &[&r1, &n2]);
    let r2 = b.relu("relu2", &s);
    let p = b.max_pool("pool", &r2, MaxPool2d::new(2, 2));
    let f = b.flatten("flat", &p);
    let y = b.linear("fc", &f, 3);
    let g = b.finish(&y).unwrap();

    let mut b = GraphBuilder::new("residual", [4, 6, 6]);
    let x = b.input();
    let c1 = b.conv("conv1", &x, Conv2d::new(4, 3).padding(1).bias(true));
    let r1 = b.relu("relu1", &c1);
    let c2 = b.conv("conv2", &r1, Conv2d::new(4, 3).padding(1).bias(true));
    let s = b.sum("add", &[&r1, &c2]);
    let r2 = b.relu("relu2", &s);
    let p = b.max_pool("pool", &r2, MaxPool2d::new(2, 2));
    let f = b.flatten("flat", &p);
    let y = b.linear("fc", &f, 3);
    let folded = b.finish(&y).unwrap();

    let r = ranges(
        (-2.0, 2.0),
        &[
            ("conv1", -3.0, 3.0),
            ("bn1", -2.0, 2.0),
            ("relu1", 0.0, 2.0),
            ("conv2", -3.0, 3.0),
            ("bn2", -2.0, 2.0),
            ("add", -3.0, 3.0),
            ("relu2", 0.0, 3.0),
            ("fc", -4.0, 4.0),
        ],
    );
    let (_, model, back) = round_trip(&g, &r);
    assert_eq!(ops(&back.graph), ops(&folded));
    assert_eq!(back.graph.output_shape(), g.output_shape());
    assert_eq!(back.graph.params(), folded.params());
    assert_eq!(back.graph.macs(), folded.macs());
    assert!(back.weights_complete());
    assert_eq!(
        back.weights.get("conv2.weight").unwrap().data,
        hand_dequantised(&model, "bn2/folded_weight", "int8")
    );
    assert!(
        back.notes[0].contains("2 ReLUs put back"),
        "{:?}",
        back.notes
    );
}

fn six() -> Graph {
    let mut b = GraphBuilder::new("six", [3, 4, 4]);
    let x = b.input();
    let c = b.conv("conv", &x, Conv2d::new(2, 1).bias(false));
    let n = b.batch_norm("bn", &c);
    let r = b.relu6("r6", &n);
    let f = b.flatten("flat", &r);
    let y = b.linear("fc", &f, 2);
    b.finish(&y).unwrap()
}

#[test]
fn a_range_of_zero_to_six_is_a_relu6_below_six_a_relu_and_the_input_is_left_alone() {
    let g = six();
    let activation = |top: f32| {
        // The input's range starts at 0 (images in [0, 1]): no ReLU goes there.
        let r = ranges(
            (0.0, 1.0),
            &[
                ("conv", -8.0, 8.0),
                ("bn", -7.0, 7.0),
                ("r6", 0.0, top),
                ("fc", -1.0, 1.0),
            ],
        );
        let (_, _, back) = round_trip(&g, &r);
        let kinds: Vec<String> = back.graph.nodes().iter().map(|n| n.op.describe()).collect();
        assert_eq!(back.graph.nodes()[0].name, "conv");
        assert_eq!(back.graph.nodes()[1].name, "r6");
        (kinds, back.notes)
    };
    let (saturated, notes) = activation(6.0);
    assert_eq!(saturated[1], Op::Activation(Activation::Relu6).describe());
    assert!(notes[0].contains("1 ReLU6 put back"), "{notes:?}");
    let (below, _) = activation(4.5);
    assert_eq!(below[1], Op::Activation(Activation::Relu).describe());
    assert_eq!(below.len(), 4, "conv, relu, flatten, linear: {below:?}");
}

/// The plain network's int8 model, changed by `edit`, and the import's error.
fn refused(edit: impl FnOnce(&mut GraphProto)) -> String {
    let g = plain();
    let mut model = to_onnx_int8_model(&g, &Weights::initial(&g, 7), &plain_ranges()).unwrap();
    edit(model.graph.as_mut().unwrap());
    match from_onnx_with_weights(&model.encode_to_vec(), "m", None) {
        Ok(_) => panic!("imported"),
        Err(e) => e.to_string(),
    }
}

fn node_mut<'g>(g: &'g mut GraphProto, name: &str) -> &'g mut NodeProto {
    let found = g.node.iter_mut().find(|n| n.name == name);
    found.unwrap_or_else(|| panic!("no node {name}"))
}

#[test]
fn what_is_not_qdq_is_refused_naming_the_node() {
    let integer = refused(|g| node_mut(g, "conv").op_type = "ConvInteger".into());
    assert!(integer.contains("\"conv\" (ConvInteger)"), "{integer}");
    assert!(integer.contains("QDQ form only"), "{integer}");
    let qlinear = refused(|g| node_mut(g, "fc").op_type = "QLinearMatMul".into());
    assert!(qlinear.contains("\"fc\" (QLinearMatMul)"), "{qlinear}");
    // A DequantizeLinear of a computed value that no QuantizeLinear made.
    let lone = refused(|g| {
        g.node.retain(|n| n.name != "pool/quantized");
        node_mut(g, "pool/dequantized").input[0] = "pool".into();
    });
    assert!(lone.contains("\"pool/dequantized\""), "{lone}");
    assert!(lone.contains("not a QuantizeLinear's output"), "{lone}");
    // A quantised value read by a float operator.
    let leak = refused(|g| node_mut(g, "fc").input[0] = "flat/quantized".into());
    assert!(
        leak.contains("\"flat/quantized\" (QuantizeLinear)"),
        "{leak}"
    );
    assert!(leak.contains("read by \"fc\" (Gemm)"), "{leak}");
    // A DequantizeLinear with another scale than its QuantizeLinear's.
    let requantised = refused(|g| {
        node_mut(g, "relu/dequantized").input[1] = format!("{INPUT_NAME}/scale");
    });
    assert!(
        requantised.contains("\"relu/dequantized\" (DequantizeLinear)"),
        "{requantised}"
    );
    assert!(requantised.contains("requantisation"), "{requantised}");
    // A weight's DequantizeLinear whose scales do not fit its axis.
    let axis = refused(|g| {
        let dq = node_mut(g, "bn/folded_weight/dequantized");
        dq.attribute[0].i = 1;
    });
    assert!(
        axis.contains("\"bn/folded_weight/dequantized\"") && axis.contains("axis 1"),
        "{axis}"
    );
}

fn tensor(name: &str, dims: &[i64], data_type: i32) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type,
        ..TensorProto::default()
    }
}

fn node(op_type: &str, inputs: &[&str], output: &str, attribute: Vec<AttributeProto>) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: vec![output.into()],
        name: output.into(),
        op_type: op_type.into(),
        attribute,
        domain: String::new(),
    }
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        r#type: 2,
        ..AttributeProto::default()
    }
}

fn image_input(name: &str, c: i64) -> ValueInfoProto {
    use crate::onnx::{DimensionProto, TensorShapeProto, TensorTypeProto, TypeProto};
    let dim = |v: Option<i64>| DimensionProto {
        dim_value: v,
        dim_param: v.is_none().then(|| "batch".to_string()),
    };
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: DATA_FLOAT,
                shape: Some(TensorShapeProto {
                    dim: vec![dim(None), dim(Some(c)), dim(Some(1)), dim(Some(1))],
                }),
            }),
        }),
    }
}

#[test]
fn other_writers_forms_dequantise_too_per_axis_uint8_int32_data_and_a_quantised_float() {
    // Flatten → Gemm (transB 0: B is [in, out]) whose B is uint8 per axis 1 with
    // non-zero zero points, stored in int32_data, and whose bias is a float constant
    // quantised to int8 and dequantised again.
    let mut b = tensor("B", &[3, 2], DATA_UINT8);
    b.int32_data = vec![0, 255, 128, 10, 200, 11];
    let mut b_scale = tensor("B/scale", &[2], DATA_FLOAT);
    b_scale.float_data = vec![0.5, 0.25];
    let mut b_zero = tensor("B/zero", &[2], DATA_UINT8);
    b_zero.raw_data = vec![128, 10];
    let mut c = tensor("C", &[2], DATA_FLOAT);
    c.float_data = vec![0.26, -3.0];
    let mut c_scale = tensor("C/scale", &[], DATA_FLOAT);
    c_scale.float_data = vec![0.1];
    let mut c_zero = tensor("C/zero", &[], DATA_INT8);
    c_zero.int32_data = vec![0];
    let graph = GraphProto {
        node: vec![
            node(
                "DequantizeLinear",
                &["B", "B/scale", "B/zero"],
                "B/dq",
                vec![int_attr("axis", 1)],
            ),
            node("QuantizeLinear", &["C", "C/scale", "C/zero"], "C/q", vec![]),
            node(
                "DequantizeLinear",
                &["C/q", "C/scale", "C/zero"],
                "C/dq",
                vec![],
            ),
            node("Flatten", &["x"], "flat", vec![]),
            node("Gemm", &["flat", "B/dq", "C/dq"], "fc", vec![]),
        ],
        name: "hand".into(),
        initializer: vec![b, b_scale, b_zero, c, c_scale, c_zero],
        input: vec![image_input("x", 3)],
        output: vec![ValueInfoProto {
            name: "fc".into(),
            r#type: None,
        }],
    };
    let model = ModelProto {
        ir_version: 8,
        producer_name: "hand".into(),
        producer_version: String::new(),
        graph: Some(graph),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
    };
    let back = from_onnx_with_weights(&model.encode_to_vec(), "m", None).unwrap();
    // B dequantised per column: column 0 (zero 128, scale 0.5), column 1 (10, 0.25);
    // then transposed to Linear's [out, in].
    let b_float = [
        [(0.0 - 128.0) * 0.5, (255.0 - 10.0) * 0.25],
        [(128.0 - 128.0) * 0.5, (10.0 - 10.0) * 0.25],
        [(200.0 - 128.0) * 0.5, (11.0 - 10.0) * 0.25],
    ];
    let expected: Vec<f32> = (0..2)
        .flat_map(|o| (0..3).map(move |i| b_float[i][o]))
        .collect();
    assert_eq!(back.weights.get("fc.weight").unwrap().data, expected);
    // 0.26 / 0.1 rounds to 3, −3.0 / 0.1 to −30.
    assert_eq!(back.weights.get("fc.bias").unwrap().data, vec![0.3, -3.0]);
    assert!(
        back.notes[0].contains("2 quantised constants"),
        "{:?}",
        back.notes
    );
    assert!(
        back.notes[0].contains("0 QuantizeLinear"),
        "{:?}",
        back.notes
    );
}

#[test]
fn stored_integers_are_checked_against_their_shape_and_type() {
    let ty = int_type(DATA_INT8).unwrap();
    let c = Const {
        dims: vec![2, 2],
        data_type: DATA_INT8,
        raw: vec![1, 2, 3],
        ..Const::default()
    };
    assert!(integers(&c, ty, 4).is_err());
    let c = Const {
        dims: vec![2],
        data_type: DATA_INT8,
        ints: vec![5, 300],
        ..Const::default()
    };
    assert!(integers(&c, ty, 2)
        .err()
        .unwrap_or_default()
        .contains("outside INT8"));
    assert!(elements(&[-1, 3]).is_err());
    assert!(elements(&[i64::MAX, i64::MAX]).is_err());
    let p = Params {
        scales: vec![0.5, 2.0],
        zero_points: vec![1, -1],
        ty,
        axis: Some(0),
    };
    let c = Const {
        dims: vec![2, 2],
        data_type: DATA_INT8,
        raw: vec![3, 0xff, 0, 1],
        ..Const::default()
    };
    assert_eq!(dequantized(&c, &p).unwrap(), vec![1.0, -1.0, 2.0, 4.0]);
}

/// Whether an IR node's values are non-negative by construction (the ranges a
/// calibration would measure start at 0 there).
fn non_negative_in(g: &Graph, index: usize, memo: &mut Vec<Option<bool>>) -> bool {
    if let Some(known) = memo[index] {
        return known;
    }
    let node = &g.nodes()[index];
    let mut input = |i: usize| match node.inputs.get(i) {
        Some(cnnbench_graph::Source::Node(j)) => non_negative_in(g, *j, memo),
        _ => false,
    };
    let known = match &node.op {
        Op::Activation(
            Activation::Relu | Activation::Relu6 | Activation::Sigmoid | Activation::Hardsigmoid,
        ) => true,
        Op::MaxPool2d(_)
        | Op::AvgPool2d(_)
        | Op::AdaptiveAvgPool2d(_)
        | Op::Flatten(_)
        | Op::Dropout(_)
        | Op::StochasticDepth(_)
        | Op::ChannelShuffle(_)
        | Op::SliceChannels(_) => input(0),
        Op::Concat(_) | Op::Add(_) | Op::Mul(_) => (0..node.inputs.len()).all(input),
        Op::Activation(_)
        | Op::Conv2d(_)
        | Op::BatchNorm2d(_)
        | Op::LocalResponseNorm(_)
        | Op::Linear(_)
        | Op::LayerNorm2d(_)
        | Op::LayerScale(_) => false,
    };
    memo[index] = Some(known);
    known
}

#[test]
fn every_zoo_model_reads_back_with_its_ops_less_the_folded_batch_norms() {
    // On every core: one model after another, this was its test binary's whole time.
    cnnbench_zoo::entries().par_iter().for_each(|entry| {
        // VGG's 138 M weights take long to quantise and have no op the others lack.
        if entry.name.starts_with("vgg") {
            return;
        }
        let g = cnnbench_zoo::build(entry.name, Some(entry.smallest_input())).unwrap();
        let mut memo = vec![None; g.nodes().len()];
        let mut r = ranges((-2.0, 2.0), &[]);
        for i in 0..g.nodes().len() {
            let low = if non_negative_in(&g, i, &mut memo) {
                0.0
            } else {
                -1.0
            };
            let range = HostTensor::new(vec![2], vec![low, 1.0]).unwrap();
            r.observe(&g.nodes()[i].name, &range).unwrap();
        }
        let (weights, _, back) = round_trip(&g, &r);
        // What the float export reads back as (a few ops written another way: a
        // ceil-mode pool as end padding), less what int8 changes.
        let float = crate::onnx::export::to_onnx(&g, &weights).unwrap();
        let f = from_onnx_with_weights(&float, "fallback", None)
            .unwrap()
            .graph;
        let readers = |i: usize| {
            f.nodes()
                .iter()
                .filter(|n| n.inputs.contains(&cnnbench_graph::Source::Node(i)))
                .count()
        };
        // A batch norm that is its convolution's only reader is folded into it; a ReLU6
        // its producer's only reader comes back a ReLU (its range here ends at 1).
        let expected: Vec<(String, String)> =
            f.nodes()
                .iter()
                .filter(|n| match (&n.op, n.inputs.first()) {
                    (Op::BatchNorm2d(_), Some(&cnnbench_graph::Source::Node(j))) => {
                        !(matches!(f.nodes()[j].op, Op::Conv2d(_)) && readers(j) == 1)
                    }
                    _ => true,
                })
                .map(|n| {
                    let op = match (&n.op, n.inputs.first()) {
                        (
                            Op::Activation(Activation::Relu6),
                            Some(&cnnbench_graph::Source::Node(j)),
                        ) if readers(j) == 1 => Op::Activation(Activation::Relu),
                        (op, _) => op.clone(),
                    };
                    (n.name.clone(), op.describe())
                })
                .collect();
        let got: Vec<(String, String)> = back
            .graph
            .nodes()
            .iter()
            .map(|n| (n.name.clone(), n.op.describe()))
            .collect();
        assert_eq!(got, expected, "{}", entry.name);
        assert_eq!(
            back.graph.output_shape(),
            g.output_shape(),
            "{}",
            entry.name
        );
        assert!(back.weights_complete(), "{}: {:?}", entry.name, back.notes);
    });
}
