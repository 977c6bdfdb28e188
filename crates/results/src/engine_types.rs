//! The engine's plain data types that the result schema records: what a pass does
//! ([`Mode`], [`Phase`]), what it computes in ([`Precision`]) and what an engine says
//! about itself ([`EngineInfo`]). They live with the schema, not with
//! the engine interface, so that reading a result needs no engine; `cnnbench-engine`
//! re-exports them where its users have always found them.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one benchmark pass does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The original suite's method: training-mode layers, forward then backward from a
    /// random upstream gradient, timed apart. No optimizer.
    Train,
    /// Evaluation-mode layers, no autograd, forward only.
    Infer,
    /// A full training step: forward with cross-entropy against random labels, backward,
    /// SGD-with-momentum update.
    Step,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Train => "train",
            Mode::Infer => "infer",
            Mode::Step => "step",
        }
    }
    /// The timed phases of one pass, in order. `total` is their sum.
    pub fn phases(self) -> &'static [Phase] {
        match self {
            Mode::Train => &[Phase::Forward, Phase::Backward],
            Mode::Infer => &[Phase::Forward],
            Mode::Step => &[Phase::Forward, Phase::Backward, Phase::Update],
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A timed part of a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phase {
    Forward,
    Backward,
    /// Averaging the gradients across the ranks of a data-parallel job, after backward.
    Allreduce,
    Update,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Allreduce => "allreduce",
            Phase::Update => "update",
        }
    }
}

/// Numeric precision of the computation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Strict f32: on GPUs, TF32 tensor-core math is off.
    #[default]
    F32,
    /// f32 tensors whose GPU matrix products and convolutions run on tensor cores in
    /// TF32 (10 bits of mantissa, f32's range): what PyTorch's `allow_tf32` does.
    Tf32,
    F16,
    Bf16,
    /// Automatic mixed precision in bf16 (PyTorch's autocast, timm's `--amp
    /// --amp-dtype bfloat16`): f32 weights and optimizer state, the ops autocast lists
    /// computed in bf16.
    #[serde(rename = "amp-bf16")]
    AmpBf16,
    /// Automatic mixed precision in f16, with loss scaling for a training step.
    #[serde(rename = "amp-f16")]
    AmpF16,
    /// Static post-training quantisation to 8-bit integers (weights per output channel,
    /// activations per tensor, ranges calibrated beforehand), run from cnnbench's QDQ
    /// export: inference only, and only where a stack has int8 kernels.
    Int8,
}

impl Precision {
    /// Every precision, in the order listings show them.
    pub const ALL: [Precision; 7] = [
        Precision::F32,
        Precision::Tf32,
        Precision::Bf16,
        Precision::F16,
        Precision::AmpBf16,
        Precision::AmpF16,
        Precision::Int8,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::Tf32 => "tf32",
            Precision::F16 => "f16",
            Precision::Bf16 => "bf16",
            Precision::AmpBf16 => "amp-bf16",
            Precision::AmpF16 => "amp-f16",
            Precision::Int8 => "int8",
        }
    }

    /// The narrowest floating-point type the computation rounds to: what decides how
    /// far its answers may stray from f32's (`verify`'s tolerance).
    pub fn narrowest(self) -> Precision {
        match self {
            Precision::F32 => Precision::F32,
            Precision::Tf32 => Precision::Tf32,
            Precision::F16 | Precision::AmpF16 => Precision::F16,
            Precision::Bf16 | Precision::AmpBf16 => Precision::Bf16,
            Precision::Int8 => Precision::Int8,
        }
    }
}

/// What an engine reports about itself for the result file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// Name as given on the command line, e.g. `burn-flex`.
    pub name: String,
    /// The framework, e.g. `burn` or `libtorch`.
    pub framework: String,
    pub framework_version: String,
    /// The backend within the framework, e.g. `flex` or `cuda`.
    pub backend: String,
    /// `cpu` or `cuda:N`.
    pub device: String,
    /// The device's own name (CPU model or GPU name).
    pub device_name: String,
    /// Size of the engine's thread pool.
    pub threads: usize,
    /// Versions of libraries that matter for speed (cuDNN, CUDA, MKL, …).
    #[serde(default)]
    pub libraries: BTreeMap<String, String>,
    /// Engine-specific settings that change the numbers (cudnn on/off, TF32, …). A
    /// `warning` entry is a caveat about every number the engine measures (a GPU engine
    /// on a CPU renderer): the harness copies it into each result's warnings.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// The words the engine's own settings add to a configuration's label, away from
    /// their defaults (`throughput hint`, `max-autotune`, `4 streams`): declared by the
    /// engine, so that a report labels a configuration without knowing engines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub variant: Vec<String>,
}

