//! Where ONNX Runtime's shared library is. cnnbench does not download it: it uses the
//! library of the PyPI wheel `onnxruntime` (or any build a user names), found at run time
//! the way the libtorch engines find PyTorch — in a virtual environment or through
//! `python3` — so one `pip install` serves both ONNX Runtime's Python API and cnnbench.
//!
//! The wheel ships `onnxruntime/capi/libonnxruntime.so.<version>` without an unversioned
//! link, so the dynamic loader's default search never finds it: the full path is needed.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that names the library file directly (the `ort` crate's own convention).
pub const DYLIB_VAR: &str = "ORT_DYLIB_PATH";

/// The onnxruntime release cnnbench is tested with (and `.ci/run` installs).
pub const PINNED_VERSION: &str = "1.32.0";

/// What fixes a missing library, for error messages and `cnnbench engines`.
pub fn install_hint() -> String {
    format!(
        "install the onnxruntime wheel: `python3 -m venv .venv-torch && .venv-torch/bin/pip install onnxruntime=={PINNED_VERSION}` \
         (or `pip install onnxruntime=={PINNED_VERSION}` into the active venv), \
         or set {DYLIB_VAR} to the full path of libonnxruntime.so (1.31 or newer)"
    )
}

/// The places looked in, in order; gathered from the process so that tests can build
/// their own.
#[derive(Clone, Debug, Default)]
pub struct SearchPlaces {
    /// `ORT_DYLIB_PATH`, when set and not empty: the only place looked at.
    pub dylib_path: Option<PathBuf>,
    /// `VIRTUAL_ENV`: the active virtual environment.
    pub virtual_env: Option<PathBuf>,
    /// Folders whose `.venv-torch` (the venv the libtorch engines use) is looked in: the
    /// working folder, the executable's folder, and their parents.
    pub venv_roots: Vec<PathBuf>,
    /// The Python asked where its `onnxruntime` package is (`None`: do not ask).
    pub python: Option<PathBuf>,
}

impl SearchPlaces {
    /// The places of this process: its environment, working folder and executable.
    pub fn of_this_process() -> Self {
        let non_empty = |var: &str| {
            std::env::var_os(var)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let mut venv_roots = Vec::new();
        let starts = [
            std::env::current_dir().ok(),
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf)),
        ];
        for start in starts.into_iter().flatten() {
            for dir in start.ancestors() {
                if !venv_roots.iter().any(|d: &PathBuf| d == dir) {
                    venv_roots.push(dir.to_path_buf());
                }
            }
        }
        Self {
            dylib_path: non_empty(DYLIB_VAR),
            virtual_env: non_empty("VIRTUAL_ENV"),
            venv_roots,
            python: Some(PathBuf::from("python3")),
        }
    }
}

/// The library file to load, or why there is none (what was looked at, and the fix).
pub fn find(places: &SearchPlaces) -> Result<PathBuf, String> {
    if let Some(path) = &places.dylib_path {
        let path = absolute(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "{DYLIB_VAR} is {}, which is not a file: point it at libonnxruntime.so, or unset it to look in venvs; {}",
                path.display(),
                install_hint()
            ))
        };
    }
    let mut looked = vec![format!("{DYLIB_VAR} (unset)")];
    if let Some(venv) = &places.virtual_env {
        if let Some(lib) = in_venv(venv) {
            return Ok(lib);
        }
        looked.push(format!("VIRTUAL_ENV {}", venv.display()));
    }
    let mut venvs_seen = false;
    for root in &places.venv_roots {
        let venv = root.join(".venv-torch");
        if venv.is_dir() {
            if let Some(lib) = in_venv(&venv) {
                return Ok(lib);
            }
            venvs_seen = true;
            looked.push(format!("{} (no onnxruntime in it)", venv.display()));
        }
    }
    if !venvs_seen {
        looked.push(
            ".venv-torch (none in the working folder, the executable's, or their parents)".into(),
        );
    }
    if let Some(python) = &places.python {
        match python_package_dir(python) {
            Some(package) => {
                if let Some(lib) = in_package(&package) {
                    return Ok(lib);
                }
                looked.push(format!("{} (no library in it)", package.display()));
            }
            None => looked.push(format!("{}'s site-packages", python.display())),
        }
    }
    Err(format!(
        "ONNX Runtime's library was not found (looked at: {}); {}",
        looked.join(", "),
        install_hint()
    ))
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The wheel's library in a venv: `lib/python3.*/site-packages/onnxruntime/capi/`.
fn in_venv(venv: &Path) -> Option<PathBuf> {
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
        .find_map(|p| in_package(&p.join("site-packages").join("onnxruntime")))
        .map(|p| absolute(&p))
}

