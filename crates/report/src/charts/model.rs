//! The charts of a report's tables: per table a bar chart of total time per
//! configuration (forward, backward and update stacked, error bars from the spread), one
//! overview, a dot plot of time per model and configuration in family order, and the
//! speed-up overview. Titles and legends sit above the plots, where they cover nothing.

use super::plot::{self, draw, Chart, FONT_NAME};
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

/// Width of every chart: fits a page or a README column without scaling text away.
const CHART_WIDTH: u32 = 900;
/// Height of the title and legend strip above a per-model chart's plot.
const TABLE_HEAD: u32 = 76;

fn table_size(rows: usize) -> (u32, u32) {
    (CHART_WIDTH, TABLE_HEAD + 46 * rows.max(1) as u32 + 70)
}

/// Totals spanning more than this factor are drawn on a log axis, so that a CPU row
/// does not flatten every GPU row.
const LOG_AXIS_SPAN: f64 = 30.0;

fn font(size: u32) -> TextStyle<'static> {
    TextStyle::from((FONT_NAME, size).into_font())
}

/// The width in pixels of `text` in `style`; a rough guess if the backend cannot say.
fn text_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: &TextStyle,
) -> u32 {
    area.estimate_text_size(text, style)
        .map(|(w, _)| w)
        .unwrap_or(text.chars().count() as u32 * 8)
}

/// Draws a chart's title and, below it, a one-line legend of coloured swatches, both
/// outside the plot so that neither can cover a bar or a label.
fn draw_head<DB: DrawingBackend>(
    head: &DrawingArea<DB, Shift>,
    title: &str,
    swatches: &[(&str, RGBColor)],
) -> anyhow::Result<()> {
    let (w, _) = head.dim_in_pixel();
    let title_style = font(19).pos(Pos::new(HPos::Center, VPos::Top));
    draw!(head.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 10),
        title_style
    )));
    let legend_style = font(14).pos(Pos::new(HPos::Left, VPos::Center));
    let widths: Vec<u32> = swatches
        .iter()
        .map(|(name, _)| 20 + text_width(head, name, &legend_style) + 24)
        .collect();
    let mut x = (w as i32 - widths.iter().sum::<u32>() as i32) / 2;
    for ((name, color), width) in swatches.iter().zip(widths) {
        let y = 52;
        draw!(head.draw(&Rectangle::new(
            [(x, y - 7), (x + 14, y + 7)],
            color.filled()
        )));
        draw!(head.draw(&Text::new(
            name.to_string(),
            (x + 20, y),
            legend_style.clone()
        )));
        x += width as i32;
    }
    Ok(())
}

fn draw_table<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
    t: &Table,
) -> anyhow::Result<()> {
    let stat = report.stat;
    let rows: Vec<&Entry> = report.rows(t).collect();
    let (mut lo, mut hi) = (f64::INFINITY, 0f64);
    let mut values = Vec::new();
    for e in &rows {
        let v = e.value(Quantity::Total, stat).unwrap_or(0.0) * 1000.0;
        let (a, b) = spread(e, stat).map_or((v, v), |s| (s.0 * 1000.0, s.1 * 1000.0));
        if v > 0.0 {
            lo = lo.min(v).min(if a > 0.0 { a } else { v });
            values.extend([v, if a > 0.0 { a } else { v }]);
            // The first phase's segment must show on a log axis too.
            let first = e.value(Quantity::Forward, stat).map_or(v, |f| f * 1000.0);
            if first > 0.0 {
                lo = lo.min(first);
                values.push(first);
            }
        }
        hi = hi.max(v).max(b);
        values.push(b);
    }
    if hi <= 0.0 || !lo.is_finite() {
        return draw_table_on(root, report, t, 0f64..1.0, 0.0..1.0, false);
    }
    if hi / lo > LOG_AXIS_SPAN {
        let x = plot::log_range(values, 2.0, 1.3);
        draw_table_on(root, report, t, x.clone().log_scale(), x, true)
    } else {
        let x = 0.0..hi * 1.04;
        draw_table_on(root, report, t, x.clone(), x, false)
    }
}

