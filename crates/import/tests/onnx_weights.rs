//! Weights kept from ONNX files: fixtures with their weights exported from PyTorch by
//! scripts/export_onnx.py (the expected values computed there from the PyTorch module),
//! hand-built models for Gemm/MatMul layouts, external data present, missing and out of
//! bounds, and what is a note rather than an error.

use cnnbench_graph::{HostTensor, Op, Shape};
use cnnbench_import::onnx::*;
use cnnbench_import::{load_model, load_model_with_weights};
use proptest::prelude::*;
use prost::Message;
use std::path::{Path, PathBuf};

mod common;
use common::model;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/onnx-weights")
}

fn close(actual: f64, expected: f64, scale: f64) -> bool {
    (actual - expected).abs() <= 1e-5 * (1.0 + scale.abs())
}

#[test]
fn pytorch_exports_keep_their_weights_in_pytorch_layout() {
    let mut checked = Vec::new();
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "onnx") {
            continue;
        }
        let what = path.display().to_string();
        let expected: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(path.with_extension("expected-weights.json")).unwrap(),
        )
        .unwrap();
        let imported = load_model_with_weights(&path).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(imported.notes.is_empty(), "{what}: {:?}", imported.notes);
        let input: Vec<usize> = serde_json::from_value(expected["input"].clone()).unwrap();
        assert_eq!(imported.graph.input_shape().to_vec(), input, "{what}");
        assert_eq!(
            imported.weights_complete(),
            expected["complete"].as_bool().unwrap(),
            "{what}"
        );
        let tensors = expected["tensors"].as_object().unwrap();
        assert_eq!(imported.weights.len(), tensors.len(), "{what}");
        for (key, e) in tensors {
            let t = imported
                .weights
                .get(key)
                .unwrap_or_else(|| panic!("{what}: no \"{key}\""));
            let shape: Vec<usize> = serde_json::from_value(e["shape"].clone()).unwrap();
            assert_eq!(t.shape, shape, "{what}: {key}");
            let sum: f64 = t.data.iter().map(|&v| v as f64).sum();
            let abs_sum = e["abs_sum"].as_f64().unwrap();
            assert!(
                close(sum, e["sum"].as_f64().unwrap(), abs_sum),
                "{what}: {key} sums to {sum}, expected {}",
                e["sum"]
            );
            for (i, v) in e["first"].as_array().unwrap().iter().enumerate() {
                let v = v.as_f64().unwrap();
                assert!(
                    close(t.data[i] as f64, v, v),
                    "{what}: {key}[{i}] is {}, expected {v}",
                    t.data[i]
                );
            }
        }
        // The shapes-only path sees the same network.
        let graph = load_model(&path).unwrap();
        assert_eq!(graph.to_json(), imported.graph.to_json(), "{what}");
        checked.push(path.file_name().unwrap().to_string_lossy().to_string());
    }
    checked.sort();
    assert_eq!(
        checked,
        [
            "tiny.dynamo.onnx",
            "tiny.torchscript-bn.onnx",
            "tiny.torchscript.onnx"
        ]
    );
}

#[test]
fn both_exporters_fold_to_the_same_values() {
    // Two exports of one module with batch norm folded: the same tensors in the same
    // node order, whatever the exporters name the nodes.
    let load = |tag: &str| {
        let imported =
            load_model_with_weights(&fixtures().join(format!("tiny.{tag}.onnx"))).unwrap();
        imported
            .graph
            .weight_specs()
            .iter()
            .map(|s| imported.weights.get(&s.key).unwrap().clone())
            .collect::<Vec<HostTensor>>()
    };
    let (ts, dynamo) = (load("torchscript"), load("dynamo"));
    assert_eq!(ts.len(), 6);
    assert_eq!(ts.len(), dynamo.len());
    for (a, b) in ts.iter().zip(&dynamo) {
        assert_eq!(a.shape, b.shape);
        assert!(cnnbench_graph::max_relative_error(a, b).unwrap() < 1e-6);
    }
}

// ---- hand-built models -------------------------------------------------------------

fn floats(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: DATA_FLOAT,
        float_data: values.to_vec(),
        name: name.into(),
        ..Default::default()
    }
}

