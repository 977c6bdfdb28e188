// cnnbench's build script for tracel-llvm-bundler: the original downloads an LLVM bundle
// from GitHub when none is installed. This one only looks for it (where the original
// installs it, or where scripts/llvm-standin.sh puts a stand-in made from Debian's LLVM
// packages) and otherwise fails with one line that says what to do.
include!("src/config.rs");

fn main() {
    println!("cargo:rerun-if-env-changed=DOCS_RS");
    println!("cargo:rerun-if-env-changed=XDG_DATA_HOME");
    if std::env::var_os("DOCS_RS").is_some() || std::env::var_os("CARGO_FEATURE_XTASK").is_some()
    {
        return;
    }
    let llvm = match llvm_path() {
        Ok(path) => path,
        Err(e) => {
            println!("cargo::error=burn-cuda: cannot tell where the LLVM stand-in lives: {e}");
            std::process::exit(1);
        }
    };
    let sentinel = Environment::current().sentinel_path(&llvm);
    println!("cargo:rerun-if-changed={}", sentinel.display());
    if !sentinel.exists() {
        println!(
            "cargo::error=burn-cuda needs the LLVM stand-in at {}: run scripts/llvm-standin.sh first (it builds one from Debian's llvm-22 packages)",
            llvm.display()
        );
        std::process::exit(1);
    }
}
