//! `cnnbench report` end to end: formats, legacy layout, speed-ups, warnings, files.

use crate::common::{cnnbench, fails_saying};

use predicates::prelude::*;
use std::path::PathBuf;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures")
}

fn legacy_1080ti() -> Vec<PathBuf> {
    let o = fixtures().join("legacy/outputs");
    vec![o.join("1080Ti"), o.join("1080Ti_cudnn51")]
}

#[test]
fn legacy_layout_reproduces_the_readme_rows_when_piped() {
    let out = cnnbench()
        .arg("report")
        .args(legacy_1080ti())
        .args(["--layout", "legacy", "--aliases"])
        .arg(fixtures().join("legacy-aliases.toml"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(out).unwrap();
    assert!(md.contains(
        "## resnet-50\n(input 16 x 3 x 224 x 224)\n\n|GPU|cuDNN|Forward (ms)|Backward (ms)|Total (ms)|\n|---|---|---:|---:|---:|\n|GTX 1080 Ti|5.1.10|34.14|67.06|101.21|\n|GTX 1080 Ti|None|99.90|177.58|277.47|\n"
    ), "{md}");
    assert!(
        md.contains("|GTX 1080 Ti|5.1.10|4.31|9.58|13.89|"),
        "alexnet row"
    );
    // The zoo supplies the overview's depth and error rates.
    assert!(md.contains("## Models"), "{md}");
}

#[test]
fn speedups_alone_and_for_a_chosen_pair() {
    cnnbench()
        .arg("report")
        .args(legacy_1080ti())
        .arg("--aliases")
        .arg(fixtures().join("legacy-aliases.toml"))
        .args(["--stat", "mean", "--speedups"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "- GTX 1080 Ti · torch7 cuDNN 5.1.10 is 2.74x to 3.84x faster than GTX 1080 Ti · torch7 nn across 6 models",
        ));
    cnnbench()
        .arg("report")
        .args(legacy_1080ti())
        .args(["--layout", "legacy", "--speedups", "nn", "cuDNN 5.1.10"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "torch7 nn is 2.74x to 3.84x slower than",
        ));
    cnnbench()
        .arg("report")
        .args(legacy_1080ti())
        .args(["--speedups", "only-one"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--speedups takes no value (every pair) or two configurations A B",
        ));
}

#[test]
fn bad_files_warn_and_strict_fails() {
    let bad = fixtures().join("bad");
    cnnbench()
        .arg("report")
        .arg(&bad)
        .assert()
        .success()
        .stderr(
            predicate::str::contains("warning: skipping")
                .and(predicate::str::contains("corrupt.json: not valid JSON")),
        )
        .stderr(predicate::str::contains("unknown.json"))
        .stdout(predicate::str::contains("resnet18"));
    cnnbench()
        .arg("report")
        .arg(&bad)
        .arg("--strict")
        .assert()
        .failure()
        .stderr(predicate::str::contains("error: ").and(predicate::str::contains("drop --strict")));
}

#[test]
fn nothing_to_report_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    cnnbench()
        .arg("report")
        .arg(tmp.path())
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("no benchmark results in")
                .and(predicate::str::contains("cnnbench run")),
        );
    cnnbench()
        .args(["report", "/no/such/folder"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "no such file or folder: /no/such/folder",
        ));
    fails_saying(
        cnnbench()
            .arg("report")
            .arg(fixtures().join("ours/base"))
            .arg("--aliases")
            .arg(fixtures().join("bad/corrupt.json")),
        "aliases file",
    );
}

#[test]
fn csv_and_json_formats() {
    // `cnnbench report` of the base fixtures in a format, its standard output.
    let report = |format: &str| {
        cnnbench()
            .arg("report")
            .arg(fixtures().join("ours/base"))
            .args(["--format", format])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone()
    };
    let csv = String::from_utf8(report("csv")).unwrap();
    assert_eq!(csv.lines().count(), 4);
    assert!(csv.starts_with("model,model_label,batch_size,"));
    let v: serde_json::Value = serde_json::from_slice(&report("json")).unwrap();
    assert_eq!(v["results"].as_array().unwrap().len(), 3);
}

