//! Watching the machine while the harness measures: a snapshot of the contention
//! signals (`cnnbench_host::contention`) before and after every timed pass, off the
//! timed regions, and the verdict on the run. The limits were chosen by measurement on
//! a 2-core cloud VM, a quiet run against one beside two busy loops
//! (`docs/src/method.md`, "Is the machine quiet?").

use cnnbench_host::contention::{Sampler, Snapshot, Window};
use cnnbench_host::gpu::{throttle_reason_names, GpuSnapshot, GpuWatch, THROTTLE_REASONS};
use cnnbench_results::validity::{ClockRecord, GpuSignals, Limits, Signals, Validity, Verdict};

/// The limits every run is judged against. Measured on a 2-core AMD EPYC VM (AVX2, no
/// AVX-512), nothing else running (ResNet-18 at 64×64, batch 2, 3 s of timed passes): quiet,
/// other processes used at most 1.1% of the CPU time and steal 0.2%; beside one busy
/// loop 44%, beside two 75%. CPU pressure counts cnnbench's own threads too: 22% quiet
/// with burn-flex's two threads (0.8% with one), 59% and 99% beside one and two loops;
/// its limit sits between.
pub const LIMITS: Limits = Limits {
    cpu_pressure_pct: 40.0,
    memory_pressure_pct: 5.0,
    steal_pct: 5.0,
    other_cpu_pct: 10.0,
    major_faults: 100,
    min_ticks: 100,
    gpu_thermal_violation_pct: Some(1.0),
};

/// Snapshots around each timed pass of one run.
pub struct Watch {
    sampler: Sampler,
    first: Option<(Snapshot, Option<GpuSnapshot>)>,
    pass_start: Option<(Snapshot, Option<GpuSnapshot>)>,
    last: Option<(Snapshot, Option<GpuSnapshot>)>,
    passes: Vec<Signals>,
    clock_start: Option<(f64, f64)>,
    /// The NVIDIA GPU the engine computes on, or why it cannot be watched.
    gpu: Option<Result<GpuWatch, String>>,
}

impl Watch {
    /// `tree_root`: as [`Sampler::new`]'s `root`. `cuda_device`: the CUDA device the
    /// engine computes on (`cuda:N`), watched through NVML where the driver offers it.
    pub fn new(tree_root: Option<u32>, cuda_device: Option<usize>) -> Watch {
        Watch {
            sampler: Sampler::new(tree_root),
            first: None,
            pass_start: None,
            last: None,
            passes: Vec::new(),
            clock_start: None,
            gpu: cuda_device.map(GpuWatch::open),
        }
    }

    fn snapshot(&self) -> (Snapshot, Option<GpuSnapshot>) {
        let gpu = match &self.gpu {
            Some(Ok(watch)) => Some(watch.snapshot()),
            _ => None,
        };
        (self.sampler.snapshot(), gpu)
    }

    fn signals_between(
        &self,
        (a, ga): &(Snapshot, Option<GpuSnapshot>),
        (b, gb): &(Snapshot, Option<GpuSnapshot>),
    ) -> Signals {
        let mut s = signals(&a.until(b));
        if let (Some(Ok(watch)), Some(ga), Some(gb)) = (&self.gpu, ga, gb) {
            s.gpu = Some(gpu_signals(watch, ga, gb));
        }
        s
    }

    /// Just before a timed pass (its untimed preparation included).
    pub fn pass_begins(&mut self) {
        let now = self.snapshot();
        if self.first.is_none() {
            self.first = Some(now.clone());
            self.clock_start = cnnbench_host::contention::cpu_mhz_range();
        }
        self.pass_start = Some(now);
    }

    /// Just after a timed pass's last synchronisation.
    pub fn pass_ends(&mut self) {
        let now = self.snapshot();
        if let Some(start) = self.pass_start.take() {
            let pass = self.signals_between(&start, &now);
            self.passes.push(pass);
        }
        self.last = Some(now);
    }

    /// The verdict on the timed passes. `on_gpu`: the engine's device is a GPU; one that
    /// is not watched (not an NVIDIA GPU through CUDA, or no NVML) is said in the notes.
    pub fn finish(self, on_gpu: bool) -> Validity {
        self.finish_with(on_gpu, None)
    }

