//! `cnnbench convert IN OUT.onnx`: the file holds the network and the weights asked for;
//! and, where a Python with `onnx` and `onnxruntime` is named by CNNBENCH_ONNX_PYTHON
//! (.ci/run sets it), the `onnx` checker accepts every export and ONNX Runtime computes
//! what burn-flex computes with the same weights. An int8 export (QDQ) reads back as the
//! float network it approximates, and runs.
#![allow(
    clippy::disallowed_macros,
    reason = "a test's measurements for whoever reads the test log"
)]

use crate::common::cnnbench;
use cnnbench_engine::{Engine, Mode, Precision, SessionConfig};
use cnnbench_engine_burn::BurnFlexEngine;
use cnnbench_graph::{cosine_similarity, max_relative_error, Graph, HostTensor, Op, Weights};
use cnnbench_import::load_model_with_weights;
use predicates::prelude::*;
use std::path::Path;

fn export(args: &[&str]) -> assert_cmd::assert::Assert {
    cnnbench().arg("convert").args(args).assert()
}

#[test]
fn a_zoo_model_exports_with_seeded_weights_that_import_back() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("m.onnx");
    let out_text = out.to_str().unwrap();
    export(&[
        "mobilenet-v2",
        out_text,
        "--image-size",
        "32",
        "--seed",
        "9",
    ])
    .success()
    .stderr(predicate::str::contains("ONNX opset 17"))
    .stderr(predicate::str::contains("random, seed 9"));
    let imported = load_model_with_weights(&out).unwrap();
    let g = cnnbench_zoo::build("mobilenet-v2", Some([3, 32, 32])).unwrap();
    assert_eq!(imported.graph.params(), g.params());
    assert_eq!(imported.graph.macs(), g.macs());
    assert_eq!(imported.weights, Weights::initial(&g, 9));
    // The file exists now: never overwritten.
    export(&["mobilenet-v2", out_text])
        .failure()
        .stderr(predicate::str::contains("exists already"));
}

#[test]
fn given_weights_are_the_ones_written() {
    let dir = tempfile::tempdir().unwrap();
    let g = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let weights = Weights::initial(&g, 4);
    let w_path = dir.path().join("w.safetensors");
    weights.save(&w_path).unwrap();
    let out = dir.path().join("r.onnx");
    export(&[
        "resnet18",
        out.to_str().unwrap(),
        "--image-size",
        "32",
        "--weights",
        w_path.to_str().unwrap(),
    ])
    .success()
    .stderr(predicate::str::contains("w.safetensors"));
    assert_eq!(load_model_with_weights(&out).unwrap().weights, weights);
    // An ONNX input with complete weights keeps them through a second export.
    let again = dir.path().join("again.onnx");
    export(&[out.to_str().unwrap(), again.to_str().unwrap()]).success();
    assert_eq!(load_model_with_weights(&again).unwrap().weights, weights);
}

#[test]
fn bad_requests_say_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let onnx = dir.path().join("x.onnx");
    let onnx = onnx.to_str().unwrap();
    export(&[
        "resnet18",
        onnx,
        "--seed",
        "1",
        "--weights",
        "w.safetensors",
    ])
    .failure()
    .stderr(predicate::str::contains("exclude each other"));
    export(&["no-such-model", onnx])
        .failure()
        .stderr(predicate::str::contains("neither a file nor a zoo model"));
    let json = dir.path().join("x.json");
    export(&["resnet18", json.to_str().unwrap(), "--seed", "1"])
        .failure()
        .stderr(predicate::str::contains("apply to an ONNX output"));
}

/// burn-flex's inference output for `graph` with `weights` on `input`.
fn burn_output(graph: &Graph, weights: &Weights, input: &HostTensor) -> HostTensor {
    let engine = BurnFlexEngine::new(Some(1)).unwrap();
    let config = SessionConfig {
        mode: Mode::Infer,
        batch_size: input.shape[0],
        seed: 0,
        precision: Precision::F32,
        deterministic: true,
        calibration: None,
    };
    let mut s = engine.prepare(graph, &config).unwrap();
    s.import_weights(weights).unwrap();
    s.set_input(input).unwrap();
    s.forward().unwrap();
    s.output().unwrap()
}

