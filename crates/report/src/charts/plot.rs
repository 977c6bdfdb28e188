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

/// A log axis shows at most this many decades of data, its margins besides: a result's
/// times run from 1 ns to a day, 14 decades, so an honest chart needs no more.
pub(crate) const LOG_AXIS_DECADES: f64 = 20.0;
/// What a log axis may reach: far inside f64's range, so that a margin's factor, a
/// logarithm or plotters' walk over the decades stays finite.
const LOG_AXIS_LIMITS: (f64, f64) = (1e-300, 1e300);

/// The span of the data a log axis shows: the finite positive `values` (others are left
/// out), each within [`LOG_AXIS_LIMITS`]; where they span more than [`LOG_AXIS_DECADES`],
/// the window of that many decades that holds the most of them (the lowest of equals).
/// `None` without a value. A value outside is not the axis's to show: its chart draws
/// it at the edge ([`clamp_to`]) or leaves it out.
pub(crate) fn log_window(values: impl IntoIterator<Item = f64>) -> Option<Range<f64>> {
    let (floor, ceiling) = LOG_AXIS_LIMITS;
    let mut v: Vec<f64> = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(|v| v.clamp(floor, ceiling))
        .collect();
    v.sort_by(f64::total_cmp);
    // The largest run of sorted values within the decades: two pointers.
    let (mut best, mut end) = ((0, 0), 0);
    for start in 0..v.len() {
        while end < v.len() && v[end].log10() - v[start].log10() <= LOG_AXIS_DECADES {
            end += 1;
        }
        if end - start > best.1 - best.0 {
            best = (start, end);
        }
    }
    (best.1 > best.0).then(|| v[best.0]..v[best.1 - 1])
}

/// The range of every log axis (`(range).log_scale()`): [`log_window`]'s span of
/// `values`, `below` and `above` (factors of 1 to 1000) added, at least a factor of 10
/// wide where that leaves it empty; 1 to 10 without a value. plotters labels a log axis
/// by walking it decade by decade: one that reached infinity or began at zero never
/// ended (a latency bound of 1e308 or 5e-324 ms hung `report -f html`), and one of
/// hundreds of decades took minutes.
pub(crate) fn log_range(
    values: impl IntoIterator<Item = f64>,
    below: f64,
    above: f64,
) -> Range<f64> {
    let margin = |m: f64| {
        if m.is_finite() {
            m.clamp(1.0, 1e3)
        } else {
            1.0
        }
    };
    let Some(window) = log_window(values) else {
        return 1.0..10.0;
    };
    let lo = window.start / margin(below);
    let hi = window.end * margin(above);
    if hi > lo {
        lo..hi
    } else {
        lo..lo * 10.0
    }
}

/// A finite `v` moved into `range` (an axis's, from [`log_range`]), so that a value the
/// axis does not show is drawn at its edge rather than pixels by the billion away; NaN
/// and infinities are returned as they are, for the caller's filter to leave out.
pub(crate) fn clamp_to(range: &Range<f64>, v: f64) -> f64 {
    if v.is_finite() {
        v.max(range.start).min(range.end)
    } else {
        v
    }
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
/// one writer of every chart kind, so their files are named and rendered alike. Each file
/// is whole or absent (an earlier one stays): a full disk leaves no truncated chart, and
/// the error names the file.
pub(crate) fn write_svg_and_png(
    chart: &impl Chart,
    dir: &Path,
    stem: &str,
    written: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let svg_path = dir.join(format!("{stem}.svg"));
    let text = svg(chart)?;
    cnnbench_graph::write_replacing(&svg_path, |w| w.write_all(text.as_bytes()))
        .map_err(|e| anyhow::anyhow!(e))?;
    written.push(svg_path);
    let png = dir.join(format!("{stem}.png"));
    write_png(chart, &png)?;
    written.push(png);
    Ok(())
}

/// Draws the chart into pixels in memory, encodes them as PNG into a temporary file
/// beside `png`, and renames it into place once it is complete (a write error, a full
/// disk, names the file and leaves nothing). The encoding is `image`'s, the crate that
/// reads the user's images, rather than plotters' bitmap encoder, whose older `image`
/// was a second copy of that crate in every build.
fn write_png(chart: &impl Chart, png: &Path) -> anyhow::Result<()> {
    ensure_font()?;
    let failed = |why: String| {
        anyhow::anyhow!(
            "cannot write the chart {}: {why}; nothing was left in its place (free some space or write elsewhere, then try again)",
            png.display()
        )
    };
    let (width, height) = chart.size();
    let mut rgb = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        chart.draw(&root).map_err(|e| failed(format!("{e:#}")))?;
        root.present().map_err(|e| failed(e.to_string()))?;
    }
    let mut pending =
        cnnbench_graph::PendingFile::replacing(png).map_err(|e| anyhow::anyhow!(e))?;
    pending
        .write_with(|out| {
            use image::ImageEncoder;
            image::codecs::png::PngEncoder::new(out)
                .write_image(&rgb, width, height, image::ExtendedColorType::Rgb8)
                .map_err(std::io::Error::other)
        })
        .map_err(|e| anyhow::anyhow!(e))?;
    // A FIFO or a device in the chart's place is written into and cannot be read back.
    if let Some(written) = pending.path() {
        png_is_complete(written).map_err(failed)?;
    }
    pending.persist_replacing().map_err(|e| anyhow::anyhow!(e))
}

