//! Inference as it is served: MLPerf LoadGen's four load scenarios, as the run spec asks
//! for one and the result records what ran. LoadGen's definitions (mlcommons/inference,
//! loadgen/test_settings.h): single-stream issues one query of one sample at a time, the
//! next when the last completes, and reports the 90th percentile of latency;
//! multi-stream does the same with queries of several samples and reports the 99th;
//! server issues one-sample queries at Poisson-distributed arrival times and is valid
//! when the 99th percentile of latency — counted from each query's *scheduled* arrival —
//! is within a bound; offline issues every sample at once and reports throughput.

use serde::{Deserialize, Serialize};

/// One of LoadGen's scenarios, ordered as `--help` lists them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ScenarioKind {
    SingleStream,
    MultiStream,
    Server,
    Offline,
}

/// How a scenario issues its queries: the one thing the load's driver dispatches on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Issuing {
    /// One query at a time, the next when the last completes (single- and multi-stream).
    ClosedLoop,
    /// Queries at Poisson-distributed arrival times, whatever is in flight (server).
    PoissonArrivals,
    /// Every sample at once (offline).
    AllAtOnce,
}

/// What a scenario's count of queries (`--min-queries`, MLPerf's minimum) counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    Queries,
    Samples,
}

impl Counted {
    /// The word for the count, plural.
    pub fn noun(self) -> &'static str {
        match self {
            Counted::Queries => "queries",
            Counted::Samples => "samples",
        }
    }
}

/// A setting of a run that only some scenarios take: each scenario's rules list the ones
/// it takes, and a spec that sets another is refused, in the flag's words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScenarioSetting {
    SamplesPerQuery,
    TargetQps,
    LatencyBound,
    FindPeak,
    InFlight,
    Batcher,
}

impl ScenarioSetting {
    /// Every setting, in the order `run --help` lists their flags.
    pub const ALL: [ScenarioSetting; 6] = [
        ScenarioSetting::SamplesPerQuery,
        ScenarioSetting::TargetQps,
        ScenarioSetting::LatencyBound,
        ScenarioSetting::FindPeak,
        ScenarioSetting::InFlight,
        ScenarioSetting::Batcher,
    ];

