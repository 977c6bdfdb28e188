//! The server scenario's one issuer, over one worker per query in flight
//! (`--in-flight N`), each driven from its own thread, with or without the dynamic
//! batcher (`--max-batch`, `--batch-timeout`).
//!
//! The issuer (this thread) releases each query at its scheduled Poisson arrival into
//! one queue; a worker that is free takes the oldest, so a query waits only while every
//! worker is busy (first come, first served: an M/G/N queue). With the batcher, as
//! Triton Inference Server's, the worker also takes the queries waiting behind it, up
//! to the largest batch, and when fewer are waiting holds the batch open until the
//! oldest has waited the timeout since its arrival (Triton's `max_queue_delay`). A call
//! is computed on the worker's smallest session that holds it (sessions are compiled
//! for fixed batch sizes: [`BatcherSpec::session_batch_sizes`]); the rest of that
//! session's batch is padding, computed and recorded, never counted as served. Without
//! the batcher a worker takes one query a call, on its one session.
//!
//! A worker readies its session's next input as soon as it finishes a call, before it
//! takes the next (see [`super::draw`]). With one worker the schedule pauses while it
//! draws, as a lone server's input drawing is not the system's work; with several it
//! cannot pause for one while the others serve, and the median draw is recorded
//! (`scenario.input_draw_s`) beside the compute time.
//!
//! Every query of a call completes when its call does; its latency runs from its
//! scheduled arrival, so the time it waited in the queue, or for its batch to fill, is
//! part of it, and an issuer that falls behind shows as latency (no coordinated
//! omission).

use super::{
    draw, join, planned_queries, poisson_arrivals, serve, timeline, wait_until, Load, OnQuery,
    Overload, Served, Timeline,
};
use anyhow::{anyhow, Result};
use cnnbench_engine::Session;
use cnnbench_results::scenario::{BatcherRecord, BatcherSpec};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One worker's sessions, by the batch each computes per call, ascending from 1.
pub type Worker<'s> = Vec<(usize, &'s mut (dyn Session + 'static))>;

/// A query released to the workers: its place in the schedule, when it arrived, and
/// how long the schedule had paused by then (one worker; zero with several).
struct Released {
    index: usize,
    scheduled: Instant,
    paused: Duration,
}

/// How a worker gathers a call's queries: one at a time (`max_batch` 1), or the
/// dynamic batcher's policy.
#[derive(Clone, Copy)]
struct Gathering {
    max_batch: usize,
    timeout: Duration,
}

/// The time the schedule has paused for the one worker's input drawing, in
/// nanoseconds: the issuer shifts each arrival by it, and the worker each query it
/// takes by what it drew since the query's release.
#[derive(Default)]
struct SchedulePause(AtomicU64);

impl SchedulePause {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::SeqCst))
    }

    fn add(&self, drawn: Duration) {
        let nanos = u64::try_from(drawn.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::SeqCst);
    }
}

/// One call a worker made: the queries it gathered, the session's batch, and the
/// engine's compute time.
struct Call {
    gathered: usize,
    session_batch: usize,
    compute_s: f64,
}

/// What one worker served: every query, and every call.
type WorkDone = (Vec<Served>, Vec<Call>);

