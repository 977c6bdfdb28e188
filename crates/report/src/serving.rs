//! The serving question of `--scenario` runs (issue #46): for each configuration, the
//! highest offered load whose p99 stayed within the bound, judged from every server run
//! and every probe of a `--find-peak` search; and the headline figure of the other
//! scenarios. The per-model tables pool a configuration's runs into one row, which
//! would mix loads, so scenario runs are read here, one load at a time.

use crate::aliases::Aliases;
use crate::catalog::ModelCatalog;
use crate::fmt::{ms, natural_cmp};
use crate::record::Record;
use cnnbench_results::scenario::{BatcherSpec, Counted, Issuing, ScenarioRecord, ScenarioSetting};
use cnnbench_results::{printable, Precision};
use std::cmp::Ordering;

/// One scenario run as the report names it.
#[derive(Clone, Debug)]
pub struct ScenarioRun {
    /// The model's display name (alias, else the zoo's or the file's name).
    pub model: String,
    /// `[C, H, W]` of one sample.
    pub input: [usize; 3],
    pub batch_size: usize,
    pub device: String,
    /// The engine's label without its precision, which has a column of its own.
    pub engine: String,
    pub precision: Precision,
    /// The engine's name and the words its settings add (`["throughput hint"]`), to join
    /// what else is known of the configuration (`choose`'s accuracy costs).
    pub engine_name: String,
    pub variant: Vec<String>,
    pub record: ScenarioRecord,
}

impl ScenarioRun {
    /// Names a record's scenario run, `None` for a run without one.
    pub fn of(r: &Record, aliases: &Aliases, catalog: &dyn ModelCatalog) -> Option<ScenarioRun> {
        let record = r.scenario.clone()?;
        let id = catalog
            .canonical_name(&r.model_id)
            .unwrap_or_else(|| r.model_id.clone());
        let model = aliases
            .model(&r.model_label, &id)
            .map(str::to_string)
            .unwrap_or(id);
        let mut device = aliases.device(&r.device_name).to_string();
        if let Some(l) = &r.label {
            device = format!("{device} ({l})");
        }
        let mut engine = r.engine.clone();
        engine.precision = Precision::F32;
        // Printable again here: a record built by hand has not been through the loader.
        Some(ScenarioRun {
            model: printable(&model),
            input: r.input,
            batch_size: r.batch_size,
            device: printable(&device),
            engine: printable(&engine.label()),
            precision: r.engine.precision,
            engine_name: r.engine.name.clone(),
            variant: r.engine.variant.clone(),
            record,
        })
    }

    /// `resnet18 (64×64)`.
    fn model_desc(&self) -> String {
        let [_, h, w] = self.input;
        format!("{} ({h}×{w})", self.model)
    }
}

/// One offered load and what it gave: a server run's own load, or a probe of a peak
/// search.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadPoint {
    pub target_qps: f64,
    pub achieved_qps: f64,
    /// The median: a probe records it since p50_latency_s was added (none in older files).
    pub p50_s: Option<f64>,
    pub p99_s: Option<f64>,
    pub valid: bool,
    pub invalid_reasons: Vec<String>,
}

/// Every load one configuration was served at under one bound: a row of the serving
/// table and a line of the latency-against-load chart.
#[derive(Clone, Debug)]
pub struct ServingSeries {
    pub model: String,
    pub input: [usize; 3],
    pub batch_size: usize,
    pub device: String,
    pub engine: String,
    pub precision: Precision,
    /// As [`ScenarioRun::engine_name`] and [`ScenarioRun::variant`].
    pub engine_name: String,
    pub variant: Vec<String>,
    pub in_flight: usize,
    /// The dynamic batcher the runs served with (`--max-batch`, `--batch-timeout`).
    pub batcher: Option<BatcherSpec>,
    /// `None` only for a hand-made file: a server run always records its bound.
    pub bound_ms: Option<f64>,
    /// By offered load, lowest first.
    pub points: Vec<LoadPoint>,
    /// Server runs without a peak search, and probes of the searches.
    pub runs: usize,
    pub probes: usize,
    /// The same configuration was also run under another bound (one row per bound).
    pub bounds_differ: bool,
}

impl ServingSeries {
    /// The highest valid load (the answer); `None` when no load was valid. Of two at
    /// the same load, the one with a known p50.
    pub fn peak(&self) -> Option<&LoadPoint> {
        self.points.iter().filter(|p| p.valid).max_by(|a, b| {
            a.target_qps
                .total_cmp(&b.target_qps)
                .then(a.p50_s.is_some().cmp(&b.p50_s.is_some()))
        })
    }

