//! End-to-end tests of `cnnbench run` on tiny inputs.

use crate::common::*;

use predicates::prelude::*;
use serde_json::Value;
use std::path::Path;

/// Checks a result file against the schema and for internal consistency.
fn check_result(path: &Path, mode: &str, phases: &[&str], passes: usize) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    // The schema types must read it back.
    let typed: cnnbench_bench::BenchResult = serde_json::from_str(&text).unwrap();
    assert_eq!(typed.format, "cnnbench-result");
    assert_eq!(typed.version, cnnbench_bench::result::RESULT_VERSION);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["config"]["mode"], mode);
    assert_eq!(v["engine"]["name"], "burn-flex");
    assert!(v["engine"]["threads"].as_u64().unwrap() >= 1);
    assert!(v["machine"]["cores_logical"].as_u64().unwrap() >= 1);
    let total = typed.samples["total"].clone();
    assert_eq!(total.len(), passes);
    for (i, pass_total) in total.iter().enumerate() {
        let sum: f64 = phases.iter().map(|p| typed.samples[*p][i]).sum();
        assert!((sum - pass_total).abs() < 1e-9, "total = sum of phases");
        for p in phases {
            assert!(typed.samples[*p][i] > 0.0);
        }
    }
    let s = &typed.summary["total"];
    assert_eq!(s.count, passes);
    assert!(s.min <= s.median && s.median <= s.max);
    assert!(s.median_ci95[0] <= s.median && s.median <= s.median_ci95[1]);
    assert!(typed.throughput.images_per_s > 0.0);
    assert!(typed.throughput.gflops_per_s > 0.0);
    assert!(typed.memory.estimate_bytes > 0);
    if cfg!(target_os = "linux") {
        assert!(typed.memory.peak_rss_bytes.unwrap() > 0);
    }
    v
}

#[test]
fn every_mode_writes_a_consistent_result_file() {
    let dir = tempfile::tempdir().unwrap();
    for (mode, phases) in [
        ("train", &["forward", "backward"][..]),
        ("infer", &["forward"][..]),
        ("step", &["forward", "backward", "update"][..]),
    ] {
        let out = dir.path().join(mode);
        cnnbench()
            .args([
                "run",
                "resnet18",
                "--image-size",
                "32",
                "-b",
                "2",
                "-n",
                "2",
                "--mode",
                mode,
                "-q",
                "-o",
            ])
            .arg(&out)
            .assert()
            .success()
            .stdout(predicate::str::contains("resnet18 (32×32)"));
        let files = result_files(&out);
        assert_eq!(files.len(), 1, "{files:?}");
        let name = files[0].file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with(&format!("resnet18_{mode}_b2_32x32_")),
            "{name}"
        );
        let v = check_result(&files[0], mode, phases, 2);
        assert_eq!(v["model"]["params"], 11_689_512u64);
        assert_eq!(v["config"]["batch_size"], 2);
        assert_eq!(v["config"]["image_size"], serde_json::json!([32, 32]));
    }
}

#[test]
fn json_output_model_files_and_no_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny.json");
    std::fs::write(
        &model,
        r#"{"format": "cnnbench-model", "version": 1, "name": "tiny", "input": [3, 16, 16],
            "nodes": [
              {"name": "conv", "op": "conv2d", "in_channels": 3, "out_channels": 8, "kernel": 3, "padding": 1},
              {"name": "bn", "op": "batch_norm2d", "num_features": 8},
              {"name": "relu", "op": "relu"},
              {"name": "pool", "op": "adaptive_avg_pool2d", "output": 1},
              {"name": "flat", "op": "flatten"},
              {"name": "fc", "op": "linear", "in_features": 8, "out_features": 10}
            ]}"#,
    )
    .unwrap();
    let out = dir.path().join("results");
    for _ in 0..2 {
        let v: Value = json_stdout(
            cnnbench()
                .args(["run", "--model-file"])
                .arg(&model)
                .args(["-b", "1", "-n", "3", "--json", "-q", "-o"])
                .arg(&out),
        );
        assert_eq!(v["model"]["name"], "tiny");
        assert_eq!(v["model"]["params"], 3 * 8 * 9 + 8 + 16 + 90);
    }
    // Two runs, two files: never overwritten even within the same second.
    let files = result_files(&out);
    assert_eq!(files.len(), 2, "{files:?}");
    for f in &files {
        check_result(f, "train", &["forward", "backward"], 3);
    }
}