/// Issues the server scenario's load to `workers` and times it.
pub(super) fn issue(
    workers: &mut [Worker<'_>],
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    let qps = load
        .target_qps
        .ok_or_else(|| anyhow!("the server scenario needs a target QPS"))?;
    if workers.is_empty() {
        return Err(anyhow!("a scenario needs a session to serve its queries"));
    }
    let sizes = load
        .batcher
        .as_ref()
        .map_or(vec![1], BatcherSpec::session_batch_sizes);
    for worker in workers.iter() {
        let theirs: Vec<usize> = worker.iter().map(|(size, _)| *size).collect();
        if theirs != sizes {
            return Err(anyhow!(
                "the server needs a session for each batch of {sizes:?} on every worker, and a worker has {theirs:?}"
            ));
        }
    }
    let gathering = match &load.batcher {
        Some(batcher) => Gathering {
            max_batch: batcher.max_batch,
            // A validated spec's timeout is at most a minute.
            timeout: Duration::try_from_secs_f64(batcher.timeout_ms / 1e3).unwrap_or_default(),
        },
        None => Gathering {
            max_batch: 1,
            timeout: Duration::ZERO,
        },
    };
    let planned = planned_queries(load);
    let arrivals = poisson_arrivals(qps, planned, load.seed);
    let overload = Overload::for_schedule(&arrivals, load);
    let pause = (workers.len() == 1).then(SchedulePause::default);
    let (release, queue) = mpsc::channel::<Released>();
    let queue = Mutex::new(queue);
    let failed = AtomicBool::new(false);
    let (start, outcome, results) = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|worker| {
                let (queue, failed, overload, pause) = (&queue, &failed, &overload, &pause);
                scope.spawn(move || {
                    let outcome = work(worker, queue, gathering, overload, pause.as_ref());
                    if outcome.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    outcome
                })
            })
            .collect();
        let (start, outcome) = release_on_schedule(
            &arrivals,
            release,
            (&failed, &overload, pause.as_ref()),
            check,
            on_query,
        );
        (start, outcome, join(handles))
    });
    outcome?;
    let mut served = Vec::new();
    let mut calls = Vec::new();
    for (their_served, their_calls) in results? {
        served.extend(their_served);
        calls.extend(their_calls);
    }
    // Without the batcher a call is a query: its compute times are in the queries'
    // order, as their latencies.
    let mut timeline = timeline(served, start, 1, false)?;
    if let Some(batcher) = &load.batcher {
        // The engine's compute time per call, as the result's samples.
        timeline.compute_s = calls.iter().map(|call| call.compute_s).collect();
        timeline.batcher = Some(record(batcher, &sizes, &calls));
    }
    if let Some(pause) = &pause {
        // The one worker's draws were out of the schedule, as out of its duration.
        timeline.duration_s = (timeline.duration_s - pause.now().as_secs_f64()).max(0.0);
        timeline.input_draw_s = None;
    }
    timeline.abandoned = overload.abandoned(planned, timeline.queries);
    timeline.overdue_after_s = Some(overload.after.as_secs_f64());
    Ok(timeline)
}

