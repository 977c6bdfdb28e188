//! What needs no PyTorch: the worker's start-up errors (no Python, no torch, another
//! torch, a Python that dies or hangs), made with stand-in interpreters.

use crate::python::Interpreter;
use crate::worker::{Launch, Worker};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// An executable shell script standing in for Python.
fn fake_python(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("python");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Starts a worker on `path` as `--python` would. A stand-in just written can be
/// "busy" (ETXTBSY, os error 26) for a moment: another test's fork may still hold the
/// file open for writing until its exec; that race is the tests', so they retry.
fn launch(path: PathBuf, threads: Option<usize>) -> anyhow::Result<Worker> {
    let mut tries = 0;
    loop {
        match launch_once(path.clone(), threads) {
            Err(e) if tries < 50 && format!("{e:#}").contains("os error 26") => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            outcome => return outcome,
        }
    }
}

fn launch_once(path: PathBuf, threads: Option<usize>) -> anyhow::Result<Worker> {
    let interpreter = Interpreter {
        path,
        chosen_by: "--python",
        skipped: Vec::new(),
    };
    Worker::start(&Launch {
        engine: "pytorch",
        interpreter: &interpreter,
        heap: "keep",
        threads,
        settings: Vec::new(),
    })
}

fn start(path: PathBuf) -> String {
    match launch(path, Some(1)) {
        Ok(_) => panic!("the stand-in Python started a worker"),
        Err(e) => format!("{e:#}"),
    }
}

/// The error of a worker started on a stand-in Python running `script` (`#!/bin/sh`),
/// which must say each of `says`; the stand-in's path, for what depends on it.
fn start_fake(script: &str, says: &[&str]) -> (String, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(dir.path(), script);
    let e = start(python.clone());
    assert_says(&e, says);
    (e, python)
}

/// `text` says each of `parts`.
fn assert_says(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part:?} not in: {text}");
    }
}

#[test]
fn a_missing_python_is_named_with_what_to_do() {
    let e = start(PathBuf::from("/nonexistent/bin/python3"));
    assert_says(
        &e,
        &[
            "pytorch cannot start its worker",
            "/nonexistent/bin/python3",
            "--python PATH",
        ],
    );
}

#[test]
fn a_python_without_torch_gets_the_pip_line() {
    let (e, python) = start_fake(
        r#"echo '{"type": "fatal", "kind": "no-torch", "error": "ModuleNotFoundError: No module named '"'"'torch'"'"'"}'"#,
        &["cannot import torch", "No module named"],
    );
    assert!(
        e.contains(&format!(
            "{} -m pip install torch==2.11.0",
            python.display()
        )),
        "{e}"
    );
}

#[test]
fn another_torch_release_is_refused_with_the_pip_line() {
    start_fake(
        r#"echo '{"type": "hello", "protocol": 1, "torch": "2.9.1+cpu", "threads": 1}'; exec sleep 5"#,
        &[
            "has torch 2.9.1+cpu",
            "tested with 2.11.0",
            "pip install torch==2.11.0",
        ],
    );
}

