//! `cnnbench run --scenario`: MLPerf LoadGen's load scenarios on a tiny network, the
//! result's scenario record, a rerun from it, and what is refused before anything runs.

use crate::common::*;
use cnnbench_bench::BenchResult;
use cnnbench_results::scenario::ScenarioKind;
use predicates::prelude::*;

const TINY: &str = r#"{"format": "cnnbench-model", "version": 1, "name": "tiny",
  "input": [3, 32, 32], "nodes": [
    {"name": "conv", "op": "conv2d", "in_channels": 3, "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "relu", "op": "relu"},
    {"name": "pool", "op": "adaptive_avg_pool2d", "output": 1},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "in_features": 4, "out_features": 10}
  ]}"#;

/// A folder with the tiny model in it.
fn with_tiny_model() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.json"), TINY).unwrap();
    dir
}

fn scenario_run(dir: &std::path::Path, out: &str, scenario: &[&str]) -> assert_cmd::assert::Assert {
    cnnbench()
        .current_dir(dir)
        .args(["run", "--model-file", "tiny.json", "--mode", "infer"])
        .args(["--warmup", "1", "--scenario-time", "0", "-o", out])
        .args(scenario)
        .assert()
}

#[test]
fn single_stream_records_every_query_and_a_rerun_serves_the_same_scenario() {
    let dir = with_tiny_model();
    scenario_run(
        dir.path(),
        "first",
        &["--scenario", "single-stream", "--min-queries", "60"],
    )
    .success()
    .stdout(predicate::str::contains("single-stream, 60 queries of 1"))
    .stdout(predicate::str::contains("p90 latency"))
    .stdout(predicate::str::contains("short of MLPerf's run rules"));
    let first = result_files(&dir.path().join("first"));
    let result: BenchResult = read_json(&first[0]);
    let record = result.scenario.as_ref().expect("a scenario record");
    assert_eq!(record.kind, ScenarioKind::SingleStream);
    assert_eq!((record.queries, record.samples), (60, 60));
    assert_eq!(record.latencies_s.len(), 60);
    assert_eq!(result.samples["forward"].len(), 60);
    assert_eq!(
        result.config.batch_size, 1,
        "a single-stream query is one sample"
    );
    assert!(record.valid, "{:?}", record.invalid_reasons);
    assert!(record.latency.p90 <= record.early_stopping_latency_s.unwrap());
    assert!(record.issuer_overhead_s < record.latency.p50);
    let spec = result.spec.as_ref().unwrap();
    assert_eq!(spec.scenario.as_ref().unwrap().min_queries, 60);
    // A rerun serves the recorded scenario, changing only what is given.
    run_ok(
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--again"])
            .arg(&first[0])
            .args([
                "--scenario",
                "single-stream",
                "--min-queries",
                "50",
                "-o",
                "again",
                "-q",
            ]),
    );
    let again: BenchResult = read_json(&result_files(&dir.path().join("again"))[0]);
    let record = again.scenario.unwrap();
    assert_eq!(record.queries, 50);
    assert_eq!(again.spec.unwrap().scenario.unwrap().min_duration_s, 0.0);
    // Round four (#63): compare paired the scenario's compute times with closed-loop
    // passes and said nothing; the pair now says how each side was loaded.
    run_ok(
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--model-file", "tiny.json", "--mode", "infer"])
            .args(["-b", "1", "-n", "5", "-q", "-o", "plain"]),
    );
    cnnbench()
        .current_dir(dir.path())
        .args(["compare", "plain", "first"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "load differs: BASE closed-loop passes vs NEW single-stream scenario runs",
        ));
}

#[test]
fn a_server_past_its_capacity_is_invalid_and_says_why() {
    let dir = with_tiny_model();
    // A bound of a microsecond no query can keep.
    scenario_run(
        dir.path(),
        "out",
        &[
            "--scenario",
            "server",
            "--qps",
            "2000",
            "--latency-bound",
            "0.001",
            "--min-queries",
            "500",
        ],
    )
    .success()
    .stdout(predicate::str::contains("server at 2000.0 QPS"))
    .stdout(predicate::str::contains("INVALID"))
    .stderr(predicate::str::contains("the server run is INVALID"));
    let result: BenchResult = read_json(&result_files(&dir.path().join("out"))[0]);
    let record = result.scenario.unwrap();
    assert!(!record.valid);
    assert!(
        record
            .invalid_reasons
            .iter()
            .any(|r| r.contains("above the bound")),
        "{:?}",
        record.invalid_reasons
    );
    assert_eq!(record.schedule_seed, Some(0));
    assert_eq!(record.queries, 500);
}

