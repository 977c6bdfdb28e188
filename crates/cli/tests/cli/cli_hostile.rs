//! Hostile input, round two (the files and names a careless or hostile user gives): a
//! finished measurement is never lost at write time, and nothing a user typed is
//! written raw where a shell, a spreadsheet or a terminal would act on it.

use crate::common::{cnnbench, result_files};
use predicates::prelude::*;

/// resnet18 at 32×32, one image, one pass: a real measurement in about a second.
const TINY: [&str; 10] = [
    "run",
    "resnet18",
    "--image-size",
    "32",
    "-b",
    "1",
    "--passes",
    "1",
    "--warmup",
    "0",
];

/// A 300-character label was "File name too long (os error 36)" after the benchmark had
/// run; the names are cut (and told apart by a hash) so the file is written.
#[test]
fn a_very_long_label_still_writes_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let label = "L".repeat(300);
    cnnbench()
        .args(TINY)
        .args(["--label", &label, "-o"])
        .arg(dir.path())
        .assert()
        .success();
    let files = result_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    for part in files[0].strip_prefix(dir.path()).unwrap().components() {
        assert!(part.as_os_str().len() < 120, "{}", files[0].display());
    }
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(r["label"], label.as_str(), "the label itself is kept whole");
}

/// The engine's results folder is a regular file (the same for a read-only folder or a
/// full disk): the measurement is kept in the rescue folder, the error names both paths,
/// the table is still printed, and the run fails.
#[test]
fn a_result_that_cannot_be_written_is_kept_and_the_run_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // Every result folder name this machine could give is taken by a file: find it by
    // a first run, then block it.
    cnnbench()
        .args(TINY)
        .args(["-q", "-o"])
        .arg(&out)
        .assert()
        .success();
    let first = result_files(&out);
    let folder = first[0].parent().unwrap().to_path_buf();
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::write(&folder, "not a folder").unwrap();

    let assert = cnnbench()
        .args(TINY)
        .arg("-o")
        .arg(&out)
        .env("TMPDIR", &tmp)
        .assert()
        .failure();
    let output = assert.get_output();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let rescued = tmp.join("cnnbench-rescued");
    assert!(
        stderr.contains(&folder.display().to_string())
            && stderr.contains(&rescued.display().to_string()),
        "{stderr}"
    );
    assert!(
        stdout.contains("resnet18"),
        "the table is printed: {stdout}"
    );
    let kept = result_files(&rescued);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&kept[0]).unwrap()).unwrap();
    assert_eq!(r["model"]["name"], "resnet18");
    assert!(
        std::fs::metadata(&folder).unwrap().is_file(),
        "nothing replaced"
    );
}

/// The files and folders below `dir`, hidden ones included, as paths relative to it.
fn everything_below(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(folder) = todo.pop() {
        for entry in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
            let path = entry.path();
            found.push(path.strip_prefix(dir).unwrap().display().to_string());
            if entry.file_type().unwrap().is_dir() {
                todo.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The result printed on stderr between the last resort's marker lines, parsed.
fn result_on_stderr(stderr: &str) -> serde_json::Value {
    let begin = stderr
        .find(cnnbench_bench::output::BEGIN_MARK)
        .unwrap_or_else(|| panic!("no result on stderr: {stderr}"));
    let body = &stderr[begin..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let end = body
        .find(cnnbench_bench::output::END_MARK)
        .unwrap_or_else(|| panic!("no end marker: {stderr}"));
    serde_json::from_str(&body[..end]).unwrap()
}

/// Neither the output folder nor the rescue folder can be written (`TMPDIR` a file, as
/// `TMPDIR=/dev/null`): the result was lost unless --json was given. Now the whole
/// result is printed on stderr between marker lines, the error says so, and the run
/// fails. And a planted `$TMPDIR/cnnbench-rescued` link (to a folder of the attacker's
/// choosing) is not followed: a fresh private folder keeps the result.
#[test]
fn a_result_that_can_be_kept_nowhere_is_printed_and_a_planted_link_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    // The engine's result folder is taken by a file (found by a first run), as in
    // `a_result_that_cannot_be_written_is_kept_and_the_run_fails`.
    cnnbench()
        .args(TINY)
        .args(["-q", "-o"])
        .arg(&out)
        .assert()
        .success();
    let folder = result_files(&out)[0].parent().unwrap().to_path_buf();
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::write(&folder, "not a folder").unwrap();

    let not_a_folder = dir.path().join("tmp-is-a-file");
    std::fs::write(&not_a_folder, "").unwrap();
    let assert = cnnbench()
        .args(TINY)
        .arg("-o")
        .arg(&out)
        .env("TMPDIR", &not_a_folder)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    let r = result_on_stderr(&stderr);
    assert_eq!(r["model"]["name"], "resnet18", "{stderr}");
    assert!(
        stderr.contains("printed above on stderr") && stderr.contains("could not be written"),
        "{stderr}"
    );

    #[cfg(unix)]
    {
        let tmp = dir.path().join("tmp");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(&tmp).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, tmp.join("cnnbench-rescued")).unwrap();
        let assert = cnnbench()
            .args(TINY)
            .args(["-q", "-o"])
            .arg(&out)
            .env("TMPDIR", &tmp)
            .assert()
            .failure();
        let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
        assert_eq!(
            everything_below(&elsewhere),
            Vec::<String>::new(),
            "{stderr}"
        );
        let fresh: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| !p.is_symlink())
            .collect();
        assert_eq!(fresh.len(), 1, "{fresh:?}");
        assert!(
            fresh[0]
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("cnnbench-rescued-"),
            "{fresh:?}"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&fresh[0]).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "private");
        assert!(stderr.contains(&fresh[0].display().to_string()), "{stderr}");
        assert_eq!(result_files(&fresh[0]).len(), 1);
    }
}