    /// The flag that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            ScenarioSetting::SamplesPerQuery => "--samples-per-query",
            ScenarioSetting::TargetQps => "--qps",
            ScenarioSetting::LatencyBound => "--latency-bound",
            ScenarioSetting::FindPeak => "--find-peak",
            ScenarioSetting::InFlight => "--in-flight",
            ScenarioSetting::Batcher => "--max-batch",
        }
    }

    /// The scenarios that take it, named and joined with `conjunction` ("server or
    /// offline").
    pub fn takers(self, conjunction: &str) -> String {
        let names: Vec<&str> = ScenarioKind::ALL
            .iter()
            .filter(|kind| kind.takes(self))
            .map(|kind| kind.as_str())
            .collect();
        match names.split_last() {
            Some((last, [])) => (*last).to_string(),
            Some((last, rest)) => format!("{} {conjunction} {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    /// Whether `spec` sets it to other than what a scenario that does not take it holds.
    fn is_set_in(self, spec: &ScenarioSpec) -> bool {
        match self {
            ScenarioSetting::SamplesPerQuery => spec.samples_per_query != 1,
            ScenarioSetting::TargetQps => spec.target_qps.is_some(),
            ScenarioSetting::LatencyBound => spec.latency_bound_ms.is_some(),
            ScenarioSetting::FindPeak => spec.find_peak,
            ScenarioSetting::InFlight => spec.in_flight != 1,
            ScenarioSetting::Batcher => spec.batcher.is_some(),
        }
    }
}

/// A scenario's rules, in one row: how it issues, what it reports and counts, its
/// defaults and MLPerf's minimum, and the settings it takes. Everything that differs
/// between scenarios is read from here, so a new scenario is a new row (and, where it
/// issues in a new way, a new [`Issuing`] and its driver).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ScenarioRules {
    pub kind: ScenarioKind,
    /// The name on the command line and in result files.
    pub name: &'static str,
    pub issuing: Issuing,
    /// What it issues, said after its name in messages.
    pub issues: &'static str,
    /// The latency percentile it reports (LoadGen's `target_latency_percentile`); `None`
    /// for a scenario that reports throughput.
    pub percentile: Option<f64>,
    /// Samples in each query when none is asked for (LoadGen's).
    pub default_samples_per_query: usize,
    /// The fewest queries (or samples, see `counted`) a run issues when none is asked
    /// for: short of MLPerf's rules, long enough for the reported percentile to be
    /// estimated at 99% confidence (LoadGen's early-stopping bound).
    pub default_min_queries: usize,
    /// MLPerf Inference's minimum count (mlperf.conf, v4 and later).
    pub mlperf_min_queries: usize,
    pub counted: Counted,
    /// Whether a query's samples are the batch the engine computes (-b must agree).
    pub batch_is_the_query: bool,
    /// The settings it takes; any other set is refused.
    pub takes: &'static [ScenarioSetting],
}

const SINGLE_STREAM: ScenarioRules = ScenarioRules {
    kind: ScenarioKind::SingleStream,
    name: "single-stream",
    issuing: Issuing::ClosedLoop,
    issues: "issues one query of one sample at a time, the next when the last completes",
    percentile: Some(0.90),
    default_samples_per_query: 1,
    default_min_queries: 200,
    mlperf_min_queries: 1024,
    counted: Counted::Queries,
    batch_is_the_query: true,
    takes: &[],
};

const MULTI_STREAM: ScenarioRules = ScenarioRules {
    kind: ScenarioKind::MultiStream,
    name: "multi-stream",
    issuing: Issuing::ClosedLoop,
    issues: "issues one query of --samples-per-query samples at a time, the next when the last completes",
    percentile: Some(0.99),
    default_samples_per_query: 8,
    default_min_queries: 1000,
    mlperf_min_queries: 270_336,
    counted: Counted::Queries,
    batch_is_the_query: true,
    takes: &[ScenarioSetting::SamplesPerQuery],
};

const SERVER: ScenarioRules = ScenarioRules {
    kind: ScenarioKind::Server,
    name: "server",
    issuing: Issuing::PoissonArrivals,
    issues: "issues one-sample queries at Poisson-distributed arrival times",
    percentile: Some(0.99),
    default_samples_per_query: 1,
    default_min_queries: 1000,
    mlperf_min_queries: 270_336,
    counted: Counted::Queries,
    batch_is_the_query: true,
    takes: &[
        ScenarioSetting::TargetQps,
        ScenarioSetting::LatencyBound,
        ScenarioSetting::FindPeak,
        ScenarioSetting::InFlight,
        ScenarioSetting::Batcher,
    ],
};

const OFFLINE: ScenarioRules = ScenarioRules {
    kind: ScenarioKind::Offline,
    name: "offline",
    issuing: Issuing::AllAtOnce,
    issues: "issues every sample at once, and the engine computes them -b at a time",
    percentile: None,
    default_samples_per_query: 1,
    default_min_queries: 1024,
    mlperf_min_queries: 24_576,
    counted: Counted::Samples,
    batch_is_the_query: false,
    takes: &[ScenarioSetting::InFlight],
};

impl ScenarioKind {
    /// Every scenario, in the order `--help` lists them.
    pub const ALL: [ScenarioKind; 4] = [
        ScenarioKind::SingleStream,
        ScenarioKind::MultiStream,
        ScenarioKind::Server,
        ScenarioKind::Offline,
    ];

    /// The scenario's row of rules.
    pub fn rules(self) -> &'static ScenarioRules {
        match self {
            ScenarioKind::SingleStream => &SINGLE_STREAM,
            ScenarioKind::MultiStream => &MULTI_STREAM,
            ScenarioKind::Server => &SERVER,
            ScenarioKind::Offline => &OFFLINE,
        }
    }

    /// Every scenario's name, for the command line's possible values.
    pub fn names() -> [&'static str; 4] {
        ScenarioKind::ALL.map(|kind| kind.rules().name)
    }

    /// The name on the command line and in result files.
    pub fn as_str(self) -> &'static str {
        self.rules().name
    }

    /// The latency percentile the scenario reports; `None` for throughput.
    pub fn percentile(self) -> Option<f64> {
        self.rules().percentile
    }

    /// Samples in each query when none is asked for.
    pub fn default_samples_per_query(self) -> usize {
        self.rules().default_samples_per_query
    }

    /// The fewest queries (offline: samples) a run issues when none is asked for.
    pub fn default_min_queries(self) -> usize {
        self.rules().default_min_queries
    }

    /// Whether the scenario takes `setting`.
    pub fn takes(self, setting: ScenarioSetting) -> bool {
        self.rules().takes.contains(&setting)
    }

    /// MLPerf Inference's run rules for the scenario (mlperf.conf, v4 and later).
    pub fn mlperf_rules(self) -> MlperfRules {
        MlperfRules {
            min_duration_s: 600.0,
            min_queries: self.rules().mlperf_min_queries,
        }
    }

    /// The refusal of `setting`, which this scenario does not take.
    fn refuses(self, setting: ScenarioSetting) -> String {
        let flag = setting.flag();
        format!(
            "{flag} is for --scenario {}: {self} {}; leave out {flag}",
            setting.takers("or"),
            self.rules().issues
        )
    }
}

impl std::str::FromStr for ScenarioKind {
    type Err = String;

    fn from_str(name: &str) -> Result<ScenarioKind, String> {
        ScenarioKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "no scenario '{name}': one of {}",
                    ScenarioKind::names().join(", ")
                )
            })
    }
}

