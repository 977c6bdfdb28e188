//! The ONNX converter: fixtures exported from PyTorch by scripts/export_onnx.py with both
//! exporters, hand-built models for what PyTorch does not emit, and every error class.

use cnnbench_graph::{Op, Shape};
use cnnbench_import::load_model;
use cnnbench_import::onnx::*;
use prost::Message;
use std::path::{Path, PathBuf};

mod common;
use common::{model, value_info};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/onnx")
}

#[test]
fn pytorch_exports_import_with_the_files_counts_and_torchvisions_macs() {
    let mut checked = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "onnx") {
            continue;
        }
        let expected: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(path.with_extension("expected.json")).unwrap(),
        )
        .unwrap();
        let g = load_model(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(
            g.params(),
            expected["params"].as_u64().unwrap(),
            "{}",
            path.display()
        );
        let input: Vec<usize> = serde_json::from_value(expected["input"].clone()).unwrap();
        assert_eq!(g.input_shape().to_vec(), input, "{}", path.display());
        if let Some(macs) = expected["macs"].as_u64() {
            assert_eq!(g.macs(), macs, "{}", path.display());
        }
        assert_eq!(
            g.output_shape().rank(),
            1,
            "{}: ends in class scores",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 10, "five networks, two exporters each");
}

fn weight(name: &str, dims: &[i64]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: DATA_FLOAT,
        name: name.into(),
        ..Default::default()
    }
}

fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: v.to_vec(),
        r#type: 7,
        ..Default::default()
    }
}

fn node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: name.into(),
        op_type: op.into(),
        attribute: attrs,
        domain: String::new(),
    }
}

#[test]
fn hand_built_model_covers_lrn_same_padding_old_clip_and_external_data() {
    let mut w = weight("w", &[4, 3, 3, 3]);
    // Weights kept in a file that is not there: not needed to benchmark, not fatal.
    w.data_location = LOCATION_EXTERNAL;
    w.external_data = vec![StringStringEntryProto {
        key: "location".into(),
        value: "missing.bin".into(),
    }];
    let bytes = model(
        vec![
            node(
                "Conv",
                "conv",
                &["x", "w"],
                &["c"],
                vec![
                    ints_attr("strides", &[2, 2]),
                    AttributeProto {
                        name: "auto_pad".into(),
                        s: b"SAME_UPPER".to_vec(),
                        r#type: 3,
                        ..Default::default()
                    },
                ],
            ),
            node(
                "LRN",
                "lrn",
                &["c"],
                &["l"],
                vec![
                    AttributeProto {
                        name: "size".into(),
                        i: 3,
                        r#type: 2,
                        ..Default::default()
                    },
                    AttributeProto {
                        name: "bias".into(),
                        f: 2.0,
                        r#type: 1,
                        ..Default::default()
                    },
                ],
            ),
            node(
                "Clip",
                "clip",
                &["l"],
                &["r"],
                vec![
                    AttributeProto {
                        name: "min".into(),
                        f: 0.0,
                        r#type: 1,
                        ..Default::default()
                    },
                    AttributeProto {
                        name: "max".into(),
                        f: 6.0,
                        r#type: 1,
                        ..Default::default()
                    },
                ],
            ),
            node(
                "MaxPool",
                "pool",
                &["r"],
                &["p"],
                vec![
                    ints_attr("kernel_shape", &[2, 2]),
                    ints_attr("pads", &[0, 0, 1, 1]),
                    ints_attr("strides", &[2, 2]),
                ],
            ),
            node("GlobalAveragePool", "gap", &["p"], &["g"], vec![]),
            node("Flatten", "flat", &["g"], &["f"], vec![]),
        ],
        vec![w],
        &[None, Some(3), Some(9), Some(9)],
        "f",
        9,
    );
    let g = from_onnx(&bytes, "fallback").unwrap();
    assert_eq!(g.name(), "hand");
    let shape = |n: &str| {
        g.nodes()
            .iter()
            .find(|x| x.name == n)
            .unwrap()
            .shape
            .clone()
    };
    // SAME_UPPER at stride 2 on 9: ceil(9/2) = 5.
    assert_eq!(shape("conv"), Shape::chw(4, 5, 5));
    assert_eq!(shape("pool"), Shape::chw(4, 3, 3));
    assert!(
        matches!(
            g.nodes()[2].op,
            Op::Activation(cnnbench_graph::Activation::Relu6)
        ),
        "Clip(0, 6) in opset 9 attributes is ReLU6"
    );
    match &g.nodes()[1].op {
        Op::LocalResponseNorm(l) => assert_eq!((l.size, l.k), (3, 2.0)),
        other => panic!("{other:?}"),
    }
    assert_eq!(g.params(), 4 * 27, "no bias input, no bias");
}

