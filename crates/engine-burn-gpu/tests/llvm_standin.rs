//! burn-cuda's build without the LLVM stand-in stops with one line that says what to run,
//! and downloads nothing: cnnbench's copy of tracel-llvm-bundler (the crate whose build
//! script would fetch LLVM from GitHub) is built here with an empty data folder.

use std::path::Path;
use std::process::Command;

#[test]
fn without_the_llvm_stand_in_the_build_stops_with_one_line_naming_the_script() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the engine crate sits two folders below the repository root");
    let data = tempfile::tempdir().expect("a temporary folder");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // Its own target folder: the test's cargo holds the workspace's while tests run.
    let out = Command::new(cargo)
        .current_dir(root)
        .args([
            "build",
            "--release",
            "--offline",
            "-p",
            "tracel-llvm-bundler",
        ])
        .arg("--target-dir")
        .arg(root.join("target/llvm-standin-check"))
        .env("XDG_DATA_HOME", data.path())
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the build must fail:\n{stderr}");
    let expected = format!(
        "error: burn-cuda needs the LLVM stand-in at {}: run scripts/llvm-standin.sh first (it builds one from Debian's llvm-22 packages)",
        data.path().join("tracel/tracel-llvm-23.1.0-4").display()
    );
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(!stderr.contains("downloading"), "{stderr}");
}