#[test]
fn offline_and_multi_stream_serve_their_samples_as_the_batch() {
    let dir = with_tiny_model();
    scenario_run(
        dir.path(),
        "offline",
        &["--scenario", "offline", "-b", "4", "--min-queries", "30"],
    )
    .success();
    let offline: BenchResult = read_json(&result_files(&dir.path().join("offline"))[0]);
    let record = offline.scenario.unwrap();
    assert_eq!(
        (record.samples, record.queries),
        (32, 1),
        "30 samples, 4 at a time"
    );
    assert!((offline.throughput.images_per_s - record.samples_per_s).abs() < 1e-9);
    scenario_run(
        dir.path(),
        "multi",
        &[
            "--scenario",
            "multi-stream",
            "--samples-per-query",
            "3",
            "--min-queries",
            "20",
        ],
    )
    .success()
    .stdout(predicate::str::contains("too few queries to bound it"));
    let multi: BenchResult = read_json(&result_files(&dir.path().join("multi"))[0]);
    assert_eq!(multi.config.batch_size, 3);
    assert_eq!(multi.scenario.unwrap().samples, 60);
}

#[test]
fn the_dynamic_batcher_gathers_server_queries_into_calls_and_records_them() {
    let dir = with_tiny_model();
    scenario_run(
        dir.path(),
        "batched",
        &[
            "--scenario",
            "server",
            "--qps",
            "300",
            "--latency-bound",
            "500",
            "--min-queries",
            "90",
            "--max-batch",
            "4",
            "--batch-timeout",
            "5",
        ],
    )
    .success()
    .stdout(predicate::str::contains("batches ≤ 4 within 5 ms"));
    let batched: BenchResult = read_json(&result_files(&dir.path().join("batched"))[0]);
    let record = batched.scenario.as_ref().unwrap();
    let batcher = record.batcher.as_ref().unwrap();
    assert_eq!(batcher.session_batch_sizes, [1, 2, 4]);
    let queries: usize = batcher
        .gathered
        .iter()
        .enumerate()
        .map(|(i, calls)| (i + 1) * calls)
        .sum();
    assert_eq!((queries, record.queries), (90, 90));
    // A call per sample of the result: the engine's compute time per call.
    assert_eq!(
        batched.summary[&cnnbench_bench::Quantity::Forward].count,
        batcher.calls
    );
    // 300 queries a second with 5 ms to gather: calls of more than one query.
    assert!(batcher.mean_batch > 1.0, "{batcher:?}");
    let spec = batched.spec.as_ref().unwrap().scenario.as_ref().unwrap();
    assert_eq!(spec.batcher.unwrap().max_batch, 4);
    // Beside the same load served one query at a time, the report keeps the two apart:
    // the batched run is a serving row of its own, and out of the per-pass table (its
    // samples are per call of several queries).
    scenario_run(
        dir.path(),
        "batched",
        &[
            "--scenario",
            "server",
            "--qps",
            "300",
            "--latency-bound",
            "500",
            "--min-queries",
            "90",
        ],
    )
    .success();
    let report = cnnbench()
        .current_dir(dir.path())
        .args(["report", "batched"])
        .output()
        .unwrap();
    assert!(report.status.success());
    let text = String::from_utf8_lossy(&report.stdout);
    let serving_rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('|') && l.contains("|500|"))
        .collect();
    assert_eq!(serving_rows.len(), 2, "{text}");
    assert!(
        serving_rows
            .iter()
            .any(|r| r.contains("batches ≤ 4 within 5 ms")),
        "{text}"
    );
    assert!(
        text.contains("1 server run(s) with the dynamic batcher"),
        "{text}"
    );
    // Refused where it has no meaning, in the flag's words.
    scenario_run(
        dir.path(),
        "offline",
        &[
            "--scenario",
            "offline",
            "--min-queries",
            "8",
            "--max-batch",
            "4",
        ],
    )
    .failure()
    .stderr(predicate::str::contains("--max-batch"));
}

