//! Assembles what every output format shows: rows grouped into per-model tables,
//! the models overview, speed-up lines and notes.

use crate::aliases::Aliases;
use crate::catalog::{Cached, ModelCatalog, ModelFacts};
use crate::conclusions::{self, Conclusions};
use crate::fmt::natural_cmp;
use crate::group::{self, Duplicates, Entry, Stat};
use crate::record::Record;
use crate::speedup::{self, Speedup};
use crate::table::{make_tables, Layout, Table};
use cnnbench_results::Quantity;

/// Which speed-up lines to compute.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum SpeedupRequest {
    #[default]
    None,
    /// Every pair of configurations measured on at least 3 common models.
    All,
    /// Chosen pairs, each side matched by display name.
    Pairs(Vec<(String, String)>),
}

/// How to build a report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// `None`: mean in the legacy layout, median otherwise.
    pub stat: Option<Stat>,
    pub layout: Layout,
    pub with_std: bool,
    pub duplicates: Duplicates,
    pub speedups: SpeedupRequest,
    /// Keep only these models (names, zoo names or legacy labels); empty for all.
    pub models: Vec<String>,
    /// Show the models overview table.
    pub overview: bool,
    /// Show what each row paid before its first timed pass (preparing the session, the
    /// first pass).
    pub cold_start: bool,
    /// State the original README's conclusions ("A is 2.7x to 3.8x faster than B across
    /// 6 models") for every two configurations that differ in one way.
    pub conclusions: bool,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            stat: None,
            layout: Layout::Default,
            with_std: false,
            duplicates: Duplicates::Pool,
            speedups: SpeedupRequest::None,
            models: Vec::new(),
            overview: true,
            cold_start: false,
            conclusions: false,
        }
    }
}

/// A row of the models overview.
#[derive(Clone, Debug)]
pub struct OverviewRow {
    pub table: usize,
    pub facts: Option<ModelFacts>,
    /// The fastest row of the table (by total).
    pub fastest: Option<usize>,
}

/// Everything the exporters render.
#[derive(Clone, Debug)]
pub struct Report {
    pub stat: Stat,
    pub layout: Layout,
    pub with_std: bool,
    /// Whether the tables show the cold-start columns.
    pub cold_start: bool,
    pub entries: Vec<Entry>,
    pub tables: Vec<Table>,
    pub overview: Vec<OverviewRow>,
    /// Whether speed-ups were asked for (so an empty list is worth a sentence).
    pub speedups_requested: bool,
    pub speedups: Vec<Speedup>,
    /// The conclusions, when asked for (`--conclusions`).
    pub conclusions: Option<Conclusions>,
    /// Things the reader should know: pooled runs, skipped pairs.
    pub notes: Vec<String>,
    /// The scenario runs, load by load: the serving table, the other scenarios'
    /// headline figures and the latency-against-load charts.
    pub serving: crate::serving::Serving,
}

