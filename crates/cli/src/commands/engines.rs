//! `cnnbench engines`, and the one place that maps engine names to engines.

use anyhow::{anyhow, Result};
use cnnbench_engine::{Capabilities, Engine};
use cnnbench_engine_burn_gpu::{BurnGpu, BurnGpuOptions, Unavailable};
use cnnbench_engine_torch::{TorchBackend, TorchOptions};
use std::process::ExitCode;

/// The candle engine's name (known to every build, runnable in `--features candle` ones).
const CANDLE: &str = "candle";

/// Whether an engine can run here, and if not, why and what to do.
pub struct EngineStatus {
    pub name: &'static str,
    pub description: &'static str,
    pub available: Result<(), String>,
    /// What it can do, known without starting it.
    pub capabilities: Capabilities,
}

/// Every engine cnnbench knows, built into this binary or not.
pub fn statuses() -> Vec<EngineStatus> {
    statuses_where(|_| true)
}

/// The engines `wanted` names, each asked whether it can run here. The GPU engines (burn's
/// and libtorch's) are asked only when wanted, so that a run does not open CUDA or list
/// Vulkan adapters for nothing; the CPU engines answer without opening a device.
fn statuses_where(wanted: impl Fn(&str) -> bool) -> Vec<EngineStatus> {
    let mut all = vec![EngineStatus {
        name: cnnbench_engine_burn::ENGINE_NAME,
        description: if cfg!(feature = "burn-x86-v4") {
            "burn 0.22 flex CPU backend with autodiff, x86-v4 build (gemm's AVX-512 kernels)"
        } else {
            "burn 0.22 flex CPU backend with autodiff (pure Rust, always built)"
        },
        available: cnnbench_engine_burn::availability(),
        capabilities: cnnbench_engine_burn::capabilities(),
    }];
    all.push(EngineStatus {
        name: CANDLE,
        description: "candle 0.11 CPU backend with its autograd (pure Rust, feature `candle`)",
        available: if cfg!(feature = "candle") {
            Ok(())
        } else {
            Err(
                "not in this build: build with `--features candle` (pure Rust, nothing to install)"
                    .into(),
            )
        },
        capabilities: Capabilities::cpu_f32(cnnbench_host::memory_bytes()),
    });
    all.push(EngineStatus {
        name: cnnbench_engine_tract::ENGINE_NAME,
        description: "tract 0.23 (Sonos' pure-Rust ONNX inference) on cnnbench's ONNX export",
        available: cnnbench_engine_tract::availability(),
        capabilities: cnnbench_engine_tract::capabilities(),
    });
    for backend in BurnGpu::ALL.into_iter().filter(|b| wanted(b.engine_name())) {
        all.push(EngineStatus {
            name: backend.engine_name(),
            description: backend.describe(),
            available: cnnbench_engine_burn_gpu::availability(backend, &BurnGpuOptions::default())
                .map_err(|why| match why {
                    // The adapter itself is listed under the table.
                    Unavailable::CpuAdapterOnly { .. } => {
                        "only a CPU software renderer (listed below); --allow-cpu-adapter runs on it"
                            .to_string()
                    }
                    other => other.to_string(),
                }),
            capabilities: cnnbench_engine_burn_gpu::capabilities(),
        });
    }
    all.push(EngineStatus {
        name: cnnbench_engine_ort::ENGINE_NAME,
        description: "ONNX Runtime's CPU provider (PyPI wheel, loaded at run time) on cnnbench's ONNX export",
        available: cnnbench_engine_ort::availability(),
        capabilities: cnnbench_engine_ort::capabilities(),
    });
    for backend in TorchBackend::ALL
        .into_iter()
        .filter(|b| wanted(b.engine_name()))
    {
        all.push(EngineStatus {
            name: backend.engine_name(),
            description: backend.describe(),
            available: cnnbench_engine_torch::availability(backend),
            capabilities: backend.capabilities(),
        });
    }
    all.retain(|s| wanted(s.name));
    all
}

/// Engine settings from the command line; each engine uses the ones that apply to it.
#[derive(Clone, Debug, Default)]
pub struct EngineOptions {
    /// Thread-pool size (None: the engine's default, all cores).
    pub threads: Option<usize>,
    pub torch: TorchOptions,
    pub burn_gpu: BurnGpuOptions,
}

/// Creates the engine named `name`, or says why it cannot run here.
pub fn create(name: &str, options: &EngineOptions) -> Result<Box<dyn Engine>> {
    let Some(status) = statuses_where(|known| known == name).into_iter().next() else {
        let all = statuses();
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        return Err(anyhow!(
            "unknown engine \"{name}\"; cnnbench knows: {}",
            names.join(", ")
        ));
    };
    // The burn GPU engines answer for the options given (a CPU adapter may be allowed).
    let burn_gpu = BurnGpu::from_engine_name(name);
    if let (Err(why), None) = (&status.available, burn_gpu) {
        return Err(anyhow!("engine {name} cannot run: {why}"));
    }
    if options.torch.channels_last && TorchBackend::from_engine_name(name).is_none() {
        return Err(anyhow!(
            "engine {name} cannot use channels-last memory: its tensors are always NCHW; leave out --channels-last, or use a torch engine"
        ));
    }
    if let Some(backend) = burn_gpu {
        return burn_gpu_engine(backend, &options.burn_gpu);
    }
    if name == cnnbench_engine_burn::ENGINE_NAME {
        return Ok(Box::new(cnnbench_engine_burn::BurnFlexEngine::new(
            options.threads,
        )?));
    }
    #[cfg(feature = "candle")]
    if name == CANDLE {
        return Ok(Box::new(cnnbench_engine_candle::CandleEngine::new(
            options.threads,
        )?));
    }
    if name == cnnbench_engine_tract::ENGINE_NAME {
        return tract_engine(options);
    }
    if name == cnnbench_engine_ort::ENGINE_NAME {
        return ort_engine(options);
    }
    let backend = TorchBackend::from_engine_name(name)
        .ok_or_else(|| anyhow!("engine {name} is not built into this binary"))?;
    let torch = TorchOptions {
        threads: options.threads,
        ..options.torch.clone()
    };
    cnnbench_engine_torch::engine(backend, &torch)
}

