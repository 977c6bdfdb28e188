//! End-to-end tests of sweeps, `-b max`, adaptive runs and the result schema version 2,
//! on tiny inputs.

use crate::common::*;

use cnnbench_bench::result::{BenchResult, ProbeOutcome, StopReason};
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn read(path: &Path) -> BenchResult {
    read_json(path)
}

/// A one-convolution model file: its activations grow with the batch fast enough for
/// `-b max` to find its limit within a few tens of MiB.
fn tiny_model(dir: &Path) -> PathBuf {
    let model = dir.join("tiny.json");
    std::fs::write(
        &model,
        r#"{"format": "cnnbench-model", "version": 1, "name": "tiny", "input": [3, 64, 64],
            "nodes": [
              {"name": "conv", "op": "conv2d", "in_channels": 3, "out_channels": 16, "kernel": 3, "padding": 1},
              {"name": "relu", "op": "relu"},
              {"name": "pool", "op": "adaptive_avg_pool2d", "output": 1},
              {"name": "flat", "op": "flatten"},
              {"name": "fc", "op": "linear", "in_features": 16, "out_features": 10}
            ]}"#,
    )
    .unwrap();
    model
}

#[test]
fn a_three_point_batch_sweep_writes_three_files_and_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let output = run_ok(
        cnnbench()
            .args([
                "run",
                "resnet18",
                "--image-size",
                "32",
                "-b",
                "1..4",
                "-n",
                "2",
                "--mode",
                "infer",
                "-q",
                "-o",
            ])
            .arg(&out),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.matches("| Model").count(), 1, "one table:\n{stdout}");
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("resnet18 (32×32)"))
        .collect();
    assert_eq!(rows.len(), 3, "{stdout}");
    assert!(
        stdout.contains("p99 (ms)"),
        "inference shows the latency tail:\n{stdout}"
    );
    let files = result_files(&out);
    assert_eq!(files.len(), 3, "{files:?}");
    let mut batches: Vec<usize> = files.iter().map(|f| read(f).config.batch_size).collect();
    batches.sort();
    assert_eq!(batches, [1, 2, 4]);
    for f in &files {
        let r = read(f);
        assert_eq!(r.version, 2);
        let total = &r.summary["total"];
        let p = total
            .percentiles
            .expect("version 2 summaries carry percentiles");
        assert!(total.min <= p.p50 && p.p50 <= p.p90 && p.p99 <= total.max);
        let stop = r.stop.expect("the stop record");
        assert_eq!((stop.reason, stop.passes), (StopReason::Passes, 2));
        assert!(
            r.warnings.iter().any(|w| w.contains("p99 needs 100")),
            "{:?}",
            r.warnings
        );
    }
    // The report finds the sweep: a table with a row per batch, and a chart.
    let md = cnnbench()
        .args(["report", "--format", "markdown"])
        .arg(&out)
        .output()
        .unwrap();
    let md = String::from_utf8_lossy(&md.stdout);
    let sweep = md
        .split("## Sweep: resnet18, 3×32×32, infer")
        .nth(1)
        .expect(&md);
    let header = sweep
        .lines()
        .find(|l| l.starts_with("|Batch|"))
        .expect(sweep);
    assert!(
        header.contains("images/s|") && header.contains("ms (p99)|"),
        "{header}"
    );
    for b in ["|1|", "|2|", "|4|"] {
        assert!(sweep.lines().any(|l| l.starts_with(b)), "row {b}: {sweep}");
    }
    let charts = dir.path().join("charts");
    let page = dir.path().join("report.html");
    cnnbench()
        .args(["report", "--charts"])
        .arg(&charts)
        .arg("-o")
        .arg(&page)
        .arg(&out)
        .assert()
        .success();
    for ext in ["svg", "png"] {
        let chart = charts.join(format!("sweep-resnet18-3x32x32-infer.{ext}"));
        assert!(std::fs::metadata(&chart).unwrap().len() > 1000, "{chart:?}");
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2>Sweep: resnet18, 3×32×32, infer</h2>"));
    assert!(
        html.contains("Latency of a batch"),
        "the sweep chart is inline"
    );
}