impl Report {
    /// Builds the report. Fails only when there is nothing to show or a chosen
    /// speed-up pair names an unknown configuration.
    pub fn build(
        records: Vec<Record>,
        aliases: &Aliases,
        catalog: &dyn ModelCatalog,
        opts: &ReportOptions,
    ) -> anyhow::Result<Report> {
        let catalog = Cached::new(catalog);
        let stat = opts.stat.unwrap_or(match opts.layout {
            Layout::Legacy => Stat::Mean,
            Layout::Default => Stat::Median,
        });
        let mut records = records;
        if !opts.models.is_empty() {
            let wanted: Vec<String> = opts
                .models
                .iter()
                .map(|m| {
                    catalog
                        .canonical_name(m)
                        .unwrap_or_else(|| m.clone())
                        .to_ascii_lowercase()
                })
                .collect();
            let all: Vec<String> = {
                let mut v: Vec<String> = records.iter().map(|r| r.model_label.clone()).collect();
                v.sort_by(|a, b| natural_cmp(a, b));
                v.dedup();
                v
            };
            records.retain(|r| {
                let id = catalog
                    .canonical_name(&r.model_id)
                    .unwrap_or_else(|| r.model_id.clone());
                wanted.iter().any(|w| {
                    w.eq_ignore_ascii_case(&id)
                        || w.eq_ignore_ascii_case(&r.model_label)
                        || w.eq_ignore_ascii_case(&r.model_id)
                })
            });
            if records.is_empty() {
                anyhow::bail!(
                    "no results for model {}; the results hold: {}",
                    opts.models.join(", "),
                    all.join(", ")
                );
            }
        }
        // Read before grouping: a row pools every load of a configuration.
        let serving = crate::serving::Serving::build(
            records
                .iter()
                .filter_map(|r| crate::serving::ScenarioRun::of(r, aliases, &catalog))
                .collect(),
        );
        let mut notes = Vec::new();
        // A batched server run's samples are compute times per call of several queries,
        // not per batch of its batch size: it is reported in the serving table only
        // (unless nothing else is there to report).
        let (batched, unbatched): (Vec<_>, Vec<_>) = records
            .into_iter()
            .partition(|r| r.scenario.as_ref().is_some_and(|s| s.batcher.is_some()));
        let records = if unbatched.is_empty() {
            batched
        } else {
            if !batched.is_empty() {
                notes.push(format!(
                    "{} server run(s) with the dynamic batcher (--max-batch) are in the serving table only: their compute times are per call of several queries",
                    batched.len()
                ));
            }
            unbatched
        };
        let entries = group::group(
            records,
            aliases,
            &catalog,
            opts.duplicates,
            stat,
            &mut notes,
        );
        if entries.is_empty() {
            anyhow::bail!("no results to report");
        }
        // What the harness said about its own numbers travels with them.
        for e in &entries {
            for w in &e.warnings {
                notes.push(format!("{} on {}: {w}", e.model_name, e.config_name()));
            }
            if e.is_disturbed() {
                notes.push(format!(
                    "{} ({}, {}) on {}: DISTURBED: measured while the machine was busy, its times may be inflated: {}",
                    e.model_name,
                    group::input_desc(&e.table),
                    e.table.mode,
                    e.config_name(),
                    e.disturbed.join("; ")
                ));
            }
        }
        let mut tables = make_tables(&entries, opts.layout, stat);
        for t in &mut tables {
            t.family = catalog.family(&t.key.model_id);
        }
        let overview = tables
            .iter()
            .enumerate()
            .map(|(i, t)| OverviewRow {
                table: i,
                facts: catalog.facts(&t.key.model_id, t.key.input).or_else(|| {
                    // Fall back on what the result files say about the model.
                    let e = &entries[*t.rows.first()?];
                    Some(ModelFacts {
                        depth: e.depth?,
                        params: e.params?,
                        macs: e.macs?,
                        top1_error: None,
                        top5_error: None,
                    })
                }),
                fastest: t.rows.first().copied(),
            })
            .filter(|_| opts.overview)
            .collect();
        notes.sort_by(|a, b| natural_cmp(a, b));
        let speedups = match &opts.speedups {
            SpeedupRequest::None => Vec::new(),
            SpeedupRequest::All => speedup::all_pairs(&entries, &tables, stat, 3),
            SpeedupRequest::Pairs(pairs) => {
                let mut out = Vec::new();
                for (a, b) in pairs {
                    let found = speedup::chosen(&entries, &tables, stat, a, b)
                        .map_err(|e| anyhow::anyhow!(e))?;
                    if found.is_empty() {
                        notes.push(format!(
                            "no model measured on both {a} and {b}: no speed-up to report"
                        ));
                    }
                    out.extend(found);
                }
                out
            }
        };
        let conclusions = opts
            .conclusions
            .then(|| conclusions::conclude(&entries, &tables, stat));
        Ok(Report {
            stat,
            layout: opts.layout,
            with_std: opts.with_std,
            cold_start: opts.cold_start,
            entries,
            tables,
            overview,
            speedups_requested: opts.speedups != SpeedupRequest::None,
            speedups,
            conclusions,
            notes,
            serving,
        })
    }