/// The issuer: releases each query into the queue at its scheduled arrival (from the
/// start it returns, shifted by the schedule's pause), until the schedule ends, `check`
/// fails, a worker has failed or the run stopped early (`overload`); then closes the
/// queue, so that the workers finish what was released and stop.
fn release_on_schedule(
    arrivals: &[Duration],
    release: mpsc::Sender<Released>,
    (failed, overload, pause): (&AtomicBool, &Overload, Option<&SchedulePause>),
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> (Instant, Result<()>) {
    let start = Instant::now();
    let mut outcome = Ok(());
    for (index, arrival) in arrivals.iter().enumerate() {
        if let Err(e) = check() {
            outcome = Err(e);
            break;
        }
        if failed.load(Ordering::SeqCst) || overload.stopped() {
            break;
        }
        let paused = pause.map_or(Duration::ZERO, SchedulePause::now);
        let scheduled = start + *arrival + paused;
        wait_until(scheduled);
        let query = Released {
            index,
            scheduled,
            paused,
        };
        if release.send(query).is_err() {
            break;
        }
        let ran = start.elapsed().saturating_sub(paused);
        on_query(index + 1, arrivals.len(), ran.as_secs_f64());
    }
    (start, outcome)
}

/// The queries the worker takes: the oldest waiting (waiting for one if none is), then
/// those behind it, up to `max_batch`, holding the batch open until `timeout` after the
/// oldest's arrival. `None` once the queue is closed and empty.
fn gather(queue: &mpsc::Receiver<Released>, gathering: Gathering) -> Option<Vec<Released>> {
    let first = queue.recv().ok()?;
    let deadline = first.scheduled + gathering.timeout;
    let mut batch = vec![first];
    while batch.len() < gathering.max_batch {
        match queue.try_recv() {
            Ok(next) => {
                batch.push(next);
                continue;
            }
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {}
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        match queue.recv_timeout(deadline - now) {
            Ok(next) => batch.push(next),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
        }
    }
    Some(batch)
}

/// A worker's loop: draw the inputs, gather a call's queries, compute them on the
/// session that holds them, until the queue closes. With `pause` (one worker), its
/// draws pause the schedule: each query it takes is shifted by what it drew since the
/// query's release, and waited for, as a lone server readies its input before the
/// next arrival is due.
fn work(
    worker: &mut Worker<'_>,
    queue: &Mutex<mpsc::Receiver<Released>>,
    gathering: Gathering,
    overload: &Overload,
    pause: Option<&SchedulePause>,
) -> Result<WorkDone> {
    let mut served = Vec::new();
    let mut calls = Vec::new();
    let mut drawn = Duration::ZERO;
    for (_, session) in worker.iter_mut() {
        drawn += draw(&mut **session)?;
    }
    if let Some(pause) = pause {
        pause.add(drawn);
    }
    loop {
        // The lock is held while gathering: the worker that takes the oldest query
        // also takes the ones behind it, first come, first served.
        let batch = match queue.lock() {
            Ok(queue) => gather(&queue, gathering),
            Err(_) => None,
        };
        let Some(mut batch) = batch else { break };
        if let Some(pause) = pause {
            let now = pause.now();
            for query in &mut batch {
                query.scheduled += now.saturating_sub(query.paused);
            }
            if let Some(latest) = batch.iter().map(|query| query.scheduled).max() {
                wait_until(latest);
            }
        }
        // Past the early stop the queue is drained unserved.
        if overload.overdue(batch[0].scheduled) {
            continue;
        }
        let (session_batch, session) = worker
            .iter_mut()
            .find(|(size, _)| *size >= batch.len())
            .ok_or_else(|| anyhow!("no session holds a batch of {}", batch.len()))?;
        let compute = serve(&mut **session)?;
        let completed = Instant::now();
        calls.push(Call {
            gathered: batch.len(),
            session_batch: *session_batch,
            compute_s: compute.as_secs_f64(),
        });
        for query in batch {
            served.push(Served {
                index: query.index,
                scheduled: query.scheduled,
                completed,
                compute,
                draw: drawn,
            });
        }
        drawn = draw(&mut **session)?;
        if let Some(pause) = pause {
            pause.add(drawn);
        }
    }
    Ok((served, calls))
}

/// The batcher's record of the calls made.
fn record(batcher: &BatcherSpec, sizes: &[usize], calls: &[Call]) -> BatcherRecord {
    let mut gathered = vec![0; batcher.max_batch];
    let mut padded_samples = 0;
    let mut queries = 0;
    for call in calls {
        if let Some(count) = call
            .gathered
            .checked_sub(1)
            .and_then(|i| gathered.get_mut(i))
        {
            *count += 1;
        }
        padded_samples += call.session_batch.saturating_sub(call.gathered);
        queries += call.gathered;
    }
    BatcherRecord {
        max_batch: batcher.max_batch,
        timeout_ms: batcher.timeout_ms,
        session_batch_sizes: sizes.to_vec(),
        calls: calls.len(),
        gathered,
        mean_batch: if calls.is_empty() {
            0.0
        } else {
            queries as f64 / calls.len() as f64
        },
        padded_samples,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fakes::{mean, run, sessions, Sleeping};
    use super::super::{drive, Driven, Serving, SERVING};
    use super::*;
    use cnnbench_results::scenario::{ScenarioKind, ScenarioSpec};

    fn server(qps: f64, bound_ms: f64, queries: usize) -> ScenarioSpec {
        ScenarioSpec {
            target_qps: Some(qps),
            latency_bound_ms: Some(bound_ms),
            min_duration_s: 0.0,
            min_queries: queries,
            ..ScenarioSpec::new(ScenarioKind::Server)
        }
    }

    /// Each query's latency in a first-come-first-served queue of `servers` that
    /// take the given compute times, on the given arrivals: the queue as it should be.
    fn fcfs_latencies(arrivals: &[Duration], compute_s: &[f64], servers: usize) -> Vec<f64> {
        let mut free_at = vec![0.0_f64; servers];
        arrivals
            .iter()
            .zip(compute_s)
            .map(|(arrival, compute)| {
                let arrival = arrival.as_secs_f64();
                let (first_free, at) = free_at
                    .iter()
                    .copied()
                    .enumerate()
                    .min_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, 0.0));
                let done = arrival.max(at) + compute;
                free_at[first_free] = done;
                done - arrival
            })
            .collect()
    }

    /// The run's latencies against the queue simulated on its own arrivals and its own
    /// measured compute times: no query's latency is shorter than that queue gives it.
    /// It holds on any machine, however busy: an issuer late on the schedule, a session
    /// woken late or slowed, only add to a latency that runs from the scheduled arrival
    /// (a first-come-first-served queue's start times only grow with its arrivals and
    /// service times). A latency measured from the issue instead of the schedule, or a
    /// wait left out, falls below it. Returns the simulated mean.
    fn assert_no_shorter_than_the_queue(driven: &Driven, qps: f64, servers: usize) -> f64 {
        let r = &driven.record;
        let arrivals = poisson_arrivals(qps, r.queries, 11);
        let expected = fcfs_latencies(&arrivals, &driven.compute_s, servers);
        // Timer rounding: a compute time is timed inside the span its query held the
        // session.
        const ROUNDING_S: f64 = 50e-6;
        let shorter: Vec<String> = r
            .latencies_s
            .iter()
            .zip(&expected)
            .enumerate()
            .filter(|(_, (m, e))| **m < **e - ROUNDING_S)
            .map(|(i, (m, e))| format!("query {i}: {m} s, the queue {e} s"))
            .collect();
        assert!(
            shorter.is_empty(),
            "{servers} in flight: latencies shorter than the queue allows:\n{}",
            shorter.join("\n")
        );
        expected.iter().sum::<f64>() / expected.len() as f64
    }

    #[test]
    fn one_session_queues_as_m_d_1_and_two_as_m_d_2() {
        // 4 ms a query (at least: a sleep), 125 queries a second: one session is busy
        // half the time. Every expectation is of the run's own measured compute times,
        // never of the wall clock: a busy machine slows the sessions and the issuer, and
        // the queue they make is what is checked.
        let spec = server(125.0, 100.0, 600);
        let driven = run(&mut sessions(1, Duration::from_millis(4)), &spec, 1);
        assert_eq!(driven.record.in_flight, 1);
        let simulated = assert_no_shorter_than_the_queue(&driven, 125.0, 1);
        // The simulated queue is M/D/1's: Pollaczek–Khinchine's mean,
        // D + ρD / (2(1 − ρ)), within 25% where the measured load leaves it stable.
        let d = mean(&driven.compute_s);
        let rho = 125.0 * d;
        if rho < 0.8 {
            let pollaczek_khinchine = d + rho * d / (2.0 * (1.0 - rho));
            assert!(
                (simulated - pollaczek_khinchine).abs() < 0.25 * pollaczek_khinchine,
                "M/D/1 mean {pollaczek_khinchine} s, the queue of the run's compute times {simulated} s"
            );
        }
        // Two sessions at 375 a second: 75% busy, queries often wait for both.
        let mut pair = sessions(2, Duration::from_millis(4));
        let spec = server(375.0, 100.0, 600);
        let driven = run(&mut pair, &spec, 1);
        assert_eq!(driven.record.in_flight, 2);
        assert_eq!(pair[0].calls + pair[1].calls, 600);
        assert!(pair.iter().all(|s| s.calls > 100), "both sessions serve");
        let queue_mean = assert_no_shorter_than_the_queue(&driven, 375.0, 2);
        assert!(
            queue_mean > mean(&driven.compute_s) * 1.05,
            "the queries waited: {queue_mean}"
        );
    }

    #[test]
    fn two_sessions_serve_a_load_that_overwhelms_one() {
        // 5 ms a query (at least): one session serves at most 200 a second, so at 300 a
        // second its queue grows through the run, on any machine (a busy one only
        // slows it more). Two sessions serve twice as fast as one, whatever the machine
        // does to both: their tail is a fraction of the single session's and they serve
        // more queries a second. Nothing is held against a wall-clock constant.
        let spec = server(300.0, 100.0, 500);
        let one = run(&mut sessions(1, Duration::from_millis(5)), &spec, 1);
        let two = run(&mut sessions(2, Duration::from_millis(5)), &spec, 1);
        assert_no_shorter_than_the_queue(&one, 300.0, 1);
        assert_no_shorter_than_the_queue(&two, 300.0, 2);
        let (one_compute, one, two_compute, two) =
            (one.compute_s, one.record, two.compute_s, two.record);
        assert!(!one.valid, "one session at 150% load: {:?}", one.latency);
        assert!(
            two.latency.p99 < one.latency.p99 / 2.0,
            "{:?} {:?}",
            two.latency,
            one.latency
        );
        assert!(
            two.achieved_qps > one.achieved_qps * 1.2,
            "{} {}",
            two.achieved_qps,
            one.achieved_qps
        );
        // Physics: a session cannot serve faster than one query per compute time.
        assert!(
            one.achieved_qps <= 1.05 / mean(&one_compute),
            "{}",
            one.achieved_qps
        );
        assert!(two.achieved_qps <= 1.05 * 2.0 / mean(&two_compute));
    }

    #[test]
    fn a_session_that_fails_ends_the_run_with_its_error() {
        struct Failing;
        impl Session for Failing {
            fn prepare_batch(&mut self) -> Result<()> {
                Ok(())
            }
            fn forward(&mut self) -> Result<()> {
                Err(anyhow!("the device went away"))
            }
            fn sync(&mut self) -> Result<()> {
                Ok(())
            }
        }
        let mut good = Sleeping {
            took: Duration::from_millis(1),
            calls: 0,
        };
        let mut bad = Failing;
        let serving = Serving {
            sessions: vec![&mut good, &mut bad],
            batch_sessions: Vec::new(),
            description: SERVING.into(),
        };
        let spec = server(200.0, 50.0, 200);
        let e = drive(serving, &spec, 1, 1, &|| Ok(()), &mut |_, _, _| {})
            .err()
            .map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("the device went away"));
    }

    /// A session of a fixed batch whose every call sleeps `base + per_sample × batch`:
    /// a batch is cheaper per sample than one at a time, as on a real engine.
    struct Batched {
        base: Duration,
        per_sample: Duration,
        batch: usize,
        calls: usize,
    }

    impl Session for Batched {
        fn prepare_batch(&mut self) -> Result<()> {
            Ok(())
        }
        fn forward(&mut self) -> Result<()> {
            self.calls += 1;
            std::thread::sleep(self.base + self.per_sample * self.batch as u32);
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }

    fn batched_server(qps: f64, bound_ms: f64, batcher: Option<BatcherSpec>) -> ScenarioSpec {
        ScenarioSpec {
            target_qps: Some(qps),
            latency_bound_ms: Some(bound_ms),
            min_duration_s: 0.0,
            min_queries: 500,
            batcher,
            ..ScenarioSpec::new(ScenarioKind::Server)
        }
    }

    /// One worker's sessions at `sizes`: 4 ms a call plus 0.5 ms a sample.
    fn batched_sessions(sizes: &[usize]) -> Vec<Batched> {
        sizes
            .iter()
            .map(|&batch| Batched {
                base: Duration::from_millis(4),
                per_sample: Duration::from_micros(500),
                batch,
                calls: 0,
            })
            .collect()
    }

    fn run_batched(spec: &ScenarioSpec, sessions: &mut [Batched]) -> Driven {
        let (first, rest) = sessions.split_first_mut().unwrap();
        let serving = Serving {
            sessions: vec![first as &mut (dyn Session + 'static)],
            batch_sessions: vec![rest
                .iter_mut()
                .map(|s| (s.batch, s as &mut (dyn Session + 'static)))
                .collect()],
            description: SERVING.into(),
        };
        drive(serving, spec, 5, 1, &|| Ok(()), &mut |_, _, _| {}).unwrap()
    }

    #[test]
    fn batching_serves_a_load_that_one_at_a_time_cannot() {
        // 300 queries a second of 4.5 ms each one at a time is 135% of one session:
        // the queue grows without bound. Batched, a call of 8 takes 8 ms, so the
        // worker keeps up by gathering what arrived while it computed.
        let one_at_a_time = run_batched(
            &batched_server(300.0, 100.0, None),
            &mut batched_sessions(&[1]),
        )
        .record;
        assert!(!one_at_a_time.valid, "{:?}", one_at_a_time.latency);
        let batcher = BatcherSpec {
            max_batch: 8,
            timeout_ms: 0.0,
        };
        let mut batched_sessions = batched_sessions(&batcher.session_batch_sizes());
        let batched = run_batched(
            &batched_server(300.0, 100.0, Some(batcher)),
            &mut batched_sessions,
        )
        .record;
        // Against the unbatched run on the same machine, not a wall-clock bound: a busy
        // machine slows both, and the batched tail stays a fraction of the growing queue's.
        assert!(
            batched.latency.p99 < one_at_a_time.latency.p99 / 2.0,
            "{:?} {:?}",
            batched.latency,
            one_at_a_time.latency
        );
        let record = batched.batcher.as_ref().unwrap();
        assert_eq!(record.session_batch_sizes, [1, 2, 4, 8]);
        // Every query was served once, in calls of more than one on average.
        let queries: usize = record
            .gathered
            .iter()
            .enumerate()
            .map(|(i, calls)| (i + 1) * calls)
            .sum();
        assert_eq!(queries, batched.queries);
        assert_eq!(record.calls, record.gathered.iter().sum::<usize>());
        assert!(record.mean_batch > 1.2, "{record:?}");
        let calls: usize = batched_sessions.iter().map(|s| s.calls).sum();
        assert_eq!(calls, record.calls);
        assert_eq!(batched.latencies_s.len(), batched.queries);
        // The padding is what the sessions' batches held beyond what was gathered.
        let computed: usize = batched_sessions.iter().map(|s| s.calls * s.batch).sum();
        assert_eq!(computed - queries, record.padded_samples);
    }

    #[test]
    fn the_timeout_holds_a_light_load_back_to_gather_a_batch() {
        // At 40 queries a second a query rarely finds another waiting: without a
        // timeout nearly every call is one query. With 30 ms, a call waits for the
        // queries arriving in that time (1.2 on average), and every query's latency
        // includes its wait: at least the compute time, and the first of a batch
        // waits out the timeout unless the batch fills.
        let batcher = |timeout_ms| BatcherSpec {
            max_batch: 4,
            timeout_ms,
        };
        let light = |timeout_ms| ScenarioSpec {
            min_queries: 120,
            ..batched_server(40.0, 200.0, Some(batcher(timeout_ms)))
        };
        let eager = run_batched(&light(0.0), &mut batched_sessions(&[1, 2, 4]));
        let patient = run_batched(&light(30.0), &mut batched_sessions(&[1, 2, 4]));
        let eager_batch = eager.record.batcher.as_ref().unwrap().mean_batch;
        let patient_batch = patient.record.batcher.as_ref().unwrap().mean_batch;
        // Without a timeout a call takes what arrived while the last one computed: at
        // 40 a second, about 1 + 40 × its compute time, as measured (a busy machine
        // slows the calls, and more arrive meanwhile).
        let slowest_call = eager.compute_s.iter().copied().fold(0.0, f64::max);
        assert!(
            eager_batch < 1.1 + 40.0 * slowest_call,
            "{eager_batch} (calls of up to {slowest_call} s)"
        );
        let (eager, patient_compute, patient) = (eager.record, patient.compute_s, patient.record);
        assert!(
            patient_batch > eager_batch + 0.4,
            "{patient_batch} {eager_batch}"
        );
        // Waiting for the batch shows in the latency: the median query waits.
        assert!(
            patient.latency.p50 > eager.latency.p50 + 0.005,
            "{:?} {:?}",
            patient.latency,
            eager.latency
        );
        // A query never waits much beyond the timeout plus a call of the largest batch
        // (and the call before it) at this light load, at the calls' measured times.
        let slowest_call = patient_compute.iter().copied().fold(0.0, f64::max);
        assert!(
            patient.latency.p50 < 0.030 + 3.0 * slowest_call,
            "{:?} (calls of up to {slowest_call} s)",
            patient.latency
        );
    }

    #[test]
    fn gather_takes_what_waits_and_no_more_than_the_largest_batch() {
        let up_to_4 = |timeout| Gathering {
            max_batch: 4,
            timeout,
        };
        let (release, queue) = mpsc::channel();
        let now = Instant::now();
        for index in 0..5 {
            release
                .send(Released {
                    index,
                    scheduled: now,
                    paused: Duration::ZERO,
                })
                .unwrap();
        }
        let first = gather(&queue, up_to_4(Duration::ZERO)).unwrap();
        assert_eq!(
            first.iter().map(|q| q.index).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let second = gather(&queue, up_to_4(Duration::from_millis(20))).unwrap();
        assert_eq!(second.len(), 1, "nothing more arrived within the timeout");
        drop(release);
        assert!(gather(&queue, up_to_4(Duration::ZERO)).is_none());
    }
}