/// Round four (#63): with the result kept nowhere and standard error full (a pipe no one
/// reads, `/dev/full`), the measurement was lost; standard output is its last place.
#[cfg(target_os = "linux")]
#[test]
fn a_result_kept_nowhere_with_stderr_full_is_printed_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    cnnbench()
        .args(TINY)
        .args(["-q", "-o"])
        .arg(&out)
        .assert()
        .success();
    let folder = result_files(&out)[0].parent().unwrap().to_path_buf();
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::write(&folder, "not a folder").unwrap();
    let not_a_folder = dir.path().join("tmp-is-a-file");
    std::fs::write(&not_a_folder, "").unwrap();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let output = crate::common::cnnbench_process()
        .args(TINY)
        .args(["-q", "-o"])
        .arg(&out)
        .env("TMPDIR", &not_a_folder)
        .stderr(full)
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let r = result_on_stderr(&stdout);
    assert_eq!(r["model"]["name"], "resnet18", "{stdout}");
}

/// `cnnbench` with every file it writes limited to `bytes` (RLIMIT_FSIZE, with SIGXFSZ
/// ignored): a write past the limit fails (EFBIG) as one on a full disk fails (ENOSPC),
/// for any user, root included, and without a full disk.
#[cfg(unix)]
fn with_file_size_limit(bytes: u64) -> assert_cmd::Command {
    use std::os::unix::process::CommandExt;
    let mut cmd = crate::common::cnnbench_process();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes as libc::rlim_t,
                rlim_max: bytes as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    assert_cmd::Command::from_std(cmd)
}

/// The disk filling up under a run (output and `$TMPDIR` on the same disk): the result
/// cannot be written nor rescued, and is printed on stderr; no partial or temporary file
/// is left in either folder.
#[cfg(unix)]
#[test]
fn a_result_on_a_full_disk_is_printed_and_leaves_no_partial_file() {
    let dir = tempfile::tempdir().unwrap();
    let (out, tmp) = (dir.path().join("out"), dir.path().join("tmp"));
    std::fs::create_dir_all(&tmp).unwrap();
    let assert = with_file_size_limit(1024)
        .args(TINY)
        .arg("-o")
        .arg(&out)
        .env("TMPDIR", &tmp)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert_eq!(result_on_stderr(&stderr)["model"]["name"], "resnet18");
    for folder in [&out, &tmp] {
        let files: Vec<_> = everything_below(folder)
            .into_iter()
            .filter(|p| folder.join(p).is_file())
            .collect();
        assert!(files.is_empty(), "{files:?}\n{stderr}");
    }
}

/// A full disk: `convert` and `models --export` left a truncated file that blocked the
/// retry ("exists already"), `report -o` a `.tmp-PID` file, `report --charts` a cut
/// chart. Now each file is whole or absent, and the error names it.
#[cfg(unix)]
#[test]
fn a_full_disk_leaves_no_partial_file_to_block_the_retry() {
    let dir = tempfile::tempdir().unwrap();
    let onnx = dir.path().join("m.onnx");
    with_file_size_limit(4096)
        .args(["convert", "resnet18"])
        .arg(&onnx)
        .assert()
        .failure()
        .stderr(predicate::str::contains("m.onnx"));
    assert_eq!(everything_below(dir.path()), Vec::<String>::new());
    cnnbench()
        .args(["convert", "resnet18"])
        .arg(&onnx)
        .assert()
        .success();

    let json = dir.path().join("r.json");
    with_file_size_limit(1024)
        .args(["models", "resnet18", "--export"])
        .arg(&json)
        .assert()
        .failure()
        .stderr(predicate::str::contains("r.json"));
    assert_eq!(everything_below(dir.path()), ["m.onnx"]);

    let fixtures =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures");
    let report = dir.path().join("report.md");
    with_file_size_limit(512)
        .arg("report")
        .arg(fixtures.join("ours/base"))
        .arg("-o")
        .arg(&report)
        .assert()
        .failure()
        .stderr(predicate::str::contains("report.md"));
    assert_eq!(everything_below(dir.path()), ["m.onnx"]);

    let charts = dir.path().join("charts");
    let assert = with_file_size_limit(4096)
        .arg("report")
        .arg(fixtures.join("ours/base"))
        .arg("--charts")
        .arg(&charts)
        .assert()
        .failure();
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).to_string();
    assert!(stderr.contains(&charts.display().to_string()), "{stderr}");
    for name in everything_below(&charts) {
        assert!(!name.starts_with('.'), "{name} left");
        let bytes = std::fs::read(charts.join(&name)).unwrap();
        let whole = if name.ends_with(".png") {
            bytes.ends_with(&[0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82])
        } else {
            String::from_utf8_lossy(&bytes)
                .trim_end()
                .ends_with("</svg>")
        };
        assert!(whole, "{name} is cut short");
    }
}

/// A batch past any machine's memory panicked inside burn ("more elements than fit in
/// usize") and the estimate wrapped; now it is refused before anything runs, even with
/// --force.
#[test]
fn absurd_batches_are_refused_without_a_panic() {
    for extra in [&[][..], &["--force"]] {
        cnnbench()
            .args(["run", "resnet18", "--image-size", "32", "--passes", "1"])
            .args(["-b", "18446744073709551615"])
            .args(extra)
            .assert()
            .code(1)
            .stderr(
                predicates::str::contains("more than any machine has")
                    .and(predicates::str::contains("panicked").not()),
            );
    }
}

