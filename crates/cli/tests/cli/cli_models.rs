//! End-to-end tests of `cnnbench models` and `cnnbench engines`.

use crate::common::{cnnbench, convert, fails_saying, json_stdout};

use predicates::prelude::*;
use serde_json::Value;

#[test]
fn lists_the_zoo_as_a_table_and_as_json() {
    cnnbench()
        .arg("models")
        .assert()
        .success()
        .stdout(predicate::str::contains("resnet200"))
        .stdout(predicate::str::contains("25,557,032"))
        .stdout(predicate::str::contains("inception-v1"));
    let rows: Vec<Value> = json_stdout(cnnbench().args(["models", "--json"]));
    assert_eq!(rows.len(), 23);
    let resnet50 = rows.iter().find(|r| r["name"] == "resnet50").unwrap();
    assert_eq!(resnet50["params"], 25_557_032u64);
    assert_eq!(resnet50["macs"], 4_089_184_256u64);
    assert_eq!(resnet50["depth"], 50);
    assert_eq!(resnet50["input"], serde_json::json!([3, 224, 224]));
}

#[test]
fn shows_one_models_layers_at_any_size() {
    cnnbench()
        .args(["models", "resnet18"])
        .assert()
        .success()
        .stdout(predicate::str::contains("layer1.0.conv1"))
        .stdout(predicate::str::contains("64×112×112"))
        .stdout(predicate::str::contains("11,689,512"));
    cnnbench()
        .args(["models", "GoogLeNet", "--image-size", "64"])
        .assert()
        .success()
        .stdout(predicate::str::contains("inception-v1 — input 3×64×64"));
    let row: Value =
        json_stdout(cnnbench().args(["models", "resnet18", "--image-size", "112x64", "--json"]));
    assert_eq!(row["input"], serde_json::json!([3, 112, 64]));
    assert_eq!(row["params"], 11_689_512u64);
}

#[test]
fn unknown_names_suggest_the_closest() {
    fails_saying(
        cnnbench().args(["models", "resnt50"]),
        "did you mean resnet50",
    );
}

#[test]
fn too_small_images_name_the_layer() {
    cnnbench()
        .args(["models", "alexnet-bvlc", "--image-size", "16"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("node \""))
        .stderr(predicate::str::contains("too small"));
}

#[test]
fn exports_and_reloads_model_files_without_overwriting() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r18.json");
    cnnbench()
        .args(["models", "resnet18", "--export"])
        .arg(&file)
        .assert()
        .success();
    let row: Value = json_stdout(cnnbench().args(["models", "--json", "--file"]).arg(&file));
    assert_eq!(row["params"], 11_689_512u64);
    assert_eq!(row["depth"], 18);
    fails_saying(
        cnnbench()
            .args(["models", "resnet18", "--export"])
            .arg(&file),
        "exists already",
    );
}

/// A conv over 2²⁰ channels of 2²⁰×2²⁰ saturates its MACs at `u64::MAX`; a 1-MAC
/// linear layer after it wrapped the total to 0 ("0.000 GMACs"). The total saturates
/// too, in the table (shown as at least that) and in `--json`. (Hostile input, round
/// three.)
#[test]
fn total_macs_saturate_instead_of_wrapping_to_zero() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("huge.json");
    std::fs::write(
        &file,
        r#"{"format": "cnnbench-model", "version": 1, "name": "huge",
          "input": [1048576, 1048576, 1048576],
          "nodes": [
            {"name": "conv", "op": "conv2d", "in_channels": 1048576, "out_channels": 1048576, "kernel": 1, "bias": false},
            {"name": "pool", "op": "adaptive_avg_pool2d", "output": 1},
            {"name": "one", "op": "slice_channels", "start": 0, "end": 1},
            {"name": "flat", "op": "flatten"},
            {"name": "fc", "op": "linear", "in_features": 1, "out_features": 1, "bias": false}
          ]}"#,
    )
    .unwrap();
    let output = cnnbench()
        .args(["models", "--file"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let total = stdout
        .lines()
        .find(|l| l.starts_with("| Total"))
        .unwrap_or_else(|| panic!("no total row in\n{stdout}"));
    assert!(
        total.ends_with("| ≥ 18,446,744,073,709,551,615 |"),
        "{total}"
    );
    assert!(
        stdout.contains("≥ 18446744073.710 GMACs per image"),
        "{stdout}"
    );
    assert!(!stdout.contains(" 0.000 GMACs"), "{stdout}");
    let row: Value = json_stdout(cnnbench().args(["models", "--json", "--file"]).arg(&file));
    assert_eq!(row["macs"], u64::MAX);
}

#[test]
fn invalid_model_files_are_explained() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"swish"}]}"#,
            "unknown op \"swish\"",
        ),
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"relu","inputs":["b"]}]}"#,
            "reads \"b\"",
        ),
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"conv2d","in_channels":3,"out_channels":4,"kernel":0}]}"#,
            "kernel must be at least 1",
        ),
        (
            r#"{"format":"cnnbench-model","version":2,"name":"x","input":[3,8,8],"nodes":[]}"#,
            "version 2 is not supported",
        ),
        (
            r#"{"format":"cnnbench-model","version":1,"name":"x","input":[3,8,8],"nodes":[{"name":"a","op":"relu","colour":1}]}"#,
            "unknown field `colour`",
        ),
        ("{not json", "not valid JSON"),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let file = dir.path().join(format!("bad{i}.json"));
        std::fs::write(&file, text).unwrap();
        cnnbench()
            .args(["models", "--file"])
            .arg(&file)
            .assert()
            .failure()
            .stderr(predicate::str::contains(*expected));
    }
}

