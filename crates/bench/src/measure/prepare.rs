//! The session, made ready untimed: prepared and compiled (each timed on its own for the
//! cold start), the call floor of an engine in another process, and the warm-up; and
//! the further sessions a load asks for, made ready alike.

use super::{Context, SessionPlan};
use crate::harness::{call_floor, duration, one_pass, point_batch_size, Progress};
use anyhow::{anyhow, Context as _, Result};
use cnnbench_engine::{Engine, Precision, Session, SessionConfig};
use cnnbench_graph::Graph;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether this process has run a benchmark before: only its first run's time since the
/// process started is that run's own cold start.
static RAN_BEFORE: AtomicBool = AtomicBool::new(false);

/// The first session, warmed up, and what making it cost.
pub struct Prepared {
    pub session: Box<dyn Session>,
    pub config: SessionConfig,
    pub batch_size: usize,
    pub warmup_passes: usize,
    /// Seconds this process had run before the benchmark began (`None`: unknown).
    pub process_before_run_s: Option<f64>,
    pub first_in_process: bool,
    pub prepare_s: f64,
    /// `None`: the engine compiles nothing apart from preparing.
    pub compile_s: Option<f64>,
    /// The first warm-up pass's time; `None` without warm-up.
    pub first_pass_s: Option<f64>,
    /// The median empty call of an engine that computes in another process.
    pub call_floor_s: Option<f64>,
}

/// A session prepared and compiled, and what each took: the one way every measurement
/// (a run, `profile`, `verify`) makes its session.
pub struct Ready {
    pub session: Box<dyn Session>,
    pub prepare_s: f64,
    /// `None`: the engine compiles nothing apart from preparing.
    pub compile_s: Option<f64>,
}

/// Prepares a session of `graph` and compiles it: a lazily compiling engine compiles
/// here, timed on its own, never in a pass.
pub fn ready(engine: &dyn Engine, graph: &Graph, config: &SessionConfig) -> Result<Ready> {
    let prepare_clock = Instant::now();
    let mut session = engine
        .prepare(graph, config)
        .with_context(|| format!("{} cannot run {}", engine.info().name, graph.name()))?;
    let prepare_s = prepare_clock.elapsed().as_secs_f64();
    let compile_clock = Instant::now();
    let compiled = session
        .compile()
        .with_context(|| format!("{} cannot compile {}", engine.info().name, graph.name()))?;
    Ok(Ready {
        session,
        prepare_s,
        compile_s: compiled.then(|| compile_clock.elapsed().as_secs_f64()),
    })
}

/// Prepares, compiles and warms up the point's session: the passes asked for, then more
/// until the warm-up time is reached.
pub(crate) fn prepare(ctx: &Context, on_progress: &mut dyn FnMut(Progress)) -> Result<Prepared> {
    let (engine, graph, point) = (ctx.engine, ctx.graph, ctx.point());
    let batch_size = point_batch_size(point)?;
    let config = SessionConfig {
        mode: point.mode,
        batch_size,
        seed: point.seed,
        precision: point.precision,
        deterministic: false,
        calibration: ctx
            .request
            .calibration
            .as_ref()
            .map(|calibration| calibration.int8.clone()),
    };
    if point.precision == Precision::Int8 && config.calibration.is_none() {
        return Err(anyhow!(
            "an int8 run of {} needs its activation ranges: calibrate first (cnnbench_bench::quantize::calibrate)",
            graph.name()
        ));
    }
    let process_before_run_s = cnnbench_host::process_age_s();
    let first_in_process = !RAN_BEFORE.swap(true, Ordering::SeqCst);
    let Ready {
        mut session,
        prepare_s,
        compile_s,
    } = ready(engine, graph, &config)?;
    let call_floor_s = call_floor(session.as_mut())?;

    let planned = point.warmup + point.passes;
    let warmup_clock = Instant::now();
    let mut warmup_passes = 0;
    let mut first_pass_s = None;
    let warmup_time = duration(point.warmup_time_s);
    while warmup_passes < point.warmup || warmup_time.is_some_and(|t| warmup_clock.elapsed() < t) {
        ctx.check_cancel()?;
        let times = one_pass(session.as_mut(), point.mode).with_context(|| {
            format!(
                "warm-up pass {} of {} failed",
                warmup_passes + 1,
                graph.name()
            )
        })?;
        first_pass_s.get_or_insert_with(|| times.iter().map(Duration::as_secs_f64).sum());
        warmup_passes += 1;
        on_progress(Progress {
            pass: warmup_passes,
            of: planned.max(warmup_passes + point.passes),
            warmup: true,
            timed_s: 0.0,
        });
    }
    Ok(Prepared {
        session,
        config,
        batch_size,
        warmup_passes,
        process_before_run_s,
        first_in_process,
        prepare_s,
        compile_s,
        first_pass_s,
        call_floor_s,
    })
}

impl Prepared {
    /// Another session, prepared, compiled and warmed up as the first was (untimed).
    pub(crate) fn another(&self, ctx: &Context, plan: &SessionPlan) -> Result<Box<dyn Session>> {
        let (engine, graph) = (ctx.engine, ctx.graph);
        let mut other = engine.prepare(graph, &plan.config).with_context(|| {
            format!(
                "{} cannot prepare {} of {}",
                engine.info().name,
                plan.what,
                graph.name()
            )
        })?;
        other.compile()?;
        for _ in 0..self.warmup_passes {
            ctx.check_cancel()?;
            one_pass(other.as_mut(), ctx.point().mode)?;
        }
        other.begin_timed_passes()?;
        Ok(other)
    }
}
