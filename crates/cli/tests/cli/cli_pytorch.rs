//! The pytorch engines end to end: PyTorch itself in a worker on the user's Python.
//! What needs no PyTorch runs in every build; what runs PyTorch is behind the feature
//! `pytorch-tests` (`.ci/run` turns it on after it installs torch into .venv-torch, where
//! a user's run finds it too): without torch those fail with the pip line, they do not
//! skip. Every op and zoo model against burn-flex is the engine crate's conformance
//! suite.

use crate::common::*;
use predicates::prelude::*;

#[test]
fn a_python_that_is_not_there_is_named_with_what_to_do() {
    cnnbench()
        .args(["run", "resnet18", "--engine", "pytorch"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .args(["--python", "/nonexistent/bin/python3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "engine pytorch cannot run: no Python: the Python /nonexistent/bin/python3 (from --python) cannot be run",
        ))
        .stderr(predicate::str::contains("--python PATH"));
}

#[test]
fn compile_settings_and_python_are_refused_by_engines_without_them() {
    for (engine, flags, says) in [
        (
            "burn-flex",
            &["--compile-mode", "max-autotune"][..],
            "engine burn-flex: it has no setting `compile-mode`: it has no settings of its own (`compile-mode` is a setting of pytorch-compile or pytorch-compile-cuda)",
        ),
        (
            "burn-flex",
            &["--freezing"][..],
            "(`freezing` is a setting of pytorch-compile or pytorch-compile-cuda)",
        ),
        (
            "burn-flex",
            &["--python", "/usr/bin/python3"][..],
            "(`python` is a setting of pytorch, pytorch-compile, pytorch-cuda or pytorch-compile-cuda)",
        ),
        // The eager engine takes the Python, not the compiler's settings.
        (
            "pytorch",
            &["--engine-setting", "compile-mode=max-autotune"][..],
            "engine pytorch: it has no setting `compile-mode`: its settings are python",
        ),
        (
            "pytorch-compile",
            &["--compile-mode", "fastest"][..],
            "engine pytorch-compile: setting `compile-mode`: \"fastest\" is not one of its values: default, reduce-overhead or max-autotune",
        ),
    ] {
        cnnbench()
            .args(["run", "resnet18", "--engine", engine])
            .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
            .args(flags)
            .assert()
            .failure()
            .stderr(predicate::str::contains(says));
    }
}

/// A small network as a model file: compiling it takes seconds, not minutes.
#[cfg(feature = "pytorch-tests")]
fn small_model(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("small.json");
    let model = r#"{
      "format": "cnnbench-model", "version": 1, "name": "small", "input": [3, 16, 16],
      "nodes": [
        {"name": "conv", "op": "conv2d", "in_channels": 3, "out_channels": 8, "kernel": 3,
         "padding": 1},
        {"name": "bn", "op": "batch_norm2d", "num_features": 8},
        {"name": "relu", "op": "relu"},
        {"name": "gap", "op": "adaptive_avg_pool2d", "output": 1},
        {"name": "flat", "op": "flatten"},
        {"name": "fc", "op": "linear", "in_features": 8, "out_features": 4}
      ]
    }"#;
    std::fs::write(&path, model).unwrap();
    path
}

#[cfg(feature = "pytorch-tests")]
#[test]
fn an_eager_run_records_pytorch_the_floor_and_the_workers_memory() {
    for mode in ["infer", "step"] {
        let r = tiny_run("resnet18", "pytorch", &["--mode", mode, "--threads", "2"]);
        let engine = &r["engine"];
        assert_eq!(engine["name"], "pytorch", "{engine}");
        assert_eq!(engine["framework"], "pytorch", "{engine}");
        assert_eq!(engine["framework_version"], "2.11.0", "{engine}");
        assert_eq!(engine["backend"], "eager", "{engine}");
        assert_eq!(engine["threads"], 2, "{engine}");
        assert!(
            engine["libraries"]["torch"]
                .as_str()
                .unwrap()
                .starts_with("2.11.0"),
            "{engine}"
        );
        assert!(engine["settings"]["python"].as_str().is_some(), "{engine}");
        // The pipe's round trip, recorded and not subtracted: well under a pass.
        let floor = r["call_floor_s"].as_f64().expect("call_floor_s");
        let forward = r["summary"]["forward"]["min"].as_f64().unwrap();
        assert!(
            floor > 0.0 && floor < forward,
            "floor {floor}, forward {forward}"
        );
        // The worker's memory is the run's: PyTorch alone is more than 100 MiB.
        let worker = r["memory"]["worker_peak_rss_bytes"].as_u64().unwrap();
        assert!(worker > 100 << 20, "{}", r["memory"]);
        assert!(
            r["cold_start"].get("compile_s").is_none(),
            "{}",
            r["cold_start"]
        );
    }
}

#[cfg(feature = "pytorch-tests")]
#[test]
fn a_compiled_run_records_its_compile_time_apart_from_the_passes() {
    let dir = tempfile::tempdir().unwrap();
    let model = small_model(dir.path());
    let out = dir.path().join("results");
    cnnbench()
        .args([
            "run",
            "--engine",
            "pytorch-compile",
            "--mode",
            "infer",
            "--freezing",
        ])
        .arg("--model-file")
        .arg(&model)
        .args(["-b", "2", "--passes", "3", "-q", "-o"])
        .arg(&out)
        .assert()
        .success();
    let r: serde_json::Value = only_result(&out);
    assert_watched(&r);
    let settings = &r["engine"]["settings"];
    assert_eq!(settings["compile_mode"], "default", "{settings}");
    assert_eq!(settings["freezing"], "on", "{settings}");
    assert_eq!(r["engine"]["backend"], "inductor");
    assert_eq!(
        r["spec"]["engine_options"]["settings"]["freezing"], "true",
        "{}",
        r["spec"]
    );
    assert_eq!(r["engine"]["variant"], serde_json::json!(["freezing"]));
    let compile = r["cold_start"]["compile_s"].as_f64().expect("compile_s");
    let slowest = r["summary"]["total"]["max"].as_f64().unwrap();
    // Compiling takes seconds; a pass of this network, milliseconds.
    assert!(
        compile > 10.0 * slowest,
        "compile {compile} s, slowest pass {slowest} s"
    );
    assert!(r["call_floor_s"].as_f64().is_some());
}

#[cfg(feature = "pytorch-tests")]
#[test]
fn freezing_is_refused_for_training_saying_why() {
    cnnbench()
        .args([
            "run",
            "resnet18",
            "--engine",
            "pytorch-compile",
            "--mode",
            "train",
        ])
        .args([
            "--image-size",
            "32",
            "-b",
            "1",
            "--passes",
            "1",
            "-q",
            "--freezing",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "freezing folds the weights into the compiled graph, which only inference allows",
        ));
}

#[cfg(feature = "pytorch-tests")]
#[test]
fn verify_against_burn_flex_compares_outputs_and_gradients() {
    verify_against_burn_flex("pytorch", &[])
        .stdout(predicate::str::contains("output (train)"))
        .stdout(predicate::str::contains("62 weight gradients"));
}

/// amp-bf16 against f32 on the same engine: the outputs move by more than f32's
/// tolerance (autocast really computed in bf16) and less than bf16's. (The weight
/// gradients move much more, 0.37 on AlexNet's first convolution, as torch-cpu's bf16
/// does: docs/src/commands/verify.md.)
#[cfg(feature = "pytorch-tests")]
#[test]
#[ignore = "40-60 s on 2 cores: scripts/slow-engine-tests.sh runs it (docs/src/architecture.md, \"Tests and CI time\")"]
fn verify_across_precisions_puts_amp_bf16_outputs_within_bf16s_tolerance() {
    let out = cnnbench()
        .args(["verify", "alexnet", "--image-size", "63"])
        .args([
            "--engines",
            "pytorch,pytorch",
            "--precisions",
            "f32,amp-bf16",
        ])
        .arg("--json")
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 1)), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["candidate_precision"], "amp-bf16");
    assert_eq!(report["tolerance"], 3e-2);
    let outputs = output_comparisons(&report);
    for c in outputs {
        let error = c["max_relative_error"].as_f64().unwrap();
        assert!(error > 1e-4 && error < 3e-2, "{c}");
    }
}

