//! Data-parallel scaling in a report: the rows of one model, input, mode and batch per
//! rank, in one configuration, measured at two or more world sizes. Per configuration it
//! gives images/s against the number of ranks, the speed-up over the fewest ranks, and
//! the efficiency (throughput at N ÷ (N × throughput at 1 rank)), as a table and a chart
//! ([`crate::charts::scaling`]).

use crate::group::Entry;
use crate::report::Report;
use cnnbench_results::Mode;
use cnnbench_results::Quantity;
use std::collections::BTreeMap;

/// One world size of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingPoint {
    pub world_size: usize,
    /// Every rank's images per second, from the report's statistic of the total.
    pub images_per_s: f64,
    /// Throughput over the throughput of the series' fewest ranks.
    pub speedup: f64,
    /// Throughput per rank over the fewest ranks' throughput per rank (1 = linear).
    pub efficiency: f64,
    /// The all-reduce's share of a pass (rank 0's), where it was timed.
    pub allreduce_share: Option<f64>,
    /// The machines the ranks ran on, where the results say.
    pub hosts: Option<usize>,
}

/// One configuration's scaling.
#[derive(Clone, Debug, PartialEq)]
pub struct ScalingSeries {
    /// Device and software without the number of ranks.
    pub config: String,
    /// In increasing world size.
    pub points: Vec<ScalingPoint>,
}

/// One model, input, mode and batch per rank across world sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaling {
    pub model: String,
    pub input: [usize; 3],
    pub mode: Mode,
    /// Images per rank and pass.
    pub batch: usize,
    /// Every world size any series has, increasing.
    pub world_sizes: Vec<usize>,
    pub series: Vec<ScalingSeries>,
}

impl Scaling {
    /// "ResNet-50, 3×224×224, step, batch 16 per rank".
    pub fn title(&self) -> String {
        let [c, h, w] = self.input;
        format!(
            "{}, {c}×{h}×{w}, {}, batch {} per rank",
            self.model, self.mode, self.batch
        )
    }

    /// "4 (2 hosts × 2)" when the ranks at `world_size` ran on several machines (every
    /// configuration agreeing), else the number of ranks.
    fn ranks_label(&self, world_size: usize) -> String {
        let hosts: Vec<Option<usize>> = self
            .series
            .iter()
            .filter_map(|s| s.points.iter().find(|p| p.world_size == world_size))
            .map(|p| p.hosts)
            .collect();
        match hosts.first() {
            Some(Some(h)) if *h > 1 && hosts.iter().all(|x| *x == Some(*h)) => {
                if world_size.is_multiple_of(*h) {
                    format!("{world_size} ({h} hosts × {})", world_size / h)
                } else {
                    format!("{world_size} ({h} hosts)")
                }
            }
            _ => world_size.to_string(),
        }
    }

    /// The table: rows are world sizes (with the hosts × ranks per host of multi-host
    /// runs); per configuration, images/s, the speed-up and the efficiency, and the
    /// all-reduce's share of a pass. "–" where a configuration lacks that world size.
    pub fn cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut head = vec!["Ranks".to_string()];
        for s in &self.series {
            head.push(format!("{} images/s", s.config));
            head.push("speed-up".into());
            head.push("efficiency".into());
            head.push("allreduce".into());
        }
        let rows = self
            .world_sizes
            .iter()
            .map(|&n| {
                let mut row = vec![self.ranks_label(n)];
                for s in &self.series {
                    match s.points.iter().find(|p| p.world_size == n) {
                        Some(p) => row.extend([
                            format!("{:.1}", p.images_per_s),
                            format!("{:.2}×", p.speedup),
                            format!("{:.0}%", p.efficiency * 100.0),
                            p.allreduce_share
                                .map_or("–".into(), |f| format!("{:.0}%", f * 100.0)),
                        ]),
                        None => row.extend(std::iter::repeat_n("–".to_string(), 4)),
                    }
                }
                row
            })
            .collect();
        (head, rows)
    }
}

