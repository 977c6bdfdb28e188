//! Latency against offered load ([`crate::serving`]), one chart per model and input:
//! per configuration its p99 as a solid line and its p50 dashed through every load it
//! was run or probed at, valid loads filled and invalid ones hollow, its highest valid
//! load ringed, and each bound a grey horizontal line. Latency goes on a log axis when it
//! spans more than a factor of 30, as a queue that overflows grows it by hundreds.

use super::plot::{self, draw, ensure_font, line_colour, Chart, FONT_NAME, LEGEND_ROW};
use crate::fmt::slug;
use crate::serving::{Serving, ServingSeries};
use plotters::coord::ranged1d::{AsRangedCoord, Ranged, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::{Path, PathBuf};

const WIDTH: u32 = 1000;
const PLOT_HEIGHT: u32 = 520;
/// Latency spanning more than this factor goes on a log axis.
const LOG_AXIS_SPAN: f64 = 30.0;
const BOUND_GREY: RGBColor = RGBColor(0x88, 0x88, 0x88);

/// The series of one model and input.
pub struct LoadChart<'a> {
    model: String,
    input: [usize; 3],
    series: Vec<&'a ServingSeries>,
}

/// What one series draws, in ms, every value finite and positive.
struct Drawn {
    /// (QPS, p99 ms, valid)
    p99: Vec<(f64, f64, bool)>,
    /// (QPS, p50 ms)
    p50: Vec<(f64, f64)>,
    /// The highest valid load and its p99, where it has one.
    peak: Option<(f64, f64)>,
}

fn positive(v: f64) -> bool {
    v.is_finite() && v > 0.0
}

fn drawn(s: &ServingSeries) -> Drawn {
    let ms = |v: Option<f64>| v.map(|s| s * 1e3).filter(|v| positive(*v));
    let points = s.points.iter().filter(|p| positive(p.target_qps));
    Drawn {
        p99: points
            .clone()
            .filter_map(|p| Some((p.target_qps, ms(p.p99_s)?, p.valid)))
            .collect(),
        p50: points
            .filter_map(|p| Some((p.target_qps, ms(p.p50_s)?)))
            .collect(),
        peak: s
            .peak()
            .and_then(|p| Some((p.target_qps, ms(p.p99_s)?)))
            .filter(|(q, _)| positive(*q)),
    }
}

impl Drawn {
    /// The latencies moved into the axis's `span`: one it does not reach is drawn at its
    /// edge (where a hostile file's value would otherwise be drawn pixels by the billion).
    fn clamped(mut self, span: &std::ops::Range<f64>) -> Drawn {
        let y = |v: f64| plot::clamp_to(span, v);
        for p in &mut self.p99 {
            p.1 = y(p.1);
        }
        for p in &mut self.p50 {
            p.1 = y(p.1);
        }
        if let Some(p) = &mut self.peak {
            p.1 = y(p.1);
        }
        self
    }
}

