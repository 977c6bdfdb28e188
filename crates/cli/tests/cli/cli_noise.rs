//! `cnnbench noise`: this machine's run-to-run noise measured in fresh processes, cached,
//! recorded by every later run, and used by `compare` for one run a side.

use crate::common::*;
use predicates::prelude::*;

#[test]
fn the_noise_is_measured_cached_recorded_and_used_by_compare() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let noise_dir = cache.join("cnnbench").join("noise");
    let output = cnnbench()
        .env("XDG_CACHE_HOME", &cache)
        .args(["noise", "--runs", "3"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let cached: Vec<std::path::PathBuf> = std::fs::read_dir(&noise_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    // The three runs' own result files are kept beside the cache, in a folder of their own.
    let runs_dirs: Vec<std::path::PathBuf> = std::fs::read_dir(&noise_dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(runs_dirs.len(), 1, "{runs_dirs:?} {stderr}");
    let runs = result_files(&runs_dirs[0]);
    assert_eq!(runs.len(), 3, "{stderr}");
    match output.status.code() {
        Some(0) => {
            assert!(stdout.contains("run-to-run noise here: ±"), "{stdout}");
            assert!(stdout.contains("runs a side to find a change"), "{stdout}");
            assert_eq!(cached.len(), 1, "{cached:?}");
            let doc: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&cached[0]).unwrap()).unwrap();
            assert_eq!(doc["format"], "cnnbench-noise");
            assert_eq!(doc["noise"]["runs"], 3);
            assert_eq!(doc["run_medians_s"].as_array().map(Vec::len), Some(3));
        }
        // A busy machine (another test beside this one): nothing is cached, and it says so.
        Some(3) => {
            assert!(stderr.contains("not cached"), "{stderr}");
            assert!(cached.is_empty(), "{cached:?}");
        }
        other => panic!("cnnbench noise ended with {other:?}: {stderr}"),
    }
    cnnbench()
        .env("XDG_CACHE_HOME", &cache)
        .args(["noise", "--runs", "2"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("at least 3"));

    // Whatever the machine was doing, a known noise is what the rest is about: 4%.
    let doc = serde_json::json!({
        "format": "cnnbench-noise", "version": 1,
        "machine": cnnbench_bench::env::detect_machine(),
        "noise": {"pct": 4.0, "runs": 8, "configuration": "burn-flex resnet18",
                  "measured_at": "2026-12-03T00:00:00Z"},
        "run_medians_s": [0.1, 0.1, 0.1]
    });
    std::fs::create_dir_all(&noise_dir).unwrap();
    let file =
        cnnbench_bench::noise::cache_file(&noise_dir, &cnnbench_bench::env::detect_machine());
    std::fs::write(&file, doc.to_string()).unwrap();
    let run = |threads: &str, out: &str| {
        cnnbench()
            .env("XDG_CACHE_HOME", &cache)
            .args(["run", "resnet18", "--image-size", "32", "-b", "1"])
            .args(["--passes", "3", "--threads", threads, "-o", out])
            .current_dir(dir.path())
            .assert()
            .success()
    };
    // Said under the table whether the run was quiet or not.
    run("1", "a").stderr(predicate::str::contains(
        "run-to-run noise here ±4.0% (cnnbench noise, 2026-12-03)",
    ));
    run("1", "b");
    let recorded: serde_json::Value = only_result(&dir.path().join("a"));
    assert_eq!(
        recorded["run_noise"]["pct"], 4.0,
        "{}",
        recorded["run_noise"]
    );
    // A run disturbed by a neighbour (another test) is not judged at all; what is
    // checked here is the noise, so the machine's verdicts are taken out.
    for side in ["a", "b"] {
        for file in result_files(&dir.path().join(side)) {
            let mut v: serde_json::Value = read_json(&file);
            v.as_object_mut().unwrap().remove("validity");
            std::fs::write(&file, v.to_string()).unwrap();
        }
    }
    // One run a side, both recording the noise: judged, not "not judged: one run".
    let compared = cnnbench()
        .args(["compare", "a", "b", "-f", "csv"])
        .current_dir(dir.path())
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "judged against the run-to-run noise its results recorded",
        ))
        .get_output()
        .stdout
        .clone();
    let csv = String::from_utf8_lossy(&compared);
    assert!(!csv.contains("one run"), "{csv}");
}

/// Round four (#63): `noise --no-save` left its runs' folder in the cache; a noise of 0%
/// (given, or in a cached file) judged every difference a change.
#[test]
fn no_save_keeps_nothing_and_a_noise_of_zero_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let output = cnnbench()
        .env("XDG_CACHE_HOME", &cache)
        .args(["noise", "--runs", "3", "--no-save"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // 0 on a quiet machine, 3 (not cached) on a busy one: nothing is kept either way.
    assert!(
        matches!(output.status.code(), Some(0 | 3)),
        "{:?}: {stderr}",
        output.status
    );
    let left: Vec<_> = std::fs::read_dir(cache.join("cnnbench").join("noise"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?} {stderr}");

    fails_saying(
        cnnbench().args(["compare", "a", "b", "--run-noise", "0"]),
        "--run-noise must be above 0",
    );
}
