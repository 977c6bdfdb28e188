//! `cnnbench run --again RESULT.json`: every result records its run spec, and a rerun
//! from it measures the same configuration, changes only what is given beside it, and
//! refuses a model file that changed. (A `-b max` result's spec: `cli_sweep.rs`.)

use crate::common::*;
use cnnbench_bench::BenchResult;
use predicates::prelude::*;

const TINY: &str = r#"{"format": "cnnbench-model", "version": 1, "name": "tiny",
  "input": [3, 32, 32], "nodes": [
    {"name": "conv", "op": "conv2d", "in_channels": 3, "out_channels": 4, "kernel": 3, "padding": 1},
    {"name": "relu", "op": "relu"},
    {"name": "pool", "op": "adaptive_avg_pool2d", "output": 1},
    {"name": "flat", "op": "flatten"},
    {"name": "fc", "op": "linear", "in_features": 4, "out_features": 10}
  ]}"#;

#[test]
fn again_reruns_the_recorded_spec_changes_what_is_given_and_refuses_a_changed_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("tiny.json");
    std::fs::write(&model, TINY).unwrap();
    let first = dir.path().join("first");
    run_ok(
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--model-file", "tiny.json", "--mode", "step"])
            .args([
                "-b",
                "2",
                "--image-size",
                "48x32",
                "--warmup",
                "0",
                "-n",
                "2",
            ])
            .args([
                "--seed",
                "7",
                "--threads",
                "1",
                "--label",
                "lab",
                "-q",
                "-o",
            ])
            .arg(&first),
    );
    let original: BenchResult = only_result(&first);
    let spec = original.spec.clone().expect("the result records its spec");
    assert_eq!(spec.passes, 2);
    assert_eq!(spec.seed, 7);
    assert_eq!(spec.threads, Some(1));
    assert_eq!(spec.batch, cnnbench_results::Batches::Sizes(vec![2]));
    let [cnnbench_results::ModelRef::File { path, sha256 }] = spec.models.as_slice() else {
        panic!("one model file expected: {:?}", spec.models)
    };
    assert_eq!(path, std::path::Path::new("tiny.json"));
    assert_eq!(sha256.len(), 64);
    let first_file = result_files(&first).remove(0);

    // The same configuration, written elsewhere, with the recorded label.
    let second = dir.path().join("second");
    run_ok(
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--again"])
            .arg(&first_file)
            .args(["-q", "-o"])
            .arg(&second),
    );
    let rerun: BenchResult = only_result(&second);
    assert_eq!(rerun.spec, original.spec);
    assert_eq!(rerun.label.as_deref(), Some("lab"));
    assert_eq!(rerun.config.image_size, [48, 32]);
    assert_eq!(rerun.config.mode, original.config.mode);
    assert_eq!(rerun.config.seed, 7);
    assert_eq!(rerun.summary[&cnnbench_bench::Quantity::Total].count, 2);

    // An option given beside --again changes that setting and nothing else.
    let third = dir.path().join("third");
    run_ok(
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--again"])
            .arg(&first_file)
            .args(["--passes", "3", "-q", "-o"])
            .arg(&third),
    );
    let changed: BenchResult = only_result(&third);
    let mut expected = spec.clone();
    expected.passes = 3;
    assert_eq!(changed.spec, Some(expected));
    assert_eq!(changed.summary[&cnnbench_bench::Quantity::Total].count, 3);

    // The model file changed: refused, nothing written.
    std::fs::write(
        &model,
        TINY.replace("\"out_channels\": 4", "\"out_channels\": 4 "),
    )
    .unwrap();
    let fourth = dir.path().join("fourth");
    cnnbench()
        .current_dir(dir.path())
        .args(["run", "--again"])
        .arg(&first_file)
        .args(["-q", "-o"])
        .arg(&fourth)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "the model file tiny.json (recorded as a relative path, read from the working folder",
        ))
        .stderr(predicate::str::contains("has changed since"))
        .stderr(predicate::str::contains("without --again"));
    assert!(!fourth.exists());

    // From another folder the recorded relative path finds nothing: the message says
    // where it was looked for.
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    cnnbench()
        .current_dir(&elsewhere)
        .args(["run", "--again"])
        .arg(&first_file)
        .args(["-q", "-o"])
        .arg(&fourth)
        .assert()
        .failure()
        .stderr(predicate::str::contains("read from the working folder"))
        .stderr(predicate::str::contains("elsewhere"))
        .stderr(predicate::str::contains("cannot be read now"));
    assert!(!fourth.exists());

    // A result from before specs were recorded says so, and what it held.
    let mut old: serde_json::Value = read_json(&first_file);
    old.as_object_mut().unwrap().remove("spec");
    let old_file = dir.path().join("old.json");
    std::fs::write(&old_file, old.to_string()).unwrap();
    cnnbench()
        .args(["run", "--again"])
        .arg(&old_file)
        .assert()
        .failure()
        .stderr(predicate::str::contains("records no run spec"))
        .stderr(predicate::str::contains(
            "tiny on burn-flex, step mode, batch 2",
        ));

    // The heap policy is the process's: a rerun under another one is refused, with the
    // command that runs it as recorded.
    cnnbench()
        .current_dir(dir.path())
        .env("CNNBENCH_ALLOCATOR", "system")
        .args(["run", "--again"])
        .arg(&first_file)
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "cnnbench --allocator keep run --again",
        ));
}

