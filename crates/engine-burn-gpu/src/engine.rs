//! The engine both backends share: the burn engine's sessions on an opened device.

use anyhow::Result;
use burn::tensor::Device;
use cnnbench_engine::{Capabilities, Engine, EngineInfo, Session, SessionConfig};
use cnnbench_graph::Graph;

/// A burn GPU engine: burn-flex's lowering and session on `device`, with what the device
/// said about itself.
pub struct BurnGpuEngine {
    /// The device without autodiff; sessions add it for the modes that train.
    device: Device,
    info: EngineInfo,
    capabilities: Capabilities,
}

impl BurnGpuEngine {
    /// An engine on an opened `device` (no autodiff), described by `info`.
    #[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
    pub(crate) fn new(device: Device, mut info: EngineInfo, capabilities: Capabilities) -> Self {
        // How the lowering computes GELU on this device (burn's GPU gelu_backward is
        // approximate, so it is composed from erf there).
        info.settings.insert(
            "gelu".to_string(),
            cnnbench_engine_burn::GeluForm::for_device(&device)
                .describe()
                .to_string(),
        );
        // How 1×1 maps pass between nodes (burn's fused GPU kernels misread some strides).
        info.settings.insert(
            "unit_maps".to_string(),
            cnnbench_engine_burn::UnitMapLayout::for_device(&device)
                .describe()
                .to_string(),
        );
        Self {
            device,
            info,
            capabilities,
        }
    }
}

impl Engine for BurnGpuEngine {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        cnnbench_engine_burn::prepare_session_on(self.device.clone(), graph, config)
    }
}

/// The [`EngineInfo`] fields both backends fill alike.
#[cfg_attr(not(any(feature = "wgpu", feature = "cuda")), allow(dead_code))]
pub(crate) fn base_info(
    name: &str,
    backend: &str,
    device: String,
    device_name: String,
) -> EngineInfo {
    let mut libraries = std::collections::BTreeMap::new();
    libraries.insert(
        "burn".to_string(),
        cnnbench_engine_burn::BURN_VERSION.to_string(),
    );
    libraries.insert("cubecl".to_string(), CUBECL_VERSION.to_string());
    let mut settings = std::collections::BTreeMap::new();
    // burn's own defaults for its GPU backends, enabled by this crate's features.
    settings.insert("fusion".to_string(), "on".to_string());
    settings.insert("autotune".to_string(), "on".to_string());
    EngineInfo {
        name: name.into(),
        framework: "burn".into(),
        framework_version: cnnbench_engine_burn::BURN_VERSION.into(),
        backend: backend.into(),
        device,
        device_name,
        // One host thread drives the device's queue; the kernels' parallelism is the GPU's.
        threads: 1,
        libraries,
        settings,
        variant: Vec::new(),
    }
}

/// The cubecl version burn 0.22.1 compiles its kernels with (pinned by the lock file).
pub const CUBECL_VERSION: &str = "0.11.3";
