//! The engines and their sessions: each engine has one worker process, and each session
//! is a network in it, named by a number.

use crate::python::{choose_for_this_process, Interpreter};
use crate::worker::{same_release, Launch, Reply, Worker};
use crate::{CompileMode, CompiledSettings, Flavour};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::int8::OwnQuantization;
use cnnbench_engine::kit::{NodeOutput, Program, LEARNING_RATE, MOMENTUM};
use cnnbench_engine::settings::EngineSettingsRecord;
use cnnbench_engine::{
    onednn, Capabilities, ChosenKernels, DeviceKind, Engine, EngineInfo, ExchangeWeights, Mode,
    NodeProbes, Precision, Session, SessionConfig,
};
use cnnbench_graph::{Graph, HostTensor, WeightInit, Weights};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Why an engine with freezing on runs inference alone.
const FREEZING_INFERS_ONLY: &str = "freezing folds the weights into the compiled graph, which only inference allows; leave it out (--freezing, --engine-setting freezing=true) to train";

/// pytorch-compile's int8, in the result's words.
const PT2E_SCHEME: &str = "static post-training, PyTorch 2 export (PT2E) with torchao's X86InductorQuantizer: weights int8 symmetric per output channel, activations uint8 per tensor; lowered by inductor (freezing) to oneDNN's int8 kernels";
/// How its activation ranges are measured: the default recipe's observers.
const PT2E_OBSERVERS: &str = "PyTorch's observers (X86InductorQuantizer's default recipe: histogram for activations, per-channel min-max for weights)";

/// What the command line sets for these engines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PytorchOptions {
    /// `--python`: the interpreter (else `CNNBENCH_PYTHON`, the venv, `.venv-torch`,
    /// `python3`).
    pub python: Option<PathBuf>,
    /// torch's intra-op threads (`None`: torch's default).
    pub threads: Option<usize>,
    /// The CUDA device of the GPU engines.
    pub device: usize,
    pub channels_last: bool,
    /// TF32 for f32 matrix products and convolutions on GPUs (off: strict f32).
    pub tf32: bool,
    pub cudnn_benchmark: bool,
    pub compile_mode: CompileMode,
    /// Inductor's freezing: weights folded into the compiled inference graph.
    pub freezing: bool,
    /// cnnbench's heap policy, applied in the worker before torch loads (`keep`/`system`).
    pub heap: String,
}

/// One of the four engines, with its worker.
pub struct PytorchEngine {
    flavour: Flavour,
    options: PytorchOptions,
    worker: Arc<Mutex<Worker>>,
    info: EngineInfo,
    capabilities: Capabilities,
    next_session: Mutex<u64>,
}

