//! A serving scenario's load (`--scenario`): its queries over one session per query in
//! flight, each with the dynamic batcher's larger sessions where it has one; the
//! queries' compute times are the samples. The scenarios' issuers are
//! [`crate::scenario`]'s.

use super::{Context, Load, SessionPlan, Sessions, Timeline};
use crate::harness::{Progress, RunRequest};
use crate::result::{StopReason, StopRecord};
use crate::scenario::{drive, Serving, SERVING};
use crate::validity::Watch;
use anyhow::{Context as _, Result};
use cnnbench_engine::{Phase, Session, SessionConfig};
use cnnbench_results::scenario::ScenarioSpec;
use std::collections::BTreeMap;

pub(crate) struct Served<'a> {
    pub spec: &'a ScenarioSpec,
    pub request: &'a RunRequest,
}

impl Served<'_> {
    /// The batcher's session sizes beyond the first's batch of one.
    fn larger_sizes(&self) -> Vec<usize> {
        self.spec.batcher.as_ref().map_or(Vec::new(), |b| {
            b.session_batch_sizes().into_iter().skip(1).collect()
        })
    }
}

impl Load for Served<'_> {
    /// The other sessions of the queries in flight, then for each query in flight the
    /// batcher's sessions, each compiled for its batch size.
    fn session_plan(&self, first: &SessionConfig) -> Vec<SessionPlan> {
        let in_flight = self.spec.in_flight;
        let mut plan: Vec<SessionPlan> = (1..in_flight)
            .map(|n| SessionPlan {
                config: first.clone(),
                what: format!("session {} of {in_flight} for --in-flight", n + 1),
            })
            .collect();
        let sizes = self.larger_sizes();
        for _ in 0..in_flight {
            for &size in &sizes {
                plan.push(SessionPlan {
                    config: SessionConfig {
                        batch_size: size,
                        ..first.clone()
                    },
                    what: format!("the dynamic batcher's session of batch {size}"),
                });
            }
        }
        plan
    }

    fn drive(
        &self,
        ctx: &Context,
        sessions: Sessions,
        watch: &mut Watch,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<Timeline> {
        let spec = self.spec;
        let warmup_passes = sessions.warmup_passes;
        let mut others = sessions.others.into_iter();
        let mut in_flight: Vec<Box<dyn Session>> =
            others.by_ref().take(spec.in_flight - 1).collect();
        let sizes = self.larger_sizes();
        let mut larger: Vec<Vec<(usize, Box<dyn Session>)>> = (0..spec.in_flight)
            .map(|_| sizes.iter().copied().zip(others.by_ref()).collect())
            .collect();
        let serving = Serving {
            sessions: std::iter::once(sessions.first.as_mut())
                .chain(in_flight.iter_mut().map(|s| s.as_mut()))
                .collect(),
            batch_sessions: larger
                .iter_mut()
                .map(|theirs| theirs.iter_mut().map(|(size, s)| (*size, s.as_mut())).collect())
                .collect(),
            description: match (&self.request.serving, spec.in_flight) {
                (_, 1) => SERVING.to_string(),
                (Some(words), _) => words.clone(),
                (None, n) => format!(
                    "{n} sessions of the engine, each computing one query at a time; a query waits while all are busy"
                ),
            },
        };
        watch.pass_begins();
        let driven = drive(
            serving,
            spec,
            ctx.point().seed,
            sessions.batch_size,
            &|| ctx.check_cancel().map_err(anyhow::Error::from),
            &mut |done, of, timed_s| {
                on_progress(Progress {
                    pass: warmup_passes + done,
                    of: warmup_passes + of.max(done),
                    warmup: false,
                    timed_s,
                })
            },
        )
        .with_context(|| format!("the {} scenario of {} failed", spec.kind, ctx.graph.name()))?;
        watch.pass_ends();
        let totals = driven.compute_s.clone();
        let stop = StopRecord {
            reason: StopReason::Scenario,
            passes: totals.len(),
            warmup_passes,
            timed_s: totals.iter().sum(),
            median_ci95_rel: None,
        };
        Ok(Timeline {
            // A scenario serves inference: its compute times are forward's.
            samples: BTreeMap::from([(Phase::Forward, driven.compute_s)]),
            totals,
            stop,
            scenario: Some(driven.record),
            first_pass_s: None,
        })
    }
}