    /// Rows of a table, fastest first.
    pub fn rows<'a>(&'a self, t: &'a Table) -> impl Iterator<Item = &'a Entry> + 'a {
        t.rows.iter().map(|&i| &self.entries[i])
    }

    /// The line under a table's heading: `(input 16 x 3 x 224 x 224)` in the legacy
    /// layout; with the mode and statistic otherwise.
    pub fn subtitle(&self, t: &Table) -> String {
        let input = group::input_desc(&t.key);
        match self.layout {
            Layout::Legacy if t.key.mode == cnnbench_results::Mode::Train => {
                format!("(input {input})")
            }
            Layout::Legacy => format!("(input {input}, {})", t.key.mode),
            Layout::Default => {
                let passes: Vec<usize> = self
                    .rows(t)
                    .filter_map(|e| e.samples.get(&Quantity::Total).map(Vec::len))
                    .collect();
                let (lo, hi) = (
                    passes.iter().min().copied().unwrap_or(0),
                    passes.iter().max().copied().unwrap_or(0),
                );
                let n = if lo == hi {
                    format!("{lo}")
                } else {
                    format!("{lo}–{hi}")
                };
                format!(
                    "(input {input}, {} mode; {} of {n} passes per row)",
                    t.key.mode,
                    self.stat.as_str()
                )
            }
        }
    }

    /// Column headers and cells of a table, as every text format prints them.
    pub fn cells(&self, t: &Table) -> (Vec<String>, Vec<Vec<String>>) {
        let phases: Vec<Quantity> = Quantity::PHASES
            .into_iter()
            .filter(|q| self.rows(t).any(|e| e.samples.contains_key(q)))
            .collect();
        let show = |e: &Entry, q: Quantity| -> String {
            match e.value(q, self.stat) {
                None => "-".into(),
                Some(v) if self.with_std => format!(
                    "{} ± {}",
                    crate::fmt::ms(v),
                    crate::fmt::ms(e.std(q).unwrap_or(0.0))
                ),
                Some(v) => crate::fmt::ms(v),
            }
        };
        match self.layout {
            Layout::Legacy => {
                let head = [
                    "GPU",
                    "cuDNN",
                    "Forward (ms)",
                    "Backward (ms)",
                    "Total (ms)",
                ]
                .map(String::from)
                .to_vec();
                let rows = self
                    .rows(t)
                    .map(|e| {
                        vec![
                            e.device.clone(),
                            e.cudnn_column(),
                            show(e, Quantity::Forward),
                            show(e, Quantity::Backward),
                            show(e, Quantity::Total),
                        ]
                    })
                    .collect();
                (head, rows)
            }
            Layout::Default => {
                let runs = self.rows(t).any(|e| e.runs > 1);
                let disturbed = self.rows(t).any(Entry::is_disturbed);
                let mut head = vec!["Device".to_string(), "Engine".to_string()];
                for q in &phases {
                    head.push(format!("{} (ms)", capitalise(q.as_str())));
                }
                head.push("Total (ms)".into());
                head.push("images/s".into());
                if runs {
                    head.push("Runs".into());
                }
                // A compile column where some engine in the table compiled.
                let compiled = self.cold_start
                    && self
                        .rows(t)
                        .any(|e| e.cold_start.is_some_and(|c| c.compile.is_some()));
                if self.cold_start {
                    head.push("Prepare (s)".into());
                    if compiled {
                        head.push("Compile (s)".into());
                    }
                    head.push("First pass (s)".into());
                }
                if disturbed {
                    head.push("Machine".into());
                }
                let rows = self
                    .rows(t)
                    .map(|e| {
                        let mut r = vec![e.device.clone(), e.engine_label()];
                        for q in &phases {
                            r.push(show(e, *q));
                        }
                        r.push(show(e, Quantity::Total));
                        r.push(
                            e.images_per_s(self.stat)
                                .map_or("-".into(), |v| format!("{v:.1}")),
                        );
                        if runs {
                            r.push(e.runs.to_string());
                        }
                        if self.cold_start {
                            let seconds =
                                |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
                            let c = e.cold_start;
                            r.push(seconds(c.map(|c| c.prepare)));
                            if compiled {
                                r.push(seconds(c.and_then(|c| c.compile)));
                            }
                            r.push(seconds(c.map(|c| c.first_pass)));
                        }
                        if disturbed {
                            r.push(
                                match (e.is_disturbed(), e.judged) {
                                    (true, _) => "DISTURBED",
                                    (false, true) => "quiet",
                                    (false, false) => "-",
                                }
                                .into(),
                            );
                        }
                        r
                    })
                    .collect();
                (head, rows)
            }
        }
    }

    /// Header and cells of the models overview.
    pub fn overview_cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let err = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let legacy = self.layout == Layout::Legacy;
        let head: Vec<String> = if legacy {
            [
                "Network",
                "Layers",
                "Top-1 error",
                "Top-5 error",
                "Speed (ms)",
                "Measured on",
            ]
            .map(String::from)
            .to_vec()
        } else {
            [
                "Model",
                "Input",
                "Mode",
                "Depth",
                "Params (M)",
                "GMACs",
                "Top-1 error",
                "Top-5 error",
                "Fastest total (ms)",
                "On",
            ]
            .map(String::from)
            .to_vec()
        };
        let rows = self
            .overview
            .iter()
            .map(|o| {
                let t = &self.tables[o.table];
                let f = o.facts.as_ref();
                let fastest = o.fastest.map(|i| &self.entries[i]);
                let speed = fastest
                    .and_then(|e| e.value(Quantity::Total, self.stat))
                    .map_or("-".into(), crate::fmt::ms);
                let on = fastest.map_or("-".into(), |e| e.config_name());
                if legacy {
                    vec![
                        t.title.clone(),
                        f.map_or("-".into(), |f| f.depth.to_string()),
                        err(f.and_then(|f| f.top1_error)),
                        err(f.and_then(|f| f.top5_error)),
                        speed,
                        on,
                    ]
                } else {
                    vec![
                        t.title.clone(),
                        group::input_desc(&t.key),
                        t.key.mode.to_string(),
                        f.map_or("-".into(), |f| f.depth.to_string()),
                        f.map_or("-".into(), |f| format!("{:.2}", f.params as f64 / 1e6)),
                        f.map_or("-".into(), |f| format!("{:.2}", f.macs as f64 / 1e9)),
                        err(f.and_then(|f| f.top1_error)),
                        err(f.and_then(|f| f.top5_error)),
                        speed,
                        on,
                    ]
                }
            })
            .collect();
        (head, rows)
    }
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}