#[test]
fn bad_requests_fail_with_one_clear_line_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "").unwrap();
    let mut cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), "resnet18".into(), "nosuchnet".into()],
            "unknown model \"nosuchnet\"",
        ),
        (
            vec![
                "run".into(),
                "resnet18".into(),
                "--engine".into(),
                "warp".into(),
            ],
            "unknown engine \"warp\"",
        ),
        (
            vec!["run".into(), "resnet18".into(), "-b".into(), "0".into()],
            "--batch-size must be at least 1",
        ),
        (
            vec![
                "run".into(),
                "alexnet-bvlc".into(),
                "--image-size".into(),
                "16".into(),
            ],
            "too small",
        ),
        (
            vec![
                "run".into(),
                "resnet18".into(),
                "--image-size".into(),
                "32".into(),
                "--precision".into(),
                "f16".into(),
                "-b".into(),
                "1".into(),
                "-n".into(),
                "1".into(),
            ],
            "burn-flex does not compute in f16; it computes in: f32",
        ),
    ];
    if !cfg!(feature = "torch") {
        cases.push((
            vec![
                "run".into(),
                "resnet18".into(),
                "--engine".into(),
                "torch-cpu".into(),
            ],
            "engine torch-cpu cannot run: not in this build: build with `--features torch`",
        ));
    }
    for (args, expected) in cases {
        assert_refused_writing_nothing(cnnbench().args(&args), &out, expected);
    }
    fails_saying(
        cnnbench()
            .args([
                "run",
                "resnet18",
                "--image-size",
                "32",
                "-b",
                "1",
                "-n",
                "1",
                "-o",
            ])
            .arg(blocker.join("sub")),
        "cannot create the output folder",
    );
}

#[test]
fn refuses_runs_that_cannot_fit_in_memory_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    cnnbench()
        .args(["run", "vgg19", "-b", "100000", "-n", "1", "-o"])
        .arg(dir.path())
        .assert()
        .failure()
        .stderr(predicate::str::contains("--batch-size"))
        .stderr(predicate::str::contains("--force"));
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_run_and_says_what_was_not_run() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let mut run = cnnbench_process();
    run.args([
        "run",
        "resnet18",
        "resnet34",
        "--image-size",
        "32",
        "-b",
        "1",
        "--warmup",
        "0",
        "-q",
        "-o",
    ])
    .arg(&out)
    .args(["-n", "3000"]);
    // resnet18 at 32×32 takes milliseconds per pass: 3000 passes give time to interrupt it.
    let (output, to_exit) = interrupted_after(run, Duration::from_millis(1500));
    assert!(to_exit < Duration::from_secs(60));
    assert_eq!(output.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(stderr.contains("not run: resnet18, resnet34"), "{stderr}");
    assert!(
        result_files(&out).is_empty(),
        "an interrupted model leaves no file"
    );
}

