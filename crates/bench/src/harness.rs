//! The harness owns the clock. For every pass it prepares inputs outside the timed
//! regions, synchronises the device around each timed phase, drops the warm-up passes and
//! keeps every raw sample. Engines never time anything. What a run is asked
//! ([`RunRequest`]) and the pass itself live here; the run's pipeline (prepare, a load,
//! record) is [`crate::measure`].

use crate::result::*;
use crate::stats::{Percentiles, Summary};
use crate::stopping::StopRule;
use crate::Quantity;
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::{Mode, Phase, Session};
use cnnbench_results::peak::BestRate;
use cnnbench_results::{Batches, Round, RunSpec};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// A coefficient of variation above this makes the result come with a warning.
pub const WIDE_SPREAD_CV: f64 = 0.10;

/// What to run: one point of a run spec (one model at one image size and one batch
/// size), the spec itself so that no setting is copied on the way, and what the result
/// records beside it. The spec was validated ([`RunSpec::validate`]) before it came here:
/// the harness does not check it again.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The point: mode, precision, batch size, passes and stopping rules, seed and
    /// threads. The result records it as its spec (what `run --again` reruns).
    pub point: RunSpec,
    /// `zoo` or the model file it came from.
    pub model_source: String,
    pub label: Option<String>,
    pub tool: ToolInfo,
    /// The process whose tree counts as this benchmark's own when the machine is watched
    /// (a data-parallel rank's launcher: the other ranks are no neighbours); `None`: this
    /// process and its children.
    pub process_tree_root: Option<u32>,
    /// How `-b max` chose this batch size, recorded with the result.
    pub batch_search: Option<BatchSearch>,
    /// The engine's best rate from `cnnbench peak` in this precision, for "% of peak".
    pub peak: Option<BestRate>,
    /// This machine's ceilings from `cnnbench peak` in this precision, for the forward
    /// pass's "% of roof".
    pub ceilings: Option<cnnbench_results::roofline::Ceilings>,
    /// Which of `run --repeat N`'s runs this process is, recorded with the result.
    pub round: Option<Round>,
    /// An int8 run's activation ranges, measured on the weights the engine starts from
    /// ([`crate::quantize::calibrate`]).
    pub calibration: Option<crate::quantize::Calibration>,
    /// Under a scenario with several queries in flight, how the engine's sessions share
    /// the machine, in words for the record (the command line knows how it divided the
    /// threads); `None`: said from the count alone.
    pub serving: Option<String>,
}

impl RunRequest {
    /// A request for `point`, a zoo model, with nothing else to record; callers change
    /// what they need with `RunRequest { label, ..new(…) }`.
    pub fn new(point: RunSpec, tool: ToolInfo) -> RunRequest {
        RunRequest {
            point,
            model_source: "zoo".into(),
            label: None,
            tool,
            process_tree_root: None,
            batch_search: None,
            peak: None,
            ceilings: None,
            round: None,
            calibration: None,
            serving: None,
        }
    }

    pub(crate) fn stop_rule(&self) -> StopRule {
        StopRule {
            passes: self.point.passes,
            min_time: duration(self.point.min_time_s),
            max_time: duration(self.point.effective_max_time_s()),
            target_ci: self.point.target_ci_pct.map(|p| p / 100.0),
        }
    }
}

/// Seconds as a duration; `None` for none, or for seconds no duration holds (a
/// validated spec's are positive and finite).
pub fn duration(seconds: Option<f64>) -> Option<Duration> {
    seconds.and_then(|s| Duration::try_from_secs_f64(s).ok())
}

/// The batch size of a point of a spec, or why the spec is not one point.
pub fn point_batch_size(point: &RunSpec) -> Result<usize> {
    match &point.batch {
        Batches::Sizes(sizes) => match sizes.as_slice() {
            [one] => Ok(*one),
            _ => Err(anyhow!(
                "a benchmark measures one batch size at a time, and this spec has {}",
                sizes.len()
            )),
        },
        Batches::Max => Err(anyhow!(
            "a benchmark measures one batch size: -b max is resolved to one before it runs"
        )),
    }
}

