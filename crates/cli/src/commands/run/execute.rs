//! Measuring a job: the models resolved first (a typo fails in a second, not an hour
//! in), the memory checked, then every point in order, each result written as it
//! finishes; Ctrl-C keeps what finished and says what did not run.

use super::job::{Job, Role};
use super::table::{print_table, print_validity, progress_bar};
use super::{probe, REQUIRE_CLEAN_FAILED};
use crate::commands::common::{bytes, file_model, zoo_model, ImageSize};
use crate::commands::{distributed, engines};
use anyhow::{anyhow, Result};
use cnnbench_bench::harness::{self, RunRequest};
use cnnbench_bench::quantize::{calibrate, Calibration};
use cnnbench_bench::result::{BenchResult, ToolInfo};
use cnnbench_bench::{env, memory, output, HarnessError, Quantity};
use cnnbench_engine::{Capabilities, DeviceKind, Mode};
use cnnbench_graph::{Graph, Weights};
use cnnbench_results::scenario::ScenarioSpec;
use cnnbench_results::{Batches, ModelRef, RunSpec};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// A model resolved before anything runs, at one image size.
pub struct Planned {
    pub graph: Graph,
    /// `zoo` or the model file, as the result records it.
    pub source: String,
    pub model: ModelRef,
    /// The size asked for; `None`: the model's own.
    pub size: Option<ImageSize>,
}

/// Every model at every requested image size, model by model (in the order given),
/// each at every size in the order given.
fn plan(spec: &RunSpec) -> Result<Vec<Planned>> {
    let sizes: Vec<Option<ImageSize>> = match &spec.image_sizes {
        Some(list) => list.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    // Resolved size by size, as a typo in a model or a size it cannot take should fail
    // before anything runs.
    let mut by_size: Vec<std::vec::IntoIter<Planned>> = Vec::new();
    for size in sizes {
        let mut at_size = Vec::new();
        for model in &spec.models {
            let (graph, source) = match model {
                ModelRef::Zoo { name } => (zoo_model(name, size)?, "zoo".to_string()),
                ModelRef::File { path, .. } => {
                    (file_model(path, size)?, path.display().to_string())
                }
            };
            at_size.push(Planned {
                graph,
                source,
                model: model.clone(),
                size,
            });
        }
        by_size.push(at_size.into_iter());
    }
    let mut planned = Vec::new();
    loop {
        let round: Vec<Planned> = by_size.iter_mut().filter_map(Iterator::next).collect();
        if round.is_empty() {
            return Ok(planned);
        }
        planned.extend(round);
    }
}

/// Compares the memory estimate with the memory of the engine's device: what the host
/// can still hand out for a CPU engine, the GPU's memory for a GPU engine.
fn check_memory(
    planned: &[Planned],
    (mode, batch, scenario): (Mode, usize, Option<&ScenarioSpec>),
    force: bool,
    (available, of_what): (u64, &str),
    device_total: Option<u64>,
) -> Result<()> {
    // A scenario's sessions (one per query in flight, the batcher's larger ones) are all
    // prepared before its first query: the check counts every one.
    let sessions = memory::session_batches(batch, scenario).len();
    let held = if sessions > 1 {
        format!(" with its {sessions} sessions (--in-flight, --max-batch)")
    } else {
        String::new()
    };
    let fewer = if sessions > 1 {
        " or fewer sessions"
    } else {
        ""
    };
    for p in planned {
        let need = memory::estimate_run_bytes(&p.graph, mode, batch, scenario);
        if need >= memory::BEYOND_ANY_MACHINE {
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode{held} would need about {}, more than any machine has (--force cannot help): use a smaller batch size",
                p.graph.name(),
                bytes(need)
            ));
        }
        // --force is for an estimate near the edge; past twice the device's whole memory
        // the run can only end in an allocation abort (exit 134) or the OOM killer.
        if let Some(total) = device_total.filter(|&t| force && t > 0 && need / 2 > t) {
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode{held} would need about {}, more than twice this device's {} of memory (--force cannot help): use a smaller batch size{fewer}",
                p.graph.name(),
                bytes(need),
                bytes(total)
            ));
        }
    }
    if available == 0 || force {
        return Ok(());
    }
    for p in planned {
        let need = memory::estimate_run_bytes(&p.graph, mode, batch, scenario);
        if need > available {
            let advice = match scenario.filter(|_| sessions > 1) {
                // Fewer queries in flight, each worker with its batcher's sessions.
                Some(scenario) => {
                    let one_worker = ScenarioSpec {
                        in_flight: 1,
                        ..scenario.clone()
                    };
                    let each = memory::estimate_run_bytes(&p.graph, mode, batch, Some(&one_worker));
                    match available / each.max(1) {
                        0 if scenario.batcher.is_some() => {
                            "not even one query in flight fits: use a smaller --max-batch"
                                .to_string()
                        }
                        0 => "not even one session fits".to_string(),
                        n => format!("--in-flight {n} fits"),
                    }
                }
                None => match memory::largest_batch_that_fits(&p.graph, mode, available) {
                    0 => "not even batch 1 fits".to_string(),
                    fits => format!("--batch-size {fits} fits"),
                },
            };
            // Two sizes that round alike are told apart in bytes.
            let (need_text, available_text) = match (bytes(need), bytes(available)) {
                (n, a) if n == a => (format!("{need} bytes"), format!("{available} bytes")),
                pair => pair,
            };
            return Err(anyhow!(
                "{} at batch {batch} in {mode} mode{held} needs about {need_text} but {available_text} ({of_what}) is available; {advice}, or pass --force to try anyway",
                p.graph.name(),
            ));
        }
    }
    Ok(())
}

