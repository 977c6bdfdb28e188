//! One self-contained HTML page: overview, every table, speed-ups and charts inline
//! (SVG), styles inline, no script and nothing fetched from the network. A comparison
//! is a page of the same style: the table of pairs, the summary and the warnings.

use super::{is_text_column, Exporter};
use crate::compare::Comparison;
use crate::report::Report;
use std::fmt::Write;

pub struct HtmlExporter;

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:2rem auto;max-width:1100px;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.25rem;margin:2.2rem 0 .2rem;border-bottom:1px solid #ddd;padding-bottom:.2rem}
p.sub{color:#555;margin:.1rem 0 .8rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.92rem}
th,td{border:1px solid #d0d7de;padding:.3rem .6rem}th{background:#f3f5f7}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafbfc}
figure{margin:.5rem 0 1.5rem;overflow-x:auto}figure svg{max-width:100%;height:auto}
ul.speedups li{margin:.2rem 0}
nav ul{columns:3;list-style:none;padding:0}nav a{color:#0b5cad;text-decoration:none}
.notes{color:#555;font-size:.9rem}
";

fn table(out: &mut String, head: &[String], rows: &[Vec<String>]) {
    let class = |h: &str| {
        if is_text_column(h) {
            ""
        } else {
            " class=\"num\""
        }
    };
    out.push_str("<table>\n<thead><tr>");
    for h in head {
        let _ = write!(out, "<th{}>{}</th>", class(h), escape(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in rows {
        out.push_str("<tr>");
        for (h, c) in head.iter().zip(r) {
            let _ = write!(out, "<td{}>{}</td>", class(h), escape(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// Plotters writes a bare `<svg>` element; drop anything before it.
fn inline_svg(svg: &str) -> &str {
    svg.find("<svg").map_or(svg, |i| &svg[i..])
}

/// The page up to and including its `<h1>`.
fn page_start(out: &mut String, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = write!(out, "<title>{title}</title>\n<style>\n");
    out.push_str(STYLE);
    let _ = writeln!(out, "</style>\n</head>\n<body>\n<h1>{title}</h1>");
}

impl Exporter for HtmlExporter {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let mut out = String::new();
        page_start(&mut out, "cnnbench report");
        let runs: usize = report.entries.iter().map(|e| e.runs).sum();
        writeln!(
            out,
            "<p class=\"sub\">{} runs of {} models in {} configurations. Times are the {} of the passes, in milliseconds.</p>",
            runs,
            report.tables.len(),
            {
                let mut c: Vec<String> = report.entries.iter().map(|e| e.config_name()).collect();
                c.sort();
                c.dedup();
                c.len()
            },
            report.stat.as_str()
        )?;
        out.push_str("<nav><ul>\n");
        for (i, t) in report.tables.iter().enumerate() {
            writeln!(
                out,
                "<li><a href=\"#t{i}\">{}</a></li>",
                escape(&format!(
                    "{} ({})",
                    t.title,
                    crate::group::input_desc(&t.key)
                ))
            )?;
        }
        out.push_str("</ul></nav>\n");
        if !report.overview.is_empty() {
            out.push_str("<section id=\"overview\">\n<h2>Models</h2>\n");
            let (head, rows) = report.overview_cells();
            table(&mut out, &head, &rows);
            let svg = crate::charts::overview_svg(report)?;
            writeln!(out, "<figure>{}</figure>", inline_svg(&svg))?;
            out.push_str("</section>\n");
        }
        if report.speedups_requested {
            out.push_str("<section id=\"speedups\">\n<h2>Speed-ups</h2>\n");
            // A long list (every pair of many configurations) starts folded.
            let open = if report.speedups.len() <= 15 {
                " open"
            } else {
                ""
            };
            writeln!(
                out,
                "<details{open}><summary>{} speed-up lines ({} total time)</summary>\n<ul class=\"speedups\">",
                report.speedups.len(),
                report.stat.as_str()
            )?;
            if report.speedups.is_empty() {
                out.push_str(
                    "<li>No two configurations share enough models for a speed-up.</li>\n",
                );
            }
            for s in &report.speedups {
                writeln!(out, "<li>{}</li>", escape(&s.sentence()))?;
            }
            out.push_str("</ul>\n</details>\n</section>\n");
        }
        if let Some(c) = &report.conclusions {
            out.push_str("<section id=\"conclusions\">\n<h2>Conclusions</h2>\n");
            writeln!(
                out,
                "<p class=\"sub\">{}</p>\n<ul class=\"speedups\">",
                escape(&crate::conclusions::preamble(report.stat))
            )?;
            if c.statements.is_empty() {
                writeln!(out, "<li>{}</li>", escape(crate::conclusions::NONE))?;
            }
            for s in &c.statements {
                writeln!(
                    out,
                    "<li><strong>{}</strong>: {}</li>",
                    escape(s.dimension.title()),
                    escape(&s.sentence())
                )?;
            }
            out.push_str("</ul>\n");
            if !c.not_concluded.is_empty() {
                out.push_str("<details class=\"notes\"><summary>Not concluded</summary>\n<ul>\n");
                for n in &c.not_concluded {
                    writeln!(out, "<li>{}</li>", escape(n))?;
                }
                out.push_str("</ul>\n</details>\n");
            }
            out.push_str("</section>\n");
        }
        for (i, t) in report.tables.iter().enumerate() {
            writeln!(
                out,
                "<section id=\"t{i}\">\n<h2>{}</h2>\n<p class=\"sub\">{}</p>",
                escape(&t.title),
                escape(&report.subtitle(t))
            )?;
            let (head, rows) = report.cells(t);
            table(&mut out, &head, &rows);
            let svg = crate::charts::table_svg(report, t)?;
            writeln!(out, "<figure>{}</figure>\n</section>", inline_svg(&svg))?;
        }
        for (i, sweep) in crate::sweep::sweeps(report).iter().enumerate() {
            writeln!(
                out,
                "<section id=\"sweep{i}\">\n<h2>Sweep: {}</h2>\n<p class=\"sub\">Images per second and the latency of one batch in milliseconds (median, p99 in brackets) at each batch size.</p>",
                escape(&sweep.title())
            )?;
            let (head, rows) = sweep.cells();
            table(&mut out, &head, &rows);
            let svg = crate::charts::sweep::sweep_svg(sweep)?;
            writeln!(out, "<figure>{}</figure>\n</section>", inline_svg(&svg))?;
        }
        for (i, scaling) in crate::scaling::scalings(report).iter().enumerate() {
            writeln!(
                out,
                "<section id=\"scaling{i}\">\n<h2>Scaling: {}</h2>\n<p class=\"sub\">Images per second of all ranks; speed-up and efficiency (throughput per rank against the fewest ranks'); the all-reduce's share of a pass.</p>",
                escape(&scaling.title())
            )?;
            let (head, rows) = scaling.cells();
            table(&mut out, &head, &rows);
            let svg = crate::charts::scaling::scaling_svg(scaling)?;
            writeln!(out, "<figure>{}</figure>\n</section>", inline_svg(&svg))?;
        }
        use crate::serving::{OTHERS_NOTE, OTHERS_TITLE, SERVER_NOTE, SERVER_TITLE};
        if !report.serving.server.is_empty() {
            writeln!(
                out,
                "<section id=\"serving\">\n<h2>{}</h2>\n<p class=\"sub\">{}</p>",
                escape(SERVER_TITLE),
                escape(SERVER_NOTE)
            )?;
            let (head, rows) = report.serving.server_cells();
            table(&mut out, &head, &rows);
            for svg in crate::charts::serving::serving_svgs(&report.serving)? {
                writeln!(out, "<figure>{}</figure>", inline_svg(&svg))?;
            }
            out.push_str("</section>\n");
        }
        if !report.serving.others.is_empty() {
            writeln!(
                out,
                "<section id=\"scenarios\">\n<h2>{}</h2>\n<p class=\"sub\">{}</p>",
                escape(OTHERS_TITLE),
                escape(OTHERS_NOTE)
            )?;
            let (head, rows) = report.serving.other_cells();
            table(&mut out, &head, &rows);
            out.push_str("</section>\n");
        }
        if !report.notes.is_empty() {
            out.push_str("<section class=\"notes\">\n<h2>Notes</h2>\n<ul>\n");
            for n in &report.notes {
                writeln!(out, "<li>{}</li>", escape(n))?;
            }
            out.push_str("</ul>\n</section>\n");
        }
        out.push_str(
            "<footer class=\"notes\"><p>Made by cnnbench report.</p></footer>\n</body>\n</html>\n",
        );
        Ok(out)
    }

    fn render_comparison(&self, comparison: &Comparison) -> anyhow::Result<String> {
        let mut out = String::new();
        page_start(&mut out, "cnnbench compare");
        writeln!(
            out,
            "<p class=\"sub\">NEW against BASE: the ratio of the medians of the {} time per pass, with its bootstrap 95% confidence interval. Times in milliseconds.</p>",
            comparison.quantity
        )?;
        if !comparison.pairs.is_empty() {
            let (head, rows) = comparison.cells();
            table(&mut out, &head, &rows);
        }
        out.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
        for line in comparison.summary() {
            writeln!(out, "<p>{}</p>", escape(&line))?;
        }
        out.push_str("</section>\n");
        if !comparison.warnings.is_empty() {
            out.push_str("<section class=\"notes\">\n<h2>Warnings</h2>\n<ul>\n");
            for w in &comparison.warnings {
                writeln!(out, "<li>{}</li>", escape(w))?;
            }
            out.push_str("</ul>\n</section>\n");
        }
        out.push_str(
            "<footer class=\"notes\"><p>Made by cnnbench compare.</p></footer>\n</body>\n</html>\n",
        );
        Ok(out)
    }
}