/// `--threads 10000` (and RAYON_NUM_THREADS=100000) started thousands of threads.
#[test]
fn absurd_thread_counts_are_refused_at_once() {
    let started = std::time::Instant::now();
    cnnbench()
        .args(["run", "resnet18", "--threads", "10000"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("CNNBENCH_MAX_THREADS"));
    cnnbench()
        .args(["models"])
        .env("RAYON_NUM_THREADS", "100000")
        .assert()
        .failure()
        .stderr(predicates::str::contains("RAYON_NUM_THREADS 100000"));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // The limit is the user's to lift.
    cnnbench()
        .args(["models"])
        .env("RAYON_NUM_THREADS", "100000")
        .env("CNNBENCH_MAX_THREADS", "100000")
        .assert()
        .success();
    // A limit of 0 is no limit to set: the default stands ("at most 0" refused everything).
    cnnbench()
        .args(["models"])
        .env("RAYON_NUM_THREADS", "2")
        .env("CNNBENCH_MAX_THREADS", "0")
        .assert()
        .success();
}

/// `verify … -b 100000`, `profile … -b 100000` and `peak --size 1000000` allocated until
/// the process aborted (exit 134); `compare --resamples 1000000000000` too. Each is now
/// refused at once, with the sizes in words.
#[test]
fn commands_that_allocate_check_the_memory_first() {
    let started = std::time::Instant::now();
    for args in [
        &["verify", "resnet18", "--image-size", "64", "-b", "100000"][..],
        &["profile", "resnet18", "--image-size", "64", "-b", "100000"],
        &["peak", "--size", "1000000"],
    ] {
        cnnbench()
            .args(args)
            .assert()
            .code(1)
            .stderr(predicates::str::contains("use a smaller size"));
    }
    let dir = tempfile::tempdir().unwrap();
    cnnbench()
        .args(["compare", "--resamples", "1000000000000"])
        .arg(dir.path())
        .arg(dir.path())
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "--resamples 1000000000000 is more than",
        ));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

/// A bad CNNBENCH_ALLOCATOR was reported as a bad `--allocator` value, a flag the user
/// never typed.
#[test]
fn a_bad_allocator_variable_is_named_as_the_variable() {
    cnnbench()
        .args(["models"])
        .env("CNNBENCH_ALLOCATOR", "bogus")
        .assert()
        .code(2)
        .stderr(
            predicates::str::contains("CNNBENCH_ALLOCATOR=bogus is not a heap policy")
                .and(predicates::str::contains("--allocator").not()),
        );
    cnnbench()
        .args(["models"])
        .env("CNNBENCH_ALLOCATOR", "system")
        .assert()
        .success();
}

/// `--image-size 18446744073709551615` was called "too small" (the shape arithmetic had
/// wrapped); sizes past any network are refused by name.
#[test]
fn an_absurd_image_size_is_called_too_large() {
    cnnbench()
        .args(["models", "resnet18", "--image-size", "18446744073709551615"])
        .assert()
        .failure()
        .stderr(
            predicates::str::contains("larger than any network takes")
                .and(predicates::str::contains("too small").not()),
        );
}

/// `convert` into a folder that does not exist said "(it must not exist yet)", which sent
/// users looking for a file that was not there.
#[test]
fn writing_into_a_missing_folder_says_the_folder_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("no-such-folder/tiny.onnx");
    cnnbench()
        .args(["convert", "resnet18"])
        .arg(&out)
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("does not exist (create it first)")
                .and(predicate::str::contains("no-such-folder"))
                .and(predicate::str::contains("must not exist").not()),
        );
}

/// An I/O error's reason was printed twice ("…: File name too long (os error 36): File
/// name too long (os error 36)"): the message quotes it and the error chain repeated it.
#[test]
fn an_io_error_is_said_once() {
    let long = std::path::PathBuf::from(format!("/tmp/{}", "x/".repeat(2100)));
    let out = cnnbench().arg("report").arg(&long).assert().failure();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert_eq!(stderr.matches("os error 36").count(), 1, "{stderr}");
}

/// One folder that cannot be read stopped `report` and `compare` altogether.
#[test]
fn a_folder_that_cannot_be_read_is_skipped_with_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    cnnbench()
        .args(TINY)
        .arg("-o")
        .arg(dir.path().join("results"))
        .assert()
        .success();
    // Permissions do not stop root: the folder is one whose path is longer than the
    // system allows, made one level at a time.
    let name = "n".repeat(250);
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "for i in $(seq 20); do mkdir {name} && cd -P {name} || exit 1; done"
        ))
        .current_dir(dir.path().join("results"))
        .status()
        .unwrap();
    assert!(made.success());
    for args in [vec!["report"], vec!["compare"]] {
        let mut cmd = cnnbench();
        cmd.args(&args).arg(dir.path().join("results"));
        if args[0] == "compare" {
            cmd.arg(dir.path().join("results"));
        }
        let out = cmd.assert();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert_eq!(
            stderr.matches("cannot read it").count(),
            if args[0] == "compare" { 2 } else { 1 },
            "{args:?}: {stderr}"
        );
        out.success();
    }
    let _ = std::process::Command::new("rm")
        .arg("-rf")
        .arg(dir.path())
        .status();
}