impl std::fmt::Display for ScenarioKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What MLPerf requires of a run for its result to count: a minimum duration and a
/// minimum number of queries (samples, for offline). A shorter run is still measured and
/// said not to meet them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MlperfRules {
    pub min_duration_s: f64,
    pub min_queries: usize,
}

/// The default shortest run of a scenario, seconds (MLPerf's is 600).
pub const DEFAULT_MIN_DURATION_S: f64 = 10.0;

/// The scenario a run spec asks for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    pub kind: ScenarioKind,
    /// Samples in each query, the batch the engine computes per query (offline: 1; the
    /// engine computes the samples the run's batch size at a time).
    pub samples_per_query: usize,
    /// Server: the queries per second that arrive (a Poisson process); with
    /// `find_peak`, where the search starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_qps: Option<f64>,
    /// Server: the bound the reported percentile of latency must be within for the run to
    /// be valid, milliseconds (MLPerf's ResNet-50 bound: 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_bound_ms: Option<f64>,
    /// The run issues queries for at least this long, seconds.
    pub min_duration_s: f64,
    /// ... and at least this many queries (offline: samples).
    pub min_queries: usize,
    /// Server: search for the highest target QPS whose run is valid (bracketed by
    /// doubling, then bisected, as LoadGen's peak search does).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub find_peak: bool,
    /// Server and offline: the queries the engine computes at once, each on its own
    /// session (`--in-flight`); single- and multi-stream have one by definition.
    #[serde(default = "one_in_flight", skip_serializing_if = "is_one")]
    pub in_flight: usize,
    /// Server: the dynamic batcher (`--max-batch`, `--batch-timeout`), as Triton's
    /// gathers queries into one call; `None`: every query computed on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batcher: Option<BatcherSpec>,
}

/// The server's dynamic batcher, as Triton Inference Server's: a free session takes the
/// oldest waiting query and, with it, the queries waiting behind it, up to `max_batch`;
/// when fewer are waiting it holds the batch open until the oldest has waited
/// `timeout_ms` since its arrival (Triton's `max_queue_delay`), then computes what it has.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatcherSpec {
    pub max_batch: usize,
    pub timeout_ms: f64,
}

/// The largest batch `--max-batch` takes: each power of two up to it is a session with
/// its own copy of the network.
pub const MAX_DYNAMIC_BATCH: usize = 1024;

/// The longest `--batch-timeout`, milliseconds: a minute, far beyond any latency bound.
pub const MAX_BATCH_TIMEOUT_MS: f64 = 60_000.0;

impl BatcherSpec {
    /// The batch sizes the batcher's sessions are compiled for: the powers of two below
    /// `max_batch`, and `max_batch`. A batch of k queries is computed on the smallest
    /// that holds it, the rest of it padding (recorded), as a server with a few fixed
    /// shapes (TensorRT's optimisation profiles) does.
    pub fn session_batch_sizes(&self) -> Vec<usize> {
        let mut sizes: Vec<usize> = std::iter::successors(Some(1_usize), |&n| n.checked_mul(2))
            .take_while(|&n| n < self.max_batch)
            .collect();
        sizes.push(self.max_batch);
        sizes
    }

    /// What makes the batcher impossible, in the flags' words.
    pub fn validate(&self) -> Result<(), String> {
        if !(2..=MAX_DYNAMIC_BATCH).contains(&self.max_batch) {
            return Err(format!(
                "--max-batch must be from 2 to {MAX_DYNAMIC_BATCH} (queries gathered into one call), not {}",
                self.max_batch
            ));
        }
        if !(self.timeout_ms >= 0.0 && self.timeout_ms <= MAX_BATCH_TIMEOUT_MS) {
            return Err(format!(
                "--batch-timeout must be from 0 to {MAX_BATCH_TIMEOUT_MS} milliseconds (how long a batch waits for more queries), not {}",
                self.timeout_ms
            ));
        }
        Ok(())
    }
}

/// What the dynamic batcher did over a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatcherRecord {
    pub max_batch: usize,
    pub timeout_ms: f64,
    /// The batch sizes the sessions were compiled for ([`BatcherSpec::session_batch_sizes`]).
    pub session_batch_sizes: Vec<usize>,
    /// Calls made, and the queries they gathered: `gathered[k - 1]` calls of k queries.
    pub calls: usize,
    pub gathered: Vec<usize>,
    /// The mean queries per call.
    pub mean_batch: f64,
    /// Samples computed only to fill a session's batch (a gathered batch of 3 on the
    /// session of 4: one).
    pub padded_samples: usize,
}

/// The most queries in flight `--in-flight` takes: each is a session with its own
/// copy of the network, so the bound keeps a typo from loading it thousands of times.
pub const MAX_IN_FLIGHT: usize = 64;

