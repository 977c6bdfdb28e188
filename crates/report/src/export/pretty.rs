//! Box-drawn tables for a terminal (comfy-table), the default when stdout is one.

use super::{is_text_column, Exporter};
use crate::compare::Comparison;
use crate::report::Report;
use comfy_table::presets::{ASCII_MARKDOWN, UTF8_FULL_CONDENSED};
use comfy_table::{CellAlignment, ContentArrangement, Table};
use std::fmt::Write;

pub struct PrettyExporter;

/// How a table is drawn: box lines for a terminal, or markdown whose columns line up
/// (for a pipe or a log, readable as text and as markdown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableStyle {
    Boxed,
    AlignedMarkdown,
}

/// A comfy table with numbers right-aligned.
pub fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let numeric: Vec<usize> = (0..head.len())
        .filter(|&i| !is_text_column(&head[i]))
        .collect();
    styled_table(head, rows, &numeric, TableStyle::Boxed)
}

/// A comfy table in `style` with the `numeric` columns right-aligned.
pub fn styled_table(
    head: &[String],
    rows: &[Vec<String>],
    numeric: &[usize],
    style: TableStyle,
) -> String {
    let mut t = Table::new();
    match style {
        TableStyle::Boxed => t
            .load_preset(UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled),
        TableStyle::AlignedMarkdown => t.load_preset(ASCII_MARKDOWN),
    };
    t.set_header(head);
    for r in rows {
        t.add_row(r);
    }
    for &i in numeric {
        if let Some(c) = t.column_mut(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    t.to_string()
}

impl Exporter for PrettyExporter {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let mut out = String::new();
        if !report.overview.is_empty() {
            let (head, rows) = report.overview_cells();
            writeln!(out, "Models (fastest total, {})", report.stat.as_str())?;
            writeln!(out, "{}\n", table(&head, &rows))?;
        }
        for t in &report.tables {
            let (head, rows) = report.cells(t);
            writeln!(out, "{}  {}", t.title, report.subtitle(t))?;
            writeln!(out, "{}\n", table(&head, &rows))?;
        }
        for sweep in crate::sweep::sweeps(report) {
            let (head, rows) = sweep.cells();
            writeln!(
                out,
                "Sweep: {}  (images/s; latency of a batch in ms, median (p99))",
                sweep.title()
            )?;
            writeln!(out, "{}\n", table(&head, &rows))?;
        }
        for scaling in crate::scaling::scalings(report) {
            let (head, rows) = scaling.cells();
            writeln!(
                out,
                "Scaling: {}  (images/s of all ranks; speed-up and efficiency against the fewest ranks; allreduce: its share of a pass)",
                scaling.title()
            )?;
            writeln!(out, "{}\n", table(&head, &rows))?;
        }
        use crate::serving::{OTHERS_NOTE, OTHERS_TITLE, SERVER_NOTE, SERVER_TITLE};
        if !report.serving.server.is_empty() {
            let (head, rows) = report.serving.server_cells();
            writeln!(out, "{SERVER_TITLE}")?;
            writeln!(out, "{}\n{SERVER_NOTE}\n", table(&head, &rows))?;
        }
        if !report.serving.others.is_empty() {
            let (head, rows) = report.serving.other_cells();
            writeln!(out, "{OTHERS_TITLE}")?;
            writeln!(out, "{}\n{OTHERS_NOTE}\n", table(&head, &rows))?;
        }
        if report.speedups_requested {
            writeln!(out, "Speed-ups ({} total time)", report.stat.as_str())?;
            if report.speedups.is_empty() {
                writeln!(
                    out,
                    "  No two configurations share enough models for a speed-up."
                )?;
            }
            for s in &report.speedups {
                writeln!(out, "  {}", s.sentence())?;
            }
            out.push('\n');
        }
        if let Some(c) = &report.conclusions {
            writeln!(out, "Conclusions ({} total time)", report.stat.as_str())?;
            if c.statements.is_empty() {
                writeln!(out, "  {}", crate::conclusions::NONE)?;
            }
            for s in &c.statements {
                writeln!(out, "  {}: {}", s.dimension.title(), s.sentence())?;
            }
            for n in &c.not_concluded {
                writeln!(out, "  not concluded: {n}")?;
            }
            out.push('\n');
        }
        for n in &report.notes {
            writeln!(out, "note: {n}")?;
        }
        while out.ends_with("\n\n") {
            out.pop();
        }
        Ok(out)
    }

    /// The table, a blank line, then the summary lines.
    fn render_comparison(&self, comparison: &Comparison) -> anyhow::Result<String> {
        let mut out = String::new();
        if !comparison.pairs.is_empty() {
            let (head, rows) = comparison.cells();
            out.push_str(&table(&head, &rows));
            out.push_str("\n\n");
        }
        for line in comparison.summary() {
            writeln!(out, "{line}")?;
        }
        Ok(out)
    }
}
