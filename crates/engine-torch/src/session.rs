//! The libtorch engines and their sessions.

use crate::aten;
use crate::info;
use crate::lower::{channels_last, from_host, to_host, Network};
use crate::scaler::GradScaler;
use crate::{TorchBackend, TorchOptions};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::kit::{check_input_shape, BackwardFrom, PassState, LEARNING_RATE, MOMENTUM};
use cnnbench_engine::onednn;
#[cfg(cnnbench_c10d)]
use cnnbench_engine::DataParallelRank;
use cnnbench_engine::{
    Capabilities, ChosenKernels, Engine, EngineInfo, ExchangeWeights, Mode, NodeProbes, Precision,
    Session, SessionConfig,
};
use cnnbench_graph::{Graph, HostTensor, Weights};
use std::collections::BTreeMap;
#[cfg(cnnbench_c10d)]
use std::sync::Arc;
use tch::{COptimizer, Cuda, Device, Kind, Tensor};

/// Whether `backend` can run here, and if not, why.
pub fn availability(backend: TorchBackend) -> Result<(), String> {
    match backend {
        TorchBackend::Cpu => Ok(()),
        TorchBackend::Cuda { cudnn } => {
            if !info::libtorch_has_cuda() {
                return Err(format!(
                    "the libtorch this binary loaded ({}) has no CUDA: install the CUDA build of PyTorch 2.11.0",
                    info::libtorch_version()
                ));
            }
            if !Cuda::is_available() || Cuda::device_count() == 0 {
                return Err(
                    "no CUDA GPU is visible (no NVIDIA GPU or driver here, or CUDA_VISIBLE_DEVICES hides them)"
                        .to_string(),
                );
            }
            if cudnn && !Cuda::cudnn_is_available() {
                return Err("this libtorch cannot load cuDNN; use torch-cuda-nocudnn".to_string());
            }
            Ok(())
        }
    }
}

/// libtorch on one device, with the process-wide settings the engine asked for.
pub struct TorchEngine {
    device: Device,
    /// Read once: finding the GPU's name may run `nvidia-smi`.
    info: EngineInfo,
    /// Read once: the GPU's memory comes from running `nvidia-smi`.
    capabilities: Capabilities,
    /// Images and convolution weights in channels-last memory.
    channels_last: bool,
    /// The process group when this process is one rank of a data-parallel job.
    #[cfg(cnnbench_c10d)]
    group: Option<Arc<crate::dist::TorchProcessGroup>>,
}

impl TorchEngine {
    /// Checks the device and applies the process-wide settings (threads, cuDNN on/off,
    /// cuDNN autotuning, TF32). A process runs one libtorch configuration: cnnbench
    /// refuses to mix `torch-cuda` and `torch-cuda-nocudnn` in one run.
    pub fn new(backend: TorchBackend, options: &TorchOptions) -> Result<Self> {
        availability(backend)
            .map_err(|why| anyhow!("{} cannot run here: {why}", backend.engine_name()))?;
        if let Some(n) = options.threads {
            if n == 0 {
                return Err(anyhow!("--threads must be at least 1"));
            }
            tch::utils::set_num_threads(n as i32);
        }
        let device = match backend {
            TorchBackend::Cpu => Device::Cpu,
            TorchBackend::Cuda { cudnn } => {
                let count = Cuda::device_count();
                if options.device as i64 >= count {
                    return Err(anyhow!(
                        "--device {} does not exist: this machine has {count} CUDA GPU{} (0..{})",
                        options.device,
                        if count == 1 { "" } else { "s" },
                        count - 1
                    ));
                }
                // TF32 is chosen through the variables NVIDIA's libraries and ATen read
                // when they create their handles, i.e. before the first convolution.
                if options.tf32 {
                    set_env("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1");
                    if std::env::var("NVIDIA_TF32_OVERRIDE").as_deref() == Ok("0") {
                        return Err(anyhow!(
                            "TF32 is asked for (--precision tf32 or --tf32) but NVIDIA_TF32_OVERRIDE=0 in the environment forbids it: unset it (an engine without TF32 started earlier in this process sets it: TF32 is chosen once per process)"
                        ));
                    }
                } else {
                    set_env("NVIDIA_TF32_OVERRIDE", "0");
                }
                Cuda::set_user_enabled_cudnn(cudnn);
                Cuda::cudnn_set_benchmark(options.cudnn_benchmark);
                Device::Cuda(options.device)
            }
        };
        let mut capabilities = backend.capabilities();
        if let Device::Cuda(index) = device {
            capabilities.device_memory = info::gpu_memory_bytes(index);
        }
        Ok(Self {
            device,
            info: describe(backend, options),
            capabilities,
            channels_last: options.channels_last,
            #[cfg(cnnbench_c10d)]
            group: None,
        })
    }