/// Labels of a log axis: only at 1, 2 and 5 times a power of ten, so that the
/// labels between two decades do not run into each other, and each value once
/// (plotters may hand over a decade twice, a rounding apart).
fn log_axis_labeller() -> impl Fn(&f64) -> String {
    let done = std::cell::RefCell::new(Vec::<String>::new());
    move |v: &f64| {
        if *v <= 0.0 {
            return String::new();
        }
        let mantissa = v / 10f64.powf(v.log10().floor());
        let nice = [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|m| (mantissa - m).abs() < 1e-6 * m);
        let label = axis_label(v);
        if !nice || done.borrow().contains(&label) {
            return String::new();
        }
        done.borrow_mut().push(label.clone());
        label
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
/// The configuration names get exactly the width they need on the left and the value
/// labels theirs on the right, so the bars use the rest of the width.
fn draw_table_on<DB, XR>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
    t: &Table,
    x_range: XR,
    x_span: std::ops::Range<f64>,
    log: bool,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    XR: AsRangedCoord<Value = f64>,
    XR::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    draw!(root.fill(&WHITE));
    // Bars start at the axis's start; a value beyond its end is drawn to the end.
    let x0 = x_span.start;
    let at = |v: f64| plot::clamp_to(&x_span, v);
    let rows: Vec<&Entry> = report.rows(t).collect();
    let n = rows.len().max(1);
    let stat = report.stat;
    let names: Vec<String> = rows.iter().map(|e| e.config_name()).collect();
    let totals: Vec<f64> = rows
        .iter()
        .map(|e| e.value(Quantity::Total, stat).unwrap_or(0.0) * 1000.0)
        .collect();
    let values: Vec<String> = totals.iter().map(|v| crate::fmt::ms(v / 1000.0)).collect();
    let label_style = font(14).pos(Pos::new(HPos::Right, VPos::Center));
    let value_style = font(13).pos(Pos::new(HPos::Left, VPos::Center));
    let (w, _) = root.dim_in_pixel();
    let label_w = names
        .iter()
        .map(|s| text_width(root, s, &label_style))
        .max()
        .unwrap_or(60)
        .min(w / 2);
    let value_w = values
        .iter()
        .map(|s| text_width(root, s, &value_style))
        .max()
        .unwrap_or(40);
    let present: Vec<(&str, RGBColor)> = PHASES
        .iter()
        .filter(|(q, _)| rows.iter().any(|e| e.value(*q, stat).is_some()))
        .map(|(q, c)| (q.as_str(), *c))
        .collect();
    let (head, body) = root.split_vertically(TABLE_HEAD);
    let title = format!(
        "{} — input {}, {}",
        t.title,
        crate::group::input_desc(&t.key),
        t.key.mode
    );
    draw_head(&head, &title, &present)?;
    let mut chart = draw!(ChartBuilder::on(&body)
        .margin_left(label_w + 24)
        .margin_right(value_w + 28)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(50)
        .y_label_area_size(0)
        .build_cartesian_2d(x_range, 0f64..n as f64));
    let scale = if log { "log scale; " } else { "" };
    let log_labels = log_axis_labeller();
    draw!(chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_labels(8)
        .x_label_formatter(&|v: &f64| if log { log_labels(v) } else { axis_label(v) })
        .x_desc(format!(
            "time per pass, ms ({scale}{}; {})",
            stat.as_str(),
            spread_name(stat)
        ))
        .label_style((FONT_NAME, 13))
        .axis_desc_style((FONT_NAME, 14))
        .draw());
    for (i, e) in rows.iter().enumerate() {
        // Fastest on top.
        let y0 = (n - 1 - i) as f64;
        let (lo, hi) = (y0 + 0.2, y0 + 0.8);
        let yc = y0 + 0.5;
        let total = totals[i];
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
            let end = at(cumulative);
            draw!(chart.draw_series(std::iter::once(Rectangle::new(
                [(x, lo), (end, hi)],
                PHASES[k].1.filled()
            ))));
            x = end;
        }
        let mut right = total;
        if let Some((a, b)) = spread(e, stat) {
            let (a, b) = (at(a * 1000.0), at(b * 1000.0));
            right = right.max(b);
            let style = BLACK.stroke_width(2);
            draw!(chart.draw_series([
                PathElement::new(vec![(a, yc), (b, yc)], style),
                PathElement::new(vec![(a, yc - 0.14), (a, yc + 0.14)], style),
                PathElement::new(vec![(b, yc - 0.14), (b, yc + 0.14)], style),
            ]));
        }
        let (px, py) = chart.backend_coord(&(x0, yc));
        draw!(root.draw(&Text::new(
            names[i].clone(),
            (px - 10, py),
            label_style.clone()
        )));
        let (vx, vy) = chart.backend_coord(&(at(right), yc));
        draw!(root.draw(&Text::new(
            values[i].clone(),
            (vx + 8, vy),
            value_style.clone()
        )));
    }
    draw!(root.present());
    Ok(())
}

