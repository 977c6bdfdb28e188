//! Profiles (`cnnbench-profile` v1, written by `cnnbench profile --json`) among the
//! report's paths. They are not results: the result loader skips them with
//! [`crate::load::NotAResult::Profile`], this loader takes them, and
//! [`crate::charts::profile`] draws them.

use cnnbench_graph::read_bounded_to_string;
use cnnbench_results::profile::{ProfileDoc, PROFILE_FORMAT, PROFILE_VERSION};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The largest profile file read (a profile of a thousand-node network is ~1 MB).
const MAX_PROFILE_BYTES: u64 = 64 << 20;

/// A profile and the file it came from.
#[derive(Clone, Debug)]
pub struct LoadedProfile {
    pub path: PathBuf,
    pub doc: ProfileDoc,
}

/// Every profile among `paths` (files named directly, `*.json` below folders); other
/// files are left to the result loader. A file that says it is a profile but does not
/// parse is reported in the warnings.
pub fn load_profiles(paths: &[PathBuf]) -> (Vec<LoadedProfile>, Vec<String>) {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            // Folders that cannot be read are the result loader's to report, as above.
            if let Ok(found) = cnnbench_results::folders::json_files(p) {
                files.extend(found.files);
            }
        } else {
            files.push(p.clone());
        }
    }
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut read = HashSet::new();
    for f in files {
        if !read.insert(std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone())) {
            continue;
        }
        match load_profile(&f) {
            Ok(Some(doc)) => out.push(LoadedProfile { path: f, doc }),
            Ok(None) => {}
            Err(why) => warnings.push(format!("skipping {}: {why}", f.display())),
        }
    }
    (out, warnings)
}

/// `Ok(None)` for a file that is not a profile (a result, anything else).
pub fn load_profile(path: &Path) -> Result<Option<ProfileDoc>, String> {
    // A file that cannot be read is the result loader's to report (it reads every file
    // this one does): said here as well, its warning came twice.
    let Ok(text) = read_bounded_to_string(path, MAX_PROFILE_BYTES, "profile files") else {
        return Ok(None);
    };
    // Cheap test before parsing a large result file a second time.
    if !text.contains(PROFILE_FORMAT) {
        return Ok(None);
    }
    let v: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => return Ok(None),
    };
    if v.get("format").and_then(|f| f.as_str()) != Some(PROFILE_FORMAT) {
        return Ok(None);
    }
    let version = v.get("version").and_then(|v| v.as_u64()).unwrap_or(0);
    if version != PROFILE_VERSION as u64 {
        return Err(format!(
            "profile schema version {version}; this cnnbench reads version {PROFILE_VERSION}"
        ));
    }
    serde_json::from_value(v)
        .map(Some)
        .map_err(|e| format!("invalid cnnbench profile ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_profiles_are_taken_and_newer_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("r.json");
        std::fs::write(&result, r#"{"format":"cnnbench-result","version":1}"#).unwrap();
        assert!(load_profile(&result).unwrap().is_none());
        let newer = dir.path().join("p.json");
        std::fs::write(&newer, r#"{"format":"cnnbench-profile","version":9}"#).unwrap();
        assert!(load_profile(&newer).unwrap_err().contains("version 9"));
        let (found, warnings) = load_profiles(&[dir.path().to_path_buf()]);
        assert!(found.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