    /// This engine as one rank of a data-parallel job: its sessions start from rank 0's
    /// weights, draw their own batches and average their gradients over `group`. An
    /// NCCL group's version goes into the result's libraries.
    #[cfg(cnnbench_c10d)]
    pub fn with_group(mut self, group: Arc<crate::dist::TorchProcessGroup>) -> Self {
        let backend = cnnbench_engine::distributed::ProcessGroup::info(group.as_ref()).backend;
        if backend == "nccl" {
            if let Some(version) = crate::dist::nccl_version() {
                self.info.libraries.insert("nccl".to_string(), version);
            }
        }
        self.group = Some(group);
        self
    }
}

fn set_env(key: &str, value: &str) {
    // Called while the process sets up its engine, before libtorch starts CUDA work.
    std::env::set_var(key, value);
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

impl Engine for TorchEngine {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        self.prepare_session(graph, config)
    }
}

/// What the result file records about an engine.
fn describe(backend: TorchBackend, options: &TorchOptions) -> EngineInfo {
    let version = info::libtorch_version();
    let mut libraries = BTreeMap::new();
    libraries.insert("libtorch".to_string(), version.clone());
    libraries.insert("tch".to_string(), "0.24.0".to_string());
    let mut settings = BTreeMap::new();
    // Recorded only when asked for, so results without it keep their configuration.
    if options.channels_last {
        settings.insert("memory_format".to_string(), "channels_last".to_string());
    }
    let (backend_name, device, device_name) = match backend {
        TorchBackend::Cpu => {
            libraries.insert("mkl".to_string(), on_off(tch::utils::has_mkl()));
            libraries.insert("onednn".to_string(), on_off(tch::utils::has_mkldnn()));
            (
                "cpu".to_string(),
                "cpu".to_string(),
                cnnbench_host::cpu_name(),
            )
        }
        TorchBackend::Cuda { cudnn } => {
            libraries.insert(
                "cuda".to_string(),
                info::cuda_version(tch::utils::version_cudart()),
            );
            if Cuda::cudnn_is_available() {
                libraries.insert(
                    "cudnn".to_string(),
                    info::cudnn_version(tch::utils::version_cudnn()),
                );
            }
            settings.insert("cudnn".to_string(), on_off(cudnn));
            settings.insert(
                "cudnn_benchmark".to_string(),
                on_off(cudnn && options.cudnn_benchmark),
            );
            settings.insert("tf32".to_string(), on_off(options.tf32));
            (
                if cudnn { "cuda" } else { "cuda-nocudnn" }.to_string(),
                format!("cuda:{}", options.device),
                info::gpu_name(options.device),
            )
        }
    };
    EngineInfo {
        name: backend.engine_name().to_string(),
        framework: "libtorch".to_string(),
        framework_version: version,
        backend: backend_name,
        device,
        device_name,
        threads: tch::utils::get_num_threads().max(1) as usize,
        libraries,
        settings,
        variant: Vec::new(),
    }
}

impl TorchEngine {
    fn prepare_session(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        tch::manual_seed(config.seed as i64);
        let mut network = Network::lower(graph, self.device, config.precision)
            .with_context(|| format!("lowering {} onto libtorch", graph.name()))?;
        if config.deterministic {
            network.disable_dropout();
        }
        if self.channels_last {
            network.use_channels_last()?;
        }
        let optimizer = match config.mode {
            Mode::Infer => None,
            Mode::Train | Mode::Step => {
                let mut opt = COptimizer::sgd(LEARNING_RATE, MOMENTUM, 0.0, 0.0, false)?;
                for p in network.parameters() {
                    opt.add_parameters(&p.tensor, 0)?;
                }
                Some(opt)
            }
        };
        #[cfg(cnnbench_c10d)]
        if let Some(group) = &self.group {
            // As DDP: every rank starts from rank 0's weights, then draws its own batches.
            let mut weights: Vec<Tensor> = network
                .weights
                .iter()
                .map(|w| w.tensor.shallow_clone())
                .collect();
            group.broadcast_from_root(&mut weights)?;
            let rank = cnnbench_engine::distributed::ProcessGroup::info(group.as_ref()).rank;
            tch::manual_seed(config.seed.wrapping_add(rank as u64) as i64);
        }
        let [c, h, w] = graph.input_shape();
        Ok(Box::new(TorchSession {
            graph: graph.clone(),
            precision: config.precision,
            device: self.device,
            mode: config.mode,
            input_shape: [config.batch_size as i64, c as i64, h as i64, w as i64],
            channels_last: self.channels_last,
            classes: graph.output_shape().elements() as i64,
            network,
            optimizer,
            scaler: (config.mode == Mode::Step && config.precision == Precision::AmpF16)
                .then(|| GradScaler::new(self.device))
                .transpose()?,
            input: None,
            labels: None,
            pass: PassState::default(),
            #[cfg(cnnbench_c10d)]
            group: self.group.clone(),
        }))
    }
}

