//! Which cells already have a result, so that a resubmitted array runs only the cells
//! that failed or never ran.

use cnnbench_results::{Batches, BenchResult, ModelRef, RunSpec};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum FinishedError {
    #[error("cannot read the results folder {path}: {source}")]
    ReadDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cell {index}: {reason}")]
    Model { index: usize, reason: String },
}

/// A result file under `dir` (at any depth: one folder per host and engine) that
/// measured this cell's spec: the spec the result recorded is the cell's, every field
/// (engine settings, layout, time rules included), except where the cell ran (`--device`,
/// `--allow-cpu-adapter`), which does not make it another measurement. A result written
/// before results recorded their spec is matched on what it recorded: model, engine,
/// mode, batch size, image size, precision, threads, passes, warm-up and seed. When
/// `label` is given the result must carry it too; without one, a result from any host
/// counts, so a cell runs once wherever the scheduler put it.
///
/// A cell of `repeat = N` (N > 1) is measured in N processes, each writing the result of
/// one round (its spec recording one run, its `config.round` which of N): it has
/// finished when every round 1..N is there, and the first round's file is returned; a
/// cell with rounds missing runs all N again, interleaved as one series.
pub fn finished_result(
    dir: &Path,
    index: usize,
    spec: &RunSpec,
    label: Option<&str>,
) -> Result<Option<PathBuf>, FinishedError> {
    let model = match spec.models.as_slice() {
        [ModelRef::Zoo { name }] => name,
        _ => {
            return Err(FinishedError::Model {
                index,
                reason: "a matrix cell is one zoo model".into(),
            })
        }
    };
    let entry = cnnbench_zoo::find(model).ok_or_else(|| FinishedError::Model {
        index,
        reason: format!("{model} is not a zoo model"),
    })?;
    let [c, h, w] = entry.default_input;
    let size = spec.image_sizes.as_ref().and_then(|s| s.first().copied());
    let input = size.map_or([c, h, w], |s| [c, s.height, s.width]);
    let graph = (entry.build)(input).map_err(|e| FinishedError::Model {
        index,
        reason: e.to_string(),
    })?;
    let name = graph.name().to_string();
    let batch = match &spec.batch {
        Batches::Sizes(sizes) if sizes.len() == 1 => sizes[0],
        Batches::Sizes(_) | Batches::Max => {
            return Err(FinishedError::Model {
                index,
                reason: "a matrix cell is one batch size".into(),
            })
        }
    };
    let rounds = spec.repeat;
    // What each run records: the spec of one run (`RunSpec::points`), where it ran aside.
    let placed = |s: &RunSpec| {
        let mut s = s.clone();
        s.engine_options.device = None;
        s.engine_options.allow_cpu_adapter = false;
        s
    };
    let cell = RunSpec {
        repeat: 1,
        ..placed(spec)
    };
    let same_measurement = |r: &BenchResult| match &r.spec {
        Some(recorded) => placed(recorded) == cell,
        None => {
            r.model.name == name
                && r.engine.name == spec.engine
                && r.config.mode == spec.mode
                && r.config.batch_size == batch
                && r.config.image_size == [input[1], input[2]]
                && r.config.precision == spec.precision
                && r.config.threads_requested == spec.threads
                && r.config.passes == spec.passes
                && r.config.warmup == spec.warmup
                && r.config.seed == spec.seed
        }
    };
    // Which of the cell's runs a result is: for a cell of one run, any measurement of
    // its spec; for N runs, round k of a series of N.
    let run_of = |r: &BenchResult| -> Option<usize> {
        if !(same_measurement(r) && label.is_none_or(|l| r.label.as_deref() == Some(l))) {
            return None;
        }
        if rounds == 1 {
            return Some(0);
        }
        r.config
            .round
            .filter(|round| round.of == rounds && (1..=rounds).contains(&round.index))
            .map(|round| round.index - 1)
    };
    find(dir, rounds, &run_of)
}