/// libtorch in cnnbench's process and PyTorch in the worker compute the same function.
#[cfg(all(feature = "pytorch-tests", feature = "torch"))]
#[test]
fn verify_torch_cpu_against_pytorch() {
    cnnbench()
        .args(["verify", "resnet18", "--image-size", "32"])
        .args(["--engines", "torch-cpu,pytorch"])
        .assert()
        .success();
}

/// torch-cpu's amp-bf16 is libtorch's own autocast: the same casts as `torch.autocast`
/// in the worker, so the outputs agree exactly (MobileNet-V2: depthwise and pointwise
/// convolutions, batch norms on bf16 inputs, the classifier).
#[cfg(all(feature = "pytorch-tests", feature = "torch"))]
#[test]
fn torch_cpu_amp_bf16_computes_what_torch_autocast_computes() {
    let out = cnnbench()
        .args(["verify", "mobilenet_v2", "--image-size", "32"])
        .args(["--engines", "pytorch,torch-cpu"])
        .args(["--precisions", "amp-bf16,amp-bf16", "--tolerance", "1e-6"])
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let outputs = output_comparisons(&report);
    for c in outputs {
        assert_eq!(c["max_relative_error"].as_f64(), Some(0.0), "{c}");
    }
}

/// A `verify --json` report's comparisons of the outputs: train and infer, both there.
#[cfg(feature = "pytorch-tests")]
fn output_comparisons(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    let outputs: Vec<&serde_json::Value> = report["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("output"))
        .collect();
    assert_eq!(outputs.len(), 2, "{report}");
    outputs
}

/// PyTorch's batch norm refuses to train on one value per channel; the run said so in
/// PyTorch's raw ValueError from the worker. It is refused before the worker computes,
/// naming the layer and the way out, for the eager and the compiled engine alike.
/// (Hostile input, round three.)
#[cfg(feature = "pytorch-tests")]
#[test]
fn training_batch_norm_on_one_value_is_refused_with_the_way_out() {
    for (engine, mode) in [("pytorch", "train"), ("pytorch-compile", "step")] {
        let dir = tempfile::tempdir().unwrap();
        cnnbench()
            .args(["run", "resnet18", "--engine", engine, "--mode", mode])
            .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q", "-o"])
            .arg(dir.path())
            .assert()
            .failure()
            .stderr(predicate::str::contains(
                "cannot train this: PyTorch's batch norm (torch.nn.functional) needs more than one value per channel in training, and layer 'layer4.",
            ))
            .stderr(predicate::str::contains("sees a 1×1 map at batch 1"))
            .stderr(predicate::str::contains("give -b 2 or more"))
            .stderr(predicate::str::contains("ValueError").not());
    }
}

/// pytorch-compile's int8 end to end: `run` records PyTorch's own quantiser (PT2E,
/// calibrated on the run's images) and the share oneDNN ran in int8; `choose` leaves
/// int8 without freezing out of its matrix, saying why, and ranks int8 with freezing
/// with its accuracy cost.
#[cfg(feature = "pytorch-tests")]
#[test]
fn int8_on_pytorch_compile_runs_pt2e_quantised_and_choose_leaves_out_int8_without_freezing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("int8");
    run_ok(
        cnnbench()
            .args([
                "run",
                "resnet18",
                "--engine",
                "pytorch-compile",
                "--freezing",
            ])
            .args([
                "--mode",
                "infer",
                "--precision",
                "int8",
                "--image-size",
                "32",
                "-b",
                "2",
                "--passes",
                "2",
                "-q",
                "-o",
            ])
            .arg(&out),
    );
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let result: serde_json::Value = read_json(&files[0]);
    let quantization = &result["quantization"];
    assert!(
        quantization["scheme"]
            .as_str()
            .unwrap()
            .contains("X86InductorQuantizer"),
        "{quantization}"
    );
    assert_eq!(quantization["calibration"]["engine"], "pytorch-compile");
    assert_eq!(quantization["calibration"]["images"], 8);
    assert_eq!(result["engine"]["settings"]["int8_layer_share"], "100.0%");

    let choice = dir.path().join("choice");
    let done = run_ok(
        cnnbench()
            .args(["choose", "resnet18", "--engines", "pytorch-compile"])
            .args(["--precisions", "int8", "--image-size", "32", "-b", "1,2"])
            .args(["--passes", "2", "--warmup", "0", "-o"])
            .arg(&choice),
    );
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains("pytorch-compile int8 with freezing=false left out")
            && stderr.contains("add --freezing"),
        "{stderr}"
    );
    // The matrix lists freezing as an axis and excludes its int8 cells without it.
    let matrix = std::fs::read_to_string(choice.join("choose.toml")).unwrap();
    let cells = cnnbench_plan::matrix::Matrix::parse(&matrix, &["pytorch-compile"])
        .unwrap_or_else(|e| panic!("{e}\n{matrix}"));
    let freezing: Vec<&str> = cells
        .cells
        .iter()
        .filter_map(|c| c.settings.get("freezing").map(String::as_str))
        .collect();
    assert!(
        !freezing.is_empty() && freezing.iter().all(|f| *f != "false"),
        "{matrix}"
    );
    let text = String::from_utf8_lossy(&done.stdout);
    assert!(
        text.contains("| pytorch-compile 2.11.0, int8, freezing") && text.contains("PASS"),
        "{text}"
    );
    assert_eq!(result_files(&choice.join("runs")).len(), 2);
}
