//! `cnnbench choose`'s chart: each configuration as a point, its error against f32 across
//! (logarithmic: f32 engines sit near 1e-7, bf16 near 1e-2) and its latency at the small
//! batch up (lower is faster), the Pareto front — the points nothing beats on both —
//! joined by a line. Configurations without a speed or an accuracy cost are listed under
//! the chart, each with what it lacks, not placed.

use super::plot::{
    self, draw, draw_legend_entry, ensure_font, line_colour, write_svg_and_png, Chart, FONT_NAME,
};
use crate::choose::{Choice, ServingChoice};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Errors below this are drawn at it (an f32 engine can agree with burn-flex exactly).
const ERROR_FLOOR: f64 = 1e-8;
const WIDTH: u32 = 900;
const PLOT_HEIGHT: u32 = 520;
const LEGEND_ROW: u32 = 22;

/// Four colours after the line charts' eight, so that a choice among a dozen
/// configurations repeats none (each point is numbered too).
const MORE_COLOURS: [RGBColor; 4] = [
    RGBColor(0x80, 0x80, 0x00),
    RGBColor(0xc0, 0x1f, 0x8f),
    RGBColor(0x00, 0x5f, 0x5f),
    RGBColor(0x00, 0x00, 0x00),
];

/// The colour of point `i`.
fn colour(i: usize) -> RGBColor {
    match i % 12 {
        i @ 0..8 => line_colour(i),
        i => MORE_COLOURS[i - 8],
    }
}

struct Pareto {
    title: String,
    /// The speed axis: its description and the unit in the legend (`ms`, `QPS`).
    speed_desc: String,
    speed_unit: &'static str,
    /// (label, error as measured, speed, on the front); drawn at the error or at
    /// [`ERROR_FLOOR`], whichever is larger.
    points: Vec<(String, f64, f64, bool)>,
    /// The configurations without a point, each with what it lacks.
    unplaced: Vec<(String, &'static str)>,
}

impl Chart for Pareto {
    fn size(&self) -> (u32, u32) {
        let rows = self.points.len() + self.unplaced.len();
        (WIDTH, PLOT_HEIGHT + 24 + LEGEND_ROW * rows as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw!(root.fill(&WHITE));
        let (plot, legend) = root.split_vertically(PLOT_HEIGHT);
        let title = self.title.clone();
        let errors = self.points.iter().map(|p| p.1.max(ERROR_FLOOR));
        let latencies = self.points.iter().map(|p| p.2);
        // At least a decade and a half of errors: the data's least times 10 and a third.
        let e = plot::log_range(errors, 3.0, 3.0);
        let (e_lo, e_hi) = (e.start, e.end.max(e.start * 30.0));
        // Logarithmic too: stacks differ by tens of times.
        let l = plot::log_range(latencies, 1.5, 1.5);
        let (l_lo, l_hi) = (l.start, l.end);
        // A point the axes do not reach is drawn at their edge.
        let at = |error: f64, latency: f64| {
            (
                plot::clamp_to(&(e_lo..e_hi), error.max(ERROR_FLOOR)),
                plot::clamp_to(&l, latency),
            )
        };
        let mut chart = draw!(ChartBuilder::on(&plot)
            .caption(title, (FONT_NAME, 17))
            .margin(16)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(
                (e_lo..e_hi)
                    .log_scale()
                    .with_key_points(one_two_five(e_lo, e_hi)),
                (l_lo..l_hi)
                    .log_scale()
                    .with_key_points(one_two_five(l_lo, l_hi)),
            ));
        draw!(chart
            .configure_mesh()
            .x_desc("largest error of the output vs f32, relative to its largest magnitude")
            .y_desc(self.speed_desc.clone())
            .x_label_formatter(&|x| format!("{x:.0e}"))
            .y_label_formatter(&|y| {
                if (y - y.round()).abs() < 1e-9 {
                    format!("{y:.0}")
                } else {
                    format!("{y:.2}")
                }
            })
            // A logarithmic axis's minor lines crowd into a grey band: only the labelled
            // lines are drawn.
            .light_line_style(WHITE)
            .label_style((FONT_NAME, 12))
            .axis_desc_style((FONT_NAME, 13))
            .draw());
        let mut front: Vec<(f64, f64)> = self
            .points
            .iter()
            .filter(|p| p.3)
            .map(|p| at(p.1, p.2))
            .collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0));
        draw!(chart.draw_series(LineSeries::new(
            front.iter().copied(),
            RGBColor(0x99, 0x99, 0x99).stroke_width(2)
        )));
        for (i, (_, error, latency, on_front)) in self.points.iter().enumerate() {
            let colour = colour(i);
            let size = if *on_front { 7 } else { 5 };
            let at = at(*error, *latency);
            draw!(chart.draw_series(std::iter::once(Circle::new(at, size, colour.filled()))));
            // The number beside the dot, up and to the right, in the dot's colour.
            draw!(chart.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + Text::new(
                        format!("{}", i + 1),
                        (8, -20),
                        (FONT_NAME, 14).into_font().color(&colour),
                    )
            )));
        }
        for (i, (label, error, latency, on_front)) in self.points.iter().enumerate() {
            let front = if *on_front {
                " — on the Pareto front"
            } else {
                ""
            };
            draw_legend_entry(
                &legend,
                i,
                colour(i),
                &format!(
                    "{}. {label}: {latency:.2} {}, error {}{front}",
                    i + 1,
                    self.speed_unit,
                    if *error < ERROR_FLOOR {
                        format!("{error:.1e} (drawn at {ERROR_FLOOR:.0e})")
                    } else {
                        format!("{error:.1e}")
                    }
                ),
            )?;
        }
        for (row, (config, lacks)) in self.unplaced.iter().enumerate() {
            let row = (self.points.len() + row) as u32;
            draw!(legend.draw(&Text::new(
                format!("not placed: {config} ({lacks})"),
                (80, 8 + (LEGEND_ROW * row) as i32),
                (FONT_NAME, 13).into_font(),
            )));
        }
        Ok(())
    }
}

