//! The ort-cpu engine end to end (built with `--features ort`): an inference run that
//! records ONNX Runtime's version and the settings that change its numbers, `verify`
//! against burn-flex from the command line, a per-node profile, the refusal of training
//! modes, and the error when the library is missing. (Every op and the suite's zoo models
//! against burn-flex are the engine crate's conformance tests.)
//!
//! ONNX Runtime's library is found as a user's run finds it (ORT_DYLIB_PATH, the active
//! venv, `.venv-torch`, python3): where it is absent these tests fail with the install
//! line in cnnbench's error, they do not skip.
#![cfg(feature = "ort")]

use crate::common::*;
use predicates::prelude::*;

#[test]
fn an_inference_run_records_onnx_runtime_and_its_settings() {
    let result = tiny_run(
        "mobilenet-v2",
        "ort-cpu",
        &["--mode", "infer", "--threads", "2"],
    );
    let engine = &result["engine"];
    assert_eq!(engine["name"], "ort-cpu", "{engine}");
    assert_eq!(engine["framework"], "onnxruntime", "{engine}");
    // ONNX Runtime's own version string, as the library reports it.
    let version = engine["framework_version"].as_str().unwrap();
    assert!(
        version.starts_with("1.") && version.split('.').count() == 3,
        "{engine}"
    );
    assert_eq!(engine["libraries"]["onnxruntime"], version, "{engine}");
    assert_eq!(engine["threads"], 2, "{engine}");
    let settings = &engine["settings"];
    assert_eq!(settings["intra_op_threads"], "2", "{engine}");
    assert_eq!(settings["inter_op_threads"], "1", "{engine}");
    assert_eq!(
        settings["graph_optimization_level"], "all (ORT_ENABLE_ALL)",
        "{engine}"
    );
    assert_eq!(
        settings["execution_provider"], "CPUExecutionProvider",
        "{engine}"
    );
}

/// `graph-optimization`, declared by the engine's crate alone, reaches ONNX Runtime from
/// the generic flag, is recorded as given and labels the configuration.
#[test]
fn the_graph_optimization_setting_reaches_onnx_runtime_and_the_label() {
    let result = tiny_run(
        "resnet18",
        "ort-cpu",
        &[
            "--mode",
            "infer",
            "--engine-setting",
            "graph-optimization=basic",
        ],
    );
    let engine = &result["engine"];
    assert_eq!(
        engine["settings"]["graph_optimization_level"], "basic (ORT_ENABLE_BASIC)",
        "{engine}"
    );
    assert_eq!(
        engine["variant"],
        serde_json::json!(["graph optimization basic"])
    );
    assert_eq!(
        result["spec"]["engine_options"]["settings"],
        serde_json::json!({"graph-optimization": "basic"})
    );
}

#[test]
fn verify_against_burn_flex_compares_the_inference_output() {
    verify_against_burn_flex("ort-cpu", &[])
        .stdout(predicate::str::contains("output (infer)"))
        .stdout(predicate::str::contains(
            "compared: the inference output only (ort-cpu cannot train)",
        ));
}

#[test]
fn an_inference_profile_times_every_node() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.json");
    cnnbench()
        .args([
            "profile", "resnet18", "--engine", "ort-cpu", "--mode", "infer",
        ])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q", "-o"])
        .arg(&profile)
        .assert()
        .success();
    let doc: serde_json::Value = read_json(&profile);
    assert_eq!(doc["engine"]["name"], "ort-cpu", "{}", doc["engine"]);
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert!(nodes.len() > 20, "{} nodes", nodes.len());
}

/// int8 through the QDQ export: `peak` measures its ceilings and `profile` its layers,
/// each graph calibrated on burn-flex first as `run` calibrates, and the profile sets
/// them against the int8 roofs.
#[test]
fn an_int8_peak_and_profile_calibrate_each_graph_and_draw_the_int8_roofline() {
    let dir = tempfile::tempdir().unwrap();
    let peak: serde_json::Value = json_stdout(
        cnnbench()
            .env("XDG_CACHE_HOME", dir.path())
            .args([
                "peak",
                "--engine",
                "ort-cpu",
                "--precision",
                "int8",
                "--json",
                "-n",
                "1",
            ])
            .args(["--size", "64", "--stream-mi", "1", "--conv-channels", "8"])
            .args(["--conv-size", "8", "--conv-batch", "1"]),
    );
    assert_eq!(peak["precision"], "int8", "{peak}");
    assert!(
        peak["matmul"]["gflops_per_s"].as_f64().unwrap() > 0.0,
        "{peak}"
    );
    let doc: serde_json::Value = json_stdout(
        cnnbench()
            .env("XDG_CACHE_HOME", dir.path())
            .args([
                "profile", "resnet18", "--engine", "ort-cpu", "--mode", "infer",
            ])
            .args([
                "--precision",
                "int8",
                "--image-size",
                "32",
                "-b",
                "1",
                "--passes",
                "1",
            ])
            .args(["-q", "--json"]),
    );
    assert_eq!(doc["config"]["precision"], "int8", "{}", doc["config"]);
    assert!(
        doc["roofline"]["of_roof"].as_f64().unwrap() > 0.0,
        "{}",
        doc["roofline"]
    );
    // A 3×3 convolution of 64 channels moves its weights as int8: one byte each.
    let conv = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == "layer1.0.conv1")
        .expect("layer1.0.conv1");
    let weights = 64.0 * 64.0 * 9.0;
    let activations = 2.0 * 64.0 * 8.0 * 8.0;
    assert!(
        conv["forward_bytes"].as_f64().unwrap() >= weights + activations,
        "{conv}"
    );
    assert!(
        conv["forward_bytes"].as_f64().unwrap() < 2.0 * (weights + activations),
        "{conv}"
    );
}