impl PytorchEngine {
    /// Starts the worker on the interpreter the options and the process choose, and
    /// checks its torch and device.
    pub fn new(flavour: Flavour, options: PytorchOptions) -> Result<PytorchEngine> {
        let name = flavour.engine_name();
        if options.threads == Some(0) {
            return Err(anyhow!("--threads must be at least 1"));
        }
        let interpreter = choose_for_this_process(options.python.as_deref());
        let on_gpu = flavour.device == DeviceKind::Gpu;
        let flag = |b: bool| if b { "1" } else { "0" }.to_string();
        let mut settings = Vec::new();
        if on_gpu {
            settings.push(("tf32", flag(options.tf32)));
            settings.push(("cudnn-benchmark", flag(options.cudnn_benchmark)));
        }
        let worker = Worker::start(&Launch {
            engine: name,
            interpreter: &interpreter,
            heap: &options.heap,
            threads: options.threads,
            settings,
        })?;
        if worker.hello["heap_applied"].as_bool() != Some(true) {
            return Err(anyhow!(
                "{name}'s worker could not apply the heap policy {} ({}): its numbers would be measured under another; run with --allocator system",
                options.heap,
                worker.hello["heap"].as_str().unwrap_or("no reason given")
            ));
        }
        if on_gpu {
            let devices = worker.hello["cuda_devices"].as_u64().unwrap_or(0) as usize;
            if worker.hello["cuda_available"].as_bool() != Some(true) || devices == 0 {
                return Err(anyhow!(
                    "{name} cannot run: the torch {} of {} sees no CUDA GPU (a CPU build of PyTorch, no NVIDIA driver here, or CUDA_VISIBLE_DEVICES hides them)",
                    worker.hello["torch"].as_str().unwrap_or("?"),
                    interpreter.path.display()
                ));
            }
            if options.device >= devices {
                return Err(anyhow!(
                    "--device {} does not exist: torch sees {devices} CUDA GPU{} (0..{})",
                    options.device,
                    if devices == 1 { "" } else { "s" },
                    devices - 1
                ));
            }
        }
        let mut capabilities = flavour.capabilities();
        if options.freezing {
            for mode in [Mode::Train, Mode::Step] {
                capabilities = capabilities.without_mode(mode, FREEZING_INFERS_ONLY);
            }
        }
        if let Some(why) = int8_refusal(&interpreter.path, &worker.hello) {
            if capabilities.precisions.contains(&Precision::Int8) {
                capabilities.precisions.retain(|&p| p != Precision::Int8);
                capabilities = capabilities.refusing(Precision::Int8, why);
            }
        }
        if on_gpu {
            capabilities.device_memory = worker.hello["cuda_memory"]
                .as_array()
                .and_then(|m| m.get(options.device))
                .and_then(Value::as_u64);
        }
        let info = describe(flavour, &options, &interpreter, &worker.hello);
        Ok(PytorchEngine {
            flavour,
            options,
            worker: Arc::new(Mutex::new(worker)),
            info,
            capabilities,
            next_session: Mutex::new(0),
        })
    }

    /// The worker's process id (tests stop it to see the engine's answer).
    pub fn worker_pid(&self) -> u32 {
        lock(&self.worker).pid()
    }

    fn device(&self) -> String {
        match self.flavour.device {
            DeviceKind::Cpu => "cpu".into(),
            DeviceKind::Gpu => format!("cuda:{}", self.options.device),
        }
    }
}

/// Why this worker's Python cannot quantise to int8, if it cannot: PT2E quantisation
/// lives in torchao for PyTorch 2.11, whose release the worker reads without importing.
pub(crate) fn int8_refusal(python: &std::path::Path, hello: &Value) -> Option<String> {
    let install = format!(
        "`{} -m pip install torchao=={}`",
        python.display(),
        crate::TORCHAO_VERSION
    );
    match hello["torchao"].as_str() {
        None => Some(format!(
            "pytorch-compile quantises int8 with torchao's PT2E quantiser, and the Python {} has no torchao: install it with {install}",
            python.display()
        )),
        Some(version) if !same_release(version, crate::TORCHAO_VERSION) => Some(format!(
            "pytorch-compile quantises int8 with torchao {}'s PT2E quantiser, and the Python {} has torchao {version}: install the tested one with {install}",
            crate::TORCHAO_VERSION,
            python.display()
        )),
        Some(_) => None,
    }
}

/// What an int8 session of pytorch-compile needs beyond its capabilities: inference
/// (post-training quantisation) and inductor's freezing ([`crate::INT8_NEEDS_FREEZING`]).
fn check_int8_session(config: &SessionConfig, freezing: bool) -> Result<()> {
    if config.mode != Mode::Infer {
        return Err(anyhow!(
            "int8 is post-training quantisation for inference: use --mode infer (this run's mode is {})",
            config.mode
        ));
    }
    if !freezing {
        return Err(anyhow!(crate::INT8_NEEDS_FREEZING));
    }
    Ok(())
}

fn lock(worker: &Mutex<Worker>) -> std::sync::MutexGuard<'_, Worker> {
    worker.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the result file records: torch's version and build, the interpreter's, the