/// `--force` on a model needing terabytes ran into the allocator and aborted (exit 134).
#[test]
fn force_cannot_run_what_is_far_past_the_machine() {
    cnnbench()
        .args([
            "run", "resnet18", "-b", "100000", "--passes", "1", "--force",
        ])
        .assert()
        .code(1)
        .stderr(
            predicate::str::contains("more than twice this device's")
                .and(predicate::str::contains("--force cannot help")),
        );
}

/// A second Ctrl-C did nothing more than the first: a pass of minutes had to be sat out.
#[cfg(unix)]
#[test]
fn a_second_ctrl_c_stops_at_once() {
    use std::time::{Duration, Instant};
    let signal = |pid: u32| {
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    };
    // The second signal can arrive just as a pass ends and the run stops by itself: then
    // the stop was not the second signal's, and the test runs once more.
    for attempt in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        // VGG-16 training at batch 16: over ten seconds a pass on a 2-core machine, more
        // beside a busy neighbour, against the 5 s the stop may take: the margin is the
        // pass's own length, not the machine's quiet.
        let child = crate::common::cnnbench_process()
            .args([
                "run", "vgg16", "-b", "16", "--passes", "20", "--warmup", "0", "-q", "-o",
            ])
            .arg(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(3));
        signal(child.id());
        std::thread::sleep(Duration::from_millis(100));
        signal(child.id());
        let second = Instant::now();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(130), "{stderr}");
        if !stderr.contains("stopping now") && stderr.contains("interrupted: kept") && attempt == 0
        {
            continue;
        }
        assert!(
            stderr.contains("interrupted again: stopping now"),
            "{stderr}"
        );
        assert!(
            second.elapsed() < Duration::from_secs(5),
            "{:?}",
            second.elapsed()
        );
        assert!(result_files(dir.path()).is_empty(), "no partial result");
        return;
    }
}

/// A real result of this build (TINY) written under `dir`, and its JSON to edit as a
/// hostile sender would: the file's path and its document.
fn a_result_to_edit(dir: &std::path::Path) -> (std::path::PathBuf, serde_json::Value) {
    let out = dir.join("out");
    cnnbench()
        .args(TINY)
        .args(["-q", "-o"])
        .arg(&out)
        .assert()
        .success();
    let file = result_files(&out).remove(0);
    let result = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (file, result)
}

/// `cnnbench run --again FILE`, quiet, writing under `dir/again`.
fn run_again(file: &std::path::Path, dir: &std::path::Path) -> assert_cmd::assert::Assert {
    cnnbench()
        .args(["run", "--again"])
        .arg(file)
        .args(["-q", "-o"])
        .arg(dir.join("again"))
        .assert()
}

/// A result file is data: a program its spec names (the pytorch engines' Python) is
/// never run by `run --again`, which says so and asks for it on the command line; the
/// value is shown escaped. A matrix cannot name one either. (Hostile input, round three.)
#[test]
fn a_program_named_by_a_result_or_a_matrix_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("PWNED");
    let program = dir.path().join("prog");
    std::fs::write(
        &program,
        format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let (file, mut result) = a_result_to_edit(dir.path());
    result["spec"]["engine"] = "pytorch".into();
    result["spec"]["engine_options"]["settings"] = serde_json::json!({
        "python": format!("{}\u{1b}[2J", program.display())
    });
    std::fs::write(&file, result.to_string()).unwrap();
    // An older file spelled the setting as a field: read alike, refused alike.
    let older = dir.path().join("older.json");
    result["spec"]["engine_options"]
        .as_object_mut()
        .unwrap()
        .remove("settings");
    result["spec"]["engine_options"]["python"] = program.display().to_string().into();
    std::fs::write(&older, result.to_string()).unwrap();
    for path in [&file, &older] {
        run_again(path, dir.path())
            .failure()
            .stderr(predicate::str::contains(
                "a result file is data and never names a program cnnbench runs",
            ))
            .stderr(predicate::str::contains("--python PATH"))
            .stderr(predicate::str::contains('\u{1b}').not());
    }
    // Given on the command line, the user's own program is the one used.
    cnnbench()
        .args(["run", "--again"])
        .arg(&file)
        .args(["--python", "/nonexistent/python3", "-q", "-o"])
        .arg(dir.path().join("again"))
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "the Python /nonexistent/python3 (from --python) cannot be run",
        ));
    // A matrix naming one is refused when it is read, before any job is written.
    let matrix = dir.path().join("m.toml");
    std::fs::write(
        &matrix,
        format!(
            "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"pytorch\"]\n[engine_settings.pytorch]\npython = \"{}\"\n",
            program.display()
        ),
    )
    .unwrap();
    cnnbench()
        .arg("plan")
        .arg(&matrix)
        .arg("--list")
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "`python` names a program the engine runs, and a matrix file is data",
        ));
    assert!(!marker.exists(), "the program named by a file ran");
}

/// `run --again` tells the user which command reruns a result measured under another
/// heap policy: a recorded policy that is none of cnnbench's is refused before it is
/// shown, escaped, never as part of a command to paste. (Hostile input, round three.)
#[test]
fn a_recorded_heap_policy_is_checked_before_it_is_shown() {
    let dir = tempfile::tempdir().unwrap();
    let (file, mut result) = a_result_to_edit(dir.path());
    result["spec"]["allocator"] = "system; touch /tmp/PWNED #\u{1b}]0;x\u{7}".into();
    std::fs::write(&file, result.to_string()).unwrap();
    run_again(&file, dir.path())
        .failure()
        .stderr(predicate::str::contains(
            "which is none of cnnbench's (keep or system)",
        ))
        .stderr(predicate::str::contains("cnnbench --allocator").not())
        .stderr(predicate::str::contains('\u{1b}').not())
        .stderr(predicate::str::contains('\u{7}').not());
}

