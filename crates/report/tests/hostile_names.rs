//! Names from result files are text, never markup or terminal control: a newline in a
//! model name used to end a markdown table row and start a heading, and ESC and CR
//! reached the terminal raw.

mod common;

use cnnbench_report::{Aliases, Format, Report, ReportOptions};
use common::*;

#[test]
fn control_characters_in_names_are_shown_escaped_in_every_format() {
    let tmp = tempfile::tempdir().unwrap();
    let evil = "resnet\n## Injected heading\n|x|y|\u{1b}[31mred\r";
    let mut run = Run::new(evil, "CPU\u{1b}]0;title\u{7}", vec![10.0; 5]);
    run.engine = "burn-flex";
    run.write(tmp.path(), "evil.json");
    let loaded = cnnbench_report::load_paths(&[tmp.path().to_path_buf()], true).unwrap();
    let report = Report::build(
        loaded.records,
        &Aliases::default(),
        &FakeCatalog,
        &ReportOptions::default(),
    )
    .unwrap();
    for format in [Format::Markdown, Format::Pretty, Format::Csv, Format::Html] {
        let text = format.exporter().render(&report).unwrap();
        assert!(
            !text.contains('\u{1b}') && !text.contains('\r') && !text.contains('\u{7}'),
            "{format:?}: {text:?}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("## Injected")),
            "{format:?}: {text}"
        );
        // Markdown writes the escape's own backslash behind one, so that a renderer
        // shows `resnet\n## Injected heading` as the other formats do.
        let shown = match format {
            Format::Markdown => "resnet\\\\n## Injected heading",
            Format::Pretty | Format::Csv | Format::Html | Format::Json => {
                "resnet\\n## Injected heading"
            }
        };
        assert!(text.contains(shown), "{format:?}: {text}");
    }
}
