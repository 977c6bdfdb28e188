//! With the `torch` feature: make the test binaries find libtorch where it was built
//! against (tch's own rpath reaches only tch's targets), keep libtorch_cuda linked so
//! CUDA is available at run time, and compile the c10d shim (`shim/c10d_shim.cpp`,
//! data-parallel training on PyTorch's own process groups) against the same libtorch,
//! the way torch-sys compiles its own glue.
#![allow(
    clippy::disallowed_macros,
    reason = "a build script talks to cargo on stdout"
)]

use std::path::{Path, PathBuf};

#[cfg(not(feature = "torch"))]
fn compile_c10d_shim(_lib: &Path) {}

#[cfg(not(feature = "torch"))]
fn compile_aten_shim(_lib: &Path) {}

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
        compile_aten_shim(&lib);
        compile_c10d_shim(&lib);
    } else {
        // The ATen shim (autocast, oneDNN's verbose switch) is not optional.
        panic!(
            "torch-sys did not say where libtorch is (DEP_TCH_LIBTORCH_LIB), so the ATen shim cannot be compiled: build against the PyTorch wheel with LIBTORCH_USE_PYTORCH=1 (see the README, \"The libtorch engines\")"
        );
    }
    println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg=-ltorch");
}

/// Compiles the ATen shim (`shim/aten_shim.cpp`: autocast on any device and type,
/// oneDNN's verbose switch, ATen's CPU capability) against libtorch's headers, which
/// every libtorch has.
#[cfg(feature = "torch")]
fn compile_aten_shim(lib: &Path) {
    println!("cargo:rerun-if-changed=shim/aten_shim.cpp");
    println!("cargo:rerun-if-changed=shim/shim_errors.h");
    let Some(torch) = lib.parent() else {
        panic!("libtorch's library folder {} has no parent", lib.display());
    };
    let include = torch.join("include");
    if !include.join("ATen/autocast_mode.h").exists() {
        panic!(
            "this libtorch has no ATen headers ({} is missing): install the PyTorch 2.11.0 wheel, whose headers tch builds against too",
            include.join("ATen/autocast_mode.h").display()
        );
    }
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    cc::Build::new()
        .cpp(true)
        .file(manifest.join("shim/aten_shim.cpp"))
        .include(&include)
        .include(include.join("torch/csrc/api/include"))
        .flag("-std=c++17")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .flag_if_supported("-Wno-unused-parameter")
        .flag_if_supported("-Wno-deprecated-declarations")
        .warnings(false)
        .compile("cnnbench_aten");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
}

/// Compiles the c10d shim against libtorch's headers (`<torch>/include`, beside `lib`)
/// and the vendored Gloo headers, with the flags the PyTorch wheel was built with, and
/// tells the crate it is there (`cfg(cnnbench_c10d)`). When the wheel has CUDA and the
/// CUDA and NCCL headers are found, ProcessGroupNCCL is compiled in too
/// (`cfg(cnnbench_nccl)`), for the torch-cuda engines. (`cc` is a build dependency of
/// the `torch` feature only.)
#[cfg(feature = "torch")]
fn compile_c10d_shim(lib: &Path) {
    println!("cargo:rerun-if-changed=shim/c10d_shim.cpp");
    println!("cargo:rerun-if-changed=shim/shim_errors.h");
    println!("cargo:rerun-if-changed=vendor/gloo");
    println!("cargo:rerun-if-env-changed={CUDA_INCLUDE_VAR}");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
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
    let nccl = nccl_headers(lib, torch);
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut build = cc::Build::new();
    build
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
        .flag_if_supported("-Wno-interference-size")
        .warnings(false);
    if let Ok(dirs) = &nccl {
        // ProcessGroupNCCL.hpp is all under USE_C10D_NCCL; ATen's CUDA headers need USE_CUDA.
        build.define("USE_C10D_NCCL", None).define("USE_CUDA", None);
        build.define("CNNBENCH_NCCL", None);
        for dir in dirs {
            build.include(dir);
        }
    }
    build.compile("cnnbench_c10d");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=dylib=torch_cpu");
    println!("cargo:rustc-link-lib=dylib=c10");
    println!("cargo:rustc-cfg=cnnbench_c10d");
    match nccl {
        Ok(_) => {
            println!("cargo:rustc-link-lib=dylib=torch_cuda");
            println!("cargo:rustc-link-lib=dylib=c10_cuda");
            println!("cargo:rustc-cfg=cnnbench_nccl");
        }
        Err(NcclMissing::NoCuda) => {}
        Err(NcclMissing::Headers(why)) => println!("cargo:warning={why}"),
    }
}