    /// As [`Watch::finish`], for a run whose own threads contend for the cores by
    /// design (`why`: several sessions in flight): the CPU pressure, which counts them,
    /// is not judged, and the other processes' share of the CPU is.
    pub fn finish_contended(self, on_gpu: bool, why: &str) -> Validity {
        self.finish_with(on_gpu, Some(why))
    }

    fn finish_with(self, on_gpu: bool, own_contention: Option<&str>) -> Validity {
        let timed = match (&self.first, &self.last) {
            (Some(a), Some(b)) => self.signals_between(a, b),
            _ => Signals::default(),
        };
        let limits = match own_contention {
            Some(_) => Limits {
                cpu_pressure_pct: f64::INFINITY,
                ..LIMITS
            },
            None => LIMITS,
        };
        let (verdict, reasons, mut notes) = judge(&timed, &limits);
        if let Some(why) = own_contention {
            notes.push(format!(
                "CPU pressure was not judged: {why} contend for the cores by design, and it counts them; the other processes' share of the CPU was judged instead"
            ));
        }
        match &self.gpu {
            Some(Ok(_)) => {}
            Some(Err(why)) => notes.push(format!(
                "the GPU's clocks and throttle reasons were not watched ({why}): only the host's signals were judged"
            )),
            None if on_gpu => notes.push(
                "the GPU's clocks and throttle reasons are watched only on NVIDIA GPUs through CUDA (cuda:N) with NVML: only the host's signals were judged"
                    .into(),
            ),
            None => {}
        }
        let cpu_clock = match (self.clock_start, cnnbench_host::contention::cpu_mhz_range()) {
            (Some(s), Some(e)) => Some(ClockRecord {
                start_mhz: [s.0, s.1],
                end_mhz: [e.0, e.1],
            }),
            _ => None,
        };
        Validity {
            verdict,
            reasons,
            notes,
            limits: LIMITS,
            timed,
            cpu_clock,
            passes: self.passes,
            retried: Vec::new(),
        }
    }
}

fn signals(w: &Window) -> Signals {
    Signals {
        window_s: w.seconds,
        cpu_pressure_pct: w.cpu_pressure_pct,
        memory_pressure_pct: w.memory_pressure_pct,
        steal_pct: w.steal_pct,
        other_cpu_pct: w.other_cpu_pct,
        ticks: w.ticks,
        major_faults: w.major_faults,
        throttle_events: w.throttle_events,
        gpu: None,
    }
}

/// The GPU between two snapshots: the clock and temperature range, the throttle reasons
/// seen at either, and the violation counters' growth.
fn gpu_signals(watch: &GpuWatch, a: &GpuSnapshot, b: &GpuSnapshot) -> GpuSignals {
    GpuSignals {
        device: watch.name.clone(),
        uuid: watch.uuid.clone(),
        ..gpu_signals_of(a, b)
    }
}

/// [`gpu_signals`] without the device's name.
fn gpu_signals_of(a: &GpuSnapshot, b: &GpuSnapshot) -> GpuSignals {
    let range = |x: Option<u32>, y: Option<u32>| match (x, y) {
        (Some(x), Some(y)) => Some([x.min(y), x.max(y)]),
        (Some(v), None) | (None, Some(v)) => Some([v, v]),
        (None, None) => None,
    };
    let grown_ms =
        |x: Option<u64>, y: Option<u64>| x.zip(y).map(|(x, y)| y.saturating_sub(x) as f64 / 1e6);
    let reasons = a.throttle_reasons.unwrap_or(0) | b.throttle_reasons.unwrap_or(0);
    GpuSignals {
        device: String::new(),
        uuid: String::new(),
        sm_clock_mhz: range(a.sm_clock_mhz, b.sm_clock_mhz),
        throttle_reasons: throttle_reason_names(reasons)
            .into_iter()
            .map(String::from)
            .collect(),
        thermal_violation_ms: grown_ms(a.thermal_violation_ns, b.thermal_violation_ns),
        power_violation_ms: grown_ms(a.power_violation_ns, b.power_violation_ns),
        temperature_c: range(a.temperature_c, b.temperature_c),
    }
}

