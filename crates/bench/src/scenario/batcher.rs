//! The server scenario's dynamic batcher (`--max-batch`, `--batch-timeout`), as Triton
//! Inference Server's: queries are released at their scheduled arrivals into one queue;
//! a free worker takes the oldest and the queries waiting behind it, up to the largest
//! batch, and when fewer are waiting holds the batch open until the oldest has waited
//! the timeout since its arrival (Triton's `max_queue_delay`). The batch is computed in
//! one call on the worker's smallest session that holds it (sessions are compiled for
//! fixed batch sizes: [`BatcherSpec::session_batch_sizes`]); the rest of that session's
//! batch is padding, computed and recorded, never counted as served.
//!
//! Every query of a batch completes when its call does; its latency runs from its
//! scheduled arrival, so the time it waited for the batch to fill is part of it.

use super::concurrent::{draw, release_on_schedule, timeline, Released, Served};
use super::{planned_queries, poisson_arrivals, serve, Load, OnQuery, Overload, Timeline};
use anyhow::{anyhow, Result};
use cnnbench_engine::Session;
use cnnbench_results::scenario::{BatcherRecord, BatcherSpec, ScenarioKind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One worker's sessions, by the batch each computes per call, ascending from 1.
pub type Worker<'s> = Vec<(usize, &'s mut (dyn Session + 'static))>;

/// One call a worker made: the queries it gathered, the session's batch, and the
/// engine's compute time.
struct Call {
    gathered: usize,
    session_batch: usize,
    compute_s: f64,
}

/// The queries the worker takes: the oldest waiting (waiting for one if none is), then
/// those behind it, up to `max_batch`, holding the batch open until `timeout` after the
/// oldest's arrival. `None` once the queue is closed and empty.
fn gather(
    queue: &mpsc::Receiver<Released>,
    max_batch: usize,
    timeout: Duration,
) -> Option<Vec<Released>> {
    let first = queue.recv().ok()?;
    let deadline = first.scheduled + timeout;
    let mut batch = vec![first];
    while batch.len() < max_batch {
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

/// The server scenario with the dynamic batcher over `workers` (one per query in
/// flight, each with a session per batch size).
pub(super) fn server(
    workers: &mut [Worker<'_>],
    load: &Load,
    batcher: &BatcherSpec,
    check: &dyn Fn() -> Result<()>,
    on_query: &mut OnQuery<'_>,
) -> Result<Timeline> {
    let qps = load
        .target_qps
        .ok_or_else(|| anyhow!("the server scenario needs a target QPS"))?;
    let sizes = batcher.session_batch_sizes();
    for worker in workers.iter() {
        let theirs: Vec<usize> = worker.iter().map(|(size, _)| *size).collect();
        if theirs != sizes {
            return Err(anyhow!(
                "the dynamic batcher needs a session for each batch of {sizes:?}, and a worker has {theirs:?}"
            ));
        }
    }
    // A validated spec's timeout is at most a minute.
    let timeout = Duration::try_from_secs_f64(batcher.timeout_ms / 1e3).unwrap_or_default();
    let planned = planned_queries(load);
    let arrivals = poisson_arrivals(qps, planned, load.seed);
    let overload = Overload::for_schedule(&arrivals, load);
    let (release, queue) = mpsc::channel::<Released>();
    let queue = Mutex::new(queue);
    let failed = AtomicBool::new(false);
    let (start, outcome, results) = std::thread::scope(|scope| {
        let handles: Vec<_> = workers
            .iter_mut()
            .map(|worker| {
                let (queue, failed, overload) = (&queue, &failed, &overload);
                scope.spawn(move || {
                    let outcome = work(worker, queue, (batcher.max_batch, timeout), overload);
                    if outcome.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    outcome
                })
            })
            .collect();
        let (start, outcome) =
            release_on_schedule(&arrivals, release, (&failed, &overload), check, on_query);
        let mut results = Vec::new();
        for handle in handles {
            results.push(
                handle
                    .join()
                    .map_err(|_| anyhow!("a worker serving the scenario's queries panicked")),
            );
        }
        (start, outcome, results)
    });
    outcome?;
    let mut served = Vec::new();
    let mut calls = Vec::new();
    for result in results {
        let (their_served, their_calls) = result??;
        served.extend(their_served);
        calls.extend(their_calls);
    }
    let mut timeline = timeline(served, start, 1, ScenarioKind::Server)?;
    // The engine's compute time per call, as the result's samples.
    timeline.compute_s = calls.iter().map(|call| call.compute_s).collect();
    timeline.batcher = Some(record(batcher, &sizes, &calls));
    timeline.abandoned = overload.abandoned(planned, timeline.queries);
    timeline.overdue_after_s = Some(overload.after.as_secs_f64());
    Ok(timeline)
}

/// What one worker served: every query, and every call.
type WorkDone = (Vec<Served>, Vec<Call>);

/// A worker's loop: draw the inputs, gather a batch, compute it on the session that
/// holds it, until the queue closes.
fn work(
    worker: &mut Worker<'_>,
    queue: &Mutex<mpsc::Receiver<Released>>,
    (max_batch, timeout): (usize, Duration),
    overload: &Overload,
) -> Result<WorkDone> {
    let mut served = Vec::new();
    let mut calls = Vec::new();
    let mut drawn = Duration::ZERO;
    for (_, session) in worker.iter_mut() {
        drawn += draw(&mut **session)?;
    }
    loop {
        // The lock is held while gathering: the worker that takes the oldest query
        // also takes the ones behind it, first come, first served.
        let batch = match queue.lock() {
            Ok(queue) => gather(&queue, max_batch, timeout),
            Err(_) => None,
        };
        let Some(batch) = batch else { break };
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
    use super::super::{drive, Driven, Serving, SERVING};
    use super::*;
    use cnnbench_results::scenario::ScenarioSpec;

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

    fn server(qps: f64, bound_ms: f64, batcher: Option<BatcherSpec>) -> ScenarioSpec {
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
    fn sessions(sizes: &[usize]) -> Vec<Batched> {
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

    fn run(spec: &ScenarioSpec, sessions: &mut [Batched]) -> Driven {
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
        let one_at_a_time = run(&server(300.0, 100.0, None), &mut sessions(&[1])).record;
        assert!(!one_at_a_time.valid, "{:?}", one_at_a_time.latency);
        let batcher = BatcherSpec {
            max_batch: 8,
            timeout_ms: 0.0,
        };
        let mut batched_sessions = sessions(&batcher.session_batch_sizes());
        let batched = run(&server(300.0, 100.0, Some(batcher)), &mut batched_sessions).record;
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
            ..server(40.0, 200.0, Some(batcher(timeout_ms)))
        };
        let eager = run(&light(0.0), &mut sessions(&[1, 2, 4]));
        let patient = run(&light(30.0), &mut sessions(&[1, 2, 4]));
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
        let (release, queue) = mpsc::channel();
        let now = Instant::now();
        for index in 0..5 {
            release
                .send(Released {
                    index,
                    scheduled: now,
                })
                .unwrap();
        }
        let first = gather(&queue, 4, Duration::ZERO).unwrap();
        assert_eq!(
            first.iter().map(|q| q.index).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let second = gather(&queue, 4, Duration::from_millis(20)).unwrap();
        assert_eq!(second.len(), 1, "nothing more arrived within the timeout");
        drop(release);
        assert!(gather(&queue, 4, Duration::ZERO).is_none());
    }
}
