//! The libtorch engines end to end (built with `--features torch`): every op's lowering
//! and every zoo model against the burn engine through `verify`, each mode through
//! `run`, precision and device errors. Run by `.ci/run` after it installs PyTorch.
#![cfg(feature = "torch")]

mod common;

use cnnbench_bench::verify::{verify, VerifyRequest, DEFAULT_TOLERANCE};
use cnnbench_engine::Engine;
use cnnbench_engine_burn::BurnFlexEngine;
use cnnbench_engine_torch::{TorchBackend, TorchEngine, TorchOptions};
use cnnbench_graph::ops::*;
use cnnbench_graph::{Graph, GraphBuilder, Pad2d, T};
use common::{cnnbench, result_files};
use predicates::prelude::*;

fn engines() -> (BurnFlexEngine, TorchEngine) {
    (
        BurnFlexEngine::new(None).unwrap(),
        TorchEngine::new(TorchBackend::Cpu, &TorchOptions::default()).unwrap(),
    )
}

fn single(name: &str, input: [usize; 3], f: impl FnOnce(&mut GraphBuilder, &T) -> T) -> Graph {
    let mut b = GraphBuilder::new(name, input);
    let x = b.input();
    let y = f(&mut b, &x);
    b.finish(&y).unwrap()
}

fn assert_verifies(graph: &Graph, batch: usize, reference: &dyn Engine, candidate: &dyn Engine) {
    let request = VerifyRequest {
        batch_size: batch,
        seed: 0,
        tolerance: DEFAULT_TOLERANCE,
        weights: None,
    };
    let report = verify(graph, reference, candidate, &request)
        .unwrap_or_else(|e| panic!("{}: {e:#}", graph.name()));
    let failures: Vec<String> = report
        .failures()
        .iter()
        .map(|c| {
            format!(
                "{} {:.2e} (floor {:.2e})",
                c.name, c.max_relative_error, c.noise_floor
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} at {:?}: {}",
        graph.name(),
        report.input,
        failures.join(", ")
    );
}

/// Small graphs covering every op and option of the IR. On these the two engines agree
/// far within the fp32 tolerance itself (the noise floor matters only for deep nets).
fn every_op() -> Vec<Graph> {
    let asymmetric = Pad2d {
        top: 1,
        left: 0,
        bottom: 2,
        right: 1,
    };
    // Pooling padding may be at most half the kernel.
    let uneven = Pad2d {
        top: 1,
        left: 0,
        bottom: 0,
        right: 1,
    };
    vec![
        single("conv", [4, 7, 6], |b, x| {
            let y = b.conv(
                "grouped",
                x,
                Conv2d::new(6, [3, 2])
                    .stride([2, 1])
                    .groups(2)
                    .dilation([1, 2])
                    .padding(asymmetric),
            );
            b.conv("nobias", &y, Conv2d::new(4, 3).padding(1).bias(false))
        }),
        single("bn-relu-linear", [3, 5, 5], |b, x| {
            let y = b.batch_norm("bn", x);
            let y = b.batch_norm_with("bn2", &y, 1e-3, 0.01);
            let y = b.relu("relu", &y);
            let f = b.flatten("flat", &y);
            let f = b.dropout("drop", &f, 0.5);
            b.linear("fc", &f, 5)
        }),
        single("lrn", [6, 4, 4], |b, x| {
            b.lrn(
                "lrn",
                x,
                LocalResponseNorm {
                    size: 5,
                    alpha: 1e-1,
                    beta: 0.75,
                    k: 2.0,
                },
            )
        }),
        single("pools", [3, 9, 9], |b, x| {
            let c = b.conv("c", x, Conv2d::new(4, 1));
            let m = b.max_pool("ceil", &c, MaxPool2d::new(3, 2).ceil_mode(true));
            let p = b.max_pool("pad", &c, MaxPool2d::new(3, 2).padding(1));
            let u = b.max_pool("uneven", &c, MaxPool2d::new(3, 2).padding(uneven));
            let mut avg = AvgPool2d::new(3, 2);
            avg.padding = Pad2d::same(1);
            avg.count_include_pad = false;
            avg.ceil_mode = true;
            let a = b.avg_pool("avg", &c, avg);
            let a2 = b.avg_pool("avg-uneven", &c, {
                let mut p = AvgPool2d::new(3, 2);
                p.padding = uneven;
                p
            });
            let g1 = b.adaptive_avg_pool("g1", &m, 1, 1);
            let g2 = b.adaptive_avg_pool("g2", &p, 1, 1);
            let g3 = b.adaptive_avg_pool("g3", &a, 1, 1);
            let g4 = b.adaptive_avg_pool("g4", &a2, 1, 1);
            let g5 = b.adaptive_avg_pool("g5", &u, 2, 3);
            let g5 = b.adaptive_avg_pool("g5b", &g5, 1, 1);
            b.concat("cat", &[&g1, &g2, &g3, &g4, &g5])
        }),
        single("activations", [2, 4, 4], |b, x| {
            let c = b.conv("c", x, Conv2d::new(6, 1));
            let y = b.relu6("relu6", &c);
            let y = b.silu("silu", &y);
            let y = b.gelu("gelu", &y);
            let y = b.hardswish("hardswish", &y);
            let y = b.hardsigmoid("hardsigmoid", &y);
            let y = b.sigmoid("sigmoid", &y);
            let f = b.flatten("flat", &y);
            let f = b.gelu("gelu_flat", &f);
            let f = b.hardswish("hardswish_flat", &f);
            b.linear("fc", &f, 4)
        }),
        single("se-mul", [4, 5, 5], |b, x| {
            let s = b.adaptive_avg_pool("squeeze", x, 1, 1);
            let s = b.conv("fc1", &s, Conv2d::new(2, 1));
            let s = b.silu("act", &s);
            let s = b.conv("fc2", &s, Conv2d::new(4, 1));
            let s = b.sigmoid("gate", &s);
            let y = b.mul("scale", x, &s);
            let z = b.mul("scale2", &s, &y);
            b.mul("same", &z, x)
        }),
        single("layer-norm", [5, 3, 4], |b, x| {
            let y = b.layer_norm2d("ln", x, 1e-6);
            let y = b.conv("c", &y, Conv2d::new(3, 1));
            let y = b.layer_scale("gamma", &y, 0.7);
            let y = b.stochastic_depth("drop_path", &y, 0.2);
            b.sum("add", &[&y, &y])
        }),
        single("shuffle", [6, 3, 3], |b, x| {
            let left = b.slice_channels("left", x, 0, 2);
            let right = b.slice_channels("right", x, 2, 6);
            let right = b.conv("c", &right, Conv2d::new(4, 3).padding(1));
            let cat = b.concat("cat", &[&left, &right]);
            b.channel_shuffle("shuffle", &cat, 3)
        }),
    ]
}

#[test]
fn every_op_lowers_to_what_burn_computes() {
    let (burn, torch) = engines();
    for graph in every_op() {
        assert_verifies(&graph, 3, &burn, &torch);
        // And the other way round: torch's initialisation, burn as the candidate.
        assert_verifies(&graph, 3, &torch, &burn);
    }
}

#[test]
fn every_zoo_model_computes_the_same_on_both_engines() {
    let (burn, torch) = engines();
    for entry in cnnbench_zoo::entries() {
        let [c, h, w] = entry.smallest_input();
        let graph = (entry.build)([c, h.max(32), w.max(32)]).unwrap();
        // Four images, so batch statistics never come from one or two values.
        assert_verifies(&graph, 4, &burn, &torch);
    }
}

fn run_json(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let out = dir.join("results");
    let mut args = vec![
        "run",
        "resnet18",
        "--engine",
        "torch-cpu",
        "--image-size",
        "32",
        "-b",
        "2",
        "--passes",
        "2",
        "-q",
        "-o",
    ];
    let out_str = out.to_str().unwrap().to_string();
    args.push(&out_str);
    args.extend_from_slice(extra);
    cnnbench().args(&args).assert().success();
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn runs_every_mode_and_records_libtorch() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["train", "infer", "step"] {
        let r = run_json(dir.path(), &["--mode", mode]);
        assert_eq!(r["engine"]["name"], "torch-cpu");
        assert_eq!(r["engine"]["framework"], "libtorch");
        let version = r["engine"]["libraries"]["libtorch"].as_str().unwrap();
        assert!(version.starts_with("2.11.0"), "{version}");
        assert_eq!(r["config"]["mode"], mode);
        let phases = r["samples"].as_object().unwrap();
        let expected = match mode {
            "train" => 3,
            "infer" => 2,
            _ => 4,
        };
        assert_eq!(phases.len(), expected, "{phases:?}");
    }
}

#[test]
fn bf16_runs_on_the_cpu_and_is_recorded_f16_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let r = run_json(dir.path(), &["--precision", "bf16"]);
    assert_eq!(r["config"]["precision"], "bf16");
    cnnbench()
        .args([
            "run",
            "resnet18",
            "--engine",
            "torch-cpu",
            "--precision",
            "f16",
            "-q",
            "-o",
        ])
        .arg(dir.path().join("r"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("use --precision bf16"));
}

fn gpu_present() -> bool {
    std::path::Path::new("/dev/nvidia0").exists()
}

#[test]
fn cuda_engines_say_why_they_cannot_run_without_a_gpu() {
    if gpu_present() {
        return; // gpu-check.sh covers machines with a GPU
    }
    cnnbench()
        .arg("engines")
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"torch-cpu\s*\|\s*yes").unwrap())
        .stdout(predicate::str::contains("no CUDA GPU is visible"));
    let dir = tempfile::tempdir().unwrap();
    for engine in ["torch-cuda", "torch-cuda-nocudnn"] {
        cnnbench()
            .args(["run", "resnet18", "--engine", engine, "-q", "-o"])
            .arg(dir.path().join("r"))
            .assert()
            .failure()
            .stderr(predicate::str::contains(format!(
                "engine {engine} cannot run: no CUDA GPU is visible"
            )));
    }
}

#[test]
fn verify_command_passes_and_reports_json() {
    let out = cnnbench()
        .args([
            "verify",
            "alexnet",
            "--image-size",
            "63",
            "--engines",
            "burn-flex,torch-cpu",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let report: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(report["reference"], "burn-flex");
    assert_eq!(report["candidate"], "torch-cpu");
    let comparisons = report["comparisons"].as_array().unwrap();
    // Two outputs and 16 gradients (8 layers with weight and bias).
    assert_eq!(comparisons.len(), 18);
    for c in comparisons {
        assert!(c["max_relative_error"].as_f64().unwrap() < 1e-4, "{c}");
    }
}
