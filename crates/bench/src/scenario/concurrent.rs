//! Several queries in flight (`--in-flight N`): one session per query in flight, each
//! driven from its own thread, as a server with N workers serves its clients.
//!
//! Server: the issuer (this thread) releases each query at its scheduled arrival into
//! one queue; a session that is free takes the oldest, so a query waits only while
//! every session is busy (first come, first served: an M/G/N queue). Offline: every
//! call is there at the start, and each session takes the next as it finishes one.
//!
//! A session readies its next input as soon as it finishes a query, before it takes
//! the next: a session that keeps its input (the whole-model engines: ONNX Runtime,
//! OpenVINO, tract) computes the same one again, as a server computes the samples it
//! holds in memory (LoadGen's preloaded samples); one whose forward consumes its input
//! draws a fresh one. At a load that leaves a session idle between queries this costs
//! nothing, but a query already waiting waits for it too, as the schedule cannot pause
//! for one session while the others serve. Its median is recorded
//! (`scenario.input_draw_s`) beside the compute time.
//! A query's latency runs from its scheduled arrival (server) or the run's start
//! (offline) to its completion.

use super::{
    planned_queries, poisson_arrivals, serve, wait_until, Load, OnQuery, Overload, Timeline,
};
use anyhow::{anyhow, Result};
use cnnbench_engine::Session;
use cnnbench_results::scenario::ScenarioKind;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often the offline run's issuer looks for an interruption while the sessions
/// compute.
const CHECK_EVERY: Duration = Duration::from_millis(5);

/// A query released to the sessions: its place in the schedule and when it arrived.
pub(super) struct Released {
    pub(super) index: usize,
    pub(super) scheduled: Instant,
}

/// A query as a session served it.
pub(super) struct Served {
    pub(super) index: usize,
    /// When it arrived (server) or the run started (offline).
    pub(super) scheduled: Instant,
    pub(super) completed: Instant,
    pub(super) compute: Duration,
    /// The session's drawing of this query's input, before it took the query.
    pub(super) draw: Duration,
}

/// Readies the session's next input (the one it holds, where it keeps it: a
/// preloaded sample), untimed by the query's compute clock.
pub(super) fn draw(session: &mut dyn Session) -> Result<Duration> {
    let t = Instant::now();
    session.prepare_same_batch()?;
    session.sync()?;
    Ok(t.elapsed())
}

