//! End-to-end runs of the modern families (issue 7) at 64×64, batch 2: each trains (or
//! steps) through the CLI and writes a result whose counts are the zoo's.

use crate::common::*;

use serde_json::Value;

/// Runs one model for one pass and returns its result document.
fn run(model: &str, size: usize, mode: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let size_arg = size.to_string();
    let output = cnnbench()
        .args([
            "run",
            model,
            "--image-size",
            &size_arg,
            "-b",
            "2",
            "-n",
            "1",
            "--warmup",
            "0",
            "--mode",
            mode,
            "-q",
            "-o",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{model}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{model}: {files:?}");
    let v: Value = read_json(&files[0]);
    assert_eq!(v["config"]["mode"], mode, "{model}");
    assert_eq!(
        v["config"]["image_size"],
        serde_json::json!([size, size]),
        "{model}"
    );
    v
}

#[test]
fn modern_models_train_at_64() {
    for (model, params) in [
        ("mobilenet-v3-large", 5_483_032u64),
        ("efficientnet-b0", 5_288_548),
        ("shufflenet-v2-x1.0", 2_278_604),
        ("regnet-y-400mf", 4_344_144),
        ("mobilenet_v2", 3_504_872),
        ("mnasnet1.0", 4_383_312),
        ("squeezenet1_0", 1_248_424),
        ("densenet121", 7_978_856),
        ("resnext50-32x4d", 25_028_904),
        ("wide-resnet50-2", 68_883_240),
    ] {
        let v = run(model, 64, "train");
        assert_eq!(v["model"]["params"], params, "{model}");
        assert_eq!(v["summary"]["total"]["count"], 1, "{model}");
    }
}

#[test]
fn convnext_steps_at_64() {
    let v = run("convnext_tiny", 64, "step");
    assert_eq!(v["model"]["name"], "convnext-tiny");
    assert_eq!(v["model"]["params"], 28_589_128u64);
}

#[test]
fn inception_v3_runs_at_its_smallest_size() {
    let v = run("inception_v3", 75, "train");
    assert_eq!(v["model"]["name"], "inception-v3");
    assert_eq!(v["model"]["params"], 23_834_568u64);
}

#[test]
fn models_lists_the_modern_families_with_torchvision_counts() {
    let rows: Vec<Value> = json_stdout(cnnbench().args(["models", "--json"]));
    for (name, params, macs) in [
        ("mobilenet-v2", 3_504_872u64, 300_774_272u64),
        ("mobilenet-v3-large", 5_483_032, 216_589_760),
        ("efficientnet-b0", 5_288_548, 385_814_752),
        ("densenet121", 7_978_856, 2_834_161_664),
        ("convnext-tiny", 28_589_128, 4_455_531_264),
        ("regnet-y-400mf", 4_344_144, 401_842_848),
        ("squeezenet1.0", 1_248_424, 818_924_576),
        ("inception-v3", 23_834_568, 5_713_216_096),
        ("resnext50-32x4d", 25_028_904, 4_230_479_872),
        ("wide-resnet50-2", 68_883_240, 11_398_021_120),
        ("shufflenet-v2-x1.0", 2_278_604, 144_907_992),
        ("mnasnet1.0", 4_383_312, 314_415_872),
    ] {
        let row = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} is not listed"));
        assert_eq!(row["params"], params, "{name}");
        assert_eq!(row["macs"], macs, "{name}");
    }
}

#[test]
fn every_modern_model_infers_and_convnext_trains() {
    for (model, size) in [
        ("mobilenet-v2", 64),
        ("mobilenet-v3-large", 64),
        ("efficientnet-b0", 64),
        ("densenet121", 64),
        ("convnext-tiny", 64),
        ("regnet-y-400mf", 64),
        ("squeezenet1.0", 64),
        ("inception-v3", 75),
        ("resnext50-32x4d", 64),
        ("wide-resnet50-2", 64),
        ("shufflenet-v2-x1.0", 64),
        ("mnasnet1.0", 64),
    ] {
        let v = run(model, size, "infer");
        assert!(
            v["samples"].get("backward").is_none(),
            "{model}: infer has no backward"
        );
        assert!(
            v["summary"]["forward"]["median"].as_f64().unwrap() > 0.0,
            "{model}"
        );
    }
    let v = run("convnext-tiny", 64, "train");
    assert_eq!(v["model"]["params"], 28_589_128u64);
}
