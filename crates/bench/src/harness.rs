//! The harness owns the clock. For every pass it prepares inputs outside the timed
//! regions, synchronises the device around each timed phase, drops the warm-up passes and
//! keeps every raw sample. Engines never time anything.

use crate::memory;
use crate::result::*;
use crate::stats::Summary;
use crate::Quantity;
use anyhow::{anyhow, Context, Result};
use chrono::Utc;
use cnnbench_engine::{Engine, Mode, Phase, Precision, Session, SessionConfig};
use cnnbench_graph::Graph;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A coefficient of variation above this makes the result come with a warning.
pub const WIDE_SPREAD_CV: f64 = 0.10;

/// What to run: one model on one engine with one configuration.
#[derive(Clone, Debug)]
pub struct RunRequest {
    pub mode: Mode,
    pub batch_size: usize,
    pub warmup: usize,
    pub passes: usize,
    pub seed: u64,
    pub threads_requested: Option<usize>,
    pub precision: Precision,
    /// `zoo` or the model file it came from.
    pub model_source: String,
    pub label: Option<String>,
    pub tool: ToolInfo,
}

/// Progress reported after every pass, for progress bars.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub pass: usize,
    pub of: usize,
    pub warmup: bool,
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("interrupted")]
    Interrupted,
}

/// Runs the benchmark and returns the result (not yet written anywhere).
pub fn run(
    engine: &dyn Engine,
    graph: &Graph,
    request: &RunRequest,
    cancel: &AtomicBool,
    on_progress: &mut dyn FnMut(Progress),
) -> Result<BenchResult> {
    if request.passes == 0 {
        return Err(anyhow!("--passes must be at least 1"));
    }
    if request.batch_size == 0 {
        return Err(anyhow!("the batch size must be at least 1"));
    }
    let peak_rss_reset = memory::reset_peak_rss();
    let started_at = Utc::now();
    let run_clock = Instant::now();
    let config = SessionConfig {
        mode: request.mode,
        batch_size: request.batch_size,
        seed: request.seed,
        precision: request.precision,
        deterministic: false,
    };
    let mut session = engine
        .prepare(graph, &config)
        .with_context(|| format!("{} cannot run {}", engine.info().name, graph.name()))?;

    let phases = request.mode.phases();
    let mut samples: BTreeMap<Phase, Vec<f64>> = phases.iter().map(|p| (*p, Vec::new())).collect();
    let total_passes = request.warmup + request.passes;
    for pass in 0..total_passes {
        if cancel.load(Ordering::SeqCst) {
            return Err(HarnessError::Interrupted.into());
        }
        let times = one_pass(session.as_mut(), request.mode)
            .with_context(|| format!("pass {} of {} failed", pass + 1, graph.name()))?;
        if pass >= request.warmup {
            for (phase, t) in phases.iter().zip(times) {
                if let Some(v) = samples.get_mut(phase) {
                    v.push(t.as_secs_f64());
                }
            }
        }
        on_progress(Progress {
            pass: pass + 1,
            of: total_passes,
            warmup: pass < request.warmup,
        });
    }
    let device_peak = session.device_peak_memory();
    drop(session);

    let mut by_quantity: BTreeMap<Quantity, Vec<f64>> = samples
        .iter()
        .map(|(p, v)| (Quantity::from(*p), v.clone()))
        .collect();
    let totals: Vec<f64> = (0..request.passes)
        .map(|i| samples.values().map(|v| v[i]).sum())
        .collect();
    by_quantity.insert(Quantity::Total, totals);
    let summary: BTreeMap<Quantity, Summary> = by_quantity
        .iter()
        .filter_map(|(k, v)| Summary::of(v).map(|s| (*k, s)))
        .collect();
    let total = summary
        .get(&Quantity::Total)
        .ok_or_else(|| anyhow!("no valid timing samples were recorded"))?;

    let flops = flops_per_pass(request.mode, graph.macs(), request.batch_size);
    let throughput = Throughput {
        images_per_s: request.batch_size as f64 / total.median,
        gflops_per_s: flops / total.median / 1e9,
        flops_per_pass: flops,
    };
    let warnings = spread_warnings(&summary);
    let [c, h, w] = graph.input_shape();
    Ok(BenchResult {
        format: RESULT_FORMAT.into(),
        version: RESULT_VERSION,
        tool: request.tool.clone(),
        label: request.label.clone(),
        model: ModelRecord {
            name: graph.name().to_string(),
            source: request.model_source.clone(),
            params: graph.params(),
            macs: graph.macs(),
            depth: graph.depth(),
            input: [c, h, w],
        },
        config: RunConfig {
            mode: request.mode,
            batch_size: request.batch_size,
            image_size: [h, w],
            warmup: request.warmup,
            passes: request.passes,
            seed: request.seed,
            threads_requested: request.threads_requested,
            precision: request.precision,
        },
        engine: engine.info(),
        machine: crate::env::detect_machine(),
        started_at,
        duration_s: run_clock.elapsed().as_secs_f64(),
        samples: by_quantity,
        summary,
        throughput,
        memory: MemoryRecord {
            peak_rss_bytes: memory::peak_rss(),
            peak_rss_reset,
            device_peak_bytes: device_peak,
            estimate_bytes: memory::estimate_bytes(graph, request.mode, request.batch_size),
        },
        peak_gflops_per_s: None,
        warnings,
    })
}

