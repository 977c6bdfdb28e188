//! burn-wgpu through the engine kit's conformance suite, against burn-flex. Here (no
//! GPU) it runs on Mesa's Vulkan CPU renderer, allowed explicitly: the GPU code path —
//! burn's wgpu runtime, SPIR-V kernels, fusion, device sync — on a CPU. Needs a Vulkan
//! driver: `apt-get install mesa-vulkan-drivers libvulkan1` where there is no GPU.
#![allow(
    clippy::disallowed_macros,
    reason = "a test's progress for whoever reads the test log"
)]

use super::*;
use cnnbench_engine::{Mode, SessionConfig};

fn options() -> BurnGpuOptions {
    BurnGpuOptions {
        device: 0,
        allow_cpu_adapter: true,
    }
}

fn wgpu_engine() -> Box<dyn Engine> {
    engine(BurnGpu::Wgpu, &options()).unwrap_or_else(|e| {
        panic!("burn-wgpu cannot run here ({e}); without a GPU, install Mesa's Vulkan CPU driver: apt-get install mesa-vulkan-drivers libvulkan1")
    })
}

fn flex() -> Option<Box<dyn Engine>> {
    let flex = cnnbench_engine_burn::BurnFlexEngine::new(None).expect("burn-flex starts");
    Some(Box::new(flex))
}

/// The suite in a module of its own, so that a test filter can name this engine's checks
/// in a build with other engines (e.g. `--skip wgpu_suite::conformance_models_against_reference`,
/// 9 minutes on lavapipe).
mod wgpu_suite {
    use super::*;

    cnnbench_conformance::engine_conformance! {
        engine: wgpu_engine(),
        reference: flex(),
    }
}

#[test]
fn the_engine_says_which_adapter_and_driver_it_runs_on_and_labels_a_cpu_renderer() {
    let info = wgpu_engine().info();
    assert_eq!(info.name, WGPU_ENGINE);
    assert_eq!(info.backend, "wgpu-vulkan");
    assert_eq!(info.settings.get("api").map(String::as_str), Some("Vulkan"));
    assert!(!info.settings["driver"].is_empty(), "{info:?}");
    let on_cpu = info.settings["adapter_kind"] == AdapterKind::Cpu.as_str();
    assert_eq!(
        info.device_name
            .contains("CPU software renderer, not a GPU"),
        on_cpu,
        "{info:?}"
    );
    assert_eq!(info.settings.contains_key("warning"), on_cpu, "{info:?}");
    assert!(info.settings["gelu"].contains("erf"), "{info:?}");
    let engine = wgpu_engine();
    assert_eq!(
        engine.capabilities().device == cnnbench_engine::DeviceKind::Cpu,
        on_cpu
    );
}

#[test]
fn sync_waits_for_the_device_and_reads_its_memory_pools() {
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).expect("a zoo model");
    let engine = wgpu_engine();
    let config = SessionConfig {
        mode: Mode::Train,
        batch_size: 2,
        seed: 1,
        precision: cnnbench_engine::Precision::F32,
        deterministic: true,
        calibration: None,
    };
    let mut session = engine.prepare(&graph, &config).expect("a session");
    assert_eq!(session.device_peak_memory(), None, "nothing synced yet");
    session.prepare_batch().unwrap();
    session.forward().unwrap();
    session.prepare_output_grad().unwrap();
    session.backward().unwrap();
    session.sync().unwrap();
    let peak = session
        .device_peak_memory()
        .expect("wgpu reports its pools");
    // At least the weights (11.7 M f32 parameters) live on the device.
    assert!(peak >= 11_000_000 * 4, "peak {peak} bytes");
}

/// The zoo models `cnnbench verify`'s small set adds to the suite's own (ConvNeXt's
/// layer norms on 1×1 maps and GELU, MobileNet-V3's hardswish and squeeze-and-excitation,
/// channel shuffle, Inception's branches), against burn-flex at batch 4 as the suite runs
/// its models. ConvNeXt-Tiny's inference output was off by 5.8 here until the lowering
/// settled 1×1 maps (`UnitMapLayout`). Left out: AlexNet, whose first classifier weight
/// is one 144 MiB buffer, past what lavapipe allocates; and Inception-V1 at 64×64, whose
/// last batch norms see 2×2 maps: their bias gradients differ by 0.18–0.23 between
/// torch-cpu and burn-flex too, 10× the noise floor `verify` measures, too ill-conditioned
/// for a pass or fail at a size lavapipe affords. About 5 minutes on lavapipe.
#[test]
fn the_small_zoo_models_match_burn_flex() {
    let (engine, reference) = (wgpu_engine(), flex().expect("a reference"));
    let in_the_suite: Vec<String> = cnnbench_conformance::model_cases()
        .iter()
        .map(|g| g.name().to_string())
        .collect();
    let failures: Vec<String> = cnnbench_conformance::SMALL_ZOO_MODELS
        .iter()
        .filter(|(name, _)| !name.starts_with("alexnet") && !name.starts_with("inception"))
        .filter_map(|&(name, size)| {
            let graph = cnnbench_zoo::build(name, Some([3, size, size])).expect("a zoo model");
            if in_the_suite.iter().any(|n| n == graph.name()) {
                return None;
            }
            eprintln!("checking {name} at {size}×{size}");
            cnnbench_conformance::check_against(&*engine, &*reference, &graph, 4)
                .err()
                .map(|e| format!("{e:#}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
