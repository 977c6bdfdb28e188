//! Charts of batch sweeps ([`crate::sweep`]): throughput against batch size and latency
//! against batch size side by side, one line per configuration, error bars from the 95%
//! confidence interval of the median. The batch axis is logarithmic (base 2), as sweeps
//! double the batch; latency goes on a log axis when it spans more than a factor of 30.

use super::plot::{self, draw, line_colour, Axes, Chart};
use crate::fmt::slug;
use crate::sweep::Sweep;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Latency spanning more than this factor goes on a log axis.
const LOG_AXIS_SPAN: f64 = 30.0;

const PANEL_HEIGHT: u32 = 430;

fn number(v: f64) -> String {
    if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The batch axis runs over log2(batch); labels at whole powers of two.
fn batch_label(x: &f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{}", 2f64.powi(x.round() as i32) as u64)
    } else {
        String::new()
    }
}

fn batch_range(sweep: &Sweep) -> (f64, f64) {
    let lo = sweep.batches.first().copied().unwrap_or(1).max(1) as f64;
    let hi = sweep.batches.last().copied().unwrap_or(1).max(1) as f64;
    (lo.log2() - 0.3, hi.log2() + 0.3)
}

/// One panel: `value` of every point with its interval, per series.
#[allow(clippy::too_many_arguments)]
fn panel<DB, YR>(
    area: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
    caption: &str,
    y_desc: &str,
    y_range: YR,
    value: &dyn Fn(&crate::sweep::SweepPoint) -> (f64, f64, f64),
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    YR: AsRangedCoord<Value = f64>,
    YR::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let (x0, x1) = batch_range(sweep);
    let lo = x0.ceil() as i64;
    let hi = x1.floor() as i64;
    let axes = Axes {
        x_desc: "batch size (log scale)",
        y_desc,
        x_labels: ((hi - lo + 1).max(2)) as usize,
        x_label: &batch_label,
        y_label: &|v| number(*v),
    };
    let mut chart = plot::line_panel(area, caption, x0..x1, y_range, &axes)?;
    for (i, s) in sweep.series.iter().enumerate() {
        let colour = line_colour(i);
        let pts: Vec<(f64, f64, f64, f64)> = s
            .points
            .iter()
            .map(|p| {
                let (v, a, b) = value(p);
                ((p.batch as f64).log2(), v, a.min(b), a.max(b))
            })
            .filter(|(_, v, a, b)| v.is_finite() && a.is_finite() && b.is_finite() && *v > 0.0)
            .collect();
        // Error bars: a vertical line and two caps, in data coordinates (the caps are
        // ±0.06 of a doubling wide).
        let bars = pts.iter().flat_map(|&(x, _, a, b)| {
            let a = a.max(f64::MIN_POSITIVE);
            [
                vec![(x, a), (x, b)],
                vec![(x - 0.06, a), (x + 0.06, a)],
                vec![(x - 0.06, b), (x + 0.06, b)],
            ]
        });
        draw!(chart.draw_series(bars.map(|line| PathElement::new(line, colour.stroke_width(1)))));
        // The line in the bars' colour over them, then the dots on top.
        let line: Vec<(f64, f64)> = pts.iter().map(|&(x, v, _, _)| (x, v)).collect();
        plot::draw_line_with_dots(&mut chart, &line, colour)?;
    }
    Ok(())
}

fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
) -> anyhow::Result<()> {
    let title = format!(
        "{} — throughput and latency against batch size (error bars: 95% CI of the median)",
        sweep.title()
    );
    let (left, right, legend) = plot::two_panels(root, PANEL_HEIGHT, &title)?;

    let mut tp_hi = 0f64;
    let (mut lat_lo, mut lat_hi) = (f64::INFINITY, 0f64);
    let mut latencies = Vec::new();
    for s in &sweep.series {
        for p in &s.points {
            if p.images_per_s_ci.1.is_finite() {
                tp_hi = tp_hi.max(p.images_per_s_ci.1).max(p.images_per_s);
            }
            lat_lo = lat_lo.min(p.latency_ci_s.0 * 1e3).min(p.latency_s * 1e3);
            lat_hi = lat_hi.max(p.latency_ci_s.1 * 1e3);
            latencies.extend([p.latency_ci_s.0, p.latency_s, p.latency_ci_s.1].map(|v| v * 1e3));
        }
    }
    let tp_hi = if tp_hi > 0.0 { tp_hi * 1.12 } else { 1.0 };
    panel(
        &left,
        sweep,
        "Throughput",
        "images/s (median)",
        0f64..tp_hi,
        &|p| (p.images_per_s, p.images_per_s_ci.0, p.images_per_s_ci.1),
    )?;
    let latency = |p: &crate::sweep::SweepPoint| {
        (
            p.latency_s * 1e3,
            p.latency_ci_s.0 * 1e3,
            p.latency_ci_s.1 * 1e3,
        )
    };
    if lat_lo > 0.0 && lat_lo.is_finite() && lat_hi / lat_lo > LOG_AXIS_SPAN {
        let y = plot::log_range(latencies, 1.5, 1.5);
        panel(
            &right,
            sweep,
            "Latency of a batch",
            "ms per batch (median, log scale)",
            y.clone().log_scale(),
            &|p| {
                let (v, a, b) = latency(p);
                let at = |v| plot::clamp_to(&y, v);
                (at(v), at(a), at(b))
            },
        )?;
    } else {
        let hi = if lat_hi > 0.0 { lat_hi * 1.12 } else { 1.0 };
        panel(
            &right,
            sweep,
            "Latency of a batch",
            "ms per batch (median)",
            0f64..hi,
            &latency,
        )?;
    }
    for (i, s) in sweep.series.iter().enumerate() {
        plot::draw_legend_entry(&legend, i, line_colour(i), &s.config)?;
    }
    draw!(root.present());
    Ok(())
}

impl Chart for Sweep {
    fn size(&self) -> (u32, u32) {
        plot::two_panel_size(PANEL_HEIGHT, self.series.len().max(1))
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_sweep(root, self)
    }
}

/// The chart of one sweep as an SVG document.
pub fn sweep_svg(sweep: &Sweep) -> anyhow::Result<String> {
    plot::svg(sweep)
}

/// The file stem of a sweep's chart: `sweep-resnet-50-3x224x224-infer`.
pub fn sweep_stem(sweep: &Sweep) -> String {
    let [c, h, w] = sweep.input;
    format!("sweep-{}-{c}x{h}x{w}-{}", slug(&sweep.model), sweep.mode)
}

/// Writes every sweep's chart into `dir` (created if needed) as SVG and PNG; returns
/// the files written.
pub fn write_sweep_charts(sweeps: &[Sweep], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    plot::write_all(sweeps, dir, sweep_stem)
}
