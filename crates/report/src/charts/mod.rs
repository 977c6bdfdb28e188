//! The report's charts, SVG always and PNG beside it; text in PNGs uses a bundled font,
//! so no system library or font is needed. One file per kind, each kind a type that
//! implements the one `Chart` trait (its size, and its drawing on any plotters
//! backend), and one writer (in `plot`) that renders any of them to `stem.svg` and
//! `stem.png`:
//!
//! - [`model`]: per table a bar chart of the time per configuration, the overview
//!   across models and the speed-up overview;
//! - [`sweep`]: throughput and latency against batch size ([`crate::sweep`]);
//! - [`scaling`]: data-parallel scaling ([`crate::scaling`]);
//! - [`profile`]: where a profile's time goes ([`crate::profile`]), and `roofline`: its
//!   nodes against the machine's measured ceilings;
//! - [`serving`]: latency against offered load of server-scenario runs
//!   ([`crate::serving`]);
//! - `pareto`: `cnnbench choose`'s speed against accuracy ([`crate::choose`]).
//!
//! [`write_result_charts`] writes every kind a report of results has, so that no path of
//! `cnnbench report` can leave one out.

pub mod model;
mod pareto;
mod plot;
pub mod profile;
mod roofline;
pub mod scaling;
pub mod serving;
pub mod sweep;

pub use model::{chart_stem, overview_svg, speedups_svg, spread, table_svg, write_charts};
pub use pareto::{write_pareto_chart, write_serving_pareto_chart};

use crate::report::Report;
use std::path::{Path, PathBuf};

/// Writes every chart of a report of results into `dir` (created if needed) as SVG and
/// PNG: the tables' charts ([`write_charts`]), then one per batch sweep and one per
/// data-parallel scaling and one of latency against load per model served; returns the files written. Both paths of `cnnbench report`,
/// with profiles and without, write their results' charts through this one function.
pub fn write_result_charts(report: &Report, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = write_charts(report, dir)?;
    written.extend(sweep::write_sweep_charts(
        &crate::sweep::sweeps(report),
        dir,
    )?);
    written.extend(scaling::write_scaling_charts(
        &crate::scaling::scalings(report),
        dir,
    )?);
    written.extend(serving::write_serving_charts(&report.serving, dir)?);
    Ok(written)
}