/// The tables in the order the overview shows them: by the catalog's family order
/// (the zoo's listing), models it does not know after those, by name.
fn overview_order(report: &Report) -> Vec<usize> {
    let mut order: Vec<usize> = (0..report.tables.len()).collect();
    order.sort_by(|&a, &b| {
        let (ta, tb) = (&report.tables[a], &report.tables[b]);
        let rank = |t: &Table| t.family.as_ref().map_or(usize::MAX, |f| f.rank);
        rank(ta)
            .cmp(&rank(tb))
            .then_with(|| natural_cmp(&ta.title, &tb.title))
            .then(ta.key.input.cmp(&tb.key.input))
            .then(ta.key.batch_size.cmp(&tb.key.batch_size))
            .then(ta.key.mode.as_str().cmp(tb.key.mode.as_str()))
    });
    order
}

/// The configurations (device · engine) of a report, in natural order.
fn configurations(report: &Report) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in &report.tables {
        for e in report.rows(t) {
            let name = e.config_name();
            if !out.contains(&name) {
                out.push(name);
            }
        }
    }
    out.sort_by(|a, b| natural_cmp(a, b));
    out
}

/// One row label of the overview: the model, with its input when the report holds
/// the model at several inputs, batches or modes.
fn overview_label(report: &Report, t: &Table) -> String {
    if report.tables.iter().filter(|u| u.title == t.title).count() > 1 {
        format!(
            "{} (b{}, {}×{}, {})",
            t.title, t.key.batch_size, t.key.input[1], t.key.input[2], t.key.mode
        )
    } else {
        t.title.clone()
    }
}

/// Row height and the heights of the overview's title and legend strips.
const OVERVIEW_ROW: u32 = 26;
const LEGEND_LINE: u32 = 22;

fn overview_head(report: &Report) -> u32 {
    48 + LEGEND_LINE * configurations(report).len().max(1) as u32 + 8
}

fn overview_size(report: &Report) -> (u32, u32) {
    let rows = report.tables.len().max(1) as u32;
    (
        CHART_WIDTH,
        overview_head(report) + OVERVIEW_ROW * rows + 80,
    )
}

/// A configuration's marker: colour and shape both differ, so that the chart still
/// reads in grey.
fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    k: usize,
    at: (i32, i32),
) -> anyhow::Result<()> {
    let color = PALETTE[k % PALETTE.len()];
    let style = color.filled();
    match k % 4 {
        0 => draw!(area.draw(&Circle::new(at, 5, style))),
        1 => draw!(area.draw(&TriangleMarker::new(at, 7, style))),
        2 => draw!(area.draw(&Rectangle::new(
            [(at.0 - 5, at.1 - 5), (at.0 + 5, at.1 + 5)],
            style
        ))),
        _ => draw!(area.draw(&Polygon::new(
            vec![
                (at.0, at.1 - 7),
                (at.0 + 7, at.1),
                (at.0, at.1 + 7),
                (at.0 - 7, at.1)
            ],
            style
        ))),
    }
    Ok(())
}