/// Extra include folders for the CUDA and NCCL headers, `:`-separated, searched before
/// the wheel's own `nvidia/*/include` (for headers installed elsewhere).
#[cfg(feature = "torch")]
const CUDA_INCLUDE_VAR: &str = "CNNBENCH_CUDA_INCLUDE";

/// Why ProcessGroupNCCL is left out.
#[cfg(feature = "torch")]
enum NcclMissing {
    /// A CPU-only libtorch: nothing to say.
    NoCuda,
    /// A CUDA libtorch, but headers the NCCL backend includes are not installed.
    Headers(String),
}

/// The include folders that hold what `ProcessGroupNCCL.hpp` reaches: the CUDA runtime
/// (from the wheel's `nvidia-cuda-runtime`), CUDA's `crt/` and `nv/target` headers
/// (PyPI's `nvidia-cuda-crt` and `nvidia-cuda-cccl`, which the torch wheel does not
/// install) and `nccl.h` (the wheel's `nvidia-nccl`). They are looked for in
/// `$CNNBENCH_CUDA_INCLUDE`, the wheel's `site-packages/nvidia/*/include`, `$CUDA_HOME`
/// and /usr/local/cuda.
#[cfg(feature = "torch")]
fn nccl_headers(lib: &Path, torch: &Path) -> Result<Vec<PathBuf>, NcclMissing> {
    if !lib.join("libtorch_cuda.so").exists() {
        return Err(NcclMissing::NoCuda);
    }
    let mut candidates: Vec<PathBuf> = std::env::var_os(CUDA_INCLUDE_VAR)
        .map(|v| std::env::split_paths(&v).collect())
        .unwrap_or_default();
    if let Some(site) = torch.parent() {
        let nvidia = site.join("nvidia");
        // New headers land here; a change makes cargo look again.
        if nvidia.is_dir() {
            println!("cargo:rerun-if-changed={}", nvidia.display());
        }
        let mut wheel_dirs: Vec<PathBuf> = std::fs::read_dir(&nvidia)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path().join("include")))
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        wheel_dirs.sort();
        candidates.extend(wheel_dirs);
    }
    if let Some(home) = std::env::var_os("CUDA_HOME") {
        candidates.push(PathBuf::from(home).join("include"));
    }
    candidates.push(PathBuf::from("/usr/local/cuda/include"));
    // The CUDA version of the wheel (torch/version.py: `cuda: Optional[str] = '13.0'`),
    // for the pip line.
    let cuda = std::fs::read_to_string(torch.join("version.py"))
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("cuda"))
                .and_then(|l| l.split('\'').nth(1).map(str::to_string))
        });
    let pin = |package: &str| match &cuda {
        Some(v) => format!("\"{package}=={v}.*\""),
        None => package.to_string(),
    };
    let needed = [
        ("cuda_runtime_api.h", pin("nvidia-cuda-runtime")),
        ("crt/host_config.h", pin("nvidia-cuda-crt")),
        ("nv/target", pin("nvidia-cuda-cccl")),
        (
            "nccl.h",
            "nvidia-nccl-cu13 (or the wheel's nvidia-nccl-*)".to_string(),
        ),
    ];
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut missing: Vec<(&str, String)> = Vec::new();
    for (header, package) in needed {
        match candidates.iter().find(|d| d.join(header).is_file()) {
            Some(d) => {
                if !dirs.contains(d) {
                    dirs.push(d.clone());
                }
            }
            None => missing.push((header, package)),
        }
    }
    if missing.is_empty() {
        return Ok(dirs);
    }
    let headers: Vec<&str> = missing.iter().map(|(h, _)| *h).collect();
    let packages: Vec<&str> = missing.iter().map(|(_, p)| p.as_str()).collect();
    Err(NcclMissing::Headers(format!(
        "this PyTorch has CUDA but the headers its NCCL backend needs are not installed ({}): torch-cuda cannot train across processes in this build. Install them into the same Python environment with `pip install {}` (or point {CUDA_INCLUDE_VAR} at them) and build again",
        headers.join(", "),
        packages.join(" ")
    )))
}
