//! Helpers shared by the integration tests: fixture paths, a fake model catalog and
//! a writer of small `cnnbench-result` files.
#![allow(dead_code)]

use cnnbench_report::{ModelCatalog, ModelFacts};
use serde_json::json;
use std::path::{Path, PathBuf};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn legacy_outputs() -> PathBuf {
    fixtures().join("legacy/outputs")
}

pub fn legacy_aliases() -> cnnbench_report::Aliases {
    cnnbench_report::Aliases::from_file(&fixtures().join("legacy-aliases.toml")).unwrap()
}

/// Knows two models, the way the zoo would answer.
pub struct FakeCatalog;

impl ModelCatalog for FakeCatalog {
    fn canonical_name(&self, name: &str) -> Option<String> {
        match name.to_ascii_lowercase().replace(['-', '_'], "").as_str() {
            "resnet50" => Some("resnet50".into()),
            "alexnetbvlc" => Some("alexnet-bvlc".into()),
            "tiny" => Some("tiny".into()),
            _ => None,
        }
    }
    fn facts(&self, name: &str, _input: [usize; 3]) -> Option<ModelFacts> {
        match name {
            "resnet50" => Some(ModelFacts {
                depth: 50,
                params: 25_557_032,
                macs: 4_089_184_256,
                top1_error: Some(23.85),
                top5_error: Some(7.13),
            }),
            _ => None,
        }
    }
}

/// A result document of ours with the given total samples in milliseconds; forward is
/// 40% of each total and backward the rest.
pub struct Run<'a> {
    pub model: &'a str,
    pub device_name: &'a str,
    pub engine: &'a str,
    pub version: &'a str,
    pub cpu: &'a str,
    pub batch: usize,
    pub mode: &'a str,
    pub totals_ms: Vec<f64>,
}

impl<'a> Run<'a> {
    pub fn new(model: &'a str, device_name: &'a str, totals_ms: Vec<f64>) -> Self {
        Run {
            model,
            device_name,
            engine: "burn-flex",
            version: "0.22.1",
            cpu: "Test CPU",
            batch: 16,
            mode: "train",
            totals_ms,
        }
    }

    pub fn json(&self) -> serde_json::Value {
        let total: Vec<f64> = self.totals_ms.iter().map(|t| t / 1000.0).collect();
        let forward: Vec<f64> = total.iter().map(|t| t * 0.4).collect();
        let backward: Vec<f64> = total.iter().zip(&forward).map(|(t, f)| t - f).collect();
        let summary =
            |v: &[f64]| serde_json::to_value(cnnbench_results::Summary::of(v).unwrap()).unwrap();
        let mut samples = serde_json::Map::new();
        let mut summaries = serde_json::Map::new();
        samples.insert("forward".into(), json!(forward));
        summaries.insert("forward".into(), summary(&forward));
        if self.mode != "infer" {
            samples.insert("backward".into(), json!(backward));
            summaries.insert("backward".into(), summary(&backward));
        }
        let total = if self.mode == "infer" {
            forward.clone()
        } else {
            total
        };
        samples.insert("total".into(), json!(total));
        summaries.insert("total".into(), summary(&total));
        json!({
            "format": "cnnbench-result",
            "version": 1,
            "tool": {"name": "cnnbench", "version": "0.1.0", "git_commit": null},
            "model": {"name": self.model, "source": "zoo", "params": 1000, "macs": 2_000_000, "depth": 5, "input": [3, 224, 224]},
            "config": {"mode": self.mode, "batch_size": self.batch, "image_size": [224, 224], "warmup": 1,
                       "passes": self.totals_ms.len(), "seed": 0, "threads_requested": null, "precision": "f32",
                       "allocator": {"policy": "keep", "detail": "glibc 2.36: mmap threshold 1 GiB, trimming off"}},
            "engine": {"name": self.engine, "framework": "burn", "framework_version": self.version, "backend": "flex",
                       "device": "cpu", "device_name": self.device_name, "threads": 2, "libraries": {}, "settings": {}},
            "machine": {"cpu": self.cpu, "cores_logical": 2, "cores_physical": 2, "memory_bytes": 25_769_803_776u64,
                        "os": "Linux", "kernel": "6.1", "arch": "x86_64"},
            "started_at": "2025-01-01T00:00:00Z",
            "duration_s": 1.0,
            "samples": samples,
            "summary": summaries,
            "throughput": {"images_per_s": 1.0, "gflops_per_s": 1.0, "flops_per_pass": 1.0},
            "memory": {"peak_rss_bytes": 123456789, "peak_rss_reset": true, "device_peak_bytes": null, "estimate_bytes": 1},
            "warnings": []
        })
    }

    pub fn write(&self, dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_string_pretty(&self.json()).unwrap()).unwrap();
        p
    }
}

/// Samples around `center` ms with a deterministic spread of about ±`spread` percent.
pub fn noisy(center: f64, spread: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut rng = cnnbench_results::stats::SplitMix64::new(seed);
    (0..n)
        .map(|_| {
            let u = rng.next_f64();
            center * (1.0 + spread / 100.0 * (2.0 * u - 1.0))
        })
        .collect()
}

/// The report of every result in `dir`, with the default options.
pub fn report_of(dir: &Path) -> cnnbench_report::Report {
    let loaded = cnnbench_report::load_paths(&[dir.to_path_buf()], true).unwrap();
    cnnbench_report::Report::build(
        loaded.records,
        &Default::default(),
        &cnnbench_report::NoCatalog,
        &Default::default(),
    )
    .unwrap()
}

/// The original suite's two GTX 1080 Ti folders (nn and cuDNN 5.1.10), loaded.
pub fn gtx_1080ti_records() -> Vec<cnnbench_report::record::Record> {
    cnnbench_report::load_paths(
        &[
            legacy_outputs().join("1080Ti"),
            legacy_outputs().join("1080Ti_cudnn51"),
        ],
        true,
    )
    .unwrap()
    .records
}
