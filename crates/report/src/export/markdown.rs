//! Markdown: per-model tables in the original README's style, pasteable into a README.

use super::{is_text_column, Exporter};
use crate::compare::Comparison;
use crate::report::Report;
use std::fmt::Write;

pub struct MarkdownExporter;

/// Text as markdown that shows it as it is, for everything a result file can say (model,
/// engine and device names, reasons, the notes and sentences that quote them) and so for
/// every piece of text this exporter writes: renderers (GitHub, mdBook) render inline
/// HTML and links, so a name holding `<img src=x onerror=alert(1)>` ran a script, `<!--`
/// hid the rest of the page and `[x](javascript:alert(1))` was a link. `&`, `<` and `>`
/// become entities (no tag, comment or `<…>` autolink can start); `[` and `]` (links,
/// images, footnotes), `*` (emphasis), `|` (a table's cell separator) and `\` (which
/// would undo the escape after it) get a backslash. Ordinary names (`resnet18`,
/// `burn-flex`, `224×224`, `Intel(R) Xeon(R)`) are unchanged. Control characters were
/// escaped when the file was loaded, so the text is one line and starts no block.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '[' | ']' | '*' | '|' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// A markdown table: `|a|b|`, `|---|---:|`, rows; every cell [`escape`]d.
pub fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    out.push('|');
    for h in head {
        out.push_str(&escape(h));
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
            out.push_str(&escape(c));
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
            writeln!(
                out,
                "## {}\n{}\n",
                escape(&t.title),
                escape(&report.subtitle(t))
            )?;
            out.push_str(&table(&head, &rows));
            out.push('\n');
        }
        for sweep in crate::sweep::sweeps(report) {
            let (head, rows) = sweep.cells();
            writeln!(out, "## Sweep: {}\n", escape(&sweep.title()))?;
            out.push_str(&table(&head, &rows));
            writeln!(
                out,
                "\nImages per second and the latency of one batch in ms (median, p99 in brackets).\n"
            )?;
        }
        for scaling in crate::scaling::scalings(report) {
            let (head, rows) = scaling.cells();
            writeln!(out, "## Scaling: {}\n", escape(&scaling.title()))?;
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
                writeln!(out, "- {}", escape(&s.sentence()))?;
            }
            out.push('\n');
        }
        if let Some(c) = &report.conclusions {
            writeln!(out, "## Conclusions\n")?;
            writeln!(
                out,
                "{}\n",
                escape(&crate::conclusions::preamble(report.stat))
            )?;
            if c.statements.is_empty() {
                writeln!(out, "{}", crate::conclusions::NONE)?;
            }
            for s in &c.statements {
                writeln!(
                    out,
                    "- **{}**: {}",
                    escape(s.dimension.title()),
                    escape(&s.sentence())
                )?;
            }
            out.push('\n');
            if !c.not_concluded.is_empty() {
                writeln!(out, "Not concluded:\n")?;
                for n in &c.not_concluded {
                    writeln!(out, "- {}", escape(n))?;
                }
                out.push('\n');
            }
        }
        if !report.notes.is_empty() {
            writeln!(out, "Notes:\n")?;
            for n in &report.notes {
                writeln!(out, "- {}", escape(n))?;
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
            writeln!(out, "{}\n", escape(&line))?;
        }
        Ok(out.trim_end().to_string() + "\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{EngineDesc, Origin, Record};
    use cnnbench_results::scenario::{LatencySummary, ScenarioKind, ScenarioRecord};
    use cnnbench_results::{Mode, Precision, Quantity};

    const IMG: &str = "<img src=x onerror=alert(1)>";
    const LINK: &str = "[x](javascript:alert(1))";
    const COMMENT: &str = "<!--";

    /// An invalid server run within its bound, so that its reason reaches the serving
    /// table's note.
    fn invalid_server_run(reason: &str) -> ScenarioRecord {
        let s = 0.01;
        ScenarioRecord {
            kind: ScenarioKind::Server,
            samples_per_query: 1,
            target_qps: Some(10.0),
            schedule_seed: None,
            latency_bound_ms: Some(15.0),
            queries: 500,
            samples: 500,
            duration_s: 10.0,
            achieved_qps: 9.8,
            samples_per_s: 9.8,
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
            percentile: ScenarioKind::Server.percentile(),
            percentile_latency_s: Some(s),
            early_stopping_latency_s: None,
            issuer_overhead_s: 0.0,
            valid: false,
            invalid_reasons: vec![reason.into()],
            meets_mlperf_rules: false,
            mlperf_shortfalls: Vec::new(),
            peak_search: Vec::new(),
            batcher: None,
            abandoned_queries: 0,
        }
    }

    fn record(model: &str, engine: &str, why: &str, path: &str) -> Record {
        Record {
            path: path.into(),
            origin: Origin::Cnnbench,
            model_label: model.into(),
            model_id: model.into(),
            input: [3, 224, 224],
            batch_size: 1,
            mode: Mode::Infer,
            device_name: "CPU".into(),
            device: "cpu".into(),
            label: None,
            engine: EngineDesc {
                name: engine.into(),
                framework: "burn".into(),
                framework_version: "0.22.1".into(),
                backend: "flex".into(),
                libraries: Default::default(),
                settings: Default::default(),
                variant: Vec::new(),
                threads_requested: None,
                precision: Precision::F32,
                world_size: 1,
                allocator: None,
            },
            machine: None,
            tool_version: None,
            started_at: None,
            samples: [(Quantity::Total, vec![0.010, 0.011, 0.012, 0.010, 0.011])].into(),
            params: None,
            macs: None,
            depth: None,
            peak_rss_bytes: None,
            device_peak_bytes: None,
            forward_roof_s: None,
            warnings: vec![format!("warned {why}")],
            disturbed: Some(vec![format!("disturbed {why}")]),
            cold_start: None,
            hosts: None,
            run_noise_pct: None,
            scenario: None,
        }
    }

    /// The hostile names and reasons of `md` are shown, not rendered: no raw `<` (no tag,
    /// comment or autolink), every bracket escaped (no link or image), and the text
    /// itself readable once a renderer undoes the escapes.
    fn assert_inert(md: &str) {
        assert!(!md.contains('<'), "{md}");
        let chars: Vec<char> = md.chars().collect();
        for (i, c) in chars.iter().enumerate() {
            if matches!(c, '[' | ']') {
                assert!(i > 0 && chars[i - 1] == '\\', "a live bracket at {i}: {md}");
            }
        }
        for shown in [
            "&lt;img src=x onerror=alert(1)&gt;",
            "\\[x\\](javascript:alert(1))",
            "&lt;!--",
        ] {
            assert!(md.contains(shown), "{shown} missing: {md}");
        }
        // Ordinary names look as they are.
        assert!(md.contains("resnet18") && md.contains("burn-flex"), "{md}");
    }

    fn hostile_records(path: &str) -> Vec<Record> {
        let mut server = record(
            &format!("m {IMG}"),
            &format!("e {LINK}"),
            COMMENT,
            &format!("{path}-server.json"),
        );
        server.scenario = Some(invalid_server_run(&format!("{IMG} {LINK} {COMMENT}")));
        vec![
            record(
                &format!("{IMG} {LINK} {COMMENT}"),
                &format!("{LINK} {COMMENT}"),
                &format!("{IMG} {LINK}"),
                &format!("{path}-a.json"),
            ),
            record("resnet18", "burn-flex", "", &format!("{path}-b.json")),
            server,
        ]
    }

    #[test]
    fn hostile_names_and_reasons_are_text_in_a_report() {
        let report = crate::Report::build(
            hostile_records("r"),
            &crate::Aliases::default(),
            &crate::NoCatalog,
            &crate::ReportOptions::default(),
        )
        .unwrap();
        assert_eq!(report.serving.server.len(), 1);
        let md = MarkdownExporter.render(&report).unwrap();
        let serving = &md[md.find("## Serving").unwrap()..];
        assert!(
            serving.contains(
                "&lt;img src=x onerror=alert(1)&gt; \\[x\\](javascript:alert(1)) &lt;!--|"
            ),
            "the reason in the serving table: {md}"
        );
        assert_inert(&md);
    }

    #[test]
    fn hostile_names_and_reasons_are_text_in_a_comparison() {
        let side = |path: &str| {
            crate::group::group(
                hostile_records(path),
                &crate::Aliases::default(),
                &crate::NoCatalog,
                crate::Duplicates::Pool,
                crate::Stat::Median,
                &mut Vec::new(),
            )
        };
        let mut new = side("new");
        // One more model only in NEW, so its name reaches the "Only in NEW" line.
        new.extend(crate::group::group(
            vec![record(
                &format!("only {IMG}"),
                "burn-flex",
                "",
                "new-c.json",
            )],
            &crate::Aliases::default(),
            &crate::NoCatalog,
            crate::Duplicates::Pool,
            crate::Stat::Median,
            &mut Vec::new(),
        ));
        let comparison =
            crate::compare::compare(&side("base"), &new, &crate::CompareOptions::default());
        assert!(!comparison.pairs.is_empty());
        let md = MarkdownExporter.render_comparison(&comparison).unwrap();
        assert!(
            md.contains("Not judged") && md.contains("Only in NEW"),
            "{md}"
        );
        assert_inert(&md);
    }

    #[test]
    fn ordinary_text_is_unchanged_and_markup_is_escaped() {
        for plain in [
            "resnet18",
            "burn-flex",
            "224×224",
            "Intel(R) Xeon(R) Processor · burn-flex 0.22.1, 2 threads",
            "mobilenet_v2",
        ] {
            assert_eq!(escape(plain), plain);
        }
        assert_eq!(
            escape("a|b\\[c]*d* <!-- & -->"),
            "a\\|b\\\\\\[c\\]\\*d\\* &lt;!-- &amp; --&gt;"
        );
    }
}
