//! `cnnbench engines`, and the registry: the one list of every engine's provider. No
//! engine is named here: each crate says what it is, built in or not.

use anyhow::{anyhow, Result};
pub use cnnbench_engine::provider::EngineOptions;
use cnnbench_engine::provider::Provider;
use cnnbench_engine::{Capabilities, Engine};
use std::process::ExitCode;

/// Every engine cnnbench knows, built into this binary or not, in the order
/// `cnnbench engines` lists them. Adding an engine is its crate and one line here.
pub fn registry() -> Vec<Box<dyn Provider>> {
    let mut all = Vec::new();
    all.extend(cnnbench_engine_burn::providers());
    all.extend(cnnbench_engine_candle::providers());
    all.extend(cnnbench_engine_tract::providers());
    all.extend(cnnbench_engine_burn_gpu::providers());
    all.extend(cnnbench_engine_ort::providers());
    all.extend(cnnbench_engine_openvino::providers());
    all.extend(cnnbench_engine_torch::providers());
    all.extend(cnnbench_engine_pytorch::providers());
    all
}

/// Whether an engine can run here, and if not, why and what to do.
pub struct EngineStatus {
    pub name: &'static str,
    pub description: &'static str,
    pub available: Result<(), String>,
    /// What it can do, known without starting it.
    pub capabilities: Capabilities,
}

/// Every engine cnnbench knows, each asked whether it can run here.
pub fn statuses() -> Vec<EngineStatus> {
    registry()
        .iter()
        .map(|p| EngineStatus {
            name: p.name(),
            description: p.description(),
            available: p.listing_availability(),
            capabilities: p.capabilities(),
        })
        .collect()
}

/// The engine options of a run spec's engine settings, thread count and precision
/// (TF32 is chosen when the engine starts, before its first kernel).
pub fn options(
    settings: &cnnbench_results::EngineSettings,
    threads: Option<usize>,
    precision: cnnbench_engine::Precision,
) -> EngineOptions {
    EngineOptions {
        threads,
        device: settings.device,
        allow_cpu_adapter: settings.allow_cpu_adapter,
        cudnn_benchmark: settings.cudnn_benchmark,
        tf32: settings.tf32 || precision == cnnbench_engine::Precision::Tf32,
        channels_last: settings.channels_last,
        performance_hint: settings.performance_hint,
        python: settings.python.clone(),
        compile_mode: settings.compile_mode,
        freezing: settings.freezing,
    }
}

/// The provider of the engine named `name`, or the engines there are.
pub fn find(name: &str) -> Result<Box<dyn Provider>> {
    let all = registry();
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    let names = names.join(", ");
    all.into_iter().find(|p| p.name() == name).ok_or_else(|| {
        anyhow!(
            "unknown engine \"{}\"; cnnbench knows: {names}",
            cnnbench_results::printable(name)
        )
    })
}

/// Creates the engine named `name`, or says why it cannot run here.
pub fn create(name: &str, options: &EngineOptions) -> Result<Box<dyn Engine>> {
    let provider = find(name)?;
    provider
        .availability(options)
        .map_err(|why| anyhow!("engine {name} cannot run: {why}"))?;
    if options.channels_last && !provider.channels_last() {
        return Err(anyhow!(
            "engine {name} cannot use channels-last memory: its tensors are always NCHW; leave out --channels-last, or use {}",
            engines_with(|p| p.channels_last())
        ));
    }
    if !options.performance_hint.is_latency() && !provider.performance_hints() {
        return Err(anyhow!(
            "engine {name} takes no performance hint: it runs one batch at a time; leave out --ov-hint {}, or use {}",
            options.performance_hint.as_str(),
            engines_with(|p| p.performance_hints())
        ));
    }
    if (!options.compile_mode.is_default() || options.freezing) && !provider.compiles() {
        return Err(anyhow!(
            "engine {name} does not compile the network: --compile-mode and --freezing are for {}",
            engines_with(|p| p.compiles())
        ));
    }
    if options.python.is_some() && !provider.runs_python() {
        return Err(anyhow!(
            "engine {name} runs no Python: --python is for {}",
            engines_with(|p| p.runs_python())
        ));
    }
    let engine = provider.create(options)?;
    // An engine's caveat about its numbers (a GPU engine on a CPU renderer) is said now.
    if let Some(warning) = engine.info().settings.get("warning") {
        eprintln!("warning: {warning}");
    }
    Ok(engine)
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
    let provider = data_parallel_provider(name)?;
    provider
        .availability(options)
        .map_err(|why| anyhow!("engine {name} cannot run: {why}"))?;
    let Some(data_parallel) = provider.data_parallel() else {
        return Err(cannot_train_across_processes(name));
    };
    data_parallel.create(options, rendezvous)
}

/// The provider of `name` if it trains data-parallel; "unknown engine", "cannot run" and
/// "cannot train across processes" otherwise, in that order.
pub fn data_parallel_provider(name: &str) -> Result<Box<dyn Provider>> {
    let provider = find(name)?;
    if provider.data_parallel().is_none() {
        return Err(cannot_train_across_processes(name));
    }
    Ok(provider)
}

fn cannot_train_across_processes(name: &str) -> anyhow::Error {
    anyhow!(
        "engine {name} cannot train across processes; the engines that can: {}",
        engines_that_can()
    )
}

/// `a`, `a or b`, `a, b or c`.
/// The engines that have what a refused option asks for, as "a, b or c".
fn engines_with(has: impl Fn(&dyn Provider) -> bool) -> String {
    let all = registry();
    let can: Vec<&str> = all
        .iter()
        .filter(|p| has(p.as_ref()))
        .map(|p| p.name())
        .collect();
    or_list(&can)
}