#[test]
fn training_is_refused_with_what_ort_cpu_runs() {
    assert_training_refused("ort-cpu");
}

#[test]
fn a_missing_library_is_a_clear_error_with_the_install_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("libonnxruntime.so.1.32.0");
    cnnbench()
        .env("ORT_DYLIB_PATH", &missing)
        .args(["run", "resnet18", "--engine", "ort-cpu", "--mode", "infer"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("engine ort-cpu cannot run"))
        .stderr(predicate::str::contains(missing.to_string_lossy().as_ref()))
        .stderr(predicate::str::contains("pip install onnxruntime==1.32.0"));
    cnnbench()
        .env("ORT_DYLIB_PATH", &missing)
        .arg("engines")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"\| ort-cpu +\| no +\|").unwrap())
        .stdout(predicate::str::contains("not here: ORT_DYLIB_PATH is"));
}

/// int8 end to end: the run quantises with burn-flex's calibration and records how and
/// what ONNX Runtime ran in int8; `choose` over two engines and two precisions ranks
/// them with their accuracy costs.
#[test]
fn an_int8_run_records_its_quantisation_and_choose_ranks_two_engines_in_two_precisions() {
    let result = tiny_run(
        "resnet18",
        "ort-cpu",
        &[
            "--mode",
            "infer",
            "--precision",
            "int8",
            "--calibration",
            "2",
        ],
    );
    assert_eq!(result["config"]["precision"], "int8", "{result}");
    let q = &result["quantization"];
    assert_eq!(q["calibration"]["images"], 2, "{q}");
    assert_eq!(q["calibration"]["engine"], "burn-flex", "{q}");
    assert_eq!(q["calibration"]["real_data"], false, "{q}");
    let settings = &result["engine"]["settings"];
    assert_eq!(settings["int8_mac_share"], "100.0%", "{settings}");
    let warnings = result["warnings"].to_string();
    assert!(
        warnings.contains("accuracy on real data was not measured"),
        "{warnings}"
    );
    // int8 is inference: training is refused before anything runs.
    fails_saying(
        cnnbench().args([
            "run",
            "resnet18",
            "--engine",
            "ort-cpu",
            "--mode",
            "train",
            "--precision",
            "int8",
        ]),
        "int8 is post-training quantisation for inference",
    );

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    // The accuracy costs on images of the user's (ten: int8's eight calibration images
    // are left out of its class agreement).
    let folder = image_folder(dir.path(), 10);
    let output = run_ok(
        cnnbench()
            .args([
                "choose",
                "resnet18",
                "--image-size",
                "32",
                "--engines",
                "burn-flex,ort-cpu",
                "--precisions",
                "f32,int8",
                "--passes",
                "2",
                "--warmup",
                "0",
                "-b",
                "1,2",
                "--images",
            ])
            .arg(&folder)
            .arg("-o")
            .arg(&out),
    );
    let text = String::from_utf8_lossy(&output.stdout);
    for row in [
        "| burn-flex 0.22.1, f32",
        "| ort-cpu 1.32.0, f32",
        "| ort-cpu 1.32.0, int8",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    // burn-flex has no int8: three configurations, six runs.
    assert_eq!(result_files(&out.join("runs")).len(), 6);
    let costs: serde_json::Value = read_json(&out.join("choose-accuracy.json"));
    let int8 = costs
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["engine"] == "ort-cpu" && c["precision"] == "int8")
        .unwrap_or_else(|| panic!("{costs}"));
    let error = int8["max_relative_error"].as_f64().unwrap();
    assert!(error > 0.0 && error < 0.1, "{int8}");
    assert!(int8["cosine_similarity"].as_f64().unwrap() > 0.99, "{int8}");
    let images = int8["images"].as_str().unwrap_or_default();
    assert!(
        images.starts_with("2 images from")
            && images.ends_with("(the 8 calibration images left out)"),
        "{int8}"
    );
    assert!(int8["top1_agreement"].as_f64().is_some(), "{int8}");
    assert!(text.contains("Top-1 / top-5 vs f32"), "{text}");
    assert!(text.contains("faster than"), "{text}");
}
