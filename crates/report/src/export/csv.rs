//! CSV: one row per result with every statistic in milliseconds, for spreadsheets.

use super::json::rows;
use super::Exporter;
use crate::compare::Comparison;
use crate::report::Report;
use cnnbench_results::Quantity;
use std::collections::BTreeMap;
use std::fmt::Write;

pub struct CsvExporter;

/// Quotes a field when it holds a comma, a quote or a line break (RFC 4180), and puts a
/// `'` before one that a spreadsheet would run as a formula (a model or device name
/// beginning with `=`, `+`, `-`, `@`, a tab or CR; numbers are left alone), as OWASP's
/// advice on CSV injection says.
pub fn field(s: &str) -> String {
    let formula = match s.chars().next() {
        Some('=' | '@' | '\t' | '\r') => true,
        Some('+' | '-') => s.parse::<f64>().is_err(),
        _ => false,
    };
    let s = if formula {
        format!("'{s}")
    } else {
        s.to_string()
    };
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s
    }
}

fn num(v: Option<f64>) -> String {
    v.map_or(String::new(), |v| format!("{v:.6}"))
}

fn joined(m: &BTreeMap<String, String>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(";")
}

/// The stable column list, so scripts can rely on it.
pub const CSV_COLUMNS_HEAD: &[&str] = &[
    "model",
    "model_label",
    "batch_size",
    "channels",
    "image_height",
    "image_width",
    "mode",
    "device",
    "device_name",
    "engine",
    "framework",
    "framework_version",
    "backend",
    "libraries",
    "settings",
    "precision",
    "threads_requested",
    "origin",
    "runs",
    "passes",
    "stat",
];

impl Exporter for CsvExporter {
    fn render(&self, report: &Report) -> anyhow::Result<String> {
        let mut head: Vec<String> = CSV_COLUMNS_HEAD.iter().map(|s| s.to_string()).collect();
        for q in Quantity::ALL {
            for s in ["mean", "median", "std", "min", "max"] {
                head.push(format!("{q}_{s}_ms"));
            }
        }
        for c in [
            "images_per_s",
            "gflops_per_s",
            "params",
            "macs",
            "peak_rss_bytes",
            "device_peak_bytes",
        ] {
            head.push(c.into());
        }
        let mut out = head.join(",");
        out.push('\n');
        for r in rows(report) {
            let mut cells = vec![
                r.model,
                r.model_label,
                r.batch_size.to_string(),
                r.channels.to_string(),
                r.image_height.to_string(),
                r.image_width.to_string(),
                r.mode,
                r.device,
                r.device_name,
                r.engine,
                r.framework,
                r.framework_version,
                r.backend,
                joined(&r.libraries),
                joined(&r.settings),
                r.precision,
                r.threads_requested.map_or(String::new(), |t| t.to_string()),
                format!("{:?}", r.origin).to_lowercase(),
                r.runs.to_string(),
                r.quantities
                    .get(&Quantity::Total)
                    .map_or(String::new(), |q| q.count.to_string()),
                r.stat,
            ];
            for q in Quantity::ALL {
                let s = r.quantities.get(&q);
                cells.push(num(s.map(|s| s.mean_ms)));
                cells.push(num(s.map(|s| s.median_ms)));
                cells.push(num(s.map(|s| s.std_ms)));
                cells.push(num(s.map(|s| s.min_ms)));
                cells.push(num(s.map(|s| s.max_ms)));
            }
            cells.push(num(r.images_per_s));
            cells.push(num(r.gflops_per_s));
            for v in [r.params, r.macs, r.peak_rss_bytes, r.device_peak_bytes] {
                cells.push(v.map_or(String::new(), |v| v.to_string()));
            }
            out.push_str(&cells.iter().map(|c| field(c)).collect::<Vec<_>>().join(","));
            out.push('\n');
        }
        Ok(out)
    }

    /// One row per pair, times in milliseconds.
    fn render_comparison(&self, comparison: &Comparison) -> anyhow::Result<String> {
        let mut out = COMPARE_COLUMNS.join(",");
        out.push('\n');
        for p in &comparison.pairs {
            writeln!(
                out,
                "{},{},{},{},{},{:.6},{:.6},{},{},{},{},{:.6},{},{},{},{}",
                field(&p.model),
                field(&p.input),
                p.mode,
                field(&p.base_config),
                field(&p.new_config),
                p.base_median_ms,
                p.new_median_ms,
                p.base_samples,
                p.new_samples,
                p.base_runs,
                p.new_runs,
                p.ratio,
                p.ci95.map_or(String::new(), |c| format!("{:.6}", c[0])),
                p.ci95.map_or(String::new(), |c| format!("{:.6}", c[1])),
                field(p.verdict.as_str()),
                p.regression
            )?;
        }
        Ok(out)
    }
}

/// The columns of a comparison, one row per pair.
pub const COMPARE_COLUMNS: &[&str] = &[
    "model",
    "input",
    "mode",
    "base_config",
    "new_config",
    "base_median_ms",
    "new_median_ms",
    "base_samples",
    "new_samples",
    "base_runs",
    "new_runs",
    "ratio",
    "ci95_low",
    "ci95_high",
    "verdict",
    "regression",
];

#[cfg(test)]
mod tests {
    #[test]
    fn quoting() {
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(super::field("plain"), "plain");
    }

    #[test]
    fn formulas_are_defused_and_numbers_kept() {
        use super::field;
        assert_eq!(
            field("=HYPERLINK(\"http://x\")"),
            "\"'=HYPERLINK(\"\"http://x\"\")\""
        );
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("+cmd|'/C calc'!A0"), "'+cmd|'/C calc'!A0");
        assert_eq!(field("-2+3"), "'-2+3");
        assert_eq!(field("\tx"), "'\tx");
        assert_eq!(field("-12.500000"), "-12.500000");
        assert_eq!(field("+3"), "+3");
        assert_eq!(field("resnet-50"), "resnet-50");
    }
}
