//! Charts of batch sweeps ([`crate::sweep`]): throughput against batch size and latency
//! against batch size side by side, one line per configuration, error bars from the 95%
//! confidence interval of the median. The batch axis is logarithmic (base 2), as sweeps
//! double the batch; latency goes on a log axis when it spans more than a factor of 30.
//! SVG and PNG, with the bundled font.

use crate::fmt::slug;
use crate::sweep::{Sweep, SweepSeries};
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
const FONT_NAME: &str = "sans-serif";

/// Line colours: dark, distinct, readable on white.
const COLOURS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x3a, 0x93),
    RGBColor(0xb3, 0x1b, 0x1b),
    RGBColor(0x1b, 0x7a, 0x3a),
    RGBColor(0x6a, 0x3d, 0x9a),
    RGBColor(0xe0, 0x6c, 0x00),
    RGBColor(0x17, 0x9e, 0xaf),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x4d, 0x4d, 0x4d),
];

/// Latency spanning more than this factor goes on a log axis.
const LOG_AXIS_SPAN: f64 = 30.0;

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

const WIDTH: u32 = 1100;
const PANEL_HEIGHT: u32 = 430;
const LEGEND_ROW: u32 = 22;

fn size(sweep: &Sweep) -> (u32, u32) {
    (
        WIDTH,
        PANEL_HEIGHT + 40 + 16 + LEGEND_ROW * sweep.series.len().max(1) as u32,
    )
}

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
    let mut chart = draw!(ChartBuilder::on(area)
        .caption(caption, (FONT_NAME, 16))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y_range));
    let lo = x0.ceil() as i64;
    let hi = x1.floor() as i64;
    draw!(chart
        .configure_mesh()
        .x_labels(((hi - lo + 1).max(2)) as usize)
        .x_label_formatter(&batch_label)
        .y_label_formatter(&|v| number(*v))
        .x_desc("batch size (log scale)")
        .y_desc(y_desc)
        .label_style((FONT_NAME, 12))
        .axis_desc_style((FONT_NAME, 13))
        .draw());
    for (i, s) in sweep.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let pts: Vec<(f64, f64, f64, f64)> = s
            .points
            .iter()
            .map(|p| {
                let (v, a, b) = value(p);
                ((p.batch as f64).log2(), v, a.min(b), a.max(b))
            })
            .filter(|(_, v, a, b)| v.is_finite() && a.is_finite() && b.is_finite() && *v > 0.0)
            .collect();
        draw!(chart.draw_series(LineSeries::new(
            pts.iter().map(|&(x, v, _, _)| (x, v)),
            colour.stroke_width(2),
        )));
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
        draw!(
            chart.draw_series(pts.iter().map(|&(x, v, _, _)| Circle::new(
                (x, v),
                4,
                colour.filled()
            )))
        );
    }
    Ok(())
}

fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
) -> anyhow::Result<()> {
    draw!(root.fill(&WHITE));
    let (top, legend) = root.split_vertically(PANEL_HEIGHT + 40);
    let title = format!(
        "{} — throughput and latency against batch size (error bars: 95% CI of the median)",
        sweep.title()
    );
    let top = draw!(top.titled(&title, (FONT_NAME, 17)));
    let (left, right) = top.split_horizontally(WIDTH / 2);

    let mut tp_hi = 0f64;
    let (mut lat_lo, mut lat_hi) = (f64::INFINITY, 0f64);
    for s in &sweep.series {
        for p in &s.points {
            if p.images_per_s_ci.1.is_finite() {
                tp_hi = tp_hi.max(p.images_per_s_ci.1).max(p.images_per_s);
            }
            lat_lo = lat_lo.min(p.latency_ci_s.0 * 1e3).min(p.latency_s * 1e3);
            lat_hi = lat_hi.max(p.latency_ci_s.1 * 1e3);
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
        panel(
            &right,
            sweep,
            "Latency of a batch",
            "ms per batch (median, log scale)",
            (lat_lo / 1.5..lat_hi * 1.5).log_scale(),
            &latency,
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
    draw_legend(&legend, &sweep.series)?;
    draw!(root.present());
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    series: &[SweepSeries],
) -> anyhow::Result<()> {
    let style = TextStyle::from((FONT_NAME, 13).into_font());
    for (i, s) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let y = 8 + LEGEND_ROW as i32 * i as i32 + LEGEND_ROW as i32 / 2;
        draw!(area.draw(&PathElement::new(
            vec![(80, y), (110, y)],
            colour.stroke_width(2)
        )));
        draw!(area.draw(&Circle::new((95, y), 4, colour.filled())));
        draw!(area.draw(&Text::new(s.config.clone(), (120, y - 7), style.clone())));
    }
    Ok(())
}

/// The chart of one sweep as an SVG document.
pub fn sweep_svg(sweep: &Sweep) -> anyhow::Result<String> {
    ensure_font()?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, size(sweep)).into_drawing_area();
        draw_sweep(&root, sweep)?;
    }
    Ok(buf)
}

/// The file stem of a sweep's chart: `sweep-resnet-50-3x224x224-infer`.
pub fn sweep_stem(sweep: &Sweep) -> String {
    let [c, h, w] = sweep.input;
    format!("sweep-{}-{c}x{h}x{w}-{}", slug(&sweep.model), sweep.mode)
}

/// Writes every sweep's chart into `dir` (created if needed) as SVG and PNG; returns
/// the files written.
pub fn write_sweep_charts(sweeps: &[Sweep], dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    if sweeps.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the chart folder {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for sweep in sweeps {
        let stem = sweep_stem(sweep);
        let svg = dir.join(format!("{stem}.svg"));
        std::fs::write(&svg, sweep_svg(sweep)?)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", svg.display()))?;
        written.push(svg);
        let png = dir.join(format!("{stem}.png"));
        {
            let root = BitMapBackend::new(&png, size(sweep)).into_drawing_area();
            draw_sweep(&root, sweep)?;
        }
        written.push(png);
    }
    Ok(written)
}
