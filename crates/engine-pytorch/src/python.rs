//! Which Python the worker runs on: `--python PATH`, else `CNNBENCH_PYTHON`, the active
//! venv (`VIRTUAL_ENV`), a `.venv-torch` in the working folder, the executable's folder
//! or the repository either is in (where the wheel-loaded engines look too; never any
//! other folder above them), else `python3` on the PATH. A `.venv-torch` Python is run
//! only when it belongs to the user running cnnbench (or root): the search found it, the
//! user did not name it.

use std::path::{Path, PathBuf};

use cnnbench_host::wheel::{current_uid, untrusted};

/// The interpreter chosen, and why, for messages and the result file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interpreter {
    pub path: PathBuf,
    /// Where it came from: `--python`, `CNNBENCH_PYTHON`, `VIRTUAL_ENV`, `.venv-torch`
    /// or `PATH`.
    pub chosen_by: &'static str,
    /// The `.venv-torch` Pythons passed over because another user could have chosen
    /// them, and why: said in every message about the interpreter, so that a user whose
    /// venv was skipped learns it.
    pub skipped: Vec<String>,
}

impl Interpreter {
    /// Where it came from, for messages: `chosen_by`, and what was skipped before it.
    pub fn origin(&self) -> String {
        if self.skipped.is_empty() {
            self.chosen_by.to_string()
        } else {
            format!("{}; skipped {}", self.chosen_by, self.skipped.join("; "))
        }
    }
}

/// The places looked in, gathered from the process so that tests can make their own.
#[derive(Clone, Debug)]
pub struct Places {
    pub given: Option<PathBuf>,
    pub variable: Option<PathBuf>,
    pub virtual_env: Option<PathBuf>,
    /// Folders whose `.venv-torch` is looked in, nearest first.
    pub venv_roots: Vec<PathBuf>,
    /// The user a `.venv-torch` Python must belong to (or root): this process's.
    pub uid: u32,
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
            uid: current_uid(),
        }
    }

    /// The first place that names or holds an interpreter; `python3` when none does.
    /// A path given by the user (`--python`, `CNNBENCH_PYTHON`, `VIRTUAL_ENV`) is taken
    /// as it is (a missing file is then the start-up error, naming it); one the search
    /// found in a `.venv-torch` is skipped, with the reason kept, unless it belongs to
    /// this user or root.
    pub fn choose(&self) -> Interpreter {
        let named = |path: &Path, chosen_by| Interpreter {
            path: path.to_path_buf(),
            chosen_by,
            skipped: Vec::new(),
        };
        if let Some(path) = &self.given {
            return named(path, "--python");
        }
        if let Some(path) = &self.variable {
            return named(path, "CNNBENCH_PYTHON");
        }
        if let Some(venv) = &self.virtual_env {
            let python = venv.join("bin").join("python");
            if python.exists() {
                return named(&python, "VIRTUAL_ENV");
            }
        }
        let mut skipped = Vec::new();
        for root in &self.venv_roots {
            let venv = root.join(".venv-torch");
            let python = venv.join("bin").join("python");
            if std::fs::symlink_metadata(&python).is_err() {
                continue;
            }
            match untrusted(&venv, &python, self.uid) {
                None => {
                    return Interpreter {
                        path: python,
                        chosen_by: ".venv-torch",
                        skipped,
                    };
                }
                Some(why) => skipped.push(format!("{}: {why}", python.display())),
            }
        }
        Interpreter {
            path: PathBuf::from("python3"),
            chosen_by: "PATH",
            skipped,
        }
    }
}

/// The interpreter this process's places choose (`given`: `--python`), saying on stderr,
/// once per process, each `.venv-torch` Python the search skipped: a user whose venv was
/// passed over learns why even when another Python then works.
pub fn choose_for_this_process(given: Option<&Path>) -> Interpreter {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let chosen = Places::of_this_process(given).choose();
    let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
    for skipped in &chosen.skipped {
        if !said.contains(skipped) {
            cnnbench_engine::warn_on_stderr(&format!(
                "warning: the pytorch engines' Python: skipped {}",
                cnnbench_engine::printable(skipped)
            ));
            said.push(skipped.clone());
        }
    }
    chosen
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
            uid: current_uid(),
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

    /// Makes `paths` another user's than the one the test pretends to be, and returns
    /// the user to pretend to be (as root: gives them to user 4242, since root's own
    /// files are trusted).
    fn owned_by_someone_else(paths: &[&Path]) -> u32 {
        let me = current_uid();
        if me != 0 {
            return me + 1;
        }
        for path in paths {
            std::os::unix::fs::lchown(path, Some(4242), None).unwrap();
        }
        0
    }

    #[test]
    fn a_venv_torch_python_someone_else_owns_is_skipped_and_said() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join(".venv-torch");
        let python = venv.join("bin/python");
        touch(&python);
        let places = Places {
            given: None,
            variable: None,
            virtual_env: None,
            venv_roots: vec![dir.path().to_path_buf()],
            uid: current_uid(),
        };
        assert_eq!(places.choose().path, python, "the user's own is run");
        // Another user's file, folder or venv, each alone (as root; otherwise all three).
        for theirs in [python.clone(), venv.join("bin"), venv.clone()] {
            let uid = owned_by_someone_else(&[&theirs]);
            let chosen = Places {
                uid,
                ..places.clone()
            }
            .choose();
            assert_eq!(chosen.path, PathBuf::from("python3"), "{theirs:?}");
            let origin = chosen.origin();
            assert!(
                origin.starts_with("PATH; skipped ") && origin.contains("not to you"),
                "{origin}"
            );
            if current_uid() == 0 {
                assert!(origin.contains(&theirs.display().to_string()), "{origin}");
                std::os::unix::fs::lchown(&theirs, Some(0), None).unwrap();
            }
        }
    }

    #[test]
    fn a_venv_torch_python_linking_to_the_system_python_is_run() {
        // What `python3 -m venv` makes: bin/python -> python3 -> /usr/bin/python3.x,
        // a root-owned file the link of the user's leads to.
        let Some(system) = ["/usr/bin/python3", "/bin/sh"]
            .into_iter()
            .map(Path::new)
            .find(|p| {
                std::fs::metadata(p).is_ok_and(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
            })
        else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join(".venv-torch/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(system, bin.join("python3")).unwrap();
        std::os::unix::fs::symlink("python3", bin.join("python")).unwrap();
        let places = Places {
            given: None,
            variable: None,
            virtual_env: None,
            venv_roots: vec![dir.path().to_path_buf()],
            uid: current_uid(),
        };
        let chosen = places.choose();
        assert_eq!(chosen.path, bin.join("python"), "{:?}", chosen.skipped);
        // A link planted by someone else is not, though its target is root's.
        let uid = owned_by_someone_else(&[&bin.join("python")]);
        let chosen = Places { uid, ..places }.choose();
        assert_eq!(chosen.chosen_by, "PATH");
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
