//! `cnnbench plan` and `cnnbench run --plan … --cell` end to end, on a tiny matrix
//! (resnet18 at 32×32, one pass per cell).

use crate::common::*;

use cnnbench_results::scenario::ScenarioKind;
use predicates::prelude::*;
use std::path::{Path, PathBuf};

/// resnet18 at 32×32 on burn-flex at batches 1, 2 and 3 in train and infer mode, less
/// (batch 3, infer): five cells.
const MATRIX: &str = r#"format = "cnnbench-matrix"
version = 1
models = ["resnet18"]
engines = ["burn-flex"]
batch_sizes = [1, 2, 3]
modes = ["train", "infer"]
image_sizes = [32]
passes = 1
warmup = 0

[[exclude]]
batch_size = 3
mode = "infer"
"#;

fn write_matrix(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("matrix.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn stdout_of(args: &[&str], dir: &Path) -> String {
    let out = cnnbench()
        .current_dir(dir)
        .args(args)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    String::from_utf8(out).unwrap()
}

fn results(dir: &Path) -> Vec<cnnbench_bench::BenchResult> {
    result_files(dir).iter().map(|p| read_json(p)).collect()
}

#[test]
fn list_numbers_the_cells_of_the_cross_product_less_the_exclusions() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_matrix(dir.path(), MATRIX);
    let out = stdout_of(&["plan", m.to_str().unwrap(), "--list"], dir.path());
    assert!(out.contains("5 cells, 0 with a result in results"), "{out}");
    // Cell, Model, Image, Engine, Mode, Batch, Precision, Result.
    let rows: Vec<Vec<&str>> = out
        .lines()
        .filter(|l| l.contains("resnet18"))
        .map(|l| {
            l.split('|')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .collect()
        })
        .collect();
    let cells: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[0], r[4], r[5])).collect();
    // Batch varies before mode; (batch 3, infer) is excluded.
    assert_eq!(
        cells,
        [
            ("0", "train", "1"),
            ("1", "infer", "1"),
            ("2", "train", "2"),
            ("3", "infer", "2"),
            ("4", "train", "3")
        ],
        "{out}"
    );
}

#[test]
fn the_sbatch_script_passes_bash_n_holds_the_array_and_runs_its_cell() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_matrix(dir.path(), MATRIX);
    let script = stdout_of(
        &[
            "plan",
            m.to_str().unwrap(),
            "--slurm",
            "--max-parallel",
            "2",
            "--partition",
            "debug",
            "--time",
            "0:10:00",
        ],
        dir.path(),
    );
    assert!(script.contains("\n#SBATCH --array=0-4%2\n"), "{script}");
    assert!(script.contains("\n#SBATCH --partition=debug\n#SBATCH --time=0:10:00\n"));
    let path = dir.path().join("job.sh");
    std::fs::write(&path, &script).unwrap();
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(check.status.success(), "bash -n: {:?}", check);
    // Run it as Slurm would run task 3 (batch 2, infer), from another folder: the script
    // carries the matrix and the absolute results folder.
    let elsewhere = tempfile::tempdir().unwrap();
    let run = std::process::Command::new("bash")
        .arg(&path)
        .current_dir(elsewhere.path())
        .env("SLURM_ARRAY_TASK_ID", "3")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let written = results(&dir.path().join("results"));
    assert_eq!(written.len(), 1);
    let r = &written[0];
    assert_eq!((r.config.batch_size, r.config.mode.as_str()), (2, "infer"));
    assert_eq!(r.config.image_size, [32, 32]);
    assert_eq!(r.config.passes, 1);
    // Labelled with the host, as results from many hosts must be.
    assert!(r.label.as_deref().is_some_and(|l| !l.is_empty()));
}