/// Issues the load to every session at once and times it.
pub(super) fn issue(
    sessions: &mut [&mut (dyn Session + 'static)],
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    match load.kind {
        ScenarioKind::Server => server(sessions, load, check, on_query),
        ScenarioKind::Offline => offline(sessions, load, check, on_query),
        ScenarioKind::SingleStream | ScenarioKind::MultiStream => Err(anyhow!(
            "{} issues its next query when the last completes: one query is in flight",
            load.kind
        )),
    }
}

/// Server: queries released at their Poisson arrivals into one queue, served first
/// come, first served by whichever session is free.
fn server(
    sessions: &mut [&mut (dyn Session + 'static)],
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    let qps = load
        .target_qps
        .ok_or_else(|| anyhow!("the server scenario needs a target QPS"))?;
    let planned = planned_queries(load);
    let arrivals = poisson_arrivals(qps, planned, load.seed);
    let overload = Overload::for_schedule(&arrivals, load);
    let (release, queue) = mpsc::channel::<Released>();
    let queue = Mutex::new(queue);
    let failed = AtomicBool::new(false);
    let (start, outcome, served) = std::thread::scope(|scope| {
        let workers: Vec<_> = sessions
            .iter_mut()
            .map(|session| {
                let (queue, failed, overload) = (&queue, &failed, &overload);
                scope.spawn(move || {
                    let mut served = Vec::new();
                    loop {
                        let drawn = match draw(&mut **session) {
                            Ok(took) => took,
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                return Err(e);
                            }
                        };
                        // The lock is held only while waiting for the next query: a
                        // free session takes the oldest one released.
                        let next = match queue.lock() {
                            Ok(queue) => queue.recv(),
                            Err(_) => break,
                        };
                        let Ok(query) = next else { break };
                        // Past the early stop the queue is drained unserved.
                        if overload.overdue(query.scheduled) {
                            continue;
                        }
                        match serve(&mut **session) {
                            Ok(compute) => served.push(Served {
                                index: query.index,
                                scheduled: query.scheduled,
                                completed: Instant::now(),
                                compute,
                                draw: drawn,
                            }),
                            Err(e) => {
                                failed.store(true, Ordering::SeqCst);
                                return Err(e);
                            }
                        }
                    }
                    Ok(served)
                })
            })
            .collect();
        let (start, outcome) =
            release_on_schedule(&arrivals, release, (&failed, &overload), check, on_query);
        (start, outcome, join(workers))
    });
    outcome?;
    let mut timeline = timeline(served?, start, 1, load.kind)?;
    timeline.abandoned = overload.abandoned(planned, timeline.queries);
    timeline.overdue_after_s = Some(overload.after.as_secs_f64());
    Ok(timeline)
}

/// The issuer of the server scenario: releases each query into the queue at its
/// scheduled arrival (from the start it returns), until the schedule ends, `check`
/// fails, a worker has failed or the run stopped early (`overload`); then closes the
/// queue, so that the workers finish what was released and stop.
pub(super) fn release_on_schedule(
    arrivals: &[Duration],
    release: mpsc::Sender<Released>,
    (failed, overload): (&AtomicBool, &Overload),
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
        let scheduled = start + *arrival;
        wait_until(scheduled);
        if release.send(Released { index, scheduled }).is_err() {
            break;
        }
        on_query(index + 1, arrivals.len(), start.elapsed().as_secs_f64());
    }
    (start, outcome)
}

/// Offline: every call there at the start; each session takes the next as it finishes
/// one, until the samples and the duration asked for are done.
fn offline(
    sessions: &mut [&mut (dyn Session + 'static)],
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    let batch = load.batch.max(1);
    let calls_needed = load.min_queries.div_ceil(batch);
    let planned = planned_queries(load);
    let taken = AtomicUsize::new(0);
    let completed = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (start, outcome, served) = std::thread::scope(|scope| {
        let start = Instant::now();
        let workers: Vec<_> = sessions
            .iter_mut()
            .map(|session| {
                let (taken, completed, stop) = (&taken, &completed, &stop);
                scope.spawn(move || {
                    let mut served = Vec::new();
                    while !stop.load(Ordering::SeqCst) {
                        let index = taken.fetch_add(1, Ordering::SeqCst);
                        if index >= calls_needed && start.elapsed() >= load.min_duration {
                            break;
                        }
                        match draw(&mut **session)
                            .and_then(|drawn| serve(&mut **session).map(|compute| (drawn, compute)))
                        {
                            Ok((drawn, compute)) => served.push(Served {
                                index,
                                scheduled: start,
                                completed: Instant::now(),
                                compute,
                                draw: drawn,
                            }),
                            Err(e) => {
                                stop.store(true, Ordering::SeqCst);
                                return Err(e);
                            }
                        }
                        completed.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(served)
                })
            })
            .collect();
        let mut outcome = Ok(());
        while workers.iter().any(|w| !w.is_finished()) {
            if let Err(e) = check() {
                stop.store(true, Ordering::SeqCst);
                outcome = Err(e);
                break;
            }
            let done = completed.load(Ordering::SeqCst) * batch;
            on_query(done, planned, start.elapsed().as_secs_f64());
            std::thread::sleep(CHECK_EVERY);
        }
        (start, outcome, join(workers))
    });
    outcome?;
    timeline(served?, start, batch, load.kind)
}

/// The sessions' queries, or the first failure among them.
fn join(
    workers: Vec<std::thread::ScopedJoinHandle<'_, Result<Vec<Served>>>>,
) -> Result<Vec<Served>> {
    let mut all = Vec::new();
    for worker in workers {
        let served = worker
            .join()
            .map_err(|_| anyhow!("a session serving the scenario's queries panicked"))??;
        all.extend(served);
    }
    Ok(all)
}

/// The run as the sequential issuer reports it: latencies and compute times in issue
/// order (offline: in order of completion), the duration to the last completion.
pub(super) fn timeline(
    mut served: Vec<Served>,
    start: Instant,
    batch: usize,
    kind: ScenarioKind,
) -> Result<Timeline> {
    if served.is_empty() {
        return Err(anyhow!("no query was served"));
    }
    match kind {
        ScenarioKind::Offline => served.sort_by_key(|s| s.completed),
        ScenarioKind::Server | ScenarioKind::SingleStream | ScenarioKind::MultiStream => {
            served.sort_by_key(|s| s.index)
        }
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
        queries: match kind {
            ScenarioKind::Offline => 1,
            ScenarioKind::Server | ScenarioKind::SingleStream | ScenarioKind::MultiStream => calls,
        },
        samples: calls * batch,
        duration_s: last.saturating_duration_since(start).as_secs_f64(),
        input_draw_s: Some(draws[draws.len() / 2]),
        batcher: None,
        abandoned: 0,
        overdue_after_s: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{drive, Driven, Serving, SERVING};
    use super::*;
    use cnnbench_results::scenario::ScenarioSpec;

    /// A session whose every query sleeps a fixed time: it needs no CPU, so the test
    /// does not need an idle machine.
    struct Sleeping {
        took: Duration,
        calls: usize,
    }

    impl Session for Sleeping {
        fn prepare_batch(&mut self) -> Result<()> {
            Ok(())
        }
        fn forward(&mut self) -> Result<()> {
            self.calls += 1;
            std::thread::sleep(self.took);
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }

    fn sessions(n: usize, took: Duration) -> Vec<Sleeping> {
        (0..n).map(|_| Sleeping { took, calls: 0 }).collect()
    }

    fn run(sessions: &mut [Sleeping], spec: &ScenarioSpec, batch: usize) -> Driven {
        let serving = Serving {
            sessions: sessions
                .iter_mut()
                .map(|s| s as &mut (dyn Session + 'static))
                .collect(),
            batch_sessions: Vec::new(),
            description: SERVING.into(),
        };
        drive(serving, spec, 11, batch, &|| Ok(()), &mut |_, _, _| {}).unwrap()
    }

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

    fn mean(values: &[f64]) -> f64 {
        values.iter().sum::<f64>() / values.len() as f64
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
    fn offline_with_three_sessions_serves_three_times_as_fast() {
        let spec = ScenarioSpec {
            min_duration_s: 0.0,
            min_queries: 120,
            ..ScenarioSpec::new(ScenarioKind::Offline)
        };
        let one = run(&mut sessions(1, Duration::from_millis(3)), &spec, 2);
        let mut three = sessions(3, Duration::from_millis(3));
        let driven = run(&mut three, &spec, 2);
        let r = &driven.record;
        assert_eq!(r.samples, 120);
        assert_eq!(three.iter().map(|s| s.calls).sum::<usize>(), 60);
        // Three sessions against one, each at the compute times it measured: up to 3×
        // (three calls at a time, never more), and well above 1× (a busy machine adds
        // the gaps between calls to both runs alike).
        let speedup = r.samples_per_s / one.record.samples_per_s;
        let ideal = 3.0 * mean(&one.compute_s) / mean(&driven.compute_s);
        assert!(
            speedup > 0.6 * ideal && speedup < 1.1 * ideal,
            "{speedup} (three calls at a time of the measured compute times: {ideal})"
        );
        assert!(r.latencies_s.windows(2).all(|w| w[1] >= w[0]));
        assert!(r.input_draw_s.is_some() && one.record.input_draw_s.is_none());
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
}
