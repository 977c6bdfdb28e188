//! The default engine, `burn-flex`: burn 0.22's pure-Rust `flex` CPU backend with
//! autodiff. It needs nothing but cargo, so every cnnbench build can run benchmarks.
//!
//! The engine kit's interpreter runs the Graph; this crate supplies burn's kernels
//! (`lower.rs`), the weights as burn parameters (so burn's optimizer can own them) and
//! the session plumbing.

mod lower;
mod provider;
pub use provider::providers;
pub mod target;

pub use lower::{GeluForm, NetParams, Network, UnitMapLayout, Value};
pub use target::availability;

use anyhow::{anyhow, Context, Result};
use burn::module::Module;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::Gradients;
use burn::tensor::{Device, Distribution, Int, Tensor, TensorData};
use cnnbench_engine::kit::{
    check_input_shape, last_gradients, BackwardFrom, PassState, LEARNING_RATE, MOMENTUM,
};
use cnnbench_engine::{
    Capabilities, Engine, EngineInfo, ExchangeWeights, Mode, NodeProbes, Session, SessionConfig,
};
use cnnbench_graph::{Graph, HostTensor, SplitMix64, Weights};
use std::collections::BTreeMap;

/// The engine's name on the command line and in result files.
pub const ENGINE_NAME: &str = "burn-flex";
/// The burn version this engine is built against (pinned in Cargo.toml).
pub const BURN_VERSION: &str = "0.22.1";

/// burn with the flex CPU backend. Its thread pool is rayon's global pool, which can be
/// sized once per process.
pub struct BurnFlexEngine {
    threads: usize,
    /// Read once (the host's memory is a system call away).
    capabilities: Capabilities,
    /// A bug planted in one kernel, for the conformance suite's own tests.
    #[cfg(test)]
    pub(crate) fault: Option<lower::Fault>,
}

impl BurnFlexEngine {
    /// Sizes the thread pool (`None`: all cores). The pool is global to the process: a
    /// second engine asking for a different size is an error, never a silent change.
    /// Refuses a CPU that an x86-v4 build's kernels do not fit (see [`target`]).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        availability().map_err(|why| anyhow!("{ENGINE_NAME} cannot run: {why}"))?;
        Ok(Self {
            threads: cnnbench_engine::size_global_thread_pool(threads)?,
            capabilities: capabilities(),
            #[cfg(test)]
            fault: None,
        })
    }
}

impl Engine for BurnFlexEngine {
    fn info(&self) -> EngineInfo {
        let mut libraries = BTreeMap::new();
        libraries.insert("burn".to_string(), BURN_VERSION.to_string());
        let mut settings = BTreeMap::new();
        if target::X86_V4 {
            settings.insert(
                target::TARGET_FEATURES_KEY.to_string(),
                target::TARGET_FEATURES_X86_V4.to_string(),
            );
        }
        EngineInfo {
            libraries,
            settings,
            ..EngineInfo::on_the_cpu(
                ENGINE_NAME,
                "burn",
                BURN_VERSION,
                "flex",
                self.threads,
                cnnbench_host::cpu_name(),
            )
        }
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        #[allow(unused_mut)]
        let mut session = BurnSession::new(graph, config, Device::flex())?;
        #[cfg(test)]
        {
            session.network.fault = self.fault;
        }
        Ok(Box::new(session))
    }
}

/// What burn-flex does: every mode, f32 only, on the host's memory.
pub fn capabilities() -> Capabilities {
    Capabilities::cpu_f32(cnnbench_host::memory_bytes())
}

/// burn-flex's device for a mode (see [`device_on`]).
pub fn device_for(mode: Mode) -> Device {
    device_on(Device::flex(), mode)
}

/// `base` for a mode: training and steps record autodiff graphs, inference does not (so
/// batch norm uses running statistics and dropout is the identity).
pub fn device_on(base: Device, mode: Mode) -> Device {
    match mode {
        Mode::Train | Mode::Step => base.autodiff(),
        Mode::Infer => base,
    }
}

