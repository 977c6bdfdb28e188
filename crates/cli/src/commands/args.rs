//! Argument types several commands share (`run`, `profile`, `verify`, `peak`), so that
//! a setting is spelled and explained once.

use super::engines;
use anyhow::{anyhow, Result};
use cnnbench_engine::{Mode, Precision};
use cnnbench_results::{EngineSettings, SettingsMap};

/// Engine settings: the GPU engines', channels-last, and each engine's own settings
/// (`--engine-setting KEY=VALUE`, and the flags the engines declare for some of them,
/// such as `--ov-hint`: [`with_engine_setting_flags`]).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct EngineArgs {
    /// Which GPU the GPU engines use: the CUDA device (torch-cuda, burn-cuda) or the
    /// Vulkan GPU adapter, discrete first (burn-wgpu); `cuda:N` is taken too [default: 0;
    /// in a data-parallel run: LOCAL_RANK]
    #[arg(long, value_name = "N", value_parser = device_index)]
    pub device: Option<usize>,
    /// burn-wgpu: run on a CPU software renderer (llvmpipe/lavapipe) when there is no GPU
    /// adapter, labelled as such in the result. To test the GPU code path, not to measure.
    #[arg(long)]
    pub allow_cpu_adapter: bool,
    /// Let cuDNN time its algorithms on the first (warm-up) passes and keep the fastest.
    #[arg(long)]
    pub cudnn_benchmark: bool,
    /// The older spelling of `--precision tf32`: TF32 tensor-core math for f32
    /// convolutions and matrix products on GPUs (off by default).
    #[arg(long)]
    pub tf32: bool,
    /// Channels-last (NHWC) memory for images and convolution weights (torch engines).
    #[arg(long)]
    pub channels_last: bool,
    /// One of the engine's own settings, KEY=VALUE (repeat it for several): `cnnbench
    /// engines` lists each engine's, e.g. openvino-cpu's streams=4 or ort-cpu's
    /// graph-optimization=basic.
    #[arg(long = "engine-setting", value_name = "KEY=VALUE", value_parser = key_value)]
    pub engine_setting: Vec<(String, String)>,
}

/// `--engine-setting KEY=VALUE`.
fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_string(), value.to_string()))
        }
        _ => Err(format!(
            "\"{}\" is not KEY=VALUE (e.g. streams=4; `cnnbench engines` lists each engine's settings)",
            cnnbench_results::printable(text)
        )),
    }
}

/// `--device`: a GPU's index, as `N` or `cuda:N`.
fn device_index(text: &str) -> Result<usize, String> {
    let index = text.strip_prefix("cuda:").unwrap_or(text);
    index
        .parse()
        .map_err(|_| format!("\"{text}\" is not a device: give its index, N or cuda:N"))
}

impl EngineArgs {
    /// These settings as a run spec holds them; a key given twice is refused.
    pub fn settings(&self) -> Result<EngineSettings> {
        Ok(EngineSettings {
            device: self.device,
            allow_cpu_adapter: self.allow_cpu_adapter,
            cudnn_benchmark: self.cudnn_benchmark,
            tf32: self.tf32,
            channels_last: self.channels_last,
            settings: self.own_settings()?,
        })
    }

    /// The engine's own settings given, each key once.
    pub fn own_settings(&self) -> Result<SettingsMap> {
        let mut own = SettingsMap::new();
        for (key, value) in &self.engine_setting {
            if let Some(before) = own.insert(key.clone(), value.clone()) {
                if &before != value {
                    return Err(anyhow!(
                        "the engine setting `{}` is given twice ({} and {}): give it once",
                        cnnbench_results::printable(key),
                        cnnbench_results::printable(&before),
                        cnnbench_results::printable(value)
                    ));
                }
            }
        }
        Ok(own)
    }