#[test]
fn the_kubernetes_job_parses_as_an_indexed_job_with_one_completion_per_cell() {
    let dir = tempfile::tempdir().unwrap();
    // An indented first line must not set the indentation of the YAML block.
    let matrix = format!("  # indented\n{MATRIX}");
    let m = write_matrix(dir.path(), &matrix);
    let yaml = stdout_of(
        &[
            "plan",
            m.to_str().unwrap(),
            "--k8s",
            "--image",
            "registry.example/cnnbench:0.1",
            "--volume-claim",
            "bench-results",
            "--max-parallel",
            "3",
            "--gpus",
            "1",
            "--memory",
            "8Gi",
        ],
        dir.path(),
    );
    let docs: Vec<serde_yaml::Value> = serde_yaml::Deserializer::from_str(&yaml)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    let (config_map, job) = (&docs[0], &docs[1]);
    assert_eq!(config_map["kind"], "ConfigMap");
    // The matrix travels in the ConfigMap, unchanged.
    assert_eq!(config_map["data"]["matrix.toml"].as_str().unwrap(), matrix);
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    assert_eq!(spec["completions"].as_u64(), Some(5));
    assert_eq!(spec["parallelism"].as_u64(), Some(3));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "registry.example/cnnbench:0.1");
    let command: Vec<&str> = container["command"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        command,
        [
            "cnnbench",
            "run",
            "--plan",
            "/etc/cnnbench/matrix.toml",
            "--output",
            "/results"
        ]
    );
    assert_eq!(
        container["resources"]["limits"]["nvidia.com/gpu"].as_u64(),
        Some(1)
    );
    assert_eq!(container["resources"]["requests"]["memory"], "8Gi");
    assert_eq!(
        pod["volumes"][1]["persistentVolumeClaim"]["claimName"],
        "bench-results"
    );
    // Without an image the command says what is missing.
    fails_saying(
        cnnbench()
            .current_dir(dir.path())
            .args(["plan", m.to_str().unwrap(), "--k8s"]),
        "--image",
    );
}

/// Every mapping key of a YAML value, at any depth.
fn yaml_keys(value: &serde_yaml::Value, keys: &mut Vec<String>) {
    match value {
        serde_yaml::Value::Mapping(map) => {
            for (k, v) in map {
                keys.push(k.as_str().unwrap_or("(not a string)").to_string());
                yaml_keys(v, keys);
            }
        }
        serde_yaml::Value::Sequence(items) => items.iter().for_each(|v| yaml_keys(v, keys)),
        serde_yaml::Value::Tagged(tagged) => yaml_keys(&tagged.value, keys),
        serde_yaml::Value::Null
        | serde_yaml::Value::Bool(_)
        | serde_yaml::Value::Number(_)
        | serde_yaml::Value::String(_) => {}
    }
}

/// A matrix file whose name holds U+2028 (or U+2029, NEL: line breaks to YAML 1.1)
/// started a new line of `plan --k8s`'s YAML and injected a key. The YAML parses to the
/// same keys as for a plain name, with no such character raw. (Hostile input, round
/// three.)
#[test]
fn a_line_separator_in_the_matrix_name_injects_no_key_into_the_kubernetes_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let keys_of = |name: &str| {
        let m = dir.path().join(name);
        std::fs::write(&m, MATRIX).unwrap();
        let yaml = stdout_of(
            &[
                "plan",
                m.to_str().unwrap(),
                "--k8s",
                "--image",
                "img",
                "--volume-claim",
                "results",
            ],
            dir.path(),
        );
        let mut keys = Vec::new();
        for doc in serde_yaml::Deserializer::from_str(&yaml) {
            let value: serde_yaml::Value = serde::Deserialize::deserialize(doc)
                .unwrap_or_else(|e| panic!("{name:?}: {e}\n{yaml}"));
            yaml_keys(&value, &mut keys);
        }
        (keys, yaml)
    };
    let (plain, _) = keys_of("m.toml");
    for c in ['\u{2028}', '\u{2029}', '\u{85}'] {
        let name = format!("m{c}evil: injected{c}.toml");
        let (keys, yaml) = keys_of(&name);
        assert!(!yaml.contains(c), "{c:?} raw in\n{yaml}");
        assert!(!keys.iter().any(|k| k.contains("evil")), "{c:?}: {keys:?}");
        assert_eq!(keys, plain, "{c:?}\n{yaml}");
    }
}

