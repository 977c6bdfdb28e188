//! Charts of data-parallel scaling ([`crate::scaling`]): images/s against the number of
//! ranks beside the linear ideal (dashed), and the efficiency, one line per
//! configuration. SVG and PNG, with the bundled font.

use crate::fmt::slug;
use crate::scaling::{Scaling, ScalingPoint};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
const FONT_NAME: &str = "sans-serif";

/// Line colours: dark, distinct, readable on white (as the sweep charts').
const COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x3a, 0x93),
    RGBColor(0xb3, 0x1b, 0x1b),
    RGBColor(0x1b, 0x7a, 0x3a),
    RGBColor(0x6a, 0x3d, 0x9a),
    RGBColor(0xe0, 0x6c, 0x00),
    RGBColor(0x4d, 0x4d, 0x4d),
];

const WIDTH: u32 = 1100;
const PANEL_HEIGHT: u32 = 400;
const LEGEND_ROW: u32 = 22;

fn ensure_font() -> anyhow::Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FONT_NAME, FontStyle::Normal, FONT)
            .map_err(|_| "the bundled chart font is unreadable".to_string())
    })
    .clone()
    .map_err(|e| anyhow::anyhow!(e))
}

macro_rules! draw {
    ($e:expr) => {
        $e.map_err(|e| anyhow::anyhow!("drawing a chart failed: {e}"))?
    };
}

fn size(scaling: &Scaling) -> (u32, u32) {
    // One legend row per series and one for the ideal line.
    let rows = scaling.series.len() as u32 + 1;
    (WIDTH, PANEL_HEIGHT + 40 + 16 + LEGEND_ROW * rows)
}

/// The ideal throughput of a series at a number of ranks.
type IdealLine = dyn Fn(&crate::scaling::ScalingSeries, usize) -> f64;

/// One panel: `value` of each point per series, and `ideal` (dashed) where given.
fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scaling: &Scaling,
    caption: &str,
    y_desc: &str,
    y_max: f64,
    value: &dyn Fn(&ScalingPoint) -> f64,
    ideal: Option<&IdealLine>,
) -> anyhow::Result<()> {
    let max_n = scaling.world_sizes.last().copied().unwrap_or(1) as f64;
    let mut chart = draw!(ChartBuilder::on(area)
        .caption(caption, (FONT_NAME, 16))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0.5f64..max_n + 0.5, 0f64..y_max));
    let ticks: Vec<usize> = scaling.world_sizes.clone();
    draw!(chart
        .configure_mesh()
        .x_labels(max_n as usize + 1)
        .x_label_formatter(&|x| {
            let n = x.round();
            if (x - n).abs() < 1e-6 && ticks.contains(&(n as usize)) {
                format!("{n:.0}")
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("ranks (processes)")
        .y_desc(y_desc)
        .label_style((FONT_NAME, 12))
        .axis_desc_style((FONT_NAME, 13))
        .draw());
    for (i, s) in scaling.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        if let Some(ideal) = ideal {
            let line: Vec<(f64, f64)> = scaling
                .world_sizes
                .iter()
                .filter(|&&n| n >= s.points[0].world_size)
                .map(|&n| (n as f64, ideal(s, n)))
                .collect();
            draw!(chart.draw_series(DashedLineSeries::new(
                line,
                6,
                4,
                colour.mix(0.6).stroke_width(1)
            )));
        }
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|p| (p.world_size as f64, value(p)))
            .filter(|(_, v)| v.is_finite())
            .collect();
        draw!(chart.draw_series(LineSeries::new(pts.clone(), colour.stroke_width(2))));
        draw!(chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, colour.filled()))));
    }
    Ok(())
}

fn draw_scaling<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    scaling: &Scaling,
) -> anyhow::Result<()> {
    draw!(root.fill(&WHITE));
    let (top, legend) = root.split_vertically(PANEL_HEIGHT + 40);
    let title = format!("{} — data-parallel scaling", scaling.title());
    let top = draw!(top.titled(&title, (FONT_NAME, 17)));
    let (left, right) = top.split_horizontally(WIDTH / 2);
    // The linear ideal: the fewest ranks' throughput per rank, times N.
    let ideal = |s: &crate::scaling::ScalingSeries, n: usize| {
        let base = &s.points[0];
        base.images_per_s / base.world_size as f64 * n as f64
    };
    let mut tp_max = 0f64;
    for s in &scaling.series {
        for p in &s.points {
            tp_max = tp_max.max(p.images_per_s);
        }
        if let Some(n) = scaling.world_sizes.last() {
            tp_max = tp_max.max(ideal(s, *n));
        }
    }
    panel(
        &left,
        scaling,
        "Throughput",
        "images/s, all ranks",
        (tp_max * 1.12).max(1.0),
        &|p| p.images_per_s,
        Some(&ideal),
    )?;
    let eff_max = scaling
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.efficiency * 100.0))
        .fold(100f64, f64::max);
    panel(
        &right,
        scaling,
        "Efficiency",
        "% of linear scaling",
        eff_max * 1.12,
        &|p| p.efficiency * 100.0,
        None,
    )?;
    draw_legend(&legend, scaling)?;
    draw!(root.present());
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    scaling: &Scaling,
) -> anyhow::Result<()> {
    let style = TextStyle::from((FONT_NAME, 13).into_font());
    let row_y = |i: usize| 8 + LEGEND_ROW as i32 * i as i32 + LEGEND_ROW as i32 / 2;
    for (i, s) in scaling.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let y = row_y(i);
        draw!(area.draw(&PathElement::new(
            vec![(80, y), (110, y)],
            colour.stroke_width(2)
        )));
        draw!(area.draw(&Circle::new((95, y), 4, colour.filled())));
        draw!(area.draw(&Text::new(s.config.clone(), (120, y - 7), style.clone())));
    }
    let y = row_y(scaling.series.len());
    for x in [80, 92, 104] {
        draw!(area.draw(&PathElement::new(
            vec![(x, y), (x + 6, y)],
            BLACK.mix(0.6).stroke_width(1)
        )));
    }
    draw!(area.draw(&Text::new(
        "linear scaling from the fewest ranks (dashed)",
        (120, y - 7),
        style
    )));
    Ok(())
}

/// The chart of one scaling as an SVG document.
pub fn scaling_svg(scaling: &Scaling) -> anyhow::Result<String> {
    ensure_font()?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size(scaling)).into_drawing_area();
        draw_scaling(&root, scaling)?;
    }
    Ok(buf)
}

/// The file stem of a scaling chart: `scaling-resnet-50-3x224x224-step-b16`.
pub fn scaling_stem(scaling: &Scaling) -> String {
    let [c, h, w] = scaling.input;
    format!(
        "scaling-{}-{c}x{h}x{w}-{}-b{}",
        slug(&scaling.model),
        scaling.mode,
        scaling.batch
    )
}

/// Writes every scaling's chart into `dir` (created if needed) as SVG and PNG; returns
/// the files written.
pub fn write_scaling_charts(scalings: &[Scaling], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    if scalings.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the chart folder {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for scaling in scalings {
        let stem = scaling_stem(scaling);
        let svg = dir.join(format!("{stem}.svg"));
        std::fs::write(&svg, scaling_svg(scaling)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", svg.display()))?;
        written.push(svg);
        let png = dir.join(format!("{stem}.png"));
        {
            let root = BitMapBackend::new(&png, size(scaling)).into_drawing_area();
            draw_scaling(&root, scaling)?;
        }
        written.push(png);
    }
    Ok(written)
}