/// The GPU's part of the verdict: a throttle reason that is not the work itself (heat, a
/// power brake, a hardware slowdown), or a thermal limit holding the clocks down for more
/// than the limit's share of the time. Running at the power cap is what a GPU does at
/// full load: a note, not a reason.
fn judge_gpu(
    g: &GpuSignals,
    window_s: f64,
    limits: &Limits,
    reasons: &mut Vec<String>,
    notes: &mut Vec<String>,
) {
    let harmful: Vec<&str> = g
        .throttle_reasons
        .iter()
        .map(String::as_str)
        .filter(|name| THROTTLE_REASONS.iter().any(|(_, n, bad)| *bad && n == name))
        .collect();
    if !harmful.is_empty() {
        reasons.push(format!(
            "the GPU was slowed by {} (NVML's throttle reasons): the times may be inflated",
            harmful.join(", ")
        ));
    }
    let share = |ms: f64| {
        if window_s > 0.0 {
            100.0 * ms / (1000.0 * window_s)
        } else {
            0.0
        }
    };
    if let (Some(ms), Some(limit)) = (g.thermal_violation_ms, limits.gpu_thermal_violation_pct) {
        if share(ms) > limit {
            reasons.push(format!(
                "a thermal limit held the GPU's clocks down {:.0}% of the time (limit {limit:.0}%)",
                share(ms)
            ));
        }
    }
    let at_cap = g.throttle_reasons.iter().any(|r| r == "sw_power_cap");
    if let Some(ms) = g.power_violation_ms.filter(|ms| *ms > 0.0) {
        notes.push(format!(
            "the GPU ran at its power limit {:.0}% of the time (normal at full load){}",
            share(ms),
            g.sm_clock_mhz
                .map(|[lo, hi]| format!("; SM clock {lo}–{hi} MHz"))
                .unwrap_or_default()
        ));
    } else if at_cap {
        notes.push("the GPU was at its power cap at a snapshot (normal at full load)".into());
    }
}