struct TorchSession {
    graph: Graph,
    precision: Precision,
    device: Device,
    mode: Mode,
    input_shape: [i64; 4],
    /// Images go in channels-last.
    channels_last: bool,
    classes: i64,
    network: Network,
    /// libtorch's SGD with momentum; in train mode it only clears gradients.
    optimizer: Option<COptimizer>,
    /// Loss scaling, for a training step in amp-f16.
    scaler: Option<GradScaler>,
    input: Option<Tensor>,
    labels: Option<Tensor>,
    pass: PassState<Tensor, Tensor>,
    #[cfg(cnnbench_c10d)]
    group: Option<Arc<crate::dist::TorchProcessGroup>>,
}

impl TorchSession {
    /// Drops the last pass's graph and gradients (PyTorch's `zero_grad(set_to_none)`).
    fn clear(&mut self) -> Result<()> {
        self.pass.clear();
        if let Some(opt) = &self.optimizer {
            opt.zero_grad()?;
        }
        Ok(())
    }
}

impl TorchSession {
    /// A network without parameters still has a backward pass (to its input), which
    /// autograd records only when the input requires grad.
    fn track_if_parameterless(&self, input: Tensor) -> Result<Tensor> {
        let input = if self.channels_last {
            channels_last(&input)?
        } else {
            input
        };
        if self.mode != Mode::Infer && self.graph.params() == 0 {
            Ok(input.f_set_requires_grad(true)?)
        } else {
            Ok(input)
        }
    }
}

impl Session for TorchSession {
    fn prepare_batch(&mut self) -> Result<()> {
        self.clear()?;
        let input = Tensor::f_randn(self.input_shape, (Kind::Float, self.device))?
            .f_to_kind(self.network.input_kind())?;
        self.input = Some(if self.channels_last {
            channels_last(&input)?
        } else {
            input
        });
        if self.mode == Mode::Step {
            self.labels = Some(Tensor::f_randint(
                self.classes.max(1),
                [self.input_shape[0]],
                (Kind::Int64, self.device),
            )?);
        }
        Ok(())
    }

    fn forward(&mut self) -> Result<()> {
        let input = self
            .input
            .take()
            .context("forward called before prepare_batch")?;
        match self.mode {
            Mode::Infer => {
                let _guard = tch::no_grad_guard();
                self.pass.set_output(self.network.forward(&input, false)?);
            }
            Mode::Train => self.pass.set_output(self.network.forward(&input, true)?),
            Mode::Step => {
                let logits = self.network.forward(&input, true)?;
                let labels = self.labels.take().context("no labels for the step")?;
                let loss = logits
                    .f_to_kind(Kind::Float)?
                    .f_flatten(1, -1)?
                    .f_cross_entropy_loss::<Tensor>(
                        &labels,
                        None,
                        tch::Reduction::Mean,
                        -100,
                        0.0,
                    )?;
                self.pass.set_loss(loss);
            }
        }
        Ok(())
    }

    fn prepare_output_grad(&mut self) -> Result<()> {
        let grad = self.pass.output_to_backpropagate()?.f_randn_like()?;
        self.pass.set_output_grad(grad);
        Ok(())
    }

    fn backward(&mut self) -> Result<()> {
        match self.pass.backward_from(self.mode)? {
            BackwardFrom::Loss(loss) => match &self.scaler {
                Some(scaler) => Ok(scaler.scale(&loss)?.f_backward()?),
                None => Ok(loss.f_backward()?),
            },
            // sum(output ⊙ grad) hands `grad` to the output, as output.backward(grad).
            BackwardFrom::Output { output, grad } => {
                Ok(output.f_mul(&grad)?.f_sum(None::<Kind>)?.f_backward()?)
            }
        }
    }