/// `--again A --again B --repeat 2`: each result's recorded spec is one configuration;
/// their runs are fresh processes interleaved A-B-B-A, each result recording its own
/// configuration's spec, its round and its label. Without --repeat they run once each,
/// in the order given; a result that cannot be read is named before anything runs.
#[test]
fn several_again_results_run_interleaved_each_with_its_own_spec() {
    let dir = tempfile::tempdir().unwrap();
    let original = |name: &str, size: &str, threads: &str| {
        let out = dir.path().join(name);
        run_ok(
            cnnbench()
                .args([
                    "run", "resnet18", "-b", "1", "--passes", "2", "--warmup", "0",
                ])
                .args(["--image-size", size, "--threads", threads, "--label", name])
                .args(["-q", "-o"])
                .arg(&out),
        );
        let spec = only_result::<BenchResult>(&out)
            .spec
            .expect("the result records its spec");
        (result_files(&out).remove(0), spec)
    };
    let (a, a_spec) = original("a", "32", "1");
    let (b, b_spec) = original("b", "40", "2");
    let sorted = |out: &std::path::Path| {
        let mut files: Vec<BenchResult> = result_files(out).iter().map(|f| read_json(f)).collect();
        files.sort_by_key(|r| r.started_at);
        files
    };

    let both = dir.path().join("both");
    cnnbench()
        .args(["run", "--again"])
        .arg(&a)
        .arg("--again")
        .arg(&b)
        .args(["--repeat", "2", "-o"])
        .arg(&both)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "2 configuration(s) × 2 runs: 4 processes",
        ))
        .stderr(predicate::str::contains(format!(
            "run 2 of 2: resnet18 (batch 1, 40x40) from {}",
            b.display()
        )));
    let runs = sorted(&both);
    let order: Vec<(usize, usize, Option<&str>)> = runs
        .iter()
        .map(|r| {
            let round = r.config.round.expect("each run records its round");
            assert_eq!(round.of, 2);
            (round.index, r.config.image_size[0], r.label.as_deref())
        })
        .collect();
    assert_eq!(
        order,
        [
            (1, 32, Some("a")),
            (1, 40, Some("b")),
            (2, 40, Some("b")),
            (2, 32, Some("a"))
        ]
    );
    for r in &runs {
        let expected = if r.config.image_size[0] == 32 {
            &a_spec
        } else {
            &b_spec
        };
        assert_eq!(r.spec.as_ref(), Some(expected));
    }
    assert_eq!(runs[0].config.threads_requested, Some(1));
    assert_eq!(runs[1].config.threads_requested, Some(2));

    // Without --repeat: once each, in the order given, no rounds; an option given applies
    // to both.
    let once = dir.path().join("once");
    run_ok(
        cnnbench()
            .args(["run", "--again"])
            .arg(&b)
            .arg("--again")
            .arg(&a)
            .args(["--passes", "3", "--label", "both", "-q", "-o"])
            .arg(&once),
    );
    let runs = sorted(&once);
    let sizes: Vec<usize> = runs.iter().map(|r| r.config.image_size[0]).collect();
    assert_eq!(sizes, [40, 32]);
    assert!(runs.iter().all(|r| r.config.round.is_none()
        && r.config.passes == 3
        && r.label.as_deref() == Some("both")));

    // A result that cannot be read, or one whose recorded runs differ from another's:
    // named, and nothing runs.
    let missing = dir.path().join("missing.json");
    assert_refused_writing_nothing(
        cnnbench()
            .args(["run", "--again"])
            .arg(&a)
            .arg("--again")
            .arg(&missing),
        &dir.path().join("refused"),
        &format!("cannot read {}", missing.display()),
    );
    let mut thrice: serde_json::Value = read_json(&b);
    thrice["spec"]["repeat"] = 3.into();
    let thrice_file = dir.path().join("thrice.json");
    std::fs::write(&thrice_file, thrice.to_string()).unwrap();
    assert_refused_writing_nothing(
        cnnbench()
            .args(["run", "--again"])
            .arg(&a)
            .arg("--again")
            .arg(&thrice_file),
        &dir.path().join("refused"),
        "give --repeat N",
    );
}