/// Progress reported after every pass, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub pass: usize,
    /// The passes planned; a time-based or adaptive run may go past it.
    pub of: usize,
    pub warmup: bool,
    /// Seconds of timed work so far.
    pub timed_s: f64,
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("interrupted")]
    Interrupted,
}

/// Runs the benchmark and returns the result (not yet written anywhere): the
/// measurement's pipeline, [`crate::measure`].
pub use crate::measure::run;

/// Empty calls timed to find the floor of an engine that computes in another process.
const FLOOR_CALLS: usize = 21;

/// The median of [`FLOOR_CALLS`] empty calls, for a session that answers them; `None`
/// for one that computes in this process.
pub(crate) fn call_floor(session: &mut dyn Session) -> Result<Option<f64>> {
    let mut times = Vec::with_capacity(FLOOR_CALLS);
    for _ in 0..FLOOR_CALLS {
        let t = Instant::now();
        match session.empty_call() {
            None => return Ok(None),
            Some(answer) => answer.context("the empty call that measures the floor failed")?,
        }
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(Some(times[FLOOR_CALLS / 2]))
}

/// The timed phases of a pass: the mode's, with the gradients' all-reduce after
/// backward when the session trains in a process group.
pub fn pass_phases(mode: Mode, data_parallel: bool) -> Vec<Phase> {
    let mut phases = mode.phases().to_vec();
    if data_parallel {
        if let Some(i) = phases.iter().position(|p| *p == Phase::Backward) {
            phases.insert(i + 1, Phase::Allreduce);
        }
    }
    phases
}

/// A warning when the passes are too few for the tail percentiles to mean more than the
/// maximum (see [`Percentiles::min_samples`]); `None` when they all rest on enough.
pub fn percentile_warning(count: usize) -> Option<String> {
    let unsupported = Percentiles::unsupported(count);
    let (_, most) = unsupported.last()?;
    let list: Vec<String> = unsupported
        .iter()
        .map(|(name, need)| format!("{name} needs {need}"))
        .collect();
    Some(format!(
        "percentiles of the total rest on {count} passes ({}): below that a percentile is the maximum renamed; run at least {most} passes to trust them all",
        list.join(", ")
    ))
}

/// The gradients' all-reduce, bracketed by syncs like every phase.
fn timed_all_reduce(session: &mut dyn Session) -> Result<Duration> {
    let t = Instant::now();
    session.all_reduce_gradients()?;
    session.sync()?;
    Ok(t.elapsed())
}

/// One pass: inputs and gradients are made untimed; each phase is bracketed by syncs.
/// A session in a process group all-reduces its gradients after backward.
pub(crate) fn one_pass(session: &mut dyn Session, mode: Mode) -> Result<Vec<Duration>> {
    let data_parallel = session.data_parallel().is_some();
    let mut times = Vec::with_capacity(4);
    session.prepare_batch()?;
    session.sync()?;
    let t = Instant::now();
    session.forward()?;
    session.sync()?;
    times.push(t.elapsed());
    match mode {
        Mode::Infer => {}
        Mode::Train => {
            session.prepare_output_grad()?;
            session.sync()?;
            let t = Instant::now();
            session.backward()?;
            session.sync()?;
            times.push(t.elapsed());
            if data_parallel {
                times.push(timed_all_reduce(session)?);
            }
        }
        Mode::Step => {
            let t = Instant::now();
            session.backward()?;
            session.sync()?;
            times.push(t.elapsed());
            if data_parallel {
                times.push(timed_all_reduce(session)?);
            }
            let t = Instant::now();
            session.update()?;
            session.sync()?;
            times.push(t.elapsed());
        }
    }
    Ok(times)
}

/// The smallest step `Instant` can observe here.
pub fn timer_resolution() -> Duration {
    let mut best = Duration::from_secs(1);
    for _ in 0..1000 {
        let a = Instant::now();
        let mut b = Instant::now();
        while b == a {
            b = Instant::now();
        }
        best = best.min(b - a);
    }
    best
}

pub(crate) fn spread_warnings(summary: &BTreeMap<Quantity, Summary>) -> Vec<String> {
    let mut warnings = Vec::new();
    let resolution = timer_resolution().as_secs_f64();
    for (name, s) in summary {
        if s.count > 1 && s.cv > WIDE_SPREAD_CV {
            warnings.push(format!(
                "{name} times vary widely (coefficient of variation {:.0}%, min {:.2} ms, max {:.2} ms): run more passes or on a quieter machine before trusting small differences",
                s.cv * 100.0,
                s.min * 1e3,
                s.max * 1e3
            ));
        }
        if s.min < resolution * 1000.0 {
            warnings.push(format!(
                "{name} takes {:.3} µs, within 1000× of the timer's resolution ({:.3} µs): use a larger batch or model",
                s.min * 1e6,
                resolution * 1e6
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stopping::Stopper;
    use cnnbench_engine::{ChosenKernels, DataParallelRank, Engine, EngineInfo, SessionConfig};
    use cnnbench_graph::{ops::Conv2d, Graph, GraphBuilder};
    use std::sync::atomic::AtomicBool;
    use std::sync::{Arc, Mutex};

    /// A fake engine that sleeps a known time per phase and logs the calls it receives.
    struct SleepyEngine {
        log: Arc<Mutex<Vec<&'static str>>>,
    }
    struct SleepySession {
        log: Arc<Mutex<Vec<&'static str>>>,
    }
    std::thread_local! {
        /// Each sleepy call of this test's thread and how long it really took: a sleep
        /// on a busy machine overshoots by any amount, so a test bounds what the harness
        /// timed by what the engine took, never by the milliseconds asked for.
        static TOOK: std::cell::RefCell<Vec<(&'static str, f64)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }

    /// How long each call named `name` of this thread's sleepy sessions took, in order.
    fn took(name: &str) -> Vec<f64> {
        TOOK.with(|t| {
            t.borrow()
                .iter()
                .filter(|(n, _)| *n == name)
                .map(|(_, s)| *s)
                .collect()
        })
    }

    impl SleepySession {
        /// Logs the call, then takes `ms` milliseconds.
        fn call(&self, name: &'static str, ms: u64) -> Result<()> {
            self.log.lock().unwrap().push(name);
            let start = Instant::now();
            std::thread::sleep(Duration::from_millis(ms));
            let seconds = start.elapsed().as_secs_f64();
            TOOK.with(|t| t.borrow_mut().push((name, seconds)));
            Ok(())
        }
    }
    impl Session for SleepySession {
        fn prepare_batch(&mut self) -> Result<()> {
            self.call("batch", 20) // untimed: must not show up
        }
        fn forward(&mut self) -> Result<()> {
            self.call("forward", 4)
        }
        fn prepare_output_grad(&mut self) -> Result<()> {
            self.call("grad", 20)
        }
        fn backward(&mut self) -> Result<()> {
            self.call("backward", 8)
        }
        fn update(&mut self) -> Result<()> {
            self.call("update", 2)
        }
        fn sync(&mut self) -> Result<()> {
            self.call("sync", 0)
        }
    }
    impl Engine for SleepyEngine {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            cnnbench_engine::Capabilities::cpu_f32(None)
        }
        fn info(&self) -> EngineInfo {
            EngineInfo {
                name: "sleepy".into(),
                framework: "test".into(),
                framework_version: "0".into(),
                backend: "none".into(),
                device: "cpu".into(),
                device_name: "test".into(),
                threads: 1,
                libraries: Default::default(),
                settings: Default::default(),
                variant: Vec::new(),
            }
        }
        fn lower(&self, _: &Graph, _: &SessionConfig) -> Result<Box<dyn Session>> {
            Ok(Box::new(SleepySession {
                log: self.log.clone(),
            }))
        }
    }

    fn tiny_graph() -> Graph {
        let mut b = GraphBuilder::new("tiny", [3, 8, 8]);
        let x = b.input();
        let y = b.conv("conv", &x, Conv2d::new(4, 3));
        // Class scores at the end, which step mode needs.
        let scores = b.flatten("scores", &y);
        b.finish(&scores).unwrap()
    }

    fn request(mode: Mode) -> RunRequest {
        let tool = ToolInfo {
            name: "cnnbench".into(),
            version: "0".into(),
            git_commit: None,
        };
        let mut point = RunSpec::new(
            vec![cnnbench_results::ModelRef::Zoo {
                name: "tiny".into(),
            }],
            "sleepy",
        );
        point.mode = mode;
        point.batch = Batches::Sizes(vec![2]);
        point.passes = 3;
        RunRequest {
            model_source: "test".into(),
            ..RunRequest::new(point, tool)
        }
    }

    #[test]
    fn train_times_forward_and_backward_apart_and_drops_warmup() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let engine = SleepyEngine { log: log.clone() };
        let mut progress = Vec::new();
        let result = run(
            &engine,
            &tiny_graph(),
            &request(Mode::Train),
            &AtomicBool::new(false),
            &mut |p| progress.push(p.pass),
        )
        .unwrap();
        assert_eq!(progress, vec![1, 2, 3, 4]);
        let f = &result.samples[&Quantity::Forward];
        let b = &result.samples[&Quantity::Backward];
        let t = &result.samples[&Quantity::Total];
        assert_eq!((f.len(), b.len(), t.len()), (3, 3, 3));
        // What the engine's calls really took (the first of each is the warm-up's), and
        // the shortest of the untimed preparations (20 ms asked for).
        let (forwards, backwards) = (took("forward"), took("backward"));
        let preparation = took("batch")
            .into_iter()
            .chain(took("grad"))
            .fold(f64::INFINITY, f64::min);
        assert!(preparation >= 0.02, "{preparation}");
        for i in 0..3 {
            assert!(
                (t[i] - f[i] - b[i]).abs() < 1e-12,
                "total = forward + backward"
            );
            // A phase's sample holds its call, and not the untimed preparation beside it.
            let (forward, backward) = (forwards[i + 1], backwards[i + 1]);
            assert!(
                f[i] >= forward && f[i] < forward + preparation,
                "forward {} for a call of {forward}",
                f[i]
            );
            assert!(
                b[i] >= backward && b[i] < backward + preparation,
                "backward {} for a call of {backward}",
                b[i]
            );
        }
        // Every timed phase is bracketed by syncs.
        let calls = log.lock().unwrap();
        for (i, call) in calls.iter().enumerate() {
            if *call == "forward" || *call == "backward" {
                assert_eq!(calls[i - 1], "sync");
                assert_eq!(calls[i + 1], "sync");
            }
        }
        assert!(result.throughput.images_per_s > 0.0);
        assert_eq!(result.summary[&Quantity::Total].count, 3);
        // The cold start: preparing was instant, the first (warm-up) pass took its
        // 4 + 8 ms of timed phases; the machine was watched over each timed pass.
        let cold = result.cold_start.as_ref().unwrap();
        assert!(cold.prepare_s < 0.05, "{cold:?}");
        let first_phases = forwards[0] + backwards[0];
        assert!(
            cold.first_pass_s >= first_phases && cold.first_pass_s < first_phases + preparation,
            "{cold:?} for calls of {first_phases} s"
        );
        let before = cold
            .process_before_run_s
            .expect("Linux says when the process started");
        let first_timed = cold.process_to_first_timed_pass_s.unwrap();
        assert!(first_timed >= before, "{cold:?}");
        let validity = result.validity.as_ref().unwrap();
        assert_eq!(validity.passes.len(), 3);
        assert!(
            validity.passes.iter().all(|p| p.window_s >= 0.012),
            "{validity:?}"
        );
    }

    #[test]
    fn step_mode_times_three_phases_and_infer_one() {
        let engine = SleepyEngine {
            log: Arc::new(Mutex::new(Vec::new())),
        };
        let step = run(
            &engine,
            &tiny_graph(),
            &request(Mode::Step),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        // Written in the order of their names, as the schema always has.
        let keys: Vec<&str> = step.samples.keys().map(|q| q.as_str()).collect();
        assert_eq!(keys, ["backward", "forward", "total", "update"]);
        let infer = run(
            &engine,
            &tiny_graph(),
            &request(Mode::Infer),
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap();
        let keys: Vec<&str> = infer.samples.keys().map(|q| q.as_str()).collect();
        assert_eq!(keys, ["forward", "total"]);
        assert_eq!(
            infer.samples[&Quantity::Forward],
            infer.samples[&Quantity::Total]
        );
    }

    #[test]
    fn cancellation_stops_the_run() {
        let engine = SleepyEngine {
            log: Arc::new(Mutex::new(Vec::new())),
        };
        let err = run(
            &engine,
            &tiny_graph(),
            &request(Mode::Train),
            &AtomicBool::new(true),
            &mut |_| {},
        )
        .unwrap_err();
        assert!(err.downcast_ref::<HarnessError>().is_some());
    }

    /// The sleepy engine in inference, saying which kernels it ran as `kernels` says.
    struct TellingEngine(SleepyEngine, fn() -> Result<ChosenKernels>);
    struct TellingSession(SleepySession, fn() -> Result<ChosenKernels>);
    impl Session for TellingSession {
        fn prepare_batch(&mut self) -> Result<()> {
            self.0.prepare_batch()
        }
        fn forward(&mut self) -> Result<()> {
            self.0.forward()
        }
        fn sync(&mut self) -> Result<()> {
            self.0.sync()
        }
        fn kernels_chosen(&mut self) -> Result<ChosenKernels> {
            self.0.log.lock().unwrap().push("kernels");
            (self.1)()
        }
    }
    impl Engine for TellingEngine {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            self.0.capabilities()
        }
        fn info(&self) -> EngineInfo {
            self.0.info()
        }
        fn lower(&self, _: &Graph, _: &SessionConfig) -> Result<Box<dyn Session>> {
            let log = self.0.log.clone();
            Ok(Box::new(TellingSession(SleepySession { log }, self.1)))
        }
    }

    /// What the stack says it ran is asked once, after the timed passes, and lands in the
    /// result's engine settings and warnings; a stack that cannot say costs that record
    /// only, with a warning, never the measurement.
    #[test]
    fn the_kernels_a_stack_ran_are_recorded_and_failing_to_ask_keeps_the_result() {
        fn telling() -> Result<ChosenKernels> {
            Ok(ChosenKernels {
                settings: [("onednn_convolution".to_string(), "jit:avx2 ×3".to_string())].into(),
                warnings: vec!["the convolutions ran in reference kernels".to_string()],
            })
        }
        fn failing() -> Result<ChosenKernels> {
            Err(anyhow!("no verbose output"))
        }
        let log = Arc::new(Mutex::new(Vec::new()));
        let engine = TellingEngine(SleepyEngine { log: log.clone() }, telling);
        let go = |engine: &TellingEngine| {
            run(
                engine,
                &tiny_graph(),
                &request(Mode::Infer),
                &AtomicBool::new(false),
                &mut |_| {},
            )
        };
        let result = go(&engine).unwrap();
        assert_eq!(result.engine.settings["onednn_convolution"], "jit:avx2 ×3");
        assert!(result
            .warnings
            .contains(&"the convolutions ran in reference kernels".to_string()));
        let calls = log.lock().unwrap().clone();
        assert_eq!(calls.iter().filter(|c| **c == "kernels").count(), 1);
        assert_eq!(
            calls.last(),
            Some(&"kernels"),
            "asked after every timed pass: {calls:?}"
        );
        let engine = TellingEngine(SleepyEngine { log }, failing);
        let result = go(&engine).unwrap();
        assert_eq!(result.summary[&Quantity::Total].count, 3);
        assert!(!result.engine.settings.contains_key("onednn_convolution"));
        assert!(
            result
                .warnings
                .iter()
                .any(|w| w.contains("which kernels ran was not recorded")
                    && w.contains("no verbose output")),
            "{:?}",
            result.warnings
        );
    }

    /// A fake engine whose forward pass takes `pace(pass)` (counting every pass, warm-up
    /// included): steady or noisy on demand.
    struct PacedEngine {
        pace: fn(usize) -> Duration,
    }
    struct PacedSession {
        pace: fn(usize) -> Duration,
        pass: usize,
    }
    impl Session for PacedSession {
        fn prepare_batch(&mut self) -> Result<()> {
            Ok(())
        }
        fn forward(&mut self) -> Result<()> {
            std::thread::sleep((self.pace)(self.pass));
            self.pass += 1;
            Ok(())
        }
        fn prepare_output_grad(&mut self) -> Result<()> {
            Ok(())
        }
        fn backward(&mut self) -> Result<()> {
            Ok(())
        }
        fn update(&mut self) -> Result<()> {
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            Ok(())
        }
    }
    impl Engine for PacedEngine {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            cnnbench_engine::Capabilities::cpu_f32(None)
        }
        fn info(&self) -> EngineInfo {
            SleepyEngine {
                log: Default::default(),
            }
            .info()
        }
        fn lower(&self, _: &Graph, _: &SessionConfig) -> Result<Box<dyn Session>> {
            Ok(Box::new(PacedSession {
                pace: self.pace,
                pass: 0,
            }))
        }
    }

    fn adaptive(target_ci_pct: f64, max_time: Duration) -> RunRequest {
        let mut request = request(Mode::Infer);
        request.point.target_ci_pct = Some(target_ci_pct);
        request.point.max_time_s = Some(max_time.as_secs_f64());
        request
    }

    fn run_paced(pace: fn(usize) -> Duration, request: &RunRequest) -> BenchResult {
        run(
            &PacedEngine { pace },
            &tiny_graph(),
            request,
            &AtomicBool::new(false),
            &mut |_| {},
        )
        .unwrap()
    }

    #[test]
    fn a_target_interval_stops_a_steady_engine_early() {
        let steady = |_| Duration::from_millis(3);
        let request = adaptive(5.0, Duration::from_secs(20));
        let result = run_paced(steady, &request);
        let stop = result.stop.as_ref().unwrap();
        assert_eq!(stop.reason, StopReason::TargetCi, "{stop:?}");
        assert!(stop.timed_s < 20.0, "{stop:?}");
        assert!(stop.median_ci95_rel.unwrap() <= 0.05, "{stop:?}");
        // It stopped at the first pass whose interval met the target, as a stopper fed the
        // run's own samples says: how many that takes is the machine's (a 3 ms sleep
        // varies more beside a busy neighbour: 103 passes there, about 10 quiet).
        let totals = &result.samples[&Quantity::Total];
        let mut replay = Stopper::new(request.stop_rule());
        let mut timed_s = 0.0;
        let first = (1..=totals.len()).find(|&n| {
            timed_s += totals[n - 1];
            replay.after_pass(&totals[..n], timed_s).is_some()
        });
        assert_eq!(first, Some(stop.passes), "{stop:?}");
        assert_eq!(result.config.target_ci_pct, Some(5.0));
        assert_eq!(result.config.max_time_s, Some(20.0));
        assert_eq!(result.samples[&Quantity::Total].len(), stop.passes);
    }

    #[test]
    fn a_noisy_engine_runs_into_the_time_limit() {
        // 1 ms and 9 ms alternately: the median never settles.
        let noisy = |pass: usize| Duration::from_millis(if pass.is_multiple_of(2) { 1 } else { 9 });
        let result = run_paced(noisy, &adaptive(1.0, Duration::from_millis(300)));
        let stop = result.stop.as_ref().unwrap();
        assert_eq!(stop.reason, StopReason::MaxTime, "{stop:?}");
        // It stops at the first pass that reaches the limit: past it by less than a pass.
        let longest = result.samples[&Quantity::Total]
            .iter()
            .copied()
            .fold(0.0, f64::max);
        assert!(
            stop.timed_s >= 0.3 && stop.timed_s < 0.3 + longest,
            "{stop:?}, the longest pass {longest} s"
        );
        assert!(stop.median_ci95_rel.unwrap() > 0.01, "{stop:?}");
        assert!(
            result
                .warnings
                .iter()
                .any(|w| w.contains("time limit came before the target")),
            "{:?}",
            result.warnings
        );
    }

    #[test]
    fn min_time_and_warmup_time_extend_the_run() {
        let steady = |_| Duration::from_millis(2);
        let mut request = request(Mode::Infer);
        request.point.min_time_s = Some(0.06);
        request.point.warmup_time_s = Some(0.03);
        let result = run_paced(steady, &request);
        let stop = result.stop.as_ref().unwrap();
        assert_eq!(stop.reason, StopReason::MinTime, "{stop:?}");
        assert!(stop.timed_s >= 0.06, "{stop:?}");
        assert!(stop.passes > 3 && stop.passes <= 30, "{stop:?}");
        assert!(stop.warmup_passes > 1, "{stop:?}");
        assert_eq!(result.config.min_time_s, Some(0.06));
        assert_eq!(result.config.warmup_time_s, Some(0.03));
        // A plain run says the count stopped it.
        let plain = run_paced(steady, &request_infer());
        assert_eq!(plain.stop.unwrap().reason, StopReason::Passes);
    }

    fn request_infer() -> RunRequest {
        request(Mode::Infer)
    }

    #[test]
    fn a_target_without_a_time_limit_runs_under_the_targets_default_limit() {
        let mut request = request(Mode::Infer);
        request.point.target_ci_pct = Some(5.0);
        let result = run_paced(|_| Duration::from_millis(2), &request);
        assert_eq!(
            result.config.max_time_s,
            Some(cnnbench_results::spec::DEFAULT_TARGET_CI_MAX_TIME_S)
        );
        assert_eq!(result.stop.unwrap().reason, StopReason::TargetCi);
        assert_eq!(result.spec.as_ref(), Some(&request.point));
    }

    #[test]
    fn a_spec_of_several_batch_sizes_is_not_a_point() {
        let mut request = request(Mode::Infer);
        for (batch, says) in [
            (Batches::Sizes(vec![1, 2]), "this spec has 2"),
            (Batches::Max, "-b max"),
        ] {
            request.point.batch = batch;
            let err = run(
                &PacedEngine {
                    pace: |_| Duration::ZERO,
                },
                &tiny_graph(),
                &request,
                &AtomicBool::new(false),
                &mut |_| {},
            )
            .unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
        }
    }

    #[test]
    fn percentiles_are_summarised_and_their_sample_needs_warned_about() {
        let result = run_paced(|_| Duration::from_millis(1), &request_infer());
        let p = result.summary[&Quantity::Total].percentiles.unwrap();
        assert!(p.p50 <= p.p90 && p.p90 <= p.p95 && p.p95 <= p.p99);
        let w = result
            .warnings
            .iter()
            .find(|w| w.contains("percentiles"))
            .expect("3 passes cannot support p90");
        assert!(w.contains("p99 needs 100"), "{w}");
        assert_eq!(percentile_warning(100), None);
        assert!(percentile_warning(20)
            .unwrap()
            .contains("rest on 20 passes"));
    }

    /// A rank of a two-process job whose all-reduce takes 6 ms.
    struct RankEngine;
    struct RankSession(SleepySession);
    impl Session for RankSession {
        fn prepare_batch(&mut self) -> Result<()> {
            Ok(())
        }

        fn forward(&mut self) -> Result<()> {
            self.0.forward()
        }

        fn prepare_output_grad(&mut self) -> Result<()> {
            Ok(())
        }

        fn backward(&mut self) -> Result<()> {
            self.0.backward()
        }

        fn update(&mut self) -> Result<()> {
            self.0.update()
        }

        fn sync(&mut self) -> Result<()> {
            self.0.sync()
        }

        fn rank(&mut self) -> Option<&mut dyn DataParallelRank> {
            Some(self)
        }
    }

    impl DataParallelRank for RankSession {
        fn group(&self) -> Option<cnnbench_engine::distributed::GroupInfo> {
            Some(cnnbench_engine::distributed::GroupInfo {
                rank: 0,
                world_size: 2,
                backend: "fake".into(),
                transport: "none".into(),
                bucket_bytes: 1024,
                host: None,
                endpoint: None,
            })
        }

        fn all_reduce_gradients(&mut self) -> Result<()> {
            self.0.call("allreduce", 6)
        }
    }
    impl Engine for RankEngine {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            cnnbench_engine::Capabilities::cpu_f32(None)
        }
        fn info(&self) -> EngineInfo {
            SleepyEngine {
                log: Default::default(),
            }
            .info()
        }
        fn lower(&self, _: &Graph, _: &SessionConfig) -> Result<Box<dyn Session>> {
            Ok(Box::new(RankSession(SleepySession {
                log: Default::default(),
            })))
        }
    }

    #[test]
    fn a_data_parallel_session_times_its_all_reduce_after_backward() {
        assert_eq!(
            pass_phases(Mode::Step, true),
            [
                Phase::Forward,
                Phase::Backward,
                Phase::Allreduce,
                Phase::Update
            ]
        );
        assert_eq!(pass_phases(Mode::Train, false), Mode::Train.phases());
        for mode in [Mode::Train, Mode::Step] {
            let r = run(
                &RankEngine,
                &tiny_graph(),
                &request(mode),
                &AtomicBool::new(false),
                &mut |_| {},
            )
            .unwrap();
            let a = &r.samples[&Quantity::Allreduce];
            assert_eq!(a.len(), 3);
            // Each timed all-reduce holds its call (6 ms asked for) and not the backward
            // before it: within what the call took plus the shortest backward.
            let (reduces, backwards) = (took("allreduce"), took("backward"));
            let backward = backwards.iter().copied().fold(f64::INFINITY, f64::min);
            let reduces = &reduces[reduces.len() - 3..];
            for (t, call) in a.iter().zip(reduces) {
                assert!(
                    *t >= *call && *t < call + backward,
                    "{a:?} for calls of {reduces:?}"
                );
            }
            let phases: f64 = Quantity::PHASES
                .iter()
                .filter_map(|q| r.samples.get(q).map(|v| v[0]))
                .sum();
            assert!((phases - r.samples[&Quantity::Total][0]).abs() < 1e-12);
            assert_eq!(r.config.world_size, Some(2));
            // Both ranks' batches over the step.
            let ips = 4.0 / r.summary[&Quantity::Total].median;
            assert!((r.throughput.images_per_s - ips).abs() < 1e-9 * ips);
            let d = r.distributed.as_ref().unwrap();
            assert_eq!((d.backend.as_str(), d.overlap), ("fake", false));
            assert_eq!(d.ranks.len(), 1);
            assert_eq!(d.ranks[0].samples, r.samples);
        }
        // A single process has none of it.
        let single = run_paced(|_| Duration::from_millis(1), &request_infer());
        assert!(single.distributed.is_none() && single.config.world_size.is_none());
    }

    #[test]
    fn wide_spread_is_warned_about() {
        let mut summary = BTreeMap::new();
        summary.insert(Quantity::Total, Summary::of(&[1.0, 1.5, 0.7, 1.2]).unwrap());
        let w = spread_warnings(&summary);
        assert!(w.iter().any(|w| w.contains("vary widely")), "{w:?}");
        summary.insert(Quantity::Total, Summary::of(&[1.0, 1.01, 0.99]).unwrap());
        assert!(spread_warnings(&summary).is_empty());
    }
}
