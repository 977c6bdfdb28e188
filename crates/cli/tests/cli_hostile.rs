//! Hostile input, round two (the files and names a careless or hostile user gives): a
//! finished measurement is never lost at write time, and nothing a user typed is
//! written raw where a shell, a spreadsheet or a terminal would act on it.

mod common;

use common::{cnnbench, result_files};
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
