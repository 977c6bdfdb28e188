//! Helpers shared by the CLI's end-to-end tests.
#![allow(dead_code)] // each test binary uses its own subset

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The `cnnbench` binary built for these tests.
pub fn cnnbench() -> Command {
    Command::cargo_bin("cnnbench").expect("the cnnbench binary is built")
}

/// Every `*.json` file below `dir`, sorted.
pub fn result_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                files.extend(result_files(&path));
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}