#[test]
fn engines_lists_what_this_build_can_run() {
    cnnbench()
        .arg("engines")
        .assert()
        .success()
        .stdout(predicate::str::contains("burn-flex"))
        .stdout(predicate::str::contains("torch-cuda"));
}

#[test]
fn converts_caffe_prototxt_and_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let prototxt = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures/tiny.prototxt");
    let json = dir.path().join("tiny.json");
    cnnbench()
        .arg("convert")
        .arg(&prototxt)
        .arg(&json)
        .assert()
        .success()
        .stderr(predicate::str::contains("1,026 params"));
    let row: Value = json_stdout(cnnbench().args(["models", "--json", "--file"]).arg(&json));
    assert_eq!(row["params"], 1026);
    assert_eq!(row["name"], "tiny-caffe");
    cnnbench()
        .args(["models", "--file"])
        .arg(&prototxt)
        .assert()
        .success()
        .stdout(predicate::str::contains("conv2a"));
    cnnbench()
        .args(["run", "-b", "2", "-n", "1", "-q", "--model-file"])
        .arg(&prototxt)
        .arg("-o")
        .arg(dir.path().join("results"))
        .assert()
        .success()
        .stdout(predicate::str::contains("tiny-caffe (32×32)"));
    fails_saying(
        cnnbench().arg("convert").arg(&prototxt).arg(&json),
        "exists already",
    );
}

#[test]
fn onnx_files_are_models_too() {
    let dir = tempfile::tempdir().unwrap();
    let onnx = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../import/tests/fixtures/onnx/resnet18.torchscript.onnx");
    cnnbench()
        .args(["models", "--file"])
        .arg(&onnx)
        .assert()
        .success()
        .stdout(predicate::str::contains("1,814,073,344"));
    let json = dir.path().join("r18.json");
    convert(&onnx, &json);
    cnnbench()
        .args([
            "run",
            "--image-size",
            "32",
            "-b",
            "1",
            "-n",
            "1",
            "-q",
            "--model-file",
        ])
        .arg(&onnx)
        .arg("-o")
        .arg(dir.path().join("results"))
        .assert()
        .success();
}

/// Runs `cnnbench ARGS` and returns (status, stderr), or fails the test if it takes more
/// than `secs` seconds (it is killed then, so a regression cannot hang the suite).
fn run_within(args: &[&str], secs: u64) -> (std::process::ExitStatus, String) {
    use std::io::Read;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cnnbench"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > std::time::Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("cnnbench {args:?} still running after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status, stderr)
}

#[cfg(unix)]
#[test]
fn devices_pipes_and_huge_files_are_refused_in_one_line_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // Sparse: no disk used, and reading it would take 3 GiB of memory.
    let zeros = dir.path().join("zeros.onnx");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    for (file, why) in [
        (
            "/dev/zero".to_string(),
            "is a character device, not a regular file",
        ),
        (
            fifo.display().to_string(),
            "is a named pipe (FIFO), not a regular file",
        ),
        (
            zeros.display().to_string(),
            "is 3.0 GiB; ONNX files above 2 GiB are refused (is it the right file?)",
        ),
    ] {
        let (status, stderr) = run_within(&["models", "--file", &file], 10);
        assert_eq!(status.code(), Some(1), "{file}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{file}: {stderr}");
        assert!(
            stderr.starts_with("error: ") && stderr.contains(&format!("{file} {why}")),
            "{file}: {stderr}"
        );
        assert_eq!(
            stderr.matches(&file).count(),
            1,
            "names the file once: {stderr}"
        );
    }
    // A missing file: the path and the operating system's reason, each said once.
    let missing = dir.path().join("missing.json").display().to_string();
    let (status, stderr) = run_within(&["models", "--file", &missing], 10);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!("error: cannot read {missing}: No such file or directory (os error 2)")
    );
}

/// `cnnbench models resnet50 | head -1`: the reader goes away; the command must end
/// quietly (killed by SIGPIPE, as `cat` is), not panic on the broken pipe. The pipe's
/// read end is closed before the command starts, so that the first write already meets
/// it closed (an output smaller than the pipe's buffer could otherwise be written whole).
///
/// Other tests of this binary start processes at the same moment, and a process forked
/// while the read end is open holds a copy until it runs its program: the command then
/// writes into a pipe that still has a reader and ends well (exit 0). That, and only
/// that, is tried again; a panic or any other end fails at once.
#[cfg(unix)]
#[test]
fn a_closed_output_ends_the_command_quietly() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::ExitStatusExt;
    for args in [&["models", "resnet50"][..], &["models"][..]] {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut fds = [0; 2];
            // SAFETY: `fds` has room for the two descriptors pipe2 returns.
            assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
            // SAFETY: both descriptors are fresh and owned here, each once.
            let (read_end, write_end) =
                unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
            drop(read_end);
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_cnnbench"))
                .args(args)
                .stdout(std::process::Stdio::from(write_end))
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .unwrap();
            let status = child.wait().unwrap();
            assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            if status.success() && stderr.is_empty() && attempts < 5 {
                continue;
            }
            assert_eq!(
                status.signal(),
                Some(libc::SIGPIPE),
                "{args:?}: {status:?}, {stderr} (attempt {attempts})"
            );
            break;
        }
    }
}