#[test]
fn an_image_size_sweep_writes_one_file_per_size() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let out = dir.path().join("results");
    cnnbench()
        .args(["run", "--model-file"])
        .arg(&model)
        .args([
            "--image-size",
            "16,32x24",
            "-b",
            "1,2",
            "-n",
            "1",
            "-q",
            "-o",
        ])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("tiny (32×24)"));
    let mut points: Vec<([usize; 2], usize)> = result_files(&out)
        .iter()
        .map(|f| {
            let r = read(f);
            (r.config.image_size, r.config.batch_size)
        })
        .collect();
    points.sort();
    assert_eq!(
        points,
        [([16, 16], 1), ([16, 16], 2), ([32, 24], 1), ([32, 24], 2)]
    );
}

#[test]
fn bad_sweeps_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    for (args, message) in [
        (vec!["-b", "8..2"], "the range \"8..2\" is empty"),
        (vec!["-b", "2,x"], "\"x\" is not a batch size"),
        (vec!["--image-size", "32,x"], "\"x\" is not an image size"),
        (vec!["--memory-limit", "lots"], "not an amount of memory"),
        (
            vec!["--target-ci", "0"],
            "--target-ci must be a positive percentage",
        ),
        (
            vec!["--min-time", "5", "--max-time", "1"],
            "--min-time (5 s) is above --max-time",
        ),
    ] {
        assert_refused_writing_nothing(
            cnnbench().args(["run", "resnet18", "-q"]).args(&args),
            &out,
            message,
        );
    }
}

#[test]
fn batch_max_picks_the_largest_batch_under_a_memory_limit_and_records_how() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let out = dir.path().join("results");
    // What the process needs at batch 1 on this machine; allow 24 MiB more. Memory
    // questions with glibc's defaults: a kept heap's peak varies between processes.
    let v: Value = json_stdout(
        cnnbench()
            .env("CNNBENCH_ALLOCATOR", "system")
            .args([
                "run",
                "--mode",
                "infer",
                "-b",
                "1",
                "-n",
                "1",
                "--json",
                "-q",
                "--model-file",
            ])
            .arg(&model)
            .arg("-o")
            .arg(dir.path().join("baseline")),
    );
    let baseline = v["memory"]["peak_rss_bytes"].as_u64().unwrap();
    let limit = baseline + (24 << 20);
    let output = cnnbench()
        .env("CNNBENCH_ALLOCATOR", "system")
        .args([
            "run",
            "--mode",
            "infer",
            "-b",
            "max",
            "-n",
            "2",
            "--model-file",
        ])
        .arg(&model)
        .args(["--memory-limit", &limit.to_string(), "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("is the largest that fits"), "{stderr}");
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let r = read(&files[0]);
    let search = r.batch_search.expect("the search is recorded");
    assert_eq!(r.config.batch_size, search.chosen);
    assert!(search.chosen > 1, "{search:?}");
    assert_eq!(search.available_bytes, limit);
    // The probes received the run's spec; the result's records the batch chosen, so
    // `run --again` measures that batch.
    let spec = r.spec.as_ref().expect("the spec is recorded");
    assert_eq!(
        spec.batch,
        cnnbench_results::Batches::Sizes(vec![search.chosen])
    );
    assert_eq!(spec.memory_limit_bytes, Some(limit));
    assert_eq!(spec.allocator, "system");
    assert_eq!(search.available_from, "--memory-limit");
    assert!(search.estimated_batch >= 1);
    assert_eq!(
        search.probes[0].batch_size,
        search.estimated_batch.max(1),
        "the estimate first"
    );
    // The evidence: the chosen batch ran within the limit, the next one did not.
    let at = |b: usize| search.probes.iter().find(|p| p.batch_size == b);
    let chosen = at(search.chosen).expect("the chosen batch was probed");
    assert_eq!(chosen.outcome, ProbeOutcome::Fits);
    assert!(chosen.peak_bytes.unwrap() <= limit);
    let next = at(search.chosen + 1).expect("the next batch was probed");
    assert_eq!(next.outcome, ProbeOutcome::OverLimit);
    assert!(next.peak_bytes.unwrap() > limit);
}

#[test]
fn batch_max_without_any_fitting_batch_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let out = dir.path().join("results");
    assert_refused_writing_nothing(
        cnnbench()
            .args(["run", "--mode", "infer", "-b", "max", "-q"])
            .args(["--memory-limit", "1MiB", "--model-file"])
            .arg(&model),
        &out,
        "not even batch 1 fits in 1.00 MiB (--memory-limit)",
    );
}

