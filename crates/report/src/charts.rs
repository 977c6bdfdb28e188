//! Charts with plotters: per table a bar chart of total time per configuration
//! (forward, backward and update stacked, error bars from the spread) and one
//! overview of time per model across configurations. SVG always, PNG beside it;
//! text in PNGs uses a bundled font, so no system library or font is needed.

use crate::fmt::{natural_cmp, slug};
use crate::group::{Entry, Stat};
use crate::report::Report;
use crate::table::Table;
use cnnbench_results::Quantity;
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");
const FONT_NAME: &str = "sans-serif";

/// Phase colours (forward, backward, update) and the series palette (ten dark
/// colours, then Tableau 10).
const PHASES: [(Quantity, RGBColor); 3] = [
    (Quantity::Forward, RGBColor(0x4e, 0x79, 0xa7)),
    (Quantity::Backward, RGBColor(0xf2, 0x8e, 0x2b)),
    (Quantity::Update, RGBColor(0x59, 0xa1, 0x4f)),
];
const PALETTE: [RGBColor; 20] = [
    RGBColor(0x1f, 0x3a, 0x93),
    RGBColor(0xb3, 0x1b, 0x1b),
    RGBColor(0x1b, 0x7a, 0x3a),
    RGBColor(0x6a, 0x3d, 0x9a),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xd6, 0x3c, 0xa0),
    RGBColor(0x4d, 0x4d, 0x4d),
    RGBColor(0x9a, 0x9a, 0x1a),
    RGBColor(0x17, 0x9e, 0xaf),
    RGBColor(0xe0, 0x6c, 0x00),
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

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

/// The spread drawn as an error bar around the statistic, in seconds: ± one
/// standard deviation around the mean, the median's 95% confidence interval around
/// the median, and min to median for the minimum.
pub fn spread(e: &Entry, stat: Stat) -> Option<(f64, f64)> {
    let s = e.summaries.get(&Quantity::Total)?;
    let v = e.value(Quantity::Total, stat)?;
    Some(match stat {
        Stat::Mean => ((v - s.std).max(0.0), v + s.std),
        Stat::Median => (s.median_ci95[0], s.median_ci95[1]),
        Stat::Min => (s.min, s.median),
    })
}

fn spread_name(stat: Stat) -> &'static str {
    match stat {
        Stat::Mean => "error bars: ± 1 std",
        Stat::Median => "error bars: 95% CI of the median",
        Stat::Min => "error bars: min to median",
    }
}

fn table_size(rows: usize) -> (u32, u32) {
    (960, 110 + 34 * rows.max(1) as u32 + 40)
}

/// Totals spanning more than this factor are drawn on a log axis, so that a CPU row
/// does not flatten every GPU row.
const LOG_AXIS_SPAN: f64 = 30.0;

fn draw_table<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
    t: &Table,
) -> anyhow::Result<()> {
    let stat = report.stat;
    let rows: Vec<&Entry> = report.rows(t).collect();
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    for e in &rows {
        let v = e.value(Quantity::Total, stat).unwrap_or(0.0) * 1000.0;
        let (a, b) = spread(e, stat).map_or((v, v), |s| (s.0 * 1000.0, s.1 * 1000.0));
        if v > 0.0 {
            lo = lo.min(v).min(if a > 0.0 { a } else { v });
            // The first phase's segment must show on a log axis too.
            let first = e.value(Quantity::Forward, stat).map_or(v, |f| f * 1000.0);
            if first > 0.0 {
                lo = lo.min(first);
            }
        }
        hi = hi.max(v).max(b);
    }
    if hi <= 0.0 || !lo.is_finite() {
        return draw_table_on(root, report, t, 0f64..1.0, 0.0, false);
    }
    if hi / lo > LOG_AXIS_SPAN {
        let x0 = lo / 2.0;
        draw_table_on(root, report, t, (x0..hi * 2.5).log_scale(), x0, true)
    } else {
        draw_table_on(root, report, t, 0f64..hi * 1.15, 0.0, false)
    }
}