    /// The configuration in words, for the chart's legend.
    pub fn config_desc(&self, with_device: bool) -> String {
        let mut s = String::new();
        if with_device {
            s.push_str(&self.device);
            s.push_str(" · ");
        }
        // The engine's label carries how the queries were served ("2 in flight",
        // "batches ≤ 8 within 20 ms"): the loader adds them to its variant words.
        s.push_str(&self.engine);
        if self.precision != Precision::F32 {
            s.push_str(&format!(", {}", self.precision.as_str()));
        }
        s
    }

    /// Why no load was valid, in the table's words.
    pub fn no_valid_load(&self) -> String {
        let Some(lowest) = self.points.first() else {
            return "no load recorded".into();
        };
        let broke = match (lowest.p99_s, self.bound_ms) {
            (Some(p99), Some(bound)) if p99 * 1e3 > bound => {
                format!("broke the bound (p99 {} ms)", ms(p99))
            }
            _ => match lowest.invalid_reasons.first() {
                Some(why) => format!("was invalid: {}", printable(why)),
                None => "was invalid".into(),
            },
        };
        format!(
            "no valid load: lowest tried {} QPS {broke}",
            qps(lowest.target_qps)
        )
    }
}

/// Queries per second with one decimal.
fn qps(v: f64) -> String {
    format!("{v:.1}")
}

/// A finite positive number of seconds, or nothing (a probe that completed no query
/// records NaN).
fn seconds(v: f64) -> Option<f64> {
    (v.is_finite() && v > 0.0).then_some(v)
}

/// The loads of one server run: its probes when it searched for the peak (its own load
/// is the highest valid probe, whose p50 it adds), else its own load.
/// The batcher a run served with, as its spec had it.
fn record_batcher(r: &ScenarioRecord) -> Option<BatcherSpec> {
    r.batcher.as_ref().map(|b| BatcherSpec {
        max_batch: b.max_batch,
        timeout_ms: b.timeout_ms,
    })
}

fn load_points(r: &ScenarioRecord) -> Vec<LoadPoint> {
    let own = r.target_qps.map(|target| LoadPoint {
        target_qps: target,
        achieved_qps: r.achieved_qps,
        p50_s: seconds(r.latency.p50),
        p99_s: r
            .percentile_latency_s
            .and_then(seconds)
            .or(seconds(r.latency.p99)),
        valid: r.valid,
        invalid_reasons: r.invalid_reasons.clone(),
    });
    if r.peak_search.is_empty() {
        return own.into_iter().collect();
    }
    let mut own = own;
    r.peak_search
        .iter()
        .map(|p| {
            let point = LoadPoint {
                target_qps: p.target_qps,
                achieved_qps: p.achieved_qps,
                p50_s: p.p50_latency_s.and_then(seconds),
                p99_s: seconds(p.percentile_latency_s),
                valid: p.valid,
                invalid_reasons: p.invalid_reasons.clone(),
            };
            // The same measurement, which the record knows more of (its p50).
            if own
                .as_ref()
                .is_some_and(|o| o.target_qps == p.target_qps && o.valid == p.valid)
            {
                if let Some(o) = own.take() {
                    return o;
                }
            }
            point
        })
        .collect()
}

/// What the report shows of its scenario runs.
#[derive(Clone, Debug, Default)]
pub struct Serving {
    /// One per model, input, batch, device, engine, precision, in-flight count and
    /// bound; per model, highest valid load first.
    pub server: Vec<ServingSeries>,
    /// Single-stream, multi-stream and offline runs, one row each.
    pub others: Vec<ScenarioRun>,
}

