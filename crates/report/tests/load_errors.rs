//! Files that are not results: skipped with a warning naming them, or an error under
//! `--strict`; nothing at all is an error the caller reports.

mod common;

use serde_json::json;

use cnnbench_report::load::{load_paths, LoadError};
use common::*;

fn write(dir: &std::path::Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn bad_files_are_skipped_with_a_warning_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    Run::new("tiny", "Test CPU", vec![1.0, 2.0]).write(d, "good.json");
    std::fs::copy(
        legacy_outputs().join("cpu/189638.json"),
        d.join("legacy.json"),
    )
    .unwrap();
    write(d, "corrupt.json", "{\"format\": \"cnnbench-result\", ");
    write(d, "unknown.json", "{\"hello\": 1}");
    write(d, "array.json", "[1, 2]");
    write(
        d,
        "newer.json",
        "{\"format\": \"cnnbench-result\", \"version\": 99}",
    );
    write(
        d,
        "model.json",
        "{\"format\": \"cnnbench-model\", \"version\": 1}",
    );
    write(
        d,
        "broken-legacy.json",
        "{\"forward_times\": [1.0], \"backward_times\": [1.0, 2.0]}",
    );
    write(
        d,
        "half.json",
        "{\"format\": \"cnnbench-result\", \"version\": 1, \"model\": {}}",
    );
    write(d, "notes.txt", "not json, and not looked at in a folder");
    std::fs::write(d.join("binary.json"), [0xff, 0xfe, 0x00]).unwrap();
    let loaded = load_paths(&[d.to_path_buf()], false).unwrap();
    assert_eq!(loaded.records.len(), 2);
    assert_eq!(loaded.files, 10);
    let w = loaded.warnings.join("\n");
    assert_eq!(loaded.warnings.len(), 8, "{w}");
    for (file, why) in [
        ("corrupt.json", "not valid JSON"),
        (
            "unknown.json",
            "not a cnnbench result nor a cnn-benchmarks file",
        ),
        ("array.json", "not an object"),
        ("newer.json", "newer cnnbench"),
        ("model.json", "a `cnnbench-model` document"),
        (
            "broken-legacy.json",
            "invalid cnn-benchmarks file: `forward_times` has 1 samples but `backward_times` has 2",
        ),
        ("half.json", "invalid cnnbench result"),
        ("binary.json", "not UTF-8"),
    ] {
        let line = loaded
            .warnings
            .iter()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("no warning for {file}: {w}"));
        assert!(line.contains(why), "{line}");
        assert!(line.starts_with("skipping "), "{line}");
        assert!(!line.contains('\n'));
    }
}

#[test]
fn strict_turns_the_first_bad_file_into_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    Run::new("tiny", "Test CPU", vec![1.0]).write(tmp.path(), "a.json");
    write(tmp.path(), "b.json", "nope");
    let e = load_paths(&[tmp.path().to_path_buf()], true).unwrap_err();
    assert!(matches!(e, LoadError::Strict(_)));
    let msg = e.to_string();
    assert!(
        msg.contains("b.json: not valid JSON") && msg.contains("drop --strict"),
        "{msg}"
    );
}

#[test]
fn a_missing_path_is_an_error_and_an_empty_folder_yields_nothing() {
    let e = load_paths(&["/no/such/place".into()], false).unwrap_err();
    assert_eq!(e.to_string(), "no such file or folder: /no/such/place");
    let tmp = tempfile::tempdir().unwrap();
    let loaded = load_paths(&[tmp.path().to_path_buf()], false).unwrap();
    assert!(loaded.records.is_empty() && loaded.files == 0);
}

#[test]
fn a_file_named_twice_is_read_once_and_any_extension_works_when_named() {
    let tmp = tempfile::tempdir().unwrap();
    let p = Run::new("tiny", "Test CPU", vec![1.0]).write(tmp.path(), "result.out");
    let loaded = load_paths(&[p.clone(), p, tmp.path().to_path_buf()], true).unwrap();
    assert_eq!(loaded.records.len(), 1);
}

