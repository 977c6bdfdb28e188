//! `cnnbench engines`, and the registry: the one list of every engine's provider. No
//! engine is named here: each crate says what it is, built in or not.

use anyhow::{anyhow, Result};
pub use cnnbench_engine::provider::EngineOptions;
use cnnbench_engine::provider::{ConcurrentServing, Provider};
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

/// What each engine of the build sets up in the process before any thread starts.
pub fn before_threads_start() {
    for provider in registry() {
        provider.before_threads_start();
    }
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
        settings: settings.settings.clone(),
        sessions_side_by_side: 1,
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

/// What a provider refuses of these options before anything starts: channels-last on
/// an engine whose tensors are always NCHW, and own settings it does not declare or
/// whose values it does not take. The one place options are refused; the refusal names
/// the engines that have what was asked for.
pub fn refusal(provider: &dyn Provider, options: &EngineOptions) -> Result<()> {
    let name = provider.name();
    if options.channels_last && !provider.channels_last() {
        return Err(anyhow!(
            "engine {name} cannot use channels-last memory: its tensors are always NCHW; leave out --channels-last, or use {}",
            engines_with(|p| p.channels_last())
        ));
    }
    if let Err(why) = (provider.settings().check)(&options.settings) {
        let declared = (provider.settings().declared)();
        let unknown = options
            .settings
            .keys()
            .find(|key| !declared.iter().any(|d| d.key == key.as_str()));
        let elsewhere = match unknown {
            Some(key) => {
                let has = engines_with(|p| {
                    (p.settings().declared)()
                        .iter()
                        .any(|d| d.key == key.as_str())
                });
                if has.is_empty() {
                    " (no engine has it; `cnnbench engines` lists each engine's settings)"
                        .to_string()
                } else {
                    format!(
                        " (`{}` is a setting of {has})",
                        cnnbench_results::printable(key)
                    )
                }
            }
            None => String::new(),
        };
        return Err(anyhow!("engine {name}: {why}{elsewhere}"));
    }
    Ok(())
}

/// The settings of a spec checked against its engine's provider, before anything runs
/// (an unknown engine is refused with the list of engines).
pub fn check_spec(spec: &cnnbench_results::RunSpec) -> Result<()> {
    let provider = find(&spec.engine)?;
    refusal(
        provider.as_ref(),
        &options(&spec.engine_options, spec.threads, spec.precision),
    )?;
    queries_in_flight(spec).map(|_| ())
}

/// How `spec`'s engine serves its scenario's queries in flight (`--in-flight N`): the
/// threads each session gets and the words the result records; `None` for one query
/// at a time. Refuses an engine that serves one at a time.
pub fn queries_in_flight(
    spec: &cnnbench_results::RunSpec,
) -> Result<Option<(Option<usize>, String)>> {
    let in_flight = spec.scenario.as_ref().map_or(1, |s| s.in_flight);
    if in_flight <= 1 {
        return Ok(None);
    }
    let provider = find(&spec.engine)?;
    let name = provider.name();
    let serving = provider.concurrent_serving();
    let threads_each = serving.threads_each(spec.threads, in_flight);
    let words = match serving {
        ConcurrentServing::OneAtATime(why) => {
            return Err(anyhow!(
                "engine {name} serves one query at a time ({why}): leave out --in-flight, or use {}",
                engines_with(|p| !matches!(p.concurrent_serving(), ConcurrentServing::OneAtATime(_)))
            ))
        }
        ConcurrentServing::SessionsSplitTheThreads => {
            let total = spec
                .threads
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let each = threads_each.unwrap_or(1);
            let shared = if each * in_flight > total {
                format!(", {} threads on {total}: more than there are", each * in_flight)
            } else {
                String::new()
            };
            format!(
                "{in_flight} sessions of {name} side by side, each with its own copy of the network and {each} of the {total} threads{shared}; a query waits while every session is busy"
            )
        }
        ConcurrentServing::SessionsShareOnePool => format!(
            "{in_flight} sessions of {name} side by side, each with its own copy of the network, computing on the process's one pool ({}); a query waits while every session is busy",
            spec.threads.map_or("a thread per core".to_string(), |t| format!("{t} threads"))
        ),
    };
    Ok(Some((threads_each, words)))
}

/// The settings of `spec` that name a program its engine runs (the pytorch engines'
/// Python), as key and value: never taken from a file someone hands the user.
pub fn program_settings(spec: &cnnbench_results::RunSpec) -> Vec<(String, String)> {
    let Ok(provider) = find(&spec.engine) else {
        return Vec::new();
    };
    let declared = (provider.settings().declared)();
    spec.engine_options
        .settings
        .iter()
        .filter(|(key, _)| declared.iter().any(|d| d.program && d.key == key.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The keys of the own settings the engine named `name` declares.
pub fn declared_keys(name: &str) -> Result<Vec<String>> {
    Ok((find(name)?.settings().declared)()
        .into_iter()
        .map(|d| d.key.to_string())
        .collect())
}

/// The f32 engine an int8 measurement calibrates on (burn-flex, on `threads`), as `run`
/// calibrates; `None` outside int8.
pub fn int8_reference(
    precision: cnnbench_engine::Precision,
    threads: Option<usize>,
) -> Result<Option<Box<dyn Engine>>> {
    if precision != cnnbench_engine::Precision::Int8 {
        return Ok(None);
    }
    let options = EngineOptions {
        threads,
        ..EngineOptions::default()
    };
    create(cnnbench_engine_burn::ENGINE_NAME, &options).map(Some)
}

/// Creates the engine named `name`, or says why it cannot run here.
pub fn create(name: &str, options: &EngineOptions) -> Result<Box<dyn Engine>> {
    let provider = find(name)?;
    refusal(provider.as_ref(), options)?;
    provider
        .availability(options)
        .map_err(|why| anyhow!("engine {name} cannot run: {why}"))?;
    let engine = provider.create(options)?;
    // An engine's caveat about its numbers (a GPU engine on a CPU renderer) is said now.
    if let Some(warning) = engine.info().settings.get("warning") {
        errln!("warning: {warning}");
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
    refusal(provider.as_ref(), options)?;
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

/// Each engine's own settings, as `cnnbench engines` lists them under its table: the
/// key, its own flag where it has one, its values and default, what it does (engines
/// with the same settings listed together).
pub fn settings_listing() -> String {
    let mut groups: Vec<(
        Vec<&'static str>,
        Vec<cnnbench_engine::settings::SettingDoc>,
    )> = Vec::new();
    for provider in registry() {
        let declared = (provider.settings().declared)();
        if declared.is_empty() {
            continue;
        }
        match groups.iter_mut().find(|(_, d)| *d == declared) {
            Some((names, _)) => names.push(provider.name()),
            None => groups.push((vec![provider.name()], declared)),
        }
    }
    let mut text =
        String::from("\nEngine settings (--engine-setting KEY=VALUE, or the flag in brackets):\n");
    for (names, declared) in groups {
        text.push_str(&format!("  {}:\n", names.join(", ")));
        for d in declared {
            let flag = d.flag.map_or(String::new(), |f| format!(" [--{f}]"));
            text.push_str(&format!(
                "    {}{flag}: {}; default: {}\n",
                d.key, d.values, d.default
            ));
            for line in wrapped(d.doc, 82) {
                text.push_str(&format!("      {line}\n"));
            }
        }
    }
    text
}

/// Words in lines of at most `width` characters (a longer word alone on its line).
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The widest line `cnnbench engines` prints: the table and everything under it fit
/// an ordinary terminal.
const LISTING_WIDTH: usize = 100;

/// The table's Available cell: `yes`, or `no` and the reason's first words (what comes
/// before its first `:`, `(` or `;`, cut to a few words); the whole reason, with what to
/// install, follows under the table.
fn available_cell(available: &Result<(), String>) -> String {
    const MOST: usize = 12;
    let Err(why) = available else {
        return "yes".to_string();
    };
    let head = why.split([':', '(', ';']).next().unwrap_or_default().trim();
    if head == "not in this build" {
        return "no: not built".to_string();
    }
    let mut short = String::new();
    for word in head.split_whitespace() {
        let wider = short.chars().count() + usize::from(!short.is_empty()) + word.chars().count();
        if wider > MOST {
            short.push('…');
            break;
        }
        if !short.is_empty() {
            short.push(' ');
        }
        short.push_str(word);
    }
    if short.is_empty() || short == "…" {
        "no".to_string()
    } else {
        format!("no: {short}")
    }
}

/// What each engine is, and for each that cannot run here, the whole reason with what
/// to install: once per engine, under the table, wrapped to [`LISTING_WIDTH`].
fn engines_listing(statuses: &[EngineStatus]) -> String {
    let mut text =
        String::from("\nWhat each engine is, and what the ones this build cannot run here need:\n");
    for s in statuses {
        for (i, line) in wrapped(&format!("{}: {}", s.name, s.description), LISTING_WIDTH - 2)
            .into_iter()
            .enumerate()
        {
            let indent = if i == 0 { "  " } else { "    " };
            text.push_str(&format!("{indent}{line}\n"));
        }
        if let Err(why) = &s.available {
            for line in wrapped(&format!("not here: {why}"), LISTING_WIDTH - 4) {
                text.push_str(&format!("    {line}\n"));
            }
        }
    }
    text
}

pub fn run() -> Result<ExitCode> {
    let mut table = super::common::new_table(&["Engine", "Available", "Modes", "Precisions"]);
    let statuses = statuses();
    for s in &statuses {
        table.add_row(vec![
            s.name.to_string(),
            available_cell(&s.available),
            s.capabilities.modes_text(),
            // Without spaces: the widest list (the CUDA engines') keeps the table in
            // LISTING_WIDTH.
            s.capabilities.precisions_text().replace(", ", ","),
        ]);
    }
    outln!("{table}");
    out!("{}", engines_listing(&statuses));
    outln!();
    for line in wrapped(&data_parallel_line(), LISTING_WIDTH) {
        outln!("{line}");
    }
    out!("{}", settings_listing());
    for provider in registry().iter().filter(|p| p.asks_a_device()) {
        let Some((heading, devices)) = provider.listed_devices() else {
            continue;
        };
        outln!("\n{heading} ({}):", provider.name());
        if devices.is_empty() {
            outln!("  none");
        }
        for (i, device) in devices.iter().enumerate() {
            outln!("  {i}: {device}");
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

    fn with_settings(pairs: &[(&str, &str)]) -> EngineOptions {
        EngineOptions {
            settings: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..EngineOptions::default()
        }
    }

    fn refused(name: &str, options: &EngineOptions) -> String {
        let provider = find(name).unwrap();
        refusal(provider.as_ref(), options)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    /// An engine's own setting given to an engine without it is refused before anything
    /// starts, naming what this engine takes and which engines have the setting.
    #[test]
    fn an_own_setting_is_refused_by_engines_without_it() {
        assert_eq!(
            refused("burn-flex", &with_settings(&[("hint", "throughput")])),
            "engine burn-flex: it has no setting `hint`: it has no settings of its own (`hint` is a setting of openvino-cpu)"
        );
        assert_eq!(
            refused("pytorch", &with_settings(&[("compile-mode", "max-autotune")])),
            "engine pytorch: it has no setting `compile-mode`: its settings are python (`compile-mode` is a setting of pytorch-compile or pytorch-compile-cuda)"
        );
        assert_eq!(
            refused("openvino-cpu", &with_settings(&[("stream", "2")])),
            "engine openvino-cpu: it has no setting `stream`: its settings are hint, streams (no engine has it; `cnnbench engines` lists each engine's settings)"
        );
        assert_eq!(
            refused("ort-cpu", &with_settings(&[("graph-optimization", "most")])),
            "engine ort-cpu: setting `graph-optimization`: \"most\" is not one of its values: all, extended, basic or disabled"
        );
        // Refused before the engine is looked for or started (ort-cpu is not in every build).
        let e = create("ort-cpu", &with_settings(&[("graph-optimization", "most")]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.starts_with("engine ort-cpu: setting `graph-optimization`"),
            "{e}"
        );
        for (name, pairs) in [
            (
                "openvino-cpu",
                &[("hint", "throughput"), ("streams", "4")][..],
            ),
            ("ort-cpu", &[("graph-optimization", "basic")][..]),
            (
                "pytorch-compile",
                &[("compile-mode", "max-autotune"), ("freezing", "true")][..],
            ),
            ("pytorch", &[("python", "/usr/bin/python3")][..]),
        ] {
            assert_eq!(refused(name, &with_settings(pairs)), "", "{name}");
        }
    }

    /// Every declared setting's default reads back as that setting, and every engine's
    /// listing names each of its keys.
    #[test]
    fn every_declared_default_is_a_value_of_its_setting() {
        let listing = settings_listing();
        for provider in registry() {
            for d in (provider.settings().declared)() {
                assert!(listing.contains(&format!("    {}", d.key)), "{listing}");
                if d.default == "the engine's own choice" {
                    continue;
                }
                let given = [(d.key.to_string(), d.default.clone())]
                    .into_iter()
                    .collect();
                let words = (provider.settings().check)(&given);
                assert_eq!(words, Ok(Vec::new()), "{} {}", provider.name(), d.key);
            }
        }
        assert!(
            listing.contains("  openvino-cpu:\n    hint [--ov-hint]: latency or throughput; default: latency\n      `latency` runs"),
            "{listing}"
        );
        // Engines with the same settings are listed together, once.
        assert!(
            listing.contains("  pytorch, pytorch-cuda:\n    python [--python]"),
            "{listing}"
        );
        assert!(
            listing.lines().all(|l| l.chars().count() <= 100),
            "{listing}"
        );
    }

    /// The first screen a new user asks for fits an ordinary terminal: a short reason in
    /// the table, the whole of it (with what to install) once per engine under it.
    #[test]
    fn the_listing_fits_a_hundred_columns_and_says_each_reason_once() {
        assert_eq!(available_cell(&Ok(())), "yes");
        assert_eq!(
            available_cell(&Err(
                "not in this build: build with `--features candle` (pure Rust)".into()
            )),
            "no: not built"
        );
        assert_eq!(
            available_cell(&Err(
                "no torch: the Python python3 (from PATH) has none; install it".into()
            )),
            "no: no torch"
        );
        assert_eq!(
            available_cell(&Err(
                "no CUDA GPU is visible (no NVIDIA GPU or driver here, or CUDA_VISIBLE_DEVICES hides them)".into()
            )),
            "no: no CUDA GPU…"
        );
        for (why, cell) in [
            (
                "no Python: the Python python3 cannot be run",
                "no: no Python",
            ),
            (
                "wrong torch: the Python python3 has torch 2.9.1",
                "no: wrong torch",
            ),
        ] {
            assert_eq!(available_cell(&Err(why.into())), cell);
        }
        for why in ["", "(nothing)", "averyveryverylongwordthatfitsnowhere"] {
            assert_eq!(available_cell(&Err(why.into())), "no", "{why}");
        }
        let all = statuses();
        let listing = engines_listing(&all);
        assert!(
            listing.lines().all(|l| l.chars().count() <= LISTING_WIDTH),
            "{listing}"
        );
        for s in &all {
            let said = listing.matches(&format!("  {}: ", s.name)).count();
            assert_eq!(said, 1, "{} in {listing}", s.name);
        }
        assert!(wrapped(&data_parallel_line(), LISTING_WIDTH)
            .iter()
            .all(|l| l.chars().count() <= LISTING_WIDTH));
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
