//! Run validity end to end: a run's verdict is the judge's on the signals it recorded
//! (clean or not, as the host's load has it), the same run beside two busy loops comes
//! out disturbed (in the file, on the terminal, with `--require-clean`'s exit status and
//! `--retries`' record), `compare` refuses to judge it and `report` marks it. No
//! assertion here needs a quiet host: the judge's limits are unit-tested on given
//! readings in `cnnbench_bench::validity`.

use crate::common::*;
use std::path::Path;
use std::process::{Child, Command as Process, Stdio};
use std::time::Duration;

/// Busy loops in processes of their own (not cnnbench's children), stopped on drop.
struct Neighbours(Vec<Child>);

impl Neighbours {
    fn start(n: usize) -> Neighbours {
        let loops = (0..n)
            .map(|_| {
                Process::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("sh starts")
            })
            .collect();
        std::thread::sleep(Duration::from_millis(300));
        Neighbours(loops)
    }
}

impl Drop for Neighbours {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A tiny run long enough (1.5 s of timed passes) for tick-based signals to be judged.
fn timed_run(out: &Path, extra: &[&str]) -> std::process::Output {
    cnnbench()
        .args(["run", "resnet18", "--image-size", "32", "-b", "1"])
        .args(["--passes", "3", "--min-time", "1.5", "-o"])
        .arg(out)
        .args(extra)
        .output()
        .expect("cnnbench starts")
}

/// Whatever the CI host's load, a run's verdict is the judge's on the signals the run
/// recorded, and the exit status and the terminal say that verdict. (A host's quiet is
/// not the test's to assume: CI shares its VM with a busy neighbour at times.)
fn assert_verdict_follows_its_signals(result: &serde_json::Value, output: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let validity = &result["validity"];
    let timed: cnnbench_results::validity::Signals =
        serde_json::from_value(validity["timed"].clone()).expect("the recorded signals read");
    let (verdict, reasons, _) =
        cnnbench_bench::validity::judge(&timed, &cnnbench_bench::validity::LIMITS);
    let recorded_reasons: Vec<String> =
        serde_json::from_value(validity["reasons"].clone()).expect("the recorded reasons read");
    assert_eq!(recorded_reasons, reasons, "{validity}");
    match verdict {
        cnnbench_results::validity::Verdict::Clean => {
            assert_eq!(validity["verdict"], "clean", "{validity}");
            assert!(output.status.success(), "{stderr}");
            assert!(
                stderr.contains("machine: quiet during all 1 run(s)"),
                "{stderr}"
            );
        }
        cnnbench_results::validity::Verdict::Disturbed => {
            assert_eq!(validity["verdict"], "disturbed", "{validity}");
            assert_eq!(output.status.code(), Some(3), "{stderr}");
            assert!(stderr.contains("DISTURBED: resnet18"), "{stderr}");
        }
    }
}

#[test]
fn a_run_is_judged_by_its_signals_and_a_run_beside_two_busy_loops_is_disturbed() {
    let tmp = tempfile::tempdir().unwrap();
    let quiet = tmp.path().join("quiet");
    let output = timed_run(&quiet, &["--require-clean"]);
    let result: serde_json::Value = only_result(&quiet);
    assert_verdict_follows_its_signals(&result, &output);
    assert_watched(&result);

    let neighbours = Neighbours::start(2);
    // --require-clean: the result is kept, marked, and the exit status says so.
    let busy = tmp.path().join("busy");
    let output = timed_run(&busy, &["--require-clean"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert_verdict_follows_its_signals(&only_result(&busy), &output);
    assert!(stderr.contains("DISTURBED: resnet18"), "{stderr}");
    assert!(stderr.contains("--require-clean"), "{stderr}");
    let result: serde_json::Value = only_result(&busy);
    let validity = &result["validity"];
    assert_eq!(validity["verdict"], "disturbed", "{validity}");
    let reasons = validity["reasons"].to_string();
    assert!(
        reasons.contains("other processes") || reasons.contains("CPU pressure"),
        "{reasons}"
    );
    assert!(
        validity["timed"]["other_cpu_pct"].as_f64().unwrap() > 10.0,
        "{validity}"
    );

    // --retries: each disturbed attempt runs again and is recorded in the one result.
    let retried = tmp.path().join("retried");
    let output = timed_run(&retried, &["--retries", "1", "-q"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("attempt 1 was disturbed"), "{stderr}");
    let result: serde_json::Value = only_result(&retried);
    let attempts = result["validity"]["retried"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(attempts.len(), 1, "{}", result["validity"]);
    assert!(attempts[0]["median_total_s"].as_f64().unwrap() > 0.0);
    drop(neighbours);

    // compare will not call the busy run's times a change, and its gate cannot pass.
    let output = cnnbench()
        .args(["compare", "-f", "markdown", "--fail-on-regression", "5"])
        .arg(&quiet)
        .arg(&busy)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("not judged: disturbed"), "{stdout}");
    assert!(stdout.contains("Not judged, resnet18"), "{stdout}");

    // report marks the busy row beside a clean one and, asked, shows what each run paid
    // before timing. The clean row is the first run as a quiet host records it (its
    // verdict and reasons as the judge gives them on quiet readings), whatever this
    // host's load was. The two runs are one configuration, which report pools into one
    // row by default (DISTURBED, as one of its runs was): shown apart, each row's Machine
    // cell says its own. (This checked for "quiet" anywhere on the page, and passed on
    // the word "quieter" of a note that a wide spread between the two runs adds; beside
    // a busy neighbour one run of five had no such spread, and failed.)
    let clean = tmp.path().join("clean");
    std::fs::create_dir(&clean).unwrap();
    let mut quiet_result: serde_json::Value = only_result(&quiet);
    quiet_result["validity"]["verdict"] = "clean".into();
    quiet_result["validity"]["reasons"] = serde_json::json!([]);
    std::fs::write(
        clean.join("resnet18.json"),
        serde_json::to_string_pretty(&quiet_result).unwrap(),
    )
    .unwrap();
    let output = cnnbench()
        .args([
            "report",
            "--format",
            "markdown",
            "--cold-start",
            "--no-overview",
            "--duplicates",
            "separate",
        ])
        .arg(&clean)
        .arg(&busy)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let header = stdout
        .lines()
        .find(|line| line.starts_with("|Device|"))
        .unwrap_or_else(|| panic!("a table: {stdout}"));
    for column in ["Prepare (s)", "First pass (s)", "Machine"] {
        assert!(
            header.contains(&format!("|{column}|")),
            "{column}: {stdout}"
        );
    }
    // One row per run, each with its own verdict: the clean run's quiet, the busy one's
    // DISTURBED. The rows are ordered by time, and beside a neighbour the busy run may
    // be the faster one (seen: the fifth of five in a row), so the cells are compared as
    // a set.
    let mut machine_cells: Vec<&str> = stdout
        .lines()
        .filter(|line| line.starts_with("|") && line.contains("burn-flex"))
        .map(|row| row.trim_end_matches('|').rsplit('|').next().unwrap_or(""))
        .collect();
    machine_cells.sort_unstable();
    assert_eq!(machine_cells, ["DISTURBED", "quiet"], "{stdout}");
}

#[test]
fn too_many_retries_are_refused_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let output = cnnbench()
        .args([
            "run",
            "resnet18",
            "--image-size",
            "32",
            "--retries",
            "21",
            "-o",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--retries 21 is more than 20"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(result_files(tmp.path()).is_empty());
}