/// The most queries (offline: samples) one scenario run issues: each one's latency is
/// kept and written, about 20 bytes of JSON each, so that a result stays within what
/// `report` reads (MLPerf's server and multi-stream runs need 270,336).
pub const MAX_SCENARIO_QUERIES: usize = 2_000_000;

/// The longest a scenario run is planned to take, seconds: a day (MLPerf's runs take
/// 600 s). A run whose queries would take longer to arrive is refused before it starts.
pub const MAX_SCENARIO_SECONDS: f64 = 86_400.0;

/// The lightest server load, queries per second: one query in 1,000 s.
pub const MIN_TARGET_QPS: f64 = 1e-3;

/// The heaviest server load, queries per second.
pub const MAX_TARGET_QPS: f64 = 1e7;

/// The tightest latency bound, milliseconds: a microsecond, below any query's compute.
pub const MIN_LATENCY_BOUND_MS: f64 = 1e-3;

/// The loosest latency bound, milliseconds: an hour, beyond which a bound bounds nothing.
pub const MAX_LATENCY_BOUND_MS: f64 = 3_600_000.0;

fn one_in_flight() -> usize {
    1
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_one(n: &usize) -> bool {
    *n == 1
}

impl ScenarioSpec {
    /// A scenario with its defaults.
    pub fn new(kind: ScenarioKind) -> ScenarioSpec {
        ScenarioSpec {
            kind,
            samples_per_query: kind.default_samples_per_query(),
            target_qps: None,
            latency_bound_ms: None,
            min_duration_s: DEFAULT_MIN_DURATION_S,
            min_queries: kind.default_min_queries(),
            find_peak: false,
            in_flight: 1,
            batcher: None,
        }
    }

    /// What makes the scenario impossible to run as asked, in the flags' words. What a
    /// scenario takes is its rules' (a setting it does not take is refused); the bounds
    /// of each value are checked whichever scenario takes it.
    pub fn validate(&self) -> Result<(), String> {
        let kind = self.kind;
        let rules = kind.rules();
        if self.samples_per_query == 0 {
            return Err("--samples-per-query must be at least 1".into());
        }
        if self.in_flight == 0 {
            return Err("--in-flight must be at least 1".into());
        }
        if let Some(refused) = ScenarioSetting::ALL
            .into_iter()
            .find(|setting| setting.is_set_in(self) && !kind.takes(*setting))
        {
            return Err(kind.refuses(refused));
        }
        if !(self.min_duration_s >= 0.0 && self.min_duration_s <= MAX_SCENARIO_SECONDS) {
            return Err(format!(
                "--scenario-time must be from 0 to {MAX_SCENARIO_SECONDS} seconds (a day), not {}",
                crate::number(self.min_duration_s)
            ));
        }
        if !(1..=MAX_SCENARIO_QUERIES).contains(&self.min_queries) {
            return Err(format!(
                "--min-queries must be from 1 to {MAX_SCENARIO_QUERIES} (each query's latency is kept), not {}",
                self.min_queries
            ));
        }
        // A scenario of arrivals needs their rate (or the search for it) and the bound
        // its latency is judged by.
        let arrivals = rules.issuing == Issuing::PoissonArrivals;
        if arrivals && self.target_qps.is_none() && !self.find_peak {
            return Err(format!("--scenario {kind} needs the load: --qps N (queries per second), or --find-peak to search for the highest valid one"));
        }
        if arrivals && self.latency_bound_ms.is_none() {
            return Err(format!("--scenario {kind} needs --latency-bound MS: the p99 latency a valid run stays within (MLPerf's ResNet-50 bound is 15 ms)"));
        }
        if let Some(qps) = self.target_qps {
            if !(MIN_TARGET_QPS..=MAX_TARGET_QPS).contains(&qps) {
                return Err(format!(
                    "--qps must be from {MIN_TARGET_QPS} to {} queries per second, not {}",
                    crate::number(MAX_TARGET_QPS),
                    crate::number(qps)
                ));
            }
            // What the run plans before it starts: the queries the duration asks for at
            // this load, and how long the queries asked for take to arrive.
            let for_duration = qps * self.min_duration_s;
            if for_duration > MAX_SCENARIO_QUERIES as f64 {
                return Err(format!(
                    "--qps {} for --scenario-time {} s is {} queries, more than the {MAX_SCENARIO_QUERIES} a run keeps the latency of: a lower --qps or a shorter --scenario-time",
                    crate::number(qps),
                    crate::number(self.min_duration_s),
                    crate::number(for_duration.ceil())
                ));
            }
            let arriving_s = self.min_queries as f64 / qps;
            if arriving_s > MAX_SCENARIO_SECONDS {
                return Err(format!(
                    "--min-queries {} at --qps {} take {} s to arrive, more than a day ({MAX_SCENARIO_SECONDS} s): fewer --min-queries or a higher --qps",
                    self.min_queries,
                    crate::number(qps),
                    crate::number(arriving_s.round())
                ));
            }
        }
        if let Some(ms) = self.latency_bound_ms {
            if !(MIN_LATENCY_BOUND_MS..=MAX_LATENCY_BOUND_MS).contains(&ms) {
                return Err(format!(
                    "--latency-bound must be from {MIN_LATENCY_BOUND_MS} to {} milliseconds (an hour), not {}",
                    crate::number(MAX_LATENCY_BOUND_MS),
                    crate::number(ms)
                ));
            }
        }
        if self.in_flight > MAX_IN_FLIGHT {
            return Err(format!(
                "--in-flight {} is more than {MAX_IN_FLIGHT}: each query in flight is a session with its own copy of the network",
                self.in_flight
            ));
        }
        if let Some(batcher) = &self.batcher {
            batcher.validate()?;
            let sessions = self
                .in_flight
                .saturating_mul(batcher.session_batch_sizes().len());
            if sessions > MAX_IN_FLIGHT {
                return Err(format!(
                    "--in-flight {} with --max-batch {} is {sessions} sessions (one per batch size {:?} per query in flight), each with its own copy of the network; at most {MAX_IN_FLIGHT}: fewer in flight or a smaller --max-batch",
                    self.in_flight,
                    batcher.max_batch,
                    batcher.session_batch_sizes()
                ));
            }
        }
        if let Some(q) = rules.percentile {
            let fewest = fewest_queries_for(q);
            if self.find_peak && self.min_queries < fewest {
                return Err(format!(
                    "--find-peak needs runs that can be valid: {} queries are too few to bound a p{} at {:.0}% confidence; give --min-queries {fewest} or more",
                    self.min_queries,
                    (q * 100.0).round(),
                    EARLY_STOPPING_CONFIDENCE * 100.0
                ));
            }
        }
        Ok(())
    }
}

/// What one scenario run measured: the settings as run, the latencies of every query,
/// their summary and the verdicts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScenarioRecord {
    pub kind: ScenarioKind,
    pub samples_per_query: usize,
    /// Server: the target load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_qps: Option<f64>,
    /// Server: the seed of the arrival times (the run's seed), so a run can be replayed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_seed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_bound_ms: Option<f64>,
    /// Queries issued (offline: one), and the samples in them.
    pub queries: usize,
    pub samples: usize,
    /// From the first issue to the last completion, seconds.
    pub duration_s: f64,
    /// Queries completed per second over the run (offline: samples per second).
    pub achieved_qps: f64,
    pub samples_per_s: f64,
    /// How many queries the engine had in flight at once: 1 where it serves one at a
    /// time (then a query that arrives while another computes waits in the queue, and
    /// the wait is part of its latency).
    pub in_flight: usize,
    /// How the engine served the queries, in words.
    pub serving: String,
    /// Several in flight: the median seconds a session spent drawing its next input
    /// between two queries, which a query already waiting waits for too (one in
    /// flight: the schedule pauses while the input is drawn, and this is absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_draw_s: Option<f64>,
    /// Each query's latency, seconds, in issue order: from its scheduled arrival (server)
    /// or its issue (the others) to its completion. Offline: each batch's completion
    /// since the issue.
    pub latencies_s: Vec<f64>,
    /// The latencies' percentiles and mean (from an HDR histogram at 3 significant
    /// digits), seconds.
    pub latency: LatencySummary,
    /// The percentile the scenario reports (0.9 or 0.99); `None` offline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile: Option<f64>,
    /// The percentile as measured, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentile_latency_s: Option<f64>,
    /// LoadGen's early-stopping estimate: the latency the true percentile is below with
    /// 99% confidence, given how many queries ran; `None` when too few ran for any bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stopping_latency_s: Option<f64>,
    /// The issuer's own cost: the median latency of queries to an engine that does
    /// nothing, measured before the run, seconds.
    pub issuer_overhead_s: f64,
    /// Whether the scenario's own conditions held (server: the percentile within the
    /// bound; every scenario: the minimum duration and queries, and enough queries for the
    /// percentile), and why not.
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
    /// Whether the run also meets MLPerf's run rules (600 s, the official query counts),
    /// and why not: a shorter run is said to be one.
    pub meets_mlperf_rules: bool,
    pub mlperf_shortfalls: Vec<String>,
    /// Server with `--find-peak`: every probe of the search, in the order run (the last
    /// valid one is this record's load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub peak_search: Vec<PeakProbe>,
    /// Server with the dynamic batcher: what it gathered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batcher: Option<BatcherRecord>,
    /// Server: the queries of the schedule not served because the run stopped early, a
    /// query having waited longer than the whole schedule (an overloaded engine would
    /// otherwise serve its backlog for hours); 0 for a run that served them all.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub abandoned_queries: usize,
}