/// `--threads` is capped; a spec that arrives another way (a result for `--again`, a
/// matrix cell) is held to the same cap before anything starts. (Hostile input, round
/// three.)
#[test]
fn a_thread_count_from_a_file_is_held_to_the_same_limit() {
    let dir = tempfile::tempdir().unwrap();
    let (file, mut result) = a_result_to_edit(dir.path());
    result["spec"]["threads"] = 1_000_000.into();
    std::fs::write(&file, result.to_string()).unwrap();
    run_again(&file, dir.path())
        .failure()
        .stderr(predicate::str::contains(
            "the spec's threads 1000000 is more threads than this machine can use",
        ));
    let matrix = dir.path().join("m.toml");
    std::fs::write(
        &matrix,
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nthreads = 1000000\n",
    )
    .unwrap();
    cnnbench()
        .args(["run", "--plan"])
        .arg(&matrix)
        .args(["--cell", "0", "-q", "-o"])
        .arg(dir.path().join("cell"))
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "more threads than this machine can use",
        ));
}

/// A `.venv-torch/bin/python` that records each run in `ran` and then fails as a Python
/// without torch would.
fn plant_python(root: &std::path::Path, ran: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = root.join(".venv-torch/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let python = bin.join("python");
    std::fs::write(
        &python,
        format!("#!/bin/sh\necho ran >> '{}'\nexit 1\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    python
}

/// `cnnbench engines` from `cwd`, with no Python named: the search alone decides.
fn engines_in(cwd: &std::path::Path) -> String {
    let output = cnnbench()
        .arg("engines")
        .current_dir(cwd)
        .env_remove("VIRTUAL_ENV")
        .env_remove("CNNBENCH_PYTHON")
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// A `.venv-torch` in a folder above the working folder (a shared `/tmp`, a folder of
/// results handed over) was run by every command that looks for the pytorch engines'
/// Python; only the working folder's, the executable's and their repositories' are, and
/// only when the user owns them.
#[test]
fn a_python_in_a_folder_above_the_working_folder_is_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let ran = dir.path().join("ran");
    let shared = dir.path().join("shared");
    let deep = shared.join("x/results/sub");
    std::fs::create_dir_all(&deep).unwrap();
    for planted in [&shared, &shared.join("x"), &shared.join("x/results")] {
        plant_python(planted, &ran);
        engines_in(&deep);
        assert!(!ran.exists(), "{} ran", planted.display());
        std::fs::remove_dir_all(planted.join(".venv-torch")).unwrap();
    }

    // The set-up the guide gives: a venv in the working folder, or at the top of the
    // repository one works in.
    let repository = shared.join("x");
    plant_python(&repository, &ran);
    engines_in(&repository);
    assert!(ran.exists(), "the working folder's own venv is used");
    std::fs::remove_file(&ran).unwrap();
    std::fs::create_dir(repository.join(".git")).unwrap();
    let said = engines_in(&deep);
    assert!(ran.exists(), "the repository's venv is used: {said}");
    std::fs::remove_file(&ran).unwrap();

    // As root, the same venv given to another user is skipped, and the messages say so.
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let python = repository.join(".venv-torch/bin/python");
        std::os::unix::fs::lchown(&python, Some(4242), None).unwrap();
        let said = engines_in(&deep);
        assert!(!ran.exists(), "another user's Python ran");
        assert!(
            said.contains("warning: the pytorch engines' Python: skipped")
                && said.contains("belongs to user 4242"),
            "{said}"
        );
    }
}

/// Runs cnnbench with `args` in `dir`, its standard output a full disk (`/dev/full`).
fn into_a_full_output(args: &[&str], dir: &std::path::Path) -> std::process::Output {
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    std::process::Command::new(assert_cmd::cargo::cargo_bin("cnnbench"))
        .args(args)
        .current_dir(dir)
        .stdout(full)
        .output()
        .unwrap()
}

/// `println!` panicked (exit 101) when standard output could not be written, and a run
/// with `--json` never ran its later models: every command now says so once and fails,
/// and a run still measures and writes every result.
#[test]
fn a_full_standard_output_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("matrix.toml"),
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut run = TINY.to_vec();
    run.insert(2, "mobilenet-v2");
    let run_json = [run.clone(), vec!["--json", "-q"]].concat();
    let commands: Vec<Vec<&str>> = vec![
        vec!["models"],
        vec!["models", "resnet18"],
        vec!["engines"],
        vec!["plan", "--list", "matrix.toml"],
        vec!["plan", "--shell", "matrix.toml"],
        [run.clone(), vec!["-o", "out"]].concat(),
        [run_json, vec!["-o", "out"]].concat(),
        vec!["report", "out"],
        vec!["report", "out", "--format", "csv"],
    ];
    for args in &commands {
        let output = into_a_full_output(args, dir.path());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("panicked") && output.status.code() == Some(1),
            "{args:?}: {:?}\n{stderr}",
            output.status
        );
        assert!(
            stderr.contains("cannot write to standard output")
                && stderr.contains("No space left on device"),
            "{args:?}: {stderr}"
        );
    }
    let written = result_files(&out);
    assert_eq!(written.len(), 4, "both models of both runs: {written:?}");
}

