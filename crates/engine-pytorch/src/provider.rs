//! The four engines as the command line's registry sees them.

use crate::python::{choose_for_this_process, install_hint};
use crate::session::{PytorchEngine, PytorchOptions};
use crate::worker::same_release;
use crate::Flavour;
use cnnbench_engine::provider::{
    ConcurrentServing, DeclaredSettings, EngineOptions, Provider, NOT_CHECKED_ON_A_GPU,
};
use cnnbench_engine::settings::{EngineSettingsRecord, ProgramPath, SettingsMap};
use cnnbench_engine::{Capabilities, DeviceKind, Engine, Precision};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;

cnnbench_engine::setting_choices! {
    /// `torch.compile`'s mode.
    pub enum CompileMode {
        Default = "default",
        ReduceOverhead = "reduce-overhead",
        MaxAutotune = "max-autotune",
    }
}

cnnbench_engine::engine_settings! {
    /// The eager engines' own settings (pytorch, pytorch-cuda).
    pub struct EagerSettings {
        /// The Python the worker runs on, which must have torch 2.11 (not given:
        /// CNNBENCH_PYTHON, else the active venv, else a .venv-torch of this user's in
        /// the working folder, the executable's folder or the repository either is in,
        /// else python3).
        #[setting(key = "python", flag = "python")]
        pub python: Option<ProgramPath> = None,
    }
}

cnnbench_engine::engine_settings! {
    /// The compiling engines' own settings (pytorch-compile, pytorch-compile-cuda).
    pub struct CompiledSettings {
        /// The Python the worker runs on, which must have torch 2.11 (not given:
        /// CNNBENCH_PYTHON, else the active venv, else a .venv-torch of this user's in
        /// the working folder, the executable's folder or the repository either is in,
        /// else python3).
        #[setting(key = "python", flag = "python")]
        pub python: Option<ProgramPath> = None,
        /// `torch.compile`'s mode: `reduce-overhead` uses CUDA graphs on GPUs;
        /// `max-autotune` times kernel choices while compiling.
        #[setting(key = "compile-mode", flag = "compile-mode", label = |m: &CompileMode| (*m != CompileMode::Default).then(|| m.as_str().to_string()))]
        pub compile_mode: CompileMode = CompileMode::Default,
        /// Inductor's freezing, for inference: the weights are folded into the compiled
        /// graph as constants, and oneDNN's weight layouts prepared once.
        #[setting(key = "freezing", flag = "freezing", label = |f: &bool| f.then(|| "freezing".to_string()))]
        pub freezing: bool = false,
    }
}

struct Pytorch(Flavour);

impl Pytorch {
    /// The settings given, as the compiling engines' (an eager engine takes only
    /// `python`, and refuses the others).
    fn own_settings(&self, given: &SettingsMap) -> Result<CompiledSettings, String> {
        if self.0.compiled {
            CompiledSettings::parse(given)
        } else {
            EagerSettings::parse(given).map(|e| CompiledSettings {
                python: e.python,
                ..CompiledSettings::default()
            })
        }
    }
}