/// A burn GPU engine, warning on stderr when it runs on a CPU software renderer.
fn burn_gpu_engine(backend: BurnGpu, options: &BurnGpuOptions) -> Result<Box<dyn Engine>> {
    let engine = cnnbench_engine_burn_gpu::engine(backend, options).map_err(|why| {
        anyhow!(
            "engine {} cannot run: {}",
            backend.engine_name(),
            burn_gpu_why(&why)
        )
    })?;
    if let Some(warning) = engine.info().settings.get("warning") {
        eprintln!("warning: {warning}");
    }
    Ok(engine)
}

/// Why a burn GPU engine cannot run, with the flag that accepts a CPU renderer.
fn burn_gpu_why(why: &Unavailable) -> String {
    match why {
        Unavailable::CpuAdapterOnly { .. } => format!(
            "{why}: pass --allow-cpu-adapter to run on it anyway (to test, not to measure a GPU)"
        ),
        _ => why.to_string(),
    }
}

/// The engine of one rank of a data-parallel job, joined to the others through the
/// rendezvous, and the job's process group; or why `name` cannot train across
/// processes.
pub fn create_data_parallel(
    name: &str,
    options: &EngineOptions,
    rendezvous: &cnnbench_engine::distributed::Rendezvous,
) -> Result<(
    Box<dyn Engine>,
    std::sync::Arc<dyn cnnbench_engine::distributed::ProcessGroup>,
)> {
    let Some(backend) = TorchBackend::from_engine_name(name) else {
        // Known engines first get their own "unknown"/"cannot run" answers.
        create(name, options)?;
        return Err(anyhow!(
            "engine {name} cannot train across processes; the engines that can: {}",
            super::distributed::engines_that_can()
        ));
    };
    if let Err(why) = cnnbench_engine_torch::availability(backend) {
        return Err(anyhow!("engine {name} cannot run: {why}"));
    }
    let torch = TorchOptions {
        threads: options.threads,
        ..options.torch.clone()
    };
    cnnbench_engine_torch::data_parallel_engine(backend, &torch, rendezvous)
}

#[cfg(feature = "tract")]
fn tract_engine(options: &EngineOptions) -> Result<Box<dyn Engine>> {
    Ok(Box::new(cnnbench_engine_tract::TractEngine::new(
        options.threads,
    )?))
}

#[cfg(not(feature = "tract"))]
fn tract_engine(_options: &EngineOptions) -> Result<Box<dyn Engine>> {
    Err(anyhow!(
        "engine tract is not built into this binary: {}",
        cnnbench_engine_tract::SETUP_HINT
    ))
}

#[cfg(feature = "ort")]
fn ort_engine(options: &EngineOptions) -> Result<Box<dyn Engine>> {
    Ok(Box::new(cnnbench_engine_ort::OrtEngine::new(
        options.threads,
    )?))
}

#[cfg(not(feature = "ort"))]
fn ort_engine(_options: &EngineOptions) -> Result<Box<dyn Engine>> {
    Err(anyhow!(
        "engine ort-cpu is not built into this binary: {}",
        cnnbench_engine_ort::SETUP_HINT
    ))
}

/// Which engines can train across processes (`run --distributed`/`--nproc`) with this
/// build, and on which of PyTorch's c10d backends.
fn data_parallel_line() -> String {
    let backends = cnnbench_engine_torch::distributed_backends();
    let mut line = format!(
        "Data-parallel training (run --distributed, --nproc): {}",
        super::distributed::engines_that_can()
    );
    if backends.contains(&"gloo") && !backends.contains(&"nccl") {
        line.push_str("; not torch-cuda: c10d's NCCL backend is not compiled in (see the guide, \"NCCL on GPU machines\")");
    }
    line
}

pub fn run() -> Result<ExitCode> {
    let mut table =
        super::common::new_table(&["Engine", "Available", "Modes", "Precisions", "What it is"]);
    for s in statuses() {
        let available = match &s.available {
            Ok(()) => "yes".to_string(),
            Err(why) => format!("no — {why}"),
        };
        table.add_row(vec![
            s.name.to_string(),
            available,
            s.capabilities.modes_text(),
            s.capabilities.precisions_text(),
            s.description.to_string(),
        ]);
    }
    println!("{table}");
    println!("{}", data_parallel_line());
    for (backend, adapters) in cnnbench_engine_burn_gpu::adapters::listing() {
        let api = match backend {
            BurnGpu::Wgpu => "Vulkan adapters",
            BurnGpu::Cuda => "CUDA devices",
        };
        println!("\n{api} ({}):", backend.engine_name());
        if adapters.is_empty() {
            println!("  none");
        }
        for (i, adapter) in adapters.iter().enumerate() {
            println!("  {i}: {adapter}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