impl ScenarioRecord {
    /// What no run can have recorded, in the record's field names: a file that holds it
    /// was written by hand or damaged, and is refused at load rather than drawn (a bound
    /// of 10³⁰⁸ ms made the load chart's axis spin for ever). The bounds are those the
    /// run spec's validation holds a run to.
    pub fn check(&self) -> Result<(), String> {
        let within = |value: f64, lo: f64, hi: f64| (lo..=hi).contains(&value);
        if let Some(qps) = self.target_qps {
            if !within(qps, MIN_TARGET_QPS, MAX_TARGET_QPS) {
                return Err(format!(
                    "`scenario.target_qps` is {}, not a load from {MIN_TARGET_QPS} to {} queries per second",
                    crate::number(qps),
                    crate::number(MAX_TARGET_QPS)
                ));
            }
        }
        if let Some(ms) = self.latency_bound_ms {
            if !within(ms, MIN_LATENCY_BOUND_MS, MAX_LATENCY_BOUND_MS) {
                return Err(format!(
                    "`scenario.latency_bound_ms` is {}, not a bound from {MIN_LATENCY_BOUND_MS} to {} ms",
                    crate::number(ms),
                    crate::number(MAX_LATENCY_BOUND_MS)
                ));
            }
        }
        if !(1..=MAX_IN_FLIGHT).contains(&self.in_flight) {
            return Err(format!(
                "`scenario.in_flight` is {}, not from 1 to {MAX_IN_FLIGHT}",
                self.in_flight
            ));
        }
        if self.samples_per_query == 0 {
            return Err("`scenario.samples_per_query` is 0".into());
        }
        if self.latencies_s.len() > MAX_SCENARIO_QUERIES
            || self.queries > MAX_SCENARIO_QUERIES
            || self.abandoned_queries > MAX_SCENARIO_QUERIES
        {
            return Err(format!(
                "`scenario` holds {} queries, more than the {MAX_SCENARIO_QUERIES} a run issues",
                self.queries
                    .max(self.latencies_s.len())
                    .max(self.abandoned_queries)
            ));
        }
        for (field, seconds) in [
            ("duration_s", self.duration_s),
            ("issuer_overhead_s", self.issuer_overhead_s),
        ] {
            if !within(seconds, 0.0, 1e7) {
                return Err(format!(
                    "`scenario.{field}` is {}, not a number of seconds",
                    crate::number(seconds)
                ));
            }
        }
        if let Some(bad) = self.latencies_s.iter().find(|&&s| !within(s, 0.0, 1e7)) {
            return Err(format!(
                "`scenario.latencies_s` holds {}, not a latency in seconds",
                crate::number(*bad)
            ));
        }
        if let Some(q) = self.percentile {
            if !(q > 0.0 && q < 1.0) {
                return Err(format!(
                    "`scenario.percentile` is {}, not a fraction between 0 and 1",
                    crate::number(q)
                ));
            }
        }
        if let Some(batcher) = &self.batcher {
            if !(2..=MAX_DYNAMIC_BATCH).contains(&batcher.max_batch)
                || !within(batcher.timeout_ms, 0.0, MAX_BATCH_TIMEOUT_MS)
            {
                return Err(format!(
                    "`scenario.batcher` gathers up to {} queries within {} ms, not a batcher a run can have",
                    batcher.max_batch,
                    crate::number(batcher.timeout_ms)
                ));
            }
        }
        for probe in &self.peak_search {
            if !within(probe.target_qps, MIN_TARGET_QPS, MAX_TARGET_QPS) {
                return Err(format!(
                    "`scenario.peak_search` holds a load of {} queries per second",
                    crate::number(probe.target_qps)
                ));
            }
        }
        Ok(())
    }
}

