//! Helpers shared by the CLI's end-to-end tests: the binary, its result files, and the
//! run-it-and-check-it steps every test file would otherwise write again.
#![allow(dead_code)] // each test binary uses its own subset

use assert_cmd::Command;
use predicates::prelude::*;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The `cnnbench` binary built for these tests.
pub fn cnnbench() -> Command {
    Command::cargo_bin("cnnbench").expect("the cnnbench binary is built")
}

/// `cnnbench peak` on sizes that take milliseconds (a 64² matrix product, an 8-channel
/// 8×8 convolution, 1 Mi values streamed), cached in `cache`.
pub fn tiny_peak(cache: &Path) -> Command {
    let mut command = cnnbench();
    command.env("XDG_CACHE_HOME", cache).args([
        "peak",
        "--size",
        "64",
        "--stream-mi",
        "1",
        "--conv-channels",
        "8",
        "--conv-size",
        "8",
        "--conv-batch",
        "1",
    ]);
    command
}

/// Every `*.json` file below `dir`, sorted.
pub fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(result_files(&path));
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A JSON file parsed as `T` (a `serde_json::Value`, a result, a profile…).
pub fn read_json<T: DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The one result file below `dir`, parsed; fails naming the files found otherwise.
pub fn only_result<T: DeserializeOwned>(dir: &Path) -> T {
    let files = result_files(dir);
    assert_eq!(files.len(), 1, "one result file expected: {files:?}");
    read_json(&files[0])
}

/// Runs `cmd` and fails with its stderr unless it succeeds; returns its output.
pub fn run_ok(cmd: &mut Command) -> Output {
    let output = cmd.output().expect("cnnbench starts");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// The standard output of `cmd` (which must succeed) parsed as JSON (`--json`).
pub fn json_stdout<T: DeserializeOwned>(cmd: &mut Command) -> T {
    let output = run_ok(cmd);
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

/// `cnnbench run MODEL --engine ENGINE` on 32×32 images, batch 2, two passes, quiet, with
/// `extra` arguments (`--mode`, `--threads`…), into a folder of its own; returns its one
/// result.
pub fn tiny_run(model: &str, engine: &str, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let out = dir.path().join("results");
    cnnbench()
        .args(["run", model, "--engine", engine])
        .args(["--image-size", "32", "-b", "2", "--passes", "2", "-q", "-o"])
        .arg(&out)
        .args(extra)
        .assert()
        .success();
    let result: serde_json::Value = only_result(&out);
    assert_watched(&result);
    result
}

/// Every engine's result says what the run paid before its first timed pass and what
/// the machine did during the timed passes.
pub fn assert_watched(result: &serde_json::Value) {
    let cold = &result["cold_start"];
    let prepare = cold["prepare_s"].as_f64().unwrap_or(-1.0);
    let first = cold["first_pass_s"].as_f64().unwrap_or(-1.0);
    assert!(prepare >= 0.0 && first > 0.0, "cold start: {cold}");
    assert!(
        cold["process_to_first_timed_pass_s"]
            .as_f64()
            .unwrap_or(0.0)
            >= prepare
    );
    let validity = &result["validity"];
    assert!(
        ["clean", "disturbed"].contains(&validity["verdict"].as_str().unwrap_or("")),
        "validity: {validity}"
    );
    let passes = result["samples"]["total"].as_array().map_or(0, Vec::len);
    assert_eq!(validity["passes"].as_array().map_or(0, Vec::len), passes);
}

/// `cnnbench verify resnet18 --engines burn-flex,ENGINE` at 32×32 with `extra`
/// arguments, asserted to pass; further checks go on the returned assertion.
pub fn verify_against_burn_flex(engine: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    cnnbench()
        .args(["verify", "resnet18", "--engines"])
        .arg(format!("burn-flex,{engine}"))
        .args(["--image-size", "32"])
        .args(extra)
        .assert()
        .success()
}

/// A train-mode run on an inference-only engine fails before anything runs, saying
/// what the engine runs.
pub fn assert_training_refused(engine: &str) {
    cnnbench()
        .args(["run", "resnet18", "--engine", engine, "--mode", "train"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(format!(
            "{engine} cannot run train mode; it runs: infer"
        )));
}

/// The `cnnbench` binary as a plain process, for tests that signal it while it runs.
pub fn cnnbench_process() -> std::process::Command {
    std::process::Command::new(assert_cmd::cargo::cargo_bin("cnnbench"))
}

/// Starts `cmd` with its output captured, sends it SIGINT (what Ctrl-C sends) after
/// `after`, and waits for it to exit; returns its output and how long it took to exit
/// once interrupted.
pub fn interrupted_after(
    mut cmd: std::process::Command,
    after: std::time::Duration,
) -> (Output, std::time::Duration) {
    let child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cnnbench starts");
    std::thread::sleep(after);
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -INT failed");
    let interrupted = std::time::Instant::now();
    let output = child.wait_with_output().expect("cnnbench exits");
    (output, interrupted.elapsed())
}

/// `cmd -o OUT` fails, its stderr saying `message`, and leaves no result in `out`: a
/// refused run writes nothing.
pub fn assert_refused_writing_nothing(cmd: &mut Command, out: &Path, message: &str) {
    cmd.arg("-o")
        .arg(out)
        .assert()
        .failure()
        .stderr(predicate::str::contains(message));
    let files = result_files(out);
    assert!(files.is_empty(), "a refused run wrote {files:?}");
}

/// `cmd` fails, its stderr saying `message`.
pub fn fails_saying(cmd: &mut Command, message: impl AsRef<str>) -> assert_cmd::assert::Assert {
    cmd.assert()
        .failure()
        .stderr(predicate::str::contains(message.as_ref()))
}

/// `cnnbench COMMAND MODEL` at SIZE×SIZE, batch 1, one timed pass: the smallest
/// measurement `run` or `profile` makes, to which a test adds what it checks.
pub fn one_pass(command: &str, model: &str, size: &str) -> Command {
    let mut cmd = cnnbench();
    cmd.args([command, model, "--image-size", size, "-b", "1", "-n", "1"]);
    cmd
}

/// `cnnbench convert FROM TO`, which must succeed.
pub fn convert(from: &Path, to: &Path) {
    cnnbench()
        .arg("convert")
        .arg(from)
        .arg(to)
        .assert()
        .success();
}

/// A folder of `count` small PNG images, each a different pattern and size, for
/// `--images` and `--calibration-images`.
pub fn image_folder(dir: &Path, count: u32) -> PathBuf {
    let folder = dir.join("images");
    std::fs::create_dir_all(&folder).unwrap();
    for i in 0..count {
        let (width, height) = (40 + 7 * i, 36 + 3 * i);
        let image = image::RgbImage::from_fn(width, height, |x, y| {
            let wave = |k: u32| ((x * (k + i) + y * (3 * k + 1)) % 256) as u8;
            image::Rgb([wave(1), wave(2), wave(5)])
        });
        image
            .save(folder.join(format!("image-{i:02}.png")))
            .unwrap();
    }
    folder
}
