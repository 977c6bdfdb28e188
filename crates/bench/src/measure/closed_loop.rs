//! The closed loop: passes back to back on one session until the stop rule is met
//! (passes, time, or a confidence interval on the median).

use super::{Context, Load, SessionPlan, Sessions, Timeline};
use crate::harness::{one_pass, pass_phases, Progress};
use crate::result::StopRecord;
use crate::stopping::Stopper;
use crate::validity::Watch;
use anyhow::{Context as _, Result};
use cnnbench_engine::{Phase, SessionConfig};
use std::collections::BTreeMap;
use std::time::Duration;

pub(crate) struct ClosedLoop;

impl Load for ClosedLoop {
    fn session_plan(&self, _first: &SessionConfig) -> Vec<SessionPlan> {
        Vec::new()
    }

    fn drive(
        &self,
        ctx: &Context,
        sessions: Sessions,
        watch: &mut Watch,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<Timeline> {
        let point = ctx.point();
        let (session, warmup_passes) = (sessions.first, sessions.warmup_passes);
        let phases = pass_phases(point.mode, session.data_parallel().is_some());
        let mut samples: BTreeMap<Phase, Vec<f64>> =
            phases.iter().map(|p| (*p, Vec::new())).collect();
        let mut totals: Vec<f64> = Vec::new();
        let mut first_pass_s = None;
        let mut stopper = Stopper::new(ctx.request.stop_rule());
        let reason = loop {
            ctx.check_cancel()?;
            watch.pass_begins();
            let times = one_pass(session.as_mut(), point.mode).with_context(|| {
                format!("pass {} of {} failed", totals.len() + 1, ctx.graph.name())
            })?;
            watch.pass_ends();
            first_pass_s.get_or_insert_with(|| times.iter().map(Duration::as_secs_f64).sum());
            let mut total = 0.0;
            for (phase, t) in phases.iter().zip(times) {
                if let Some(v) = samples.get_mut(phase) {
                    v.push(t.as_secs_f64());
                    total += t.as_secs_f64();
                }
            }
            totals.push(total);
            let timed_s: f64 = totals.iter().sum();
            on_progress(Progress {
                pass: warmup_passes + totals.len(),
                of: (warmup_passes + point.passes).max(warmup_passes + totals.len()),
                warmup: false,
                timed_s,
            });
            if let Some(reason) = stopper.after_pass(&totals, timed_s) {
                break reason;
            }
        };
        let stop = StopRecord {
            reason,
            passes: totals.len(),
            warmup_passes,
            timed_s: totals.iter().sum(),
            median_ci95_rel: stopper.final_ci(&totals, reason),
        };
        Ok(Timeline {
            samples,
            totals,
            stop,
            scenario: None,
            first_pass_s,
        })
    }
}