#[test]
fn folders_are_searched_recursively_in_a_stable_order() {
    let loaded = load_paths(&[legacy_outputs()], true).unwrap();
    assert_eq!(loaded.records.len(), 24, "6 + 9 + 9 files in three folders");
    assert!(loaded.warnings.is_empty());
    let again = load_paths(&[legacy_outputs()], true).unwrap();
    let paths =
        |l: &cnnbench_report::Loaded| l.records.iter().map(|r| r.path.clone()).collect::<Vec<_>>();
    assert_eq!(paths(&loaded), paths(&again));
}

#[cfg(unix)]
#[test]
fn huge_files_pipes_and_devices_are_skipped_with_a_warning_before_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    Run::new("tiny", "Test CPU", vec![1.0, 2.0]).write(d, "good.json");
    // Sparse: no disk used; reading it would take 10 GiB of memory.
    std::fs::File::create(d.join("big.json"))
        .unwrap()
        .set_len(10 << 30)
        .unwrap();
    // Opening a FIFO for reading blocks until a writer comes, and /dev/zero never ends.
    let fifo = std::process::Command::new("mkfifo")
        .arg(d.join("pipe.json"))
        .status()
        .unwrap();
    assert!(fifo.success());
    std::os::unix::fs::symlink("/dev/zero", d.join("zero.json")).unwrap();
    let start = std::time::Instant::now();
    let loaded = load_paths(&[d.to_path_buf()], false).unwrap();
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(loaded.records.len(), 1);
    assert_eq!(loaded.files, 4);
    let w = loaded.warnings.join("\n");
    assert_eq!(loaded.warnings.len(), 3, "{w}");
    for (file, why) in [
        (
            "big.json",
            "it is 10.0 GiB; result files above 256 MiB are refused",
        ),
        ("pipe.json", "it is a named pipe (FIFO), not a regular file"),
        ("zero.json", "it is a character device, not a regular file"),
    ] {
        let line = loaded
            .warnings
            .iter()
            .find(|l| l.contains(file))
            .unwrap_or_else(|| panic!("no warning for {file}: {w}"));
        assert!(
            line.starts_with("skipping ") && line.contains(why),
            "{line}"
        );
    }
    // Named directly, the same; under --strict, an error.
    let loaded = load_paths(&["/dev/zero".into()], false).unwrap();
    assert!(loaded.records.is_empty() && loaded.warnings.len() == 1);
    let e = load_paths(&[d.join("big.json")], true).unwrap_err();
    assert!(e.to_string().contains("result files above 256 MiB"), "{e}");
}

/// A time that is not one (infinite, past f64, negative) must never reach a comparison:
/// `compare --fail-on-regression` once read an infinite time as "no change". Such files
/// are skipped with a warning naming them, in every form the number can take.
#[test]
fn times_that_are_not_times_are_refused_when_loading() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let good = Run::new("tiny", "Test CPU", vec![1.0, 2.0]).json();
    for (name, bad) in [
        ("overflow.json", "1e999"),
        ("negative.json", "-0.5"),
        ("huge-negative.json", "-1e999"),
    ] {
        let text = serde_json::to_string(&good).unwrap();
        let samples = serde_json::to_string(&good["samples"]["total"]).unwrap();
        let first = samples.trim_start_matches('[').split(',').next().unwrap();
        let text = text.replacen(
            &format!("\"total\":{samples}"),
            &format!("\"total\":{}", samples.replacen(first, bad, 1)),
            1,
        );
        assert!(text.contains(bad), "{text}");
        write(d, name, &text);
    }
    write(d, "good.json", &serde_json::to_string(&good).unwrap());
    let loaded = load_paths(&[d.to_path_buf()], false).unwrap();
    assert_eq!(loaded.records.len(), 1, "only the good file");
    let w = loaded.warnings.join("\n");
    for name in ["overflow.json", "negative.json", "huge-negative.json"] {
        assert!(w.contains(name), "{name}: {w}");
    }
}