/// A dot plot: one row per model in family order, one marker per configuration with
/// its error bar, on a log axis. Nothing joins different models, since there is no
/// trend from one network to the next.
fn draw_overview<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
) -> anyhow::Result<()> {
    draw!(root.fill(&WHITE));
    let stat = report.stat;
    let order = overview_order(report);
    let configs = configurations(report);
    let n = order.len().max(1);
    let head_h = overview_head(report);
    let (head, body) = root.split_vertically(head_h);
    let (w, _) = root.dim_in_pixel();

    // Title and legend: every configuration on a line of its own, never cut.
    let title_style = font(19).pos(Pos::new(HPos::Center, VPos::Top));
    draw!(head.draw(&Text::new(
        format!(
            "Total time per pass, by model ({}, log scale; {})",
            stat.as_str(),
            spread_name(stat)
        ),
        (w as i32 / 2, 10),
        title_style
    )));
    let legend_style = font(14).pos(Pos::new(HPos::Left, VPos::Center));
    let legend_w = configs
        .iter()
        .map(|c| text_width(&head, c, &legend_style))
        .max()
        .unwrap_or(100)
        + 24;
    let legend_x = (w as i32 - legend_w as i32).max(0) / 2;
    for (k, name) in configs.iter().enumerate() {
        let y = 48 + LEGEND_LINE as i32 * k as i32 + LEGEND_LINE as i32 / 2;
        marker(&head, k, (legend_x + 6, y))?;
        draw!(head.draw(&Text::new(
            name.clone(),
            (legend_x + 22, y),
            legend_style.clone()
        )));
    }

    let mut values: Vec<f64> = Vec::new();
    for &ti in &order {
        for e in report.rows(&report.tables[ti]) {
            if let Some(v) = e.value(Quantity::Total, stat) {
                values.push(v * 1000.0);
            }
            if let Some((a, b)) = spread(e, stat) {
                values.extend([a * 1000.0, b * 1000.0]);
            }
        }
    }
    let x = plot::log_range(values, 1.3, 1.3);
    let (lo, hi) = (x.start, x.end);
    // A value the axis does not reach is drawn at its edge.
    let at = |v: f64| plot::clamp_to(&x, v);

    let label_style = font(14).pos(Pos::new(HPos::Right, VPos::Center));
    let family_style = TextStyle::from((FONT_NAME, 13).into_font())
        .color(&RGBColor(0x66, 0x66, 0x66))
        .pos(Pos::new(HPos::Left, VPos::Center));
    let labels: Vec<String> = order
        .iter()
        .map(|&ti| overview_label(report, &report.tables[ti]))
        .collect();
    let families: Vec<Option<String>> = order
        .iter()
        .map(|&ti| report.tables[ti].family.as_ref().map(|f| f.family.clone()))
        .collect();
    let family_w = families
        .iter()
        .flatten()
        .map(|f| text_width(root, f, &family_style))
        .max()
        .map_or(0, |fw| fw + 16);
    let label_w = labels
        .iter()
        .map(|l| text_width(root, l, &label_style))
        .max()
        .unwrap_or(60)
        .min(w / 3);
    let mut chart = draw!(ChartBuilder::on(&body)
        .margin_left(family_w + label_w + 24)
        .margin_right(24)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(50)
        .y_label_area_size(0)
        .build_cartesian_2d(x.clone().log_scale(), 0f64..n as f64));
    // Families shaded in turn, named once at their first row.
    let mut shade = false;
    for (i, fam) in families.iter().enumerate() {
        let y_top = (n - i) as f64;
        let new_family = i == 0 || families[i - 1] != *fam;
        if new_family {
            shade = !shade;
            if let Some(name) = fam {
                let (_, py) = chart.backend_coord(&(lo, y_top - 0.5));
                draw!(root.draw(&Text::new(name.clone(), (8, py), family_style.clone())));
            }
        }
        if shade {
            draw!(chart.draw_series(std::iter::once(Rectangle::new(
                [(lo, y_top - 1.0), (hi, y_top)],
                RGBColor(0xee, 0xf1, 0xf6).filled()
            ))));
        }
    }
    // The grid goes over the shading.
    draw!(chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_label_formatter(&log_axis_labeller())
        .light_line_style(WHITE.mix(0.0))
        .x_desc(format!("time per pass, ms (log scale; {})", stat.as_str()))
        .label_style((FONT_NAME, 13))
        .axis_desc_style((FONT_NAME, 14))
        .draw());

    let dodge = (0.6 / configs.len().max(1) as f64).min(0.22);
    for (row, &ti) in order.iter().enumerate() {
        let t = &report.tables[ti];
        let yc = (n - 1 - row) as f64 + 0.5;
        let (px, py) = chart.backend_coord(&(lo, yc));
        draw!(root.draw(&Text::new(
            labels[row].clone(),
            (px - 10, py),
            label_style.clone()
        )));
        for e in report.rows(t) {
            let Some(v) = e.value(Quantity::Total, stat) else {
                continue;
            };
            let k = configs
                .iter()
                .position(|c| *c == e.config_name())
                .unwrap_or(0);
            let y = yc + (k as f64 - (configs.len() as f64 - 1.0) / 2.0) * dodge;
            let color = PALETTE[k % PALETTE.len()];
            if let Some((a, b)) = spread(e, stat) {
                let (a, b) = (at(a * 1000.0), at(b * 1000.0));
                draw!(chart.draw_series(std::iter::once(PathElement::new(
                    vec![(a, y), (b, y)],
                    color.stroke_width(2)
                ))));
            }
            let (mx, my) = chart.backend_coord(&(at(v * 1000.0), y));
            marker(root, k, (mx, my))?;
        }
    }
    draw!(root.present());
    Ok(())
}