/// The worker's last words are in the error every time, however its death and the
/// reading of its stderr interleave: a stand-in that writes many lines and kills itself
/// in the middle of writing, again and again, beside two busy threads (a reader left
/// unscheduled for a moment once lost the line that said why).
#[test]
fn a_worker_killed_while_writing_leaves_its_last_words_in_the_error_every_time() {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let busy: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    // Many lines, then the last one and the kill with no pause between them.
    let python = fake_python(
        dir.path(),
        "i=0; while [ $i -lt 200 ]; do echo \"importing part $i\" >&2; i=$((i+1)); done; echo 'Killed while importing torch' >&2; kill -9 $$",
    );
    let mut missing = Vec::new();
    for attempt in 0..40 {
        let e = start(python.clone());
        if !e.contains("Killed while importing torch") {
            missing.push(format!("attempt {attempt}: {e}"));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for thread in busy {
        thread.join().unwrap();
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn a_python_that_dies_at_start_shows_its_last_words() {
    start_fake(
        "echo 'SyntaxError: this is not python 3' >&2; exit 7",
        &[
            "exited (exit status: 7)",
            "SyntaxError: this is not python 3",
        ],
    );
}

/// The error of calling `op` on `worker`, which must fail.
fn failed_call(worker: &mut Worker, op: &str) -> String {
    match worker.call(op, serde_json::Value::Null, &[]) {
        Ok(_) => panic!("'{op}' succeeded on a worker that cannot answer"),
        Err(e) => format!("{e:#}"),
    }
}

/// A worker that greets, then dies or falls silent on its first request.
fn greeting_worker(dir: &Path, then: &str) -> Worker {
    let python = fake_python(
        dir,
        &format!(
            r#"echo '{{"type": "hello", "protocol": 1, "torch": "2.11.0+cpu", "threads": 1}}'; read line; {then}"#
        ),
    );
    launch(python, None).unwrap()
}

#[test]
fn a_worker_that_dies_mid_call_is_an_error_at_once_naming_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = greeting_worker(
        dir.path(),
        "echo 'Killed by the OOM killer' >&2; kill -9 $$",
    );
    let clock = std::time::Instant::now();
    let e = failed_call(&mut worker, "forward");
    assert!(clock.elapsed() < std::time::Duration::from_secs(5));
    assert_says(
        &e,
        &[
            "pytorch's worker",
            "during 'forward'",
            "signal: 9",
            "Killed by the OOM killer",
        ],
    );
    // And every later call says the same, without waiting.
    let again = failed_call(&mut worker, "noop");
    assert_eq!(again, e);
}

#[test]
fn a_silent_worker_is_stopped_after_the_hang_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = greeting_worker(dir.path(), "exec sleep 600");
    // A shorter silence than a user's: the rule, not the constant, is what is tested.
    let timeout = std::time::Duration::from_secs(1);
    worker.set_hang_timeout(timeout);
    let clock = std::time::Instant::now();
    let e = failed_call(&mut worker, "forward");
    let waited = clock.elapsed();
    assert!(waited >= timeout, "{waited:?}");
    // Stopped by the silence, not by the worker's 600 s sleep ending.
    assert!(waited < crate::worker::HANG_TIMEOUT, "{waited:?}");
    assert!(e.contains("stopped answering (no word for 1 s)"), "{e}");
    assert!(e.contains("was killed"), "{e}");
}

/// A worker that keeps beating but never answers (a native deadlock releases the GIL and
/// the beat goes on) was waited on for ever: the per-call limit ends it, naming the call.
#[test]
fn a_worker_that_beats_but_never_answers_is_stopped_at_the_call_limit() {
    let dir = tempfile::tempdir().unwrap();
    let mut worker = greeting_worker(
        dir.path(),
        r#"while :; do echo '{"type": "heartbeat"}'; sleep 0.1; done"#,
    );
    worker.set_call_limit(std::time::Duration::from_secs(1));
    let clock = std::time::Instant::now();
    let e = failed_call(&mut worker, "forward");
    assert!(
        clock.elapsed() < crate::worker::HANG_TIMEOUT,
        "{:?}",
        clock.elapsed()
    );
    assert_says(
        &e,
        &[
            "during 'forward'",
            "kept beating but gave no answer for 1 s",
            "was killed",
            "CNNBENCH_WORKER_CALL_LIMIT_S",
        ],
    );
}

/// A Python that prints a banner on stdout as it starts (a `sitecustomize`, a conda
/// hook) broke the protocol before the worker took stdout for itself: lines before the
/// greeting that are not frames are skipped, and said when no greeting follows.
#[test]
fn a_banner_before_the_greeting_is_skipped_and_said_if_nothing_follows() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(
        dir.path(),
        r#"echo 'Welcome to the cluster!'; echo '42'; echo '{"type": "hello", "protocol": 1, "torch": "2.11.0+cpu", "threads": 1}'; read line"#,
    );
    let worker = launch(python, None).unwrap();
    assert_eq!(worker.hello["torch"], "2.11.0+cpu");

    let (e, _) = start_fake(
        "printf 'Welcome\\033]0;title\\007 to the cluster\\n'; exit 4",
        &[
            "exited (exit status: 4)",
            "before any frame it printed on its standard output: Welcome",
        ],
    );
    assert!(!e.contains('\u{1b}'), "{e}");
    // After the greeting, a line that is not a frame is the end of the worker: it is
    // killed, whatever it goes on doing.
    let dir = tempfile::tempdir().unwrap();
    let mut worker = greeting_worker(dir.path(), "echo 'a stray print'; exec sleep 60");
    let clock = std::time::Instant::now();
    let e = failed_call(&mut worker, "forward");
    assert_says(
        &e,
        &[
            "during 'forward'",
            "not a frame",
            "a stray print",
            "was killed",
        ],
    );
    // Ended, not waited for: its minute's sleep did not have to run out.
    assert!(
        clock.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        clock.elapsed()
    );
}

#[test]
fn a_heap_policy_the_worker_could_not_apply_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let python = fake_python(
        dir.path(),
        r#"echo '{"type": "hello", "protocol": 1, "torch": "2.11.0+cpu", "threads": 1, "heap_applied": false, "heap": "mallopt refused the settings"}'; read line"#,
    );
    let options = crate::PytorchOptions {
        python: Some(python),
        heap: "keep".into(),
        ..crate::PytorchOptions::default()
    };
    let flavour = crate::Flavour::ALL[0];
    let e = match crate::PytorchEngine::new(flavour, options) {
        Ok(_) => panic!("an engine whose heap policy failed started"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        e.contains("could not apply the heap policy keep (mallopt refused the settings)"),
        "{e}"
    );
    assert!(e.contains("--allocator system"), "{e}");
}

/// int8 needs torchao in the worker's Python (PyTorch 2.11's PT2E lives there), of the
/// tested release; the refusal gives the pip line for that Python.
#[test]
fn int8_is_refused_without_torchao_or_with_another_release_giving_the_pip_line() {
    let python = Path::new("/opt/py/bin/python3");
    let hello =
        |torchao: serde_json::Value| serde_json::json!({ "torch": "2.11.0", "torchao": torchao });
    let pip = format!(
        "`/opt/py/bin/python3 -m pip install torchao=={}`",
        crate::TORCHAO_VERSION
    );
    let none = crate::session::int8_refusal(python, &hello(serde_json::Value::Null)).unwrap();
    assert!(
        none.contains("has no torchao") && none.contains(&pip),
        "{none}"
    );
    let other = crate::session::int8_refusal(python, &hello("0.13.0".into())).unwrap();
    assert!(
        other.contains("has torchao 0.13.0") && other.contains(&pip),
        "{other}"
    );
    assert_eq!(
        crate::session::int8_refusal(python, &hello("0.18.1".into())),
        None
    );
}

/// int8 is offered by the compiled CPU engine alone: the eager engine computes what it
/// is given, and no GPU engine has int8 kernels cnnbench drives.
#[test]
fn int8_is_offered_by_pytorch_compile_on_the_cpu_alone() {
    use cnnbench_engine::Precision;
    for flavour in crate::Flavour::ALL {
        let offered = flavour.capabilities().precisions.contains(&Precision::Int8);
        assert_eq!(
            offered,
            flavour.compiled && flavour.device == cnnbench_engine::DeviceKind::Cpu,
            "{}",
            flavour.engine_name()
        );
    }
}
