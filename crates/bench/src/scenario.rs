//! The harness's timed loop as one of MLPerf LoadGen's scenarios (`run --scenario`):
//! queries issued to prepared sessions as the scenario defines, each query's latency
//! recorded (into an HDR histogram for its percentiles, and raw), the verdicts worked
//! out. The closed loop of passes is the harness's other timed loop.
//!
//! One file a load: single-stream and multi-stream issue the next query when the last
//! completes ([`stream`]), the server releases queries at their Poisson arrivals to one
//! worker per query in flight, with or without the dynamic batcher (`server`), offline
//! issues every sample at once (`offline`); `--find-peak` searches the server's loads.
//! A query that arrives while every session computes waits, and the wait is part of its
//! latency. A server query's latency runs from its *scheduled* arrival, never from when
//! the issuer got to it, so an issuer that falls behind shows as latency (no coordinated
//! omission). Drawing a query's input (the harness's stand-in for LoadGen's preloaded
//! samples) is not the system's work: the clock, or one server worker's schedule, stops
//! while it happens.

use anyhow::{anyhow, Result};
use cnnbench_engine::Session;
use cnnbench_graph::SplitMix64;
use cnnbench_results::scenario::{
    early_stopping_bound, fewest_queries_for, BatcherRecord, BatcherSpec, Counted, Issuing,
    LatencySummary, PeakProbe, ScenarioKind, ScenarioRecord, ScenarioSpec,
    EARLY_STOPPING_CONFIDENCE, MAX_SCENARIO_QUERIES, MAX_TARGET_QPS,
};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[cfg(test)]
mod fakes;
mod offline;
mod server;

/// Queries of a no-op engine timed to measure the issuer's own cost.
const OVERHEAD_QUERIES: usize = 1000;

/// The most probes of `--find-peak`'s search (doubling or halving, then bisecting).
const MAX_PEAK_PROBES: usize = 24;

/// The bisection stops once the valid and invalid loads are this close (relative).
const PEAK_RESOLUTION: f64 = 0.02;

/// Halving stops below this share of the engine's capacity (load × compute time per
/// query): a bound broken at so light a load is broken by the engine, not the queue.
const LIGHTEST_UTILISATION: f64 = 0.05;

/// How the engine serves queries, recorded with every scenario run.
pub const SERVING: &str = "one query at a time on one session: a query that arrives while another computes waits in the queue";

/// What a scenario run measured: the engine's compute time per query (the result's
/// samples) and the record of the scenario.
pub struct Driven {
    pub compute_s: Vec<f64>,
    pub record: ScenarioRecord,
}

/// Called after every query with the queries done and planned, and the seconds run.
pub type OnQuery<'a> = dyn FnMut(usize, usize, f64) + 'a;

/// How the sessions serve the queries, as the result records it (`scenario.serving`).
pub struct Serving<'a> {
    /// One session per query in flight, prepared, compiled and warmed up.
    pub sessions: Vec<&'a mut (dyn Session + 'static)>,
    /// With the dynamic batcher, for each session above (which computes one query a
    /// call), its siblings at the batcher's larger batch sizes, ascending
    /// ([`BatcherSpec::session_batch_sizes`] after the 1); empty without it.
    pub batch_sessions: Vec<Vec<(usize, &'a mut (dyn Session + 'static))>>,
    /// In words; [`SERVING`] where one session serves one query at a time.
    pub description: String,
}