/// Percentiles of the latencies, seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// One load the peak search tried.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PeakProbe {
    pub target_qps: f64,
    pub achieved_qps: f64,
    pub queries: usize,
    /// The median latency, seconds (absent in files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_latency_s: Option<f64>,
    /// The reported percentile of latency, and LoadGen's early-stopping estimate of it.
    pub percentile_latency_s: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stopping_latency_s: Option<f64>,
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
}

/// The confidence of LoadGen's early-stopping estimate.
pub const EARLY_STOPPING_CONFIDENCE: f64 = 0.99;

/// The fewest queries for which the largest latency bounds the `q` percentile at the
/// early-stopping confidence: the smallest n with q^n ≤ 1 − confidence (44 for a p90,
/// 459 for a p99).
pub fn fewest_queries_for(q: f64) -> usize {
    ((1.0 - EARLY_STOPPING_CONFIDENCE).ln() / q.ln())
        .ceil()
        .max(1.0) as usize
}

/// LoadGen's early-stopping bound: among `sorted` latencies (ascending) of `n` queries,
/// the smallest one that the true `percentile` is below with `confidence`. The `k`-th
/// smallest of `n` lies above the true p-quantile unless at least `k` samples fall below
/// it, which happens with probability P(Binomial(n, p) ≥ k); the bound is the smallest
/// `k` whose probability P(Binomial(n, p) ≤ k − 1) reaches `confidence`. `None` when
/// even the largest latency is not such a bound: too few queries for the percentile.
pub fn early_stopping_bound(sorted: &[f64], percentile: f64, confidence: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 || !(0.0..1.0).contains(&percentile) {
        return None;
    }
    // The binomial's probabilities in log space: n may be in the hundreds of thousands.
    let (p, q) = (percentile, 1.0 - percentile);
    let ln_choose = |k: usize| {
        ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
    };
    let mut cumulative = 0.0;
    for (k, &latency) in sorted.iter().enumerate() {
        // P(X = k) for X ~ Binomial(n, p): k samples below the true quantile.
        cumulative += (ln_choose(k) + k as f64 * p.ln() + (n - k) as f64 * q.ln()).exp();
        if cumulative >= confidence {
            // P(X ≤ k) ≥ confidence: the (k + 1)-th smallest bounds the quantile.
            return Some(latency);
        }
    }
    None
}

