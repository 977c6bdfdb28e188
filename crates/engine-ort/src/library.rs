//! Where ONNX Runtime's shared library is: the PyPI wheel `onnxruntime`'s
//! `onnxruntime/capi/libonnxruntime.so.<version>` (or any build a user names), found by
//! [`cnnbench_host::wheel`] as the other run-time-loaded stacks are.

pub use cnnbench_host::wheel::SearchPlaces;
use cnnbench_host::wheel::WheelLibrary;
use std::path::PathBuf;

/// The variable that names the library file directly (the `ort` crate's own convention).
pub const DYLIB_VAR: &str = "ORT_DYLIB_PATH";

/// The onnxruntime release cnnbench is tested with (and `.ci/run` installs).
pub const PINNED_VERSION: &str = "1.32.0";

/// ONNX Runtime's wheel library.
pub const ONNX_RUNTIME: WheelLibrary = WheelLibrary {
    stack: "ONNX Runtime",
    variable: DYLIB_VAR,
    package: "onnxruntime",
    folder: "capi",
    file_prefix: "libonnxruntime.",
    pip_requirement: "onnxruntime==1.32.0",
    other_builds: "1.31 or newer",
};

/// What fixes a missing library, for error messages and `cnnbench engines`.
pub fn install_hint() -> String {
    ONNX_RUNTIME.install_hint()
}

/// The places this process looks in.
pub fn search_places() -> SearchPlaces {
    SearchPlaces::of_this_process(&ONNX_RUNTIME)
}

/// The library file to load, or why there is none (what was looked at, and the fix).
pub fn find(places: &SearchPlaces) -> Result<PathBuf, String> {
    ONNX_RUNTIME.find(places)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pinned_version_is_the_pip_line() {
        assert_eq!(
            super::ONNX_RUNTIME.pip_requirement,
            format!("onnxruntime=={}", super::PINNED_VERSION)
        );
    }
}