#[test]
fn html_output_and_charts_are_files() {
    let tmp = tempfile::tempdir().unwrap();
    let html = tmp.path().join("report.html");
    let charts = tmp.path().join("charts");
    cnnbench()
        .arg("report")
        .args(legacy_1080ti())
        .arg("--output")
        .arg(&html)
        .arg("--charts")
        .arg(&charts)
        .assert()
        .success()
        .stdout(predicate::str::is_empty())
        .stderr(
            predicate::str::contains("wrote 22 charts to")
                .and(predicate::str::contains("report.html")),
        );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.starts_with("<!DOCTYPE html>") && page.contains("<svg") && page.contains("Speed-ups")
    );
    assert!(charts.join("overview.svg").exists() && charts.join("overview.png").exists());
    // The HTML report asks for speed-ups, so their chart is written too.
    assert!(charts.join("speedups.svg").exists() && charts.join("speedups.png").exists());
}

#[test]
fn compare_reports_verdicts_and_gates_regressions() {
    let base = fixtures().join("ours/base");
    let new = fixtures().join("ours/new");
    // One run (file) a model on each side: not judged, and a gate cannot pass on that.
    cnnbench()
        .arg("compare")
        .arg(&base)
        .arg(&new)
        .assert()
        .success()
        .stdout(predicate::str::contains("not judged: one run"))
        .stdout(predicate::str::contains("run --repeat N"));
    cnnbench()
        .args(["compare", "--fail-on-regression", "10"])
        .arg(&base)
        .arg(&new)
        .assert()
        .code(3)
        .stderr(predicate::str::contains("could not be judged"));
    // With the machine's run-to-run noise given, they are judged against it.
    // `cnnbench compare BASE NEW --run-noise 1`, to which each check adds its options.
    let compare = || {
        let mut command = cnnbench();
        command
            .arg("compare")
            .arg(&base)
            .arg(&new)
            .args(["--run-noise", "1"]);
        command
    };
    compare()
        .assert()
        .success()
        .stdout(predicate::str::contains("1 faster, 1 slower, 1 no change"))
        .stderr(predicate::str::contains(
            "warning: the framework version differs: BASE burn 0.22.1 vs NEW burn 0.22.2",
        ));
    compare()
        .args(["--fail-on-regression", "10"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("REGRESSION"))
        .stderr(predicate::str::contains(
            "slower than BASE by more than 10%",
        ));
    compare()
        .args(["--fail-on-regression", "30"])
        .assert()
        .success();
    let out = compare()
        .args(["--format", "json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["pairs"].as_array().unwrap().len(), 3);
    compare()
        .args(["--format", "html"])
        .assert()
        .success()
        .stdout(predicate::str::starts_with("<!DOCTYPE html>"))
        .stdout(predicate::str::contains("1 faster, 1 slower, 1 no change"));
}

/// Round four (#63): five copies a side of one run each turned "not judged" into "slower
/// (regression)" and exit 1. A copy (byte for byte, or the same run written out again
/// in another layout) is the same run: counted once, with a warning naming both files.
#[test]
fn copies_of_a_run_are_counted_once_and_cannot_outvote_a_comparison() {
    let tmp = tempfile::tempdir().unwrap();
    let copies = |from: &std::path::Path, to: &std::path::Path| {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let path = entry.unwrap().path();
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let text = std::fs::read_to_string(&path).unwrap();
            for k in 1..=4 {
                std::fs::write(to.join(format!("{stem}-copy{k}.json")), &text).unwrap();
            }
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            let compact = serde_json::to_string(&v).unwrap();
            std::fs::write(to.join(format!("{stem}-compact.json")), compact).unwrap();
        }
    };
    let (base, new) = (tmp.path().join("base"), tmp.path().join("new"));
    copies(&fixtures().join("ours/base"), &base);
    copies(&fixtures().join("ours/new"), &new);
    cnnbench()
        .arg("compare")
        .arg(&base)
        .arg(&new)
        .assert()
        .success()
        .stdout(predicate::str::contains("not judged: one run"))
        .stdout(predicate::str::contains("slower").not())
        .stderr(predicate::str::contains("counted once"));
    cnnbench()
        .args(["compare", "--fail-on-regression", "10"])
        .arg(&base)
        .arg(&new)
        .assert()
        .code(3);
    // The report counts the run once as well: one row, from one run.
    let out = cnnbench()
        .args(["report", "--format", "json"])
        .arg(&base)
        .assert()
        .success()
        .get_output()
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    assert!(rows.iter().all(|row| row["runs"] == 1), "{v}");
}

/// Round four (#63): a 134 MiB result took 2.1 GB to report (a tree of JSON values
/// first, some 16 times the file). Read straight into its types, a 64 MiB result is
/// reported within 512 MB of address space (`ulimit -v`), which the tree alone exceeded.
#[cfg(target_os = "linux")]
#[test]
fn a_large_result_is_reported_in_memory_of_its_own_size() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("ours/base/resnet18.json")).unwrap(),
    )
    .unwrap();
    let samples: Vec<f64> = (0..3_000_000)
        .map(|i| 0.05 + (i % 1000) as f64 * 1e-7)
        .collect();
    v["samples"] = serde_json::json!({ "total": samples, "forward": samples });
    let file = tmp.path().join("large.json");
    std::fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size > 48 << 20, "{size} bytes");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 512000 && exec \"$0\" report \"$1\" -f csv")
        .arg(assert_cmd::cargo::cargo_bin("cnnbench"))
        .arg(&file)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    let csv = String::from_utf8_lossy(&out.stdout);
    assert_eq!(csv.lines().count(), 2, "{csv} {stderr}");
}

