//! Where a C library of a PyPI wheel is (ONNX Runtime's `onnxruntime/capi/`, OpenVINO's
//! `openvino/libs/`). cnnbench downloads none of them: one `pip install` serves both the
//! stack's Python API and cnnbench, and the library is found at run time the way the
//! libtorch engines find PyTorch — a variable naming the file, the active venv, a
//! `.venv-torch` beside the working folder or the executable, then `python3`'s
//! site-packages.
//!
//! Wheels ship their libraries with a version suffix (`libonnxruntime.so.1.32.0`,
//! `libopenvino_c.so.2641`) and no unversioned link, so the dynamic loader's default
//! search never finds them: the full path is needed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One wheel's library: what to look for, and what to tell a user who has none.
#[derive(Clone, Copy, Debug)]
pub struct WheelLibrary {
    /// The stack's name in messages ("ONNX Runtime").
    pub stack: &'static str,
    /// The variable that names the library file directly; when set, the only place
    /// looked at.
    pub variable: &'static str,
    /// The Python package (`onnxruntime`), a folder in site-packages.
    pub package: &'static str,
    /// The package's folder holding the library (`capi`).
    pub folder: &'static str,
    /// The start of the library's file name (`libonnxruntime.`); helpers that share a
    /// prefix must be told apart by it (`libonnxruntime_providers_shared.so` is not
    /// `libonnxruntime.`).
    pub file_prefix: &'static str,
    /// The `pip install` line cnnbench is tested with (`onnxruntime==1.32.0`).
    pub pip_requirement: &'static str,
    /// Which builds of the library a user may name instead ("1.31 or newer").
    pub other_builds: &'static str,
}

impl WheelLibrary {
    /// What fixes a missing library, for error messages and `cnnbench engines`.
    pub fn install_hint(&self) -> String {
        let requirement = self.pip_requirement;
        format!(
            "install the {} wheel: `python3 -m venv .venv-torch && .venv-torch/bin/pip install {requirement}` \
             (or `pip install {requirement}` into the active venv), \
             or set {} to the full path of {}so ({})",
            self.package,
            self.variable,
            self.file_prefix,
            self.other_builds
        )
    }

    /// The library file to load, or why there is none (what was looked at, and the fix).
    pub fn find(&self, places: &SearchPlaces) -> Result<PathBuf, String> {
        if let Some(path) = &places.named {
            let path = absolute(path);
            return if path.is_file() {
                Ok(path)
            } else {
                Err(format!(
                    "{} is {}, which is not a file: point it at {}so, or unset it to look in venvs; {}",
                    self.variable,
                    path.display(),
                    self.file_prefix,
                    self.install_hint()
                ))
            };
        }
        let mut looked = vec![format!("{} (unset)", self.variable)];
        if let Some(venv) = &places.virtual_env {
            if let Some(lib) = self.in_venv(venv) {
                return Ok(lib);
            }
            looked.push(format!("VIRTUAL_ENV {}", venv.display()));
        }
        let mut venvs_seen = false;
        for root in &places.venv_roots {
            let venv = root.join(".venv-torch");
            if venv.is_dir() {
                if let Some(lib) = self.in_venv(&venv) {
                    return Ok(lib);
                }
                venvs_seen = true;
                looked.push(format!("{} (no {} in it)", venv.display(), self.package));
            }
        }
        if !venvs_seen {
            looked.push(
                ".venv-torch (none in the working folder, the executable's, or their parents)"
                    .into(),
            );
        }
        if let Some(python) = &places.python {
            match self.python_package_dir(python) {
                Some(package) => {
                    if let Some(lib) = self.in_package(&package) {
                        return Ok(lib);
                    }
                    looked.push(format!("{} (no library in it)", package.display()));
                }
                None => looked.push(format!("{}'s site-packages", python.display())),
            }
        }
        Err(format!(
            "{}'s library was not found (looked at: {}); {}",
            self.stack,
            looked.join(", "),
            self.install_hint()
        ))
    }

    /// The wheel's library in a venv: `lib/python3.*/site-packages/<package>/<folder>/`.
    fn in_venv(&self, venv: &Path) -> Option<PathBuf> {
        let mut pythons: Vec<PathBuf> = std::fs::read_dir(venv.join("lib"))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
            })
            .collect();
        pythons.sort();
        pythons
            .iter()
            .rev()
            .find_map(|p| self.in_package(&p.join("site-packages").join(self.package)))
            .map(|p| absolute(&p))
    }

    /// The newest library in an installed package folder (`.so.<version>` or `.dylib`).
    fn in_package(&self, package: &Path) -> Option<PathBuf> {
        let mut libraries: Vec<PathBuf> = std::fs::read_dir(package.join(self.folder))
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name().is_some_and(|n| {
                    let n = n.to_string_lossy();
                    n.starts_with(self.file_prefix) && (n.contains(".so") || n.ends_with(".dylib"))
                })
            })
            .collect();
        libraries.sort_by_key(|p| version_key(p));
        libraries.pop()
    }

    /// Where `python` has the package, without importing it (which would load the
    /// library into Python for nothing).
    fn python_package_dir(&self, python: &Path) -> Option<PathBuf> {
        let output = Command::new(python)
            .args([
                "-c",
                "import sys, importlib.util as u; s = u.find_spec(sys.argv[1]); print(s.submodule_search_locations[0] if s else '')",
                self.package,
            ])
            .output()
            .ok()
            .filter(|o| o.status.success())?;
        let dir = String::from_utf8(output.stdout).ok()?.trim().to_string();
        (!dir.is_empty()).then(|| PathBuf::from(dir))
    }
}

