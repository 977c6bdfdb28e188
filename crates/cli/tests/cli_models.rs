//! End-to-end tests of `cnnbench models` and `cnnbench engines`.

mod common;

use common::cnnbench;

use predicates::prelude::*;
use serde_json::Value;

#[test]
fn lists_the_zoo_as_a_table_and_as_json() {
    cnnbench()
        .arg("models")
        .assert()
        .success()
        .stdout(predicate::str::contains("resnet200"))
        .stdout(predicate::str::contains("25,557,032"))
        .stdout(predicate::str::contains("inception-v1"));
    let out = cnnbench().args(["models", "--json"]).output().unwrap();
    assert!(out.status.success());
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 23);
    let resnet50 = rows.iter().find(|r| r["name"] == "resnet50").unwrap();
    assert_eq!(resnet50["params"], 25_557_032u64);
    assert_eq!(resnet50["macs"], 4_089_184_256u64);
    assert_eq!(resnet50["depth"], 50);
    assert_eq!(resnet50["input"], serde_json::json!([3, 224, 224]));
}

#[test]
fn shows_one_models_layers_at_any_size() {
    cnnbench()
        .args(["models", "resnet18"])
        .assert()
        .success()
        .stdout(predicate::str::contains("layer1.0.conv1"))
        .stdout(predicate::str::contains("64×112×112"))
        .stdout(predicate::str::contains("11,689,512"));
    cnnbench()
        .args(["models", "GoogLeNet", "--image-size", "64"])
        .assert()
        .success()
        .stdout(predicate::str::contains("inception-v1 — input 3×64×64"));
    let out = cnnbench()
        .args(["models", "resnet18", "--image-size", "112x64", "--json"])
        .output()
        .unwrap();
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["input"], serde_json::json!([3, 112, 64]));
    assert_eq!(row["params"], 11_689_512u64);
}

#[test]
fn unknown_names_suggest_the_closest() {
    cnnbench()
        .args(["models", "resnt50"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("did you mean resnet50"));
}

#[test]
fn too_small_images_name_the_layer() {
    cnnbench()
        .args(["models", "alexnet-bvlc", "--image-size", "16"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("node \""))
        .stderr(predicate::str::contains("too small"));
}

#[test]
fn exports_and_reloads_model_files_without_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r18.json");
    cnnbench()
        .args(["models", "resnet18", "--export"])
        .arg(&file)
        .assert()
        .success();
    let out = cnnbench()
        .args(["models", "--json", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success());
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["params"], 11_689_512u64);
    assert_eq!(row["depth"], 18);
    cnnbench()
        .args(["models", "resnet18", "--export"])
        .arg(&file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("must not exist yet"));
}

#[test]
fn invalid_model_files_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"swish"}]}"#,
            "unknown op \"swish\"",
        ),
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"relu","inputs":["b"]}]}"#,
            "reads \"b\"",
        ),
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"conv2d","in_channels":3,"out_channels":4,"kernel":0}]}"#,
            "kernel must be at least 1",
        ),
        (
            r#"{"format":"cnnbench-model","version":2,"name":"x","input":[3,8,8],"nodes":[]}"#,
            "version 2 is not supported",
        ),
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"relu","colour":1}]}"#,
            "unknown field `colour`",
        ),
        ("{not json", "not valid JSON"),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&file, text).unwrap();
        cnnbench()
            .args(["models", "--file"])
            .arg(&file)
            .assert()
            .failure()
            .stderr(predicate::str::contains(*expected));
    }
}

#[test]
fn engines_lists_what_this_build_can_run() {
    cnnbench()
        .arg("engines")
        .assert()
        .success()
        .stdout(predicate::str::contains("burn-flex"))
        .stdout(predicate::str::contains("torch-cuda"));
}

#[test]
fn converts_caffe_prototxt_and_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let prototxt = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures/tiny.prototxt");
    let json = dir.path().join("tiny.json");
    cnnbench()
        .arg("convert")
        .arg(&prototxt)
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("1,026 params"));
    let out = cnnbench()
        .args(["models", "--json", "--file"])
        .arg(&json)
        .output()
        .unwrap();
    let row: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row["params"], 1026);
    assert_eq!(row["name"], "tiny-caffe");
    cnnbench()
        .args(["models", "--file"])
        .arg(&prototxt)
        .assert()
        .success()
        .stdout(predicate::str::contains("conv2a"));
    cnnbench()
        .args(["run", "-b", "2", "-n", "1", "-q", "--model-file"])
        .arg(&prototxt)
        .arg("-o")
        .arg(dir.path().join("results"))
        .assert()
        .success()
        .stdout(predicate::str::contains("tiny-caffe (32×32)"));
    cnnbench()
        .arg("convert")
        .arg(&prototxt)
        .arg(&json)
        .assert()
        .failure()
        .stderr(predicate::str::contains("must not exist yet"));
}

#[test]
fn onnx_files_are_models_too() {
    let dir = tempfile::tempdir().unwrap();
    let onnx = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures/onnx/resnet18.torchscript.onnx");
    cnnbench()
        .args(["models", "--file"])
        .arg(&onnx)
        .assert()
        .success()
        .stdout(predicate::str::contains("1,814,073,344"));
    let json = dir.path().join("r18.json");
    cnnbench()
        .arg("convert")
        .arg(&onnx)
        .arg(&json)
        .assert()
        .success();
    cnnbench()
        .args([
            "run",
            "--image-size",
            "32",
            "-b",
            "1",
            "-n",
            "1",
            "-q",
            "--model-file",
        ])
        .arg(&onnx)
        .arg("-o")
        .arg(dir.path().join("results"))
        .assert()
        .success();
}