#[test]
fn run_plan_runs_the_right_cell_and_skips_a_finished_one() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_matrix(dir.path(), MATRIX);
    let run_cell = |extra: &[&str], env: Option<(&str, &str)>| {
        let mut cmd = cnnbench();
        cmd.current_dir(dir.path())
            .args(["run", "--plan", m.to_str().unwrap(), "--quiet"])
            .args(extra)
            .env_remove("SLURM_ARRAY_TASK_ID")
            .env_remove("JOB_COMPLETION_INDEX");
        if let Some((k, v)) = env {
            cmd.env(k, v);
        }
        cmd.assert()
    };
    run_cell(&["--cell", "4"], None).success();
    let written = results(&dir.path().join("results"));
    assert_eq!(written.len(), 1);
    assert_eq!(
        (
            written[0].config.batch_size,
            written[0].config.mode.as_str()
        ),
        (3, "train")
    );
    assert_eq!(written[0].model.name, "resnet18");
    // Again: skipped, nothing written.
    run_cell(&["--cell", "4"], None)
        .success()
        .stderr(predicate::str::contains("cell 4 of 5").and(predicate::str::contains("skipped")));
    assert_eq!(result_files(&dir.path().join("results")).len(), 1);
    // --rerun runs it again, beside the first result.
    run_cell(&["--cell", "4", "--rerun"], None).success();
    assert_eq!(result_files(&dir.path().join("results")).len(), 2);
    // The index of a Kubernetes Indexed Job: cell 1 is batch 1, infer.
    run_cell(&[], Some(("JOB_COMPLETION_INDEX", "1"))).success();
    let infer: Vec<_> = results(&dir.path().join("results"))
        .into_iter()
        .filter(|r| r.config.mode.as_str() == "infer")
        .collect();
    assert_eq!(infer.len(), 1);
    assert_eq!(infer[0].config.batch_size, 1);
    // No index at all, or one out of range: a clear error.
    run_cell(&[], None)
        .failure()
        .stderr(predicate::str::contains("which cell?"));
    run_cell(&["--cell", "5"], None)
        .failure()
        .stderr(predicate::str::contains(
            "there is no cell 5: the matrix has 5 cells, 0 to 4",
        ));
    // The matrix sets the run options: giving one beside --plan is refused.
    run_cell(&["--cell", "0", "--passes", "3"], None)
        .failure()
        .stderr(predicate::str::contains("cannot be used with"));
}

#[test]
fn the_shell_script_runs_every_cell_then_skips_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let two = MATRIX
        .replace("batch_sizes = [1, 2, 3]", "batch_sizes = [1]")
        .replace("[[exclude]]\nbatch_size = 3\nmode = \"infer\"\n", "");
    let m = write_matrix(dir.path(), &two);
    let script = stdout_of(&["plan", m.to_str().unwrap(), "--shell"], dir.path());
    let path = dir.path().join("run.sh");
    std::fs::write(&path, &script).unwrap();
    let first = std::process::Command::new("bash")
        .arg(&path)
        .output()
        .unwrap();
    assert!(first.status.success(), "{first:?}");
    assert_eq!(result_files(&dir.path().join("results")).len(), 2);
    let again = std::process::Command::new("bash")
        .arg(&path)
        .output()
        .unwrap();
    assert!(again.status.success(), "{again:?}");
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(stderr.matches("skipped").count(), 2, "{stderr}");
    assert_eq!(result_files(&dir.path().join("results")).len(), 2);
}

