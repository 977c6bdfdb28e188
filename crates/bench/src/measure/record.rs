//! What was timed, as a result: the session's own reports, the machine's validity, the
//! statistics and throughput, the warnings, and the record of what ran.

use super::prepare::Prepared;
use super::{Context, Timeline};
use crate::harness::{percentile_warning, spread_warnings};
use crate::memory;
use crate::result::*;
use crate::stats::Summary;
use crate::validity::Watch;
use crate::Quantity;
use anyhow::{anyhow, Result};
use chrono::{DateTime, Utc};
use cnnbench_engine::{DeviceKind, Mode};
use cnnbench_results::validity::ColdStart;
use std::collections::BTreeMap;
use std::time::Instant;

/// When the run began, by the wall clock and the monotonic one, and whether the peak
/// memory could be reset for it.
pub(crate) struct Started {
    at: DateTime<Utc>,
    clock: Instant,
    peak_rss_reset: bool,
}

impl Started {
    pub fn now() -> Started {
        let peak_rss_reset = memory::reset_peak_rss();
        Started {
            at: Utc::now(),
            clock: Instant::now(),
            peak_rss_reset,
        }
    }
}

/// The result of a run: what the session reports, then the statistics of the timeline.
pub(crate) fn record(
    ctx: &Context,
    started: Started,
    prepared: Prepared,
    timeline: Timeline,
    watch: Watch,
    process_to_first_timed_pass_s: Option<f64>,
) -> Result<BenchResult> {
    let (engine, graph, request, point) = (ctx.engine, ctx.graph, ctx.request, ctx.point());
    let mut prepared = prepared;
    let batch_size = prepared.batch_size;
    let session = &mut prepared.session;
    let group = session.data_parallel();
    let device_peak = session.device_peak_memory();
    let worker_peak_rss = session.worker_peak_rss();
    let mut reported_settings = session.reported_settings();
    let mut session_warnings = session.timed_pass_warnings()?;
    // A failure to read which kernels ran costs that record, not the measurement.
    match session.kernels_chosen() {
        Ok(kernels) => {
            reported_settings.extend(kernels.settings);
            session_warnings.extend(kernels.warnings);
        }
        Err(e) => session_warnings.push(format!(
            "which kernels ran was not recorded: asking the stack failed ({e:#})"
        )),
    }
    let cold_start = ColdStart {
        process_before_run_s: prepared.process_before_run_s,
        prepare_s: prepared.prepare_s,
        compile_s: prepared.compile_s,
        first_pass_s: prepared
            .first_pass_s
            .or(timeline.first_pass_s)
            .unwrap_or(0.0),
        process_to_first_timed_pass_s,
        first_in_process: prepared.first_in_process,
    };
    let call_floor_s = prepared.call_floor_s;
    drop(prepared);
    let on_gpu = engine.capabilities().device == DeviceKind::Gpu;
    let validity = match point.scenario.as_ref().map_or(1, |s| s.in_flight) {
        1 => watch.finish(on_gpu),
        n => watch.finish_contended(on_gpu, &format!("the {n} sessions in flight")),
    };
    let Timeline {
        samples,
        totals,
        stop,
        scenario,
        ..
    } = timeline;

    let mut by_quantity: BTreeMap<Quantity, Vec<f64>> = samples
        .into_iter()
        .map(|(p, v)| (Quantity::from(p), v))
        .collect();
    by_quantity.insert(Quantity::Total, totals);
    let summary: BTreeMap<Quantity, Summary> = by_quantity
        .iter()
        .filter_map(|(k, v)| Summary::of(v).map(|s| (*k, s)))
        .collect();
    let total = summary
        .get(&Quantity::Total)
        .ok_or_else(|| anyhow!("no valid timing samples were recorded"))?;

    // A data-parallel pass trains every rank's batch.
    let ranks = group.as_ref().map_or(1, |g| g.world_size);
    let flops = flops_per_pass(point.mode, graph.macs(), batch_size * ranks);
    // Under a scenario, what was served per second over the run (queueing and idle time
    // included), not what back-to-back passes would compute.
    let images_per_s = match &scenario {
        Some(record) => record.samples_per_s,
        None => (batch_size * ranks) as f64 / total.median,
    };
    let throughput = Throughput {
        images_per_s,
        gflops_per_s: flops / (batch_size * ranks) as f64 * images_per_s / 1e9,
        flops_per_pass: flops,
    };
    let mut warnings = spread_warnings(&summary);
    if let Some(record) = &scenario {
        warnings.extend(
            record
                .invalid_reasons
                .iter()
                .map(|why| format!("the {} run is INVALID: {why}", record.kind)),
        );
    }
    warnings.extend(session_warnings);
    warnings.extend(
        request
            .calibration
            .as_ref()
            .and_then(|calibration| calibration.record.caveat()),
    );
    // An engine's own caveat about its numbers (e.g. a GPU engine on a CPU renderer).
    warnings.extend(engine.info().settings.get("warning").cloned());
    // Inference runs report latency with its tail (p90, p99), so that is where too few
    // passes must be said; training results record percentiles without showing them.
    if point.mode == Mode::Infer && scenario.is_none() {
        warnings.extend(percentile_warning(total.count));
    }
    if stop.reason == StopReason::MaxTime {
        if let (Some(pct), Some(ci)) = (point.target_ci_pct, stop.median_ci95_rel) {
            warnings.push(format!(
                "the time limit came before the target: the median total is known to ±{:.1}% (95% interval), not ±{pct}%",
                ci * 100.0
            ));
        }
    }
    let [c, h, w] = graph.input_shape();
    let distributed = group.map(|g| DistributedRecord {
        backend: g.backend,
        transport: g.transport,
        bucket_bytes: g.bucket_bytes,
        overlap: false,
        ranks: vec![RankRecord {
            rank: g.rank,
            host: g.host.clone(),
            address: g.endpoint.as_ref().map(|e| e.address.clone()),
            interface: g.endpoint.as_ref().and_then(|e| e.interface.clone()),
            address_chosen_by: g.endpoint.as_ref().map(|e| e.chosen_by.clone()),
            samples: by_quantity.clone(),
        }],
    });
    // The forward pass against the cached ceilings: its least time over its median.
    let roofline = request.ceilings.as_ref().and_then(|ceilings| {
        let roof_s =
            crate::profile::forward_roof_time(graph, batch_size, point.precision, ceilings)?;
        let forward_s = summary.get(&Quantity::Forward)?.median;
        cnnbench_results::roofline::RunRoofline::of(roof_s, forward_s)
    });
    Ok(BenchResult {
        format: RESULT_FORMAT.into(),
        version: RESULT_VERSION,
        tool: request.tool.clone(),
        label: request.label.clone(),
        model: ModelRecord {
            name: graph.name().to_string(),
            source: request.model_source.clone(),
            params: graph.params(),
            macs: graph.macs(),
            depth: graph.depth(),
            input: [c, h, w],
        },
        spec: Some(point.clone()),
        config: RunConfig {
            mode: point.mode,
            batch_size,
            image_size: [h, w],
            warmup: point.warmup,
            passes: point.passes,
            seed: point.seed,
            threads_requested: point.threads,
            precision: point.precision,
            min_time_s: point.min_time_s,
            max_time_s: point.effective_max_time_s(),
            target_ci_pct: point.target_ci_pct,
            warmup_time_s: point.warmup_time_s,
            world_size: distributed.is_some().then_some(ranks),
            allocator: Some(crate::env::allocator_record()),
            round: request.round,
        },
        engine: {
            let mut info = engine.info();
            info.settings.extend(reported_settings);
            info
        },
        machine: crate::env::detect_machine(),
        started_at: started.at,
        duration_s: started.clock.elapsed().as_secs_f64(),
        stop: Some(stop),
        batch_search: request.batch_search.clone(),
        samples: by_quantity,
        summary,
        throughput,
        memory: MemoryRecord {
            peak_rss_bytes: memory::peak_rss(),
            peak_rss_reset: started.peak_rss_reset,
            device_peak_bytes: device_peak,
            worker_peak_rss_bytes: worker_peak_rss,
            estimate_bytes: memory::estimate_run_bytes(
                graph,
                point.mode,
                batch_size,
                point.scenario.as_ref(),
            ),
        },
        peak: request.peak.clone().into(),
        roofline,
        warnings,
        distributed,
        validity: Some(validity),
        cold_start: Some(cold_start),
        call_floor_s,
        // The machine's, not the run's: the command that runs the harness adds it.
        run_noise: None,
        scenario,
        quantization: request.calibration.as_ref().map(|calibration| {
            calibration.quantization_record(&engine.info().name, engine.own_quantization())
        }),
    })
}
