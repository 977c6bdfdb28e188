//! Which Python the worker runs on: `--python PATH`, else `CNNBENCH_PYTHON`, the active
//! venv (`VIRTUAL_ENV`), a `.venv-torch` beside the working folder or the executable (or
//! above them: where the libtorch engines and the wheel-loaded engines look), else
//! `python3` on the PATH.

use std::path::{Path, PathBuf};

/// The interpreter chosen, and why, for messages and the result file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interpreter {
    pub path: PathBuf,
    /// Where it came from: `--python`, `CNNBENCH_PYTHON`, `VIRTUAL_ENV`, `.venv-torch`
    /// or `PATH`.
    pub chosen_by: &'static str,
}

/// The places looked in, gathered from the process so that tests can make their own.
#[derive(Clone, Debug, Default)]
pub struct Places {
    pub given: Option<PathBuf>,
    pub variable: Option<PathBuf>,
    pub virtual_env: Option<PathBuf>,
    /// Folders whose `.venv-torch` is looked in, nearest first.
    pub venv_roots: Vec<PathBuf>,
}

impl Places {
    /// This process's places, with `given` from `--python`.
    pub fn of_this_process(given: Option<&Path>) -> Places {
        let non_empty = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Places {
            given: given.map(Path::to_path_buf),
            variable: non_empty("CNNBENCH_PYTHON"),
            virtual_env: non_empty("VIRTUAL_ENV"),
            venv_roots: cnnbench_host::wheel::venv_roots_of_this_process(),
        }
    }

    /// The first place that names or holds an interpreter; `python3` when none does.
    /// A path given by the user is taken as it is (a missing file is then the start-up
    /// error, naming it).
    pub fn choose(&self) -> Interpreter {
        if let Some(path) = &self.given {
            return Interpreter {
                path: path.clone(),
                chosen_by: "--python",
            };
        }
        if let Some(path) = &self.variable {
            return Interpreter {
                path: path.clone(),
                chosen_by: "CNNBENCH_PYTHON",
            };
        }
        if let Some(venv) = &self.virtual_env {
            let python = venv.join("bin").join("python");
            if python.exists() {
                return Interpreter {
                    path: python,
                    chosen_by: "VIRTUAL_ENV",
                };
            }
        }
        for root in &self.venv_roots {
            let python = root.join(".venv-torch").join("bin").join("python");
            if python.exists() {
                return Interpreter {
                    path: python,
                    chosen_by: ".venv-torch",
                };
            }
        }
        Interpreter {
            path: PathBuf::from("python3"),
            chosen_by: "PATH",
        }
    }
}

/// What installs the PyTorch the engines are tested with into the chosen interpreter.
pub fn install_hint(python: &Path) -> String {
    format!(
        "install it with `{} -m pip install torch=={}`, or point --python (or CNNBENCH_PYTHON) at a Python that has it",
        python.display(),
        crate::TORCH_VERSION
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }

    #[test]
    fn the_order_is_flag_variable_venv_venv_torch_then_path() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join("active");
        touch(&venv.join("bin/python"));
        let project = dir.path().join("project/sub");
        touch(&dir.path().join("project/.venv-torch/bin/python"));
        std::fs::create_dir_all(&project).unwrap();
        let mut places = Places {
            given: Some("/opt/py/bin/python3".into()),
            variable: Some("/usr/bin/python3.12".into()),
            virtual_env: Some(venv.clone()),
            venv_roots: project.ancestors().map(Path::to_path_buf).collect(),
        };
        assert_eq!(places.choose().chosen_by, "--python");
        places.given = None;
        assert_eq!(places.choose().path, PathBuf::from("/usr/bin/python3.12"));
        places.variable = None;
        assert_eq!(places.choose().path, venv.join("bin/python"));
        places.virtual_env = Some(dir.path().join("gone"));
        let chosen = places.choose();
        assert_eq!(chosen.chosen_by, ".venv-torch");
        assert_eq!(
            chosen.path,
            dir.path().join("project/.venv-torch/bin/python")
        );
        places.venv_roots.clear();
        assert_eq!(places.choose().path, PathBuf::from("python3"));
    }

    #[test]
    fn the_hint_names_the_interpreter_and_the_pip_line() {
        let hint = install_hint(Path::new("/x/bin/python"));
        assert!(
            hint.contains("/x/bin/python -m pip install torch==2.11.0"),
            "{hint}"
        );
    }
}
