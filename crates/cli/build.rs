//! Records the git commit cnnbench is built from, for result files; with the `torch`
//! feature, makes the binary find libtorch where it was built (tch's own rpath reaches
//! only tch's targets) and keeps libtorch_cuda linked so CUDA is found at run time.
#![allow(
    clippy::disallowed_macros,
    reason = "a build script talks to cargo on stdout"
)]

use std::path::Path;

fn main() {
    if std::env::var_os("CARGO_FEATURE_TORCH").is_some() {
        if let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB") {
            println!("cargo:rustc-link-arg=-Wl,-rpath={}", lib.to_string_lossy());
        }
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch");
    }
    let commit = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=CNNBENCH_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself, the branch file it names, and packed refs;
    // only those that exist, for cargo takes a missing one for changed and rebuilt the
    // CLI on every build of a checkout without packed refs (40 s of every test command).
    let git = Path::new("../../.git");
    let mut watched = vec![git.join("HEAD"), git.join("packed-refs")];
    if let Ok(head) = std::fs::read_to_string(git.join("HEAD")) {
        if let Some(branch) = head.trim().strip_prefix("ref: ") {
            watched.push(git.join(branch));
        }
    }
    watched.retain(|path| path.is_file());
    if watched.is_empty() {
        // Not a git checkout (a source archive): nothing to follow but this script.
        watched.push("build.rs".into());
    }
    for path in watched {
        println!("cargo:rerun-if-changed={}", path.display());
    }
}
