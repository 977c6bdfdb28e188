//! Finding result files under a folder: the one walker `report`, `compare`, the profile
//! charts and `plan`'s finished-cell check share, so they agree on what they skip.
//!
//! A folder tree comes from users and from other tools: it may hold links that loop, folders
//! no one may read and nesting thousands of levels deep. The walk follows links but visits
//! each real folder once (by device and inode, without resolving paths), goes at most
//! [`MAX_FOLDER_DEPTH`] levels down, and reports what it could not read instead of stopping.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many levels below a folder named on the command line the walk goes. cnnbench writes
/// results three levels down (`<folder>/<device>_<engine>/…`) and a study's tree a few
/// more; 64 is far past any of that, and keeps a hostile tree's walk short (every level
/// makes every path below it longer).
pub const MAX_FOLDER_DEPTH: usize = 64;

/// The largest result file read: ours are kilobytes (every raw sample of a long run is
/// still well under a megabyte), so a larger `*.json` is something else.
pub const MAX_RESULT_FILE_BYTES: u64 = 256 << 20;

/// What a walk found.
#[derive(Debug, Default)]
pub struct JsonFiles {
    /// Every `*.json` file (any case), sorted within each folder, folders in name order.
    pub files: Vec<PathBuf>,
    /// Folders (and entries) below the one named that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, std::io::Error)>,
    /// Folders skipped for being more than [`MAX_FOLDER_DEPTH`] levels down.
    pub too_deep: Vec<PathBuf>,
}

impl JsonFiles {
    /// One line per folder (or entry) that was skipped, for the warnings a command prints.
    pub fn skipped_folders(&self) -> Vec<String> {
        let unreadable = self.unreadable.iter().map(|(path, e)| {
            format!(
                "skipping {}: cannot read it ({e})",
                crate::printable(&path.display().to_string())
            )
        });
        let deep = self.too_deep.iter().map(|path| {
            format!(
                "skipping folder {}: more than {MAX_FOLDER_DEPTH} levels down (name the folder itself to read it)",
                crate::printable(&path.display().to_string())
            )
        });
        unreadable.chain(deep).collect()
    }
}

/// Every `*.json` file under `root`, recursively; names starting with `.` (hidden files and
/// folders) are skipped. `root` itself must be a readable folder: its error is returned.
pub fn json_files(root: &Path) -> std::io::Result<JsonFiles> {
    let mut found = JsonFiles::default();
    let mut seen = HashSet::new();
    let entries = std::fs::read_dir(root)?;
    if let Ok(meta) = std::fs::metadata(root) {
        seen.insert((meta.dev(), meta.ino()));
    }
    walk(entries, 0, &mut seen, &mut found);
    Ok(found)
}

fn walk(
    entries: std::fs::ReadDir,
    depth: usize,
    seen: &mut HashSet<(u64, u64)>,
    found: &mut JsonFiles,
) {
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden {
            continue;
        }
        // Following links, as `is_dir` does; a dangling link is neither and is skipped.
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                found.unreadable.push((path, e));
                continue;
            }
        };
        if meta.is_dir() {
            if !seen.insert((meta.dev(), meta.ino())) {
                continue; // a link back up, or a second way to the same folder
            }
            if depth + 1 > MAX_FOLDER_DEPTH {
                found.too_deep.push(path);
                continue;
            }
            match std::fs::read_dir(&path) {
                Ok(entries) => walk(entries, depth + 1, seen, found),
                Err(e) => found.unreadable.push((path, e)),
            }
        } else if path
            .extension()
            .and_then(|x| x.to_str())
            .is_some_and(|x| x.eq_ignore_ascii_case("json"))
        {
            found.files.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_json_in_order_skips_hidden_and_visits_a_looped_folder_once() {
        let s = tempfile::tempdir().unwrap();
        for f in [
            "b/2.json",
            "a/1.JSON",
            "a/notes.txt",
            ".hidden/3.json",
            "b/.4.json",
        ] {
            let p = s.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "{}").unwrap();
        }
        std::os::unix::fs::symlink("..", s.path().join("a/up")).unwrap();
        std::os::unix::fs::symlink("missing", s.path().join("a/dangling.json")).unwrap();
        let found = json_files(s.path()).unwrap();
        assert_eq!(
            found.files,
            [s.path().join("a/1.JSON"), s.path().join("b/2.json")]
        );
        assert!(found.skipped_folders().is_empty());
    }

    #[test]
    fn a_deep_tree_stops_at_the_limit_and_says_where() {
        let s = tempfile::tempdir().unwrap();
        let mut dir = s.path().to_path_buf();
        for _ in 0..MAX_FOLDER_DEPTH + 5 {
            dir.push("d");
        }
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("r.json"), "{}").unwrap();
        let mut at_limit = s.path().to_path_buf();
        for _ in 0..MAX_FOLDER_DEPTH {
            at_limit.push("d");
        }
        std::fs::write(at_limit.join("r.json"), "{}").unwrap();
        let found = json_files(s.path()).unwrap();
        assert_eq!(found.files, [at_limit.join("r.json")]);
        assert_eq!(found.too_deep, [at_limit.join("d")]);
        assert!(found.skipped_folders()[0].contains("more than 64 levels down"));
        // Named itself, a deep folder is read.
        assert_eq!(json_files(&dir).unwrap().files, [dir.join("r.json")]);
    }

    #[test]
    fn a_folder_that_cannot_be_read_is_reported_and_the_rest_still_found() {
        // Permissions do not stop root, so the unreadable folder is one whose path is
        // longer than the system allows (PATH_MAX, 4096 bytes): made one level at a time.
        let s = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(s.path().join("ok")).unwrap();
        std::fs::write(s.path().join("ok/r.json"), "{}").unwrap();
        let name = "n".repeat(250);
        let made = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(
                "for i in $(seq 20); do mkdir {name} && cd -P {name} || exit 1; done"
            ))
            .current_dir(s.path())
            .status()
            .unwrap();
        assert!(made.success());
        let found = json_files(s.path()).unwrap();
        assert_eq!(found.files, [s.path().join("ok/r.json")]);
        assert_eq!(found.unreadable.len(), 1, "{:?}", found.unreadable);
        let warning = &found.skipped_folders()[0];
        assert!(warning.contains("cannot read it"), "{warning}");
        // tempfile's own removal cannot reach that deep either.
        let _ = std::process::Command::new("rm")
            .arg("-rf")
            .arg(s.path())
            .status();
    }

    #[test]
    fn the_folder_named_must_exist() {
        let s = tempfile::tempdir().unwrap();
        assert_eq!(
            json_files(&s.path().join("nope")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
    }
}
