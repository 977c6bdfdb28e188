//! Where a C library of a PyPI wheel is (ONNX Runtime's `onnxruntime/capi/`, OpenVINO's
//! `openvino/libs/`). cnnbench downloads none of them: one `pip install` serves both the
//! stack's Python API and cnnbench, and the library is found at run time the way the
//! libtorch engines find PyTorch — a variable naming the file, the active venv, a
//! `.venv-torch` in the working folder, the executable's folder or the repository either
//! is in, then `python3`'s site-packages. A `.venv-torch` found by this search is used only
//! when the user running cnnbench (or root) owns it: loading a library runs its code.
//!
//! Wheels ship their libraries with a version suffix (`libonnxruntime.so.1.32.0`,
//! `libopenvino_c.so.2641`) and no unversioned link, so the dynamic loader's default
//! search never finds them: the full path is needed.

use std::os::unix::fs::MetadataExt;
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
                venvs_seen = true;
                if let Some(lib) = self.in_venv(&venv) {
                    match untrusted(&venv, &lib, places.uid) {
                        None => return Ok(lib),
                        Some(why) => {
                            looked.push(format!("{} (skipped: {why})", lib.display()));
                            continue;
                        }
                    }
                }
                looked.push(format!("{} (no {} in it)", venv.display(), self.package));
            }
        }
        if !venvs_seen {
            looked.push(
                ".venv-torch (none in the working folder, the executable's, or their repositories)"
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
#[derive(Clone, Debug)]
pub struct SearchPlaces {
    /// The library's variable, when set and not empty: the only place looked at.
    pub named: Option<PathBuf>,
    /// `VIRTUAL_ENV`: the active virtual environment.
    pub virtual_env: Option<PathBuf>,
    /// Folders whose `.venv-torch` (the venv the libtorch engines use) is looked in: the
    /// working folder, the executable's folder, and the repositories they are in.
    pub venv_roots: Vec<PathBuf>,
    /// The Python asked where the package is (`None`: do not ask).
    pub python: Option<PathBuf>,
    /// The user a `.venv-torch`'s library must belong to (or root): this process's.
    pub uid: u32,
}

impl Default for SearchPlaces {
    fn default() -> Self {
        Self {
            named: None,
            virtual_env: None,
            venv_roots: Vec::new(),
            python: None,
            uid: current_uid(),
        }
    }
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
            uid: current_uid(),
        }
    }
}

/// The folders whose `.venv-torch` this process looks in, nearest first: the working
/// folder, the repository it is in, the executable's folder and the repository that is
/// in (the wheel-loaded engines and the pytorch engines' interpreter search share them).
/// Never any other folder above them: a `.venv-torch` in a shared folder such as `/tmp`
/// must not run for everyone working below it.
pub fn venv_roots_of_this_process() -> Vec<PathBuf> {
    venv_roots_of(
        std::env::current_dir().ok().as_deref(),
        std::env::current_exe()
            .ok()
            .as_deref()
            .and_then(Path::parent),
    )
}

/// [`venv_roots_of_this_process`] for a given working folder and executable folder.
pub fn venv_roots_of(working: Option<&Path>, executable_dir: Option<&Path>) -> Vec<PathBuf> {
    let mut roots: Vec<PathBuf> = Vec::new();
    for start in [working, executable_dir].into_iter().flatten() {
        for dir in [Some(start), repository_of(start)].into_iter().flatten() {
            if !roots.iter().any(|d| d == dir) {
                roots.push(dir.to_path_buf());
            }
        }
    }
    roots
}

/// The top of the git work tree `dir` is in (the nearest folder holding `.git`), where
/// the set-up (`python3 -m venv .venv-torch`) puts the venv.
fn repository_of(dir: &Path) -> Option<&Path> {
    dir.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
}