/// The heap policy (`--allocator`, or `CNNBENCH_ALLOCATOR`) is recorded in every result,
/// and `report`/`compare` keep runs with different policies apart.
#[test]
fn the_heap_policy_is_recorded_and_keeps_runs_apart() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str, extra: &[&str], env: Option<&str>| -> Value {
        let mut cmd = cnnbench();
        cmd.args([
            "run",
            "resnet18",
            "--image-size",
            "32",
            "-b",
            "1",
            "-n",
            "2",
        ])
        .args(extra)
        .args(["--json", "-q", "-o"])
        .arg(dir.path().join(out))
        .env_remove("CNNBENCH_ALLOCATOR");
        if let Some(policy) = env {
            cmd.env("CNNBENCH_ALLOCATOR", policy);
        }
        let output = cmd.output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let kept = run("keep", &[], None);
    assert_eq!(kept["config"]["allocator"]["policy"], "keep");
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        let detail = kept["config"]["allocator"]["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("glibc 2.") && detail.contains("mmap threshold 1 GiB, trimming off"),
            "{detail}"
        );
    }
    let system = run("system", &["--allocator", "system"], None);
    assert_eq!(system["config"]["allocator"]["policy"], "system");
    let from_env = run("env", &[], Some("system"));
    assert_eq!(from_env["config"]["allocator"]["policy"], "system");

    fails_saying(
        cnnbench().args(["run", "resnet18", "--allocator", "jemalloc"]),
        "possible values: keep, system",
    );

    // One row per policy, the non-default one labelled.
    cnnbench()
        .arg("report")
        .arg(dir.path().join("keep"))
        .arg(dir.path().join("system"))
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "burn-flex 0.22.1, system allocator",
        ))
        .stdout(
            predicate::str::contains("burn-flex 0.22.1 |")
                .or(predicate::str::contains("burn-flex 0.22.1|")),
        );
    cnnbench()
        .arg("compare")
        .arg(dir.path().join("keep"))
        .arg(dir.path().join("system"))
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "the allocator differs: BASE keep vs NEW system",
        ));
}

/// `--repeat N`: each configuration in N processes, interleaved A-B-B-A, one file a run
/// recording its round; `compare` of two such sets judges runs, where one run a side is
/// not judged.
#[test]
fn repeated_runs_interleave_and_compare_judges_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = |out: &str, threads: &str| {
        cnnbench()
            .args([
                "run", "resnet18", "-b", "1", "--passes", "2", "--warmup", "0",
            ])
            .args([
                "--image-size",
                "32,40",
                "--repeat",
                "2",
                "--threads",
                threads,
                "-o",
            ])
            .arg(dir.path().join(out))
            .assert()
            .success()
            .stderr(predicate::str::contains(
                "2 configuration(s) × 2 runs: 4 processes",
            ))
            .stderr(predicate::str::contains(
                "run 2 of 2: resnet18 (batch 1, 40x40)",
            ))
    };
    run("base", "1");
    let mut files: Vec<Value> = result_files(&dir.path().join("base"))
        .iter()
        .map(|f| serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap())
        .collect();
    assert_eq!(files.len(), 4);
    files.sort_by(|a, b| a["started_at"].as_str().cmp(&b["started_at"].as_str()));
    let order: Vec<(u64, u64)> = files
        .iter()
        .map(|f| {
            (
                f["config"]["round"]["index"].as_u64().unwrap(),
                f["config"]["image_size"][0].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(order, [(1, 32), (1, 40), (2, 40), (2, 32)]);
    assert!(files.iter().all(|f| f["config"]["round"]["of"] == 2));
    // Each run's own spec is its one configuration, run once: `--again` reruns that run.
    assert!(files.iter().all(|f| f["spec"].get("repeat").is_none()));
    run("new", "1");
    let out = cnnbench()
        .args(["compare", "-f", "markdown"])
        .arg(dir.path().join("base"))
        .arg(dir.path().join("new"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(!stdout.contains("not judged: one run"), "{stdout}");
    // -b max and data-parallel runs are refused with --repeat, before anything runs.
    cnnbench()
        .args(["run", "resnet18", "-b", "max", "--repeat", "2", "-o"])
        .arg(dir.path().join("refused"))
        .assert()
        .code(1)
        .stderr(predicate::str::contains("-b max"));
    assert!(result_files(&dir.path().join("refused")).is_empty());
}
