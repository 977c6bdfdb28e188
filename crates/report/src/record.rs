//! One benchmark run, in the shape both file kinds (ours and the original suite's)
//! are read into, so everything downstream handles a single type.

use chrono::{DateTime, Utc};
use cnnbench_results::{MachineInfo, Quantity};
use cnnbench_results::{Mode, Precision};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which kind of file a record was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// A `cnnbench-result` document.
    Cnnbench,
    /// A JSON file written by the original Torch `cnn-benchmarks` suite.
    Legacy,
}

/// Where a run computed: the host's CPU or a GPU (any accelerator). `report
/// --conclusions` needs it to tell "GPU against CPU", where the libraries change with the
/// device (cuDNN and CUDA on one side, MKL or nothing on the other), from two GPUs or
/// two CPUs, where they must not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Cpu,
    Gpu,
}

/// The software that produced the numbers; every field that can change them is here,
/// so two runs are pooled only when all of it agrees.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EngineDesc {
    /// The engine's name, e.g. `burn-flex`, or `torch7` for legacy files.
    pub name: String,
    pub framework: String,
    pub framework_version: String,
    pub backend: String,
    /// Library versions that matter for speed (cuDNN, CUDA, MKL…).
    pub libraries: BTreeMap<String, String>,
    /// Settings that change the numbers (cuDNN on/off, TF32…).
    pub settings: BTreeMap<String, String>,
    /// The words the engine's own settings add to the label (`throughput hint`,
    /// `max-autotune`), as the engine declared them.
    pub variant: Vec<String>,
    /// Threads the user asked for; `None` for the engine's default.
    pub threads_requested: Option<usize>,
    pub precision: Precision,
    /// Processes that trained together, data-parallel (1: a single process). A row's
    /// images/s counts every rank's batch.
    pub world_size: usize,
    /// cnnbench's heap policy (`keep` or `system`; results that did not record it ran
    /// with `system`); `None` for other tools' files.
    pub allocator: Option<String>,
}

impl EngineDesc {
    /// Whether cuDNN was in use: a `cudnn` setting wins, then a `cudnn` library entry.
    pub fn cudnn_version(&self) -> Option<&str> {
        if let Some(s) = self.settings.get("cudnn") {
            let off = matches!(
                s.to_ascii_lowercase().as_str(),
                "off" | "false" | "0" | "no" | "disabled"
            );
            if off {
                return None;
            }
        }
        self.libraries.get("cudnn").map(String::as_str)
    }

    /// A short human label: `burn-flex 0.22.1`, `torch7 cuDNN 5.1.10`, `torch7 nn`.
    pub fn label(&self) -> String {
        let mut s = self.name.clone();
        if self.name == "torch7" {
            match self.cudnn_version() {
                Some(v) => s.push_str(&format!(" cuDNN {v}")),
                None => s.push_str(" nn"),
            }
            return s;
        }
        if !self.framework_version.is_empty() {
            s.push(' ');
            s.push_str(&self.framework_version);
        }
        if let Some(v) = self.libraries.get("cudnn") {
            match self.cudnn_version() {
                Some(_) => s.push_str(&format!(", cuDNN {v}")),
                None => s.push_str(", cuDNN off"),
            }
        }
        if self.precision != Precision::F32 {
            s.push_str(&format!(", {}", self.precision.as_str()));
        }
        if let Some(t) = self.threads_requested {
            let unit = if t == 1 { "thread" } else { "threads" };
            s.push_str(&format!(", {t} {unit}"));
        }
        if self.settings.get("memory_format").map(String::as_str) == Some("channels_last") {
            s.push_str(", channels-last");
        }
        // The engine's own settings away from their defaults: another configuration.
        for word in &self.variant {
            s.push_str(&format!(", {word}"));
        }
        if self.world_size > 1 {
            s.push_str(&format!(", {} ranks", self.world_size));
        }
        // cnnbench keeps freed memory by default; runs without say so.
        if self.allocator.as_deref() == Some(cnnbench_results::AllocatorRecord::SYSTEM) {
            s.push_str(", system allocator");
        }
        s
    }
}