#[test]
fn adaptive_settings_and_what_stopped_the_run_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let model = tiny_model(dir.path());
    let out = dir.path().join("results");
    // ±50% is reached quickly (the first interval is computed at 10 passes), unless the
    // machine is very busy: then more passes, but still the target that stops it.
    cnnbench()
        .args([
            "run",
            "--mode",
            "infer",
            "-b",
            "1",
            "-n",
            "3",
            "--target-ci",
            "50",
        ])
        .args(["--warmup-time", "0.05", "-q", "--model-file"])
        .arg(&model)
        .arg("-o")
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("(target-ci, ±"));
    let files = result_files(&out);
    let r = read(&files[0]);
    assert_eq!(r.config.target_ci_pct, Some(50.0));
    assert_eq!(
        r.config.max_time_s,
        Some(60.0),
        "the default limit is recorded"
    );
    assert_eq!(r.config.warmup_time_s, Some(0.05));
    let stop = r.stop.unwrap();
    assert_eq!(stop.reason, StopReason::TargetCi);
    assert!(stop.passes >= 10, "{stop:?}");
    assert!(stop.median_ci95_rel.unwrap() <= 0.5);
    assert!(stop.warmup_passes >= 1);
    // A time limit shorter than the passes asked for.
    cnnbench()
        .args([
            "run",
            "--mode",
            "infer",
            "-b",
            "1",
            "-n",
            "100000",
            "--max-time",
            "0.2",
        ])
        .args(["-q", "--model-file"])
        .arg(&model)
        .arg("-o")
        .arg(dir.path().join("capped"))
        .assert()
        .success()
        .stdout(predicate::str::contains("(max-time, ±"));
}

/// A version 1 result with its version set to 2 and the fields version 2 added.
fn as_version_2(v1: &Path, to: &Path) {
    let mut v: Value = read_json(v1);
    assert_eq!(v["version"], 1, "the fixture is a version 1 file");
    v["version"] = 2.into();
    let summary = v["summary"].as_object_mut().unwrap();
    for s in summary.values_mut() {
        let m = s["median"].clone();
        let max = s["max"].clone();
        s["percentiles"] = serde_json::json!({"p50": m, "p90": max, "p95": max, "p99": max});
    }
    v["stop"] =
        serde_json::json!({"reason": "passes", "passes": 10, "warmup_passes": 1, "timed_s": 1.0});
    std::fs::write(to, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn version_1_and_version_2_files_load_in_report_and_compare() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/ours");
    let dir = tempfile::tempdir().unwrap();
    let new2 = dir.path().join("new2");
    std::fs::create_dir(&new2).unwrap();
    for f in result_files(&fixtures.join("new")) {
        as_version_2(&f, &new2.join(f.file_name().unwrap()));
    }
    // v1 (base) against v1 and against v2: the same comparison.
    let compare = |new: &Path| {
        let out = cnnbench()
            .args(["compare"])
            .arg(fixtures.join("base"))
            .arg(new)
            .output()
            .unwrap();
        assert!(
            out.stderr.is_empty() || !String::from_utf8_lossy(&out.stderr).contains("skipping"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let with_v1 = compare(&fixtures.join("new"));
    let with_v2 = compare(&new2);
    assert!(with_v1.contains("resnet18"), "{with_v1}");
    assert_eq!(
        with_v1.replace("/new/", "/new2/"),
        with_v2.replace(new2.to_str().unwrap(), ""),
        "v1:\n{with_v1}\nv2:\n{with_v2}"
    );
    cnnbench()
        .args(["report", "--strict"])
        .arg(fixtures.join("base"))
        .arg(&new2)
        .assert()
        .success()
        .stdout(predicate::str::contains("resnet18"));
}

#[test]
fn channels_last_is_refused_by_burn_flex() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    assert_refused_writing_nothing(
        cnnbench().args([
            "run",
            "resnet18",
            "--image-size",
            "32",
            "--channels-last",
            "-q",
        ]),
        &out,
        "engine burn-flex cannot use channels-last memory",
    );
}

#[test]
fn ctrl_c_in_a_sweep_names_the_points_not_run() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let mut run = cnnbench_process();
    run.args([
        "run",
        "resnet18",
        "--image-size",
        "32",
        "-b",
        "1,2",
        "--warmup",
        "0",
    ])
    .args(["-n", "3000", "-q", "-o"])
    .arg(&out);
    // 3000 passes of a few milliseconds: still on the first point after 1.5 s.
    let (output, _) = interrupted_after(run, Duration::from_millis(1500));
    assert_eq!(output.status.code(), Some(130));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("not run: resnet18 (32×32, batch 1), resnet18 (32×32, batch 2)"),
        "{stderr}"
    );
    assert!(result_files(&out).is_empty());
}
