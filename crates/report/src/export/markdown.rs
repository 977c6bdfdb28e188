//! Markdown: per-model tables in the original README's style, pasteable into a README.

use super::{is_text_column, Exporter};
use crate::compare::Comparison;
use crate::report::Report;
use std::fmt::Write;

pub struct MarkdownExporter;

/// A markdown table: `|a|b|`, `|---|---:|`, rows.
pub fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| s.replace('|', "\\|");
    let mut out = String::new();
    out.push('|');
    for h in head {
        out.push_str(&esc(h));
        out.push('|');
    }
    out.push_str("\n|");
    for h in head {
        out.push_str(if is_text_column(h) { "---|" } else { "---:|" });
    }
    out.push('\n');
    for r in rows {
        out.push('|');
        for c in r {
            out.push_str(&esc(c));
            out.push('|');
        }
        out.push('\n');
    }
    out
}

impl Exporter for MarkdownExporter {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let mut out = String::new();
        if !report.overview.is_empty() {
            let (head, rows) = report.overview_cells();
            writeln!(out, "## Models\n")?;
            out.push_str(&table(&head, &rows));
            writeln!(
                out,
                "\nSpeed: the fastest total time per pass ({}) measured for the model.\n",
                report.stat.as_str()
            )?;
        }
        for t in &report.tables {
            let (head, rows) = report.cells(t);
            writeln!(out, "## {}\n{}\n", t.title, report.subtitle(t))?;
            out.push_str(&table(&head, &rows));
            out.push('\n');
        }
        for sweep in crate::sweep::sweeps(report) {
            let (head, rows) = sweep.cells();
            writeln!(out, "## Sweep: {}\n", sweep.title())?;
            out.push_str(&table(&head, &rows));
            writeln!(
                out,
                "\nImages per second and the latency of one batch in ms (median, p99 in brackets).\n"
            )?;
        }
        for scaling in crate::scaling::scalings(report) {
            let (head, rows) = scaling.cells();
            writeln!(out, "## Scaling: {}\n", scaling.title())?;
            out.push_str(&table(&head, &rows));
            writeln!(
                out,
                "\nImages per second of all ranks; speed-up and efficiency (throughput per rank against the fewest ranks'); the all-reduce's share of a pass.\n"
            )?;
        }
        use crate::serving::{OTHERS_NOTE, OTHERS_TITLE, SERVER_NOTE, SERVER_TITLE};
        if !report.serving.server.is_empty() {
            let (head, rows) = report.serving.server_cells();
            writeln!(out, "## {SERVER_TITLE}\n")?;
            out.push_str(&table(&head, &rows));
            writeln!(out, "\n{SERVER_NOTE}\n")?;
        }
        if !report.serving.others.is_empty() {
            let (head, rows) = report.serving.other_cells();
            writeln!(out, "## {OTHERS_TITLE}\n")?;
            out.push_str(&table(&head, &rows));
            writeln!(out, "\n{OTHERS_NOTE}\n")?;
        }
        if report.speedups_requested {
            writeln!(out, "## Speed-ups\n")?;
            if report.speedups.is_empty() {
                writeln!(
                    out,
                    "No two configurations share enough models for a speed-up."
                )?;
            }
            for s in &report.speedups {
                writeln!(out, "- {}", s.sentence())?;
            }
            out.push('\n');
        }
        if let Some(c) = &report.conclusions {
            writeln!(out, "## Conclusions\n")?;
            writeln!(out, "{}\n", crate::conclusions::preamble(report.stat))?;
            if c.statements.is_empty() {
                writeln!(out, "{}", crate::conclusions::NONE)?;
            }
            for s in &c.statements {
                writeln!(out, "- **{}**: {}", s.dimension.title(), s.sentence())?;
            }
            out.push('\n');
            if !c.not_concluded.is_empty() {
                writeln!(out, "Not concluded:\n")?;
                for n in &c.not_concluded {
                    writeln!(out, "- {n}")?;
                }
                out.push('\n');
            }
        }
        if !report.notes.is_empty() {
            writeln!(out, "Notes:\n")?;
            for n in &report.notes {
                writeln!(out, "- {n}")?;
            }
            out.push('\n');
        }
        while out.ends_with("\n\n") {
            out.pop();
        }
        Ok(out)
    }

    /// The table, then each summary line as a paragraph.
    fn render_comparison(&self, comparison: &Comparison) -> anyhow::Result<String> {
        let mut out = String::new();
        if !comparison.pairs.is_empty() {
            let (head, rows) = comparison.cells();
            out.push_str(&table(&head, &rows));
            out.push('\n');
        }
        for line in comparison.summary() {
            writeln!(out, "{line}\n")?;
        }
        Ok(out.trim_end().to_string() + "\n")
    }
}