impl Serving {
    /// Sorts scenario runs into the serving table's series and the other scenarios'
    /// rows.
    pub fn build(runs: Vec<ScenarioRun>) -> Serving {
        let mut server: Vec<ServingSeries> = Vec::new();
        let mut others = Vec::new();
        for run in runs {
            // A scenario of arrivals is a series over its loads; the others are rows.
            if run.record.kind.rules().issuing != Issuing::PoissonArrivals {
                others.push(run);
                continue;
            }
            let r = &run.record;
            let bound_ms = r.latency_bound_ms.filter(|b| b.is_finite());
            let points: Vec<LoadPoint> = load_points(r)
                .into_iter()
                .filter(|p| p.target_qps.is_finite() && p.target_qps > 0.0)
                .collect();
            let found = server.iter_mut().find(|s| {
                s.model == run.model
                    && s.input == run.input
                    && s.batch_size == run.batch_size
                    && s.device == run.device
                    && s.engine == run.engine
                    && s.precision == run.precision
                    && s.in_flight == r.in_flight
                    && s.batcher == record_batcher(r)
                    && s.bound_ms == bound_ms
            });
            let series = match found {
                Some(s) => s,
                None => {
                    server.push(ServingSeries {
                        model: run.model.clone(),
                        input: run.input,
                        batch_size: run.batch_size,
                        device: run.device.clone(),
                        engine: run.engine.clone(),
                        precision: run.precision,
                        engine_name: run.engine_name.clone(),
                        variant: run.variant.clone(),
                        in_flight: r.in_flight,
                        batcher: record_batcher(r),
                        bound_ms,
                        points: Vec::new(),
                        runs: 0,
                        probes: 0,
                        bounds_differ: false,
                    });
                    let last = server.len() - 1;
                    &mut server[last]
                }
            };
            if r.peak_search.is_empty() {
                series.runs += 1;
            } else {
                series.probes += r.peak_search.len();
            }
            series.points.extend(points);
        }
        for s in &mut server {
            s.points
                .sort_by(|a, b| a.target_qps.total_cmp(&b.target_qps));
        }
        let same_config = |a: &ServingSeries, b: &ServingSeries| {
            a.model == b.model
                && a.input == b.input
                && a.batch_size == b.batch_size
                && a.device == b.device
                && a.engine == b.engine
                && a.precision == b.precision
                && a.in_flight == b.in_flight
                && a.batcher == b.batcher
        };
        for i in 0..server.len() {
            server[i].bounds_differ =
                (0..server.len()).any(|j| j != i && same_config(&server[i], &server[j]));
        }
        let peak = |s: &ServingSeries| s.peak().map(|p| p.target_qps);
        server.sort_by(|a, b| {
            natural_cmp(&a.model, &b.model)
                .then(a.input.cmp(&b.input))
                .then(a.batch_size.cmp(&b.batch_size))
                // Highest valid load first; no valid load last.
                .then_with(|| match (peak(a), peak(b)) {
                    (Some(x), Some(y)) => y.total_cmp(&x),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                })
                .then_with(|| natural_cmp(&a.engine, &b.engine))
                .then(a.in_flight.cmp(&b.in_flight))
        });
        others.sort_by(|a, b| {
            natural_cmp(&a.model, &b.model)
                .then(a.input.cmp(&b.input))
                .then(a.record.kind.cmp(&b.record.kind))
                .then_with(|| natural_cmp(&a.engine, &b.engine))
                .then(a.record.in_flight.cmp(&b.record.in_flight))
        });
        Serving { server, others }
    }

    pub fn is_empty(&self) -> bool {
        self.server.is_empty() && self.others.is_empty()
    }

    /// The serving table: per configuration the highest offered load whose run was
    /// valid (p99 within the bound), the latency there and how many loads it was judged
    /// from.
    pub fn server_cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let batches_differ = self
            .server
            .windows(2)
            .any(|w| w[0].batch_size != w[1].batch_size);
        let head = [
            "Model",
            "Device",
            "Engine",
            "Precision",
            "In flight",
            "Bound (ms)",
            "Highest valid QPS",
            "Achieved QPS",
            "p50 (ms)",
            "p99 (ms)",
            "Judged from",
            "Note",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .server
            .iter()
            .map(|s| {
                let mut model = {
                    let [_, h, w] = s.input;
                    format!("{} ({h}×{w})", s.model)
                };
                if batches_differ {
                    model.push_str(&format!(", batch {}", s.batch_size));
                }
                let judged = match (s.runs, s.probes) {
                    (r, 0) => plural(r, "run"),
                    (0, p) => plural(p, "probe"),
                    (r, p) => format!("{}, {}", plural(r, "run"), plural(p, "probe")),
                };
                let mut notes = Vec::new();
                let figures = match s.peak() {
                    Some(p) => [
                        qps(p.target_qps),
                        qps(p.achieved_qps),
                        p.p50_s.map_or("–".into(), ms),
                        p.p99_s.map_or("–".into(), ms),
                    ],
                    None => {
                        notes.push(s.no_valid_load());
                        ["none".into(), "–".into(), "–".into(), "–".into()]
                    }
                };
                if s.bounds_differ {
                    notes.push("run under other bounds too: one row per bound".into());
                }
                let [target, achieved, p50, p99] = figures;
                vec![
                    model,
                    s.device.clone(),
                    s.engine.clone(),
                    s.precision.as_str().to_string(),
                    s.in_flight.to_string(),
                    s.bound_ms.map_or("–".into(), |b| format!("{b}")),
                    target,
                    achieved,
                    p50,
                    p99,
                    judged,
                    notes.join("; "),
                ]
            })
            .collect();
        (head, rows)
    }

