//! A profile's roofline chart: arithmetic intensity (FLOPs per byte moved) against the
//! achieved rate of every node that computes, both axes logarithmic, under the roofs
//! the profile's ceilings draw (each memory level's slope up to the compute roof), each
//! node coloured by what bounds it, so a reader sees at a glance which layers sit on a
//! roof and which far below any.

use super::pareto::one_two_five;
use super::plot::{self, draw, Chart, FONT_NAME};
use cnnbench_results::profile::ProfileDoc;
use cnnbench_results::roofline::{Bound, Ceilings};
use plotters::coord::Shift;
use plotters::prelude::*;

const COMPUTE: RGBColor = RGBColor(0x4e, 0x79, 0xa7);
const MEMORY: RGBColor = RGBColor(0xf2, 0x8e, 0x2b);
const OVERHEAD: RGBColor = RGBColor(0xe1, 0x57, 0x59);
const ROOF: RGBColor = RGBColor(0x55, 0x55, 0x55);
/// The slowest nodes named beside their dots.
const NAMED: usize = 4;
const WIDTH: u32 = 960;
const HEIGHT: u32 = 640;

fn bound_colour(bound: Bound) -> RGBColor {
    match bound {
        Bound::Compute => COMPUTE,
        Bound::Memory => MEMORY,
        Bound::Overhead => OVERHEAD,
    }
}

/// One dot: the node's name, its intensity and rate, what bounds it, its forward time.
struct Dot {
    name: String,
    intensity: f64,
    gflops_per_s: f64,
    bound: Bound,
    seconds: f64,
}

/// The chart of one profile with ceilings.
pub(super) struct RooflineChart {
    caption: String,
    ceilings: Ceilings,
    dots: Vec<Dot>,
    network: Option<String>,
}

impl RooflineChart {
    /// The chart of `doc`, or `None` without ceilings or without a node they judge.
    pub(super) fn of(doc: &ProfileDoc, caption: String) -> Option<RooflineChart> {
        let ceilings = doc.ceilings.clone()?;
        let dots: Vec<Dot> = doc
            .nodes
            .iter()
            .filter_map(|n| {
                let r = n.roofline.as_ref()?;
                Some(Dot {
                    name: cnnbench_results::printable(&n.name),
                    intensity: r.intensity,
                    gflops_per_s: r.achieved_gflops_per_s,
                    bound: r.bound,
                    seconds: n.forward.median,
                })
            })
            .filter(|d| d.intensity.is_finite() && d.gflops_per_s.is_finite())
            .collect();
        if dots.is_empty() {
            return None;
        }
        let network = doc.roofline.as_ref().map(|net| {
            format!(
                "the network: {:.0}% of the measured roof ({:.2} ms allowed, {:.2} ms measured)",
                net.of_roof * 100.0,
                net.roof_time_s * 1e3,
                net.measured_s * 1e3
            )
        });
        Some(RooflineChart {
            caption,
            ceilings,
            dots,
            network,
        })
    }
}