#[test]
fn matrix_errors_name_the_key_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (change, expected) in [
        (("passes = 1", "pases = 1"), "unknown field `pases`"),
        (
            ("models = [\"resnet18\"]", "models = [\"resnet181\"]"),
            "`models`: unknown model \"resnet181\"",
        ),
        (
            ("engines = [\"burn-flex\"]", "engines = [\"burn-flax\"]"),
            "`engines`: unknown engine \"burn-flax\"",
        ),
        (
            ("batch_sizes = [1, 2, 3]", "batch_sizes = []"),
            "`batch_sizes` is empty",
        ),
        (
            ("passes = 1", "passes = 1\nprecisions = [\"f16\"]"),
            "drop it with an [[exclude]] entry",
        ),
    ] {
        let m = write_matrix(dir.path(), &MATRIX.replace(change.0, change.1));
        cnnbench()
            .current_dir(dir.path())
            .args(["plan", m.to_str().unwrap(), "--list"])
            .assert()
            .failure()
            .stderr(predicate::str::contains(expected));
    }
}

#[test]
fn results_of_two_hosts_are_two_rows_in_report_and_pair_by_host_in_compare() {
    let dir = tempfile::tempdir().unwrap();
    let one = MATRIX
        .replace("batch_sizes = [1, 2, 3]", "batch_sizes = [1]")
        .replace("modes = [\"train\", \"infer\"]", "modes = [\"infer\"]")
        .replace("[[exclude]]\nbatch_size = 3\nmode = \"infer\"\n", "");
    let m = write_matrix(dir.path(), &one);
    for output in ["results", "results2"] {
        for host in ["node-a", "node-b"] {
            // As a pod of a Kubernetes Job sees its node's name.
            cnnbench()
                .current_dir(dir.path())
                .args([
                    "run",
                    "--plan",
                    m.to_str().unwrap(),
                    "--cell",
                    "0",
                    "--quiet",
                ])
                .args(["--rerun", "--output", output])
                .env("CNNBENCH_HOST", host)
                .assert()
                .success();
        }
    }
    let files = result_files(&dir.path().join("results"));
    assert_eq!(files.len(), 2, "one folder per host");
    let out = stdout_of(&["report", "results"], dir.path());
    // The model's table: one row per host (the overview line names the fastest, with "·").
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("(node-") && !l.contains('·'))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    // (The rows are in order of speed.)
    assert!(rows.iter().any(|r| r.contains("(node-a)")), "{out}");
    assert!(rows.iter().any(|r| r.contains("(node-b)")), "{out}");
    assert!(!out.contains("pooled"), "{out}");
    // compare pairs each host with itself.
    let out = stdout_of(&["compare", "results", "results2"], dir.path());
    let pairs: Vec<&str> = out.lines().filter(|l| l.contains("(node-")).collect();
    assert_eq!(pairs.len(), 2, "{out}");
    assert!(pairs.iter().any(|r| r.contains("(node-a)")), "{out}");
    assert!(pairs.iter().any(|r| r.contains("(node-b)")), "{out}");
}

