//! Batch sweeps in a report: the rows of one model, input size and mode measured at two
//! or more batch sizes form a sweep. Per configuration it gives throughput and latency
//! against the batch size (with the median's 95% confidence interval as the spread), as
//! a table (rows: batch, columns: configurations) and as curves ([`crate::charts::sweep`]).

use crate::group::Entry;
use crate::report::Report;
use cnnbench_results::Mode;
use cnnbench_results::Quantity;
use std::collections::BTreeMap;

/// One batch size of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPoint {
    pub batch: usize,
    /// Median total time of a pass (one batch), seconds.
    pub latency_s: f64,
    /// The median's 95% confidence interval, seconds.
    pub latency_ci_s: (f64, f64),
    /// The 99th percentile of the pass time, seconds (from the pooled samples).
    pub latency_p99_s: f64,
    /// Images per second from the median: batch / latency.
    pub images_per_s: f64,
    /// Throughput at the ends of the latency interval (slow end first).
    pub images_per_s_ci: (f64, f64),
}

/// One configuration's curve.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepSeries {
    /// Device and software, as in the report's tables.
    pub config: String,
    /// In increasing batch order.
    pub points: Vec<SweepPoint>,
}

/// One model, input size and mode across batch sizes.
#[derive(Clone, Debug, PartialEq)]
pub struct Sweep {
    pub model: String,
    /// `[C, H, W]`.
    pub input: [usize; 3],
    pub mode: Mode,
    /// Every batch size any series has, increasing.
    pub batches: Vec<usize>,
    pub series: Vec<SweepSeries>,
}

impl Sweep {
    /// "ResNet-50, 3×224×224, infer".
    pub fn title(&self) -> String {
        let [c, h, w] = self.input;
        format!("{}, {c}×{h}×{w}, {}", self.model, self.mode)
    }

    /// The table: rows are batch sizes; per configuration, images/s and the latency of
    /// a batch (median and p99, ms). "–" where a configuration lacks that batch.
    pub fn cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut head = vec!["Batch".to_string()];
        for s in &self.series {
            head.push(format!("{} images/s", s.config));
            head.push(format!("{} ms (p99)", s.config));
        }
        let rows = self
            .batches
            .iter()
            .map(|&b| {
                let mut row = vec![b.to_string()];
                for s in &self.series {
                    match s.points.iter().find(|p| p.batch == b) {
                        Some(p) => {
                            row.push(format!("{:.1}", p.images_per_s));
                            row.push(format!(
                                "{:.2} ({:.2})",
                                p.latency_s * 1e3,
                                p.latency_p99_s * 1e3
                            ));
                        }
                        None => row.extend(["–".to_string(), "–".to_string()]),
                    }
                }
                row
            })
            .collect();
        (head, rows)
    }
}

fn point(e: &Entry) -> Option<SweepPoint> {
    let s = e.summaries.get(&Quantity::Total)?;
    if s.median.is_nan() || s.median <= 0.0 {
        return None;
    }
    let batch = e.table.batch_size;
    // A data-parallel pass trains every rank's batch.
    let images = (batch * e.config.engine.world_size) as f64;
    let p99 = match s.percentiles {
        Some(p) => p.p99,
        None => {
            let mut sorted = e.samples.get(&Quantity::Total)?.clone();
            sorted.sort_by(f64::total_cmp);
            cnnbench_results::stats::quantile(&sorted, 0.99)
        }
    };
    let (lo, hi) = (s.median_ci95[0], s.median_ci95[1]);
    let per_s = |t: f64| {
        if t > 0.0 {
            images / t
        } else {
            f64::INFINITY
        }
    };
    Some(SweepPoint {
        batch,
        latency_s: s.median,
        latency_ci_s: (lo, hi),
        latency_p99_s: p99,
        images_per_s: per_s(s.median),
        images_per_s_ci: (per_s(hi), per_s(lo)),
    })
}