    /// The other scenarios' headline figures: single-stream's p90, multi-stream's p99,
    /// offline's samples per second, one row per run.
    pub fn other_cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let head = [
            "Model",
            "Device",
            "Engine",
            "Precision",
            "In flight",
            "Scenario",
            "Reported",
            "p50 (ms)",
            "Queries",
            "Valid",
        ]
        .map(String::from)
        .to_vec();
        let rows = self
            .others
            .iter()
            .map(|run| {
                let r = &run.record;
                let percentile = |name: &str| match r.percentile_latency_s.and_then(seconds) {
                    Some(at) => format!("{name} {} ms", ms(at)),
                    None => format!("{name} –"),
                };
                // What the scenario reports (its percentile of latency, or its
                // throughput) and the count its rules count.
                let rules = r.kind.rules();
                let reported = match rules.percentile {
                    Some(q) => {
                        let at = percentile(&format!("p{}", (q * 100.0).round()));
                        if rules.takes.contains(&ScenarioSetting::SamplesPerQuery) {
                            format!("{at} ({} samples a query)", r.samples_per_query)
                        } else {
                            at
                        }
                    }
                    None => format!("{:.1} samples/s", r.samples_per_s),
                };
                let queries = match rules.counted {
                    Counted::Queries => r.queries,
                    Counted::Samples => r.samples,
                };
                let valid = if r.valid {
                    "yes".to_string()
                } else if r.invalid_reasons.is_empty() {
                    "no".to_string()
                } else {
                    format!("no: {}", printable(&r.invalid_reasons.join("; ")))
                };
                vec![
                    run.model_desc(),
                    run.device.clone(),
                    run.engine.clone(),
                    run.precision.as_str().to_string(),
                    r.in_flight.to_string(),
                    r.kind.to_string(),
                    reported,
                    seconds(r.latency.p50).map_or("–".into(), ms),
                    queries.to_string(),
                    valid,
                ]
            })
            .collect();
        (head, rows)
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The serving table's heading and the sentence under it.
pub const SERVER_TITLE: &str = "Serving: highest load with p99 within the bound";
pub const SERVER_NOTE: &str = "Server scenario: per configuration, the highest offered load (target QPS) whose run was valid — its p99 latency, counted from each query's scheduled arrival, within the bound — judged from every server run and every probe of a --find-peak search; the latencies are at that load (probes in files written before 2026-12-04 record no p50).";
pub const OTHERS_TITLE: &str = "Scenarios: headline figures";
pub const OTHERS_NOTE: &str = "Single-stream reports its p90 latency, multi-stream its p99, offline the samples served per second (LoadGen's definitions).";

#[cfg(test)]
mod tests {
    use super::*;
    use cnnbench_results::scenario::{LatencySummary, PeakProbe, ScenarioKind};

    fn record(kind: ScenarioKind, qps: Option<f64>, p99_ms: f64, bound: f64) -> ScenarioRecord {
        let s = p99_ms / 1e3;
        ScenarioRecord {
            kind,
            samples_per_query: 1,
            target_qps: qps,
            schedule_seed: None,
            latency_bound_ms: Some(bound).filter(|_| kind == ScenarioKind::Server),
            queries: 500,
            samples: 500,
            duration_s: 10.0,
            achieved_qps: qps.unwrap_or(100.0) * 0.98,
            samples_per_s: 98.0,
            in_flight: 1,
            serving: "one at a time".into(),
            input_draw_s: None,
            latencies_s: Vec::new(),
            latency: LatencySummary {
                mean: s / 2.0,
                p50: s / 3.0,
                p90: s * 0.8,
                p95: s * 0.9,
                p99: s,
                p999: s,
                max: s,
            },
            percentile: kind.percentile(),
            percentile_latency_s: Some(s),
            early_stopping_latency_s: None,
            issuer_overhead_s: 0.0,
            valid: kind != ScenarioKind::Server || p99_ms <= bound,
            invalid_reasons: if p99_ms <= bound {
                Vec::new()
            } else {
                vec![format!("p99 {p99_ms} ms above the bound")]
            },
            meets_mlperf_rules: false,
            mlperf_shortfalls: Vec::new(),
            peak_search: Vec::new(),
            batcher: None,
            abandoned_queries: 0,
        }
    }