/// A matrix with an engine-setting axis lists and runs cell by cell, each cell's
/// settings in its spec; a setting the engine does not have is refused when the file is
/// read; changing `min_time` or `cudnn_benchmark` in the matrix reruns a finished cell.
#[test]
fn an_engine_setting_axis_and_a_changed_setting_make_cells_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let axis = write_matrix(
        dir.path(),
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\", \"openvino-cpu\"]\nmodes = [\"infer\"]\nprecisions = [\"f32\", \"bf16\"]\n[[exclude]]\nengine = \"burn-flex\"\nprecision = \"bf16\"\n[engine_settings.openvino-cpu]\nhint = [\"latency\", \"throughput\"]\n",
    );
    let list = stdout_of(&["plan", axis.to_str().unwrap(), "--list"], dir.path());
    assert!(list.contains("5 cells"), "{list}");
    let wrong = dir.path().join("wrong.toml");
    std::fs::write(
        &wrong,
        std::fs::read_to_string(&axis)
            .unwrap()
            .replace("hint = [", "hnit = ["),
    )
    .unwrap();
    cnnbench()
        .args(["plan"])
        .arg(&wrong)
        .arg("--list")
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "engine openvino-cpu: it has no setting `hnit`: its settings are hint, streams",
        ));
    // A finished cell, then the same matrix with min_time set: the cell runs again.
    let tiny = "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nimage_sizes = [32]\nbatch_sizes = [1]\nmodes = [\"infer\"]\npasses = 1\nwarmup = 0\n";
    let m = write_matrix(dir.path(), tiny);
    let run_cell = |matrix: &std::path::Path| {
        cnnbench()
            .current_dir(dir.path())
            .args([
                "run",
                "--plan",
                matrix.to_str().unwrap(),
                "--cell",
                "0",
                "-q",
            ])
            .assert()
            .success()
    };
    run_cell(&m);
    run_cell(&m).stderr(predicate::str::contains("already has a result"));
    for changed in ["min_time = 0.01\n", "cudnn_benchmark = true\n"] {
        let edited = dir.path().join("edited.toml");
        std::fs::write(&edited, format!("{tiny}{changed}")).unwrap();
        let list = stdout_of(
            &[
                "plan",
                edited.to_str().unwrap(),
                "--list",
                "--output",
                "results",
            ],
            dir.path(),
        );
        assert!(list.contains("0 with a result"), "{changed}: {list}");
    }
}

/// Run settings as axes (`threads = [1, 2]`) are cells of their own, listed with their
/// values; a cell of `repeat = 2` runs in two processes, each writing the result of one
/// round, and is finished only while both rounds are there.
#[test]
fn a_run_setting_axis_and_a_repeated_cell() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_matrix(
        dir.path(),
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nimage_sizes = [32]\nbatch_sizes = [1]\nmodes = [\"infer\"]\npasses = 1\nwarmup = 0\nthreads = [1, 2]\nrepeat = 2\n",
    );
    let list = || {
        stdout_of(
            &["plan", m.to_str().unwrap(), "--list", "--output", "results"],
            dir.path(),
        )
    };
    let listed = list();
    assert!(
        listed.contains("| threads=1 ")
            && listed.contains("| threads=2 ")
            && listed.contains("2 cells, 0 with a result"),
        "{listed}"
    );
    let run_cell = || {
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--plan", m.to_str().unwrap(), "--cell", "1"])
            .assert()
            .success()
    };
    run_cell().stderr(predicate::str::contains(
        "cell 1 of 2: resnet18 32x32 on burn-flex, infer, batch 1, f32, threads 2",
    ));
    let mut rounds: Vec<(usize, Option<usize>)> = results(&dir.path().join("results"))
        .iter()
        .map(|r| {
            let round = r.config.round.expect("each run records its round");
            assert_eq!(round.of, 2);
            (round.index, r.config.threads_requested)
        })
        .collect();
    rounds.sort();
    assert_eq!(rounds, [(1, Some(2)), (2, Some(2))]);
    assert!(list().contains("1 with a result"));
    run_cell().stderr(predicate::str::contains("already has a result"));
    // One round gone: the cell has not finished.
    let files = result_files(&dir.path().join("results"));
    std::fs::remove_file(&files[0]).unwrap();
    assert!(list().contains("0 with a result"));
    // The matrix sets the runs of a cell: --repeat beside --plan is refused.
    cnnbench()
        .current_dir(dir.path())
        .args(["run", "--plan", m.to_str().unwrap(), "--cell", "0"])
        .args(["--repeat", "3"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--repeat cannot be used with --plan",
        ));
}

