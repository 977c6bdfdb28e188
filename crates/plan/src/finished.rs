//! Which cells already have a result, so that a resubmitted array runs only the cells
//! that failed or never ran.

use crate::matrix::{Cell, RunSettings};
use cnnbench_results::BenchResult;
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
/// measured this cell: the same model, engine, mode, batch size, image size and
/// precision, run with the same threads, passes, warm-up and seed. When `label` is given
/// the result must carry it too; without one, a result from any host counts, so a cell
/// runs once wherever the scheduler put it.
pub fn finished_result(
    dir: &Path,
    cell: &Cell,
    settings: &RunSettings,
    label: Option<&str>,
) -> Result<Option<PathBuf>, FinishedError> {
    let entry = cnnbench_zoo::find(&cell.model).ok_or_else(|| FinishedError::Model {
        index: cell.index,
        reason: format!("{} is not a zoo model", cell.model),
    })?;
    let [c, h, w] = entry.default_input;
    let input = cell
        .image_size
        .map_or([c, h, w], |s| [c, s.height, s.width]);
    let graph = (entry.build)(input).map_err(|e| FinishedError::Model {
        index: cell.index,
        reason: e.to_string(),
    })?;
    let name = graph.name().to_string();
    let wanted = |r: &BenchResult| {
        r.model.name == name
            && r.engine.name == cell.engine
            && r.config.mode == cell.mode
            && r.config.batch_size == cell.batch_size
            && r.config.image_size == [input[1], input[2]]
            && r.config.precision == cell.precision
            && r.config.threads_requested == settings.threads
            && r.config.passes == settings.passes
            && r.config.warmup == settings.warmup
            && r.config.seed == settings.seed
            && label.is_none_or(|l| r.label.as_deref() == Some(l))
    };
    find(dir, &wanted)
}

fn find(
    dir: &Path,
    wanted: &dyn Fn(&BenchResult) -> bool,
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
        if result.format == cnnbench_results::RESULT_FORMAT && wanted(&result) {
            return Ok(Some(path));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::Matrix;
    use serde_json::Value;

    /// A burn-flex resnet18 result: train, batch 16, 224×224, 12 passes, 1 warm-up, seed 0.
    const RESULT: &str = include_str!("../../report/tests/fixtures/ours/new/resnet18.json");

    fn matrix(extra: &str) -> Matrix {
        Matrix::parse(
            &format!(
                "format = \"cnnbench-matrix\"\nversion = 1\nmodels = [\"resnet18\"]\nengines = [\"burn-flex\"]\npasses = 12\n{extra}"
            ),
            &["burn-flex"],
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

    #[test]
    fn a_result_of_the_same_cell_at_any_depth_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix("");
        let cell = &m.cells[0];
        assert_eq!(
            finished_result(dir.path(), cell, &m.settings, None).unwrap(),
            None
        );
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
        assert_eq!(
            finished_result(dir.path(), cell, &m.settings, None).unwrap(),
            None
        );
        let found = write(dir.path(), "host-a/x/resnet18.json", |v| {
            v["label"] = "host-a".into()
        });
        assert_eq!(
            finished_result(dir.path(), cell, &m.settings, None).unwrap(),
            Some(found.clone())
        );
        // With a label, only a result carrying it counts.
        assert_eq!(
            finished_result(dir.path(), cell, &m.settings, Some("host-b")).unwrap(),
            None
        );
        assert_eq!(
            finished_result(dir.path(), cell, &m.settings, Some("host-a")).unwrap(),
            Some(found)
        );
        // A matrix with other settings (threads) has not run this cell.
        let threads = matrix("threads = 4");
        assert_eq!(
            finished_result(dir.path(), &threads.cells[0], &threads.settings, None).unwrap(),
            None
        );
    }
}
