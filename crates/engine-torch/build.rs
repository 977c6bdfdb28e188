//! With the `torch` feature: make the test binaries find libtorch where it was built
//! against (tch's own rpath reaches only tch's targets), keep libtorch_cuda linked so
//! CUDA is available at run time, and compile the c10d shim (`shim/c10d_shim.cpp`,
//! data-parallel training on PyTorch's own process groups) against the same libtorch,
//! the way torch-sys compiles its own glue.

use std::path::{Path, PathBuf};

#[cfg(not(feature = "torch"))]
fn compile_c10d_shim(_lib: &Path) {}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    if let Some(lib) = std::env::var_os("DEP_TCH_LIBTORCH_LIB") {
        let lib = PathBuf::from(lib);
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
        compile_c10d_shim(&lib);
    } else {
        println!(
            "cargo:warning=torch-sys did not say where libtorch is (DEP_TCH_LIBTORCH_LIB): distributed training is left out of this build"
        );
    }
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg=-ltorch");
}

/// Compiles the c10d shim against libtorch's headers (`<torch>/include`, beside `lib`)
/// and the vendored Gloo headers, with the flags the PyTorch wheel was built with, and
/// tells the crate it is there (`cfg(cnnbench_c10d)`). (`cc` is a build dependency
/// of the `torch` feature only.)
#[cfg(feature = "torch")]
fn compile_c10d_shim(lib: &Path) {
    println!("cargo:rerun-if-changed=shim/c10d_shim.cpp");
    println!("cargo:rerun-if-changed=vendor/gloo");
    let Some(torch) = lib.parent() else {
        return;
    };
    let include = torch.join("include");
    let c10d = include.join("torch/csrc/distributed/c10d/ProcessGroupGloo.hpp");
    if !c10d.exists() {
        println!(
            "cargo:warning=this libtorch has no c10d headers ({} is missing): distributed training is left out of this build",
            c10d.display()
        );
        return;
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    cc::Build::new()
        .cpp(true)
        .file(manifest.join("shim/c10d_shim.cpp"))
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .include(manifest.join("vendor/gloo"))
        .flag("-std=c++17")
        // The wheel's torch._C._GLIBCXX_USE_CXX11_ABI; its c10d is built with Gloo.
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .define("USE_C10D_GLOO", None)
        .define("GLOG_USE_GLOG_EXPORT", None)
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .warnings(false)
        .compile("cnnbench_c10d");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
    println!("cargo:rustc-cfg=cnnbench_c10d");
}
