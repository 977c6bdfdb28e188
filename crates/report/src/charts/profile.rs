//! The charts of a profile ([`crate::profile`]): two horizontal bar charts each (time
//! per op type; the slowest nodes), forward and backward stacked, with the share of time
//! against the share of MACs written beside every bar, so that a reader sees where the
//! time goes and which layers take more than their share of the work; and the HTML
//! section that shows them.

use super::plot::{self, draw, Chart, FONT_NAME};
use crate::fmt::slug;
use crate::profile::LoadedProfile;
use cnnbench_results::profile::ProfileDoc;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const FORWARD: RGBColor = RGBColor(0x4e, 0x79, 0xa7);
const BACKWARD: RGBColor = RGBColor(0xf2, 0x8e, 0x2b);
/// How many nodes the per-node chart shows.
pub const TOP_NODES: usize = 20;

/// One bar: a label, forward and backward milliseconds, the text at its end.
struct Bar {
    label: String,
    forward: f64,
    backward: f64,
    note: String,
}

fn title(doc: &ProfileDoc, what: &str) -> String {
    let [h, w] = doc.config.image_size;
    format!(
        "{} {h}×{w}, batch {}, {} on {}: {what}",
        doc.model.name, doc.config.batch_size, doc.config.mode, doc.engine.name
    )
}

fn op_type_bars(doc: &ProfileDoc) -> Vec<Bar> {
    doc.by_category()
        .into_iter()
        .map(|c| Bar {
            label: format!("{} ({})", c.category, c.nodes),
            forward: c.forward * 1e3,
            backward: c.backward * 1e3,
            note: format!(
                "{:.1}% of time, {:.1}% of MACs",
                c.time_share * 100.0,
                c.macs_share * 100.0
            ),
        })
        .collect()
}

fn node_bars(doc: &ProfileDoc, top: usize) -> Vec<Bar> {
    let total: f64 = doc.nodes.iter().map(|n| n.total_median()).sum();
    // Saturating, as the nodes' counts are: a plain sum wrapped past `u64::MAX`.
    let macs = cnnbench_graph::saturating_sum(doc.nodes.iter().map(|n| n.macs));
    doc.nodes_by_time()
        .into_iter()
        .take(top)
        .map(|n| {
            let mut note = format!(
                "{:.1}% of time, {:.1}% of MACs",
                if total > 0.0 {
                    n.total_median() / total * 100.0
                } else {
                    0.0
                },
                if macs > 0 {
                    n.macs as f64 / macs as f64 * 100.0
                } else {
                    0.0
                }
            );
            if let Some(g) = n.gflops_per_s() {
                let _ = write!(note, ", {g:.1} GFLOP/s");
            }
            Bar {
                label: format!("{} · {}", n.name, n.description),
                forward: n.forward.median * 1e3,
                backward: n.backward.as_ref().map_or(0.0, |b| b.median * 1e3),
                note,
            }
        })
        .collect()
}

/// Pixels for the labels left of the bars and the notes right of them, and the size
/// of the whole chart: the plot keeps 520 px whatever the text needs.
fn layout(bars: &[Bar]) -> (u32, u32, (u32, u32)) {
    let widest = |f: &dyn Fn(&Bar) -> usize| bars.iter().map(f).max().unwrap_or(10);
    let label_w = widest(&|b| b.label.chars().count()).clamp(10, 58) as u32 * 7 + 16;
    // The note is the total ("12.34 ms · ") and the shares.
    let note_w = (widest(&|b| b.note.chars().count()) + 12) as u32 * 7 + 20;
    let size = (
        label_w + 520 + note_w,
        96 + 26 * bars.len().max(1) as u32 + 44,
    );
    (label_w, note_w, size)
}

