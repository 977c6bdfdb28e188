//! The engine and its sessions: candle's tensors, the kit's interpreter, an SGD step.

use crate::lower::{self, Network};
use crate::{capabilities, CANDLE_VERSION, ENGINE_NAME};
use anyhow::{anyhow, Context, Result};
use candle_core::backprop::GradStore;
use candle_core::{DType, Device, Tensor};
use cnnbench_engine::kit::{
    check_input_shape, last_gradients, BackwardFrom, PassState, LEARNING_RATE, MOMENTUM,
};
use cnnbench_engine::{
    Capabilities, Engine, EngineInfo, ExchangeWeights, Mode, NodeProbes, Session, SessionConfig,
};
use cnnbench_graph::{Graph, HostTensor, SplitMix64, Weights};
use std::collections::BTreeMap;

/// How pooling runs, recorded in the result because it changes the numbers.
const POOLING: &str = "candle's pool kernels where windows tile or no gradient is needed; \
                       otherwise the max or sum of strided shifts (candle has no backward \
                       for overlapping pooling)";

/// candle on the CPU. Its thread pool is rayon's global pool (shared with burn-flex in
/// one process), which can be sized once per process.
pub struct CandleEngine {
    threads: usize,
    capabilities: Capabilities,
}

impl CandleEngine {
    /// Sizes the thread pool (`None`: all cores). A second engine asking for a different
    /// size in the same process is an error, never a silent change.
    pub fn new(threads: Option<usize>) -> Result<Self> {
        Ok(Self {
            threads: cnnbench_engine::size_global_thread_pool(threads)?,
            capabilities: capabilities(),
        })
    }
}

impl Engine for CandleEngine {
    fn info(&self) -> EngineInfo {
        let mut libraries = BTreeMap::new();
        libraries.insert("candle-core".to_string(), CANDLE_VERSION.to_string());
        let mut settings = BTreeMap::new();
        settings.insert("pooling".to_string(), POOLING.to_string());
        settings.insert(
            "simd".to_string(),
            if candle_core::utils::with_avx() {
                "avx".to_string()
            } else {
                "none detected".to_string()
            },
        );
        EngineInfo {
            libraries,
            settings,
            ..EngineInfo::on_the_cpu(
                ENGINE_NAME,
                "candle",
                CANDLE_VERSION,
                "cpu",
                self.threads,
                cnnbench_host::cpu_name(),
            )
        }
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        Ok(Box::new(CandleSession::new(graph, config)?))
    }
}

struct CandleSession {
    mode: Mode,
    batch: usize,
    input_shape: [usize; 3],
    classes: usize,
    network: Network,
    rng: SplitMix64,
    /// SGD momentum buffers, one per trainable weight, created by the first step.
    momentum: BTreeMap<usize, Tensor>,
    input: Option<Tensor>,
    labels: Option<Tensor>,
    pass: PassState<Tensor, Tensor>,
    grads: Option<GradStore>,
}

impl CandleSession {
    fn new(graph: &Graph, config: &SessionConfig) -> Result<Self> {
        let mut network = Network::lower(graph, config.seed)?;
        if config.deterministic {
            network.disable_dropout();
        }
        Ok(Self {
            mode: config.mode,
            batch: config.batch_size,
            input_shape: graph.input_shape(),
            classes: graph.output_shape().elements() as usize,
            network,
            rng: SplitMix64::new(config.seed ^ 0x5eed),
            momentum: BTreeMap::new(),
            input: None,
            labels: None,
            pass: PassState::default(),
            grads: None,
        })
    }

    fn clear(&mut self) {
        self.pass.clear();
        self.grads = None;
    }

    fn random(&mut self, shape: Vec<usize>) -> Result<Tensor> {
        lower::from_host(&HostTensor::standard_normal(shape, self.rng.next_u64()))
    }

    /// A network without parameters still has a backward pass (to its input), which
    /// candle records only when the input is a variable.
    fn track_if_parameterless(&self, input: Tensor) -> Result<Tensor> {
        if self.mode != Mode::Infer && self.network.graph().params() == 0 {
            Ok(candle_core::Var::from_tensor(&input)?.into_inner())
        } else {
            Ok(input)
        }
    }
}

