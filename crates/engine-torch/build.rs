//! With the `torch` feature: make the test binaries find libtorch where it was built
//! against (tch's own rpath reaches only tch's targets), and keep libtorch_cuda linked
//! so CUDA is available at run time.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    if let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB") {
        let lib = std::path::PathBuf::from(lib);
        println!("cargo:rustc-link-arg=-Wl,-rpath={}", lib.display());
        // The version built against, for when the loaded library cannot be found.
        let version_file = lib.parent().map(|torch| torch.join("version.py"));
        if let Some(version) = version_file
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("__version__ = "))
                    .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
            })
        {
            println!("cargo:rustc-env=CNNBENCH_LIBTORCH_VERSION={version}");
        }
    }
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg=-ltorch");
}