/// A matrix's heap policy is the process's: a cell run under another one is refused
/// with the command that runs it; run under it, the result records it.
#[test]
fn a_matrix_heap_policy_is_the_cells_process_policy() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_matrix(
        dir.path(),
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nimage_sizes = [32]\nbatch_sizes = [1]\nmodes = [\"infer\"]\npasses = 1\nwarmup = 0\nallocator = \"system\"\n",
    );
    cnnbench()
        .current_dir(dir.path())
        .env_remove("CNNBENCH_ALLOCATOR")
        .args(["run", "--plan", m.to_str().unwrap(), "--cell", "0", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "cnnbench --allocator system run --plan",
        ));
    assert!(result_files(&dir.path().join("results")).is_empty());
    cnnbench()
        .current_dir(dir.path())
        .env_remove("CNNBENCH_ALLOCATOR")
        .args([
            "--allocator",
            "system",
            "run",
            "--plan",
            m.to_str().unwrap(),
        ])
        .args(["--cell", "0", "-q"])
        .assert()
        .success();
    let written = results(&dir.path().join("results"));
    assert_eq!(written.len(), 1);
    assert_eq!(
        written[0].spec.as_ref().map(|s| s.allocator.as_str()),
        Some("system")
    );
    let script = stdout_of(&["plan", m.to_str().unwrap(), "--shell"], dir.path());
    assert!(
        script.contains(" --allocator system run --plan"),
        "{script}"
    );
}

/// A serving scenario in a matrix: `qps = [..]` is an axis of the server's cells, each
/// cell's result serves its own load, the listing shows it, and the scenario's flags
/// are the matrix's, refused beside `--plan`.
#[test]
fn a_matrix_sweeps_a_servers_load_one_cell_each() {
    let dir = tempfile::tempdir().unwrap();
    let m = write_matrix(
        dir.path(),
        "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\nimage_sizes = [32]\nmodes = [\"infer\"]\nwarmup = 1\nscenario = \"server\"\nqps = [100, 200]\nlatency_bound = 1000\nscenario_time = 0\nmin_queries = 60\n",
    );
    let listed = stdout_of(
        &["plan", m.to_str().unwrap(), "--list", "--output", "results"],
        dir.path(),
    );
    assert!(
        listed.contains("| scenario=server qps=100 ")
            && listed.contains("| scenario=server qps=200 ")
            && listed.contains("2 cells, 0 with a result"),
        "{listed}"
    );
    for (cell, qps) in [(0, 100.0), (1, 200.0)] {
        let out = dir.path().join(format!("cell{cell}"));
        cnnbench()
            .current_dir(dir.path())
            .args(["run", "--plan", m.to_str().unwrap(), "--cell"])
            .arg(cell.to_string())
            .arg("-o")
            .arg(&out)
            .assert()
            .success()
            .stderr(predicate::str::contains(format!(
                "cell {cell} of 2: resnet18 32x32 on burn-flex, infer, batch 1, f32, scenario server, qps {qps}"
            )));
        let written = results(&out);
        assert_eq!(written.len(), 1, "cell {cell}");
        let record = written[0].scenario.as_ref().expect("a scenario record");
        assert_eq!(record.kind, ScenarioKind::Server);
        assert_eq!(record.target_qps, Some(qps));
        assert_eq!(record.queries, 60);
        assert_eq!(written[0].config.batch_size, 1);
        let spec = written[0].spec.as_ref().expect("the cell's spec");
        let scenario = spec.scenario.as_ref().expect("the spec's scenario");
        assert_eq!(
            (scenario.target_qps, scenario.latency_bound_ms),
            (Some(qps), Some(1000.0))
        );
    }
    // The finished cell is found by its spec, scenario included.
    let again = cnnbench()
        .current_dir(dir.path())
        .args(["run", "--plan", m.to_str().unwrap(), "--cell", "1", "-o"])
        .arg(dir.path().join("cell1"))
        .assert()
        .success();
    again.stderr(predicate::str::contains("already has a result"));
    cnnbench()
        .current_dir(dir.path())
        .args(["run", "--plan", m.to_str().unwrap(), "--cell", "0"])
        .args(["--scenario", "server", "--qps", "50"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "--scenario cannot be used with --plan",
        ));
}