#[test]
fn compare_with_nothing_in_common_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("ours/base/resnet18.json")).unwrap(),
    )
    .unwrap();
    v["model"]["name"] = "tiny-custom".into();
    std::fs::write(tmp.path().join("tiny.json"), v.to_string()).unwrap();
    fails_saying(
        cnnbench()
            .arg("compare")
            .arg(fixtures().join("ours/base"))
            .arg(tmp.path()),
        "has a counterpart",
    );
}

/// A report over profiles beside results draws every chart kind the results have — a
/// batch sweep's too, not only the per-model charts — and drops the result loader's
/// warning about each profile by its kind, not by words that other warnings may share.
#[test]
fn a_report_with_profiles_draws_the_results_sweep_and_keeps_other_warnings() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    std::fs::copy(
        fixtures().join("profile/resnet50.profile.json"),
        results.join("resnet50.profile.json"),
    )
    .unwrap();
    // One model on one engine at three batch sizes: a sweep.
    let text = std::fs::read_to_string(fixtures().join("ours/base/resnet18.json")).unwrap();
    let result: serde_json::Value = serde_json::from_str(&text).unwrap();
    for batch in [8, 16, 32] {
        let mut r = result.clone();
        r["config"]["batch_size"] = batch.into();
        std::fs::write(
            results.join(format!("resnet18-b{batch}.json")),
            serde_json::to_string(&r).unwrap(),
        )
        .unwrap();
    }
    // Not a result, nor a profile, though its name and text say "cnnbench-profile".
    std::fs::write(
        results.join("cnnbench-profile-notes.json"),
        r#"{"note": "cnnbench-profile"}"#,
    )
    .unwrap();
    let charts = tmp.path().join("charts");
    let out = cnnbench()
        .arg("report")
        .arg(&results)
        .args(["--format", "markdown", "--charts"])
        .arg(&charts)
        .assert()
        .success()
        .get_output()
        .clone();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("wrote 4 profile charts"), "{stderr}");
    for ext in ["svg", "png"] {
        let sweep = charts.join(format!("sweep-resnet18-3x224x224-train.{ext}"));
        assert!(sweep.is_file(), "{} missing; {stderr}", sweep.display());
    }
    let skipped: Vec<&str> = stderr.lines().filter(|l| l.contains("skipping")).collect();
    assert_eq!(skipped.len(), 1, "{stderr}");
    assert!(
        skipped[0].contains("cnnbench-profile-notes.json"),
        "{stderr}"
    );
    assert!(!stderr.contains("resnet50.profile.json"), "{stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains("By op type"), "{stdout}");
}

/// The mean total time per pass of each model in one of the original suite's output
/// folders, in seconds, read here straight from its files (`total_times`, else forward
/// plus backward), not through the report crate: the independent side of the check.
fn legacy_means(dir: &std::path::Path) -> std::collections::BTreeMap<String, f64> {
    let mut samples: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for file in std::fs::read_dir(dir).unwrap() {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file.unwrap().path()).unwrap()).unwrap();
        let t7 = v["opt"]["model_t7"].as_str().unwrap();
        let model = t7.rsplit('/').next().unwrap().trim_end_matches(".t7");
        let times = |key: &str| -> Vec<f64> {
            v[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        };
        let total = if v["total_times"].is_array() {
            times("total_times")
        } else {
            let b = times("backward_times");
            times("forward_times")
                .iter()
                .zip(&b)
                .map(|(f, b)| f + b)
                .collect()
        };
        samples.entry(model.to_string()).or_default().extend(total);
    }
    samples
        .into_iter()
        .map(|(m, s)| (m, s.iter().sum::<f64>() / s.len() as f64))
        .collect()
}