#[test]
fn errors_name_the_node_and_what_is_supported() {
    let x = &[None, Some(3), Some(8), Some(8)][..];
    let relu = |input: &str, output: &str| node("Relu", "r", &[input], &[output], vec![]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            model(
                vec![node("Erf", "erf1", &["x"], &["y"], vec![])],
                vec![],
                x,
                "y",
                17,
            ),
            "layer \"erf1\" (Erf): operator \"Erf\" is not supported; supported: Conv",
        ),
        (
            model(
                vec![NodeProto {
                    domain: "com.microsoft".into(),
                    ..node("FusedConv", "f", &["x"], &["y"], vec![])
                }],
                vec![],
                x,
                "y",
                17,
            ),
            "domain \"com.microsoft\"",
        ),
        (
            model(
                vec![relu("x", "y")],
                vec![],
                &[None, Some(3), None, None],
                "y",
                17,
            ),
            "fixed C, H and W",
        ),
        (
            model(vec![relu("nope", "y")], vec![], x, "y", 17),
            "reads \"nope\"",
        ),
        (
            model(
                vec![node("Add", "a", &["x", "b"], &["y"], vec![])],
                vec![weight("b", &[3, 1, 1])],
                x,
                "y",
                17,
            ),
            "constant operand is not supported",
        ),
        (
            model(
                vec![node("Reshape", "rs", &["x", "s"], &["y"], vec![])],
                vec![TensorProto {
                    dims: vec![3],
                    data_type: DATA_INT64,
                    int64_data: vec![1, 3, 64],
                    name: "s".into(),
                    ..Default::default()
                }],
                x,
                "y",
                17,
            ),
            "neither a flatten nor",
        ),
        (
            model(
                vec![node("Clip", "c", &["x", "lo", "hi"], &["y"], vec![])],
                vec![
                    TensorProto {
                        dims: vec![],
                        data_type: DATA_FLOAT,
                        float_data: vec![-1.0],
                        name: "lo".into(),
                        ..Default::default()
                    },
                    TensorProto {
                        dims: vec![],
                        data_type: DATA_FLOAT,
                        float_data: vec![1.0],
                        name: "hi".into(),
                        ..Default::default()
                    },
                ],
                x,
                "y",
                13,
            ),
            "only ReLU",
        ),
        (
            model(
                vec![node("Conv", "c", &["x", "w"], &["y"], vec![])],
                vec![weight("w", &[4, 3, 9, 9])],
                x,
                "y",
                17,
            ),
            "too small",
        ),
        (
            model(vec![relu("x", "y")], vec![], x, "zzz", 17),
            "the graph output \"zzz\"",
        ),
    ];
    for (bytes, expected) in cases {
        let err = from_onnx(&bytes, "t").unwrap_err().to_string();
        assert!(err.contains(expected), "expected \"{expected}\" in: {err}");
    }
    let mut two_inputs =
        ModelProto::decode(model(vec![relu("x", "y")], vec![], x, "y", 17).as_slice()).unwrap();
    two_inputs
        .graph
        .as_mut()
        .unwrap()
        .input
        .push(value_info("x2", x));
    let err = from_onnx(&two_inputs.encode_to_vec(), "t")
        .unwrap_err()
        .to_string();
    assert!(err.contains("2 non-constant inputs"), "{err}");
    let err = from_onnx(&[0x0a, 0xff, 0xff], "t").unwrap_err().to_string();
    assert!(err.contains("not a valid ONNX model"), "{err}");
}