/// Values as little-endian raw_data, as exporters write them.
fn raw(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: DATA_FLOAT,
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        name: name.into(),
        ..Default::default()
    }
}

fn external(name: &str, dims: &[i64], entries: &[(&str, &str)]) -> TensorProto {
    TensorProto {
        dims: dims.to_vec(),
        data_type: DATA_FLOAT,
        name: name.into(),
        data_location: LOCATION_EXTERNAL,
        external_data: entries
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: k.to_string(),
                value: v.to_string(),
            })
            .collect(),
        ..Default::default()
    }
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        name: name.into(),
        op_type: op.into(),
        ..Default::default()
    }
}

fn int_attr(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i,
        r#type: 2,
        ..Default::default()
    }
}

/// A fresh folder under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "cnnbench-import-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn values(imported: &cnnbench_import::Imported, key: &str) -> Option<(Vec<usize>, Vec<f32>)> {
    imported
        .weights
        .get(key)
        .map(|t| (t.shape.clone(), t.data.clone()))
}

#[test]
fn gemm_without_trans_b_and_matmul_are_transposed_to_linears_layout() {
    let mut gemm = node("Gemm", "gemm", &["f", "B", "C"], &["g"]);
    gemm.attribute.push(int_attr("transB", 0));
    let bytes = model(
        vec![
            node("Flatten", "flat", &["x"], &["f"]),
            gemm,
            node("Relu", "relu", &["g"], &["r"]),
            // Exporters share initializers through Identity nodes.
            node("Identity", "id", &["M"], &["M2"]),
            node("MatMul", "mm", &["r", "M2"], &["m"]),
            node("Add", "add", &["m", "bias"], &["y"]),
        ],
        vec![
            // [in 2, out 3]
            raw("B", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            floats("C", &[1, 3], &[10.0, 20.0, 30.0]),
            // [in 3, out 2]
            floats("M", &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            // One value broadcast over the layer's outputs.
            floats("bias", &[1], &[0.5]),
        ],
        &[None, Some(2), Some(1), Some(1)],
        "y",
        17,
    );
    let imported = from_onnx_with_weights(&bytes, "t", None).unwrap();
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
    assert!(imported.weights_complete());
    assert_eq!(
        values(&imported, "gemm.weight"),
        Some((vec![3, 2], vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]))
    );
    assert_eq!(
        values(&imported, "gemm.bias"),
        Some((vec![3], vec![10.0, 20.0, 30.0]))
    );
    assert_eq!(
        values(&imported, "mm.weight"),
        Some((vec![2, 3], vec![1.0, 3.0, 5.0, 2.0, 4.0, 6.0]))
    );
    assert_eq!(
        values(&imported, "mm.bias"),
        Some((vec![2], vec![0.5, 0.5]))
    );
    // The graph is the one from_onnx builds.
    assert_eq!(
        imported.graph.to_json(),
        from_onnx(&bytes, "t").unwrap().to_json()
    );
}

#[test]
fn a_shared_initializer_feeds_every_layer_that_reads_it() {
    let bytes = model(
        vec![
            node("Conv", "a", &["x", "w", "b"], &["ya"]),
            node("Conv", "b", &["ya", "w", "b"], &["yb"]),
        ],
        vec![
            floats("w", &[2, 2, 1, 1], &[1.0, 2.0, 3.0, 4.0]),
            floats("b", &[2], &[-1.0, 1.0]),
        ],
        &[None, Some(2), Some(3), Some(3)],
        "yb",
        17,
    );
    let imported = from_onnx_with_weights(&bytes, "t", None).unwrap();
    assert!(imported.notes.is_empty(), "{:?}", imported.notes);
    assert!(imported.weights_complete());
    for layer in ["a", "b"] {
        assert_eq!(
            values(&imported, &format!("{layer}.weight")),
            Some((vec![2, 2, 1, 1], vec![1.0, 2.0, 3.0, 4.0]))
        );
        assert_eq!(
            values(&imported, &format!("{layer}.bias")),
            Some((vec![2], vec![-1.0, 1.0]))
        );
    }
}

/// Conv (W external or not) → BatchNormalization with inline values.
fn conv_bn(w: TensorProto) -> Vec<u8> {
    model(
        vec![
            node("Conv", "conv", &["x", "w"], &["c"]),
            node(
                "BatchNormalization",
                "bn",
                &["c", "s", "b", "m", "v"],
                &["y"],
            ),
        ],
        vec![
            w,
            floats("s", &[2], &[1.0, 2.0]),
            floats("b", &[2], &[0.1, 0.2]),
            floats("m", &[2], &[0.0, 0.5]),
            floats("v", &[2], &[1.0, 4.0]),
        ],
        &[None, Some(1), Some(4), Some(4)],
        "y",
        17,
    )
}

#[test]
fn a_missing_external_data_file_is_a_note_and_the_shapes_still_import() {
    let dir = TempDir::new("missing");
    let path = dir.0.join("net.onnx");
    let bytes = conv_bn(external(
        "w",
        &[2, 1, 3, 3],
        &[
            ("location", "net.onnx.data"),
            ("offset", "0"),
            ("length", "72"),
        ],
    ));
    std::fs::write(&path, &bytes).unwrap();
    let imported = load_model_with_weights(&path).unwrap();
    let conv = &imported.graph.nodes()[0];
    assert_eq!(conv.shape, Shape::chw(2, 2, 2));
    assert!(matches!(conv.op, Op::Conv2d(_)));
    assert_eq!(imported.notes.len(), 1, "{:?}", imported.notes);
    let note = &imported.notes[0];
    assert!(
        note.starts_with("initializer \"w\": in external file")
            && note.contains("net.onnx.data")
            && note.contains("which is missing: shapes only"),
        "{note}"
    );
    // What the file does hold is kept; the set is partial.
    assert_eq!(imported.weights.len(), 4);
    assert_eq!(
        values(&imported, "bn.running_var"),
        Some((vec![2], vec![1.0, 4.0]))
    );
    assert!(imported.weights.get("conv.weight").is_none());
    assert!(!imported.weights_complete());
    imported.weights.check(&imported.graph, false).unwrap();
    // From bytes alone there is no folder to look in: a note as well.
    let from_bytes = from_onnx_with_weights(&bytes, "t", None).unwrap();
    assert!(
        from_bytes.notes[0].contains("not read when the model is given as bytes"),
        "{:?}",
        from_bytes.notes
    );
    // The shapes-only path never looks.
    assert_eq!(load_model(&path).unwrap().params(), 2 * 9 + 4);
}

#[test]
fn external_data_beside_the_model_is_read_within_bounds_and_inside_its_folder() {
    let dir = TempDir::new("external");
    let w: Vec<f32> = (0..18).map(|i| i as f32 * 0.25 - 1.0).collect();
    // 16 bytes of something else first, as when several tensors share one file.
    let mut data = vec![0xAB; 16];
    data.extend(w.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::create_dir_all(dir.0.join("sub")).unwrap();
    std::fs::write(dir.0.join("sub/weights.bin"), &data).unwrap();
    // Links that lead out of the folder: to a file, and to a folder, beside it.
    let outside = TempDir::new("external-outside");
    std::fs::write(outside.0.join("weights.bin"), &data).unwrap();
    std::os::unix::fs::symlink(outside.0.join("weights.bin"), dir.0.join("sub/leak.bin")).unwrap();
    std::os::unix::fs::symlink(&outside.0, dir.0.join("linked")).unwrap();
    // A link that stays inside is followed.
    std::os::unix::fs::symlink("weights.bin", dir.0.join("sub/inside.bin")).unwrap();

    let load = |entries: &[(&str, &str)]| {
        let path = dir.0.join("net.onnx");
        std::fs::write(&path, conv_bn(external("w", &[2, 1, 3, 3], entries))).unwrap();
        load_model_with_weights(&path).unwrap()
    };
    let good = load(&[
        ("location", "sub/weights.bin"),
        ("offset", "16"),
        ("length", "72"),
    ]);
    assert!(good.notes.is_empty(), "{:?}", good.notes);
    assert_eq!(
        values(&good, "conv.weight"),
        Some((vec![2, 1, 3, 3], w.clone()))
    );
    assert!(good.weights_complete());
    // Without a length, the shape says how much to read.
    let no_length = load(&[("location", "sub/weights.bin"), ("offset", "16")]);
    assert_eq!(
        values(&no_length, "conv.weight").map(|v| v.1),
        Some(w.clone())
    );
    let linked_inside = load(&[("location", "sub/inside.bin"), ("offset", "16")]);
    assert_eq!(values(&linked_inside, "conv.weight").map(|v| v.1), Some(w));

    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("location", "sub/weights.bin"), ("offset", "20")],
            "which has only 88 bytes: shapes only",
        ),
        (
            &[
                ("location", "sub/weights.bin"),
                ("offset", "18446744073709551615"),
            ],
            "which has only 88 bytes",
        ),
        (
            &[("location", "sub/weights.bin"), ("length", "8")],
            "external length 8 bytes, but the shape needs 72",
        ),
        (
            &[("location", "sub/weights.bin"), ("offset", "-1")],
            "external offset \"-1\" is not a number",
        ),
        (
            &[("location", "../weights.bin")],
            "outside the model's folder",
        ),
        (&[("location", "/etc/passwd")], "outside the model's folder"),
        (
            &[("location", "sub/leak.bin")],
            "a link that leads outside the model's folder",
        ),
        (
            &[("location", "linked/weights.bin")],
            "a link that leads outside the model's folder",
        ),
        (&[("location", "sub")], "which is not a file"),
        (&[("offset", "0")], "without a file name"),
    ];
    for (entries, expected) in cases {
        let imported = load(entries);
        assert_eq!(imported.notes.len(), 1, "{entries:?}: {:?}", imported.notes);
        assert!(
            imported.notes[0].contains(expected),
            "{entries:?}: expected \"{expected}\" in {}",
            imported.notes[0]
        );
        assert!(imported.weights.get("conv.weight").is_none());
        assert_eq!(imported.weights.len(), 4, "the batch norm's are kept");
    }
}