impl Chart for RooflineChart {
    fn size(&self) -> (u32, u32) {
        (WIDTH, HEIGHT)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> anyhow::Result<()> {
        draw!(root.fill(&WHITE));
        let (plot, legend) = root.split_vertically(HEIGHT - 101);
        let c = &self.ceilings;
        let ridges = c.memory.iter().map(|m| c.ridge(m));
        let x = plot::log_range(
            self.dots.iter().map(|d| d.intensity).chain(ridges),
            3.0,
            3.0,
        );
        let y = plot::log_range(
            self.dots
                .iter()
                .map(|d| d.gflops_per_s)
                .chain(std::iter::once(c.compute_gflops_per_s)),
            3.0,
            2.0,
        );
        let mut chart = draw!(ChartBuilder::on(&plot)
            .caption(&self.caption, (FONT_NAME, 17))
            .margin(16)
            .margin_right(40)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(
                x.clone()
                    .log_scale()
                    .with_key_points(one_two_five(x.start, x.end)),
                y.clone()
                    .log_scale()
                    .with_key_points(one_two_five(y.start, y.end)),
            ));
        draw!(chart
            .configure_mesh()
            .x_desc("arithmetic intensity, FLOPs per byte moved (weights, inputs and output)")
            .y_desc("GFLOP/s, forward pass")
            .x_label_formatter(&|v| format!("{v}"))
            .y_label_formatter(&|v| format!("{v}"))
            .light_line_style(WHITE)
            .label_style((FONT_NAME, 12))
            .axis_desc_style((FONT_NAME, 13))
            .draw());
        // Each level's roof: its slope up to the ridge, then the compute roof.
        for (i, level) in c.memory.iter().enumerate() {
            let ridge = c.ridge(level).clamp(x.start, x.end);
            let at = |v: f64| (v, plot::clamp_to(&y, c.roof(v, level)));
            let style = ROOF.stroke_width(if i + 1 == c.memory.len() { 2 } else { 1 });
            draw!(chart.draw_series(LineSeries::new([at(x.start), at(ridge), at(x.end)], style)));
        }
        // One key for the slopes, left to right (the fastest level's is leftmost): labels
        // beside slopes of close bandwidths overlap.
        let mut by_speed: Vec<_> = c.memory.iter().collect();
        by_speed.sort_by(|a, b| b.gb_per_s.total_cmp(&a.gb_per_s));
        let slopes: Vec<String> = by_speed
            .iter()
            .map(|m| format!("{} {:.0} GB/s", m.level, m.gb_per_s))
            .collect();
        draw!(chart.draw_series(std::iter::once(
            EmptyElement::at((x.start, y.end))
                + Text::new(
                    format!("memory roofs, left to right: {}", slopes.join(", ")),
                    (10, 8),
                    (FONT_NAME, 12).into_font().color(&ROOF),
                )
        )));
        draw!(chart.draw_series(std::iter::once(
            EmptyElement::at((x.end, plot::clamp_to(&y, c.compute_gflops_per_s)))
                + Text::new(
                    format!(
                        "{} {:.0} GFLOP/s",
                        c.compute_primitive, c.compute_gflops_per_s
                    ),
                    (-230, -18),
                    (FONT_NAME, 12).into_font().color(&ROOF),
                )
        )));
        let mut slowest: Vec<&Dot> = self.dots.iter().collect();
        slowest.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
        for dot in &self.dots {
            let at = (
                plot::clamp_to(&x, dot.intensity),
                plot::clamp_to(&y, dot.gflops_per_s),
            );
            draw!(chart.draw_series(std::iter::once(Circle::new(
                at,
                4,
                bound_colour(dot.bound).filled()
            ))));
        }
        // Nodes of one op and shapes share a benchmark and so a dot: named once, with
        // how many there are.
        let mut named: Vec<(f64, f64)> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for dot in slowest.iter() {
            if named.len() == NAMED {
                break;
            }
            let place = (dot.intensity, dot.gflops_per_s);
            if named.contains(&place) {
                continue;
            }
            named.push(place);
            let alike = self
                .dots
                .iter()
                .filter(|d| (d.intensity, d.gflops_per_s) == place)
                .count();
            let at = (
                plot::clamp_to(&x, dot.intensity),
                plot::clamp_to(&y, dot.gflops_per_s),
            );
            // A number beside the dot, its name in the key below: names of close dots
            // would overlap.
            let name = if alike > 1 {
                format!("{} (and {} alike)", dot.name, alike - 1)
            } else {
                dot.name.clone()
            };
            draw!(chart.draw_series(std::iter::once(
                EmptyElement::at(at)
                    + Text::new(
                        named.len().to_string(),
                        (6, -14),
                        (FONT_NAME, 13).into_font().color(&bound_colour(dot.bound)),
                    )
            )));
            names.push(format!("{} {name}", named.len()));
        }
        let mut key_x = 80;
        for bound in [Bound::Compute, Bound::Memory, Bound::Overhead] {
            let count = self.dots.iter().filter(|d| d.bound == bound).count();
            draw!(legend.draw(&Circle::new((key_x, 14), 5, bound_colour(bound).filled())));
            let text = format!(
                "{}-bound ({count} node{})",
                bound.as_str(),
                if count == 1 { "" } else { "s" }
            );
            draw!(legend.draw(&Text::new(
                text.clone(),
                (key_x + 10, 6),
                (FONT_NAME, 13).into_font()
            )));
            key_x += 30 + 8 * text.len() as i32;
        }
        let mut notes = vec![
            format!("the {NAMED} slowest: {}", names.join(", ")),
            "nodes without FLOPs (activations, pooling, adds) count in the network's share, not here"
                .to_string(),
        ];
        notes.extend(self.network.clone());
        for (row, note) in notes.iter().rev().enumerate() {
            draw!(legend.draw(&Text::new(
                note.clone(),
                (80, 30 + 17 * row as i32),
                (FONT_NAME, 13).into_font()
            )));
        }
        Ok(())
    }
}