/// The configurations `(name, speed, error)` as the chart's points (with whether each is
/// on `front`), and those without both numbers, each with what it lacks.
type Placed = (Vec<(String, f64, f64, bool)>, Vec<(String, &'static str)>);

/// `no_speed`: what a configuration without a speed lacks, in words (`no latency at
/// batch 1`).
fn placed<'a>(
    rows: impl Iterator<Item = (&'a String, Option<f64>, Option<f64>)>,
    front: &[String],
    no_speed: &'static str,
) -> Placed {
    let mut points = Vec::new();
    let mut unplaced = Vec::new();
    for (config, speed, error) in rows {
        let error = error.filter(|e| e.is_finite());
        match (speed, error) {
            (Some(speed), Some(error)) => {
                points.push((config.clone(), error, speed, front.contains(config)))
            }
            (None, _) => unplaced.push((config.clone(), no_speed)),
            (Some(_), None) => unplaced.push((config.clone(), "no accuracy cost")),
        }
    }
    (points, unplaced)
}

/// Writes `choose-pareto.svg` and `.png` into `dir`; returns the files (none when no
/// configuration has both a latency and an error).
pub fn write_pareto_chart(choice: &Choice, dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    let (points, unplaced) = placed(
        choice.ranked.iter().map(|r| {
            let error = r.accuracy.as_ref().and_then(|a| a.max_relative_error);
            (&r.config, r.latency_ms, error)
        }),
        &choice.pareto,
        if choice.small_batch == 1 {
            "no latency at batch 1"
        } else {
            "no latency at the small batch"
        },
    );
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let chart = Pareto {
        title: format!(
            "{} on {}: latency at batch {} against error vs f32",
            choice.model, choice.device, choice.small_batch
        ),
        speed_desc: format!("latency at batch {} (ms)", choice.small_batch),
        speed_unit: "ms",
        points,
        unplaced,
    };
    let mut written = Vec::new();
    write_svg_and_png(&chart, dir, "choose-pareto", &mut written)?;
    Ok(written)
}

/// `choose --scenario server`'s chart: each configuration's peak load (up: higher
/// serves more) against its error; `choose-server-pareto.svg` and `.png` in `dir`
/// (none when no configuration has both a peak and an error).
pub fn write_serving_pareto_chart(
    choice: &ServingChoice,
    dir: &Path,
) -> anyhow::Result<Vec<PathBuf>> {
    ensure_font()?;
    let (points, unplaced) = placed(
        choice.ranked.iter().map(|r| {
            let error = r.accuracy.as_ref().and_then(|a| a.max_relative_error);
            (&r.config, r.peak_qps, error)
        }),
        &choice.pareto,
        "no load met the bound",
    );
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let chart = Pareto {
        title: format!(
            "{} on {}: highest load with p99 ≤ {} ms against error vs f32",
            choice.model, choice.device, choice.bound_ms
        ),
        speed_desc: format!(
            "queries per second served with p99 ≤ {} ms",
            choice.bound_ms
        ),
        speed_unit: "QPS",
        points,
        unplaced,
    };
    let mut written = Vec::new();
    write_svg_and_png(&chart, dir, "choose-server-pareto", &mut written)?;
    Ok(written)
}

/// The ticks of a logarithmic axis from `lo` to `hi`: 1, 2 and 5 times each power of
/// ten between them; the powers alone over more than four decades (their labels would
/// crowd), every whole mantissa where 1-2-5 leaves fewer than three (a range within one
/// decade, which plotters labels at a single tick, or at so many the labels overlap).
pub(super) fn one_two_five(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return Vec::new();
    }
    let ticks = |mantissas: &[f64]| -> Vec<f64> {
        let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        (first..=last)
            .flat_map(|decade| mantissas.iter().map(move |m| m * 10f64.powi(decade)))
            .filter(|t| (lo..=hi).contains(t))
            .collect()
    };
    if (hi / lo).log10() > 4.0 {
        return ticks(&[1.0]);
    }
    let coarse = ticks(&[1.0, 2.0, 5.0]);
    if coarse.len() >= 3 {
        coarse
    } else {
        ticks(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_axis_is_labelled_at_one_two_five_or_powers_or_every_mantissa() {
        let close = |got: Vec<f64>, want: &[f64]| {
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (g, w) in got.iter().zip(want) {
                assert!((g - w).abs() < 1e-9 * w, "{got:?}");
            }
        };
        close(one_two_five(0.3, 45.0), &[0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        // ResNet-50's choice on a Zen 5: 4.9 to 30 ms drawn from 3.3 to 45 (plotters'
        // own key points labelled 10 alone).
        close(one_two_five(3.3, 45.0), &[5.0, 10.0, 20.0]);
        // The errors of ResNet-50's choice: the powers of ten alone.
        close(
            one_two_five(1e-7, 3e-2),
            &[1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2],
        );
        // Within a decade, every whole mantissa.
        close(one_two_five(4.0, 9.5), &[4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
        assert!(one_two_five(0.0, 1.0).is_empty());
        assert!(one_two_five(2.0, 1.0).is_empty());
    }

    #[test]
    fn a_configuration_without_a_point_says_what_it_lacks() {
        let names = ["fast".to_string(), "hinted".into(), "unmeasured".into()];
        let rows = [
            (&names[0], Some(4.8), Some(8e-3)),
            // OpenVINO's throughput hint has no batch-1 latency, though it has a cost.
            (&names[1], None, Some(8e-3)),
            (&names[2], Some(9.0), Some(f64::NAN)),
        ];
        let (points, unplaced) = placed(
            rows.into_iter(),
            &["fast".to_string()],
            "no latency at batch 1",
        );
        assert_eq!(points, [("fast".to_string(), 8e-3, 4.8, true)]);
        assert_eq!(
            unplaced,
            [
                ("hinted".to_string(), "no latency at batch 1"),
                ("unmeasured".to_string(), "no accuracy cost"),
            ]
        );
    }

    /// Errors and speeds at f64's ends (a hostile or broken result): the chart is drawn,
    /// every point at its place or the axes' edge, in bounded time.
    #[test]
    fn extreme_points_are_drawn_and_finish() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let chart = Pareto {
                title: "t".into(),
                speed_desc: "ms".into(),
                speed_unit: "ms",
                points: vec![
                    ("a".into(), 1e308, 5e-324, true),
                    ("b".into(), 5e-324, f64::MAX, false),
                    ("c".into(), 1e-3, 4.0, true),
                    ("d".into(), 2e-3, 9.0, false),
                ],
                unplaced: Vec::new(),
            };
            let _ = tx.send(plot::svg(&chart).map(|svg| svg.len()));
        });
        let drawn = rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("the chart was drawn within 2 minutes");
        assert!(drawn.unwrap() > 1000);
    }
}