    fn update(&mut self) -> Result<()> {
        let opt = self
            .optimizer
            .as_ref()
            .context("inference mode has no optimizer")?;
        let _guard = tch::no_grad_guard();
        match &mut self.scaler {
            Some(scaler) => {
                let mut grads = self.network.reached_gradients();
                scaler.step(&mut grads, || Ok(opt.step()?))?;
                Ok(())
            }
            None => Ok(opt.step()?),
        }
    }

    fn sync(&mut self) -> Result<()> {
        if let Device::Cuda(index) = self.device {
            Cuda::synchronize(index as i64);
        }
        Ok(())
    }

    fn kernels_chosen(&mut self) -> Result<ChosenKernels> {
        if self.device != Device::Cpu {
            return Ok(ChosenKernels::default());
        }
        let mode = self.mode;
        let ((), report) = aten::with_onednn_verbose(|| {
            self.prepare_batch()?;
            self.forward()?;
            if mode == Mode::Train {
                self.prepare_output_grad()?;
            }
            if mode != Mode::Infer {
                self.backward()?;
            }
            self.sync()
        })?;
        self.clear()?;
        let mut chosen = onednn::chosen_kernels(&report, &self.graph, self.precision);
        // oneDNN names its instruction set once per process: later runs reuse it.
        static ONEDNN_ISA: std::sync::OnceLock<String> = std::sync::OnceLock::new();
        if let Some(isa) = &report.isa {
            ONEDNN_ISA.get_or_init(|| isa.clone());
        }
        if let Some(isa) = ONEDNN_ISA.get() {
            chosen
                .settings
                .insert("onednn_isa".to_string(), isa.clone());
        }
        chosen
            .settings
            .insert("aten_cpu_capability".to_string(), aten::cpu_capability()?);
        Ok(chosen)
    }

    fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
        Some(self)
    }

    fn probes(&mut self) -> Option<&mut dyn NodeProbes> {
        Some(self)
    }

    #[cfg(cnnbench_c10d)]
    fn rank(&mut self) -> Option<&mut dyn DataParallelRank> {
        Some(self)
    }
}

impl ExchangeWeights for TorchSession {
    fn export_weights(&self) -> Result<Weights> {
        self.network.export_weights()
    }

    fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        weights.check(&self.graph, true)?;
        self.network.import_weights(weights)
    }

    fn set_input(&mut self, input: &HostTensor) -> Result<()> {
        let expected: Vec<usize> = self.input_shape.iter().map(|&d| d as usize).collect();
        check_input_shape(input, &expected)?;
        self.clear()?;
        let input = from_host(input, self.device)?.f_to_kind(self.network.input_kind())?;
        self.input = Some(self.track_if_parameterless(input)?);
        Ok(())
    }

    fn output(&self) -> Result<HostTensor> {
        to_host(self.pass.output()?)
    }

    fn set_output_grad(&mut self, grad: &HostTensor) -> Result<()> {
        let output = self.pass.output_to_backpropagate()?;
        let shape: Vec<usize> = output.size().iter().map(|&d| d as usize).collect();
        if grad.shape != shape {
            return Err(anyhow!(
                "the gradient has shape {:?} but the output has {shape:?}",
                grad.shape
            ));
        }
        let grad = from_host(grad, self.device)?.f_to_kind(output.kind())?;
        self.pass.set_output_grad(grad);
        Ok(())
    }

    fn weight_gradients(&self) -> Result<Weights> {
        self.network.weight_gradients()
    }
}

impl NodeProbes for TorchSession {
    fn program(&self) -> Option<&cnnbench_engine::kit::Program> {
        Some(self.network.program())
    }

    fn node_gradients(&self) -> Result<Vec<cnnbench_engine::kit::NodeOutput>> {
        self.network.node_gradients()
    }
}

#[cfg(cnnbench_c10d)]
impl DataParallelRank for TorchSession {
    fn group(&self) -> Option<cnnbench_engine::distributed::GroupInfo> {
        self.group
            .as_ref()
            .map(|g| cnnbench_engine::distributed::ProcessGroup::info(g.as_ref()))
    }

    fn all_reduce_gradients(&mut self) -> Result<()> {
        let group = self
            .group
            .as_ref()
            .context("this session does not train across processes")?;
        let mut grads = self.network.reached_gradients();
        let bucket = cnnbench_engine::distributed::ProcessGroup::info(group.as_ref()).bucket_bytes;
        group.all_reduce_mean(&mut grads, bucket)
    }
}