/// An axis or legend number: whole numbers bare, small ones with the decimals they need.
fn number(v: f64) -> String {
    if v.is_finite() && v != 0.0 && !(0.005..1e7).contains(&v.abs()) {
        // A bound of 1e308 ms is not 309 digits, nor one of 5e-324 ms "0.00".
        format!("{v:.1e}")
    } else if v >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

impl LoadChart<'_> {
    fn bounds(&self) -> Vec<f64> {
        let mut b: Vec<f64> = self
            .series
            .iter()
            .filter_map(|s| s.bound_ms)
            .filter(|b| positive(*b))
            .collect();
        b.sort_by(f64::total_cmp);
        b.dedup();
        b
    }

    fn legend_rows(&self) -> usize {
        self.series.len() + 2
    }

    /// Whether the series run on more than one device (then the legend names it).
    fn devices_differ(&self) -> bool {
        self.series.windows(2).any(|w| w[0].device != w[1].device)
    }

    fn draw_plot<DB, YR>(
        &self,
        area: &DrawingArea<DB, Shift>,
        x: std::ops::Range<f64>,
        y: YR,
        y_span: std::ops::Range<f64>,
        y_desc: &str,
    ) -> anyhow::Result<()>
    where
        DB: DrawingBackend,
        YR: AsRangedCoord<Value = f64>,
        YR::CoordDescType: Ranged<ValueType = f64> + ValueFormatter<f64>,
    {
        let title = match self.series.first() {
            Some(s) if !self.devices_differ() => format!(
                "{} ({}×{}×{}) on {}: latency against offered load",
                self.model, self.input[0], self.input[1], self.input[2], s.device
            ),
            _ => format!(
                "{} ({}×{}×{}): latency against offered load",
                self.model, self.input[0], self.input[1], self.input[2]
            ),
        };
        let mut chart = draw!(ChartBuilder::on(area)
            .caption(title, (FONT_NAME, 17))
            .margin(16)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(x.clone(), y));
        draw!(chart
            .configure_mesh()
            .x_desc("offered load: target queries per second")
            .y_desc(y_desc)
            .x_label_formatter(&|v| number(*v))
            .y_label_formatter(&|v| number(*v))
            .y_labels(8)
            .light_line_style(WHITE)
            .label_style((FONT_NAME, 12))
            .axis_desc_style((FONT_NAME, 13))
            .draw());
        // A bound the axis does not reach (1e308 ms) is left out of the plot, and only
        // said in the legend: a line at the edge would put it where it is not.
        let bounds: Vec<f64> = self
            .bounds()
            .into_iter()
            .filter(|b| y_span.contains(b))
            .collect();
        for &b in &bounds {
            draw!(chart.draw_series(std::iter::once(PathElement::new(
                vec![(x.start, b), (x.end, b)],
                BOUND_GREY.stroke_width(2),
            ))));
        }
        let crowded = self.series.iter().map(|s| s.points.len()).sum::<usize>() > 60;
        let dot = if crowded { 2 } else { 4 };
        for (i, s) in self.series.iter().enumerate() {
            let colour = line_colour(i);
            let d = drawn(s).clamped(&y_span);
            draw_on(&mut chart, &d, colour, dot)?;
        }
        // The bounds' labels last, at the right end above their lines: the loads there
        // are the heaviest, whose latencies are far above any bound, so the label is
        // clear of the lines (at the left it sat among the slow engines' points).
        for &b in &bounds {
            draw!(chart.draw_series(std::iter::once(
                EmptyElement::at((x.end, b))
                    + Text::new(
                        format!("bound {} ms", number(b)),
                        (-6, -4),
                        (FONT_NAME, 13)
                            .into_font()
                            .color(&BOUND_GREY)
                            .pos(Pos::new(HPos::Right, VPos::Bottom)),
                    )
            )));
        }
        Ok(())
    }
}

/// One series on the chart: the p99 line and its dots, the dashed p50 line, the ring.
fn draw_on<DB, Y>(
    chart: &mut ChartContext<DB, Cartesian2d<RangedCoordf64, Y>>,
    d: &Drawn,
    colour: RGBColor,
    dot: u32,
) -> anyhow::Result<()>
where
    DB: DrawingBackend,
    Y: Ranged<ValueType = f64>,
{
    draw!(chart.draw_series(LineSeries::new(
        d.p99.iter().map(|&(x, y, _)| (x, y)),
        colour.stroke_width(2)
    )));
    draw!(chart.draw_series(d.p99.iter().map(|&(x, y, valid)| {
        let style = if valid {
            colour.filled()
        } else {
            WHITE.filled()
        };
        Circle::new((x, y), dot, style)
    })));
    // Hollow dots get their rim drawn over the white fill.
    draw!(
        chart.draw_series(d.p99.iter().filter(|p| !p.2).map(|&(x, y, _)| Circle::new(
            (x, y),
            dot,
            colour.stroke_width(2)
        )))
    );
    if d.p50.len() > 1 {
        draw!(chart.draw_series(DashedLineSeries::new(
            d.p50.iter().copied(),
            6,
            4,
            colour.stroke_width(2),
        )));
    }
    draw!(chart.draw_series(
        d.p50
            .iter()
            .map(|&(x, y)| Circle::new((x, y), 3, colour.filled()))
    ));
    if let Some(peak) = d.peak {
        draw!(chart.draw_series(std::iter::once(Circle::new(
            peak,
            dot + 6,
            colour.stroke_width(2)
        ))));
    }
    Ok(())
}