fn or_list(names: &[&str]) -> String {
    joined(names, "or")
}

fn joined(names: &[&str], word: &str) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} {word} {last}", rest.join(", ")),
    }
}

/// The engines that train data-parallel, grouped by collective backend: those this
/// build can (`can`), or those it cannot.
fn data_parallel_groups(can: bool) -> Vec<(String, &'static str)> {
    let all = registry();
    let mut groups: Vec<(Vec<&'static str>, &'static str)> = Vec::new();
    for p in &all {
        let Some(dp) = p.data_parallel() else {
            continue;
        };
        if dp.refusal().is_none() != can {
            continue;
        }
        match groups
            .iter_mut()
            .find(|(_, backend)| *backend == dp.backend())
        {
            Some((names, _)) => names.push(p.name()),
            None => groups.push((vec![p.name()], dp.backend())),
        }
    }
    groups
        .into_iter()
        .map(|(names, backend)| (joined(&names, "and"), backend))
        .collect()
}

/// Which engines can train across processes (`run --distributed`/`--nproc`) with this
/// build, and on which collective backend, for refusals and `cnnbench engines`.
pub fn engines_that_can() -> String {
    let can = data_parallel_groups(true);
    if can.is_empty() {
        let would: Vec<String> = data_parallel_groups(false)
            .into_iter()
            .map(|(names, backend)| format!("{names} on {backend}"))
            .collect();
        return format!(
            "none in this build ({}, in a build with them)",
            would.join("; ")
        );
    }
    let can: Vec<String> = can
        .into_iter()
        .map(|(names, backend)| format!("{names} ({backend})"))
        .collect();
    can.join("; ")
}

/// The line under `cnnbench engines`' table: which engines train data-parallel, and
/// why the others of a build that has some cannot.
fn data_parallel_line() -> String {
    let mut line = format!(
        "Data-parallel training (run --distributed, --nproc): {}",
        engines_that_can()
    );
    if !data_parallel_groups(true).is_empty() {
        for p in registry().iter() {
            if let Some(why) = p.data_parallel().and_then(|dp| dp.refusal()) {
                line.push_str(&format!("; not {}: {why}", p.name()));
                // The first says it for the engines on the same backend.
                break;
            }
        }
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
    for provider in registry().iter().filter(|p| p.asks_a_device()) {
        let Some((heading, devices)) = provider.listed_devices() else {
            continue;
        };
        println!("\n{heading} ({}):", provider.name());
        if devices.is_empty() {
            println!("  none");
        }
        for (i, device) in devices.iter().enumerate() {
            println!("  {i}: {device}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_names_each_engine_once_and_finds_each_by_name() {
        let all = registry();
        let mut names: Vec<&str> = all.iter().map(|p| p.name()).collect();
        for expected in [
            "burn-flex",
            "candle",
            "tract",
            "ort-cpu",
            "torch-cpu",
            "torch-cuda",
        ] {
            assert!(names.contains(&expected), "{names:?}");
        }
        let count = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), count, "a name twice: {names:?}");
        for name in &names {
            assert_eq!(find(name).map(|p| p.name()).ok(), Some(*name));
        }
        let e = find("burn_flex")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("unknown engine \"burn_flex\"; cnnbench knows: burn-flex"),
            "{e}"
        );
    }

    #[test]
    fn an_engine_out_of_this_build_says_so_in_one_wording() {
        let all = statuses();
        for (name, built) in [
            ("tract", cfg!(feature = "tract")),
            ("ort-cpu", cfg!(feature = "ort")),
            ("openvino-cpu", cfg!(feature = "openvino")),
            ("torch-cpu", cfg!(feature = "torch")),
            ("candle", cfg!(feature = "candle")),
        ] {
            let status = all.iter().find(|s| s.name == name);
            let Some(status) = status else {
                panic!("{name} is not in the registry")
            };
            if !built {
                let why = status.available.clone().err().unwrap_or_default();
                assert!(
                    why.starts_with("not in this build: build with `"),
                    "{name}: {why}"
                );
                // Creating it says which engine, then why.
                let e = create(name, &EngineOptions::default())
                    .err()
                    .map(|e| e.to_string());
                assert_eq!(e, Some(format!("engine {name} cannot run: {why}")));
            }
        }
    }

    #[test]
    fn channels_last_is_refused_naming_the_engines_that_have_it() {
        let options = EngineOptions {
            channels_last: true,
            ..EngineOptions::default()
        };
        let e = create("burn-flex", &options)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("engine burn-flex cannot use channels-last memory"),
            "{e}"
        );
        assert!(
            e.ends_with(
                "or use torch-cpu, torch-cuda, torch-cuda-nocudnn, pytorch, pytorch-compile, pytorch-cuda or pytorch-compile-cuda"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_performance_hint_is_refused_by_engines_without_one() {
        let options = EngineOptions {
            performance_hint: cnnbench_engine::PerformanceHint::Throughput,
            ..EngineOptions::default()
        };
        let e = create("burn-flex", &options)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            e,
            "engine burn-flex takes no performance hint: it runs one batch at a time; leave out --ov-hint throughput, or use openvino-cpu"
        );
    }

    #[test]
    fn engines_that_cannot_train_data_parallel_are_refused_with_those_that_can() {
        let e = data_parallel_provider("burn-flex")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("engine burn-flex cannot train across processes; the engines that can: "),
            "{e}"
        );
        assert!(e.contains("torch-cpu"), "{e}");
        assert!(data_parallel_provider("torch-cpu").is_ok());
        assert_eq!(joined(&["a", "b", "c"], "and"), "a, b and c");
        assert_eq!(or_list(&["a"]), "a");
    }
}