/// The places looked in, in order; gathered from the process so that tests can build
/// their own.
#[derive(Clone, Debug, Default)]
pub struct SearchPlaces {
    /// The library's variable, when set and not empty: the only place looked at.
    pub named: Option<PathBuf>,
    /// `VIRTUAL_ENV`: the active virtual environment.
    pub virtual_env: Option<PathBuf>,
    /// Folders whose `.venv-torch` (the venv the libtorch engines use) is looked in: the
    /// working folder, the executable's folder, and their parents.
    pub venv_roots: Vec<PathBuf>,
    /// The Python asked where the package is (`None`: do not ask).
    pub python: Option<PathBuf>,
}

impl SearchPlaces {
    /// The places of this process for `library`: its environment, working folder and
    /// executable.
    pub fn of_this_process(library: &WheelLibrary) -> Self {
        let non_empty = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            named: non_empty(library.variable),
            virtual_env: non_empty("VIRTUAL_ENV"),
            venv_roots: venv_roots_of_this_process(),
            python: Some(PathBuf::from("python3")),
        }
    }
}

/// The folders whose `.venv-torch` this process looks in, nearest first: the working
/// folder, the executable's folder, and every folder above them (the wheel-loaded
/// engines and the pytorch engines' interpreter search share them).
pub fn venv_roots_of_this_process() -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    let starts = [
        std::env::current_dir().ok(),
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(Path::to_path_buf)),
    ];
    for start in starts.into_iter().flatten() {
        for dir in start.ancestors() {
            if !roots.iter().any(|d| d == dir) {
                roots.push(dir.to_path_buf());
            }
        }
    }
    roots
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `libonnxruntime.so.1.32.0` → [1, 32, 0], so that 1.32 sorts after 1.4.
fn version_key(path: &Path) -> Vec<u64> {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .split('.')
        .filter_map(|part| part.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORT: WheelLibrary = WheelLibrary {
        stack: "ONNX Runtime",
        variable: "ORT_DYLIB_PATH",
        package: "onnxruntime",
        folder: "capi",
        file_prefix: "libonnxruntime.",
        pip_requirement: "onnxruntime==1.32.0",
        other_builds: "1.31 or newer",
    };

    /// A fake venv holding a wheel's files (empty files: only names matter here).
    fn fake_venv(root: &Path, python: &str, files: &[&str]) -> PathBuf {
        let folder = root.join(format!("lib/{python}/site-packages/onnxruntime/capi"));
        std::fs::create_dir_all(&folder).unwrap();
        for f in files {
            std::fs::write(folder.join(f), b"").unwrap();
        }
        folder
    }

    fn nowhere() -> SearchPlaces {
        SearchPlaces {
            python: None,
            ..SearchPlaces::default()
        }
    }

    #[test]
    fn the_variable_wins_and_a_wrong_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libonnxruntime.so.1.32.0");
        std::fs::write(&lib, b"").unwrap();
        let venv = dir.path().join("venv");
        fake_venv(&venv, "python3.11", &["libonnxruntime.so.1.31.0"]);
        let places = SearchPlaces {
            named: Some(lib.clone()),
            virtual_env: Some(venv.clone()),
            ..nowhere()
        };
        assert_eq!(ORT.find(&places).unwrap(), lib);
        let places = SearchPlaces {
            named: Some(dir.path().join("missing.so")),
            virtual_env: Some(venv),
            ..nowhere()
        };
        let why = ORT.find(&places).unwrap_err();
        assert!(
            why.contains("ORT_DYLIB_PATH is") && why.contains("missing.so"),
            "{why}"
        );
    }

    #[test]
    fn a_venv_gives_its_newest_library_and_not_a_helper_sharing_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let folder = fake_venv(
            dir.path(),
            "python3.11",
            &[
                "libonnxruntime_providers_shared.so",
                "libonnxruntime.so.1.4.0",
                "libonnxruntime.so.1.32.0",
                "onnxruntime_pybind11_state.so",
            ],
        );
        let places = SearchPlaces {
            virtual_env: Some(dir.path().to_path_buf()),
            ..nowhere()
        };
        assert_eq!(
            ORT.find(&places).unwrap(),
            folder.join("libonnxruntime.so.1.32.0")
        );
    }

    #[test]
    fn dot_venv_torch_is_found_in_a_parent_folder() {
        let dir = tempfile::tempdir().unwrap();
        let folder = fake_venv(
            &dir.path().join(".venv-torch"),
            "python3.12",
            &["libonnxruntime.so.1.32.0"],
        );
        let nested = dir.path().join("crates/cli");
        std::fs::create_dir_all(&nested).unwrap();
        let places = SearchPlaces {
            venv_roots: nested.ancestors().map(Path::to_path_buf).collect(),
            ..nowhere()
        };
        assert_eq!(
            ORT.find(&places).unwrap(),
            folder.join("libonnxruntime.so.1.32.0")
        );
    }

    #[test]
    fn nothing_found_says_where_it_looked_and_how_to_install() {
        let dir = tempfile::tempdir().unwrap();
        // A venv without the package, and a Python that does not exist.
        std::fs::create_dir_all(dir.path().join(".venv-torch/lib/python3.11/site-packages"))
            .unwrap();
        let places = SearchPlaces {
            virtual_env: Some(dir.path().join("other-venv")),
            venv_roots: vec![dir.path().to_path_buf()],
            python: Some(dir.path().join("no-such-python3")),
            ..SearchPlaces::default()
        };
        let why = ORT.find(&places).unwrap_err();
        assert!(
            why.contains("ONNX Runtime's library was not found"),
            "{why}"
        );
        assert!(
            why.contains(".venv-torch (no onnxruntime in it)") && why.contains("other-venv"),
            "{why}"
        );
        assert!(why.contains("pip install onnxruntime==1.32.0"), "{why}");
        assert!(why.contains("ORT_DYLIB_PATH"), "{why}");
    }
}