fn axis_label(v: &f64) -> String {
    if *v >= 10.0 || *v == 0.0 {
        format!("{v:.0}")
    } else if *v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Draws the bars on either axis. Segment boundaries sit at cumulative times
/// (forward, forward + backward, …), scaled so the bar ends at the total's statistic.
fn draw_table_on<DB, XR>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
    t: &Table,
    x_range: XR,
    x0: f64,
    log: bool,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    XR: AsRangedCoord<Value = f64>,
    XR::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    draw!(root.fill(&WHITE));
    let rows: Vec<&Entry> = report.rows(t).collect();
    let n = rows.len().max(1);
    let stat = report.stat;
    let names: Vec<String> = rows.iter().map(|e| e.config_name()).collect();
    let label_w = names
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(10)
        .clamp(10, 52) as u32
        * 7
        + 16;
    let title = format!(
        "{} — input {}, {}",
        t.title,
        crate::group::input_desc(&t.key),
        t.key.mode
    );
    let mut chart = draw!(ChartBuilder::on(root)
        .caption(title, (FONT_NAME, 18))
        .margin(14)
        .margin_left(label_w)
        .margin_right(70)
        .x_label_area_size(44)
        .y_label_area_size(0)
        .build_cartesian_2d(x_range, 0f64..n as f64));
    let scale = if log { "log scale; " } else { "" };
    draw!(chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_label_formatter(&axis_label)
        .x_desc(format!(
            "time per pass, ms ({scale}{}; {})",
            stat.as_str(),
            spread_name(stat)
        ))
        .label_style((FONT_NAME, 12))
        .axis_desc_style((FONT_NAME, 13))
        .draw());
    let label_style =
        TextStyle::from((FONT_NAME, 13).into_font()).pos(Pos::new(HPos::Right, VPos::Center));
    let value_style =
        TextStyle::from((FONT_NAME, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let mut legend_done = [false; 3];
    for (i, e) in rows.iter().enumerate() {
        // Fastest on top.
        let y0 = (n - 1 - i) as f64;
        let (lo, hi) = (y0 + 0.18, y0 + 0.82);
        let yc = y0 + 0.5;
        let total = e.value(Quantity::Total, stat).unwrap_or(0.0) * 1000.0;
        let parts: Vec<(usize, f64)> = PHASES
            .iter()
            .enumerate()
            .filter_map(|(k, (q, _))| e.value(*q, stat).map(|v| (k, v)))
            .collect();
        let sum: f64 = parts.iter().map(|p| p.1).sum();
        let mut cumulative = 0.0;
        let mut x = x0;
        for (k, v) in parts {
            cumulative += if sum > 0.0 { total * v / sum } else { 0.0 };
            let end = cumulative.max(x0);
            let color = PHASES[k].1;
            let series = draw!(chart.draw_series(std::iter::once(Rectangle::new(
                [(x, lo), (end, hi)],
                color.filled()
            ))));
            if !legend_done[k] {
                legend_done[k] = true;
                series.label(PHASES[k].0.as_str()).legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
            }
            x = end;
        }
        let mut right = total;
        if let Some((a, b)) = spread(e, stat) {
            let (a, b) = ((a * 1000.0).max(x0), b * 1000.0);
            right = right.max(b);
            let style = BLACK.stroke_width(1);
            draw!(chart.draw_series([
                PathElement::new(vec![(a, yc), (b, yc)], style),
                PathElement::new(vec![(a, yc - 0.12), (a, yc + 0.12)], style),
                PathElement::new(vec![(b, yc - 0.12), (b, yc + 0.12)], style),
            ]));
        }
        let (px, py) = chart.backend_coord(&(x0, yc));
        draw!(root.draw(&Text::new(
            names[i].clone(),
            (px - 8, py),
            label_style.clone()
        )));
        let (vx, vy) = chart.backend_coord(&(right, yc));
        draw!(root.draw(&Text::new(
            crate::fmt::ms(total / 1000.0),
            (vx + 6, vy),
            value_style.clone()
        )));
    }
    draw!(chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT_NAME, 12))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw());
    draw!(root.present());
    Ok(())
}

/// Per configuration: `(name, [(table index, total seconds)])`.
fn series(report: &Report) -> Vec<(String, Vec<(usize, f64)>)> {
    let mut out: Vec<(String, Vec<(usize, f64)>)> = Vec::new();
    for (ti, t) in report.tables.iter().enumerate() {
        for e in report.rows(t) {
            let Some(v) = e.value(Quantity::Total, report.stat) else {
                continue;
            };
            let name = e.config_name();
            match out.iter_mut().find(|s| s.0 == name) {
                Some(s) => {
                    if !s.1.iter().any(|p| p.0 == ti) {
                        s.1.push((ti, v));
                    }
                }
                None => out.push((name, vec![(ti, v)])),
            }
        }
    }
    out.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    out
}

fn overview_size(report: &Report) -> (u32, u32) {
    let m = report.tables.len() as u32;
    let configs = series(report).len() as u32;
    let legend_w = 330;
    ((110 * m).max(640) + legend_w, (520).max(90 + 22 * configs))
}