/// `report --conclusions` on the original suite's files makes its README's kinds of
/// statement — GPU against GPU ("GTX 1080 > Maxwell Titan X"), cuDNN against nn ("Always
/// use cuDNN"), GPU against CPU ("GPUs are critical") — and each range and geometric
/// mean is the one computed here from the files' numbers.
#[test]
fn conclusions_state_the_original_readmes_kinds_checked_against_the_files() {
    let legacy = fixtures().join("legacy");
    let (outputs, more) = (legacy.join("outputs"), legacy.join("more-gpus"));
    let out = cnnbench()
        .arg("report")
        .args([&outputs, &more])
        .arg("--aliases")
        .arg(fixtures().join("legacy-aliases.toml"))
        .args(["--stat", "mean", "--no-overview", "--conclusions"])
        .args(["--format", "markdown"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(out).unwrap();
    let section = md
        .split("## Conclusions")
        .nth(1)
        .expect("a conclusions section");
    // The statement that starts so, its numbers (lo, hi, geometric mean) and model count,
    // against the ratios B/A of the folders' means over the models both ran.
    let check = |start: &str, a: &std::path::Path, b: &std::path::Path| {
        let line = section
            .lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no line starting {start:?} in\n{section}"));
        let (ma, mb) = (legacy_means(a), legacy_means(b));
        let ratios: Vec<f64> = ma
            .iter()
            .filter_map(|(m, ta)| mb.get(m).map(|tb| tb / ta))
            .collect();
        let lo = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = ratios.iter().copied().fold(0.0, f64::max);
        let gm = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        let shown: Vec<f64> = line
            .split([' ', '(', ')', ';', ','])
            .filter_map(|w| w.strip_suffix('x')?.parse().ok())
            .collect();
        assert_eq!(shown.len(), 3, "{line}");
        for (shown, computed) in shown.iter().zip([lo, hi, gm]) {
            assert!(
                (shown - computed).abs() <= 0.0051,
                "{shown} against {computed}: {line}"
            );
        }
        assert!(
            line.contains("faster than")
                && line.contains(&format!("across {} models", ratios.len())),
            "{line}"
        );
        assert!(
            line.contains("no interval: one run a side for every model"),
            "{line}"
        );
        (lo, hi, ratios.len())
    };
    let (lo, hi, n) = check(
        "- **GPU against GPU**: With torch7 cuDNN 5.1.05, GTX 1080 is ",
        &more.join("1080_cudnn51"),
        &more.join("titan_xm_cudnn51"),
    );
    assert!(lo > 1.0 && hi < 1.2 && n == 8, "{lo} {hi} {n}");
    let (lo, hi, n) = check(
        "- **Software against software**: On GTX 1080 Ti, torch7 cuDNN 5.1.10 is ",
        &outputs.join("1080Ti_cudnn51"),
        &outputs.join("1080Ti"),
    );
    assert!(lo > 2.0 && hi < 4.0 && n == 6, "{lo} {hi} {n}");
    let (lo, hi, n) = check(
        "- **GPU against CPU**: GTX 1080 Ti · torch7 cuDNN 5.1.10 is ",
        &outputs.join("1080Ti_cudnn51"),
        &outputs.join("cpu"),
    );
    assert!(lo > 40.0 && hi < 100.0 && n == 7, "{lo} {hi} {n}");
    // Two GPUs with two cuDNN versions differ in two ways: said, not concluded.
    assert!(
        section.contains("- GTX 1080 Ti · torch7 cuDNN 5.1.10 against GTX 1080 · torch7 cuDNN 5.1.05: they differ in the device and the software"),
        "{section}"
    );
    // The other formats carry the same statements.
    let report = |format: &str| {
        let out = cnnbench()
            .arg("report")
            .args([&outputs, &more])
            .args(["--conclusions", "--format", format])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let v: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let statements = v["conclusions"]["statements"].as_array().unwrap();
    assert_eq!(statements.len(), 6, "{v:#}");
    assert!(statements
        .iter()
        .all(|s| s["ci95"].is_null() && s["sentence"].as_str().unwrap().contains(" faster than ")));
    let html = report("html");
    assert!(
        html.contains("<section id=\"conclusions\">")
            && html.contains("<strong>GPU against CPU</strong>"),
        "{html}"
    );
    assert!(report("pretty").contains("Conclusions (median total time)"));
}