impl EngineInfo {
    /// The record of an engine on the host's CPU (`device` `cpu`), before its libraries
    /// and settings: `EngineInfo { libraries, settings, ..EngineInfo::on_the_cpu(…) }`.
    pub fn on_the_cpu(
        name: &str,
        framework: &str,
        framework_version: &str,
        backend: &str,
        threads: usize,
        cpu_name: String,
    ) -> EngineInfo {
        EngineInfo {
            name: name.into(),
            framework: framework.into(),
            framework_version: framework_version.into(),
            backend: backend.into(),
            device: "cpu".into(),
            device_name: cpu_name,
            threads,
            libraries: BTreeMap::new(),
            settings: BTreeMap::new(),
            variant: Vec::new(),
        }
    }

    /// The words the engine's own settings add to a label: [`EngineInfo::variant`], or
    /// for a file written before engines declared them, the same words read from the
    /// settings those engines recorded then.
    pub fn variant_words(&self) -> Vec<String> {
        if !self.variant.is_empty() {
            return self.variant.clone();
        }
        let setting = |key: &str| self.settings.get(key).map(String::as_str);
        let mut words = Vec::new();
        if setting("performance_hint") == Some("throughput") {
            words.push("throughput hint".to_string());
        }
        if let Some(mode) = setting("compile_mode").filter(|m| *m != "default") {
            words.push(mode.to_string());
        }
        if setting("freezing") == Some("on") {
            words.push("freezing".to_string());
        }
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_the_names_printed() {
        // Result files, specs and matrices spell these as `as_str` does.
        fn json<T: Serialize>(value: &T) -> String {
            serde_json::to_string(value).unwrap()
        }
        for m in [Mode::Train, Mode::Infer, Mode::Step] {
            assert_eq!(json(&m), format!("\"{}\"", m.as_str()));
            assert_eq!(m.to_string(), m.as_str());
        }
        for p in Precision::ALL {
            assert_eq!(json(&p), format!("\"{}\"", p.as_str()));
        }
    }

    /// A file written before engines declared their settings' words keeps its label:
    /// the words are read from the settings those engines recorded then.
    #[test]
    fn the_variant_of_an_older_file_is_read_from_its_settings() {
        let cpu = |name: &str| EngineInfo::on_the_cpu(name, "f", "1", "cpu", 2, "cpu".into());
        let mut info = cpu("pytorch-compile");
        info.settings
            .insert("compile_mode".into(), "default".into());
        info.settings.insert("freezing".into(), "off".into());
        assert!(info.variant_words().is_empty());
        info.settings
            .insert("compile_mode".into(), "max-autotune".into());
        info.settings.insert("freezing".into(), "on".into());
        assert_eq!(info.variant_words(), vec!["max-autotune", "freezing"]);
        let mut ov = cpu("openvino-cpu");
        ov.settings
            .insert("performance_hint".into(), "throughput".into());
        assert_eq!(ov.variant_words(), vec!["throughput hint"]);
        // What the engine declared wins.
        ov.variant = vec!["throughput hint".into(), "4 streams".into()];
        assert_eq!(ov.variant_words(), vec!["throughput hint", "4 streams"]);
    }

    #[test]
    fn precisions_round_to_their_narrowest_type() {
        assert_eq!(Precision::AmpBf16.narrowest(), Precision::Bf16);
        assert_eq!(Precision::AmpF16.narrowest(), Precision::F16);
        assert_eq!(Precision::F32.narrowest(), Precision::F32);
        assert_eq!(Precision::Tf32.narrowest(), Precision::Tf32);
        assert_eq!(Precision::default(), Precision::F32);
    }

    #[test]
    fn the_phases_of_a_pass_are_in_order() {
        assert_eq!(Mode::Infer.phases(), [Phase::Forward]);
        assert_eq!(
            Mode::Step.phases(),
            [Phase::Forward, Phase::Backward, Phase::Update]
        );
    }
}
