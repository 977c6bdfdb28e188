//! burn-wgpu end to end (built with `--features burn-wgpu`), on Mesa's Vulkan CPU
//! renderer (lavapipe: `apt-get install mesa-vulkan-drivers libvulkan1`). The Vulkan
//! loader is pointed at lavapipe alone (`VK_ICD_FILENAMES`), so these tests mean the same
//! on a machine with a GPU: the refusal of a CPU adapter without the flag, its label with
//! the flag, the refusal with no adapter at all, and `verify` against PyTorch (torch-cpu;
//! burn-flex in a build without the torch feature).
#![cfg(feature = "burn-wgpu")]

use crate::common::{cnnbench, result_files};
use predicates::prelude::*;
use std::path::PathBuf;

/// Mesa's lavapipe driver manifest, where Debian installs it.
fn lavapipe_icd() -> PathBuf {
    let dir = PathBuf::from("/usr/share/vulkan/icd.d");
    let found = std::fs::read_dir(&dir).ok().and_then(|entries| {
        entries
            .flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().contains("lvp_icd"))
    });
    found.unwrap_or_else(|| {
        panic!(
            "no lavapipe driver in {}: apt-get install mesa-vulkan-drivers libvulkan1",
            dir.display()
        )
    })
}

/// cnnbench seeing only the CPU renderer.
fn on_lavapipe() -> assert_cmd::Command {
    let mut cmd = cnnbench();
    cmd.env("VK_ICD_FILENAMES", lavapipe_icd())
        .env("VK_DRIVER_FILES", lavapipe_icd());
    cmd
}

#[test]
fn engines_lists_the_cpu_renderer_and_says_burn_wgpu_needs_the_flag_for_it() {
    on_lavapipe()
        .arg("engines")
        // Mesa's device-select layer would have libwayland complain about it.
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .assert()
        .success()
        .stderr(predicate::str::contains("XDG_RUNTIME_DIR").not())
        .stdout(predicate::str::contains(
            "only a CPU software renderer (listed below); --allow-cpu-adapter runs on it",
        ))
        .stdout(predicate::str::contains("Vulkan adapters (burn-wgpu):"))
        .stdout(predicate::str::contains(
            "(CPU software renderer, Vulkan, driver llvmpipe",
        ));
}

#[test]
fn a_cpu_renderer_is_refused_without_the_flag() {
    on_lavapipe()
        .args(["run", "resnet18", "--engine", "burn-wgpu"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "engine burn-wgpu cannot run: the only Vulkan adapter is llvmpipe",
        ))
        .stderr(predicate::str::contains("pass --allow-cpu-adapter"));
}

#[test]
fn with_no_vulkan_driver_the_engine_says_what_is_missing() {
    let empty = tempfile::tempdir().unwrap();
    let none = empty.path().join("no_icd.json");
    cnnbench()
        .env("VK_ICD_FILENAMES", &none)
        .env("VK_DRIVER_FILES", &none)
        .args(["run", "resnet18", "--engine", "burn-wgpu", "--allow-cpu-adapter"])
        .args(["--image-size", "32", "-b", "1", "--passes", "1", "-q"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "engine burn-wgpu cannot run: no Vulkan adapter: no Vulkan loader (libvulkan.so.1) or no driver (ICD) for it",
        ));
}

#[test]
fn with_the_flag_a_run_on_the_cpu_renderer_is_labelled_and_warned() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    on_lavapipe()
        .args(["run", "--engine", "burn-wgpu", "--allow-cpu-adapter"])
        .arg("--model-file")
        .arg(tiny_model())
        .args(["-b", "2", "--passes", "2", "-q", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning: burn-wgpu ran on llvmpipe",
        ));
    let files = result_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    let engine = &result["engine"];
    assert_eq!(engine["name"], "burn-wgpu", "{engine}");
    assert_eq!(engine["backend"], "wgpu-vulkan", "{engine}");
    assert_eq!(engine["settings"]["api"], "Vulkan", "{engine}");
    assert_eq!(engine["settings"]["driver"], "llvmpipe", "{engine}");
    let device_name = engine["device_name"].as_str().unwrap();
    assert!(
        device_name.contains("[CPU software renderer, not a GPU]"),
        "{device_name}"
    );
    let warnings = result["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("CPU software renderer allowed explicitly")),
        "{warnings:?}"
    );
    // burn's allocator reports its pools: the device memory is recorded.
    assert!(result["memory"]["device_peak_bytes"].as_u64().unwrap() > 0);
}

/// The reference `verify` compares burn-wgpu with: PyTorch where the build has it.
const VERIFY_REFERENCE: &str = if cfg!(feature = "torch") {
    "torch-cpu"
} else {
    "burn-flex"
};

#[test]
fn verify_a_zoo_model_against_pytorch_on_the_cpu_renderer() {
    on_lavapipe()
        .args(["verify", "resnet18", "--engines"])
        .arg(format!("{VERIFY_REFERENCE},burn-wgpu"))
        .args(["--image-size", "32", "-b", "2", "--allow-cpu-adapter"])
        .assert()
        .success()
        .stdout(predicate::str::contains(format!(
            "burn-wgpu (candidate) against {VERIFY_REFERENCE}"
        )));
}

/// A network of a few layers of every kind Caffe has (the importer's fixture): small
/// enough that lavapipe compiles its kernels in seconds.
fn tiny_model() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../import/tests/fixtures/tiny.prototxt")
}