/// The effective user id of this process: whose files a search may run or load.
pub fn current_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Why `file`, found below the folder `venv` by a search (not named by the user), must
/// not be run or loaded; `None` when it may. Every step from `venv` down to `file` (links
/// themselves, not only where they lead) and the file a link leads to must belong to
/// `uid` or root and not be writable by everyone: otherwise another user of the machine
/// chose what runs.
pub fn untrusted(venv: &Path, file: &Path, uid: u32) -> Option<String> {
    let mut steps = vec![venv.to_path_buf()];
    match file.strip_prefix(venv) {
        Ok(below) => {
            let mut path = venv.to_path_buf();
            for part in below.components() {
                path.push(part);
                steps.push(path.clone());
            }
        }
        Err(_) => steps.push(file.to_path_buf()),
    }
    if let Ok(target) = std::fs::canonicalize(file) {
        if let Some(folder) = target.parent() {
            steps.push(folder.to_path_buf());
        }
        steps.push(target);
    }
    for step in &steps {
        let meta = match std::fs::symlink_metadata(step) {
            Ok(meta) => meta,
            Err(e) => return Some(format!("{} cannot be examined ({e})", step.display())),
        };
        let owner = meta.uid();
        if owner != uid && owner != 0 {
            return Some(format!(
                "{} belongs to user {owner}, not to you (user {uid}) or root; \
                 run it only by naming it (--python or the variable)",
                step.display()
            ));
        }
        let sticky_folder = meta.is_dir() && meta.mode() & 0o1000 != 0;
        if !meta.file_type().is_symlink() && meta.mode() & 0o002 != 0 && !sticky_folder {
            return Some(format!(
                "{} is writable by every user; remove that (chmod o-w)",
                step.display()
            ));
        }
    }
    None
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
        SearchPlaces::default()
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
    fn dot_venv_torch_is_found_at_the_top_of_the_repository() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let folder = fake_venv(
            &dir.path().join(".venv-torch"),
            "python3.12",
            &["libonnxruntime.so.1.32.0"],
        );
        let nested = dir.path().join("crates/cli");
        std::fs::create_dir_all(&nested).unwrap();
        let places = SearchPlaces {
            venv_roots: venv_roots_of(Some(&nested), None),
            ..nowhere()
        };
        assert_eq!(
            ORT.find(&places).unwrap(),
            folder.join("libonnxruntime.so.1.32.0")
        );
    }

    #[test]
    fn no_folder_above_the_working_folder_is_searched_but_its_repository() {
        let dir = tempfile::tempdir().unwrap();
        let shared = dir.path().join("shared");
        let work = shared.join("x/results/sub");
        let exe = dir.path().join("opt/cnnbench/bin");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::create_dir_all(&exe).unwrap();
        let roots = venv_roots_of(Some(&work), Some(&exe));
        assert_eq!(roots, vec![work.clone(), exe.clone()], "no repository yet");
        std::fs::create_dir(shared.join("x/.git")).unwrap();
        std::fs::write(dir.path().join("opt/.git"), b"gitdir: elsewhere").unwrap();
        let roots = venv_roots_of(Some(&work), Some(&exe));
        assert_eq!(
            roots,
            vec![work, shared.join("x"), exe, dir.path().join("opt")],
            "the working folder, its repository, the executable's, its repository"
        );
    }

    /// Makes `paths` belong to another user than the one the test pretends to be, and
    /// returns the user to pretend to be: as root, gives them to user 4242 (root's own
    /// files are trusted); otherwise pretends to be the next user.
    pub(crate) fn owned_by_someone_else(paths: &[&Path]) -> u32 {
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
    fn a_venv_torch_someone_else_owns_or_everyone_may_write_is_skipped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let venv = dir.path().join(".venv-torch");
        let folder = fake_venv(&venv, "python3.12", &["libonnxruntime.so.1.32.0"]);
        let library = folder.join("libonnxruntime.so.1.32.0");
        let mine = SearchPlaces {
            venv_roots: vec![dir.path().to_path_buf()],
            ..nowhere()
        };
        assert_eq!(ORT.find(&mine).unwrap(), library, "the user's own is used");

        // Everyone may write a folder on the way: anyone could swap the library.
        let capi_mode = std::fs::metadata(&folder).unwrap().permissions();
        let mut open = capi_mode.clone();
        std::os::unix::fs::PermissionsExt::set_mode(&mut open, 0o777);
        std::fs::set_permissions(&folder, open).unwrap();
        let why = ORT.find(&mine).unwrap_err();
        assert!(
            why.contains("writable by every user") && why.contains("capi"),
            "{why}"
        );
        std::fs::set_permissions(&folder, capi_mode).unwrap();

        // Only the library itself, or only the venv folder, is another user's.
        for theirs in [library.as_path(), venv.as_path()] {
            let uid = owned_by_someone_else(&[theirs]);
            let places = SearchPlaces {
                uid,
                ..mine.clone()
            };
            let why = ORT.find(&places).unwrap_err();
            assert!(
                why.contains("skipped") && why.contains("not to you"),
                "{why}"
            );
            if current_uid() == 0 {
                assert!(why.contains(&theirs.display().to_string()), "{why}");
                std::os::unix::fs::lchown(theirs, Some(0), None).unwrap();
            }
        }
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