impl Provider for Pytorch {
    fn name(&self) -> &'static str {
        self.0.engine_name()
    }
    fn description(&self) -> &'static str {
        self.0.describe()
    }
    fn capabilities(&self) -> Capabilities {
        self.0.capabilities()
    }
    /// On the CPU each session is a worker process with its own threads.
    fn concurrent_serving(&self) -> ConcurrentServing {
        match self.0.device {
            DeviceKind::Cpu => ConcurrentServing::SessionsSplitTheThreads,
            DeviceKind::Gpu => ConcurrentServing::OneAtATime(NOT_CHECKED_ON_A_GPU),
        }
    }
    fn availability(&self, options: &EngineOptions) -> Result<(), String> {
        let own = self.own_settings(&options.settings)?;
        availability(self.0.device == DeviceKind::Gpu, own.python.map(|p| p.0))
    }
    fn asks_a_device(&self) -> bool {
        // Whether torch sees a GPU is known only by importing it (seconds).
        self.0.device == DeviceKind::Gpu
    }
    fn channels_last(&self) -> bool {
        true
    }
    /// Inductor's freezing, for the compiled engines: the weights folded into the graph.
    fn deployment_settings(&self) -> Vec<(&'static str, &'static str)> {
        if self.0.compiled {
            vec![("freezing", "true")]
        } else {
            Vec::new()
        }
    }
    fn refuses(&self, precision: Precision, settings: &SettingsMap) -> Option<String> {
        let own = self.own_settings(settings).ok()?;
        (self.0.compiled && precision == Precision::Int8 && !own.freezing)
            .then(|| crate::INT8_NEEDS_FREEZING.to_string())
    }
    fn settings(&self) -> DeclaredSettings {
        if self.0.compiled {
            DeclaredSettings::of::<CompiledSettings>()
        } else {
            DeclaredSettings::of::<EagerSettings>()
        }
    }
    fn create(&self, options: &EngineOptions) -> anyhow::Result<Box<dyn Engine>> {
        let own = self
            .own_settings(&options.settings)
            .map_err(|e| anyhow::anyhow!("{}: {e}", self.name()))?;
        let options = PytorchOptions {
            python: own.python.map(|p| p.0),
            threads: options.threads,
            device: options.device.unwrap_or(0),
            channels_last: options.channels_last,
            tf32: options.tf32,
            cudnn_benchmark: options.cudnn_benchmark,
            compile_mode: own.compile_mode,
            freezing: own.freezing,
            heap: cnnbench_host::allocator::current()
                .policy
                .as_str()
                .to_string(),
        };
        Ok(Box::new(PytorchEngine::new(self.0, options)?))
    }
}

/// This crate's engines.
pub fn providers() -> Vec<Box<dyn Provider>> {
    Flavour::ALL
        .into_iter()
        .map(|f| Box::new(Pytorch(f)) as Box<dyn Provider>)
        .collect()
}

/// What each interpreter answered, asked once per process (`cnnbench engines` asks
/// for four engines).
static ANSWERS: Mutex<BTreeMap<(PathBuf, bool), Result<(), String>>> = Mutex::new(BTreeMap::new());

/// Whether the chosen Python has torch 2.11 (read from its package metadata, without
/// importing it) and, for the GPU engines, whether that torch sees a CUDA GPU (which
/// needs the import).
fn availability(gpu: bool, python: Option<PathBuf>) -> Result<(), String> {
    let interpreter = choose_for_this_process(python.as_deref());
    let key = (interpreter.path.clone(), gpu);
    let mut answers = ANSWERS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(answer) = answers.get(&key) {
        return answer.clone();
    }
    let python = &interpreter.path;
    let script = if gpu {
        "import torch; print(torch.__version__); print(torch.cuda.device_count() if torch.cuda.is_available() else 0)"
    } else {
        "import importlib.metadata as m; print(m.version('torch'))"
    };
    let answer = match Command::new(python).args(["-c", script]).output() {
        Err(e) => Err(format!(
            "no Python: the Python {} (from {}) cannot be run ({e}); install Python 3 with torch {}, or pass --python PATH",
            python.display(),
            interpreter.origin(),
            crate::TORCH_VERSION
        )),
        Ok(out) if !out.status.success() => Err(format!(
            "no torch: the Python {} (from {}) has no torch; {}",
            python.display(),
            interpreter.origin(),
            install_hint(python)
        )),
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            let mut lines = text.lines();
            let version = lines.next().unwrap_or_default().trim().to_string();
            let gpus: usize = lines.next().and_then(|l| l.trim().parse().ok()).unwrap_or(0);
            if !same_release(&version, crate::TORCH_VERSION) {
                Err(format!(
                    "wrong torch: the Python {} (from {}) has torch {version}, not {}; {}",
                    python.display(),
                    interpreter.origin(),
                    crate::TORCH_VERSION,
                    install_hint(python)
                ))
            } else if gpu && gpus == 0 {
                Err(format!(
                    "no CUDA GPU: the torch {version} of {} sees none (a CPU build of PyTorch, no NVIDIA driver here, or CUDA_VISIBLE_DEVICES hides them)",
                    python.display()
                ))
            } else {
                Ok(())
            }
        }
    };
    answers.insert(key, answer.clone());
    answer
}