impl Record {
    /// The kind of device the run recorded: `cpu` (as every engine and the original
    /// suite's CPU runs write it) is the CPU; anything else (`cuda:0`, a GPU adapter) a GPU.
    pub fn device_kind(&self) -> DeviceKind {
        let d = self.device.trim().to_ascii_lowercase();
        if d == "cpu" || d.starts_with("cpu:") {
            DeviceKind::Cpu
        } else {
            DeviceKind::Gpu
        }
    }

    /// Escapes the control characters of every name the file gave (a newline in a model
    /// name would break a markdown table and start a heading; ESC and CR would reach the
    /// terminal), once, so that every format prints them alike.
    pub fn make_printable(&mut self) {
        use cnnbench_results::printable;
        for s in [
            &mut self.model_label,
            &mut self.model_id,
            &mut self.device_name,
            &mut self.device,
            &mut self.engine.name,
            &mut self.engine.framework,
            &mut self.engine.framework_version,
            &mut self.engine.backend,
        ] {
            *s = printable(s);
        }
        if let Some(l) = self.label.as_mut() {
            *l = printable(l);
        }
        for map in [&mut self.engine.libraries, &mut self.engine.settings] {
            *map = std::mem::take(map)
                .into_iter()
                .map(|(k, v)| (printable(&k), printable(&v)))
                .collect();
        }
        for w in self
            .warnings
            .iter_mut()
            .chain(self.disturbed.iter_mut().flatten())
        {
            *w = printable(w);
        }
        if let Some(s) = self.scenario.as_mut() {
            s.serving = printable(&s.serving);
            for w in s
                .invalid_reasons
                .iter_mut()
                .chain(s.mlperf_shortfalls.iter_mut())
                .chain(
                    s.peak_search
                        .iter_mut()
                        .flat_map(|p| p.invalid_reasons.iter_mut()),
                )
            {
                *w = printable(w);
            }
        }
    }
}

/// One run of one model in one configuration, with its raw samples.
#[derive(Clone, Debug)]
pub struct Record {
    /// The file it came from.
    pub path: PathBuf,
    pub origin: Origin,
    /// The model's name as written in the file (legacy: the `.t7` file's basename).
    pub model_label: String,
    /// The name used to group runs of the same model: the zoo's name where the model
    /// is a zoo model (legacy `resnet-50` → `resnet50`), else the label.
    pub model_id: String,
    /// `[C, H, W]` of one example.
    pub input: [usize; 3],
    pub batch_size: usize,
    pub mode: Mode,
    /// The device's own name (GPU name or CPU model) before aliases.
    pub device_name: String,
    /// `cpu`, `cuda:0`…
    pub device: String,
    /// The user's `--label` for the run (e.g. a host name).
    pub label: Option<String>,
    pub engine: EngineDesc,
    pub machine: Option<MachineInfo>,
    pub tool_version: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    /// Raw samples in seconds per quantity (`forward`, `backward`, `update`, `total`),
    /// in pass order.
    pub samples: BTreeMap<Quantity, Vec<f64>>,
    pub params: Option<u64>,
    pub macs: Option<u64>,
    pub depth: Option<usize>,
    pub peak_rss_bytes: Option<u64>,
    pub device_peak_bytes: Option<u64>,
    /// The least time this machine's ceilings allow its forward pass, seconds, when the
    /// run recorded its roofline.
    pub forward_roof_s: Option<f64>,
    /// Warnings the harness wrote into the file.
    pub warnings: Vec<String>,
    /// Why the machine was judged disturbed during the timed passes: `None` where the
    /// file has no verdict (older files, the original suite), empty when clean.
    pub disturbed: Option<Vec<String>>,
    /// Seconds to prepare the session, to compile it and of the first pass, where
    /// recorded.
    pub cold_start: Option<ColdStartSeconds>,
    /// How many machines a data-parallel run's ranks ran on, where every rank said.
    pub hosts: Option<usize>,
    /// The machine's run-to-run noise the result recorded (`cnnbench noise`), percent.
    pub run_noise_pct: Option<f64>,
    /// What a `--scenario` run served, without its per-query latencies (the summary
    /// and the verdicts are what the report shows; a server run can hold a million).
    pub scenario: Option<cnnbench_results::scenario::ScenarioRecord>,
}

/// What a run paid before its first timed pass, in seconds (`report --cold-start`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColdStartSeconds {
    pub prepare: f64,
    /// For an engine that compiles on its first call (`pytorch-compile`), timed apart.
    pub compile: Option<f64>,
    pub first_pass: f64,
}