/// device, and the settings that change the numbers.
fn describe(
    flavour: Flavour,
    options: &PytorchOptions,
    interpreter: &Interpreter,
    hello: &Value,
) -> EngineInfo {
    let text = |key: &str| hello[key].as_str().map(str::to_string);
    let mut libraries = BTreeMap::new();
    libraries.insert("torch".to_string(), text("torch").unwrap_or_default());
    libraries.insert("python".to_string(), text("python").unwrap_or_default());
    let mut settings = BTreeMap::new();
    let (device, device_name) = match flavour.device {
        DeviceKind::Cpu => {
            if let Some(isa) = text("cpu_capability") {
                libraries.insert("cpu_capability".to_string(), isa);
            }
            let onednn = hello["mkldnn"].as_bool() == Some(true);
            libraries.insert(
                "onednn".to_string(),
                if onednn { "on" } else { "off" }.into(),
            );
            ("cpu".to_string(), cnnbench_host::cpu_name())
        }
        DeviceKind::Gpu => {
            if let Some(cuda) = text("cuda") {
                libraries.insert("cuda".to_string(), cuda);
            }
            if let Some(cudnn) = hello["cudnn"].as_u64() {
                libraries.insert("cudnn".to_string(), cudnn.to_string());
            }
            let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
            settings.insert("tf32".to_string(), on_off(options.tf32));
            settings.insert(
                "cudnn_benchmark".to_string(),
                on_off(options.cudnn_benchmark),
            );
            let name = hello["cuda_names"]
                .as_array()
                .and_then(|n| n.get(options.device))
                .and_then(Value::as_str)
                .unwrap_or("CUDA GPU")
                .to_string();
            (format!("cuda:{}", options.device), name)
        }
    };
    if options.channels_last {
        settings.insert("memory_format".to_string(), "channels_last".to_string());
    }
    if flavour.compiled {
        settings.insert(
            "compile_mode".to_string(),
            options.compile_mode.as_str().into(),
        );
        settings.insert(
            "freezing".to_string(),
            if options.freezing { "on" } else { "off" }.into(),
        );
    }
    settings.insert(
        "python".to_string(),
        format!("{} ({})", interpreter.path.display(), interpreter.chosen_by),
    );
    let version = text("torch").unwrap_or_default();
    EngineInfo {
        name: flavour.engine_name().to_string(),
        framework: "pytorch".to_string(),
        framework_version: version.split('+').next().unwrap_or_default().to_string(),
        backend: if flavour.compiled {
            "inductor"
        } else {
            "eager"
        }
        .to_string(),
        device,
        device_name,
        threads: hello["threads"].as_u64().unwrap_or(1).max(1) as usize,
        libraries,
        settings,
        variant: CompiledSettings {
            python: None,
            compile_mode: options.compile_mode,
            freezing: options.freezing,
        }
        .label(),
    }
}

impl Engine for PytorchEngine {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn own_quantization(&self) -> Option<OwnQuantization> {
        self.capabilities
            .precisions
            .contains(&Precision::Int8)
            .then(|| OwnQuantization {
                scheme: PT2E_SCHEME.to_string(),
                method: PT2E_OBSERVERS.to_string(),
            })
    }

    fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        let calibration = cnnbench_engine::int8::calibration_of(config, &self.info.name)?;
        if calibration.is_some() {
            check_int8_session(config, self.options.freezing)?;
        }
        cnnbench_engine::refuse_batch_norm_on_one_value(&self.info().name, graph, config)?;
        let images: Vec<(String, &HostTensor)> = calibration
            .map(|c| {
                c.images
                    .iter()
                    .enumerate()
                    .map(|(i, image)| (format!("calibration{i}"), image))
                    .collect()
            })
            .unwrap_or_default();
        let payload: Vec<(&str, &HostTensor)> =
            images.iter().map(|(k, t)| (k.as_str(), *t)).collect();
        let id = {
            let mut next = self.next_session.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        };
        let program = Program::new(graph);
        let weights: Vec<Value> = program
            .weights()
            .iter()
            .map(|w| {
                let init = match w.init {
                    WeightInit::Uniform { bound } => json!({ "uniform": bound }),
                    WeightInit::Constant(v) => json!({ "constant": v }),
                };
                json!({"key": w.key, "shape": w.shape, "trainable": w.trainable, "init": init})
            })
            .collect();
        let compile = self.flavour.compiled.then(|| {
            json!({"mode": self.options.compile_mode.as_str(), "freezing": self.options.freezing})
        });
        let request = json!({
            "session": id,
            "model": graph.to_json(),
            "weights": weights,
            "overwrite": program.overwriting_nodes(),
            "mode": config.mode.as_str(),
            "batch": config.batch_size,
            "seed": config.seed,
            "precision": config.precision.as_str(),
            "deterministic": config.deterministic,
            "channels_last": self.options.channels_last,
            "device": self.device(),
            "classes": graph.output_shape().elements(),
            "lr": LEARNING_RATE,
            "momentum": MOMENTUM,
            "compile": compile,
        });
        lock(&self.worker).call("prepare", request, &payload)?;
        Ok(Box::new(PytorchSession {
            worker: self.worker.clone(),
            id,
            compiled: self.flavour.compiled,
            on_gpu: self.flavour.device == DeviceKind::Gpu,
            graph: graph.clone(),
            graphs_at_timed_start: None,
            precision: config.precision,
        }))
    }
}

/// A network in the worker.
struct PytorchSession {
    worker: Arc<Mutex<Worker>>,
    id: u64,
    compiled: bool,
    on_gpu: bool,
    graph: Graph,
    /// Graphs dynamo had compiled when the timed passes began.
    graphs_at_timed_start: Option<u64>,
    precision: Precision,
}

impl PytorchSession {
    fn call(&self, cmd: &str) -> Result<Reply> {
        lock(&self.worker).call(cmd, json!({ "session": self.id }), &[])
    }

    fn send(&self, cmd: &str, tensors: &[(&str, &HostTensor)]) -> Result<()> {
        lock(&self.worker).call(cmd, json!({ "session": self.id }), tensors)?;
        Ok(())
    }

    fn weights_of(&self, cmd: &str) -> Result<Weights> {
        let mut weights = Weights::new();
        for (key, tensor) in self.call(cmd)?.tensors {
            weights.insert(key, tensor);
        }
        Ok(weights)
    }

    fn graphs(&self) -> Result<u64> {
        Ok(self.call("graphs")?.fields["graphs"].as_u64().unwrap_or(0))
    }

    fn memory(&self, key: &str) -> Option<u64> {
        self.call("memory").ok()?.fields[key].as_u64()
    }
}

impl Session for PytorchSession {
    fn prepare_batch(&mut self) -> Result<()> {
        self.call("batch").map(drop)
    }

    fn forward(&mut self) -> Result<()> {
        self.call("forward").map(drop)
    }

    fn prepare_output_grad(&mut self) -> Result<()> {
        self.call("output_grad").map(drop)
    }

    fn backward(&mut self) -> Result<()> {
        self.call("backward").map(drop)
    }

    fn update(&mut self) -> Result<()> {
        self.call("update").map(drop)
    }

    /// The worker synchronised its device before it answered the last call.
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn device_peak_memory(&self) -> Option<u64> {
        if self.on_gpu {
            self.memory("allocated")
        } else {
            None
        }
    }

    fn worker_peak_rss(&mut self) -> Option<u64> {
        self.memory("peak_rss")
    }

    fn compile(&mut self) -> Result<bool> {
        if !self.compiled {
            return Ok(false);
        }
        self.call("compile")?;
        Ok(true)
    }