fn write_f32(path: &Path, data: &[f32]) {
    let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

fn read_f32(path: &Path) -> Vec<f32> {
    std::fs::read(path)
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

#[test]
fn onnx_checker_and_onnxruntime_accept_every_zoo_export_and_agree_with_burn_flex() {
    let Some(python) = std::env::var_os("CNNBENCH_ONNX_PYTHON") else {
        cnnbench_engine::test_prerequisite::skip_missing(
            "onnx_checker_and_onnxruntime_accept_every_zoo_export_and_agree_with_burn_flex",
            "CNNBENCH_ONNX_PYTHON is not set (a python with `pip install onnx onnxruntime`; .ci/run sets it)",
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut manifest = Vec::new();
    let mut cases = Vec::new();
    for entry in cnnbench_zoo::entries() {
        // VGG's 138 M weights add a minute and no op the others lack.
        if entry.name.starts_with("vgg") {
            continue;
        }
        let size = entry.smallest_input();
        let g = cnnbench_zoo::build(entry.name, Some(size)).unwrap();
        let model = format!("{}.onnx", entry.name);
        let size_arg = format!("{}x{}", size[1], size[2]);
        export(&[
            entry.name,
            dir.path().join(&model).to_str().unwrap(),
            "--image-size",
            &size_arg,
            "--seed",
            "5",
        ])
        .success();
        let input = HostTensor::standard_normal(vec![2, size[0], size[1], size[2]], 11);
        write_f32(
            &dir.path().join(format!("{}.in.bin", entry.name)),
            &input.data,
        );
        manifest.push(serde_json::json!({
            "model": model,
            "input": format!("{}.in.bin", entry.name),
            "shape": input.shape,
            "output": format!("{}.out.bin", entry.name),
        }));
        cases.push((entry.name, g, input));
    }
    let manifest_path = dir.path().join("manifest.json");
    std::fs::write(&manifest_path, serde_json::to_string(&manifest).unwrap()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_onnx.py");
    let run = std::process::Command::new(&python)
        .arg(&script)
        .arg(&manifest_path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for (name, g, input) in cases {
        let reference = burn_output(&g, &Weights::initial(&g, 5), &input);
        let ort = HostTensor::new(
            reference.shape.clone(),
            read_f32(&dir.path().join(format!("{name}.out.bin"))),
        )
        .unwrap();
        let err = max_relative_error(&ort, &reference).unwrap();
        eprintln!("{name}: onnxruntime vs burn-flex max relative error {err:.2e}");
        assert!(
            err < 1e-3,
            "{name}: onnxruntime differs from burn-flex by {err:.2e}"
        );
    }
}

/// The int8 file `convert --precision int8` writes reads back (issue #47) as the float
/// network it approximates: batch norms folded into their convolutions, the ReLUs the
/// quantisation absorbed put back, the weights the file's int8 values dequantised. So
/// on burn-flex it computes what the float network computes with the same (seed 1)
/// weights, up to the weights' int8 rounding; converted to a model JSON, it runs.
#[test]
fn an_int8_export_reads_back_as_the_float_network_it_approximates_and_runs() {
    let dir = tempfile::tempdir().unwrap();
    let int8 = dir.path().join("a.onnx");
    let int8_text = int8.to_str().unwrap();
    let json = dir.path().join("b.json");
    export(&[
        "resnet18",
        int8_text,
        "--precision",
        "int8",
        "--image-size",
        "32",
    ])
    .success()
    .stderr(predicate::str::contains("QDQ"));
    export(&[int8_text, json.to_str().unwrap()])
        .success()
        .stderr(predicate::str::contains("(complete)"))
        .stderr(predicate::str::contains("int8 in QDQ form"))
        .stderr(predicate::str::contains("17 ReLUs put back"));

    let imported = load_model_with_weights(&int8).unwrap();
    let g = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let h = &imported.graph;
    assert!(imported.weights_complete(), "{:?}", imported.notes);
    assert_eq!(h.output_shape(), g.output_shape());
    let norm = |op: &Op| matches!(op, Op::BatchNorm2d(_));
    let normalised: u64 = g
        .nodes()
        .iter()
        .filter(|n| norm(&n.op))
        .map(|n| n.shape.as_chw().map_or(0, |(c, _, _)| c as u64))
        .sum();
    // Each batch norm's γ and β gone, its convolution given a bias.
    assert_eq!(h.params(), g.params() - normalised);
    assert!(h.nodes().iter().all(|n| !norm(&n.op)));
    let kinds = |g: &Graph| -> Vec<String> {
        g.nodes()
            .iter()
            .filter(|n| !norm(&n.op))
            .map(|n| format!("{} {}", n.name, n.op.tag()))
            .collect()
    };
    assert_eq!(kinds(h), kinds(&g), "the same ops, names and order");
    let input = HostTensor::standard_normal(vec![2, 3, 32, 32], 11);
    let reference = burn_output(&g, &Weights::initial(&g, 1), &input);
    let back = burn_output(h, &imported.weights, &input);
    let cosine = cosine_similarity(&back, &reference).unwrap();
    let err = max_relative_error(&back, &reference).unwrap();
    eprintln!(
        "resnet18 int8 read back against f32: cosine {cosine:.6}, max relative error {err:.2e}"
    );
    assert!(cosine > 0.999, "cosine {cosine}");

    let results = dir.path().join("results");
    cnnbench()
        .args(["run", "--model-file"])
        .arg(&json)
        .args([
            "--engine",
            "burn-flex",
            "--mode",
            "infer",
            "-b",
            "1",
            "-n",
            "1",
            "-q",
            "-o",
        ])
        .arg(&results)
        .assert()
        .success();

    let Some(python) = std::env::var_os("CNNBENCH_ONNX_PYTHON") else {
        cnnbench_engine::test_prerequisite::skip_missing(
            "an_int8_export_reads_back_as_the_float_network_it_approximates_and_runs (its onnx checker part)",
            "CNNBENCH_ONNX_PYTHON is not set (a python with `pip install onnx onnxruntime`; .ci/run sets it)",
        );
        return;
    };
    let check = std::process::Command::new(&python)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .args([
            "-c",
            "import sys, onnx; onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True); print('onnx checker: ok')",
            int8_text,
        ])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// `--calibration-images`: an int8 export calibrated on the user's images says so (and
/// not that the accuracy on real data went unmeasured), and its ranges are the images'
/// (another file than random calibration writes); without int8 it is refused.
#[test]
fn an_int8_export_calibrates_on_the_users_images() {
    let dir = tempfile::tempdir().unwrap();
    let folder = crate::common::image_folder(dir.path(), 3);
    let folder_text = folder.to_str().unwrap();
    let (real, random) = (dir.path().join("real.onnx"), dir.path().join("random.onnx"));
    let common = ["--precision", "int8", "--image-size", "32"];
    let mut args = vec!["resnet18", real.to_str().unwrap()];
    args.extend(common);
    args.extend(["--calibration-images", folder_text, "--calibration", "2"]);
    export(&args)
        .success()
        .stderr(predicate::str::contains("(2 images from"))
        .stderr(predicate::str::contains("not measured").not());
    let mut args = vec!["resnet18", random.to_str().unwrap()];
    args.extend(common);
    export(&args).success().stderr(predicate::str::contains(
        "accuracy on real data not measured",
    ));
    assert_ne!(
        std::fs::read(&real).unwrap(),
        std::fs::read(&random).unwrap()
    );
    let f32_file = dir.path().join("f32.onnx");
    export(&[
        "resnet18",
        f32_file.to_str().unwrap(),
        "--calibration-images",
        folder_text,
    ])
    .failure()
    .stderr(predicate::str::contains("add --precision int8"));
}