/// The file of the first run when a result of each of the `runs` runs is under `dir`.
fn find(
    dir: &Path,
    runs: usize,
    run_of: &dyn Fn(&BenchResult) -> Option<usize>,
) -> Result<Option<PathBuf>, FinishedError> {
    let found = match cnnbench_results::folders::json_files(dir) {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(FinishedError::ReadDir {
                path: dir.display().to_string(),
                source,
            })
        }
    };
    // A folder that cannot be read may hold the cell's result: running it again on a
    // guess would spend the machine's time, so the user is told instead.
    if let Some((path, source)) = found.unreadable.into_iter().next() {
        return Err(FinishedError::ReadDir {
            path: path.display().to_string(),
            source,
        });
    }
    let mut runs_found: Vec<Option<PathBuf>> = vec![None; runs];
    for path in found.files {
        // Other JSON in the folder (profiles, the original suite's files, charts' data)
        // is not a result of ours: not a finished cell either. Pipes and huge files are
        // not read.
        let Ok(text) = cnnbench_graph::read_bounded_to_string(
            &path,
            cnnbench_results::folders::MAX_RESULT_FILE_BYTES,
            "result files",
        ) else {
            continue;
        };
        let Ok(result) = serde_json::from_str::<BenchResult>(&text) else {
            continue;
        };
        if result.format != cnnbench_results::RESULT_FORMAT {
            continue;
        }
        if let Some(run) = run_of(&result) {
            if let Some(slot) = runs_found.get_mut(run) {
                slot.get_or_insert(path);
            }
            if runs_found.iter().all(Option::is_some) {
                return Ok(runs_found.swap_remove(0));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Matrix;
    use serde_json::Value;

    /// A burn-flex resnet18 result: train, batch 16, 224×224, 12 passes, 1 warm-up, seed
    /// 0, written before results recorded their spec.
    const RESULT: &str = include_str!("../../report/tests/fixtures/ours/new/resnet18.json");

    fn matrix(extra: &str) -> Matrix {
        matrix_of("[\"burn-flex\"]", extra)
    }

    fn matrix_of(engines: &str, extra: &str) -> Matrix {
        Matrix::parse(
            &format!(
                "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = {engines}\npasses = 12\n{extra}"
            ),
            &["burn-flex", "openvino-cpu"],
        )
        .unwrap()
    }

    fn write(dir: &Path, name: &str, edit: impl Fn(&mut Value)) -> PathBuf {
        let mut v: Value = serde_json::from_str(RESULT).unwrap();
        edit(&mut v);
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, v.to_string()).unwrap();
        path
    }

    fn finished(dir: &Path, m: &Matrix, i: usize, label: Option<&str>) -> Option<PathBuf> {
        finished_result(dir, i, &m.spec(&m.cells[i]), label).unwrap()
    }

    #[test]
    fn a_result_of_the_same_cell_at_any_depth_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix("");
        assert_eq!(finished(dir.path(), &m, 0, None), None);
        // Neither JSON that is not a result nor a result of another cell counts.
        std::fs::write(dir.path().join("notes.json"), "{\"a\": 1}").unwrap();
        write(dir.path(), "a/b16.json", |v| {
            v["config"]["batch_size"] = 32.into()
        });
        write(dir.path(), "a/passes.json", |v| {
            v["config"]["passes"] = 3.into()
        });
        write(dir.path(), "a/engine.json", |v| {
            v["engine"]["name"] = "torch-cpu".into()
        });
        write(dir.path(), "a/size.json", |v| {
            v["config"]["image_size"] = serde_json::json!([64, 64])
        });
        assert_eq!(finished(dir.path(), &m, 0, None), None);
        let found = write(dir.path(), "host-a/x/resnet18.json", |v| {
            v["label"] = "host-a".into()
        });
        assert_eq!(finished(dir.path(), &m, 0, None), Some(found.clone()));
        // With a label, only a result carrying it counts.
        assert_eq!(finished(dir.path(), &m, 0, Some("host-b")), None);
        assert_eq!(finished(dir.path(), &m, 0, Some("host-a")), Some(found));
        // A matrix with other settings (threads) has not run this cell.
        assert_eq!(finished(dir.path(), &matrix("threads = 4"), 0, None), None);
    }

    /// A result that recorded its spec is the cell's only if every field of the spec is:
    /// changing `min_time`, `channels_last` or an engine setting in the matrix reruns the
    /// cell (these were not compared, and the cell was skipped). Where it ran is not a
    /// field that counts.
    #[test]
    fn a_cell_whose_spec_changed_in_any_field_is_not_finished() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix("");
        let mut recorded = m.spec(&m.cells[0]);
        recorded.engine_options.device = Some(1);
        let spec = serde_json::to_value(&recorded).unwrap();
        let found = write(dir.path(), "r.json", |v| v["spec"] = spec.clone());
        assert_eq!(finished(dir.path(), &m, 0, None), Some(found));
        for changed in [
            "min_time = 2.0",
            "channels_last = true",
            "cudnn_benchmark = true",
            "target_ci = 5.0\nmax_time = 9.0",
            "warmup_time = 1.0",
            "seed = 1",
        ] {
            assert_eq!(
                finished(dir.path(), &matrix(changed), 0, None),
                None,
                "{changed}"
            );
        }
        // An engine setting: the cell with the recorded settings is found, the other not.
        let ov = matrix_of(
            "[\"openvino-cpu\"]",
            "[engine_settings.openvino-cpu]\nhint = [\"latency\", \"throughput\"]",
        );
        let spec = serde_json::to_value(ov.spec(&ov.cells[1])).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let found = write(dir.path(), "ov.json", |v| {
            v["spec"] = spec.clone();
            v["engine"]["name"] = "openvino-cpu".into();
        });
        assert_eq!(finished(dir.path(), &ov, 0, None), None);
        assert_eq!(finished(dir.path(), &ov, 1, None), Some(found));
    }

    /// A cell of `repeat = 3` writes three results, one a round, each recording the spec
    /// of one run: it has finished only when all three rounds are there (rounds of a
    /// series of another length are not its rounds).
    #[test]
    fn a_repeated_cell_is_finished_when_every_round_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix("repeat = 3");
        let one_run = RunSpec {
            repeat: 1,
            ..m.spec(&m.cells[0])
        };
        let spec = serde_json::to_value(&one_run).unwrap();
        let round = |name: &str, index: usize, of: usize| {
            write(dir.path(), name, |v| {
                v["spec"] = spec.clone();
                v["config"]["round"] = serde_json::json!({"index": index, "of": of});
            })
        };
        let first = round("r1.json", 1, 3);
        round("r3.json", 3, 3);
        round("other-series.json", 2, 2);
        assert_eq!(finished(dir.path(), &m, 0, None), None);
        round("r2.json", 2, 3);
        assert_eq!(finished(dir.path(), &m, 0, None), Some(first));
        // The cell run once is finished by any one of those runs.
        assert!(finished(dir.path(), &matrix(""), 0, None).is_some());
        // A cell of 4 runs has none of its rounds there.
        assert_eq!(finished(dir.path(), &matrix("repeat = 4"), 0, None), None);
    }
}