#[test]
fn several_queries_in_flight_are_served_by_sessions_side_by_side() {
    let dir = with_tiny_model();
    scenario_run(
        dir.path(),
        "server",
        &[
            "--scenario",
            "server",
            "--qps",
            "200",
            "--latency-bound",
            "500",
            "--min-queries",
            "80",
            "--in-flight",
            "2",
            "--threads",
            "2",
        ],
    )
    .success()
    .stdout(predicate::str::contains("2 in flight"));
    let server: BenchResult = read_json(&result_files(&dir.path().join("server"))[0]);
    let record = server.scenario.as_ref().unwrap();
    assert_eq!((record.in_flight, record.queries), (2, 80));
    assert!(
        record
            .serving
            .starts_with("2 sessions of burn-flex side by side"),
        "{}",
        record.serving
    );
    assert!(record.input_draw_s.is_some());
    assert_eq!(
        server
            .spec
            .as_ref()
            .unwrap()
            .scenario
            .as_ref()
            .unwrap()
            .in_flight,
        2
    );
    assert!(
        server
            .validity
            .as_ref()
            .expect("the machine was watched")
            .notes
            .iter()
            .any(|n| n.contains("CPU pressure was not judged")),
        "{:?}",
        server.validity
    );
    scenario_run(
        dir.path(),
        "offline",
        &[
            "--scenario",
            "offline",
            "-b",
            "2",
            "--min-queries",
            "40",
            "--in-flight",
            "3",
        ],
    )
    .success();
    let offline: BenchResult = read_json(&result_files(&dir.path().join("offline"))[0]);
    let record = offline.scenario.unwrap();
    assert_eq!((record.in_flight, record.samples), (3, 40));
    assert_eq!(offline.samples["forward"].len(), 20);
}

#[test]
fn what_a_scenario_cannot_run_is_refused_before_anything_runs() {
    let dir = with_tiny_model();
    for (args, says) in [
        (
            vec!["--scenario", "single-stream", "--mode", "train"],
            "use --mode infer",
        ),
        (
            vec!["--scenario", "server", "--qps", "10"],
            "--latency-bound",
        ),
        (
            vec!["--scenario", "server", "--latency-bound", "10"],
            "--qps N",
        ),
        (vec!["--scenario", "single-stream", "-b", "4"], "must agree"),
        (
            vec!["--scenario", "single-stream", "--qps", "5"],
            "--qps is for --scenario server: single-stream issues",
        ),
        (vec!["--scenario", "offline", "--find-peak"], "--find-peak"),
        (
            vec!["--scenario", "offline", "--max-time", "5"],
            "a scenario runs for --scenario-time",
        ),
        (
            vec!["--scenario", "server", "--qps=-3", "--latency-bound", "10"],
            "--qps must be from 0.001 to 10000000 queries per second",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "inf",
                "--latency-bound",
                "10",
            ],
            "--qps must be from 0.001 to 10000000 queries per second",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "10",
                "--latency-bound",
                "NaN",
            ],
            "--latency-bound must be from 0.001 to 3600000 milliseconds",
        ),
        // Round four (#63): a load, a count or a time no run can plan, which planned
        // 10^12 queries (and allocated their latencies) or a first query 10^300 s away.
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "1e-300",
                "--latency-bound",
                "10",
            ],
            "not 1e-300",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "1e-9",
                "--latency-bound",
                "10",
            ],
            "--qps must be from 0.001",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "10",
                "--latency-bound",
                "1e308",
            ],
            "not 1e308",
        ),
        (
            vec![
                "--scenario",
                "offline",
                "--min-queries",
                "18446744073709551615",
            ],
            "--min-queries must be from 1 to 2000000",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "10",
                "--latency-bound",
                "10",
                "--min-queries",
                "1000000000000",
            ],
            "--min-queries must be from 1 to 2000000",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "10000000",
                "--latency-bound",
                "10",
                "--scenario-time",
                "9999999",
            ],
            "--scenario-time must be from 0 to 86400 seconds",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "10000000",
                "--latency-bound",
                "10",
                "--scenario-time",
                "86400",
            ],
            "is 864000000000 queries, more than the 2000000",
        ),
        (
            vec![
                "--scenario",
                "server",
                "--qps",
                "0.001",
                "--latency-bound",
                "10",
                "--min-queries",
                "1000",
            ],
            "take 1000000 s to arrive, more than a day",
        ),
        (
            vec!["--scenario", "single-stream", "--passes", "5"],
            "leave out --passes",
        ),
        (
            vec!["--scenario", "single-stream", "--in-flight", "2"],
            "--in-flight is for --scenario server or offline",
        ),
        (
            vec!["--scenario", "offline", "--in-flight", "0"],
            "at least 1",
        ),
        (
            vec!["--scenario", "offline", "--in-flight", "65"],
            "more than 64",
        ),
        (
            vec![
                "--scenario",
                "offline",
                "--in-flight",
                "2",
                "--engine",
                "pytorch-cuda",
            ],
            "serves one query at a time",
        ),
    ] {
        let out = dir.path().join("refused");
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--model-file", "tiny.json"])
            .args(if args.contains(&"--mode") {
                vec![]
            } else {
                vec!["--mode", "infer"]
            })
            .args(&args)
            .arg("-o")
            .arg(&out)
            .assert()
            .failure()
            .stderr(predicate::str::contains(says));
        assert!(!out.exists(), "{args:?} wrote nothing");
    }
    // A scenario's setting without a scenario is clap's refusal.
    fails_saying(
        cnnbench().args(["run", "resnet18", "--qps", "5"]),
        "--scenario",
    );
    // Round four (#63): the memory check counted one session while `--in-flight 64` held
    // 64 (and the batcher one more per batch size each): every session is counted, and
    // the advice is the queries in flight that fit.
    let out = dir.path().join("refused");
    let in_flight = |extra: &[&str]| {
        let mut cmd = cnnbench();
        cmd.args([
            "run",
            "resnet18",
            "--image-size",
            "32",
            "--mode",
            "infer",
            "--memory-limit",
            "1GiB",
        ])
        .args(extra)
        .arg("-o")
        .arg(&out);
        cmd
    };
    fails_saying(
        &mut in_flight(&["--scenario", "offline", "--in-flight", "64"]),
        "with its 64 sessions",
    )
    .stderr(predicate::str::is_match(r"--in-flight \d+ fits").unwrap());
    fails_saying(
        &mut in_flight(&[
            "--scenario",
            "server",
            "--qps",
            "10",
            "--latency-bound",
            "100",
            "--in-flight",
            "2",
            "--max-batch",
            "1024",
        ]),
        "with its 22 sessions",
    );
    assert!(!out.exists(), "a refused run wrote nothing");
}