    fn run(model: &str, engine: &str, record: ScenarioRecord) -> ScenarioRun {
        ScenarioRun {
            model: model.into(),
            input: [3, 64, 64],
            batch_size: 1,
            device: "cpu".into(),
            engine: engine.into(),
            precision: Precision::F32,
            engine_name: engine.into(),
            variant: Vec::new(),
            record,
        }
    }

    fn probe(qps: f64, p99_ms: f64, valid: bool) -> PeakProbe {
        PeakProbe {
            target_qps: qps,
            achieved_qps: qps * 0.97,
            queries: 500,
            p50_latency_s: Some(p99_ms / 3e3),
            percentile_latency_s: p99_ms / 1e3,
            early_stopping_latency_s: None,
            valid,
            invalid_reasons: if valid {
                Vec::new()
            } else {
                vec!["over the bound".into()]
            },
        }
    }

    fn cell<'a>(head: &[String], row: &'a [String], name: &str) -> &'a str {
        let i = head.iter().position(|h| h == name).unwrap();
        &row[i]
    }

    /// The answer is the highest valid load among plain runs and a search's probes;
    /// an invalid higher load does not count, and the table says what it judged from.
    #[test]
    fn the_highest_valid_load_comes_from_runs_and_probes() {
        let mut search = record(ScenarioKind::Server, Some(80.0), 9.0, 15.0);
        search.peak_search = vec![
            probe(20.0, 4.0, true),
            probe(40.0, 6.0, true),
            probe(160.0, 90.0, false),
            probe(80.0, 9.0, true),
            probe(120.0, f64::NAN, false),
        ];
        let serving = Serving::build(vec![
            run(
                "m",
                "e",
                record(ScenarioKind::Server, Some(50.0), 8.0, 15.0),
            ),
            // Higher, but invalid: not the answer.
            run(
                "m",
                "e",
                record(ScenarioKind::Server, Some(300.0), 400.0, 15.0),
            ),
            run("m", "e", search),
        ]);
        assert_eq!(serving.server.len(), 1);
        let s = &serving.server[0];
        assert_eq!(s.peak().map(|p| p.target_qps), Some(80.0));
        let (head, rows) = serving.server_cells();
        let row = &rows[0];
        assert_eq!(cell(&head, row, "Highest valid QPS"), "80.0");
        assert_eq!(cell(&head, row, "p99 (ms)"), "9.00");
        // The search's own load is the 80 QPS probe: its p50 is known.
        assert_eq!(cell(&head, row, "p50 (ms)"), "3.00");
        assert_eq!(cell(&head, row, "Achieved QPS"), "78.4");
        assert_eq!(cell(&head, row, "Judged from"), "2 runs, 5 probes");
        assert_eq!(cell(&head, row, "Note"), "");
        // Loads sorted, the NaN probe kept as a load but without a latency.
        let loads: Vec<f64> = s.points.iter().map(|p| p.target_qps).collect();
        assert_eq!(loads, [20.0, 40.0, 50.0, 80.0, 120.0, 160.0, 300.0]);
        assert_eq!(s.points[4].p99_s, None);
    }

    #[test]
    fn no_valid_load_names_the_lowest_tried() {
        let serving = Serving::build(vec![
            run(
                "m",
                "e",
                record(ScenarioKind::Server, Some(40.0), 70.0, 15.0),
            ),
            run(
                "m",
                "e",
                record(ScenarioKind::Server, Some(20.0), 30.0, 15.0),
            ),
        ]);
        let (head, rows) = serving.server_cells();
        assert_eq!(cell(&head, &rows[0], "Highest valid QPS"), "none");
        assert_eq!(
            cell(&head, &rows[0], "Note"),
            "no valid load: lowest tried 20.0 QPS broke the bound (p99 30.00 ms)"
        );
    }

    /// Runs of one configuration under two bounds are two answers, each flagged; within
    /// a model the highest valid load comes first.
    #[test]
    fn differing_bounds_split_and_the_best_comes_first() {
        let serving = Serving::build(vec![
            run(
                "m",
                "slow",
                record(ScenarioKind::Server, Some(10.0), 5.0, 15.0),
            ),
            run(
                "m",
                "fast",
                record(ScenarioKind::Server, Some(50.0), 20.0, 15.0),
            ),
            run(
                "m",
                "fast",
                record(ScenarioKind::Server, Some(50.0), 20.0, 30.0),
            ),
            run(
                "m",
                "fast",
                record(ScenarioKind::Server, Some(30.0), 10.0, 15.0),
            ),
        ]);
        let (head, rows) = serving.server_cells();
        assert_eq!(rows.len(), 3);
        let answers: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|r| {
                (
                    cell(&head, r, "Engine"),
                    cell(&head, r, "Bound (ms)"),
                    cell(&head, r, "Highest valid QPS"),
                )
            })
            .collect();
        assert_eq!(
            answers,
            [
                ("fast", "30", "50.0"),
                ("fast", "15", "30.0"),
                ("slow", "15", "10.0")
            ]
        );
        assert!(cell(&head, &rows[0], "Note").contains("other bounds"));
        assert!(cell(&head, &rows[1], "Note").contains("other bounds"));
        assert_eq!(cell(&head, &rows[2], "Note"), "");
    }

    #[test]
    fn the_other_scenarios_show_their_headline_figure() {
        let mut offline = record(ScenarioKind::Offline, None, 50.0, 0.0);
        offline.samples_per_s = 123.45;
        offline.percentile_latency_s = None;
        let serving = Serving::build(vec![
            run("m", "e", offline),
            run("m", "e", record(ScenarioKind::SingleStream, None, 3.0, 0.0)),
        ]);
        assert!(serving.server.is_empty());
        let (head, rows) = serving.other_cells();
        assert_eq!(cell(&head, &rows[0], "Scenario"), "single-stream");
        assert_eq!(cell(&head, &rows[0], "Reported"), "p90 3.00 ms");
        assert_eq!(cell(&head, &rows[1], "Reported"), "123.5 samples/s");
        assert_eq!(cell(&head, &rows[1], "Queries"), "500");
    }

    /// A hostile engine or model name reaches no format raw: no tag in HTML, no extra
    /// column or line in markdown.
    #[test]
    fn hostile_names_are_escaped_in_every_format() {
        use crate::record::{EngineDesc, Origin};
        let engine = EngineDesc {
            name: "<script>alert(1)</script>|x\ny".into(),
            framework: "f".into(),
            framework_version: String::new(),
            backend: "cpu".into(),
            libraries: Default::default(),
            settings: Default::default(),
            variant: Vec::new(),
            threads_requested: None,
            precision: Precision::F32,
            world_size: 1,
            allocator: None,
        };
        let mut scenario = record(ScenarioKind::Server, Some(10.0), 5.0, 15.0);
        scenario.valid = false;
        scenario.invalid_reasons = vec!["<b>|\n".into()];
        let r = Record {
            path: "r.json".into(),
            origin: Origin::Cnnbench,
            model_label: "m|<i>\nodel".into(),
            model_id: "m|<i>\nodel".into(),
            input: [3, 8, 8],
            batch_size: 1,
            mode: cnnbench_results::Mode::Infer,
            device_name: "cpu<".into(),
            device: "cpu".into(),
            label: None,
            engine,
            machine: None,
            tool_version: None,
            started_at: None,
            samples: [(cnnbench_results::Quantity::Total, vec![0.001, 0.001])].into(),
            params: None,
            macs: None,
            depth: None,
            peak_rss_bytes: None,
            forward_roof_s: None,
            device_peak_bytes: None,
            warnings: Vec::new(),
            disturbed: None,
            cold_start: None,
            hosts: None,
            run_noise_pct: None,
            scenario: Some(scenario),
        };
        let report = crate::Report::build(
            vec![r],
            &Aliases::default(),
            &crate::NoCatalog,
            &crate::ReportOptions::default(),
        )
        .unwrap();
        assert_eq!(report.serving.server.len(), 1);
        let html = crate::Format::Html.exporter().render(&report).unwrap();
        assert!(html.contains("Serving"), "no serving section");
        assert!(!html.contains("<script>") && !html.contains("<i>") && !html.contains("<b>"));
        assert!(html.contains("&lt;script&gt;"));
        let md = crate::Format::Markdown.exporter().render(&report).unwrap();
        let start = md.find("## Serving").unwrap();
        let table: Vec<&str> = md[start..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(table.len(), 3, "{md}");
        let columns = |l: &str| l.replace("\\|", "").matches('|').count();
        assert!(
            table.iter().all(|l| columns(l) == columns(table[0])),
            "{md}"
        );
    }
}
