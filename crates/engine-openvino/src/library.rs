//! Where OpenVINO's C library is: the PyPI wheel `openvino`'s
//! `openvino/libs/libopenvino_c.so.<version>`, beside the CPU plugin and the ONNX front
//! end it loads (or any build a user names), found by [`cnnbench_host::wheel`] as ONNX
//! Runtime's is.

pub use cnnbench_host::wheel::SearchPlaces;
use cnnbench_host::wheel::WheelLibrary;
use std::path::PathBuf;

/// The variable that names `libopenvino_c.so` directly.
pub const LIBRARY_VAR: &str = "OPENVINO_C_LIBRARY";

/// The OpenVINO release cnnbench is tested with (and `.ci/run` installs).
pub const PINNED_VERSION: &str = "2026.4.1";

/// OpenVINO's wheel library.
pub const OPENVINO: WheelLibrary = WheelLibrary {
    stack: "OpenVINO",
    variable: LIBRARY_VAR,
    package: "openvino",
    folder: "libs",
    file_prefix: "libopenvino_c.",
    pip_requirement: "openvino==2026.4.1",
    other_builds: "2025.1 or newer, with its plugins beside it",
};

/// What fixes a missing library, for error messages and `cnnbench engines`.
pub fn install_hint() -> String {
    OPENVINO.install_hint()
}

/// The places this process looks in.
pub fn search_places() -> SearchPlaces {
    SearchPlaces::of_this_process(&OPENVINO)
}

/// The library file to load, or why there is none (what was looked at, and the fix).
pub fn find(places: &SearchPlaces) -> Result<PathBuf, String> {
    OPENVINO.find(places)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_version_is_the_pip_line() {
        assert_eq!(
            OPENVINO.pip_requirement,
            format!("openvino=={PINNED_VERSION}")
        );
    }

    #[test]
    fn the_c_library_is_found_in_a_wheel_and_not_the_core_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let libs = dir
            .path()
            .join("lib/python3.11/site-packages/openvino/libs");
        std::fs::create_dir_all(&libs).unwrap();
        for file in [
            "libopenvino.so.2641",
            "libopenvino_c.so.2641",
            "libopenvino_intel_cpu_plugin.so",
            "libopenvino_onnx_frontend.so.2641",
        ] {
            std::fs::write(libs.join(file), b"").unwrap();
        }
        let places = SearchPlaces {
            virtual_env: Some(dir.path().to_path_buf()),
            ..SearchPlaces::default()
        };
        assert_eq!(find(&places).unwrap(), libs.join("libopenvino_c.so.2641"));
        let why = find(&SearchPlaces::default()).unwrap_err();
        assert!(why.contains("OpenVINO's library was not found"), "{why}");
        assert!(why.contains("pip install openvino==2026.4.1"), "{why}");
        assert!(why.contains("OPENVINO_C_LIBRARY"), "{why}");
    }
}