/// The last 12 bytes of every PNG: an empty IEND chunk and its CRC.
const PNG_TRAILER: [u8; 12] = [0, 0, 0, 0, b'I', b'E', b'N', b'D', 0xAE, 0x42, 0x60, 0x82];

/// Whether the file at `path` ends as a PNG ends (a write cut short does not).
fn png_is_complete(path: &Path) -> Result<(), String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let cut = || "the image was cut short (is the disk full?)".to_string();
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if len < PNG_TRAILER.len() as u64 {
        return Err(cut());
    }
    let mut tail = [0u8; 12];
    file.seek(SeekFrom::End(-(PNG_TRAILER.len() as i64)))
        .and_then(|_| file.read_exact(&mut tail))
        .map_err(|e| e.to_string())?;
    if tail == PNG_TRAILER {
        Ok(())
    } else {
        Err(cut())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Infinite, zero, NaN, subnormal and far-apart values: the range is finite, positive,
    /// ordered and at most the decades wide (with its margins), around most of the data.
    #[test]
    fn a_log_range_is_finite_positive_and_a_bounded_number_of_decades() {
        let decades = |r: &Range<f64>| (r.end / r.start).log10();
        let cases: [&[f64]; 9] = [
            &[1.0, 3.0, 1e308],
            &[5e-324, 1.0, 3.0],
            &[5e-324, 1e308],
            &[f64::INFINITY, f64::NAN, 0.0, -1.0, 2.0],
            &[f64::MAX, f64::MIN_POSITIVE],
            &[f64::INFINITY, 0.0],
            &[],
            &[7.0],
            &[1e-300, 1e-200, 1e-100, 1.0, 1e100, 1e200, 1e300],
        ];
        for values in cases {
            let r = log_range(values.iter().copied(), 1.5, 1.5);
            assert!(
                r.start.is_finite() && r.end.is_finite() && r.start > 0.0 && r.end > r.start,
                "{values:?}: {r:?}"
            );
            assert!(
                decades(&r) <= LOG_AXIS_DECADES + 2.0 * 1.5f64.log10() + 1e-9,
                "{values:?}: {r:?}"
            );
            // plotters labels it, and soon.
            let started = std::time::Instant::now();
            let coord: plotters::coord::combinators::LogCoord<f64> = r.clone().log_scale().into();
            assert!(
                !coord.key_points(10).is_empty() || decades(&r) < 1.0,
                "{values:?}"
            );
            assert!(started.elapsed().as_secs() < 5, "{values:?}");
        }
        // The data is kept, the outlier is not the axis's.
        let r = log_range([1.0, 3.0, 1e308], 1.0, 1.0);
        assert_eq!(r, 1.0..3.0);
        assert_eq!(clamp_to(&r, 1e308), 3.0);
        assert_eq!(log_range([5e-324, 1.0, 3.0], 2.0, 1.0), 0.5..3.0);
        assert_eq!(log_window([f64::NAN, f64::INFINITY]), None);
        // Honest data spanning a ns to a day (in ms) is shown whole.
        assert_eq!(log_window([1e-6, 8.64e7, 5.0]), Some(1e-6..8.64e7));
        // A single value gets a decade.
        assert_eq!(log_range([7.0], 1.0, 1.0), 7.0..70.0);
    }

    /// A white square: the least a chart draws.
    struct Blank;
    impl Chart for Blank {
        fn size(&self) -> (u32, u32) {
            (40, 30)
        }
        fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
            draw!(root.fill(&WHITE));
            Ok(())
        }
    }

    /// The PNG was drawn straight to its name: a full disk left a truncated file, and
    /// the error ("drawing a chart failed") named none. Now it is drawn beside it and
    /// kept only whole; a failure names the file and leaves nothing.
    #[test]
    fn a_chart_is_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let mut written = Vec::new();
        write_svg_and_png(&Blank, dir.path(), "c", &mut written).unwrap();
        assert_eq!(written.len(), 2);
        png_is_complete(&dir.path().join("c.png")).unwrap();
        // Written again, replacing both.
        write_svg_and_png(&Blank, dir.path(), "c", &mut written).unwrap();
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        assert_eq!(names, ["c.png", "c.svg"]);

        // The PNG's name is taken by a folder: the file cannot be put in place.
        std::fs::create_dir(dir.path().join("d.png")).unwrap();
        std::fs::write(dir.path().join("d.png/keep"), "").unwrap();
        let e = write_svg_and_png(&Blank, dir.path(), "d", &mut written).unwrap_err();
        assert!(e.to_string().contains("d.png"), "{e}");
        let hidden: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "{hidden:?}");

        // A PNG cut short is told from a whole one.
        let whole = std::fs::read(dir.path().join("c.png")).unwrap();
        let cut = dir.path().join("cut.png");
        std::fs::write(&cut, &whole[..whole.len() - 5]).unwrap();
        assert!(png_is_complete(&cut).unwrap_err().contains("cut short"));
        std::fs::write(&cut, b"").unwrap();
        assert!(png_is_complete(&cut).is_err());
    }
}