/// The verdict on the signals of the timed passes: disturbed when any signal is over its
/// limit. Returns the reasons and the notes on what could not be judged.
pub fn judge(timed: &Signals, limits: &Limits) -> (Verdict, Vec<String>, Vec<String>) {
    let mut reasons = Vec::new();
    let mut notes = Vec::new();
    let over = |value: Option<f64>, limit: f64| value.filter(|v| *v > limit);
    if let Some(v) = over(timed.cpu_pressure_pct, limits.cpu_pressure_pct) {
        reasons.push(format!(
            "tasks waited for a CPU {v:.0}% of the time (CPU pressure; limit {:.0}%)",
            limits.cpu_pressure_pct
        ));
    }
    if let Some(v) = over(timed.memory_pressure_pct, limits.memory_pressure_pct) {
        reasons.push(format!(
            "tasks stalled on memory {v:.0}% of the time (memory pressure; limit {:.0}%)",
            limits.memory_pressure_pct
        ));
    }
    let enough_ticks = timed.ticks.is_some_and(|t| t >= limits.min_ticks);
    if enough_ticks {
        if let Some(v) = over(timed.other_cpu_pct, limits.other_cpu_pct) {
            reasons.push(format!(
                "other processes used {v:.0}% of the machine's CPU time (limit {:.0}%)",
                limits.other_cpu_pct
            ));
        }
        if let Some(v) = over(timed.steal_pct, limits.steal_pct) {
            reasons.push(format!(
                "the hypervisor gave {v:.0}% of the CPU time to other guests (steal; limit {:.0}%)",
                limits.steal_pct
            ));
        }
    } else if timed.ticks.is_some() {
        notes.push(format!(
            "the timed passes lasted {:.2} s: too short for the shares of steal and of other processes (counted in clock ticks) to be judged; run longer (--min-time 2) to judge them",
            timed.window_s
        ));
    }
    if let Some(n) = timed.major_faults.filter(|n| *n >= limits.major_faults) {
        reasons.push(format!(
            "{n} page faults read from disk (major faults; limit {}): the machine was paging",
            limits.major_faults
        ));
    }
    if let Some(n) = timed.throttle_events.filter(|n| *n > 0) {
        reasons.push(format!("the CPUs were thermally throttled {n} times"));
    }
    if let Some(g) = &timed.gpu {
        judge_gpu(g, timed.window_s, limits, &mut reasons, &mut notes);
    }
    let missing: Vec<&str> = [
        (timed.cpu_pressure_pct.is_none(), "CPU pressure"),
        (timed.memory_pressure_pct.is_none(), "memory pressure"),
        (timed.steal_pct.is_none(), "steal"),
        (timed.other_cpu_pct.is_none(), "other processes' CPU time"),
        (timed.major_faults.is_none(), "major faults"),
    ]
    .into_iter()
    .filter_map(|(absent, name)| absent.then_some(name))
    .collect();
    if !missing.is_empty() {
        notes.push(format!(
            "this system does not offer {}: not judged",
            missing.join(", ")
        ));
    }
    let verdict = if reasons.is_empty() {
        Verdict::Clean
    } else {
        Verdict::Disturbed
    };
    (verdict, reasons, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet() -> Signals {
        Signals {
            window_s: 2.0,
            cpu_pressure_pct: Some(1.0),
            memory_pressure_pct: Some(0.0),
            steal_pct: Some(0.5),
            other_cpu_pct: Some(1.0),
            ticks: Some(400),
            major_faults: Some(0),
            throttle_events: None,
            gpu: None,
        }
    }

    #[test]
    fn each_signal_over_its_limit_is_a_reason() {
        let (v, reasons, notes) = judge(&quiet(), &LIMITS);
        assert_eq!(v, Verdict::Clean);
        assert!(reasons.is_empty() && notes.is_empty(), "{notes:?}");
        let cases: [(Signals, &str); 6] = [
            (
                Signals {
                    cpu_pressure_pct: Some(60.0),
                    ..quiet()
                },
                "CPU pressure",
            ),
            (
                Signals {
                    memory_pressure_pct: Some(9.0),
                    ..quiet()
                },
                "memory pressure",
            ),
            (
                Signals {
                    steal_pct: Some(30.0),
                    ..quiet()
                },
                "steal",
            ),
            (
                Signals {
                    other_cpu_pct: Some(48.0),
                    ..quiet()
                },
                "other processes used 48%",
            ),
            (
                Signals {
                    major_faults: Some(5000),
                    ..quiet()
                },
                "paging",
            ),
            (
                Signals {
                    throttle_events: Some(3),
                    ..quiet()
                },
                "throttled 3 times",
            ),
        ];
        for (s, words) in cases {
            let (v, reasons, _) = judge(&s, &LIMITS);
            assert_eq!(v, Verdict::Disturbed, "{s:?}");
            assert_eq!(reasons.len(), 1, "{reasons:?}");
            assert!(reasons[0].contains(words), "{reasons:?}");
        }
    }

    #[test]
    fn a_short_window_does_not_judge_tick_shares_and_says_so() {
        let short = Signals {
            window_s: 0.1,
            ticks: Some(20),
            other_cpu_pct: Some(50.0),
            ..quiet()
        };
        let (v, reasons, notes) = judge(&short, &LIMITS);
        assert_eq!(v, Verdict::Clean, "{reasons:?}");
        assert!(notes[0].contains("too short"), "{notes:?}");
        // A system without the files: nothing judged, nothing failed, and said.
        let (v, _, notes) = judge(&Signals::default(), &LIMITS);
        assert_eq!(v, Verdict::Clean);
        assert!(
            notes.iter().any(|n| n.contains("does not offer")),
            "{notes:?}"
        );
    }

    fn gpu(reasons: &[&str], thermal_ms: f64, power_ms: f64) -> GpuSignals {
        GpuSignals {
            device: "NVIDIA H200".into(),
            uuid: "GPU-0".into(),
            sm_clock_mhz: Some([1755, 1980]),
            throttle_reasons: reasons.iter().map(|r| r.to_string()).collect(),
            thermal_violation_ms: Some(thermal_ms),
            power_violation_ms: Some(power_ms),
            temperature_c: Some([41, 63]),
        }
    }

    #[test]
    fn a_gpu_slowed_by_heat_is_disturbed_and_one_at_its_power_cap_is_not() {
        let judged = |g: GpuSignals| {
            judge(
                &Signals {
                    gpu: Some(g),
                    ..quiet()
                },
                &LIMITS,
            )
        };
        // Full load at the power cap: clean, with a note.
        let (v, reasons, notes) = judged(gpu(&["sw_power_cap"], 0.0, 800.0));
        assert_eq!(v, Verdict::Clean, "{reasons:?}");
        assert!(
            notes[0].contains("power limit 40% of the time"),
            "{notes:?}"
        );
        assert!(notes[0].contains("SM clock 1755–1980 MHz"), "{notes:?}");
        let (v, _, notes) = judged(gpu(&["sw_power_cap"], 0.0, 0.0));
        assert_eq!(v, Verdict::Clean);
        assert!(notes[0].contains("power cap at a snapshot"), "{notes:?}");
        // Heat, by reason or by the violation counter (2 s window: 1% is 20 ms).
        let (v, reasons, _) = judged(gpu(&["hw_thermal_slowdown", "sw_power_cap"], 0.0, 0.0));
        assert_eq!(v, Verdict::Disturbed);
        assert!(
            reasons[0].contains("slowed by hw_thermal_slowdown"),
            "{reasons:?}"
        );
        let (v, reasons, _) = judged(gpu(&[], 100.0, 0.0));
        assert_eq!(v, Verdict::Disturbed);
        assert!(
            reasons[0].contains("thermal limit held the GPU's clocks down 5%"),
            "{reasons:?}"
        );
        assert_eq!(judged(gpu(&[], 10.0, 0.0)).0, Verdict::Clean);
    }

    #[test]
    fn gpu_signals_span_both_snapshots() {
        let a = GpuSnapshot {
            sm_clock_mhz: Some(1980),
            throttle_reasons: Some(0),
            thermal_violation_ns: Some(5_000_000),
            power_violation_ns: None,
            temperature_c: Some(60),
        };
        let b = GpuSnapshot {
            sm_clock_mhz: Some(1410),
            throttle_reasons: Some(THROTTLE_REASONS[5].0),
            thermal_violation_ns: Some(30_000_000),
            power_violation_ns: Some(1),
            temperature_c: Some(84),
        };
        // No GPU here to open: the signals are computed from the snapshots alone.
        let g = gpu_signals_of(&a, &b);
        assert_eq!(g.sm_clock_mhz, Some([1410, 1980]));
        assert_eq!(g.throttle_reasons, ["sw_thermal_slowdown"]);
        assert_eq!(g.thermal_violation_ms, Some(25.0));
        assert_eq!(g.power_violation_ms, None, "one side unknown: unknown");
        assert_eq!(g.temperature_c, Some([60, 84]));
    }

    #[test]
    fn a_gpu_that_cannot_be_watched_is_said_in_the_notes() {
        let mut watch = Watch::new(None, Some(0));
        watch.pass_begins();
        watch.pass_ends();
        let v = watch.finish(true);
        if std::path::Path::new("/proc/driver/nvidia").exists() {
            assert!(v.timed.gpu.is_some(), "an NVIDIA machine is watched");
        } else {
            assert!(v.timed.gpu.is_none());
            assert!(
                v.notes
                    .iter()
                    .any(|n| n.contains("were not watched (NVML (libnvidia-ml) is not available")),
                "{:?}",
                v.notes
            );
        }
    }

    #[test]
    fn a_watch_records_one_window_per_pass() {
        let mut watch = Watch::new(None, None);
        for _ in 0..3 {
            watch.pass_begins();
            std::thread::sleep(std::time::Duration::from_millis(5));
            watch.pass_ends();
        }
        let v = watch.finish(true);
        assert_eq!(v.passes.len(), 3);
        assert!(v.passes.iter().all(|p| p.window_s >= 0.005));
        assert!(v.timed.window_s >= v.passes.iter().map(|p| p.window_s).sum::<f64>());
        assert!(v.notes.iter().any(|n| n.contains("GPU")));
    }
}