impl Chart for LoadChart<'_> {
    fn size(&self) -> (u32, u32) {
        (
            WIDTH,
            PLOT_HEIGHT + 16 + LEGEND_ROW * self.legend_rows() as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw!(root.fill(&WHITE));
        let (area, legend) = root.split_vertically(PLOT_HEIGHT);
        let all: Vec<Drawn> = self.series.iter().map(|s| drawn(s)).collect();
        // The loads tried, with a margin; from zero when they start near it.
        let (x_lo, x_hi) = all
            .iter()
            .flat_map(|d| d.p99.iter().map(|p| p.0).chain(d.p50.iter().map(|p| p.0)))
            .fold((f64::INFINITY, 0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
        let (x_lo, x_hi) = if !positive(x_hi) || !positive(x_lo) {
            (0.0, 1.0)
        } else if x_lo == x_hi {
            (x_lo * 0.8, x_hi * 1.2)
        } else if x_lo < 0.3 * x_hi {
            (0.0, x_hi * 1.06)
        } else {
            let margin = (x_hi - x_lo) * 0.08;
            (x_lo - margin, x_hi + margin)
        };
        let latencies: Vec<f64> = all
            .iter()
            .flat_map(|d| d.p99.iter().map(|p| p.1).chain(d.p50.iter().map(|p| p.1)))
            .chain(self.bounds())
            .collect();
        // The span the axis shows: most of the latencies and bounds, not a bound of
        // 1e308 ms or 5e-324 ms beside them (the legend still says it).
        match plot::log_window(latencies.iter().copied()) {
            Some(w) if w.end / w.start > LOG_AXIS_SPAN => {
                let y = plot::log_range(latencies, 1.5, 1.5);
                self.draw_plot(
                    &area,
                    x_lo..x_hi,
                    y.clone().log_scale(),
                    y,
                    "latency per query, ms (log scale)",
                )?;
            }
            w => {
                let hi = w.map_or(1.0, |w| w.end * 1.15);
                self.draw_plot(
                    &area,
                    x_lo..x_hi,
                    0f64..hi,
                    0.0..hi,
                    "latency per query, ms",
                )?;
            }
        }
        let with_device = self.devices_differ();
        for (i, (s, d)) in self.series.iter().zip(&all).enumerate() {
            let bound = s
                .bound_ms
                .map_or(String::new(), |b| format!(", bound {} ms", number(b)));
            let answer = match (s.peak(), d.p99.is_empty()) {
                (Some(p), _) => format!(
                    "highest valid load {} QPS{}",
                    number(p.target_qps),
                    p.p99_s
                        .filter(|v| positive(*v))
                        .map_or(String::new(), |v| format!(" (p99 {} ms)", number(v * 1e3)))
                ),
                (None, false) => "no valid load".to_string(),
                (None, true) => "no latency to draw".to_string(),
            };
            plot::draw_legend_entry(
                &legend,
                i,
                line_colour(i),
                &format!("{}: {answer}{bound}", s.config_desc(with_device)),
            )?;
        }
        for (row, key) in [
            "solid: p99; dashed, small dots: p50; ring: the highest valid load; grey: the bound",
            "hollow: an invalid load (judged by the p99's 99%-confidence bound, which can lie above the p99)",
        ]
        .into_iter()
        .enumerate()
        {
            draw!(legend.draw(&Text::new(
                key,
                (80, plot::legend_row_y(self.series.len() + row) - 7),
                plot::legend_style(),
            )));
        }
        draw!(root.present());
        Ok(())
    }
}

/// The charts of every model and input with server runs, in the serving table's order.
pub fn load_charts(serving: &Serving) -> Vec<LoadChart<'_>> {
    let mut charts: Vec<LoadChart<'_>> = Vec::new();
    for s in &serving.server {
        match charts
            .iter_mut()
            .find(|c| c.model == s.model && c.input == s.input)
        {
            Some(c) => c.series.push(s),
            None => charts.push(LoadChart {
                model: s.model.clone(),
                input: s.input,
                series: vec![s],
            }),
        }
    }
    // A chart with nothing to draw is left out.
    charts.retain(|c| c.series.iter().any(|s| !drawn(s).p99.is_empty()));
    charts
}

/// Every latency-against-load chart as an SVG document (the HTML report's figures).
pub fn serving_svgs(serving: &Serving) -> anyhow::Result<Vec<String>> {
    load_charts(serving).iter().map(plot::svg).collect()
}

/// Writes each model's latency-against-load chart into `dir` (created if needed) as
/// `latency-load-MODEL-CxHxW.svg` and `.png`; returns the files written.
pub fn write_serving_charts(serving: &Serving, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    let charts = load_charts(serving);
    if charts.is_empty() {
        return Ok(Vec::new());
    }
    plot::create_chart_dir(dir)?;
    let mut taken = Vec::new();
    let mut written = Vec::new();
    for c in &charts {
        let [ch, h, w] = c.input;
        let stem = plot::unique_stem(
            format!("latency-load-{}-{ch}x{h}x{w}", slug(&c.model)),
            &mut taken,
        );
        plot::write_svg_and_png(c, dir, &stem, &mut written)?;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serving::LoadPoint;
    use cnnbench_results::Precision;

    fn series(engine: &str, points: Vec<(f64, Option<f64>, Option<f64>, bool)>) -> ServingSeries {
        ServingSeries {
            model: "resnet18".into(),
            input: [3, 64, 64],
            batch_size: 1,
            device: "cpu".into(),
            engine: engine.into(),
            precision: Precision::F32,
            engine_name: engine.into(),
            variant: Vec::new(),
            in_flight: 1,
            batcher: None,
            bound_ms: Some(15.0),
            points: points
                .into_iter()
                .map(|(q, p50, p99, valid)| LoadPoint {
                    target_qps: q,
                    achieved_qps: q,
                    p50_s: p50,
                    p99_s: p99,
                    valid,
                    invalid_reasons: Vec::new(),
                })
                .collect(),
            runs: 1,
            probes: 0,
            bounds_differ: false,
        }
    }

    #[test]
    fn writes_svg_and_png_for_a_small_fixture() {
        let dir = tempfile::tempdir().unwrap();
        let serving = Serving {
            server: vec![
                series(
                    "burn-flex",
                    vec![
                        (10.0, Some(0.002), Some(0.004), true),
                        (20.0, Some(0.003), Some(0.008), true),
                        (40.0, Some(0.02), Some(0.09), false),
                    ],
                ),
                series("tract", vec![(15.0, None, Some(0.005), true)]),
            ],
            others: Vec::new(),
        };
        let written = write_serving_charts(&serving, dir.path()).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "latency-load-resnet18-3x64x64.svg",
                "latency-load-resnet18-3x64x64.png"
            ]
        );
        for p in &written {
            assert!(std::fs::metadata(p).unwrap().len() > 1000);
        }
        let svg = std::fs::read_to_string(&written[0]).unwrap();
        assert!(svg.contains("bound 15 ms") && svg.contains("highest valid load 20 QPS"));
    }

    /// One point, zero, NaN and infinite values, hundreds of points: drawn or left out,
    /// never a panic or an endless loop.
    #[test]
    fn degenerate_input_does_not_panic() {
        let dir = tempfile::tempdir().unwrap();
        let nothing = Serving {
            server: vec![series(
                "a",
                vec![
                    (f64::NAN, Some(0.01), Some(0.01), true),
                    (0.0, Some(0.01), Some(0.01), true),
                    (5.0, Some(0.0), Some(f64::INFINITY), true),
                    (f64::INFINITY, None, Some(0.01), false),
                ],
            )],
            others: Vec::new(),
        };
        assert!(write_serving_charts(&nothing, dir.path())
            .unwrap()
            .is_empty());
        let many: Vec<_> = (1..=400)
            .map(|i| {
                let q = i as f64;
                (q, Some(0.001 * q), Some(0.002 * q * q), q < 300.0)
            })
            .collect();
        let serving = Serving {
            server: vec![
                series("one", vec![(7.0, Some(0.001), Some(0.001), true)]),
                series("many", many),
                series("nan", vec![(3.0, Some(f64::NAN), Some(f64::NAN), false)]),
            ],
            others: Vec::new(),
        };
        assert_eq!(write_serving_charts(&serving, dir.path()).unwrap().len(), 2);
        let mut one = serving.clone();
        one.server.truncate(1);
        one.server[0].bound_ms = None;
        assert_eq!(write_serving_charts(&one, dir.path()).unwrap().len(), 2);
    }

    /// A server result with a latency bound of 1e308 or 5e-324 ms made `report -f html`
    /// spin for ever (plotters' log axis walked to infinity, or up from zero); loads and
    /// latencies as far out are drawn too. Each chart, SVG (the HTML report's) and PNG,
    /// finishes, and says the bound in words; a regression fails here instead of hanging.
    #[test]
    fn extreme_bounds_and_values_are_drawn_and_finish() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let dir = tempfile::tempdir().unwrap();
            let mut said = Vec::new();
            let points = || {
                // Below a millisecond: 1e308 ms over the fastest overflowed plotters' count
                // of decades to infinity.
                vec![
                    (10.0, Some(0.0002), Some(0.0004), true),
                    (20.0, Some(0.0003), Some(0.0008), false),
                ]
            };
            let mut cases: Vec<ServingSeries> = [1e308, 5e-324, f64::MAX, f64::MIN_POSITIVE]
                .into_iter()
                .map(|bound| ServingSeries {
                    bound_ms: Some(bound),
                    ..series("a", points())
                })
                .collect();
            cases.push(series(
                "far",
                vec![
                    (1e308, Some(5e-324), Some(1e305), true),
                    (5e-324, Some(1e-300), Some(f64::MAX), false),
                    (20.0, Some(0.003), Some(0.008), true),
                ],
            ));
            for s in cases {
                let serving = Serving {
                    server: vec![s, series("b", points())],
                    others: Vec::new(),
                };
                let svgs = serving_svgs(&serving).unwrap();
                assert_eq!(svgs.len(), 1);
                said.push(
                    svgs[0].contains("bound 1.0e308 ms") || svgs[0].contains("bound 4.9e-324 ms"),
                );
                assert_eq!(write_serving_charts(&serving, dir.path()).unwrap().len(), 2);
            }
            let _ = tx.send(said);
        });
        let said = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the charts were drawn within 2 minutes");
        assert_eq!(
            said,
            [true, true, false, false, false],
            "the bound, in words"
        );
    }
}