/// `report` answers the serving question from server runs at two loads: the serving
/// table names the highest valid load, and `--charts` draws latency against load.
#[test]
fn report_shows_the_highest_valid_load_and_charts_latency_against_load() {
    let dir = with_tiny_model();
    for qps in ["1000", "2000"] {
        scenario_run(
            dir.path(),
            "served",
            &[
                "--scenario",
                "server",
                "--qps",
                qps,
                "--latency-bound",
                "500",
                "--min-queries",
                "500",
                "-q",
            ],
        )
        .success();
    }
    assert_eq!(result_files(&dir.path().join("served")).len(), 2);
    let out = run_ok(cnnbench().current_dir(dir.path()).args([
        "report", "served", "--format", "markdown", "--charts", "charts",
    ]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("## Serving: highest load with p99 within the bound"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("|tiny (32×32)|"))
        .unwrap_or_else(|| panic!("no serving row in\n{text}"));
    // The highest load whose run was valid, as the runs themselves judged it (beside a
    // busy neighbour 2,000 queries a second of even this model may break the bound).
    let highest_valid = result_files(&dir.path().join("served"))
        .iter()
        .map(|file| read_json::<BenchResult>(file).scenario.unwrap())
        .filter(|record| record.valid)
        .filter_map(|record| record.target_qps)
        .reduce(f64::max);
    match highest_valid {
        Some(qps) => assert!(row.contains(&format!("|500|{qps:.1}|")), "{row}"),
        None => assert!(row.contains("no valid load"), "{row}"),
    }
    assert!(row.contains("|2 runs|"), "{row}");
    for ext in ["svg", "png"] {
        let chart = dir
            .path()
            .join("charts")
            .join(format!("latency-load-tiny-3x32x32.{ext}"));
        assert!(chart.is_file(), "{} not written", chart.display());
    }
}
