//! `cnnbench report` and `cnnbench compare`: read result files (ours and the original
//! Torch `cnn-benchmarks` suite's), group and pool runs, and show them as the
//! original README's tables, speed-up lines, CSV/JSON, charts and a single-file HTML
//! page; compare two sets of results with confidence intervals.
//!
//! The flow: [`load`] → [`record::Record`]s → [`group`] into rows ([`group::Entry`])
//! → [`report::Report`] ([`table`]s, overview, [`speedup`]s, [`conclusions`], [`sweep`]s,
//! [`scaling`]s)
//! → an [`export::Exporter`] or [`charts`]. [`compare`] pairs the rows of two sets into
//! a [`compare::Comparison`], which the same exporters render. Profiles are not results:
//! [`profile`] loads them and [`charts::profile`] draws them.
//!
//! Inside the crate dependencies point one way: `record` ← `group` ← `table` ←
//! `speedup` ← `report` ← `sweep`, `scaling` ← `charts` ← `export`, and `group` ←
//! `compare` ← `export`; `conclusions` reads `speedup`'s pairing and `compare`'s
//! judgement, and `report` holds its result. The result schema and the statistics are `cnnbench-results`.

pub mod aliases;
pub mod catalog;
pub mod charts;
pub mod choose;
pub mod compare;
pub mod conclusions;
pub mod export;
pub mod fmt;
pub mod group;
pub mod legacy;
pub mod load;
pub mod profile;
pub mod record;
pub mod report;
pub mod runs;
pub mod scaling;
pub mod serving;
pub mod speedup;
pub mod sweep;
pub mod table;

pub use aliases::Aliases;
pub use catalog::{FamilyPlace, ModelCatalog, ModelFacts, NoCatalog};
/// The timed quantities, which rows, comparisons and exports are keyed by.
pub use cnnbench_results::Quantity;
pub use compare::{CompareOptions, Comparison, Verdict};
pub use conclusions::{Conclusion, Conclusions, Dimension};
pub use export::{Exporter, Format};
pub use group::{Duplicates, Entry, Stat};
pub use load::{load_paths, LoadWarning, Loaded};
pub use report::{Report, ReportOptions, SpeedupRequest};
pub use table::{Layout, Table};