/// `--memory-limit` is what the device is taken to have: a run whose process peaked above
/// it (the estimate is rough, an engine may hold more) did not run within it, and says so.
fn over_memory_limit(limit: Option<u64>, result: &BenchResult) -> Option<String> {
    let limit = limit?;
    let peak = result
        .memory
        .device_peak_bytes
        .or(result.memory.host_peak_bytes())?;
    (peak > limit).then(|| {
        format!(
            "the run peaked at {} of memory, above --memory-limit {}: it did not fit the memory it was to be measured within (use a smaller batch, fewer sessions, or a larger limit)",
            bytes(peak),
            bytes(limit)
        )
    })
}

/// The memory a batch must fit in, and where that number comes from: `--memory-limit`,
/// else what the host can still hand out (CPU engines) or the GPU's memory.
fn available_memory(spec: &RunSpec, caps: &Capabilities) -> (u64, &'static str) {
    match (spec.memory_limit_bytes, caps.device) {
        (Some(limit), _) => (limit, "--memory-limit"),
        (None, DeviceKind::Cpu) => (env::available_memory(), "host memory available"),
        (None, DeviceKind::Gpu) => (caps.device_memory.unwrap_or(0), "GPU memory"),
    }
}

/// Measures a job (the spec is valid: [`RunSpec::validate`] ran).
pub fn execute(mut job: Job) -> Result<ExitCode> {
    let spec = &job.spec;
    let role = job.role;
    let mode = spec.mode;
    let planned = plan(spec)?;
    let mut options = engines::options(&spec.engine_options, spec.threads, spec.precision);
    // Several queries in flight: sessions that divide the threads get their share.
    if let Some((threads_each, _)) = engines::queries_in_flight(spec)? {
        options.threads = threads_each;
        options.sessions_side_by_side = spec.scenario.as_ref().map_or(1, |s| s.in_flight);
    }
    let data_parallel = spec.data_parallel.as_ref().filter(|_| role == Role::Rank);
    let (engine, group) = match data_parallel {
        Some(dp) => {
            let env: BTreeMap<String, String> = std::env::vars().collect();
            let timeout = harness::duration(Some(dp.timeout_s)).unwrap_or(Duration::from_secs(300));
            let rendezvous = distributed::rendezvous_from_env(&env, timeout)?;
            // As torchrun's users do: each rank of a machine on its own GPU.
            if spec.engine_options.device.is_none() {
                options.device = Some(rendezvous.local_rank);
            }
            let (engine, group) =
                engines::create_data_parallel(&spec.engine, &options, &rendezvous)?;
            distributed::hold_for_failure(&group);
            (engine, Some(group))
        }
        None => (engines::create(&spec.engine, &options)?, None),
    };
    // Rank 0 speaks for the job: the others write and print nothing but their errors.
    let rank = group.as_ref().map_or(0, |g| g.info().rank);
    if rank != 0 {
        job.delivery.quiet = true;
        job.delivery.json = false;
    }
    let spec = &job.spec;
    let caps = engine.capabilities();
    caps.check(&spec.engine, mode, spec.precision)
        .map_err(|e| anyhow!("{e}: choose one with --mode/--precision, or another engine (`cnnbench engines` lists what each can do)"))?;
    let available = available_memory(spec, &caps);
    let device_total = match caps.device {
        DeviceKind::Cpu => cnnbench_host::memory_bytes(),
        DeviceKind::Gpu => caps.device_memory,
    };
    if role == Role::Probe {
        return probe::probe_memory(&job, engine.as_ref(), &planned);
    }
    let delivery = &job.delivery;
    if let Batches::Sizes(batches) = &spec.batch {
        for &batch in batches {
            check_memory(
                &planned,
                (mode, batch, spec.scenario.as_ref()),
                delivery.force,
                available,
                device_total,
            )?;
        }
    }
    // Where the results go is checked before anything runs, after what can refuse the
    // run without touching the disk (a refused run leaves no folder behind).
    if rank == 0 {
        output::check_writable(&delivery.output)?;
    }

    let cancel = crate::commands::common::stop_on_ctrl_c();
    let tool = tool();
    // The best rate and the ceilings `cnnbench peak` cached for this engine in this
    // precision, for "% of peak" and "% of roof".
    let (peak, ceilings) = cnnbench_bench::peak::cached_yardsticks(&engine.info(), spec.precision);
    // This machine's run-to-run noise, when `cnnbench noise` has measured it: recorded in
    // every result, for `compare` of one run a side.
    let run_noise = cnnbench_bench::noise::default_cache_dir()
        .and_then(|dir| cnnbench_bench::noise::load(&dir, &cnnbench_bench::env::detect_machine()));
    let mut results: Vec<(BenchResult, PathBuf)> = Vec::new();
    // Results that could not be written where asked (kept elsewhere).
    let mut unwritten = 0usize;
    let points_per_model = match &spec.batch {
        Batches::Sizes(b) => b.len(),
        Batches::Max => 1,
    };
    let points = planned.len() * points_per_model;
    let mut point = 0;
    // What a Ctrl-C leaves undone: the points after `done` of model `i`, and every
    // later model.
    let one_point_per_model =
        points_per_model == 1 && spec.image_sizes.as_ref().is_none_or(|s| s.len() == 1);
    let not_run = |i: usize, done: usize| -> String {
        if one_point_per_model {
            let names: Vec<&str> = planned[i..].iter().map(|p| p.graph.name()).collect();
            return names.join(", ");
        }
        let mut left = Vec::new();
        for (k, p) in planned.iter().enumerate().skip(i) {
            let [_, h, w] = p.graph.input_shape();
            match &spec.batch {
                Batches::Sizes(b) => {
                    let skip = if k == i { done } else { 0 };
                    left.extend(
                        b.iter()
                            .skip(skip)
                            .map(|b| format!("{} ({h}×{w}, batch {b})", p.graph.name())),
                    );
                }
                Batches::Max => left.push(format!("{} ({h}×{w}, batch max)", p.graph.name())),
            }
        }
        left.join(", ")
    };
    let interrupted = |results: &[(BenchResult, PathBuf)], left: String| {
        if !delivery.json {
            print_table(results);
        }
        errln!(
            "interrupted: kept {} finished result(s); not run: {left}",
            results.len()
        );
        ExitCode::from(130)
    };
    for (i, p) in planned.iter().enumerate() {
        let calibration = calibration_for(&job, p)?;
        let (batches, search) = match &spec.batch {
            Batches::Sizes(b) => (b.clone(), None),
            Batches::Max => match probe::find_max_batch(&job, p, available, &cancel) {
                Ok(search) => (vec![search.chosen], Some(search)),
                Err(e) if e.downcast_ref::<HarnessError>().is_some() => {
                    return Ok(interrupted(&results, not_run(i, 0)));
                }
                Err(e) => return Err(e),
            },
        };
        for (done, batch_size) in batches.into_iter().enumerate() {
            let request = RunRequest {
                batch_search: search.clone(),
                peak: peak.clone(),
                ceilings: ceilings.clone(),
                calibration: calibration.clone(),
                ..point_request(&job, p, batch_size, tool.clone())
            };
            let bar = progress_bar(
                delivery.quiet,
                &p.graph,
                point,
                points,
                spec.warmup + spec.passes,
            );
            point += 1;
            let mut retried = Vec::new();
            let outcome = loop {
                let outcome = harness::run(
                    engine.as_ref(),
                    &p.graph,
                    &request,
                    &cancel,
                    &mut |progress| {
                        bar.set_length(progress.of as u64);
                        bar.set_position(progress.pass as u64);
                        if progress.warmup {
                            bar.set_message("warm-up");
                        } else if retried.is_empty() {
                            bar.set_message("");
                        } else {
                            bar.set_message(format!("retry {}", retried.len()));
                        }
                    },
                );
                match outcome {
                    Ok(mut result) => match retry_record(&result) {
                        Some(attempt) if retried.len() < delivery.retries => {
                            bar.suspend(|| {
                                errln!(
                                    "{}: attempt {} was disturbed ({}); running it again",
                                    p.graph.name(),
                                    retried.len() + 1,
                                    attempt.reasons.join("; ")
                                )
                            });
                            retried.push(attempt);
                            bar.reset();
                        }
                        _ => {
                            if let Some(v) = result.validity.as_mut() {
                                v.retried = std::mem::take(&mut retried);
                            }
                            break Ok(result);
                        }
                    },
                    Err(e) => break Err(e),
                }
            };
            bar.finish_and_clear();
            // A rank's result goes to rank 0, which writes the job's.
            let outcome = match (outcome, &group) {
                (Ok(result), Some(group)) => cnnbench_bench::distributed::gather_ranks(
                    group.as_ref(),
                    &format!("result/{point}"),
                    result,
                )
                .map(|merged| merged.ok_or(())),
                (outcome, _) => outcome.map(Ok),
            };
            match outcome {
                Ok(Err(())) => {}
                Ok(Ok(mut result)) => {
                    result.run_noise = run_noise.clone();
                    if let Some(warning) = over_memory_limit(spec.memory_limit_bytes, &result) {
                        result.warnings.push(warning);
                    }
                    // A measurement that cannot be written where asked is kept elsewhere
                    // (the error says where); the run goes on and ends with failure.
                    let path = match output::write_result(&delivery.output, &result) {
                        Ok(path) => {
                            if !delivery.quiet {
                                errln!("{}: wrote {}", p.graph.name(), path.display());
                            }
                            path
                        }
                        Err(e) => {
                            bar.suspend(|| errln!("error: {}: {e:#}", p.graph.name()));
                            unwritten += 1;
                            PathBuf::new()
                        }
                    };
                    if !delivery.quiet {
                        for w in &result.warnings {
                            errln!("warning: {}: {w}", p.graph.name());
                        }
                    }
                    if delivery.json {
                        outln!("{}", serde_json::to_string_pretty(&result)?);
                    }
                    results.push((result, path));
                }
                Err(e) if e.downcast_ref::<HarnessError>().is_some() => {
                    return Ok(interrupted(&results, not_run(i, done)));
                }
                Err(e) => return Err(e),
            }
        }
    }
    if let Some(group) = group {
        // Every rank leaves together, then the process group goes before the store.
        group.barrier()?;
        distributed::leave();
        drop(engine);
        drop(group);
    }
    if !delivery.json && rank == 0 {
        print_table(&results);
    }
    if rank == 0 {
        print_validity(&results, delivery.quiet && !delivery.json);
        if unwritten > 0 {
            errln!(
                "error: {unwritten} of {} result(s) could not be written under {} (where each was kept is said above)",
                results.len(),
                delivery.output.display()
            );
            return Ok(ExitCode::FAILURE);
        }

        if let Some(code) = require_clean_failure(&results, delivery.require_clean) {
            return Ok(code);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `--require-clean`'s exit status when a result was measured on a disturbed machine,
/// said in one line; `None` when it passes (or was not asked for).
pub fn require_clean_failure(
    results: &[(BenchResult, PathBuf)],
    require_clean: bool,
) -> Option<ExitCode> {
    let disturbed = results
        .iter()
        .filter(|(r, _)| r.validity.as_ref().is_some_and(|v| v.is_disturbed()))
        .count();
    (require_clean && disturbed > 0).then(|| {
        errln!(
            "error: {disturbed} of {} result(s) were measured on a disturbed machine (--require-clean); their files are kept, marked disturbed",
            results.len()
        );
        ExitCode::from(REQUIRE_CLEAN_FAILED)
    })
}

/// This build, as results record it.
pub fn tool() -> ToolInfo {
    ToolInfo {
        name: "cnnbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: Some(env!("CNNBENCH_GIT_COMMIT").to_string()).filter(|s| !s.is_empty()),
    }
}

/// The harness's request for one point of a job: the point of its spec, the job's label
/// and round.
pub fn point_request(job: &Job, p: &Planned, batch_size: usize, tool: ToolInfo) -> RunRequest {
    RunRequest {
        model_source: p.source.clone(),
        label: job.delivery.label.clone(),
        // A rank's siblings, started by the same launcher, are part of the job.
        process_tree_root: (job.role == Role::Rank).then(std::os::unix::process::parent_id),
        round: job.delivery.round,
        // Checked before the engine started ([`engines::check_spec`]).
        serving: engines::queries_in_flight(&job.spec)
            .ok()
            .flatten()
            .map(|(_, words)| words),
        ..RunRequest::new(job.spec.point(&p.model, p.size, batch_size), tool)
    }
}

/// An int8 run's calibration of one model: its activation ranges measured in f32 by the
/// kit's interpreter on burn-flex, with the weights the int8 engine starts from (the
/// seed's). `None` for every other precision.
pub fn calibration_for(job: &Job, p: &Planned) -> Result<Option<Calibration>> {
    let spec = &job.spec;
    let Some(reference) = engines::int8_reference(spec.precision, spec.threads)? else {
        return Ok(None);
    };
    let weights = Weights::initial(&p.graph, spec.seed);
    calibrate(
        reference.as_ref(),
        &p.graph,
        &weights,
        spec.seed,
        spec.effective_calibration_images(),
    )
    .map(Some)
}

/// The record of a disturbed attempt, to run it again; `None` for a clean one.
fn retry_record(result: &BenchResult) -> Option<cnnbench_results::validity::RetriedAttempt> {
    let v = result.validity.as_ref().filter(|v| v.is_disturbed())?;
    let total = result.summary.get(&Quantity::Total)?;
    Some(cnnbench_results::validity::RetriedAttempt {
        reasons: v.reasons.clone(),
        median_total_s: total.median,
        passes: total.count,
    })
}
