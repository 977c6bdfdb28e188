//! Whether a run's numbers can be trusted as a measurement of the engine alone: what
//! the machine was doing while the timed passes ran (`validity`), and what the run paid
//! before its first timed pass (`cold_start`). Both are recorded by the harness; the
//! report and `compare` read them.

use serde::{Deserialize, Serialize};

/// The harness's judgement of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// No signal crossed its limit during the timed passes.
    Clean,
    /// Something else competed for the machine: the times may be inflated.
    Disturbed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Clean => "clean",
            Verdict::Disturbed => "disturbed",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The contention signals of one stretch of time; `None` where the system does not
/// offer the signal (no PSI, no cpufreq or thermal counters in most VMs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// Wall time the signals cover, in seconds.
    pub window_s: f64,
    /// Share of the time during which some runnable task waited for a CPU (Linux PSI,
    /// `/proc/pressure/cpu` "some"), percent.
    pub cpu_pressure_pct: Option<f64>,
    /// Share of the time during which some task stalled on memory (PSI), percent.
    pub memory_pressure_pct: Option<f64>,
    /// Share of the machine's CPU time the hypervisor gave to other guests (`steal` in
    /// `/proc/stat`), percent.
    pub steal_pct: Option<f64>,
    /// Share of the machine's CPU time used by processes outside cnnbench's process tree,
    /// percent.
    pub other_cpu_pct: Option<f64>,
    /// The clock ticks (all CPUs together) the two shares above rest on: at 100 per
    /// second and CPU, a short window cannot tell a few percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks: Option<u64>,
    /// Page faults that read from disk, machine-wide.
    pub major_faults: Option<u64>,
    /// CPU thermal throttling events (`thermal_throttle/core_throttle_count`).
    pub throttle_events: Option<u64>,
    /// The NVIDIA GPU the engine computed on, through NVML; absent for CPU engines and
    /// where NVML is not available (a note says so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuSignals>,
}

/// An NVIDIA GPU over one stretch of time, from NVML snapshots at its start and end.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSignals {
    /// NVML's name for the device and its UUID, so a reader can tell which GPU it was.
    pub device: String,
    pub uuid: String,
    /// Lowest and highest SM clock seen at the snapshots, MHz.
    pub sm_clock_mhz: Option<[u32; 2]>,
    /// NVML's throttle reasons seen at either snapshot (`sw_power_cap`,
    /// `hw_thermal_slowdown`, …).
    pub throttle_reasons: Vec<String>,
    /// Time a thermal limit held the clocks below the application clocks, from NVML's
    /// violation counter (so a throttle between the snapshots counts too), ms.
    pub thermal_violation_ms: Option<f64>,
    /// The same for the power limit, ms.
    pub power_violation_ms: Option<f64>,
    /// Lowest and highest GPU temperature seen, °C.
    pub temperature_c: Option<[u32; 2]>,
}

/// The limits a run's signals were judged against, recorded beside the verdict so that a
/// reader of an old file knows what `clean` meant then.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Limits {
    pub cpu_pressure_pct: f64,
    pub memory_pressure_pct: f64,
    pub steal_pct: f64,
    pub other_cpu_pct: f64,
    pub major_faults: u64,
    /// Fewer ticks than this and the tick-based shares (steal, other processes) are
    /// recorded but not judged.
    pub min_ticks: u64,
    /// Share of the time a thermal limit may hold an NVIDIA GPU's clocks down (NVML's
    /// violation counter), percent. Absent in files written before GPUs were watched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_thermal_violation_pct: Option<f64>,
}

/// The CPUs' clocks at the start and end of the timed passes, where cpufreq says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClockRecord {
    /// Lowest and highest CPU clock in MHz when the timed passes started.
    pub start_mhz: [f64; 2],
    /// The same when they ended.
    pub end_mhz: [f64; 2],
}

/// An attempt that came out disturbed and was run again (`run --retries`): its verdict's
/// reasons and its median, so that the retry is on record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetriedAttempt {
    pub reasons: Vec<String>,
    /// Median total time of a pass in seconds.
    pub median_total_s: f64,
    pub passes: usize,
}

/// What the machine did while the timed passes ran, and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub verdict: Verdict,
    /// Each signal over its limit, in words; empty when clean.
    pub reasons: Vec<String>,
    /// What could not be judged and why (a short run, a signal the system lacks).
    #[serde(default)]
    pub notes: Vec<String>,
    pub limits: Limits,
    /// The signals from the start of the first timed pass to the end of the last.
    pub timed: Signals,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_clock: Option<ClockRecord>,
    /// The signals of each timed pass, in pass order (its untimed preparation included).
    pub passes: Vec<Signals>,
    /// Earlier attempts at the same run that were disturbed (`run --retries`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retried: Vec<RetriedAttempt>,
}

impl Validity {
    pub fn is_disturbed(&self) -> bool {
        self.verdict == Verdict::Disturbed
    }
}

/// What a run cost before its first timed pass: users of compiled stacks pay it on every
/// deploy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColdStart {
    /// From the process's start (the kernel's record of it) to the start of this run:
    /// loading libraries, reading the model, making the engine, and every earlier run in
    /// the same process. `None` where the system does not say when the process started.
    pub process_before_run_s: Option<f64>,
    /// Preparing the session: weights, plans, compilation.
    pub prepare_s: f64,
    /// Compiling the network, for an engine that compiles on its first call
    /// (`torch.compile`): one throw-away pass the harness timed on its own, after
    /// preparing and before the warm-up. Absent where there is nothing to compile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile_s: Option<f64>,
    /// The first pass, a warm-up pass unless `--warmup 0`.
    pub first_pass_s: f64,
    /// From the process's start to the start of the first timed pass.
    pub process_to_first_timed_pass_s: Option<f64>,
    /// Whether this was the process's first run: only then is the time since the
    /// process started this run's own.
    pub first_in_process: bool,
}