fn draw_overview<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
) -> anyhow::Result<()> {
    draw!(root.fill(&WHITE));
    let (w, _) = root.dim_in_pixel();
    let (plot, legend) = root.split_horizontally(w.saturating_sub(330));
    let all = series(report);
    let m = report.tables.len().max(1);
    let values: Vec<f64> = all
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.1 * 1000.0))
        .filter(|v| *v > 0.0)
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(0.0, f64::max);
    let (lo, hi) = if values.is_empty() {
        (1.0, 10.0)
    } else {
        (lo / 1.5, hi * 1.5)
    };
    let mut chart = draw!(ChartBuilder::on(&plot)
        .caption(
            format!(
                "Total time per pass by model ({}, log scale)",
                report.stat.as_str()
            ),
            (FONT_NAME, 18)
        )
        .margin(14)
        .x_label_area_size(70)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..m as f64, (lo..hi).log_scale()));
    draw!(chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("time per pass, ms")
        .y_label_formatter(&|v| if *v >= 10.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        })
        .label_style((FONT_NAME, 12))
        .axis_desc_style((FONT_NAME, 13))
        .draw());
    let x_style =
        TextStyle::from((FONT_NAME, 12).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, t) in report.tables.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64 + 0.5, lo));
        let mut name = t.title.clone();
        if report.tables.iter().filter(|u| u.title == t.title).count() > 1 {
            name = format!("{name} ({}x{})", t.key.input[1], t.key.input[2]);
        }
        draw!(plot.draw(&Text::new(name, (px, py + 8), x_style.clone())));
    }
    let legend_style =
        TextStyle::from((FONT_NAME, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (k, (name, points)) in all.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let style = if k < PALETTE.len() {
            color.stroke_width(2)
        } else {
            color.stroke_width(1)
        };
        let mut pts: Vec<(usize, f64)> = points.clone();
        pts.sort_by_key(|p| p.0);
        // Lines join neighbouring models only; a missing model breaks the line.
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut prev: Option<usize> = None;
        for &(ti, v) in &pts {
            if prev.is_some_and(|p| p + 1 != ti) && run.len() > 1 {
                draw!(chart.draw_series(LineSeries::new(run.clone(), style)));
            }
            if prev.is_some_and(|p| p + 1 != ti) {
                run.clear();
            }
            run.push((ti as f64 + 0.5, v * 1000.0));
            prev = Some(ti);
        }
        if run.len() > 1 {
            draw!(chart.draw_series(LineSeries::new(run, style)));
        }
        // The second ten colours come with triangles, so no two series look alike.
        let y = 40 + 22 * k as i32;
        let at = |&(ti, v): &(usize, f64)| (ti as f64 + 0.5, v * 1000.0);
        if (k / 10) % 2 == 0 {
            draw!(chart.draw_series(pts.iter().map(|p| Circle::new(at(p), 4, color.filled()))));
            draw!(legend.draw(&Circle::new((12, y), 5, color.filled())));
        } else {
            draw!(chart.draw_series(pts.iter().map(|p| TriangleMarker::new(
                at(p),
                6,
                color.filled()
            ))));
            draw!(legend.draw(&TriangleMarker::new((12, y), 6, color.filled())));
        }
        let short: String = if name.chars().count() > 44 {
            name.chars().take(43).collect::<String>() + "…"
        } else {
            name.clone()
        };
        draw!(legend.draw(&Text::new(short, (24, y), legend_style.clone())));
    }
    draw!(root.present());
    Ok(())
}

/// The bar chart of one table as an SVG document.
pub fn table_svg(report: &Report, t: &Table) -> anyhow::Result<String> {
    ensure_font()?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, table_size(t.rows.len())).into_drawing_area();
        draw_table(&root, report, t)?;
    }
    Ok(buf)
}

/// The overview chart (time per model across configurations) as an SVG document.
pub fn overview_svg(report: &Report) -> anyhow::Result<String> {
    ensure_font()?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, overview_size(report)).into_drawing_area();
        draw_overview(&root, report)?;
    }
    Ok(buf)
}

/// The file stem of a table's chart: `resnet-50-16x3x224x224-train`.
pub fn chart_stem(t: &Table) -> String {
    let k = &t.key;
    format!(
        "{}-{}x{}x{}x{}-{}",
        slug(&t.title),
        k.batch_size,
        k.input[0],
        k.input[1],
        k.input[2],
        k.mode
    )
}

/// Writes every chart into `dir` (created if needed) as SVG and PNG; returns the
/// files written.
pub fn write_charts(report: &Report, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the chart folder {}: {e}", dir.display()))?;
    let mut written = Vec::new();
    let write = |path: PathBuf, text: &str, written: &mut Vec<PathBuf>| -> anyhow::Result<()> {
        std::fs::write(&path, text)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
        written.push(path);
        Ok(())
    };
    let mut stems: Vec<String> = Vec::new();
    for t in &report.tables {
        let mut stem = chart_stem(t);
        while stems.contains(&stem) {
            stem.push('_');
        }
        stems.push(stem.clone());
        write(
            dir.join(format!("{stem}.svg")),
            &table_svg(report, t)?,
            &mut written,
        )?;
        let png = dir.join(format!("{stem}.png"));
        {
            let root = BitMapBackend::new(&png, table_size(t.rows.len())).into_drawing_area();
            draw_table(&root, report, t)?;
        }
        written.push(png);
    }
    if !report.tables.is_empty() {
        write(
            dir.join("overview.svg"),
            &overview_svg(report)?,
            &mut written,
        )?;
        let png = dir.join("overview.png");
        {
            let root = BitMapBackend::new(&png, overview_size(report)).into_drawing_area();
            draw_overview(&root, report)?;
        }
        written.push(png);
    }
    Ok(written)
}