/// 1e308 s is finite in the file but infinite in milliseconds: `compare` said "no
/// change" and `report --charts` spun for ever in the chart's log axis. Every time is held
/// to what a pass could take (1 ns to a day; a phase may be 0), the total, a phase and the
/// cold start alike, and the warning names the file and the field.
#[test]
fn times_no_pass_could_take_are_refused_naming_the_file_and_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let good = Run::new("tiny", "Test CPU", vec![1.0, 2.0]).json();
    let cases: [(&str, &str, serde_json::Value); 9] = [
        ("huge.json", "samples.total", json!([1e308, 0.002])),
        ("tiny-base.json", "samples.total", json!([5e-324, 0.002])),
        ("sub-ns.json", "samples.total", json!([1e-300, 1e-300])),
        ("zero-total.json", "samples.total", json!([0.0, 0.002])),
        ("over-a-day.json", "samples.total", json!([86_401.0, 0.002])),
        ("huge-phase.json", "samples.forward", json!([1e308, 0.001])),
        ("negative-cold.json", "cold_start.prepare_s", json!(-1.0)),
        ("huge-cold.json", "cold_start.first_pass_s", json!(1e308)),
        (
            "negative-compile.json",
            "cold_start.compile_s",
            json!(-0.001),
        ),
    ];
    for (name, field, value) in &cases {
        let mut bad = good.clone();
        let (object, key) = field.split_once('.').unwrap();
        if object == "cold_start" {
            bad["cold_start"] = json!({"process_before_run_s": 0.2, "prepare_s": 0.5, "first_pass_s": 0.1, "process_to_first_timed_pass_s": 0.9, "first_in_process": true});
        }
        bad[object][key] = value.clone();
        write(d, name, &serde_json::to_string(&bad).unwrap());
    }
    let mut zero_phase = good.clone();
    zero_phase["samples"]["forward"] = json!([0.0, 0.0008]);
    write(
        d,
        "zero-phase.json",
        &serde_json::to_string(&zero_phase).unwrap(),
    );
    let loaded = load_paths(&[d.to_path_buf()], false).unwrap();
    assert_eq!(loaded.records.len(), 1, "only a phase of 0 is a time");
    let w = loaded.warnings.join("\n");
    for (name, field, _) in &cases {
        let line = w.lines().find(|l| l.contains(name)).unwrap_or_default();
        assert!(line.contains(field), "{name}: {w}");
    }
}

#[test]
fn a_folder_that_cannot_be_read_is_a_warning_not_the_end_of_the_report() {
    // Permissions do not stop root, so the folder is one whose path is longer than the
    // system allows (4096 bytes), made one level at a time.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    Run::new("tiny", "Test CPU", vec![1.0, 2.0]).write(d, "good.json");
    let name = "n".repeat(250);
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "for i in $(seq 20); do mkdir {name} && cd -P {name} || exit 1; done"
        ))
        .current_dir(d)
        .status()
        .unwrap();
    assert!(made.success());
    let loaded = load_paths(&[d.to_path_buf()], false).unwrap();
    assert_eq!(loaded.records.len(), 1);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(
        loaded.warnings[0].starts_with("skipping ")
            && loaded.warnings[0].contains("cannot read it"),
        "{}",
        loaded.warnings[0]
    );
    // The profile loader reads the same folders and leaves the warning to this one.
    let (profiles, warnings) = cnnbench_report::profile::load_profiles(&[d.to_path_buf()]);
    assert!(profiles.is_empty() && warnings.is_empty(), "{warnings:?}");
    let e = load_paths(&[d.to_path_buf()], true).unwrap_err();
    assert!(e.to_string().contains("cannot read it"), "{e}");
    let _ = std::process::Command::new("rm").arg("-rf").arg(d).status();
}

#[test]
fn a_deeply_nested_tree_is_walked_quickly_to_the_depth_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let mut dir = tmp.path().to_path_buf();
    for _ in 0..1000 {
        dir.push("a");
    }
    std::fs::create_dir_all(&dir).unwrap();
    Run::new("tiny", "Test CPU", vec![1.0]).write(tmp.path().join("a").as_path(), "top.json");
    let started = std::time::Instant::now();
    let loaded = load_paths(&[tmp.path().to_path_buf()], false).unwrap();
    // 800 levels took 10 s before the limit.
    assert!(
        started.elapsed().as_secs_f64() < 2.0,
        "{:?}",
        started.elapsed()
    );
    assert_eq!(loaded.records.len(), 1);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert!(loaded.warnings[0].contains("more than 64 levels down"));
}