/// Runs the scenario on prepared sessions (one per query in flight); `seed` draws the
/// server's arrivals, `batch` is the samples a session computes per call. `check` is
/// asked before every query (an interruption).
pub fn drive(
    serving: Serving<'_>,
    spec: &ScenarioSpec,
    seed: u64,
    batch: usize,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Driven> {
    let Serving {
        sessions,
        batch_sessions,
        description,
    } = serving;
    if sessions.is_empty() {
        return Err(anyhow!("a scenario needs a session to serve its queries"));
    }
    if !batch_sessions.is_empty() && batch_sessions.len() != sessions.len() {
        return Err(anyhow!(
            "the dynamic batcher needs the larger sessions of every one of the {} in flight, and has those of {}",
            sessions.len(),
            batch_sessions.len()
        ));
    }
    // Each query in flight is a worker with its sessions by batch size, ascending.
    let mut larger = batch_sessions.into_iter();
    let mut sessions: Vec<server::Worker<'_>> = sessions
        .into_iter()
        .map(|one| {
            std::iter::once((1, one))
                .chain(larger.next().into_iter().flatten())
                .collect()
        })
        .collect();
    let issuer_overhead_s = issuer_overhead();
    let served = ServedBy {
        in_flight: sessions.len(),
        description,
    };
    if spec.find_peak {
        return find_peak(
            &mut sessions,
            &served,
            spec,
            seed,
            check,
            on_query,
            issuer_overhead_s,
        );
    }
    let load = Load::of(spec, spec.target_qps, seed, batch);
    let timeline = issue(&mut sessions, &load, check, on_query)?;
    let record = judge(
        spec,
        &load,
        &timeline,
        &served,
        issuer_overhead_s,
        Vec::new(),
    )?;
    Ok(Driven {
        compute_s: timeline.compute_s,
        record,
    })
}

/// How many sessions served, and how, for the record.
struct ServedBy {
    in_flight: usize,
    description: String,
}

/// One query (offline: one call) timed on its session: the engine's compute time.
fn serve(session: &mut dyn Session) -> Result<Duration> {
    let t = Instant::now();
    session.forward()?;
    session.sync()?;
    Ok(t.elapsed())
}

/// One run's load: the scenario, how long and how many, the server's rate and seed.
struct Load {
    kind: ScenarioKind,
    min_duration: Duration,
    min_queries: usize,
    target_qps: Option<f64>,
    seed: u64,
    /// Samples the session computes per call.
    batch: usize,
    /// Server: the dynamic batcher.
    batcher: Option<BatcherSpec>,
    /// Server: the least wait that stops the run early ([`OVERDUE_AT_LEAST`]; a test's
    /// own, shorter, so that it need not wait ten seconds).
    overdue_at_least: Duration,
}

impl Load {
    /// The load `spec` asks for at `target_qps` (the server's; `None` for the others),
    /// the session computing `batch` samples per call.
    fn of(spec: &ScenarioSpec, target_qps: Option<f64>, seed: u64, batch: usize) -> Load {
        Load {
            kind: spec.kind,
            // A validated spec's duration is finite and at most 10⁷ s.
            min_duration: Duration::try_from_secs_f64(spec.min_duration_s).unwrap_or_default(),
            min_queries: spec.min_queries,
            target_qps,
            seed,
            batch,
            batcher: spec.batcher,
            overdue_at_least: OVERDUE_AT_LEAST,
        }
    }
}

/// What the issuer saw: per query (offline: per batch) its latency and compute time,
/// and the run's duration with the input drawing taken out.
struct Timeline {
    latencies_s: Vec<f64>,
    compute_s: Vec<f64>,
    queries: usize,
    samples: usize,
    duration_s: f64,
    /// Several in flight: the median time a session spent drawing its next input
    /// between queries (one in flight: the schedule pauses while it draws).
    input_draw_s: Option<f64>,
    /// The dynamic batcher's calls, where it gathered the queries.
    batcher: Option<BatcherRecord>,
    /// Server: the queries not served because the run stopped early ([`Overload`]).
    abandoned: usize,
    /// Server: how long a query could wait before the run stopped ([`Overload::after`]).
    overdue_after_s: Option<f64>,
}

/// The early stop of an overloaded server run. An engine that sustains a tenth of the
/// load serves its backlog for ten times the schedule (hours at MLPerf's ten minutes),
/// and the run is INVALID whatever it finds; so once a query has waited longer than the
/// whole schedule (at least [`OVERDUE_AT_LEAST`]), the queue has outgrown anything a
/// stable server holds, and the run stops: no more queries are released or served, and
/// the ones left are counted as abandoned. A run stops at about twice its schedule.
struct Overload {
    after: Duration,
    stopped: AtomicBool,
}

/// The least wait that stops a run early, so that a short run near its capacity is not
/// stopped by one slow query (a page fault, a busy neighbour).
const OVERDUE_AT_LEAST: Duration = Duration::from_secs(10);

impl Overload {
    /// For a schedule of these arrivals (offsets from the start).
    fn for_schedule(arrivals: &[Duration], load: &Load) -> Overload {
        let schedule = arrivals.last().copied().unwrap_or_default();
        Overload {
            after: schedule.max(load.overdue_at_least),
            stopped: AtomicBool::new(false),
        }
    }

    /// Whether the run has stopped: a query scheduled at `scheduled` that starts
    /// being served now has waited too long (which stops it), or one did before.
    fn overdue(&self, scheduled: Instant) -> bool {
        if self.stopped() {
            return true;
        }
        let late = Instant::now().saturating_duration_since(scheduled) > self.after;
        if late {
            self.stopped.store(true, Ordering::SeqCst);
        }
        late
    }

    /// Whether a query stopped the run.
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// The queries of `planned` not served when `served` were.
    fn abandoned(&self, planned: usize, served: usize) -> usize {
        if self.stopped() {
            planned.saturating_sub(served)
        } else {
            0
        }
    }
}

/// Issues the load to the sessions and times it.
fn issue(
    workers: &mut [server::Worker<'_>],
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    // Only the server batches: elsewhere each worker computes one query a call, on its
    // first session.
    fn firsts<'w>(workers: &'w mut [server::Worker<'_>]) -> Vec<&'w mut (dyn Session + 'static)> {
        workers
            .iter_mut()
            .filter_map(|worker| worker.first_mut().map(|(_, session)| &mut **session))
            .collect()
    }
    match load.kind.rules().issuing {
        Issuing::PoissonArrivals => server::issue(workers, load, check, on_query),
        Issuing::AllAtOnce => offline::issue(&mut firsts(workers), load, check, on_query),
        Issuing::ClosedLoop => match firsts(workers).as_mut_slice() {
            [session] => stream(&mut **session, load, check, on_query),
            _ => Err(anyhow!(
                "{} issues its next query when the last completes: one query is in flight",
                load.kind
            )),
        },
    }
}

/// One call of a closed loop of queries (the streams, offline on one session): asks
/// `check`, draws a fresh input outside the clock, and times the call.
fn draw_and_serve(session: &mut dyn Session, check: &dyn Fn() -> Result<()>) -> Result<Duration> {
    check()?;
    session.prepare_batch()?;
    session.sync()?;
    serve(session)
}

/// Single-stream and multi-stream: the next query is issued when the last completes,
/// its input drawn outside the run's clock; a query's latency is its compute time.
fn stream(
    session: &mut dyn Session,
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    let planned = planned_queries(load);
    let mut latencies_s = Vec::new();
    let mut compute_s = Vec::new();
    let mut busy = Duration::ZERO;
    while latencies_s.len() < load.min_queries || busy < load.min_duration {
        let took = draw_and_serve(session, check)?;
        busy += took;
        latencies_s.push(took.as_secs_f64());
        compute_s.push(took.as_secs_f64());
        on_query(latencies_s.len(), planned, busy.as_secs_f64());
    }
    let queries = latencies_s.len();
    Ok(Timeline {
        latencies_s,
        compute_s,
        queries,
        samples: queries * load.batch,
        duration_s: busy.as_secs_f64(),
        input_draw_s: None,
        batcher: None,
        abandoned: 0,
        overdue_after_s: None,
    })
}

/// A query as a session served it.
struct Served {
    index: usize,
    /// When it arrived (server) or the run started (offline).
    scheduled: Instant,
    completed: Instant,
    compute: Duration,
    /// The session's drawing of this query's input, before it took the query.
    draw: Duration,
}

/// Readies the session's next input, untimed by the query's compute clock: a worker
/// does it as soon as it finishes a call, before it takes the next. A session that
/// keeps its input (the whole-model engines: ONNX Runtime, OpenVINO, tract) computes
/// the same one again, as a server computes the samples it holds in memory (LoadGen's
/// preloaded samples); one whose forward consumes its input draws a fresh one. At a
/// load that leaves a session idle between queries this costs nothing; a query already
/// waiting waits for it too, unless the schedule pauses for it (one server worker).
fn draw(session: &mut dyn Session) -> Result<Duration> {
    let t = Instant::now();
    session.prepare_same_batch()?;
    session.sync()?;
    Ok(t.elapsed())
}

/// What each worker thread served, or the first failure among them.
fn join<T>(workers: Vec<std::thread::ScopedJoinHandle<'_, Result<T>>>) -> Result<Vec<T>> {
    workers
        .into_iter()
        .map(|worker| {
            worker
                .join()
                .map_err(|_| anyhow!("a session serving the scenario's queries panicked"))?
        })
        .collect()
}

/// The run the workers served, as the timeline of one session: latencies and compute
/// times in issue order (offline: in order of completion), the duration to the last
/// completion.
fn timeline(
    mut served: Vec<Served>,
    start: Instant,
    batch: usize,
    offline: bool,
) -> Result<Timeline> {
    if served.is_empty() {
        return Err(anyhow!("no query was served"));
    }
    if offline {
        served.sort_by_key(|s| s.completed);
    } else {
        served.sort_by_key(|s| s.index);
    }
    let last = served.iter().map(|s| s.completed).max().unwrap_or(start);
    let latencies_s = served
        .iter()
        .map(|s| {
            s.completed
                .saturating_duration_since(s.scheduled)
                .as_secs_f64()
        })
        .collect();
    let compute_s = served.iter().map(|s| s.compute.as_secs_f64()).collect();
    let mut draws: Vec<f64> = served.iter().map(|s| s.draw.as_secs_f64()).collect();
    draws.sort_by(f64::total_cmp);
    let calls = served.len();
    Ok(Timeline {
        latencies_s,
        compute_s,
        // Offline's samples are one query, issued at once.
        queries: if offline { 1 } else { calls },
        samples: calls * batch,
        duration_s: last.saturating_duration_since(start).as_secs_f64(),
        input_draw_s: Some(draws[draws.len() / 2]),
        batcher: None,
        abandoned: 0,
        overdue_after_s: None,
    })
}

/// The queries (offline: samples) a run plans to issue; the duration may ask for more.
fn planned_queries(load: &Load) -> usize {
    match (load.kind.rules().issuing, load.target_qps) {
        (Issuing::PoissonArrivals, Some(qps)) => {
            let for_duration = (qps * load.min_duration.as_secs_f64()).ceil();
            // The spec's validation bounds this for a given load; the peak search's
            // probes are held to the same bound here.
            let for_duration = for_duration.min(MAX_SCENARIO_QUERIES as f64) as usize;
            load.min_queries.max(for_duration).min(MAX_SCENARIO_QUERIES)
        }
        (Issuing::PoissonArrivals, None) | (Issuing::ClosedLoop | Issuing::AllAtOnce, _) => {
            load.min_queries
        }
    }
}

/// `count` arrival times of a Poisson process of `qps` per second, from `seed`: the
/// gaps are exponential (inverse transform of a uniform in (0, 1]).
fn poisson_arrivals(qps: f64, count: usize, seed: u64) -> Vec<Duration> {
    let mut random = SplitMix64::new(seed);
    let mut at = 0.0_f64;
    (0..count)
        .map(|_| {
            at += -random.next_f64_nonzero().ln() / qps;
            Duration::from_secs_f64(at)
        })
        .collect()
}

/// Sleeps until `when`, the last stretch spinning: a sleep may overshoot by tens of
/// microseconds, which would add to the latency of a query on time.
fn wait_until(when: Instant) {
    const SPIN: Duration = Duration::from_micros(200);
    loop {
        let now = Instant::now();
        if now >= when {
            return;
        }
        let left = when - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// The median latency of a query to an engine that does nothing: what the issuer's
/// own bookkeeping adds to every latency.
fn issuer_overhead() -> f64 {
    let mut times: Vec<f64> = (0..OVERHEAD_QUERIES)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(());
            let finished = Instant::now();
            finished.saturating_duration_since(t).as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// The percentiles of `latencies_s` from an HDR histogram (3 significant digits, from a
/// nanosecond to an hour).
fn summarise(latencies_s: &[f64]) -> Result<LatencySummary> {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
        .map_err(|e| anyhow!("cannot make the latency histogram: {e}"))?;
    for &s in latencies_s {
        // Saturated into the histogram's range: a latency is never dropped.
        histogram.saturating_record((s * 1e9).round().max(1.0) as u64);
    }
    let at = |q: f64| histogram.value_at_quantile(q) as f64 / 1e9;
    Ok(LatencySummary {
        mean: histogram.mean() / 1e9,
        p50: at(0.50),
        p90: at(0.90),
        p95: at(0.95),
        p99: at(0.99),
        p999: at(0.999),
        max: histogram.max() as f64 / 1e9,
    })
}

/// Why a server run at `target_qps` did not sustain its load, if it did not: it
/// completed fewer queries per second than arrived, by more than the Poisson schedule's
/// own spread (4 standard deviations of its count), and its queue grew all run (the
/// median latency of the last quarter of queries more than twice the first quarter's).
/// Both are asked: a run that starts near saturation grows its queue for a while without
/// falling behind, and a short run's last latency alone can lower its rate. A run
/// whose latency bound allows any queue would otherwise be valid at any load, and the
/// peak search would report a rate the engine never reached.
fn fell_short(target_qps: f64, latencies_s: &[f64], duration_s: f64) -> Option<String> {
    let n = latencies_s.len();
    if n < 8 || duration_s <= 0.0 {
        return None;
    }
    let achieved = n as f64 / duration_s;
    let tolerance = 4.0 / (n as f64).sqrt();
    if achieved >= target_qps * (1.0 - tolerance) {
        return None;
    }
    let median = |part: &[f64]| {
        let mut part = part.to_vec();
        part.sort_by(f64::total_cmp);
        part[part.len() / 2]
    };
    let (first, last) = (
        median(&latencies_s[..n / 4]),
        median(&latencies_s[n - n / 4..]),
    );
    (last > 2.0 * first).then(|| {
        format!(
            "the engine completed {achieved:.1} of the {target_qps:.1} queries per second that arrived, and its queue grew all run (median latency {:.2} ms over the first quarter of queries, {:.2} ms over the last): this load is beyond what it sustains",
            first * 1e3,
            last * 1e3
        )
    })
}

/// The record of a run, with its verdicts.
fn judge(
    spec: &ScenarioSpec,
    load: &Load,
    timeline: &Timeline,
    served: &ServedBy,
    issuer_overhead_s: f64,
    peak_search: Vec<PeakProbe>,
) -> Result<ScenarioRecord> {
    let kind = spec.kind;
    let latency = summarise(&timeline.latencies_s)?;
    let percentile = kind.percentile();
    let mut sorted = timeline.latencies_s.clone();
    sorted.sort_by(f64::total_cmp);
    let percentile_latency_s = percentile.map(|q| match q {
        q if q >= 0.99 => latency.p99,
        _ => latency.p90,
    });
    let early_stopping_latency_s =
        percentile.and_then(|q| early_stopping_bound(&sorted, q, EARLY_STOPPING_CONFIDENCE));
    let mut invalid_reasons = Vec::new();
    if let (Some(q), None) = (percentile, early_stopping_latency_s) {
        invalid_reasons.push(format!(
            "{} queries are too few to bound the p{} latency at {:.0}% confidence (LoadGen's early stopping); give --min-queries {} or more",
            timeline.queries,
            percentile_name(q),
            EARLY_STOPPING_CONFIDENCE * 100.0,
            fewest_queries_for(q)
        ));
    }
    if let (Some(bound_ms), Some(q)) = (spec.latency_bound_ms, percentile) {
        let bound = bound_ms / 1e3;
        match early_stopping_latency_s {
            Some(estimate) if estimate > bound => invalid_reasons.push(format!(
                "the p{} latency is {:.2} ms as measured and {:.2} ms at {:.0}% confidence, above the bound of {bound_ms} ms",
                percentile_name(q),
                percentile_latency_s.unwrap_or(f64::NAN) * 1e3,
                estimate * 1e3,
                EARLY_STOPPING_CONFIDENCE * 100.0
            )),
            Some(_) | None => {}
        }
    }
    if let (abandoned @ 1.., Some(after)) = (timeline.abandoned, timeline.overdue_after_s) {
        invalid_reasons.push(format!(
            "the run stopped early: a query waited more than {after:.1} s (the whole schedule, at least {} s) before it was served, so the queue was growing without end; {abandoned} of the {} queries planned were not served: this load is beyond what the engine sustains",
            OVERDUE_AT_LEAST.as_secs(),
            abandoned + timeline.queries
        ));
    } else if let Some(shortfall) = load
        .target_qps
        .and_then(|qps| fell_short(qps, &timeline.latencies_s, timeline.duration_s))
    {
        invalid_reasons.push(shortfall);
    }
    let counted = match kind.rules().counted {
        Counted::Samples => timeline.samples,
        Counted::Queries => timeline.queries,
    };
    let rules = kind.mlperf_rules();
    let mut mlperf_shortfalls = Vec::new();
    if timeline.duration_s < rules.min_duration_s {
        mlperf_shortfalls.push(format!(
            "ran {:.1} s, MLPerf requires {} s",
            timeline.duration_s, rules.min_duration_s
        ));
    }
    if counted < rules.min_queries {
        mlperf_shortfalls.push(format!(
            "{counted} {}, MLPerf requires {}",
            kind.rules().counted.noun(),
            rules.min_queries
        ));
    }
    let per_second = |n: usize| {
        if timeline.duration_s > 0.0 {
            n as f64 / timeline.duration_s
        } else {
            0.0
        }
    };
    Ok(ScenarioRecord {
        kind,
        samples_per_query: spec.samples_per_query,
        target_qps: load.target_qps,
        schedule_seed: (kind.rules().issuing == Issuing::PoissonArrivals).then_some(load.seed),
        latency_bound_ms: spec.latency_bound_ms,
        queries: timeline.queries,
        samples: timeline.samples,
        duration_s: timeline.duration_s,
        achieved_qps: per_second(counted),
        samples_per_s: per_second(timeline.samples),
        in_flight: served.in_flight,
        input_draw_s: timeline.input_draw_s,
        serving: served.description.clone(),
        latencies_s: timeline.latencies_s.clone(),
        latency,
        percentile,
        percentile_latency_s,
        early_stopping_latency_s,
        issuer_overhead_s,
        valid: invalid_reasons.is_empty(),
        invalid_reasons,
        meets_mlperf_rules: mlperf_shortfalls.is_empty(),
        mlperf_shortfalls,
        peak_search,
        batcher: timeline.batcher.clone(),
        abandoned_queries: timeline.abandoned,
    })
}

/// `0.99` → `99`, `0.9` → `90`.
fn percentile_name(q: f64) -> String {
    format!("{}", (q * 1000.0).round() / 10.0)
}

/// `--find-peak`: the highest target QPS whose server run is valid. The load is doubled
/// from the start while runs are valid (halved while they are not), then bisected
/// between the highest valid and lowest invalid load, every probe a full run.
fn find_peak(
    sessions: &mut [server::Worker<'_>],
    served: &ServedBy,
    spec: &ScenarioSpec,
    seed: u64,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
    issuer_overhead_s: f64,
) -> Result<Driven> {
    let Some((_, session)) = sessions.first_mut().and_then(|worker| worker.first_mut()) else {
        return Err(anyhow!("a scenario needs a session to serve its queries"));
    };
    // One query's compute time, the fastest of a few: what the bound must at least allow.
    let mut one_query_s = f64::INFINITY;
    for _ in 0..3 {
        // A session's forward may consume its input (candle's does).
        session.prepare_batch()?;
        session.sync()?;
        one_query_s = one_query_s.min(serve(&mut **session)?.as_secs_f64().max(1e-6));
    }
    if let Some(bound_ms) = spec.latency_bound_ms {
        if one_query_s * 1e3 > bound_ms {
            return Err(anyhow!(
                "--find-peak: one query computes in {:.1} ms on this engine (the fastest of 3), above the latency bound of {bound_ms} ms, so no load can meet it; raise --latency-bound, or choose a faster engine, precision or smaller input",
                one_query_s * 1e3
            ));
        }
    }
    // Unless given, half of what the sessions could serve back to back.
    let start_qps = spec
        .target_qps
        .unwrap_or(0.5 * sessions.len() as f64 / one_query_s);
    let mut probes: Vec<PeakProbe> = Vec::new();
    let mut best: Option<(f64, Timeline, Load)> = None;
    // While no load has been valid, the lightest probe: the result if none ever is.
    let mut lightest: Option<(Timeline, Load)> = None;
    let mut lowest_invalid: Option<f64> = None;
    let probe = |qps: f64,
                 sessions: &mut [server::Worker<'_>],
                 on_query: &mut OnQuery<'_>,
                 probes: &mut Vec<PeakProbe>|
     -> Result<(bool, Timeline, Load)> {
        let load = Load::of(spec, Some(qps), seed, 1);
        let timeline = issue(sessions, &load, check, on_query)?;
        let record = judge(
            spec,
            &load,
            &timeline,
            served,
            issuer_overhead_s,
            Vec::new(),
        )?;
        probes.push(PeakProbe {
            target_qps: qps,
            achieved_qps: record.achieved_qps,
            queries: record.queries,
            p50_latency_s: Some(record.latency.p50),
            percentile_latency_s: record.percentile_latency_s.unwrap_or(f64::NAN),
            early_stopping_latency_s: record.early_stopping_latency_s,
            valid: record.valid,
            invalid_reasons: record.invalid_reasons.clone(),
        });
        Ok((record.valid, timeline, load))
    };
    let mut qps = start_qps;
    // Bracket.
    while probes.len() < MAX_PEAK_PROBES {
        let (valid, timeline, load) = probe(qps, sessions, on_query, &mut probes)?;
        if valid {
            best = Some((qps, timeline, load));
            if lowest_invalid.is_some() || qps * 2.0 > MAX_TARGET_QPS {
                break;
            }
            qps *= 2.0;
        } else {
            lowest_invalid = Some(qps);
            if best.is_some() {
                break;
            }
            let mut compute = timeline.compute_s.clone();
            compute.sort_by(f64::total_cmp);
            let median_compute = compute.get(compute.len() / 2).copied().unwrap_or(0.0);
            lightest = Some((timeline, load));
            qps /= 2.0;
            if qps * median_compute < LIGHTEST_UTILISATION {
                break;
            }
        }
    }
    // Bisect.
    while let (Some((low, _, _)), Some(high)) = (&best, lowest_invalid) {
        let low = *low;
        if probes.len() >= MAX_PEAK_PROBES || (high - low) / low <= PEAK_RESOLUTION {
            break;
        }
        let middle = (low + high) / 2.0;
        let (valid, timeline, load) = probe(middle, sessions, on_query, &mut probes)?;
        if valid {
            best = Some((middle, timeline, load));
        } else {
            lowest_invalid = Some(middle);
        }
    }
    // No valid load: the lightest probe is the result, INVALID with the reason, so that
    // the probes (measurements) are written and the report can say it.
    let (timeline, load, found) = match (best, lightest) {
        (Some((_, timeline, load)), _) => (timeline, load, true),
        (None, Some((timeline, load))) => (timeline, load, false),
        (None, None) => return Err(anyhow!("--find-peak ran no probe")),
    };
    let lightest_qps = probes.last().map_or(start_qps, |p| p.target_qps);
    let mut record = judge(spec, &load, &timeline, served, issuer_overhead_s, probes)?;
    if !found {
        record.valid = false;
        record.invalid_reasons.push(format!(
            "--find-peak found no valid load: even {lightest_qps:.3} queries per second, under {:.0}% of what the engine computes back to back, was not a valid run (this run is that lightest probe; its own reasons are beside this one)",
            LIGHTEST_UTILISATION * 100.0 * 2.0,
        ));
    }
    Ok(Driven {
        compute_s: timeline.compute_s,
        record,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session whose every forward takes a fixed time, and consumes the input that
    /// `prepare_batch` drew, as candle's does.
    struct Fixed {
        took: Duration,
        calls: usize,
        prepared: bool,
    }

    impl Session for Fixed {
        fn prepare_batch(&mut self) -> Result<()> {
            self.prepared = true;
            Ok(())
        }
        fn forward(&mut self) -> Result<()> {
            if !std::mem::replace(&mut self.prepared, false) {
                return Err(anyhow!("forward called before prepare_batch"));
            }
            self.calls += 1;
            let until = Instant::now() + self.took;
            wait_until(until);
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }

    fn spec(kind: ScenarioKind) -> ScenarioSpec {
        ScenarioSpec {
            min_duration_s: 0.0,
            min_queries: 50,
            ..ScenarioSpec::new(kind)
        }
    }

    fn run(session: &mut Fixed, spec: &ScenarioSpec, batch: usize) -> Driven {
        let serving = Serving {
            sessions: vec![session],
            batch_sessions: Vec::new(),
            description: SERVING.into(),
        };
        drive(serving, spec, 7, batch, &|| Ok(()), &mut |_, _, _| {}).unwrap()
    }

    /// Round four (#63): a server run at twenty times what its engine sustains served its
    /// backlog to the end (hours at MLPerf's ten minutes). Once a query has waited longer
    /// than the whole schedule the run stops, with one session or several, and says
    /// what it left unserved; a run within its capacity is never stopped.
    #[test]
    fn an_overloaded_server_run_stops_early_and_is_invalid() {
        for in_flight in [1, 2] {
            let mut fixed: Vec<Fixed> = (0..in_flight)
                .map(|_| Fixed {
                    took: Duration::from_millis(20),
                    calls: 0,
                    prepared: false,
                })
                .collect();
            let spec = ScenarioSpec {
                target_qps: Some(1000.0),
                latency_bound_ms: Some(1e6),
                min_duration_s: 0.0,
                min_queries: 200,
                in_flight,
                ..ScenarioSpec::new(ScenarioKind::Server)
            };
            let mut load = Load::of(&spec, spec.target_qps, 7, 1);
            load.overdue_at_least = Duration::from_millis(50);
            let mut workers: Vec<server::Worker<'_>> = fixed
                .iter_mut()
                .map(|f| vec![(1, f as &mut (dyn Session + 'static))])
                .collect();
            let clock = Instant::now();
            let timeline = issue(&mut workers, &load, &|| Ok(()), &mut |_, _, _| {}).unwrap();
            let took = clock.elapsed();
            let served = ServedBy {
                in_flight,
                description: SERVING.into(),
            };
            let r = judge(&spec, &load, &timeline, &served, 0.0, Vec::new()).unwrap();
            // Served to the end, the 200 queries take 4 s on one session, 2 s on two.
            assert!(
                r.abandoned_queries > 0,
                "{in_flight}: {:?}",
                r.invalid_reasons
            );
            assert_eq!(r.abandoned_queries + r.queries, 200);
            let calls: usize = fixed.iter().map(|f| f.calls).sum();
            assert_eq!(calls, r.queries);
            assert!(!r.valid);
            assert!(
                r.invalid_reasons
                    .iter()
                    .any(|w| w.contains("stopped early")),
                "{:?}",
                r.invalid_reasons
            );
            // What stopped it: the wait, measured against the schedule; a stop at the
            // first overdue query ends the run long before the backlog would.
            assert!(
                took < Duration::from_secs(4) / in_flight as u32,
                "{in_flight}: {took:?}"
            );
        }
        // Within capacity (a query takes 1 ms, arriving 100 a second): never stopped.
        let mut session = Fixed {
            took: Duration::from_millis(1),
            calls: 0,
            prepared: false,
        };
        let spec = ScenarioSpec {
            target_qps: Some(100.0),
            latency_bound_ms: Some(1e6),
            min_duration_s: 0.0,
            min_queries: 20,
            ..ScenarioSpec::new(ScenarioKind::Server)
        };
        let driven = run(&mut session, &spec, 1);
        assert_eq!(driven.record.abandoned_queries, 0);
        assert_eq!(driven.record.queries, 20);
    }

    #[test]
    fn single_stream_issues_the_next_query_when_the_last_completes() {
        let mut session = Fixed {
            took: Duration::from_millis(2),
            calls: 0,
            prepared: false,
        };
        let driven = run(&mut session, &spec(ScenarioKind::SingleStream), 1);
        let r = &driven.record;
        assert_eq!(session.calls, 50);
        assert_eq!((r.queries, r.samples, r.latencies_s.len()), (50, 50, 50));
        assert!(r.latency.p50 >= 0.002, "{:?}", r.latency);
        assert_eq!(r.percentile, Some(0.9));
        // 50 queries bound a p90 at 99% (44 do), so the run is valid but not MLPerf's.
        assert!(r.valid, "{:?}", r.invalid_reasons);
        assert!(!r.meets_mlperf_rules);
        assert!(r
            .mlperf_shortfalls
            .iter()
            .any(|s| s.contains("MLPerf requires 1024")));
        assert!((r.achieved_qps - 1.0 / r.latency.mean).abs() / r.achieved_qps < 0.2);
    }

    #[test]
    fn a_p99_from_too_few_queries_is_said_to_be_one() {
        let mut session = Fixed {
            took: Duration::from_micros(100),
            calls: 0,
            prepared: false,
        };
        let driven = run(&mut session, &spec(ScenarioKind::MultiStream), 8);
        let r = &driven.record;
        assert_eq!(r.samples, 50 * 8);
        assert_eq!(r.early_stopping_latency_s, None);
        assert!(!r.valid);
        assert!(
            r.invalid_reasons[0].contains("--min-queries 459"),
            "{:?}",
            r.invalid_reasons
        );
        assert_eq!(fewest_queries_for(0.9), 44);
    }

    #[test]
    fn a_server_counts_the_wait_in_the_queue_as_latency() {
        // Queries at 400 per second to an engine that serves 200 per second (5 ms
        // each): the queue grows, and the latencies with it.
        let mut session = Fixed {
            took: Duration::from_millis(5),
            calls: 0,
            prepared: false,
        };
        let overloaded = ScenarioSpec {
            target_qps: Some(400.0),
            latency_bound_ms: Some(20.0),
            ..spec(ScenarioKind::Server)
        };
        let r = run(&mut session, &overloaded, 1).record;
        assert_eq!(r.queries, 50);
        assert_eq!(r.schedule_seed, Some(7));
        assert!(r.latency.max > 0.05, "{:?}", r.latency);
        assert!(r.latencies_s.last() > r.latencies_s.first());
        assert!(!r.valid, "an overloaded server is not valid");
        assert!(r.achieved_qps < 250.0, "{}", r.achieved_qps);
        // A light load keeps every latency near the compute time.
        let light = ScenarioSpec {
            target_qps: Some(50.0),
            latency_bound_ms: Some(50.0),
            min_queries: 100,
            ..spec(ScenarioKind::Server)
        };
        let r = run(&mut session, &light, 1).record;
        assert!(r.latency.p50 < 0.02, "{:?}", r.latency);
    }

    #[test]
    fn the_arrivals_are_a_seeded_poisson_process() {
        let a = poisson_arrivals(100.0, 20_000, 3);
        assert_eq!(a, poisson_arrivals(100.0, 20_000, 3));
        assert_ne!(a, poisson_arrivals(100.0, 20_000, 4));
        let rate = 20_000.0 / a.last().unwrap().as_secs_f64();
        assert!((rate - 100.0).abs() < 3.0, "{rate}");
        // Exponential gaps: their standard deviation equals their mean.
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / mean - 1.0).abs() < 0.05, "{}", sd / mean);
    }

    #[test]
    fn offline_issues_every_sample_at_once_and_reports_throughput() {
        let mut session = Fixed {
            took: Duration::from_millis(1),
            calls: 0,
            prepared: false,
        };
        let r = run(&mut session, &spec(ScenarioKind::Offline), 4).record;
        // 50 samples, 4 at a time: 13 calls, 52 samples.
        assert_eq!((session.calls, r.samples, r.queries), (13, 52, 1));
        assert!(r.latencies_s.windows(2).all(|w| w[1] > w[0]));
        assert!((r.samples_per_s - 52.0 / r.duration_s).abs() < 1e-9);
        assert_eq!(r.percentile, None);
        assert!(r.valid);
    }

    /// Too few queries to bound a p99 make every probe invalid, at any load: the search
    /// halves down to a light load and then writes the lightest probe as the result,
    /// INVALID with the reason and every probe recorded (it was an error, and the probes
    /// were lost).
    #[test]
    fn find_peak_without_a_valid_load_records_the_lightest_probe() {
        let mut session = Fixed {
            took: Duration::from_millis(1),
            calls: 0,
            prepared: false,
        };
        let search = ScenarioSpec {
            latency_bound_ms: Some(50.0),
            min_queries: 50,
            find_peak: true,
            ..spec(ScenarioKind::Server)
        };
        let r = run(&mut session, &search, 1).record;
        assert!(!r.valid);
        let probes = &r.peak_search;
        assert!(
            probes.len() >= 2 && probes.iter().all(|p| !p.valid),
            "{probes:?}"
        );
        assert!(probes.windows(2).all(|w| w[1].target_qps < w[0].target_qps));
        assert_eq!(r.target_qps, probes.last().map(|p| p.target_qps));
        assert!(
            r.invalid_reasons
                .iter()
                .any(|w| w.contains("--find-peak found no valid load")),
            "{:?}",
            r.invalid_reasons
        );
    }

    #[test]
    fn find_peak_refuses_at_once_a_bound_below_one_querys_compute_time() {
        // 30 ms a query under a 10 ms bound: no load can be valid, and the search says
        // so after timing a few queries, not after probes of hundreds.
        let mut session = Fixed {
            took: Duration::from_millis(30),
            calls: 0,
            prepared: false,
        };
        let search = ScenarioSpec {
            latency_bound_ms: Some(10.0),
            min_queries: fewest_queries_for(0.99),
            find_peak: true,
            ..spec(ScenarioKind::Server)
        };
        let serving = Serving {
            sessions: vec![&mut session],
            batch_sessions: Vec::new(),
            description: SERVING.into(),
        };
        let error = drive(serving, &search, 7, 1, &|| Ok(()), &mut |_, _, _| {})
            .err()
            .expect("a bound below the compute time is refused");
        let message = error.to_string();
        assert!(
            message.contains("above the latency bound of 10 ms"),
            "{message}"
        );
        assert!(session.calls <= 3, "{}", session.calls);
    }

    #[test]
    fn find_peak_brackets_and_bisects_to_the_highest_valid_load() {
        // 1 ms a query: about 1000 per second back to back. Above that the queue grows
        // through the run and the p99 passes a 50 ms bound; well below it holds.
        let mut session = Fixed {
            took: Duration::from_millis(1),
            calls: 0,
            prepared: false,
        };
        let search = ScenarioSpec {
            target_qps: Some(200.0),
            latency_bound_ms: Some(50.0),
            min_queries: fewest_queries_for(0.99),
            find_peak: true,
            ..spec(ScenarioKind::Server)
        };
        let r = run(&mut session, &search, 1).record;
        assert!(r.valid, "{:?}", r.invalid_reasons);
        let probes = &r.peak_search;
        assert!(probes.len() >= 3, "{probes:?}");
        assert!(probes.iter().any(|p| !p.valid), "{probes:?}");
        let best = r.target_qps.unwrap();
        assert!(probes
            .iter()
            .filter(|p| p.valid)
            .all(|p| p.target_qps <= best));
        assert!(probes
            .iter()
            .filter(|p| !p.valid)
            .all(|p| p.target_qps > best));
        assert!(best < 4000.0, "{best}");
    }

    #[test]
    fn a_peak_whose_queue_grows_is_not_valid_however_loose_the_bound() {
        // 1 ms a query, so at most 1000 per second complete, under a bound of an hour:
        // by latency alone every load is valid, and the search doubled to 10¹¹ QPS.
        // Each load it calls valid completed what arrived, within the schedule's spread.
        let mut session = Fixed {
            took: Duration::from_millis(1),
            calls: 0,
            prepared: false,
        };
        let search = ScenarioSpec {
            target_qps: Some(500.0),
            latency_bound_ms: Some(3_600_000.0),
            min_queries: fewest_queries_for(0.99),
            find_peak: true,
            ..spec(ScenarioKind::Server)
        };
        let r = run(&mut session, &search, 1).record;
        let best = r.target_qps.unwrap();
        let tolerance = 4.0 / (fewest_queries_for(0.99) as f64).sqrt();
        assert!(best <= 1000.0 / (1.0 - tolerance), "{best}");
        for p in r.peak_search.iter().filter(|p| p.valid) {
            assert!(p.achieved_qps >= p.target_qps * (1.0 - tolerance), "{p:?}");
        }
        let short = r
            .peak_search
            .iter()
            .find(|p| !p.valid)
            .expect("an overload probe");
        assert!(
            short
                .invalid_reasons
                .iter()
                .any(|w| w.contains("beyond what it sustains")),
            "{short:?}"
        );
    }

    #[test]
    fn a_run_falls_short_only_when_it_lags_and_its_queue_grows() {
        // Steady: 1000 queries at 100 per second in 10 s, latencies flat.
        let flat = vec![0.01; 1000];
        assert_eq!(fell_short(100.0, &flat, 10.0), None);
        // The same run taking twice as long, its latency flat: a slow schedule, not a queue.
        assert_eq!(fell_short(100.0, &flat, 20.0), None);
        // Near saturation the queue grows for a while, but what arrived completed.
        let ramp: Vec<f64> = (0..1000)
            .map(|i| 0.001 * (1.0 + i as f64 / 100.0))
            .collect();
        assert_eq!(fell_short(100.0, &ramp, 10.05), None);
        // Overloaded: completed at half the arrival rate, the queue growing all run.
        let why = fell_short(100.0, &ramp, 20.0).expect("an overloaded run");
        assert!(why.contains("completed 50.0 of the 100.0"), "{why}");
    }
}