fn size(bars: &[Bar]) -> (u32, u32) {
    layout(bars).2
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    caption: &str,
    bars: &[Bar],
    with_backward: bool,
) -> anyhow::Result<()> {
    draw!(root.fill(&WHITE));
    let n = bars.len().max(1);
    let (label_w, note_w, _) = layout(bars);
    let hi = bars
        .iter()
        .map(|b| b.forward + b.backward)
        .fold(0.0, f64::max)
        .max(1e-6);
    let mut chart = draw!(ChartBuilder::on(root)
        .caption(caption, (FONT_NAME, 17))
        .margin(14)
        .margin_left(label_w)
        // Room for the note after the longest bar.
        .margin_right(note_w)
        .x_label_area_size(44)
        .y_label_area_size(0)
        .build_cartesian_2d(0f64..hi * 1.02, 0f64..n as f64));
    draw!(chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("median time per pass, ms (each node benchmarked alone)")
        .label_style((FONT_NAME, 12))
        .axis_desc_style((FONT_NAME, 13))
        .draw());
    let label_style =
        TextStyle::from((FONT_NAME, 12).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    let note_style =
        TextStyle::from((FONT_NAME, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut legend = [false, false];
    for (i, b) in bars.iter().enumerate() {
        // The slowest on top.
        let y0 = (n - 1 - i) as f64;
        let (lo, top, yc) = (y0 + 0.15, y0 + 0.85, y0 + 0.5);
        let parts = [
            (b.forward, FORWARD, "forward"),
            (b.backward, BACKWARD, "backward"),
        ];
        let mut x = 0.0;
        for (k, (v, color, name)) in parts.into_iter().enumerate() {
            if k == 1 && !with_backward {
                continue;
            }
            let series = draw!(chart.draw_series(std::iter::once(Rectangle::new(
                [(x, lo), (x + v, top)],
                color.filled()
            ))));
            if !legend[k] {
                legend[k] = true;
                series.label(name).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
            }
            x += v;
        }
        let (px, py) = chart.backend_coord(&(0.0, yc));
        draw!(root.draw(&Text::new(
            b.label.clone(),
            (px - 8, py),
            label_style.clone()
        )));
        let (vx, vy) = chart.backend_coord(&(x, yc));
        draw!(root.draw(&Text::new(
            format!("{:.2} ms · {}", b.forward + b.backward, b.note),
            (vx + 6, vy),
            note_style.clone()
        )));
    }
    draw!(chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font((FONT_NAME, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw());
    draw!(root.present());
    Ok(())
}

/// One of a profile's bar charts: its caption, its bars, and whether they have a
/// backward segment.
struct BarChart {
    caption: String,
    bars: Vec<Bar>,
    with_backward: bool,
}

impl Chart for BarChart {
    fn size(&self) -> (u32, u32) {
        size(&self.bars)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_bars(root, &self.caption, &self.bars, self.with_backward)
    }
}

/// The two charts of a profile, each with the suffix of its file stem.
fn charts_of(doc: &ProfileDoc) -> [(&'static str, BarChart); 2] {
    let top = TOP_NODES.min(doc.nodes.len());
    let with_backward = doc.config.mode == cnnbench_results::Mode::Train;
    [
        (
            "op-types",
            BarChart {
                caption: title(doc, "time per op type"),
                bars: op_type_bars(doc),
                with_backward,
            },
        ),
        (
            "nodes",
            BarChart {
                caption: title(
                    doc,
                    &format!("the {top} slowest of {} nodes", doc.nodes.len()),
                ),
                bars: node_bars(doc, TOP_NODES),
                with_backward,
            },
        ),
    ]
}

/// The roofline chart of a profile whose ceilings were measured.
fn roofline_of(doc: &ProfileDoc) -> Option<super::roofline::RooflineChart> {
    super::roofline::RooflineChart::of(doc, title(doc, "roofline of the forward pass"))
}

/// The file stem of a profile's charts, e.g. `profile-resnet50-burn-flex-b16-224x224-train`.
pub fn stem(doc: &ProfileDoc) -> String {
    let [h, w] = doc.config.image_size;
    format!(
        "profile-{}-{}-b{}-{h}x{w}-{}",
        slug(&doc.model.name),
        slug(&doc.engine.name),
        doc.config.batch_size,
        doc.config.mode
    )
}

/// Writes both charts of every profile into `dir` as SVG and PNG; returns the files.
pub fn write_profile_charts(
    profiles: &[LoadedProfile],
    dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    plot::ensure_font()?;
    plot::create_chart_dir(dir)?;
    let mut written = Vec::new();
    let mut stems: Vec<String> = Vec::new();
    for p in profiles {
        let base = plot::unique_stem(stem(&p.doc), &mut stems);
        for (suffix, chart) in charts_of(&p.doc) {
            plot::write_svg_and_png(&chart, dir, &format!("{base}-{suffix}"), &mut written)?;
        }
        if let Some(chart) = roofline_of(&p.doc) {
            plot::write_svg_and_png(&chart, dir, &format!("{base}-roofline"), &mut written)?;
        }
    }
    Ok(written)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// An HTML `<section>` per profile: what was measured, the sums against the end-to-end
/// time, and both charts inline.
pub fn html_section(profiles: &[LoadedProfile]) -> anyhow::Result<String> {
    let mut out = String::new();
    for p in profiles {
        let d = &p.doc;
        writeln!(
            out,
            "<section>\n<h2>Profile: {}</h2>",
            escape(&title(d, "where the time goes"))
        )?;
        let e = &d.end_to_end;
        let s = &d.sum_of_nodes;
        writeln!(
            out,
            "<p>Sum of nodes {:.2} ms against {:.2} ms end to end in the same run (ratio {:.2}); {} benchmarks for {} nodes. Method: {}.</p>",
            s.total * 1e3,
            e.total.median * 1e3,
            if e.total.median > 0.0 { s.total / e.total.median } else { 0.0 },
            d.benchmarks,
            d.nodes.len(),
            escape(&d.method)
        )?;
        for (_, chart) in charts_of(d) {
            let svg = plot::svg(&chart)?;
            let inline = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
            writeln!(out, "<figure>{inline}</figure>")?;
        }
        if let Some(chart) = roofline_of(d) {
            let svg = plot::svg(&chart)?;
            let inline = svg.find("<svg").map_or(svg.as_str(), |i| &svg[i..]);
            writeln!(out, "<figure>{inline}</figure>")?;
        }
        out.push_str("</section>\n");
    }
    Ok(out)
}

/// Puts `section` at the end of an HTML page's body.
pub fn insert_before_body_end(page: &str, section: &str) -> String {
    match page.rfind("</body>") {
        Some(i) => format!("{}{section}{}", &page[..i], &page[i..]),
        None => format!("{page}{section}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_goes_before_the_end_of_the_body() {
        let page = "<html><body><h1>x</h1></body></html>";
        assert_eq!(
            insert_before_body_end(page, "<section/>"),
            "<html><body><h1>x</h1><section/></body></html>"
        );
    }
}
