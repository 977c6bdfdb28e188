//! The HTML page is well-formed and self-contained; charts are written as SVG and PNG.

mod common;

use cnnbench_report::{
    charts, FamilyPlace, Format, Layout, ModelCatalog, NoCatalog, Report, ReportOptions,
    SpeedupRequest,
};
use common::*;

fn report() -> Report {
    let records = gtx_1080ti_records();
    let opts = ReportOptions {
        layout: Layout::Legacy,
        speedups: SpeedupRequest::All,
        ..Default::default()
    };
    Report::build(records, &legacy_aliases(), &NoCatalog, &opts).unwrap()
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
    let r = report_of(tmp.path());
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
    assert!(!r.speedups.is_empty(), "the fixtures have speed-ups");
    assert_eq!(
        files.len(),
        2 * (r.tables.len() + 2),
        "per model, the overview and the speed-ups"
    );
    let speedups = std::fs::read_to_string(dir.join("speedups.svg")).unwrap();
    assert!(speedups.contains("geometric mean") && speedups.contains("resnet-152"));
    assert!(std::fs::read(dir.join("speedups.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
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
    assert!(
        overview.contains("GTX 1080 Ti · torch7 cuDNN 5.1.10") && !overview.contains('…'),
        "the legend names every configuration in full"
    );
    assert!(std::fs::read(dir.join("overview.png"))
        .unwrap()
        .starts_with(b"\x89PNG"));
}

/// The `y` of every `<text>` element whose content is exactly `content`.
fn text_ys(svg: &str, content: &str) -> Vec<i64> {
    let flat = svg.replace('\n', " ");
    let mut ys = Vec::new();
    let mut rest = flat.as_str();
    while let Some(i) = rest.find("<text ") {
        rest = &rest[i..];
        let Some(open_end) = rest.find('>') else {
            break;
        };
        let tag = &rest[..open_end];
        let Some(close) = rest.find("</text>") else {
            break;
        };
        let text = rest[open_end + 1..close].trim();
        if text == content {
            let y = tag
                .split("y=\"")
                .nth(1)
                .and_then(|t| t.split('"').next())
                .and_then(|t| t.parse::<f64>().ok())
                .expect("a text element has a y");
            ys.push(y as i64);
        }
        rest = &rest[close..];
    }
    ys
}

/// A catalog that puts "zeta" in the first family and "alpha" in the second, the
/// opposite of alphabetical order.
struct FamilyCatalog;

impl ModelCatalog for FamilyCatalog {
    fn canonical_name(&self, name: &str) -> Option<String> {
        Some(name.to_string())
    }
    fn facts(&self, _: &str, _: [usize; 3]) -> Option<cnnbench_report::ModelFacts> {
        None
    }
    fn family(&self, name: &str) -> Option<FamilyPlace> {
        let (family, rank) = match name {
            "zeta" => ("first", 0),
            "mid" => ("first", 1),
            "alpha" => ("second", 2),
            _ => return None,
        };
        Some(FamilyPlace {
            family: family.into(),
            rank,
        })
    }
}

#[test]
fn overview_rows_follow_the_catalog_families_and_nothing_joins_models() {
    let tmp = tempfile::tempdir().unwrap();
    for (i, model) in ["alpha", "mid", "zeta", "unknown"].iter().enumerate() {
        let base = 100.0 * (i + 1) as f64;
        Run::new(model, "CPU A", noisy(base, 5.0, 5, i as u64))
            .write(tmp.path(), &format!("{model}-a.json"));
        let mut b = Run::new(model, "CPU B", noisy(base * 2.0, 5.0, 5, 10 + i as u64));
        b.cpu = "Other CPU";
        b.write(tmp.path(), &format!("{model}-b.json"));
    }
    let loaded = cnnbench_report::load_paths(&[tmp.path().to_path_buf()], true).unwrap();
    let r = Report::build(
        loaded.records,
        &Default::default(),
        &FamilyCatalog,
        &Default::default(),
    )
    .unwrap();
    let svg = charts::overview_svg(&r).unwrap();
    let y = |name: &str| {
        let ys = text_ys(&svg, name);
        assert_eq!(ys.len(), 1, "{name} labelled once: {ys:?}");
        ys[0]
    };
    // Top to bottom: the catalog's order, then models it does not know.
    assert!(y("zeta") < y("mid") && y("mid") < y("alpha") && y("alpha") < y("unknown"));
    // Each family is named once, beside its first model.
    assert_eq!(y("first"), y("zeta"));
    assert_eq!(y("second"), y("alpha"));
    // The legend sits above every row.
    for config in ["CPU A · burn-flex 0.22.1", "CPU B · burn-flex 0.22.1"] {
        assert!(
            y(config) < y("zeta"),
            "legend entry {config} above the plot"
        );
    }
    // A dot plot: markers and straight error bars, no line through several models.
    for line in svg.split("<polyline").skip(1) {
        let points = line
            .split("points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap_or("");
        let ys: std::collections::BTreeSet<&str> = points
            .split_whitespace()
            .filter_map(|p| p.split(',').nth(1))
            .collect();
        assert!(ys.len() <= 2, "a line across rows: {points}");
    }
}

#[test]
fn model_chart_legend_sits_above_the_bars_and_values_inside_the_image() {
    let r = report();
    let t = r
        .tables
        .iter()
        .find(|t| t.title == "resnet-50")
        .expect("resnet-50 in the fixtures");
    let svg = charts::table_svg(&r, t).unwrap();
    let legend = text_ys(&svg, "forward");
    let value = text_ys(&svg, "101.21");
    assert_eq!((legend.len(), value.len()), (1, 1));
    assert!(
        legend[0] + 20 < value[0],
        "legend {legend:?} clear of the top bar's value {value:?}"
    );
    // The value label starts left of the right edge with room for its digits.
    let flat = svg.replace('\n', " ");
    let at = flat.find("101.21").unwrap();
    let tag_start = flat[..at].rfind("<text ").unwrap();
    let x: f64 = flat[tag_start..at]
        .split("x=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap();
    let width: f64 = flat
        .split("width=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .and_then(|t| t.parse().ok())
        .unwrap();
    assert!(
        x + 50.0 < width,
        "value label at x={x} in an image {width} wide"
    );
}

#[test]
fn no_speedup_chart_without_speedups() {
    let tmp = tempfile::tempdir().unwrap();
    Run::new("m", "CPU A", vec![1.0, 2.0]).write(tmp.path(), "x.json");
    let r = report_of(tmp.path());
    assert!(charts::speedups_svg(&r).unwrap().is_none());
    let files = charts::write_charts(&r, &tmp.path().join("charts")).unwrap();
    assert_eq!(files.len(), 4, "one model and the overview: {files:?}");
}
