//! Output formats, one file each behind one trait (as in hyperfine's `export/`). Each
//! format renders both documents: a [`Report`] and a [`Comparison`].

mod csv;
mod html;
mod json;
mod markdown;
pub mod pretty;

pub use csv::CsvExporter;
pub use html::HtmlExporter;
pub use json::JsonExporter;
pub use markdown::{escape as escape_markdown, MarkdownExporter};
pub use pretty::PrettyExporter;

use crate::compare::Comparison;
use crate::report::Report;

/// Renders a whole report, or a whole comparison, into one document.
pub trait Exporter {
    /// `cnnbench report`: the tables, overview, speed-ups and notes.
    fn render(&self, report: &Report) -> anyhow::Result<String>;
    /// `cnnbench compare`: the table of pairs and the summary lines.
    fn render_comparison(&self, comparison: &Comparison) -> anyhow::Result<String>;
}

/// The formats `--format` accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Box-drawn tables for a terminal.
    Pretty,
    Markdown,
    Csv,
    Json,
    /// One self-contained page with inline charts.
    Html,
}

impl Format {
    /// The exporter for this format.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Pretty => Box::new(PrettyExporter),
            Format::Markdown => Box::new(MarkdownExporter),
            Format::Csv => Box::new(CsvExporter),
            Format::Json => Box::new(JsonExporter),
            Format::Html => Box::new(HtmlExporter),
        }
    }

    /// The format a file name suggests (`report.html` → HTML).
    pub fn from_extension(path: &std::path::Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "md" | "markdown" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "json" => Some(Format::Json),
            "html" | "htm" => Some(Format::Html),
            "txt" => Some(Format::Pretty),
            _ => None,
        }
    }
}

/// Columns that hold names rather than numbers (left-aligned).
pub(crate) fn is_text_column(header: &str) -> bool {
    matches!(
        header,
        "GPU"
            | "cuDNN"
            | "Device"
            | "Engine"
            | "Model"
            | "Network"
            | "Input"
            | "On"
            | "Measured on"
            | "Configuration"
            | "Verdict"
            | "95% CI"
            | "Precision"
            | "Scenario"
            | "Reported"
            | "Judged from"
            | "Note"
            | "Valid"
    )
}