fn speedup_size(report: &Report) -> (u32, u32) {
    let rows = speedup_rows(report).len().max(1) as u32;
    let head = 48 + 2 * LEGEND_LINE * report.speedups.len().max(1) as u32 + 8;
    (CHART_WIDTH, head + OVERVIEW_ROW * rows + 80)
}

/// The models of the speed-ups, in the overview's (family) order, by the names the
/// speed-ups use.
fn speedup_rows(report: &Report) -> Vec<String> {
    let mut rows: Vec<String> = Vec::new();
    for ti in overview_order(report) {
        let name = crate::speedup::model_name(&report.tables[ti], &report.tables);
        let used = report
            .speedups
            .iter()
            .any(|s| s.ratios.iter().any(|r| r.0 == name));
        if used && !rows.contains(&name) {
            rows.push(name);
        }
    }
    rows
}

/// The speed-up overview: per model, how many times longer B takes than A for each
/// compared pair, on a log axis with 1× marked, the geometric mean as a line.
fn draw_speedups<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    report: &Report,
) -> anyhow::Result<()> {
    draw!(root.fill(&WHITE));
    let rows = speedup_rows(report);
    let n = rows.len().max(1);
    let head_h = 48 + 2 * LEGEND_LINE * report.speedups.len().max(1) as u32 + 8;
    let (head, body) = root.split_vertically(head_h);
    let (w, _) = root.dim_in_pixel();
    let title_style = font(19).pos(Pos::new(HPos::Center, VPos::Top));
    draw!(head.draw(&Text::new(
        format!(
            "Speed-ups by model: time of B ÷ time of A ({}, log scale)",
            report.stat.as_str()
        ),
        (w as i32 / 2, 10),
        title_style
    )));
    let legend_style = font(14).pos(Pos::new(HPos::Left, VPos::Center));
    // Each pair on two lines (A, then B and the mean), so long names still fit.
    let legends: Vec<[String; 2]> = report
        .speedups
        .iter()
        .map(|s| {
            [
                format!("A = {}", s.a),
                format!("B = {}: geometric mean {:.2}× (the line)", s.b, s.geomean),
            ]
        })
        .collect();
    let legend_w = legends
        .iter()
        .flatten()
        .map(|l| text_width(&head, l, &legend_style))
        .max()
        .unwrap_or(100)
        + 24;
    let legend_x = (w as i32 - legend_w as i32).max(4) / 2;
    for (k, lines) in legends.iter().enumerate() {
        let y = 48 + LEGEND_LINE as i32 * 2 * k as i32 + LEGEND_LINE as i32 / 2;
        marker(&head, k, (legend_x + 6, y))?;
        for (i, text) in lines.iter().enumerate() {
            draw!(head.draw(&Text::new(
                text.clone(),
                (legend_x + 22, y + LEGEND_LINE as i32 * i as i32),
                legend_style.clone()
            )));
        }
    }
    let all: Vec<f64> = report
        .speedups
        .iter()
        .flat_map(|s| s.ratios.iter().map(|r| r.1))
        .filter(|r| *r > 0.0)
        .chain([1.0])
        .collect();
    let x = plot::log_range(all, 1.25, 1.25);
    let lo = x.start;
    let label_style = font(14).pos(Pos::new(HPos::Right, VPos::Center));
    let label_w = rows
        .iter()
        .map(|l| text_width(root, l, &label_style))
        .max()
        .unwrap_or(60)
        .min(w / 3);
    let mut chart = draw!(ChartBuilder::on(&body)
        .margin_left(label_w + 24)
        .margin_right(24)
        .margin_top(4)
        .margin_bottom(8)
        .x_label_area_size(50)
        .y_label_area_size(0)
        .build_cartesian_2d(x.clone().log_scale(), 0f64..n as f64));
    draw!(chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_label_formatter(&|v: &f64| {
            let mantissa = v / 10f64.powf(v.log10().floor());
            if [1.0, 1.5, 2.0, 3.0, 5.0, 10.0]
                .iter()
                .any(|m| (mantissa - m).abs() < 1e-6 * m)
            {
                let rounded = (v * 10.0).round() / 10.0;
                if rounded.fract() == 0.0 {
                    format!("{rounded:.0}×")
                } else {
                    format!("{rounded:.1}×")
                }
            } else {
                String::new()
            }
        })
        .light_line_style(WHITE.mix(0.0))
        .x_desc("time of B ÷ time of A (above 1×: A is faster)")
        .label_style((FONT_NAME, 13))
        .axis_desc_style((FONT_NAME, 14))
        .draw());
    // A line the axis does not reach (1×, a mean, beside ratios of 1e300) is left out:
    // at the edge it would say a value it is not.
    if x.contains(&1.0) {
        draw!(chart.draw_series(std::iter::once(PathElement::new(
            vec![(1.0, 0.0), (1.0, n as f64)],
            BLACK.stroke_width(2)
        ))));
    }
    let pairs = report.speedups.len().max(1);
    let dodge = (0.6 / pairs as f64).min(0.22);
    for (k, s) in report.speedups.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        if x.contains(&s.geomean) {
            draw!(chart.draw_series(std::iter::once(PathElement::new(
                vec![(s.geomean, 0.0), (s.geomean, n as f64)],
                color.mix(0.6).stroke_width(2)
            ))));
        }
        for (model, ratio) in &s.ratios {
            let Some(row) = rows.iter().position(|r| r == model) else {
                continue;
            };
            let y = (n - 1 - row) as f64 + 0.5 + (k as f64 - (pairs as f64 - 1.0) / 2.0) * dodge;
            let (mx, my) = chart.backend_coord(&(plot::clamp_to(&x, *ratio), y));
            marker(root, k, (mx, my))?;
        }
    }
    for (row, name) in rows.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(lo, (n - 1 - row) as f64 + 0.5));
        draw!(root.draw(&Text::new(name.clone(), (px - 10, py), label_style.clone())));
    }
    draw!(root.present());
    Ok(())
}

