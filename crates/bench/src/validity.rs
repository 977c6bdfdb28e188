//! Watching the machine while the harness measures: a snapshot of the contention
//! signals (`cnnbench_host::contention`) before and after every timed pass, off the
//! timed regions, and the verdict on the run. The limits were chosen by measurement on
//! a 2-core cloud VM, a quiet run against one beside two busy loops
//! (`docs/src/method.md`, "Is the machine quiet?").

use cnnbench_host::contention::{Sampler, Snapshot, Window};
use cnnbench_results::validity::{ClockRecord, Limits, Signals, Validity, Verdict};

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
};

/// Snapshots around each timed pass of one run.
pub struct Watch {
    sampler: Sampler,
    first: Option<Snapshot>,
    pass_start: Option<Snapshot>,
    last: Option<Snapshot>,
    passes: Vec<Signals>,
    clock_start: Option<(f64, f64)>,
}

impl Watch {
    /// `tree_root`: as [`Sampler::new`]'s `root`.
    pub fn new(tree_root: Option<u32>) -> Watch {
        Watch {
            sampler: Sampler::new(tree_root),
            first: None,
            pass_start: None,
            last: None,
            passes: Vec::new(),
            clock_start: None,
        }
    }

    /// Just before a timed pass (its untimed preparation included).
    pub fn pass_begins(&mut self) {
        let now = self.sampler.snapshot();
        if self.first.is_none() {
            self.first = Some(now.clone());
            self.clock_start = cnnbench_host::contention::cpu_mhz_range();
        }
        self.pass_start = Some(now);
    }

    /// Just after a timed pass's last synchronisation.
    pub fn pass_ends(&mut self) {
        let now = self.sampler.snapshot();
        if let Some(start) = self.pass_start.take() {
            self.passes.push(signals(&start.until(&now)));
        }
        self.last = Some(now);
    }

    /// The verdict on the timed passes. `on_gpu`: the engine's device is a GPU, whose
    /// clocks and throttling this build does not watch (said in the notes).
    pub fn finish(self, on_gpu: bool) -> Validity {
        let timed = match (&self.first, &self.last) {
            (Some(a), Some(b)) => signals(&a.until(b)),
            _ => Signals::default(),
        };
        let (verdict, reasons, mut notes) = judge(&timed, &LIMITS);
        if on_gpu {
            notes.push(
                "the GPU's clocks and throttle reasons are not watched by this build: only the host's signals were judged"
                    .into(),
            );
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

    #[test]
    fn a_watch_records_one_window_per_pass() {
        let mut watch = Watch::new(None);
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
