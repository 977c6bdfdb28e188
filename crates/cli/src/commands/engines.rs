//! `cnnbench engines`, and the one place that maps engine names to engines.

use anyhow::{anyhow, Result};
use cnnbench_engine::Engine;
use std::process::ExitCode;

/// Whether an engine can run here, and if not, why and what to do.
pub struct EngineStatus {
    pub name: &'static str,
    pub description: &'static str,
    pub available: Result<(), String>,
}

/// Every engine cnnbench knows, built into this binary or not.
pub fn statuses() -> Vec<EngineStatus> {
    vec![EngineStatus {
        name: cnnbench_engine_burn::ENGINE_NAME,
        description: "burn 0.22 flex CPU backend with autodiff (pure Rust, always built)",
        available: Ok(()),
    }]
    .into_iter()
    .chain(torch_statuses())
    .collect()
}

fn torch_statuses() -> Vec<EngineStatus> {
    const NOT_BUILT: &str =
        "not in this version: the libtorch engines are planned (cargo feature `torch`) but not built yet";
    vec![
        EngineStatus {
            name: "torch-cpu",
            description: "libtorch (PyTorch 2.11) on the CPU",
            available: Err(NOT_BUILT.into()),
        },
        EngineStatus {
            name: "torch-cuda",
            description: "libtorch on an NVIDIA GPU with cuDNN",
            available: Err(NOT_BUILT.into()),
        },
        EngineStatus {
            name: "torch-cuda-nocudnn",
            description: "libtorch on an NVIDIA GPU, cuDNN disabled (the original suite's \"nn\")",
            available: Err(NOT_BUILT.into()),
        },
    ]
}

/// Creates the engine named `name` with a thread pool of `threads` (None: all cores).
pub fn create(name: &str, threads: Option<usize>) -> Result<Box<dyn Engine>> {
    let all = statuses();
    let Some(status) = all.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        return Err(anyhow!(
            "unknown engine \"{name}\"; cnnbench knows: {}",
            names.join(", ")
        ));
    };
    if let Err(why) = &status.available {
        return Err(anyhow!("engine {name} is {why}"));
    }
    match name {
        cnnbench_engine_burn::ENGINE_NAME => Ok(Box::new(
            cnnbench_engine_burn::BurnFlexEngine::new(threads)?,
        )),
        _ => Err(anyhow!("engine {name} is not built into this binary")),
    }
}

pub fn run() -> Result<ExitCode> {
    let mut table = super::common::new_table(&["Engine", "Available", "What it is"]);
    for s in statuses() {
        let available = match &s.available {
            Ok(()) => "yes".to_string(),
            Err(why) => format!("no — {why}"),
        };
        table.add_row(vec![
            s.name.to_string(),
            available,
            s.description.to_string(),
        ]);
    }
    println!("{table}");
    Ok(ExitCode::SUCCESS)
}