/// The bar chart of one table.
struct TableChart<'a> {
    report: &'a Report,
    table: &'a Table,
}

impl Chart for TableChart<'_> {
    fn size(&self) -> (u32, u32) {
        table_size(self.table.rows.len())
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_table(root, self.report, self.table)
    }
}

/// The overview: time per model across configurations.
struct Overview<'a>(&'a Report);

impl Chart for Overview<'_> {
    fn size(&self) -> (u32, u32) {
        overview_size(self.0)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_overview(root, self.0)
    }
}

/// The speed-up overview: per model, the ratio of each compared pair.
struct Speedups<'a>(&'a Report);

impl Chart for Speedups<'_> {
    fn size(&self) -> (u32, u32) {
        speedup_size(self.0)
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw_speedups(root, self.0)
    }
}

/// The speed-up overview as an SVG document; `None` when the report has no speed-ups.
pub fn speedups_svg(report: &Report) -> anyhow::Result<Option<String>> {
    if report.speedups.is_empty() {
        return Ok(None);
    }
    plot::svg(&Speedups(report)).map(Some)
}

/// The bar chart of one table as an SVG document.
pub fn table_svg(report: &Report, t: &Table) -> anyhow::Result<String> {
    plot::svg(&TableChart { report, table: t })
}

/// The overview chart (time per model across configurations) as an SVG document.
pub fn overview_svg(report: &Report) -> anyhow::Result<String> {
    plot::svg(&Overview(report))
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

/// Writes every chart of the report's tables into `dir` (created if needed) as SVG and
/// PNG — one per table, the overview, and the speed-up overview when the report has
/// speed-ups; returns the files written. [`super::write_result_charts`] adds the sweeps
/// and scalings.
pub fn write_charts(report: &Report, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    plot::ensure_font()?;
    plot::create_chart_dir(dir)?;
    let mut written = Vec::new();
    let mut stems: Vec<String> = Vec::new();
    for t in &report.tables {
        let stem = plot::unique_stem(chart_stem(t), &mut stems);
        let chart = TableChart { report, table: t };
        plot::write_svg_and_png(&chart, dir, &stem, &mut written)?;
    }
    if !report.tables.is_empty() {
        plot::write_svg_and_png(&Overview(report), dir, "overview", &mut written)?;
    }
    if !report.speedups.is_empty() {
        plot::write_svg_and_png(&Speedups(report), dir, "speedups", &mut written)?;
    }
    Ok(written)
}