/// The library in an installed `onnxruntime` package folder: the newest
/// `capi/libonnxruntime.so.<version>` (or `.dylib`), not the providers' helpers.
fn in_package(package: &Path) -> Option<PathBuf> {
    let mut libraries: Vec<PathBuf> = std::fs::read_dir(package.join("capi"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with("libonnxruntime.") && (n.contains(".so") || n.ends_with(".dylib"))
            })
        })
        .collect();
    libraries.sort_by_key(|p| version_key(p));
    libraries.pop()
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

/// Where `python` has the `onnxruntime` package, without importing it (which would load
/// the library into Python for nothing).
fn python_package_dir(python: &Path) -> Option<PathBuf> {
    let output = Command::new(python)
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('onnxruntime'); print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let dir = String::from_utf8(output.stdout).ok()?.trim().to_string();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake venv holding a wheel's files (empty files: only names matter here).
    fn fake_venv(root: &Path, python: &str, files: &[&str]) -> PathBuf {
        let capi = root.join(format!("lib/{python}/site-packages/onnxruntime/capi"));
        std::fs::create_dir_all(&capi).unwrap();
        for f in files {
            std::fs::write(capi.join(f), b"").unwrap();
        }
        capi
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
            dylib_path: Some(lib.clone()),
            virtual_env: Some(venv.clone()),
            ..nowhere()
        };
        assert_eq!(find(&places).unwrap(), lib);
        let places = SearchPlaces {
            dylib_path: Some(dir.path().join("missing.so")),
            virtual_env: Some(venv),
            ..nowhere()
        };
        let why = find(&places).unwrap_err();
        assert!(
            why.contains("ORT_DYLIB_PATH is") && why.contains("missing.so"),
            "{why}"
        );
    }

    #[test]
    fn a_venv_gives_its_newest_library_and_not_the_providers_helper() {
        let dir = tempfile::tempdir().unwrap();
        let capi = fake_venv(
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
            find(&places).unwrap(),
            capi.join("libonnxruntime.so.1.32.0")
        );
    }

    #[test]
    fn dot_venv_torch_is_found_in_a_parent_folder() {
        let dir = tempfile::tempdir().unwrap();
        let capi = fake_venv(
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
            find(&places).unwrap(),
            capi.join("libonnxruntime.so.1.32.0")
        );
    }

    #[test]
    fn nothing_found_says_where_it_looked_and_how_to_install() {
        let dir = tempfile::tempdir().unwrap();
        // A venv without onnxruntime, and a Python that does not exist.
        std::fs::create_dir_all(dir.path().join(".venv-torch/lib/python3.11/site-packages"))
            .unwrap();
        let places = SearchPlaces {
            virtual_env: Some(dir.path().join("other-venv")),
            venv_roots: vec![dir.path().to_path_buf()],
            python: Some(dir.path().join("no-such-python3")),
            ..SearchPlaces::default()
        };
        let why = find(&places).unwrap_err();
        assert!(
            why.contains("ONNX Runtime's library was not found"),
            "{why}"
        );
        assert!(
            why.contains(".venv-torch") && why.contains("other-venv"),
            "{why}"
        );
        assert!(why.contains("pip install onnxruntime==1.32.0"), "{why}");
        assert!(why.contains("ORT_DYLIB_PATH"), "{why}");
    }
}