/// A session of this engine's lowering on any burn device (`base`, without autodiff):
/// burn's other backends (wgpu, CUDA) reuse the whole engine and differ only in the
/// device. The caller's [`Engine::prepare`] has admitted `config` against its own
/// capabilities.
pub fn prepare_session_on(
    base: Device,
    graph: &Graph,
    config: &SessionConfig,
) -> Result<Box<dyn Session>> {
    Ok(Box::new(BurnSession::new(graph, config, base)?))
}

struct BurnSession {
    graph: Graph,
    device: Device,
    mode: Mode,
    batch: usize,
    input_shape: [usize; 3],
    network: Network,
    /// Taken out while the optimizer owns the parameters.
    params: Option<NetParams>,
    optimizer: ModuleOptimizer,
    rng: SplitMix64,
    input: Option<Tensor<4>>,
    labels: Option<Tensor<1, Int>>,
    pass: PassState<Value, Tensor<1>>,
    grads: Option<Gradients>,
    /// The most device memory burn's allocator held at any sync, where the backend
    /// reports its pools (the GPU runtimes; flex does not).
    peak_reserved: Option<u64>,
}

impl BurnSession {
    fn new(graph: &Graph, config: &SessionConfig, base: Device) -> Result<Self> {
        let device = device_on(base, config.mode);
        device.seed(config.seed);
        let (mut network, params) = Network::lower(graph, &device)?;
        if config.deterministic {
            network.disable_dropout();
        }
        let optimizer = SgdConfig::new()
            .with_momentum(Some(MomentumConfig::new().with_momentum(MOMENTUM)))
            .init();
        Ok(Self {
            graph: graph.clone(),
            device,
            mode: config.mode,
            batch: config.batch_size,
            input_shape: graph.input_shape(),
            network,
            params: Some(params),
            optimizer,
            rng: SplitMix64::new(config.seed ^ 0x5eed),
            input: None,
            labels: None,
            pass: PassState::default(),
            grads: None,
            peak_reserved: None,
        })
    }

    /// A network without parameters still has a backward pass (to its input), which
    /// autodiff records only when the input itself is tracked.
    fn track_if_parameterless(&self, input: Tensor<4>) -> Tensor<4> {
        if self.mode != Mode::Infer && self.graph.params() == 0 {
            input.require_grad()
        } else {
            input
        }
    }

    fn params(&self) -> Result<&NetParams> {
        self.params
            .as_ref()
            .ok_or_else(|| anyhow!("the parameters were lost in a failed optimizer step"))
    }
}

impl Session for BurnSession {
    fn prepare_batch(&mut self) -> Result<()> {
        // Free the previous pass's graph and gradients outside the timed region.
        self.pass.clear();
        self.grads = None;
        let [c, h, w] = self.input_shape;
        let input = Tensor::random(
            [self.batch, c, h, w],
            Distribution::Normal(0.0, 1.0),
            &self.device,
        );
        self.input = Some(self.track_if_parameterless(input));
        if self.mode == Mode::Step {
            let classes = self.network.output_features().max(1) as u64;
            let labels: Vec<i64> = (0..self.batch)
                .map(|_| (self.rng.next_u64() % classes) as i64)
                .collect();
            self.labels = Some(Tensor::from_data(
                TensorData::new(labels, [self.batch]),
                &self.device,
            ));
        }
        Ok(())
    }

    fn forward(&mut self) -> Result<()> {
        let input = self
            .input
            .take()
            .context("forward called before prepare_batch")?;
        let output = self.network.forward(self.params()?, input)?;
        if self.mode == Mode::Step {
            let logits = output.into_flat()?;
            let labels = self.labels.take().context("no labels for the step")?;
            let log_probs = burn::tensor::activation::log_softmax(logits, 1);
            let picked = log_probs.gather(1, labels.unsqueeze_dim(1));
            self.pass.set_loss(picked.mean().neg());
        } else {
            self.pass.set_output(output);
        }
        Ok(())
    }