/// Every sweep in the report: groups of rows with the same model, input and mode at
/// two or more batch sizes, in the report's table order.
pub fn sweeps(report: &Report) -> Vec<Sweep> {
    type Key = (String, [usize; 3], Mode);
    let mut order: Vec<Key> = Vec::new();
    let mut groups: BTreeMap<String, (Key, Vec<&Entry>)> = BTreeMap::new();
    for t in &report.tables {
        for e in report.rows(t) {
            let key: Key = (e.model_name.clone(), e.table.input, e.table.mode);
            let id = format!("{key:?}");
            if !groups.contains_key(&id) {
                order.push(key.clone());
            }
            groups
                .entry(id)
                .or_insert_with(|| (key, Vec::new()))
                .1
                .push(e);
        }
    }
    let mut out = Vec::new();
    for key in order {
        let Some((_, entries)) = groups.get(&format!("{key:?}")) else {
            continue;
        };
        let mut batches: Vec<usize> = entries.iter().map(|e| e.table.batch_size).collect();
        batches.sort();
        batches.dedup();
        if batches.len() < 2 {
            continue;
        }
        let mut by_config: Vec<SweepSeries> = Vec::new();
        for e in entries {
            let Some(p) = point(e) else { continue };
            let name = e.config_name();
            match by_config.iter_mut().find(|s| s.config == name) {
                Some(s) => s.points.push(p),
                None => by_config.push(SweepSeries {
                    config: name,
                    points: vec![p],
                }),
            }
        }
        for s in &mut by_config {
            s.points.sort_by_key(|p| p.batch);
        }
        by_config.sort_by(|a, b| a.config.cmp(&b.config));
        let (model, input, mode) = key;
        out.push(Sweep {
            model,
            input,
            mode,
            batches,
            series: by_config,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_put_batches_in_rows_and_configurations_in_columns() {
        let p = |batch: usize, ms: f64| SweepPoint {
            batch,
            latency_s: ms / 1e3,
            latency_ci_s: (ms / 1e3 * 0.9, ms / 1e3 * 1.1),
            latency_p99_s: ms / 1e3 * 1.5,
            images_per_s: batch as f64 / (ms / 1e3),
            images_per_s_ci: (0.0, 0.0),
        };
        let sweep = Sweep {
            model: "m".into(),
            input: [3, 32, 32],
            mode: Mode::Infer,
            batches: vec![1, 2, 4],
            series: vec![
                SweepSeries {
                    config: "A".into(),
                    points: vec![p(1, 10.0), p(2, 10.0), p(4, 20.0)],
                },
                SweepSeries {
                    config: "B".into(),
                    points: vec![p(1, 5.0), p(4, 8.0)],
                },
            ],
        };
        let (head, rows) = sweep.cells();
        assert_eq!(
            head,
            [
                "Batch",
                "A images/s",
                "A ms (p99)",
                "B images/s",
                "B ms (p99)"
            ]
        );
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[0],
            ["1", "100.0", "10.00 (15.00)", "200.0", "5.00 (7.50)"]
        );
        assert_eq!(rows[1][3], "–", "B has no batch 2");
        assert_eq!(rows[2][1], "200.0");
        assert_eq!(sweep.title(), "m, 3×32×32, infer");
    }
}

#[cfg(test)]
mod label_tests {
    use crate::record::EngineDesc;
    use cnnbench_results::Precision;

    /// Channels-last runs are a configuration of their own, and their name says so:
    /// otherwise a sweep would draw two layouts as one line.
    #[test]
    fn channels_last_shows_in_the_configuration_name() {
        let mut e = EngineDesc {
            name: "torch-cpu".into(),
            framework: "libtorch".into(),
            framework_version: "2.11.0".into(),
            backend: "cpu".into(),
            libraries: Default::default(),
            settings: Default::default(),
            variant: Vec::new(),
            threads_requested: None,
            precision: Precision::F32,
            world_size: 1,
            allocator: None,
        };
        assert_eq!(e.label(), "torch-cpu 2.11.0");
        e.settings
            .insert("memory_format".into(), "channels_last".into());
        assert_eq!(e.label(), "torch-cpu 2.11.0, channels-last");
    }

    /// OpenVINO's throughput hint is a schedule of its own, and its name says so (in the
    /// words the engine declared); bf16 too, so that precisions are never drawn or
    /// pooled as one.
    #[test]
    fn the_throughput_hint_and_a_low_precision_show_in_the_name() {
        let mut e = EngineDesc {
            name: "openvino-cpu".into(),
            framework: "openvino".into(),
            framework_version: "2026.4.1".into(),
            backend: "cpu".into(),
            libraries: Default::default(),
            settings: Default::default(),
            variant: Vec::new(),
            threads_requested: Some(2),
            precision: Precision::Bf16,
            world_size: 1,
            allocator: None,
        };
        assert_eq!(e.label(), "openvino-cpu 2026.4.1, bf16, 2 threads");
        e.variant = vec!["throughput hint".into()];
        assert_eq!(
            e.label(),
            "openvino-cpu 2026.4.1, bf16, 2 threads, throughput hint"
        );
    }

    /// A compiled engine's mode and freezing are other programs, named as such; the
    /// default mode and freezing off add nothing.
    #[test]
    fn compile_mode_and_freezing_show_in_the_name() {
        let mut e = EngineDesc {
            name: "pytorch-compile".into(),
            framework: "pytorch".into(),
            framework_version: "2.11.0".into(),
            backend: "inductor".into(),
            libraries: Default::default(),
            settings: Default::default(),
            variant: Vec::new(),
            threads_requested: None,
            precision: Precision::AmpBf16,
            world_size: 1,
            allocator: None,
        };
        assert_eq!(e.label(), "pytorch-compile 2.11.0, amp-bf16");
        e.variant = vec!["max-autotune".into(), "freezing".into()];
        assert_eq!(
            e.label(),
            "pytorch-compile 2.11.0, amp-bf16, max-autotune, freezing"
        );
    }
}
