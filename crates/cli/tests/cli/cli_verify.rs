//! `cnnbench verify` in every build: bad requests are one clear line, and an engine
//! verified against itself agrees exactly.

use crate::common::{cnnbench, fails_saying, image_folder, json_stdout, run_ok};
use predicates::prelude::*;

#[test]
fn bad_requests_fail_with_one_clear_line() {
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["verify", "resnet18", "--engines", "burn-flex"],
            "--engines takes exactly two engines, reference first",
        ),
        (vec!["verify"], "name a zoo model or give --model-file FILE"),
        (
            vec!["verify", "resnet18", "--engines", "burn-flex,warp"],
            "unknown engine \"warp\"",
        ),
        (
            vec!["verify", "resnet18", "--tolerance=-1"],
            "--tolerance must be a finite number ≥ 0",
        ),
        // Infinity would pass every comparison (hostile input, round three).
        (
            vec!["verify", "resnet18", "--tolerance", "inf"],
            "--tolerance must be a finite number ≥ 0",
        ),
        // A setting of one of the two engines goes to that engine alone: --python is
        // the pytorch engine's, so burn-flex does not refuse it (the pytorch engine then
        // says that this Python cannot be run); a key neither has is refused.
        (
            vec![
                "verify",
                "resnet18",
                "--engines",
                "burn-flex,pytorch",
                "--python",
                "/nonexistent/python3",
            ],
            "the Python /nonexistent/python3 (from --python) cannot be run",
        ),
        (
            vec![
                "verify",
                "resnet18",
                "--engines",
                "burn-flex,pytorch",
                "--engine-setting",
                "hint=throughput",
            ],
            "engine burn-flex: it has no setting `hint`",
        ),
        (vec!["verify", "nosuchnet"], "unknown model \"nosuchnet\""),
        (
            vec![
                "verify",
                "resnet18",
                "--weights",
                "/nonexistent/w.safetensors",
                "--engines",
                "burn-flex,burn-flex",
            ],
            "cannot use --weights /nonexistent/w.safetensors",
        ),
    ];
    for (args, expected) in cases {
        cnnbench().args(&args).assert().failure().stderr(
            predicate::str::contains(expected).and(predicate::str::contains("panicked").not()),
        );
    }
    if !cfg!(feature = "torch") {
        // The default pair needs the libtorch engines.
        cnnbench()
            .args(["verify", "resnet18"])
            .assert()
            .failure()
            .stderr(predicate::str::contains(
                "engine torch-cpu cannot run: not in this build: build with `--features torch`",
            ));
    }
}

#[test]
fn an_engine_against_itself_agrees_exactly() {
    let out = cnnbench()
        .args([
            "verify",
            "squeezenet1.0",
            "--image-size",
            "32",
            "-b",
            "2",
            "--engines",
            "burn-flex,burn-flex",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let comparisons = report["comparisons"].as_array().unwrap();
    // Two outputs and a weight and bias gradient for each of the 26 convolutions.
    assert_eq!(comparisons.len(), 2 + 52);
    for c in comparisons {
        assert_eq!(c["max_relative_error"].as_f64(), Some(0.0), "{c}");
    }
}

/// `--images`: the compared batch is the folder's first images and both engines' top
/// classes are compared over all of them; an engine against itself agrees on every one.
/// A folder with fewer images than the batch is refused, saying so.
#[test]
fn the_users_images_are_compared_class_by_class() {
    let dir = tempfile::tempdir().unwrap();
    let folder = image_folder(dir.path(), 3);
    let verify = |batch: &str| {
        let mut cmd = cnnbench();
        cmd.args([
            "verify",
            "resnet18",
            "--image-size",
            "32",
            "-b",
            batch,
            "--engines",
            "burn-flex,burn-flex",
            "--images",
        ])
        .arg(&folder);
        cmd
    };
    let out = run_ok(&mut verify("2"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("top-1 agreement: the same class for 3 of 3 images (100.0%); the reference's class among the candidate's top 5 for 3 (100.0%); images: 3 images from"),
        "{text}"
    );
    let report: serde_json::Value = json_stdout(verify("2").arg("--json"));
    assert_eq!(report["agreement"]["images"], 3, "{report}");
    assert_eq!(report["agreement"]["top1"], 3, "{report}");
    fails_saying(
        &mut verify("4"),
        "holds 3 images, fewer than the batch of 4",
    );
}

/// `--localize` compares every node's output, in both modes, and the gradient arriving at
/// every node in training, and says where the engines part (nowhere, for an engine
/// against itself); the JSON lists every node.
#[test]
fn localize_compares_every_node_in_both_modes() {
    let args = [
        "verify",
        "resnet18",
        "--engines",
        "burn-flex,burn-flex",
        "--image-size",
        "32",
        "-b",
        "1",
        "--localize",
    ];
    cnnbench().args(args).assert().success().stdout(
        predicate::str::contains("train: every node's output agrees")
            .and(predicate::str::contains(
                "infer: every node's output agrees",
            ))
            .and(predicate::str::contains(
                "train gradient: the gradient arriving at every node agrees",
            ))
            .and(predicate::str::contains(
                "node outputs and gradients shown: --all lists every one",
            )),
    );
    let out = cnnbench().args(args).arg("--json").assert().success();
    let report: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    let nodes = report["nodes"].as_array().unwrap();
    let train: Vec<&str> = nodes
        .iter()
        .filter(|n| n["mode"] == "train")
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    let infer = nodes.iter().filter(|n| n["mode"] == "infer").count();
    assert_eq!(train.len(), infer);
    // And backward: the gradient arriving at each node, in graph order too.
    let gradients: Vec<&str> = nodes
        .iter()
        .filter(|n| n["mode"] == "train gradient")
        .map(|n| n["node"].as_str().unwrap())
        .collect();
    assert_eq!(gradients, train);
    assert_eq!(train.first(), Some(&"conv1"));
    assert_eq!(train.last(), Some(&"fc"));
    assert!(
        nodes.iter().all(|n| n["max_relative_error"] == 0.0),
        "{nodes:?}"
    );
    assert!(report.get("first_departures").is_none());
    // Without the flag, no node is compared.
    let plain = cnnbench()
        .args(&args[..args.len() - 1])
        .arg("--json")
        .assert()
        .success();
    let plain: serde_json::Value = serde_json::from_slice(&plain.get_output().stdout).unwrap();
    assert!(plain.get("nodes").is_none());
}
