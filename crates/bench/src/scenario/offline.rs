//! The offline scenario: every sample there at the start, issued in calls of `-b`
//! samples; each call's latency is its completion since the issue. One session computes
//! the calls one after another, the time drawing inputs left out of the run's clock;
//! several (`--in-flight N`), each driven from its own thread, take the next call as
//! each finishes one, every session drawing its next input before it takes the call
//! (see [`super::draw`]; its median is recorded beside the compute time).

use super::{
    draw, draw_and_serve, join, planned_queries, serve, timeline, Load, OnQuery, Served, Timeline,
};
use anyhow::Result;
use cnnbench_engine::Session;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the offline run's issuer looks for an interruption while the sessions
/// compute.
const CHECK_EVERY: Duration = Duration::from_millis(5);

/// Issues the offline load to the sessions and times it.
pub(super) fn issue(
    sessions: &mut [&mut (dyn Session + 'static)],
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    match sessions {
        [session] => one_after_another(&mut **session, load, check, on_query),
        _ => concurrent(sessions, load, check, on_query),
    }
}

/// One session computes the calls one after another; the clock runs only while it
/// computes.
fn one_after_another(
    session: &mut dyn Session,
    load: &Load,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    let planned = planned_queries(load);
    let mut latencies_s = Vec::new();
    let mut compute_s = Vec::new();
    let mut clock = Duration::ZERO;
    let mut samples = 0;
    while samples < load.min_queries || clock < load.min_duration {
        let took = draw_and_serve(session, check)?;
        clock += took;
        samples += load.batch;
        latencies_s.push(clock.as_secs_f64());
        compute_s.push(took.as_secs_f64());
        on_query(samples, planned, clock.as_secs_f64());
    }
    Ok(Timeline {
        latencies_s,
        compute_s,
        queries: 1,
        samples,
        duration_s: clock.as_secs_f64(),
        input_draw_s: None,
        batcher: None,
        abandoned: 0,
        overdue_after_s: None,
    })
}

/// Several sessions: every call there at the start; each takes the next as it finishes
/// one, until the samples and the duration asked for are done.
fn concurrent(
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
    timeline(served?.into_iter().flatten().collect(), start, batch, true)
}

#[cfg(test)]
mod tests {
    use super::super::fakes::{mean, run, sessions};
    use super::*;
    use cnnbench_results::scenario::{ScenarioKind, ScenarioSpec};

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
}