/// Samples of 1e308 s (finite in the file, infinite in milliseconds) made `compare
/// --fail-on-regression` say "no change" and pass, also with a base of 5e-324 s, and
/// `report --charts` spin for ever: such a file is refused when loaded, naming the file
/// and the field, so the gate fails and the charts are drawn from the good files.
#[test]
fn times_no_pass_could_take_neither_pass_a_gate_nor_hang_the_charts() {
    let dir = tempfile::tempdir().unwrap();
    let (file, result) = a_result_to_edit(dir.path());
    let name = file.file_name().unwrap().to_owned();
    for (side, value) in [
        ("new", 1e308),
        ("base", 5e-324),
        ("new", -0.0),
        ("new", 1e5),
    ] {
        let (base, new) = (dir.path().join("base"), dir.path().join("new"));
        for (folder, samples) in [(&base, 0.01), (&new, 0.01)] {
            std::fs::create_dir_all(folder).unwrap();
            let mut edited = result.clone();
            let total = if folder.ends_with(side) {
                value
            } else {
                samples
            };
            edited["samples"]["total"] = serde_json::json!([total, total, total]);
            std::fs::write(folder.join(&name), edited.to_string()).unwrap();
        }
        let output = cnnbench()
            .args(["compare", "--fail-on-regression", "5"])
            .arg(&base)
            .arg(&new)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{side} {value}: {stderr}");
        assert!(
            stderr.contains(&dir.path().join(side).join(&name).display().to_string())
                && stderr.contains("`samples.total` holds"),
            "{side} {value}: {stderr}"
        );
    }

    let charts = dir.path().join("charts");
    let output = cnnbench()
        .args(["report", "--charts"])
        .arg(&charts)
        .arg(dir.path().join("out"))
        .arg(dir.path().join("new"))
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("`samples.total` holds"), "{stderr}");
}

/// A PyTorch worker that dies before its greeting (an OOM kill while torch imports)
/// ended cnnbench with a silent status 141: writing the worker its `exit` into the dead
/// pipe raised SIGPIPE before the error was printed. The error is said, the status is 1.
#[test]
fn a_worker_that_dies_before_its_greeting_is_an_error_that_is_said() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let python = dir.path().join("python");
    // Answers the version check as torch 2.11 would; dies when started as the worker,
    // at once or after a moment.
    for death in ["kill -9 $$", "sleep 0.3; exit 137", "exec 0<&-; exit 1"] {
        std::fs::write(
            &python,
            format!("#!/bin/sh\nif [ \"$1\" = -c ]; then echo 2.11.0; exit 0; fi\necho 'Killed while importing torch' >&2\n{death}\n"),
        )
        .unwrap();
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
        let output = cnnbench()
            .args(TINY)
            .args(["--engine", "pytorch", "--python"])
            .arg(&python)
            .arg("-o")
            .arg(dir.path().join("out"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.signal(), None, "{death}: {stderr}");
        assert_eq!(output.status.code(), Some(1), "{death}: {stderr}");
        assert!(
            stderr.contains("worker") && stderr.contains("Killed while importing torch"),
            "{death}: {stderr}"
        );
    }
}

/// `run --again` on a result of `"version": 999` (or a profile, or another format) reran
/// it without a word, reading fields that version may mean otherwise as ours: refused,
/// naming the file and the version, before anything runs.
#[test]
fn again_refuses_a_version_or_format_this_build_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (file, result) = a_result_to_edit(dir.path());
    let edited = dir.path().join("edited.json");
    for (field, value, says) in [
        (
            "version",
            serde_json::json!(999),
            "version 999, which this cnnbench does not read",
        ),
        (
            "version",
            serde_json::json!(0),
            "version 0, which this cnnbench does not read",
        ),
        (
            "version",
            serde_json::json!(4294967297u64),
            "version 4294967297",
        ),
        ("version", serde_json::json!("2"), "version \"2\""),
        ("version", serde_json::Value::Null, "version null"),
        (
            "format",
            serde_json::json!("cnnbench-profile"),
            "is a profile",
        ),
        (
            "format",
            serde_json::json!("other\u{1b}[2J"),
            "its format is \"other\\u{1b}[2J\"",
        ),
    ] {
        let mut doc = result.clone();
        doc[field] = value.clone();
        std::fs::write(&edited, doc.to_string()).unwrap();
        let output = run_again(&edited, dir.path()).failure();
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
        assert!(
            stderr.contains(&edited.display().to_string()) && stderr.contains(says),
            "{field} = {value}: {stderr}"
        );
        assert!(!stderr.contains('\u{1b}'), "{stderr}");
        assert!(
            !dir.path().join("again").exists(),
            "{field} = {value}: it ran"
        );
    }
    // The file as written still runs.
    run_again(&file, dir.path()).success();
}

/// A result whose spec lists 10⁵ models (3 MB of the 256 MiB a result may be) built
/// every graph before anything ran: 2.4 GB and 20 s. Refused at once, naming the limit
/// and what to do; model files in such a list are refused before any is hashed.
/// (Hostile input, round three.)
#[test]
fn a_spec_of_more_models_than_a_run_takes_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (file, mut result) = a_result_to_edit(dir.path());
    let zoo = result["spec"]["models"][0].clone();
    let missing = |i: usize| serde_json::json!({"file": {"path": format!("/nonexistent/m{i}.json"), "sha256": "00"}});
    for (models, says) in [
        (
            vec![zoo; 100_000],
            "100000 models in one run, more than 1000",
        ),
        (
            (0..1001).map(missing).collect(),
            "1001 models in one run, more than 1000",
        ),
    ] {
        result["spec"]["models"] = serde_json::Value::Array(models);
        std::fs::write(&file, result.to_string()).unwrap();
        let started = std::time::Instant::now();
        let output = run_again(&file, dir.path()).failure();
        let took = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).into_owned();
        assert!(stderr.contains(says), "{stderr}");
        assert!(
            stderr.contains("split them into several runs") && stderr.contains("cnnbench plan"),
            "{stderr}"
        );
        assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
        assert!(!dir.path().join("again").exists(), "it ran");
    }
}