    /// The engine options for these settings, a thread count and a precision.
    pub fn engine_options(
        &self,
        threads: Option<usize>,
        precision: Precision,
    ) -> Result<engines::EngineOptions> {
        Ok(engines::options(&self.settings()?, threads, precision))
    }
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeArg {
    Train,
    Infer,
    Step,
}

impl From<ModeArg> for Mode {
    fn from(m: ModeArg) -> Mode {
        match m {
            ModeArg::Train => Mode::Train,
            ModeArg::Infer => Mode::Infer,
            ModeArg::Step => Mode::Step,
        }
    }
}

/// `f32` (strict: no TF32 on GPUs); `tf32`: f32 tensors, GPU matrix products and
/// convolutions in TF32; `bf16`/`f16`: the model computes in that type;
/// `amp-bf16`/`amp-f16`: automatic mixed precision (f32 weights, autocast's ops in the
/// low type).
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum PrecisionArg {
    F32,
    Tf32,
    F16,
    Bf16,
    #[value(name = "amp-bf16")]
    AmpBf16,
    #[value(name = "amp-f16")]
    AmpF16,
    Int8,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Precision {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::Tf32 => Precision::Tf32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::Bf16 => Precision::Bf16,
            PrecisionArg::AmpBf16 => Precision::AmpBf16,
            PrecisionArg::AmpF16 => Precision::AmpF16,
            PrecisionArg::Int8 => Precision::Int8,
        }
    }
}

/// The clap id of an engine setting's own flag (`--ov-hint`), so that it can be told
/// from the command's other options.
const SETTING_FLAG_ID: &str = "engine-setting-flag:";

/// Every own flag the engines declare for their settings (`--ov-hint`, `--python`,
/// `--compile-mode`, `--freezing`), added to a command that takes engine settings: a
/// flag is a spelling of `--engine-setting KEY=VALUE`, declared in the engine's crate,
/// so that no setting needs code here.
pub fn with_engine_setting_flags(command: clap::Command) -> clap::Command {
    let mut command = command;
    for flag in declared_flags() {
        let doc = flag.doc.doc.trim_end_matches('.');
        let help = if flag.doc.switch {
            format!("{}: {doc}", flag.engines.join(", "))
        } else {
            format!(
                "{}: {doc} [{}; default: {}]",
                flag.engines.join(", "),
                flag.doc.values,
                flag.doc.default
            )
        };
        let mut arg = clap::Arg::new(format!("{SETTING_FLAG_ID}{}", flag.doc.key))
            .long(flag.name)
            .help(help);
        arg = if flag.doc.switch {
            arg.action(clap::ArgAction::SetTrue)
        } else {
            // `--compile-mode <MODE>`, `--python <PATH>`: short, so clap's help keeps its
            // column.
            let last_word = flag.doc.key.rsplit('-').next().unwrap_or(flag.doc.key);
            let name = if flag.doc.values.ends_with("path") || flag.doc.values.ends_with("program")
            {
                "PATH".to_string()
            } else {
                last_word.to_uppercase()
            };
            arg.value_name(name).action(clap::ArgAction::Set)
        };
        command = command.arg(arg);
    }
    command
}

/// One engine-declared flag: its name, the setting it spells, the engines that have it.
struct DeclaredFlag {
    name: &'static str,
    doc: cnnbench_engine::settings::SettingDoc,
    engines: Vec<&'static str>,
}

fn declared_flags() -> Vec<DeclaredFlag> {
    let mut flags: Vec<DeclaredFlag> = Vec::new();
    for provider in engines::registry() {
        for doc in (provider.settings().declared)() {
            let Some(name) = doc.flag else { continue };
            match flags.iter_mut().find(|f| f.name == name) {
                Some(f) => f.engines.push(provider.name()),
                None => flags.push(DeclaredFlag {
                    name,
                    doc,
                    engines: vec![provider.name()],
                }),
            }
        }
    }
    flags
}

/// The engine settings given by their own flags, as `--engine-setting` pairs appended
/// to `gpu`; whether any was given.
pub fn take_engine_setting_flags(matches: &clap::ArgMatches, gpu: &mut EngineArgs) -> bool {
    let mut any = false;
    for id in matches.ids() {
        let Some(key) = id.as_str().strip_prefix(SETTING_FLAG_ID) else {
            continue;
        };
        if matches.value_source(id.as_str()) != Some(clap::parser::ValueSource::CommandLine) {
            continue;
        }
        let value = match matches.try_get_one::<bool>(id.as_str()) {
            Ok(Some(on)) => on.to_string(),
            _ => match matches.try_get_one::<String>(id.as_str()) {
                Ok(Some(text)) => text.clone(),
                _ => continue,
            },
        };
        gpu.engine_setting.push((key.to_string(), value));
        any = true;
    }
    any
}

/// Whether a clap id is an engine setting's own flag.
pub fn is_engine_setting_flag(id: &str) -> bool {
    id.starts_with(SETTING_FLAG_ID)
}
