//! Charts of data-parallel scaling ([`crate::scaling`]): images/s against the number of
//! ranks beside the linear ideal (dashed), and the efficiency, one line per
//! configuration.

use super::plot::{self, draw, line_colour, Axes, Chart};
use crate::fmt::slug;
use crate::scaling::{Scaling, ScalingPoint};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const PANEL_HEIGHT: u32 = 400;

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
    let ticks: Vec<usize> = scaling.world_sizes.clone();
    let rank_label = |x: &f64| {
        let n = x.round();
        if (x - n).abs() < 1e-6 && ticks.contains(&(n as usize)) {
            format!("{n:.0}")
        } else {
            String::new()
        }
    };
    let axes = Axes {
        x_desc: "ranks (processes)",
        y_desc,
        x_labels: max_n as usize + 1,
        x_label: &rank_label,
        y_label: &|v| format!("{v:.0}"),
    };
    let mut chart = plot::line_panel(area, caption, 0.5f64..max_n + 0.5, 0f64..y_max, &axes)?;
    for (i, s) in scaling.series.iter().enumerate() {
        let colour = line_colour(i);
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
        plot::draw_line_with_dots(&mut chart, &pts, colour)?;
    }
    Ok(())
}

fn draw_scaling<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    scaling: &Scaling,
) -> anyhow::Result<()> {
    let title = format!("{} — data-parallel scaling", scaling.title());
    let (left, right, legend) = plot::two_panels(root, PANEL_HEIGHT, &title)?;
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
    for (i, s) in scaling.series.iter().enumerate() {
        plot::draw_legend_entry(area, i, line_colour(i), &s.config)?;
    }
    let y = plot::legend_row_y(scaling.series.len());
    for x in [80, 92, 104] {
        draw!(area.draw(&PathElement::new(
            vec![(x, y), (x + 6, y)],
            BLACK.mix(0.6).stroke_width(1)
        )));
    }
    draw!(area.draw(&Text::new(
        "linear scaling from the fewest ranks (dashed)",
        (120, y - 7),
        plot::legend_style()
    )));
    Ok(())
}

impl Chart for Scaling {
    fn size(&self) -> (u32, u32) {
        // One legend row per series and one for the ideal line.
        plot::two_panel_size(PANEL_HEIGHT, self.series.len() + 1)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_scaling(root, self)
    }
}

/// The chart of one scaling as an SVG document.
pub fn scaling_svg(scaling: &Scaling) -> anyhow::Result<String> {
    plot::svg(scaling)
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
    plot::write_all(scalings, dir, scaling_stem)
}