/// ln Γ(x) for x ≥ 1 (Lanczos, g = 7, n = 9): accurate to about 15 digits, which the
/// binomial's terms need.
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + G + 0.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ln_gamma_matches_factorials() {
        let mut factorial: f64 = 1.0;
        for n in 1..30 {
            factorial *= n as f64;
            let err = (ln_gamma(n as f64 + 1.0) - factorial.ln()).abs();
            assert!(err < 1e-9, "n={n} err={err}");
        }
    }

    #[test]
    fn the_early_stopping_bound_needs_enough_queries_and_lies_above_the_percentile() {
        // 1..=n milliseconds: the true p90 of this sample is near 0.9 n.
        let latencies = |n: usize| -> Vec<f64> { (1..=n).map(|i| i as f64 / 1000.0).collect() };
        // For p99 at 99% confidence, even the largest of 100 is no bound (0.99^100 ≈
        // 0.37 > 0.01 chance that all 100 fall below the true p99).
        assert_eq!(early_stopping_bound(&latencies(100), 0.99, 0.99), None);
        // 459 queries are the fewest for which the maximum bounds p99 (0.99^459 < 0.01).
        assert_eq!(early_stopping_bound(&latencies(458), 0.99, 0.99), None);
        assert_eq!(
            early_stopping_bound(&latencies(459), 0.99, 0.99),
            Some(0.459)
        );
        // With many queries the bound approaches the percentile from above.
        let many = latencies(100_000);
        let bound = early_stopping_bound(&many, 0.90, 0.99).unwrap();
        assert!(bound > 90.0 && bound < 90.3, "{bound}");
        let p99 = early_stopping_bound(&many, 0.99, 0.99).unwrap();
        assert!(p99 > 99.0 && p99 < 99.1, "{p99}");
    }

    #[test]
    fn a_server_needs_its_load_and_bound_and_the_others_refuse_them() {
        let mut server = ScenarioSpec::new(ScenarioKind::Server);
        assert!(server.validate().unwrap_err().contains("--qps"));
        server.target_qps = Some(10.0);
        assert!(server.validate().unwrap_err().contains("--latency-bound"));
        server.latency_bound_ms = Some(15.0);
        server.validate().unwrap();
        server.samples_per_query = 2;
        assert!(server
            .validate()
            .unwrap_err()
            .contains("--samples-per-query is for --scenario multi-stream: server issues"));
        let mut single = ScenarioSpec::new(ScenarioKind::SingleStream);
        single.validate().unwrap();
        single.target_qps = Some(1.0);
        assert!(single.validate().unwrap_err().contains("--qps"));
        let mut multi = ScenarioSpec::new(ScenarioKind::MultiStream);
        assert_eq!(multi.samples_per_query, 8);
        multi.find_peak = true;
        assert!(multi.validate().unwrap_err().contains("--find-peak"));
        server.samples_per_query = 1;
        server.find_peak = true;
        server.min_queries = 458;
        assert!(server.validate().unwrap_err().contains("--min-queries 459"));
        server.min_queries = 459;
        server.validate().unwrap();
        assert_eq!(fewest_queries_for(0.9), 44);
        let mut offline = ScenarioSpec::new(ScenarioKind::Offline);
        offline.min_duration_s = f64::NAN;
        assert!(offline.validate().unwrap_err().contains("--scenario-time"));
    }

    #[test]
    fn every_scenario_has_one_row_of_rules_named_as_its_results_name_it() {
        for kind in ScenarioKind::ALL {
            let rules = kind.rules();
            assert_eq!(rules.kind, kind);
            // The name the command line takes is the one serde writes and reads.
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(rules.name)
            );
            assert_eq!(rules.name.parse::<ScenarioKind>(), Ok(kind));
            assert_eq!(
                ScenarioKind::ALL
                    .iter()
                    .filter(|k| k.as_str() == rules.name)
                    .count(),
                1
            );
            // A scenario's defaults are a spec it takes.
            let mut spec = ScenarioSpec::new(kind);
            if rules.issuing == Issuing::PoissonArrivals {
                spec.target_qps = Some(10.0);
                spec.latency_bound_ms = Some(15.0);
            }
            spec.validate().unwrap();
            assert!(rules.mlperf_min_queries >= rules.default_min_queries);
        }
        assert!("batch"
            .parse::<ScenarioKind>()
            .unwrap_err()
            .contains("single-stream, multi-stream, server, offline"));
    }

    #[test]
    fn each_setting_is_taken_by_the_scenarios_whose_rules_list_it_and_refused_by_the_rest() {
        // Each setting set to a value its takers accept.
        let set = |spec: &mut ScenarioSpec, setting: ScenarioSetting| match setting {
            ScenarioSetting::SamplesPerQuery => spec.samples_per_query = 4,
            ScenarioSetting::TargetQps => spec.target_qps = Some(20.0),
            ScenarioSetting::LatencyBound => spec.latency_bound_ms = Some(50.0),
            ScenarioSetting::FindPeak => spec.find_peak = true,
            ScenarioSetting::InFlight => spec.in_flight = 2,
            ScenarioSetting::Batcher => {
                spec.batcher = Some(BatcherSpec {
                    max_batch: 4,
                    timeout_ms: 1.0,
                })
            }
        };
        for kind in ScenarioKind::ALL {
            for setting in ScenarioSetting::ALL {
                let mut spec = ScenarioSpec::new(kind);
                if kind.rules().issuing == Issuing::PoissonArrivals {
                    spec.target_qps = Some(10.0);
                    spec.latency_bound_ms = Some(15.0);
                }
                set(&mut spec, setting);
                let verdict = spec.validate();
                if kind.takes(setting) {
                    assert_eq!(verdict, Ok(()), "{kind} takes {}", setting.flag());
                } else {
                    let refusal = verdict.unwrap_err();
                    let flag = setting.flag();
                    assert!(
                        refusal.starts_with(&format!("{flag} is for --scenario "))
                            && refusal.contains(kind.rules().issues)
                            && refusal.ends_with(&format!("leave out {flag}")),
                        "{kind} refuses {flag}: {refusal}"
                    );
                }
            }
        }
        assert_eq!(ScenarioSetting::InFlight.takers("or"), "server or offline");
        assert_eq!(ScenarioSetting::TargetQps.takers("and"), "server");
    }

    #[test]
    fn the_batcher_is_the_servers_and_its_sizes_are_powers_of_two_and_the_maximum() {
        let batcher = |max_batch, timeout_ms| BatcherSpec {
            max_batch,
            timeout_ms,
        };
        assert_eq!(batcher(8, 0.0).session_batch_sizes(), [1, 2, 4, 8]);
        assert_eq!(batcher(6, 0.0).session_batch_sizes(), [1, 2, 4, 6]);
        assert_eq!(batcher(2, 0.0).session_batch_sizes(), [1, 2]);
        let mut server = ScenarioSpec::new(ScenarioKind::Server);
        server.target_qps = Some(10.0);
        server.latency_bound_ms = Some(15.0);
        server.batcher = Some(batcher(4, 2.0));
        server.validate().unwrap();
        for (max_batch, timeout_ms, flag) in [
            (1, 2.0, "--max-batch"),
            (MAX_DYNAMIC_BATCH + 1, 2.0, "--max-batch"),
            (4, -1.0, "--batch-timeout"),
            (4, f64::NAN, "--batch-timeout"),
            (4, f64::INFINITY, "--batch-timeout"),
        ] {
            server.batcher = Some(batcher(max_batch, timeout_ms));
            let why = server.validate().unwrap_err();
            assert!(why.contains(flag), "{max_batch} {timeout_ms}: {why}");
        }
        // Each query in flight holds a session per batch size: their count is bounded.
        server.batcher = Some(batcher(8, 2.0));
        server.in_flight = 16;
        server.validate().unwrap();
        server.in_flight = 17;
        assert!(server.validate().unwrap_err().contains("68 sessions"));
        server.in_flight = 1;
        server.batcher = Some(batcher(MAX_DYNAMIC_BATCH, 2.0));
        server.validate().unwrap();
        for kind in [
            ScenarioKind::Offline,
            ScenarioKind::SingleStream,
            ScenarioKind::MultiStream,
        ] {
            let mut other = ScenarioSpec::new(kind);
            other.batcher = Some(batcher(4, 2.0));
            assert!(
                other.validate().unwrap_err().contains("--max-batch"),
                "{kind}"
            );
        }
    }
}