    fn prepare_output_grad(&mut self) -> Result<()> {
        let grad = self
            .pass
            .output_to_backpropagate()?
            .random_like(&self.device);
        self.pass.set_output_grad(grad);
        Ok(())
    }

    fn backward(&mut self) -> Result<()> {
        let grads = match self.pass.backward_from(self.mode)? {
            BackwardFrom::Loss(loss) => loss.backward(),
            // Backpropagating sum(output ⊙ grad) hands `grad` to the output node, as
            // `output.backward(grad)` does in PyTorch.
            BackwardFrom::Output { output, grad } => output.dot_sum(grad)?.backward(),
        };
        self.grads = Some(grads);
        Ok(())
    }

    fn update(&mut self) -> Result<()> {
        let grads = self
            .grads
            .take()
            .context("no gradients: run backward first")?;
        let params = self.params.take().context("parameters missing")?;
        let grads = GradientsParams::from_grads(grads, &params);
        self.params = Some(self.optimizer.step(LEARNING_RATE, params, grads));
        Ok(())
    }

    /// burn's own sync: on a GPU it waits for every queued kernel, so timed regions hold
    /// the device's work. The allocator's pools are read here too, between passes, where
    /// they hold the most a pass needed (pages are kept for reuse, not returned).
    fn sync(&mut self) -> Result<()> {
        self.device
            .sync()
            .map_err(|e| anyhow!("burn device sync failed: {e:?}"))?;
        if let Some(usage) = self.device.memory_pool_usage() {
            let peak = self.peak_reserved.unwrap_or(0).max(usage.bytes_reserved);
            self.peak_reserved = Some(peak);
        }
        Ok(())
    }

    fn device_peak_memory(&self) -> Option<u64> {
        self.peak_reserved
    }

    fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
        Some(self)
    }

    fn probes(&mut self) -> Option<&mut dyn NodeProbes> {
        Some(self)
    }
}

impl ExchangeWeights for BurnSession {
    fn export_weights(&self) -> Result<Weights> {
        self.network.export_weights(self.params()?)
    }

    fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        let mut params = self.params.take().context("parameters missing")?;
        let imported = self
            .network
            .import_weights(&mut params, weights, &self.device);
        self.params = Some(params);
        imported
    }

    fn set_input(&mut self, input: &HostTensor) -> Result<()> {
        let [c, h, w] = self.input_shape;
        check_input_shape(input, &[self.batch, c, h, w])?;
        self.pass.clear();
        self.grads = None;
        let input = lower::from_host(input, &self.device)?;
        self.input = Some(self.track_if_parameterless(input));
        Ok(())
    }

    fn output(&self) -> Result<HostTensor> {
        self.pass.output()?.to_host()
    }

    fn set_output_grad(&mut self, grad: &HostTensor) -> Result<()> {
        let grad = self
            .pass
            .output_to_backpropagate()?
            .like_from_host(grad, &self.device)?;
        self.pass.set_output_grad(grad);
        Ok(())
    }

    fn weight_gradients(&self) -> Result<Weights> {
        let grads = last_gradients(&self.grads)?;
        self.network.weight_gradients(self.params()?, grads)
    }
}

impl NodeProbes for BurnSession {
    fn program(&self) -> Option<&cnnbench_engine::kit::Program> {
        Some(self.network.program())
    }

    fn node_gradients(&self) -> Result<Vec<cnnbench_engine::kit::NodeOutput>> {
        let grads = last_gradients(&self.grads)?;
        self.network.node_gradients(grads)
    }
}

/// Number of trainable parameters burn allocated (running statistics excluded), so tests
/// can check the lowering against the Graph's count.
pub fn trainable_params(params: &NetParams) -> usize {
    struct Count(usize);
    impl burn::module::ModuleVisitor for Count {
        fn visit_float<const D: usize>(&mut self, p: &burn::module::Param<Tensor<D>>) {
            if p.is_require_grad() {
                self.0 += p.val().shape().num_elements();
            }
        }
    }
    let mut count = Count(0);
    params.visit(&mut count);
    count.0
}

#[cfg(test)]
mod tests;