#[test]
fn other_data_types_missing_values_and_unfit_shapes_are_notes_not_errors() {
    // A FLOAT16 convolution weight, and a batch norm whose statistics were stripped.
    let mut half = floats("w", &[2, 1, 3, 3], &[]);
    half.data_type = 10;
    half.raw_data = vec![0; 36];
    let mut bytes = ModelProto::decode(conv_bn(half).as_slice()).unwrap();
    let inits = &mut bytes.graph.as_mut().unwrap().initializer;
    for t in inits.iter_mut().filter(|t| t.name == "m" || t.name == "v") {
        t.float_data.clear();
    }
    let imported = from_onnx_with_weights(&bytes.encode_to_vec(), "t", None).unwrap();
    assert_eq!(
        imported.notes,
        [
            "initializer \"w\": FLOAT16 (data type 10): only FLOAT (32-bit) weights are kept",
            "2 initializers (\"m\", \"v\"): no values stored: shapes only",
        ]
    );
    assert_eq!(imported.weights.len(), 2);

    // A Gemm whose B does not match the features it reads (3 here, 5 in B): the layer
    // keeps its shape from the graph and the weight is dropped, not guessed.
    let mut gemm = node("Gemm", "gemm", &["f", "B", "C"], &["y"]);
    gemm.attribute.push(int_attr("transB", 0));
    let bytes = model(
        vec![node("Flatten", "flat", &["x"], &["f"]), gemm],
        vec![
            floats("B", &[5, 2], &[0.0; 10]),
            floats("C", &[2], &[1.0, 2.0, 3.0]),
        ],
        &[None, Some(3), Some(1), Some(1)],
        "y",
        17,
    );
    let imported = from_onnx_with_weights(&bytes, "t", None).unwrap();
    assert_eq!(
        imported.notes,
        [
            "initializer \"C\": 3 values stored, but the shape [2] needs 2: not kept",
            "node \"gemm\": weight \"B\" has shape [5, 2], which does not fit the layer's [2, 3] once transposed: not kept",
        ]
    );
    assert!(imported.weights.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn bit_flipped_weights_never_panic(flips in proptest::collection::vec((0usize..3469, 0u8..8), 1..8)) {
        let mut bytes = std::fs::read(fixtures().join("tiny.torchscript-bn.onnx")).unwrap();
        for (at, bit) in flips {
            let at = at % bytes.len();
            bytes[at] ^= 1 << bit;
        }
        if let Ok(imported) = from_onnx_with_weights(&bytes, "t", None) {
            imported.weights.check(&imported.graph, false).unwrap();
        }
    }
}