/// A `SLURM_JOB_NODELIST` of `a]b[c` with `--distributed` panicked (a slice taken
/// backwards): every node list is a host or an error that says to set MASTER_ADDR.
#[test]
fn a_hostile_slurm_node_list_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    for list in ["a]b[c", "][", "n[", "]", "a[]", "n[\u{1b}]", "a]]"] {
        let output = cnnbench()
            .args(TINY)
            .arg("--distributed")
            .arg("-o")
            .arg(dir.path())
            .env_remove("MASTER_ADDR")
            .env_remove("MASTER_PORT")
            .env_remove("WORLD_SIZE")
            .env_remove("RANK")
            .envs([
                ("SLURM_JOB_NODELIST", list),
                ("SLURM_PROCID", "0"),
                ("SLURM_NTASKS", "2"),
                ("SLURM_JOB_ID", "1"),
                ("SLURM_LOCALID", "0"),
            ])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{list:?}: {stderr}");
        assert!(
            stderr.contains("cannot read the Slurm node list") && stderr.contains("MASTER_ADDR"),
            "{list:?}: {stderr}"
        );
        assert!(!stderr.contains('\u{1b}'), "{list:?}: {stderr}");
    }
}

/// A model file is hashed for the result's spec before it is loaded: the hash reads it as
/// the importer does, so a device, a pipe or an oversized file is refused at once, for
/// `run`, `profile` and `run --again` alike, instead of spinning or blocking.
#[test]
fn a_model_file_that_is_no_file_is_refused_before_it_is_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("model.json");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let sparse = dir.path().join("huge.onnx");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(3 << 30)
        .unwrap();
    for (file, says) in [
        ("/dev/zero".into(), "not a regular file"),
        (fifo.display().to_string(), "not a regular file"),
        (
            sparse.display().to_string(),
            "ONNX files above 2 GiB are refused",
        ),
    ] {
        for command in ["run", "profile"] {
            cnnbench()
                .args([command, "--model-file", &file, "--image-size", "32"])
                .arg("-o")
                .arg(dir.path().join("out"))
                .timeout(std::time::Duration::from_secs(60))
                .assert()
                .failure()
                .stderr(predicate::str::contains(says));
        }
    }
}

/// Names from files and from the command line reached the terminal raw: in the run
/// table, the "wrote …" line, `models --file`, and error messages (an unknown model).
/// Everything cnnbench prints passes through one sink that shows them escaped, so every
/// spelling of the attack is caught, whichever message quotes it.
#[test]
fn nothing_a_file_or_a_name_holds_acts_on_the_terminal() {
    const ACTING: [char; 7] = [
        '\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}', '\u{2028}', '\u{8}',
    ];
    let hostile = "x\u{1b}]0;owned\u{7}\r\u{9b}2J\u{202e}\u{2028}\u{8}y";
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("model.json");
    let name = serde_json::to_string(&format!("tiny{hostile}")).unwrap();
    let node = serde_json::to_string(&format!("conv{hostile}")).unwrap();
    std::fs::write(
        &model,
        format!(
            r#"{{"format": "cnnbench-model", "version": 1, "name": {name},
              "input": [3, 32, 32],
              "nodes": [
                {{"name": {node}, "op": "conv2d", "in_channels": 3, "out_channels": 4, "kernel": 3, "bias": false}},
                {{"name": "pool", "op": "adaptive_avg_pool2d", "output": 1}},
                {{"name": "flat", "op": "flatten"}},
                {{"name": "fc", "op": "linear", "in_features": 4, "out_features": 2, "bias": false}}
              ]}}"#
        ),
    )
    .unwrap();
    let out = dir.path().join(format!("out{hostile}"));
    let runs = [
        cnnbench()
            .args([
                "run",
                "--passes",
                "1",
                "--warmup",
                "0",
                "-b",
                "1",
                "--model-file",
            ])
            .arg(&model)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap(),
        cnnbench()
            .args(["models", "--file"])
            .arg(&model)
            .output()
            .unwrap(),
        cnnbench()
            .args(["run", &format!("resnet{hostile}"), "-o"])
            .arg(&out)
            .output()
            .unwrap(),
    ];
    for (i, output) in runs.iter().enumerate() {
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        for c in ACTING {
            assert!(!said.contains(c), "command {i} printed {c:?} raw:\n{said}");
        }
        assert!(
            said.contains("x\\u001b]0;owned\\u0007"),
            "command {i}:\n{said}"
        );
    }
    assert!(runs[0].status.success(), "{:?}", runs[0]);
    assert!(runs[1].status.success(), "{:?}", runs[1]);
    assert!(!runs[2].status.success(), "{:?}", runs[2]);
    // The names themselves are kept whole in the result file.
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(r["model"]["name"], format!("tiny{hostile}").as_str());
}

