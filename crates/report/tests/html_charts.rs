//! The HTML page is well-formed and self-contained; charts are written as SVG and PNG.

mod common;

use cnnbench_report::{charts, Format, Layout, NoCatalog, Report, ReportOptions, SpeedupRequest};
use common::*;

fn report() -> Report {
    let loaded = cnnbench_report::load_paths(
        &[
            legacy_outputs().join("1080Ti"),
            legacy_outputs().join("1080Ti_cudnn51"),
        ],
        true,
    )
    .unwrap();
    let opts = ReportOptions {
        layout: Layout::Legacy,
        speedups: SpeedupRequest::All,
        ..Default::default()
    };
    Report::build(loaded.records, &legacy_aliases(), &NoCatalog, &opts).unwrap()
}

/// Checks that every non-void element is closed in order; returns the tag counts.
fn check_balanced(html: &str) -> std::collections::BTreeMap<String, usize> {
    const VOID: &[&str] = &[
        "meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr",
    ];
    let mut stack: Vec<String> = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    let mut rest = html;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let end = rest.find('>').expect("unclosed <");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') || tag.starts_with('?') {
            continue;
        }
        let self_closing = tag.ends_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect::<String>()
            .to_ascii_lowercase();
        if tag.starts_with('/') {
            let open = stack
                .pop()
                .unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(open, name, "</{name}> closes <{open}>");
        } else if !self_closing && !VOID.contains(&name.as_str()) {
            *counts.entry(name.clone()).or_insert(0) += 1;
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "never closed: {stack:?}");
    counts
}

#[test]
fn html_is_well_formed_and_self_contained() {
    let r = report();
    let html = Format::Html.exporter().render(&r).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    let counts = check_balanced(&html);
    assert_eq!(
        counts["table"],
        1 + r.tables.len(),
        "overview and one per model"
    );
    assert_eq!(
        counts["svg"],
        1 + r.tables.len(),
        "overview chart and one per model"
    );
    assert_eq!(
        counts["section"],
        2 + r.tables.len(),
        "overview, speed-ups, one per model"
    );
    // Nothing is fetched: no scripts, stylesheets, images or fonts from elsewhere.
    for bad in [
        "<script",
        "<link",
        "<img",
        "<iframe",
        "@import",
        "url(",
        "src=",
        "href=\"http",
    ] {
        assert!(!html.contains(bad), "found {bad}");
    }
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(!without_ns.contains("http://") && !without_ns.contains("https://"));
    assert!(html.contains("<td>GTX 1080 Ti</td><td>5.1.10</td><td class=\"num\">34.14</td>"));
    assert!(
        html.contains("is 2.74x to 3.84x faster than GTX 1080 Ti · torch7 nn"),
        "speed-up lines inline"
    );
}

#[test]
fn html_escapes_names() {
    let tmp = tempfile::tempdir().unwrap();
    Run::new("<b>m</b>", "A & B \"GPU\"", vec![1.0, 2.0]).write(tmp.path(), "x.json");
    let loaded = cnnbench_report::load_paths(&[tmp.path().to_path_buf()], true).unwrap();
    let r = Report::build(
        loaded.records,
        &Default::default(),
        &NoCatalog,
        &Default::default(),
    )
    .unwrap();
    let html = Format::Html.exporter().render(&r).unwrap();
    assert!(!html.contains("<b>m</b>"));
    assert!(html.contains("&lt;b&gt;m&lt;/b&gt;") && html.contains("A &amp; B &quot;GPU&quot;"));
    check_balanced(&html);
}

#[test]
fn charts_are_written_as_svg_and_png() {
    let r = report();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("charts/nested");
    let files = charts::write_charts(&r, &dir).unwrap();
    assert_eq!(files.len(), 2 * (r.tables.len() + 1));
    let svg = std::fs::read_to_string(dir.join("resnet-50-16x3x224x224-train.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(
        svg.contains("GTX 1080 Ti · torch7 cuDNN 5.1.10") && svg.contains("101.21"),
        "labels and values"
    );
    assert!(
        svg.contains("forward") && svg.contains("backward"),
        "legend"
    );
    let png = std::fs::read(dir.join("resnet-50-16x3x224x224-train.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 5_000);
    let overview = std::fs::read_to_string(dir.join("overview.svg")).unwrap();
    assert!(overview.contains("resnet-152") && overview.contains("log scale"));
    assert!(std::fs::read(dir.join("overview.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
}
