//! What every chart shares, written once: the bundled font, drawing errors as `anyhow`
//! errors, the one [`Chart`] trait every kind implements, and the one writer that
//! renders a chart to SVG and to PNG side by side; then the layout of the two-panel line
//! charts (sweeps and scaling: a title, two panels side by side with the same margins,
//! axes and fonts, lines with dots, and a legend strip below).

use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans-subset.ttf");
/// The family every chart's text is drawn in (the bundled font, registered under it).
pub(crate) const FONT_NAME: &str = "sans-serif";

/// Registers the bundled font (once per process), so that text in PNGs needs no system
/// font or library.
pub(crate) fn ensure_font() -> anyhow::Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(FONT_NAME, FontStyle::Normal, FONT)
            .map_err(|_| "the bundled chart font is unreadable".to_string())
    })
    .clone()
    .map_err(|e| anyhow::anyhow!(e))
}

/// Runs a plotters call, turning its error into an `anyhow` error that says a chart
/// failed to draw.
macro_rules! draw {
    ($e:expr) => {
        $e.map_err(|e| anyhow::anyhow!("drawing a chart failed: {e}"))?
    };
}
pub(crate) use draw;

/// A chart that draws itself the same way on any backend, so one drawing gives both
/// its SVG and its PNG. Every chart kind of the report implements it, and
/// [`write_svg_and_png`] is the one way any of them reaches the disk.
pub(crate) trait Chart {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()>;
}

/// The chart as an SVG document.
pub(crate) fn svg(chart: &impl Chart) -> anyhow::Result<String> {
    ensure_font()?;
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, chart.size()).into_drawing_area();
        chart.draw(&root)?;
    }
    Ok(buf)
}

/// Creates the chart folder (and its parents) if needed.
pub(crate) fn create_chart_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create the chart folder {}: {e}", dir.display()))
}

/// `stem`, or `stem` with `_` added until it differs from every stem in `taken` (two
/// charts that would share a file name, e.g. two tables with the same title); the stem
/// returned is added to `taken`.
pub(crate) fn unique_stem(mut stem: String, taken: &mut Vec<String>) -> String {
    while taken.contains(&stem) {
        stem.push('_');
    }
    taken.push(stem.clone());
    stem
}

/// Writes the chart as `dir/stem.svg` and `dir/stem.png`, adding both to `written`: the
/// one writer of every chart kind, so their files are named and rendered alike.
pub(crate) fn write_svg_and_png(
    chart: &impl Chart,
    dir: &Path,
    stem: &str,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let svg_path = dir.join(format!("{stem}.svg"));
    std::fs::write(&svg_path, svg(chart)?)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", svg_path.display()))?;
    written.push(svg_path);
    let png = dir.join(format!("{stem}.png"));
    {
        ensure_font()?;
        let root = BitMapBackend::new(&png, chart.size()).into_drawing_area();
        chart.draw(&root)?;
    }
    written.push(png);
    Ok(())
}

/// Writes every chart of `charts` into `dir` (created if needed) as SVG and PNG, named
/// by `stem`; returns the files written (none, and no folder, without charts).
pub(crate) fn write_all<C: Chart>(
    charts: &[C],
    dir: &Path,
    stem: impl Fn(&C) -> String,
) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    if charts.is_empty() {
        return Ok(Vec::new());
    }
    create_chart_dir(dir)?;
    let mut written = Vec::new();
    for chart in charts {
        write_svg_and_png(chart, dir, &stem(chart), &mut written)?;
    }
    Ok(written)
}

/// Line colours of the line charts: dark, distinct, readable on white.
pub(crate) const LINE_COLOURS: [RGBColor; 8] = [
    RGBColor(0x1f, 0x3a, 0x93),
    RGBColor(0xb3, 0x1b, 0x1b),
    RGBColor(0x1b, 0x7a, 0x3a),
    RGBColor(0x6a, 0x3d, 0x9a),
    RGBColor(0xe0, 0x6c, 0x00),
    RGBColor(0x17, 0x9e, 0xaf),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x4d, 0x4d, 0x4d),
];

/// The colour of series `i` in a line chart.
pub(crate) fn line_colour(i: usize) -> RGBColor {
    LINE_COLOURS[i % LINE_COLOURS.len()]
}