impl Session for CandleSession {
    fn prepare_batch(&mut self) -> Result<()> {
        // Free the previous pass's graph and gradients outside the timed region.
        self.clear();
        let [c, h, w] = self.input_shape;
        let input = self.random(vec![self.batch, c, h, w])?;
        self.input = Some(self.track_if_parameterless(input)?);
        if self.mode == Mode::Step {
            let classes = self.classes.max(1) as u64;
            let labels: Vec<u32> = (0..self.batch)
                .map(|_| (self.rng.next_u64() % classes) as u32)
                .collect();
            self.labels = Some(Tensor::from_vec(labels, (self.batch, 1), &Device::Cpu)?);
        }
        Ok(())
    }

    fn forward(&mut self) -> Result<()> {
        let input = self
            .input
            .take()
            .context("forward called before prepare_batch")?;
        let output = self.network.forward(input, self.mode != Mode::Infer)?;
        if self.mode == Mode::Step {
            let logits = output.flatten_from(1)?;
            let labels = self.labels.take().context("no labels for the step")?;
            // Cross-entropy: −mean(log_softmax(logits)[label]).
            let log_norm = logits.log_sum_exp(1)?.unsqueeze(1)?;
            let log_probs = logits.broadcast_sub(&log_norm)?;
            self.pass
                .set_loss(log_probs.gather(&labels, 1)?.mean_all()?.neg()?);
        } else {
            self.pass.set_output(output);
        }
        Ok(())
    }

    fn prepare_output_grad(&mut self) -> Result<()> {
        let shape = self.pass.output_to_backpropagate()?.dims().to_vec();
        let grad = self.random(shape)?;
        self.pass.set_output_grad(grad);
        Ok(())
    }

    fn backward(&mut self) -> Result<()> {
        let grads = match self.pass.backward_from(self.mode)? {
            BackwardFrom::Loss(loss) => loss.backward()?,
            // Backpropagating sum(output ⊙ grad) hands `grad` to the output, as
            // `output.backward(grad)` does in PyTorch.
            BackwardFrom::Output { output, grad } => (output * grad)?.sum_all()?.backward()?,
        };
        self.grads = Some(grads);
        Ok(())
    }

    /// PyTorch's SGD with momentum (no dampening): buf ← μ·buf + g (buf ← g at the first
    /// step), w ← w − lr·buf.
    fn update(&mut self) -> Result<()> {
        let grads = self
            .grads
            .take()
            .context("no gradients: run backward first")?;
        for (index, var) in self.network.trainable() {
            let Some(grad) = grads.get(var.as_tensor()) else {
                continue;
            };
            let buf = match self.momentum.remove(&index) {
                Some(buf) => (buf.affine(MOMENTUM, 0.0)? + grad)?,
                None => grad.copy()?,
            };
            let next = (var.as_tensor().detach() - buf.affine(LEARNING_RATE, 0.0)?)?;
            var.set(&next)?;
            self.momentum.insert(index, buf);
        }
        Ok(())
    }

    /// The CPU backend computes synchronously.
    fn sync(&mut self) -> Result<()> {
        Ok(())
    }

    fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
        Some(self)
    }

    fn probes(&mut self) -> Option<&mut dyn NodeProbes> {
        Some(self)
    }
}

impl ExchangeWeights for CandleSession {
    fn export_weights(&self) -> Result<Weights> {
        self.network.export_weights()
    }

    fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        self.momentum.clear();
        self.network.import_weights(weights)
    }

    fn set_input(&mut self, input: &HostTensor) -> Result<()> {
        let [c, h, w] = self.input_shape;
        check_input_shape(input, &[self.batch, c, h, w])?;
        self.clear();
        let input = lower::from_host(input)?;
        self.input = Some(self.track_if_parameterless(input)?);
        Ok(())
    }

    fn output(&self) -> Result<HostTensor> {
        lower::to_host(self.pass.output()?)
    }

    fn set_output_grad(&mut self, grad: &HostTensor) -> Result<()> {
        let output = self.pass.output_to_backpropagate()?;
        if grad.shape != output.dims() {
            return Err(anyhow!(
                "the gradient has shape {:?} but the output has {:?}",
                grad.shape,
                output.dims()
            ));
        }
        let grad = lower::from_host(grad)?.to_dtype(DType::F32)?;
        self.pass.set_output_grad(grad);
        Ok(())
    }

    fn weight_gradients(&self) -> Result<Weights> {
        let grads = last_gradients(&self.grads)?;
        self.network.weight_gradients(grads)
    }
}

impl NodeProbes for CandleSession {
    fn program(&self) -> Option<&cnnbench_engine::kit::Program> {
        Some(self.network.program())
    }

    fn node_gradients(&self) -> Result<Vec<cnnbench_engine::kit::NodeOutput>> {
        let grads = last_gradients(&self.grads)?;
        self.network.node_gradients(grads)
    }
}