/// Every scaling in the report: rows that differ only in their number of ranks, at two
/// or more world sizes, in the report's table order.
pub fn scalings(report: &Report) -> Vec<Scaling> {
    type Key = (String, [usize; 3], Mode, usize);
    let mut order: Vec<Key> = Vec::new();
    let mut groups: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for t in &report.tables {
        for e in report.rows(t) {
            let key: Key = (
                e.model_name.clone(),
                e.table.input,
                e.table.mode,
                e.table.batch_size,
            );
            let id = format!("{key:?}");
            if !groups.contains_key(&id) {
                order.push(key);
            }
            groups.entry(id).or_default().push(e);
        }
    }
    let mut out = Vec::new();
    for key in order {
        let Some(entries) = groups.get(&format!("{key:?}")) else {
            continue;
        };
        let mut world_sizes: Vec<usize> = entries
            .iter()
            .map(|e| e.config.engine.world_size.max(1))
            .collect();
        world_sizes.sort();
        world_sizes.dedup();
        if world_sizes.len() < 2 {
            continue;
        }
        // Series: the configuration with its number of ranks left out, and its threads
        // too (`--nproc` gives each rank its share of the cores), unless that would put
        // two rows at one world size.
        let series_of = |e: &Entry, keep_threads: bool| {
            let mut engine = e.config.engine.clone();
            engine.world_size = 1;
            if !keep_threads {
                engine.threads_requested = None;
            }
            format!("{} · {}", e.device, engine.label())
        };
        let mut seen = std::collections::HashSet::new();
        let keep_threads = !entries
            .iter()
            .all(|e| seen.insert((series_of(e, false), e.config.engine.world_size)));
        type Measured = (usize, f64, Option<f64>, Option<usize>);
        let mut by_config: BTreeMap<String, Vec<Measured>> = BTreeMap::new();
        for e in entries {
            let Some(ips) = e.images_per_s(report.stat).filter(|v| v.is_finite()) else {
                continue;
            };
            let n = e.config.engine.world_size.max(1);
            let share = match (
                e.value(Quantity::Allreduce, report.stat),
                e.value(Quantity::Total, report.stat),
            ) {
                (Some(a), Some(t)) if t > 0.0 => Some(a / t),
                _ => None,
            };
            by_config
                .entry(series_of(e, keep_threads))
                .or_default()
                .push((n, ips, share, e.hosts));
        }
        let series: Vec<ScalingSeries> = by_config
            .into_iter()
            .filter(|(_, points)| points.len() >= 2)
            .map(|(config, mut points)| {
                points.sort_by_key(|p| p.0);
                let (n0, ips0, _, _) = points[0];
                let points = points
                    .into_iter()
                    .map(|(n, ips, share, hosts)| ScalingPoint {
                        world_size: n,
                        images_per_s: ips,
                        speedup: ips / ips0,
                        efficiency: (ips / n as f64) / (ips0 / n0 as f64),
                        allreduce_share: share,
                        hosts,
                    })
                    .collect();
                ScalingSeries { config, points }
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let (model, input, mode, batch) = key;
        out.push(Scaling {
            model,
            input,
            mode,
            batch,
            world_sizes,
            series,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(n: usize, ips: f64, base: f64) -> ScalingPoint {
        ScalingPoint {
            world_size: n,
            images_per_s: ips,
            speedup: ips / base,
            efficiency: ips / n as f64 / base,
            allreduce_share: (n > 1).then_some(0.25),
            hosts: None,
        }
    }

    #[test]
    fn cells_put_world_sizes_in_rows() {
        let s = Scaling {
            model: "m".into(),
            input: [3, 32, 32],
            mode: Mode::Step,
            batch: 16,
            world_sizes: vec![1, 2, 4],
            series: vec![ScalingSeries {
                config: "cpu · torch-cpu 2.11.0".into(),
                points: vec![point(1, 100.0, 100.0), point(4, 300.0, 100.0)],
            }],
        };
        let (head, rows) = s.cells();
        assert_eq!(
            head,
            [
                "Ranks",
                "cpu · torch-cpu 2.11.0 images/s",
                "speed-up",
                "efficiency",
                "allreduce"
            ]
        );
        assert_eq!(rows[0], ["1", "100.0", "1.00×", "100%", "–"]);
        assert_eq!(rows[1][1], "–", "no 2-rank run");
        assert_eq!(rows[2], ["4", "300.0", "3.00×", "75%", "25%"]);
        assert_eq!(s.title(), "m, 3×32×32, step, batch 16 per rank");
    }

    #[test]
    fn multi_host_rows_say_hosts_times_ranks() {
        let on = |n, hosts| ScalingPoint {
            hosts,
            ..point(n, 100.0 * n as f64, 100.0)
        };
        let series = |config: &str, points| ScalingSeries {
            config: config.into(),
            points,
        };
        let mut s = Scaling {
            model: "m".into(),
            input: [3, 32, 32],
            mode: Mode::Step,
            batch: 16,
            world_sizes: vec![1, 2, 4, 6],
            series: vec![series(
                "cpu · torch-cpu",
                vec![
                    on(1, Some(1)),
                    on(2, Some(1)),
                    on(4, Some(2)),
                    on(6, Some(4)),
                ],
            )],
        };
        let labels = |s: &Scaling| {
            s.cells()
                .1
                .into_iter()
                .map(|r| r[0].clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(labels(&s), ["1", "2", "4 (2 hosts × 2)", "6 (4 hosts)"]);
        // Configurations that disagree on the machines at a world size: only the count.
        s.series.push(series(
            "gpu · torch-cuda",
            vec![on(1, None), on(4, Some(4))],
        ));
        assert_eq!(labels(&s)[2], "4");
    }
}
