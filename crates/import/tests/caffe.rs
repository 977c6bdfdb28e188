//! The Caffe converter on a hand-written fixture and on broken inputs.

use cnnbench_graph::{Op, Shape};
use cnnbench_import::{caffe::from_prototxt, load_model};
use std::path::Path;

fn fixture() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny.prototxt"),
    )
    .unwrap()
}

#[test]
fn converts_every_supported_layer_with_exact_counts() {
    let g = from_prototxt(&fixture()).unwrap();
    assert_eq!(g.name(), "tiny-caffe");
    assert_eq!(g.input_shape(), [3, 32, 32]);
    // conv1 224 + bn/scale 16 + conv2a (groups 2) 40 + conv2b (no bias) 576 + fc 170
    assert_eq!(g.params(), 1026);
    assert_eq!(g.macs(), 221_184 + 8_192 + 147_456 + 160);
    let names: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "conv1",
            "bn1",
            "relu1",
            "pool1",
            "norm1",
            "conv2a",
            "conv2b",
            "sum",
            "cat",
            "pool2",
            "fc.flatten",
            "fc",
            "drop"
        ]
    );
    let node = |name: &str| g.nodes().iter().find(|n| n.name == name).unwrap();
    // Caffe rounds pooling up: 32 -> 16, not 15.
    assert_eq!(node("pool1").shape, Shape::chw(8, 16, 16));
    assert_eq!(node("cat").shape, Shape::chw(16, 16, 16));
    assert_eq!(g.output_shape(), &Shape::flat(10));
    match &node("bn1").op {
        Op::BatchNorm2d(bn) => assert!(bn.affine, "Scale folds into batch norm"),
        other => panic!("{other:?}"),
    }
    match &node("drop").op {
        Op::Dropout(d) => assert_eq!(d.p, 0.3),
        other => panic!("{other:?}"),
    }
    assert_eq!(g.depth(), 3, "conv1 → conv2b → fc");
}

#[test]
fn reads_the_input_dim_form_and_batch_norm_without_scale() {
    let g = from_prototxt(
        "name: \"x\" input: \"data\" input_dim: 10 input_dim: 3 input_dim: 20 input_dim: 24
         layer { name: \"c\" type: \"Convolution\" bottom: \"data\" top: \"c\" convolution_param { num_output: 4 kernel_size: [3, 5] stride: 2 } }
         layer { name: \"bn\" type: \"BatchNorm\" bottom: \"c\" top: \"c\" }",
    );
    // `[3, 5]` is not text format; a repeated field is written twice.
    assert!(g.is_err());
    let g = from_prototxt(
        "name: \"x\" input: \"data\" input_dim: 10 input_dim: 3 input_dim: 20 input_dim: 24
         layer { name: \"c\" type: \"Convolution\" bottom: \"data\" top: \"c\" convolution_param { num_output: 4 kernel_size: 3 kernel_size: 5 stride: 2 } }
         layer { name: \"bn\" type: \"BatchNorm\" bottom: \"c\" top: \"c\" }",
    )
    .unwrap();
    assert_eq!(g.input_shape(), [3, 20, 24]);
    assert_eq!(g.output_shape(), &Shape::chw(4, 9, 10));
    assert_eq!(
        g.params(),
        4 * 3 * 15 + 4,
        "batch norm without Scale has no parameters"
    );
}

#[test]
fn errors_name_the_layer_and_say_what_is_supported() {
    let base = "input: \"data\" input_dim: 1 input_dim: 3 input_dim: 8 input_dim: 8\n";
    let cases = [
        ("layer { name: \"p\" type: \"PReLU\" bottom: \"data\" top: \"p\" }", "layer \"p\" (PReLU): layer type \"PReLU\" is not supported; supported: Input, Convolution"),
        ("layer { name: \"c\" type: \"Convolution\" bottom: \"nope\" top: \"c\" convolution_param { num_output: 2 kernel_size: 1 } }", "reads blob \"nope\""),
        ("layer { name: \"c\" type: \"Convolution\" bottom: \"data\" top: \"c\" }", "has no num_output"),
        ("layer { name: \"e\" type: \"Eltwise\" bottom: \"data\" bottom: \"data\" top: \"e\" eltwise_param { operation: PROD } }", "operation PROD is not supported"),
        ("layer { name: \"b\" type: \"BatchNorm\" bottom: \"data\" top: \"data\" } layer { name: \"s\" type: \"Scale\" bottom: \"data\" top: \"data\" }", "Scale without bias_term"),
        ("layer { name: \"c\" type: \"Convolution\" bottom: \"data\" top: \"c\" convolution_param { num_output: 2 kernel_size: 9 } }", "too small"),
        ("layer { name: \"c\" type: \"Convolution\" bottom: \"data\" top: \"c\" convolution_param { num_output: two kernel_size: 1 } }", "num_output: \"two\" is not a valid number"),
        ("layers { name: \"c\" type: CONVOLUTION }", "old (V1) Caffe prototxt"),
        ("layer { name: \"p\" type: \"Pooling\" bottom: \"data\" top: \"p\" pooling_param { kernel_size: 2 stride: 0 } }", "stride must be at least 1"),
        ("layer { name: \"p\" type: \"Pooling\" bottom: \"data\" top: \"p\" pooling_param { kernel_size: 2 pad: 18446744073709551615 } }", "implausibly large"),
        ("layer { name: \"c\" type: \"Convolution\"", "never closed"),
    ];
    for (layers, expected) in cases {
        let err = from_prototxt(&format!("{base}{layers}"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(expected), "expected \"{expected}\" in: {err}");
    }
    let err = from_prototxt("layer { name: \"c\" type: \"ReLU\" }")
        .unwrap_err()
        .to_string();
    assert!(err.contains("no input found"), "{err}");
}

#[test]
fn load_model_picks_the_format_by_extension_and_content() {
    let dir = std::env::temp_dir().join(format!("cnnbench-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let caffe = dir.join("net.txt");
    std::fs::write(&caffe, fixture()).unwrap();
    assert_eq!(load_model(&caffe).unwrap().params(), 1026);
    let json = dir.join("net.json");
    std::fs::write(&json, load_model(&caffe).unwrap().to_json()).unwrap();
    assert_eq!(load_model(&json).unwrap().params(), 1026);
    let wrong = dir.join("net.prototxt");
    std::fs::write(&wrong, load_model(&caffe).unwrap().to_json()).unwrap();
    assert!(load_model(&wrong)
        .unwrap_err()
        .to_string()
        .contains("does not look like one"));
    let onnx = dir.join("net.onnx");
    std::fs::write(&onnx, [8u8, 7, 0, 1]).unwrap();
    assert!(load_model(&onnx)
        .unwrap_err()
        .to_string()
        .contains("not a valid ONNX model"));
    let unknown = dir.join("net.bin");
    std::fs::write(&unknown, [0u8, 159, 146, 150]).unwrap();
    assert!(load_model(&unknown)
        .unwrap_err()
        .to_string()
        .contains("cannot tell the format"));
    std::fs::remove_dir_all(&dir).unwrap();
}
