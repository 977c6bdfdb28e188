//! burn-cuda's build without the LLVM stand-in stops with one line that says what to run,
//! and downloads nothing: cnnbench's copy of tracel-llvm-bundler (the crate whose build
//! script would fetch LLVM from GitHub) is built here with an empty data folder.

use std::path::Path;
use std::process::Command;

/// Copies the folder `from` into `to`, recursively.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a folder for the copy");
    for entry in std::fs::read_dir(from).expect("the patch folder is readable") {
        let entry = entry.expect("a folder entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("a file copied");
        }
    }
}

#[test]
fn without_the_llvm_stand_in_the_build_stops_with_one_line_naming_the_script() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the engine crate sits two folders below the repository root");
    // The patch is built on its own, outside the workspace: inside it, `cargo build -p`
    // of a crate that only a build script depends on trips an internal error of cargo's
    // feature resolver. Its own target folder too: the test's cargo holds the workspace's.
    let scratch = tempfile::tempdir().expect("a temporary folder");
    let crate_dir = scratch.path().join("tracel-llvm-bundler");
    copy_tree(
        &root.join("patches/tracel-llvm-bundler-23.1.0-4"),
        &crate_dir,
    );
    let manifest = crate_dir.join("Cargo.toml");
    let mut toml = std::fs::read_to_string(&manifest).expect("the patch's Cargo.toml");
    toml.push_str("\n[workspace]\n");
    std::fs::write(&manifest, toml).expect("Cargo.toml written");
    // The workspace's lock file pins the versions of the bundler's dependencies (cargo
    // drops the entries it does not need); they come from the registry like any other.
    std::fs::copy(root.join("Cargo.lock"), crate_dir.join("Cargo.lock"))
        .expect("the workspace's Cargo.lock copied");
    let data = scratch.path().join("data");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&crate_dir)
        .args(["build", "--release"])
        .arg("--target-dir")
        .arg(root.join("target/llvm-standin-check"))
        .env("XDG_DATA_HOME", &data)
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the build must fail:\n{stderr}");
    // cargo prints it as `error: tracel-llvm-bundler@23.1.0-4: burn-cuda needs …`.
    let expected = format!(
        "burn-cuda needs the LLVM stand-in at {}: run scripts/llvm-standin.sh first (it builds one from Debian's llvm-22 packages)",
        data.join("tracel/tracel-llvm-23.1.0-4").display()
    );
    assert!(
        stderr
            .lines()
            .any(|line| line.starts_with("error: ") && line.ends_with(&expected)),
        "{stderr}"
    );
    assert!(!stderr.contains("downloading"), "{stderr}");
}