    fn begin_timed_passes(&mut self) -> Result<()> {
        if self.compiled {
            self.graphs_at_timed_start = Some(self.graphs()?);
        }
        Ok(())
    }

    fn timed_pass_warnings(&mut self) -> Result<Vec<String>> {
        let Some(before) = self.graphs_at_timed_start else {
            return Ok(Vec::new());
        };
        let more = self.graphs()?.saturating_sub(before);
        Ok(if more > 0 {
            vec![format!(
                "torch.compile compiled {more} more graph{} during the timed passes (a recompilation): those passes include compiling; run more warm-up passes, or find what changed between passes",
                if more == 1 { "" } else { "s" }
            )]
        } else {
            Vec::new()
        })
    }

    /// On the CPU: one untimed pass in the worker with oneDNN's verbose output caught
    /// there (`torch.backends.mkldnn.verbose`), read as torch-cpu reads its own; in
    /// int8, with the share of the heavy layers oneDNN ran in int8.
    fn kernels_chosen(&mut self) -> Result<ChosenKernels> {
        if self.on_gpu {
            return Ok(ChosenKernels::default());
        }
        let reply = self.call("kernels")?;
        let lines: Vec<&str> = reply.fields["verbose"]
            .as_array()
            .context("the worker's answer to `kernels` has no list of verbose lines")?
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let text = lines.join("\n");
        let report = onednn::OneDnnReport::parse(&text);
        let mut chosen = onednn::chosen_kernels(&report, &self.graph, self.precision);
        if self.precision == Precision::Int8 {
            let coverage = onednn::int8_coverage(&text, &self.graph).chosen_kernels("PyTorch");
            chosen.settings.extend(coverage.settings);
            chosen.warnings.extend(coverage.warnings);
        }
        Ok(chosen)
    }

    fn empty_call(&mut self) -> Option<Result<()>> {
        Some(lock(&self.worker).call("noop", Value::Null, &[]).map(drop))
    }

    fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
        Some(self)
    }

    fn probes(&mut self) -> Option<&mut dyn NodeProbes> {
        Some(self)
    }
}

impl ExchangeWeights for PytorchSession {
    fn export_weights(&self) -> Result<Weights> {
        self.weights_of("export_weights")
    }

    fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        weights.check(&self.graph, true)?;
        let specs = self.graph.weight_specs();
        let mut tensors = Vec::with_capacity(specs.len());
        for spec in &specs {
            let tensor = weights
                .get(&spec.key)
                .ok_or_else(|| anyhow!("the weights have no tensor \"{}\"", spec.key))?;
            tensors.push((spec.key.as_str(), tensor));
        }
        self.send("import_weights", &tensors)
    }

    fn set_input(&mut self, input: &HostTensor) -> Result<()> {
        self.send("set_input", &[("input", input)])
    }

    fn output(&self) -> Result<HostTensor> {
        self.call("output")?
            .tensors
            .into_iter()
            .next()
            .map(|(_, t)| t)
            .ok_or_else(|| anyhow!("the worker sent no output"))
    }

    fn set_output_grad(&mut self, grad: &HostTensor) -> Result<()> {
        self.send("set_output_grad", &[("grad", grad)])
    }

    fn weight_gradients(&self) -> Result<Weights> {
        self.weights_of("gradients")
    }
}

impl NodeProbes for PytorchSession {
    fn keep_node_outputs(&mut self) -> Result<()> {
        self.call("keep_node_outputs").map(drop)
    }

    fn node_outputs(&self) -> Result<Vec<NodeOutput>> {
        Ok(self
            .call("node_outputs")?
            .tensors
            .into_iter()
            .map(|(node, value)| NodeOutput { node, value })
            .collect())
    }
}

impl Drop for PytorchSession {
    fn drop(&mut self) {
        // A failed worker answers nothing: there is nothing left to free then.
        let _ = self.call("drop");
    }
}
