//! The measurement as a pipeline: [`prepare`] the session (prepare, compile, the call
//! floor, warm-up), drive a [`Load`] on it (the closed loop of passes, or a serving
//! scenario's queries over as many sessions as it plans) into a [`Timeline`], and
//! [`record`] what was timed as a result (statistics, validity, warnings). The harness
//! owns the clock: engines never time anything. A new load is a file here that
//! implements [`Load`], and its arm in [`load_of`].

mod closed_loop;
mod prepare;
mod record;
mod served;

pub use prepare::{ready, Ready};

use crate::harness::{HarnessError, Progress, RunRequest};
use crate::result::{BenchResult, StopRecord};
use crate::validity::Watch;
use anyhow::Result;
use cnnbench_engine::{Engine, Phase, Session, SessionConfig};
use cnnbench_graph::Graph;
use cnnbench_results::scenario::ScenarioRecord;
use cnnbench_results::RunSpec;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// What a run measures with, shared by its steps.
pub(crate) struct Context<'a> {
    pub engine: &'a dyn Engine,
    pub graph: &'a Graph,
    pub request: &'a RunRequest,
    pub cancel: &'a AtomicBool,
}

impl Context<'_> {
    pub fn point(&self) -> &RunSpec {
        &self.request.point
    }

    /// An interruption (Ctrl-C) stops the run between passes or queries.
    pub fn check_cancel(&self) -> Result<(), HarnessError> {
        if self.cancel.load(Ordering::SeqCst) {
            Err(HarnessError::Interrupted)
        } else {
            Ok(())
        }
    }
}

/// What a load timed.
pub(crate) struct Timeline {
    /// Each phase's samples, seconds (a scenario's compute times are forward's).
    pub samples: BTreeMap<Phase, Vec<f64>>,
    /// Each pass's (or query's) timed total.
    pub totals: Vec<f64>,
    pub stop: StopRecord,
    pub scenario: Option<ScenarioRecord>,
    /// The first pass's time, when the warm-up ran none.
    pub first_pass_s: Option<f64>,
}

/// A session the load asks for beside the first: its configuration, and its name in
/// an error.
pub(crate) struct SessionPlan {
    pub config: SessionConfig,
    pub what: String,
}

/// The sessions a load drives, warmed up.
pub(crate) struct Sessions<'a> {
    pub first: &'a mut Box<dyn Session>,
    /// The plan's, in its order.
    pub others: Vec<Box<dyn Session>>,
    /// The warm-up passes each ran, to count progress from.
    pub warmup_passes: usize,
    /// The samples each computes per call.
    pub batch_size: usize,
}

/// A way to load the engine: the sessions it computes on, and how it drives them.
pub(crate) trait Load {
    /// The sessions beyond the first (none for the closed loop), each prepared,
    /// compiled and warmed up as the first was.
    fn session_plan(&self, first: &SessionConfig) -> Vec<SessionPlan>;

    /// Drives the sessions while `watch`
    /// watches the machine, reporting progress; what was timed.
    fn drive(
        &self,
        ctx: &Context,
        sessions: Sessions,
        watch: &mut Watch,
        on_progress: &mut dyn FnMut(Progress),
    ) -> Result<Timeline>;
}

/// The load a point asks for: a serving scenario's (`--scenario`), or passes back to
/// back.
fn load_of<'a>(point: &'a RunSpec, request: &'a RunRequest) -> Box<dyn Load + 'a> {
    match &point.scenario {
        Some(spec) => Box::new(served::Served { spec, request }),
        None => Box::new(closed_loop::ClosedLoop),
    }
}

/// Runs the benchmark and returns the result (not yet written anywhere).
pub fn run(
    engine: &dyn Engine,
    graph: &Graph,
    request: &RunRequest,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<BenchResult> {
    let ctx = Context {
        engine,
        graph,
        request,
        cancel,
    };
    let started = record::Started::now();
    let mut prepared = prepare::prepare(&ctx, on_progress)?;
    prepared.session.begin_timed_passes()?;
    let process_to_first_timed_pass_s = cnnbench_host::process_age_s();
    let mut watch = Watch::new(request.process_tree_root, cuda_device(engine));
    let load = load_of(&request.point, request);
    let others = load
        .session_plan(&prepared.config)
        .into_iter()
        .map(|plan| prepared.another(&ctx, &plan))
        .collect::<Result<Vec<_>>>()?;
    let sessions = Sessions {
        first: &mut prepared.session,
        others,
        warmup_passes: prepared.warmup_passes,
        batch_size: prepared.batch_size,
    };
    let timeline = load.drive(&ctx, sessions, &mut watch, on_progress)?;
    record::record(
        &ctx,
        started,
        prepared,
        timeline,
        watch,
        process_to_first_timed_pass_s,
    )
}

/// The CUDA device a `cuda:N` engine computes on: its clocks are watched through NVML.
fn cuda_device(engine: &dyn Engine) -> Option<usize> {
    engine
        .info()
        .device
        .strip_prefix("cuda:")
        .and_then(|n| n.parse().ok())
}