/// One pass: inputs and gradients are made untimed; each phase is bracketed by syncs.
pub(crate) fn one_pass(session: &mut dyn Session, mode: Mode) -> Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(3);
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
        }
        Mode::Step => {
            let t = Instant::now();
            session.backward()?;
            session.sync()?;
            times.push(t.elapsed());
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

fn spread_warnings(summary: &BTreeMap<Quantity, Summary>) -> Vec<String> {
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
    use cnnbench_engine::EngineInfo;
    use cnnbench_graph::{ops::Conv2d, GraphBuilder};
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A fake engine that sleeps a known time per phase and logs the calls it receives.
    struct SleepyEngine {
        log: Rc<RefCell<Vec<&'static str>>>,
    }
    struct SleepySession {
        log: Rc<RefCell<Vec<&'static str>>>,
    }
    impl Session for SleepySession {
        fn prepare_batch(&mut self) -> Result<()> {
            self.log.borrow_mut().push("batch");
            std::thread::sleep(Duration::from_millis(20)); // untimed: must not show up
            Ok(())
        }
        fn forward(&mut self) -> Result<()> {
            self.log.borrow_mut().push("forward");
            std::thread::sleep(Duration::from_millis(4));
            Ok(())
        }
        fn prepare_output_grad(&mut self) -> Result<()> {
            self.log.borrow_mut().push("grad");
            std::thread::sleep(Duration::from_millis(20));
            Ok(())
        }
        fn backward(&mut self) -> Result<()> {
            self.log.borrow_mut().push("backward");
            std::thread::sleep(Duration::from_millis(8));
            Ok(())
        }
        fn update(&mut self) -> Result<()> {
            self.log.borrow_mut().push("update");
            std::thread::sleep(Duration::from_millis(2));
            Ok(())
        }
        fn sync(&mut self) -> Result<()> {
            self.log.borrow_mut().push("sync");
            Ok(())
        }
    }
    impl Engine for SleepyEngine {
        fn capabilities(&self) -> cnnbench_engine::Capabilities {
            cnnbench_engine::Capabilities::cpu_f32()
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
            }
        }
        fn prepare(&self, _: &Graph, _: &SessionConfig) -> Result<Box<dyn Session>> {
            Ok(Box::new(SleepySession {
                log: self.log.clone(),
            }))
        }
    }

    fn tiny_graph() -> Graph {
        let mut b = GraphBuilder::new("tiny", [3, 8, 8]);
        let x = b.input();
        let y = b.conv("conv", &x, Conv2d::new(4, 3));
        b.finish(&y).unwrap()
    }

    fn request(mode: Mode) -> RunRequest {
        RunRequest {
            mode,
            batch_size: 2,
            warmup: 1,
            passes: 3,
            seed: 0,
            threads_requested: None,
            precision: Precision::F32,
            model_source: "test".into(),
            label: None,
            tool: ToolInfo {
                name: "cnnbench".into(),
                version: "0".into(),
                git_commit: None,
            },
        }
    }

    #[test]
    fn train_times_forward_and_backward_apart_and_drops_warmup() {
        let log = Rc::new(RefCell::new(Vec::new()));
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
        for i in 0..3 {
            assert!(
                (t[i] - f[i] - b[i]).abs() < 1e-12,
                "total = forward + backward"
            );
            // The 20 ms of untimed preparation must not leak into the samples.
            assert!(f[i] >= 0.004 && f[i] < 0.015, "forward {}", f[i]);
            assert!(b[i] >= 0.008 && b[i] < 0.019, "backward {}", b[i]);
        }
        // Every timed phase is bracketed by syncs.
        let calls = log.borrow();
        for (i, call) in calls.iter().enumerate() {
            if *call == "forward" || *call == "backward" {
                assert_eq!(calls[i - 1], "sync");
                assert_eq!(calls[i + 1], "sync");
            }
        }
        assert!(result.throughput.images_per_s > 0.0);
        assert_eq!(result.summary[&Quantity::Total].count, 3);
    }

    #[test]
    fn step_mode_times_three_phases_and_infer_one() {
        let engine = SleepyEngine {
            log: Rc::new(RefCell::new(Vec::new())),
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
            log: Rc::new(RefCell::new(Vec::new())),
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