/// Width of a two-panel line chart.
pub(crate) const PANELS_WIDTH: u32 = 1100;
/// Height of one legend row below the panels.
pub(crate) const LEGEND_ROW: u32 = 22;
/// The title's strip above the panels.
const TITLE_HEIGHT: u32 = 40;
/// Space above and below the legend rows.
const LEGEND_PADDING: u32 = 16;

/// The size of a two-panel chart with panels `panel_height` high and `legend_rows`
/// rows of legend.
pub(crate) fn two_panel_size(panel_height: u32, legend_rows: usize) -> (u32, u32) {
    (
        PANELS_WIDTH,
        panel_height + TITLE_HEIGHT + LEGEND_PADDING + LEGEND_ROW * legend_rows as u32,
    )
}

/// The areas of a two-panel chart: `root` filled white, `title` above two panels side
/// by side, the legend strip below them. Returns (left panel, right panel, legend).
#[allow(clippy::type_complexity)]
pub(crate) fn two_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    panel_height: u32,
    title: &str,
) -> anyhow::Result<(
    DrawingArea<DB, Shift>,
    DrawingArea<DB, Shift>,
    DrawingArea<DB, Shift>,
)> {
    draw!(root.fill(&WHITE));
    let (top, legend) = root.split_vertically(panel_height + TITLE_HEIGHT);
    let top = draw!(top.titled(title, (FONT_NAME, 17)));
    let (left, right) = top.split_horizontally(PANELS_WIDTH / 2);
    Ok((left, right, legend))
}

/// How a panel's axes are labelled.
pub(crate) struct Axes<'a> {
    pub x_desc: &'a str,
    pub y_desc: &'a str,
    /// How many labels the x axis may have.
    pub x_labels: usize,
    pub x_label: &'a dyn Fn(&f64) -> String,
    pub y_label: &'a dyn Fn(&f64) -> String,
}

/// One panel of a line chart: `caption` above, the axes drawn and labelled, ready for
/// its series. The x axis is linear over `x`; the y axis is whatever `y` makes it
/// (linear or logarithmic).
pub(crate) fn line_panel<'a, DB, YR>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: Range<f64>,
    y: YR,
    axes: &Axes,
) -> anyhow::Result<ChartContext<'a, DB, Cartesian2d<RangedCoordf64, YR::CoordDescType>>>
where
    DB: DrawingBackend,
    YR: AsRangedCoord<Value = f64>,
    YR::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let mut chart = draw!(ChartBuilder::on(area)
        .caption(caption, (FONT_NAME, 16))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x, y));
    draw!(chart
        .configure_mesh()
        .x_labels(axes.x_labels)
        .x_label_formatter(axes.x_label)
        .y_label_formatter(axes.y_label)
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .label_style((FONT_NAME, 12))
        .axis_desc_style((FONT_NAME, 13))
        .draw());
    Ok(chart)
}

/// A series as a line of width 2 through its points, with a dot on each.
pub(crate) fn draw_line_with_dots<DB, Y>(
    chart: &mut ChartContext<DB, Cartesian2d<RangedCoordf64, Y>>,
    points: &[(f64, f64)],
    colour: RGBColor,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    draw!(chart.draw_series(LineSeries::new(
        points.iter().copied(),
        colour.stroke_width(2)
    )));
    draw!(chart.draw_series(points.iter().map(|&p| Circle::new(p, 4, colour.filled()))));
    Ok(())
}

/// The vertical centre of legend row `row`.
pub(crate) fn legend_row_y(row: usize) -> i32 {
    8 + LEGEND_ROW as i32 * row as i32 + LEGEND_ROW as i32 / 2
}

/// The legend's text style.
pub(crate) fn legend_style() -> TextStyle<'static> {
    TextStyle::from((FONT_NAME, 13).into_font())
}

/// Legend row `row`: a short line with a dot in the series' colour, then its label.
pub(crate) fn draw_legend_entry<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    row: usize,
    colour: RGBColor,
    label: &str,
) -> anyhow::Result<()> {
    let y = legend_row_y(row);
    draw!(area.draw(&PathElement::new(
        vec![(80, y), (110, y)],
        colour.stroke_width(2)
    )));
    draw!(area.draw(&Circle::new((95, y), 4, colour.filled())));
    draw!(area.draw(&Text::new(label.to_string(), (120, y - 7), legend_style())));
    Ok(())
}
