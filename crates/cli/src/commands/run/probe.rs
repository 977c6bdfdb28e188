//! `-b max`: the estimate, then probes — this same program given a probe job on its
//! standard input, one pass of one point, its memory printed as one JSON line.

use super::execute::Planned;
use super::job::{self, Delivery, Job, Role};
use crate::commands::common::bytes;
use crate::commands::sweep;
use anyhow::{anyhow, Result};
use cnnbench_bench::batch_search::{self, ProbeReport};
use cnnbench_bench::harness::{self, RunRequest};
use cnnbench_bench::result::BatchSearch;
use cnnbench_bench::{memory, HarnessError};
use cnnbench_engine::Engine;
use cnnbench_results::{Batches, ImageSize, ModelRef, RunSpec};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// The job of a probe at one batch: the run's engine and settings on one point, one
/// warm-up and one timed pass, nothing decided by time.
pub fn probe_job(
    spec: &RunSpec,
    model: &ModelRef,
    size: Option<ImageSize>,
    batch: usize,
    output: &std::path::Path,
) -> Job {
    let mut spec = spec.point(model, size, batch);
    spec.warmup = 1;
    spec.passes = 1;
    spec.min_time_s = None;
    spec.max_time_s = None;
    spec.target_ci_pct = None;
    spec.warmup_time_s = None;
    spec.data_parallel = None;
    // One pass at the batch tried, never a scenario's queries.
    spec.scenario = None;
    Job {
        spec,
        role: Role::Probe,
        delivery: Delivery {
            output: output.to_path_buf(),
            label: None,
            json: false,
            quiet: true,
            force: false,
            require_clean: false,
            retries: 0,
            round: None,
        },
    }
}

/// `-b max` for one model: prints what it tried so the user sees how the batch was
/// chosen.
pub fn find_max_batch(
    job: &Job,
    p: &Planned,
    (available, from): (u64, &str),
    cancel: &AtomicBool,
) -> Result<BatchSearch> {
    let quiet = job.delivery.quiet;
    if available == 0 {
        return Err(anyhow!(
            "-b max needs to know the device's memory and this engine does not report it: give --memory-limit"
        ));
    }
    let estimated = memory::largest_batch_that_fits(&p.graph, job.spec.mode, available);
    if !quiet {
        errln!(
            "{}: finding the largest batch that fits in {} ({from}); the estimate says {estimated}",
            p.graph.name(),
            bytes(available)
        );
        if cnnbench_host::allocator::current().policy == cnnbench_host::allocator::HeapPolicy::Keep
        {
            errln!(
                "note: the heap keeps freed memory (--allocator keep), so peaks vary between processes by a tenth or so; --allocator system gives a reproducible answer"
            );
        }
    }
    let search = batch_search::search_max_batch(estimated, available, from, &mut |batch| {
        let payload = job::encode(&probe_job(
            &job.spec,
            &p.model,
            p.size,
            batch,
            &job.delivery.output,
        ))?;
        let probe = sweep::run_probe(&payload, batch, available);
        // Ctrl-C reaches the probe too: its death is the interruption, not a verdict.
        if cancel.load(Ordering::SeqCst) {
            return Err(HarnessError::Interrupted.into());
        }
        let probe = probe?;
        if !quiet {
            errln!(
                "  batch {}",
                batch_search::describe(std::slice::from_ref(&probe))
            );
        }
        Ok(probe)
    })
    .map_err(|e| {
        if e.downcast_ref::<HarnessError>().is_some() {
            e
        } else {
            e.context(format!("-b max for {}", p.graph.name()))
        }
    })?;
    if !quiet {
        errln!(
            "{}: batch {} is the largest that fits ({} probes)",
            p.graph.name(),
            search.chosen,
            search.probes.len()
        );
    }
    Ok(search)
}

/// A probe job: one model, one batch, one pass; prints the memory it used as one JSON
/// line and writes no result. An engine error ends the process with it on stderr; an
/// allocation failure may abort it — the parent tells these apart.
pub fn probe_memory(job: &Job, engine: &dyn Engine, planned: &[Planned]) -> Result<ExitCode> {
    let (Some(p), Batches::Sizes(batches)) = (planned.first(), &job.spec.batch) else {
        return Err(anyhow!("a memory probe takes one model and one batch size"));
    };
    if planned.len() != 1 || batches.len() != 1 {
        return Err(anyhow!("a memory probe takes one model and one batch size"));
    }
    let request = RunRequest {
        calibration: super::execute::calibration_for(job, p)?,
        ..super::execute::point_request(job, p, batches[0], super::execute::tool())
    };
    let result = harness::run(
        engine,
        &p.graph,
        &request,
        &AtomicBool::new(false),
        &mut |_| {},
    )?;
    let report = ProbeReport {
        peak_rss_bytes: result.memory.host_peak_bytes(),
        device_peak_bytes: result.memory.device_peak_bytes,
    };
    outln!("{}", serde_json::to_string(&report)?);
    Ok(ExitCode::SUCCESS)
}
