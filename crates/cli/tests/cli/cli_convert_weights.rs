//! End-to-end: `cnnbench convert` keeps an ONNX file's weights beside the model JSON, and
//! `cnnbench verify --model-file` uses them when they are complete.

use crate::common::{cnnbench, convert, fails_saying};

use cnnbench_graph::Weights;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures")
        .join(name)
}

#[test]
fn convert_writes_the_weights_beside_the_json_and_never_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let onnx = fixture("onnx-weights/tiny.torchscript-bn.onnx");
    let json = dir.path().join("tiny.json");
    let weights = dir.path().join("tiny.safetensors");
    cnnbench()
        .arg("convert")
        .arg(&onnx)
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("545 params"))
        .stderr(predicate::str::contains(
            "10 tensors, 553 values (complete)",
        ))
        .stderr(predicate::str::contains("note:").not());
    let loaded = Weights::load(&weights).unwrap();
    assert_eq!(loaded.len(), 10);
    let graph = cnnbench_import::load_model(&json).unwrap();
    loaded.check(&graph, true).unwrap();

    // A second convert refuses, whichever of the two files is in the way.
    fails_saying(
        cnnbench().arg("convert").arg(&onnx).arg(&json),
        "exists already",
    );
    std::fs::remove_file(&json).unwrap();
    cnnbench()
        .arg("convert")
        .arg(&onnx)
        .arg(&json)
        .assert()
        .failure()
        .stderr(predicate::str::contains("tiny.safetensors"))
        .stderr(predicate::str::contains("exists already"));
    assert!(
        !json.exists(),
        "nothing is written when the weights cannot be"
    );
    assert_eq!(Weights::load(&weights).unwrap(), loaded);
}

#[test]
fn partial_weights_are_written_with_notes() {
    // The shapes-only fixtures keep only tensors of up to 16 values.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("every.json");
    cnnbench()
        .arg("convert")
        .arg(fixture("onnx/everyop.torchscript.onnx"))
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "6 tensors, 50 values (partial: 6 of the model's 13 tensors)",
        ))
        .stderr(predicate::str::contains(
            "note: 7 initializers (\"onnx::Conv_56\", \"grouped.weight\", \"se_reduce.weight\", …): no values stored: shapes only",
        ));
    assert_eq!(
        Weights::load(&dir.path().join("every.safetensors"))
            .unwrap()
            .len(),
        6
    );
    // A model without weights writes none.
    let caffe = dir.path().join("caffe.json");
    cnnbench()
        .arg("convert")
        .arg(fixture("tiny.prototxt"))
        .arg(&caffe)
        .assert()
        .success()
        .stderr(predicate::str::contains("weights").not());
    assert!(!dir.path().join("caffe.safetensors").exists());
}

#[test]
fn verify_uses_the_model_files_weights_unless_given_others() {
    let onnx = fixture("onnx-weights/tiny.torchscript-bn.onnx");
    cnnbench()
        .args([
            "verify",
            "--engines",
            "burn-flex,burn-flex",
            "-b",
            "1",
            "--model-file",
        ])
        .arg(&onnx)
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "weights from {}",
            onnx.display()
        )))
        .stdout(predicate::str::contains("PASS"));
    // Partial weights: a note, and random ones.
    cnnbench()
        .args([
            "verify",
            "--engines",
            "burn-flex,burn-flex",
            "-b",
            "1",
            "--model-file",
        ])
        .arg(fixture("onnx/everyop.torchscript.onnx"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "carries 6 of the network's 13 weight tensors (partial); using random weights",
        ))
        .stdout(predicate::str::contains("weights random, from burn-flex"));
    // --weights wins over the file's own.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("tiny.json");
    convert(&onnx, &json);
    cnnbench()
        .args([
            "verify",
            "--engines",
            "burn-flex,burn-flex",
            "-b",
            "1",
            "--model-file",
        ])
        .arg(&onnx)
        .arg("--weights")
        .arg(dir.path().join("tiny.safetensors"))
        .assert()
        .success()
        .stdout(predicate::str::contains("weights given"));
}