/// Round four (#63): `report -o` renamed a regular file over whatever the name held (a
/// FIFO became a file; as root, `-o /dev/null` did). A FIFO now receives the report and
/// stays a FIFO; a folder is refused and left as it is. Never a real device here.
#[cfg(unix)]
#[test]
fn report_writes_into_a_fifo_and_refuses_a_folder() {
    use std::os::unix::fs::FileTypeExt;
    let results =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../report/tests/fixtures/ours/base");
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("report.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo (coreutils) makes the test's FIFO");
    assert!(made.success());
    let reading = fifo.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::fs::read_to_string(reading));
    });
    cnnbench()
        .arg("report")
        .arg(&results)
        .args(["-f", "markdown", "-o"])
        .arg(&fifo)
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    let text = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the FIFO's reader got the report")
        .unwrap();
    assert!(text.contains("|Model|"), "{text}");
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());

    let folder = dir.path().join("out.md");
    std::fs::create_dir(&folder).unwrap();
    cnnbench()
        .arg("report")
        .arg(&results)
        .args(["-f", "markdown", "-o"])
        .arg(&folder)
        .assert()
        .failure()
        .stderr(predicate::str::contains("it is a folder"));
    assert!(folder.is_dir());
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
}

/// A profile's names reached `report -f markdown` raw, after the results' escaped tables.
#[test]
fn a_profiles_names_are_text_in_markdown() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures/profile/resnet50.profile.json");
    let mut profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    profile["model"]["name"] = "<img src=x onerror=alert(1)> [x](javascript:alert(1)) <!--".into();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("evil.profile.json"),
        serde_json::to_string(&profile).unwrap(),
    )
    .unwrap();
    let out = cnnbench()
        .arg("report")
        .arg(dir.path())
        .args(["-f", "markdown"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(
        md.contains("&lt;img src=x onerror=alert(1)&gt; \\[x\\](javascript:alert(1)) &lt;!--"),
        "{md}"
    );
    assert!(!md.contains('<'), "{md}");
    let chars: Vec<char> = md.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        if matches!(c, '[' | ']') {
            assert!(i > 0 && chars[i - 1] == '\\', "a live bracket at {i}: {md}");
        }
    }
    // The profile's tables still render as tables.
    assert!(md.lines().any(|l| l.starts_with("| Op type")), "{md}");
}

/// Round four (#63): a scenario's numbers held to the flags' bounds only when typed. A
/// result for `--again` or a matrix cell with 10¹² offline queries planned them (and
/// their latencies' memory) before the first; `--again` of many results × `--repeat`
/// started a process each without a cap. Each is refused before anything runs.
#[test]
fn a_scenario_no_run_can_plan_is_refused_however_it_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let (file, mut result) = a_result_to_edit(dir.path());
    result["spec"]["passes"] = 10.into();
    result["spec"]["scenario"] = serde_json::json!({
        "kind": "offline",
        "samples_per_query": 1,
        "min_duration_s": 0.0,
        "min_queries": 1_000_000_000_000u64,
    });
    std::fs::write(&file, result.to_string()).unwrap();
    run_again(&file, dir.path())
        .failure()
        .stderr(predicate::str::contains(
            "--min-queries must be from 1 to 2000000",
        ));
    assert!(!dir.path().join("again").exists(), "it ran");

    let matrix = dir.path().join("m.toml");
    std::fs::write(
        &matrix,
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nmodes = [\"infer\"]\nscenario = \"server\"\nqps = [1e-300]\nlatency_bound = 10\n",
    )
    .unwrap();
    cnnbench()
        .args(["run", "--plan"])
        .arg(&matrix)
        .args(["--cell", "0", "-q", "-o"])
        .arg(dir.path().join("cell"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("not 1e-300"));
    assert!(!dir.path().join("cell").exists(), "it ran");

    let mut again = cnnbench();
    again.args(["run", "--repeat", "100", "-q", "-o"]);
    again.arg(dir.path().join("many"));
    for _ in 0..11 {
        again.arg("--again").arg(&file);
    }
    again.assert().failure().stderr(predicate::str::contains(
        "11 configuration(s) × 100 run(s) is 1100 processes, more than the 1000",
    ));
    assert!(!dir.path().join("many").exists(), "it ran");
}

/// Round four (#63): a result recording what no run can have (a load of 10³⁰⁸ QPS, a
/// negative bound, nothing in flight) reached the serving table and its charts; `report`
/// now skips it, saying which field is wrong, and reports the rest.
#[test]
fn a_scenario_record_no_run_can_have_is_skipped_by_report() {
    let served = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "../../docs/results/2026-12-04-epyc-2core/serving/amd-epyc_burn-flex/mobilenet-v2_infer_b1_224x224_20261204T174033Z.json",
    );
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(served).unwrap()).unwrap();
    for (field, value, says) in [
        (
            "target_qps",
            serde_json::json!(1e308),
            "`scenario.target_qps` is 1e308",
        ),
        (
            "latency_bound_ms",
            serde_json::json!(-5.0),
            "`scenario.latency_bound_ms` is -5",
        ),
        (
            "in_flight",
            serde_json::json!(0),
            "`scenario.in_flight` is 0",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("good.json"), good.to_string()).unwrap();
        let mut bad = good.clone();
        bad["scenario"][field] = value;
        std::fs::write(dir.path().join("bad.json"), bad.to_string()).unwrap();
        cnnbench()
            .arg("report")
            .arg(dir.path())
            .assert()
            .success()
            .stderr(predicate::str::contains("bad.json").and(predicate::str::contains(says)))
            .stdout(predicate::str::contains("mobilenet-v2"));
    }
}
