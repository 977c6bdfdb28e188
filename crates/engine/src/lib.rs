//! The engine interface. An [`Engine`] turns a [`Graph`] into a [`Session`] on one
//! device; the harness drives the session and owns the clock. Engines never read the
//! clock, so every engine is timed the same way.
//!
//! [`kit`] holds what every engine shares: the interpreter that walks the Graph, the
//! weight keys and initialisation, the training constants. An engine supplies kernels,
//! device plumbing and its [`Capabilities`].

pub mod coverage;
pub mod distributed;
pub mod int8;
pub mod kit;
pub mod onednn;
pub mod provider;
pub mod settings;
pub mod test_prerequisite;
pub mod whole_model;

use cnnbench_graph::{Graph, HostTensor, Weights};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The plain data types of a run (mode, phases, precision, engine settings and the
/// engine's record), defined with the result schema that records them so that reading
/// results needs no engine; re-exported here, where engines and the harness use them.
pub use cnnbench_results::engine_types::{EngineInfo, Mode, Phase, Precision};
/// For the settings macros' messages (a key a user typed, shown escaped).
#[doc(hidden)]
pub use cnnbench_results::printable;

/// A warning from an engine with no caller to hand it to (a thread watching other
/// ranks, a teardown), on stderr as one inert line (its text may quote a file, a
/// peer or a library) that never panics, as the CLI's own messages (clippy.toml).
pub fn warn_on_stderr(line: &str) {
    cnnbench_results::inert_line_on_stderr(line);
}

/// How a session is set up. The engine must honour every field or refuse.
#[derive(Clone, Debug, PartialEq)]
pub struct SessionConfig {
    pub mode: Mode,
    pub batch_size: usize,
    /// Seeds weights, inputs, gradients and labels.
    pub seed: u64,
    pub precision: Precision,
    /// Dropout becomes the identity, so that two engines given the same weights and
    /// input compute the same function (`cnnbench verify`). Benchmarks leave it off.
    pub deterministic: bool,
    /// The calibration an int8 session quantises with, measured beforehand on the same
    /// weights (`None` for every other precision): calibration runs another engine's
    /// f32 interpreter, so the caller measures it and hands it over.
    pub calibration: Option<std::sync::Arc<int8::Int8Calibration>>,
}

impl SessionConfig {
    /// What every engine requires of a configuration for `graph`: at least one image,
    /// and class scores at the end for a training step's loss.
    pub fn check(&self, graph: &Graph) -> anyhow::Result<()> {
        if self.batch_size == 0 {
            return Err(anyhow::anyhow!("the batch size must be at least 1"));
        }
        if self.mode == Mode::Step && graph.output_shape().as_flat().is_none() {
            return Err(anyhow::anyhow!(
                "step mode needs a network that ends in class scores (a flat vector), but \"{}\" outputs {}",
                graph.name(),
                graph.output_shape()
            ));
        }
        Ok(())
    }
}

/// Where an engine computes, which decides what memory a run must fit in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    Cpu,
    Gpu,
}

/// What an engine can do. `run`, `verify` and `engines` read this rather than knowing
/// engines by name; [`Capabilities::check`] refuses a configuration the engine cannot
/// honour before anything runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Capabilities {
    /// The modes it runs; an inference-only engine lists `Infer` alone.
    pub modes: Vec<Mode>,
    pub precisions: Vec<Precision>,
    pub device: DeviceKind,
    /// Whether it exchanges weights, inputs, outputs and gradients, so that `verify`
    /// can compare it with another engine.
    pub weight_exchange: bool,
    /// Bytes of memory on the device it computes on, where known: the host's RAM for a
    /// CPU engine, the GPU's memory for a GPU engine.
    pub device_memory: Option<u64>,
    /// Why the engine lacks a precision, where that is worth saying (a measured reason,
    /// a way out): the refusal quotes it.
    pub precision_refusals: Vec<(Precision, String)>,
    /// Why the engine, as configured, lacks a mode (a setting that allows inference
    /// alone): the refusal quotes it.
    pub mode_refusals: Vec<(Mode, String)>,
}

impl Capabilities {
    /// Every mode in f32 on the CPU, weights exchanged; `device_memory` is the host's
    /// memory (`cnnbench_host::memory_bytes()`), passed in so this crate probes nothing.
    pub fn cpu_f32(device_memory: Option<u64>) -> Self {
        Capabilities {
            modes: vec![Mode::Train, Mode::Infer, Mode::Step],
            precisions: vec![Precision::F32],
            device: DeviceKind::Cpu,
            weight_exchange: true,
            device_memory,
            precision_refusals: Vec::new(),
            mode_refusals: Vec::new(),
        }
    }

    /// The same capabilities without `mode`, for the reason given (which its refusal
    /// quotes).
    pub fn without_mode(mut self, mode: Mode, why: impl Into<String>) -> Self {
        self.modes.retain(|&m| m != mode);
        self.mode_refusals.push((mode, why.into()));
        self
    }

    /// The same capabilities, with the reason `precision` is refused.
    pub fn refusing(mut self, precision: Precision, why: impl Into<String>) -> Self {
        self.precision_refusals.push((precision, why.into()));
        self
    }

    /// Inference alone in f32 on the CPU, weights exchanged: what the engines on the
    /// ONNX path (ort-cpu, tract) do. `device_memory` as for [`Capabilities::cpu_f32`].
    pub fn cpu_f32_inference(device_memory: Option<u64>) -> Self {
        Capabilities {
            modes: vec![Mode::Infer],
            ..Capabilities::cpu_f32(device_memory)
        }
    }

    /// Whether the engine runs backward passes (train and step modes).
    pub fn trains(&self) -> bool {
        self.modes.contains(&Mode::Train)
    }

    /// Refuses a mode or precision the engine does not support, saying what it does.
    pub fn check(&self, engine: &str, mode: Mode, precision: Precision) -> anyhow::Result<()> {
        if !self.modes.contains(&mode) {
            let why = self
                .mode_refusals
                .iter()
                .find(|(m, _)| *m == mode)
                .map(|(_, why)| format!(" ({why})"))
                .unwrap_or_default();
            return Err(anyhow::anyhow!(
                "{engine} cannot run {mode} mode{why}; it runs: {}",
                self.modes_text()
            ));
        }
        if !self.precisions.contains(&precision) {
            let why = self
                .precision_refusals
                .iter()
                .find(|(p, _)| *p == precision)
                .map(|(_, why)| why.as_str())
                .or_else(|| {
                    (precision == Precision::Tf32 && self.device == DeviceKind::Cpu).then_some(
                        "TF32 is a format of GPU tensor cores; on a CPU f32 is what would run: use --precision f32",
                    )
                })
                .or_else(|| (precision == Precision::Int8).then_some(INT8_ENGINES))
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            return Err(anyhow::anyhow!(
                "{engine} does not compute in {}{why}; it computes in: {}",
                precision.as_str(),
                self.precisions_text()
            ));
        }
        Ok(())
    }

    /// Refuses, before anything is prepared, a configuration the engine cannot honour for
    /// `graph`: a mode or precision it lacks ([`Capabilities::check`]), then what every
    /// engine requires ([`SessionConfig::check`]). The engine's name, for the refusal, is
    /// asked for only when there is one: every session passes through here (a profile
    /// prepares one per node), and an engine's record may probe the machine.
    pub fn admit(
        &self,
        engine: impl FnOnce() -> String,
        graph: &Graph,
        config: &SessionConfig,
    ) -> anyhow::Result<()> {
        if !(self.modes.contains(&config.mode) && self.precisions.contains(&config.precision)) {
            self.check(&engine(), config.mode, config.precision)?;
        }
        config.check(graph)
    }

    /// The modes, e.g. `train, infer, step`.
    pub fn modes_text(&self) -> String {
        let names: Vec<&str> = self.modes.iter().map(|m| m.as_str()).collect();
        names.join(", ")
    }

    /// The precisions, e.g. `f32, bf16`.
    pub fn precisions_text(&self) -> String {
        let names: Vec<&str> = self.precisions.iter().map(|p| p.as_str()).collect();
        names.join(", ")
    }
}

/// PyTorch's Python batch norm (`torch.nn.functional.batch_norm`) refuses to train on a
/// single value per channel ("Expected more than 1 value per channel when training"),
/// where burn-flex, candle and libtorch's C++ op (torch-cpu) train on it, with a
/// variance of 0. The pytorch engines refuse such a run before the worker does, naming
/// the layer and the way out: the first batch-norm node that would see batch × height
/// × width = 1 in a training mode, if any.
pub fn refuse_batch_norm_on_one_value(
    engine: &str,
    graph: &Graph,
    config: &SessionConfig,
) -> anyhow::Result<()> {
    let trains = match config.mode {
        Mode::Train | Mode::Step => true,
        Mode::Infer => false,
    };
    if !trains {
        return Ok(());
    }
    let lone = graph.nodes().iter().find(|node| {
        matches!(node.op, cnnbench_graph::Op::BatchNorm2d(_))
            && config.batch_size * node.shape.0.iter().skip(1).product::<usize>() == 1
    });
    match lone {
        None => Ok(()),
        Some(node) => Err(anyhow::anyhow!(
            "{engine} cannot train this: PyTorch's batch norm (torch.nn.functional) needs more than one value per channel in training, and layer '{}' sees a 1×1 map at batch {} (batch × height × width = 1); give -b 2 or more, or a larger --image-size (burn-flex and torch-cpu train on it, with a variance of 0)",
            printable(&node.name),
            config.batch_size
        )),
    }
}

/// Why an engine without int8 lacks it, where it says nothing more.
pub const INT8_ENGINES: &str = "int8 runs on the engines whose stacks have int8 kernels: ort-cpu and openvino-cpu run cnnbench's quantised (QDQ) export, and pytorch-compile quantises with PyTorch's own PT2E quantiser (torchao, with --freezing)";

/// The answer of an inference-only session to a training call (the harness checks the
/// engine's capabilities first, so a run never gets here).
fn inference_only() -> anyhow::Error {
    anyhow::anyhow!("this engine runs inference only: it has no backward pass or optimizer")
}

/// Which kernels a stack ran, as it says: settings for the result (`onednn_convolution`
/// = "jit:avx2 ×44, …") and warnings where that explains a number (bf16 convolutions
/// that fell back to reference kernels).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChosenKernels {
    pub settings: BTreeMap<String, String>,
    pub warnings: Vec<String>,
}

/// A compiled network on one device, with the state a pass needs (current input,
/// output, upstream gradient). Every method except `sync` may be asynchronous on devices
/// that queue work; the harness calls `sync` around every timed region.
pub trait Session: Send {
    /// Untimed: draw a fresh random input batch (and labels, in step mode).
    fn prepare_batch(&mut self) -> anyhow::Result<()>;
    /// Untimed: ready the next forward pass on the input the last one computed, as a
    /// server computes the samples it holds in memory (several queries in flight, where
    /// drawing a fresh input would hold up a waiting query). A session whose forward
    /// consumes its input draws a fresh one, as here.
    fn prepare_same_batch(&mut self) -> anyhow::Result<()> {
        self.prepare_batch()
    }
    /// Timed: the forward pass (in step mode, including the loss).
    fn forward(&mut self) -> anyhow::Result<()>;
    /// Untimed: draw a random upstream gradient of the output's shape (train mode). An
    /// inference-only engine (capabilities `modes: [infer]`) leaves the three training
    /// calls to these defaults, which refuse.
    fn prepare_output_grad(&mut self) -> anyhow::Result<()> {
        Err(inference_only())
    }
    /// Timed: backpropagate to every parameter (and the input's producer).
    fn backward(&mut self) -> anyhow::Result<()> {
        Err(inference_only())
    }
    /// Timed: apply the optimizer update (step mode).
    fn update(&mut self) -> anyhow::Result<()> {
        Err(inference_only())
    }
    /// Blocks until the device has finished all queued work.
    fn sync(&mut self) -> anyhow::Result<()>;
    /// What the stack says it runs for this session, where that depends on the model
    /// and is known only once it is prepared (OpenVINO's execution precision, streams
    /// and infer requests): added to the result's engine settings.
    fn reported_settings(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    /// Untimed, after the timed passes: one more pass (no optimizer update) during which
    /// the stack says which kernels it chose (oneDNN's verbose output on libtorch's
    /// CPU); nothing where the stack does not tell. Runs after every figure of the timed
    /// passes is read.
    fn kernels_chosen(&mut self) -> anyhow::Result<ChosenKernels> {
        Ok(ChosenKernels::default())
    }
    /// Peak memory the device allocated since the last reset, where the device tracks it.
    fn device_peak_memory(&self) -> Option<u64> {
        None
    }
    /// The resident-set high-water mark of the process the session computes in, where
    /// that is not this one (a worker process), since the session was prepared.
    fn worker_peak_rss(&mut self) -> Option<u64> {
        None
    }
    /// Untimed by the passes, timed by the harness on its own: compile the network now
    /// (one throw-away pass) for an engine that compiles lazily on its first call
    /// (`torch.compile`), so that no pass pays for it. Returns whether there was
    /// anything to compile.
    fn compile(&mut self) -> anyhow::Result<bool> {
        Ok(false)
    }
    /// The warm-up is over: what happens from now on is measured (an engine that may
    /// compile again counts from here).
    fn begin_timed_passes(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
    /// What the session saw during the timed passes that makes their times mean less
    /// (a recompilation), as warnings for the result.
    fn timed_pass_warnings(&mut self) -> anyhow::Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// An empty call to where the session computes, for an engine that computes in
    /// another process: the harness times it as the floor under every timed phase.
    /// `None` for an engine in this process.
    fn empty_call(&mut self) -> Option<anyhow::Result<()>> {
        None
    }

    // What a session can do beyond timing, each a trait of its own that a session has
    // or has not (as burn splits its backend into op traits): the harness times any
    // session; `verify` needs the exchange, `--localize` the probes, data-parallel
    // training a rank. Callers reach them through the methods on `dyn Session` below,
    // which say what is missing.

    /// Weights, inputs, outputs and gradients in and out, where the engine exchanges
    /// them (capabilities `weight_exchange`).
    fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
        None
    }
    /// Every node's output (and gradient) kept for `verify --localize`, where the engine
    /// can show them.
    fn probes(&mut self) -> Option<&mut dyn NodeProbes> {
        None
    }
    /// This session's rank in a process group, for data-parallel training (see
    /// [`distributed`]); `None` for a single process.
    fn rank(&mut self) -> Option<&mut dyn DataParallelRank> {
        None
    }
}

/// What `cnnbench verify` needs to run one network on two engines: the same weights,
/// input and upstream gradient in, the output and every gradient back out. Weights are
/// keyed and laid out as [`Graph::weight_specs`] says (PyTorch's convention).
pub trait ExchangeWeights {
    /// Every weight tensor, parameters and running statistics.
    fn export_weights(&self) -> anyhow::Result<Weights>;
    /// Replaces every weight tensor; `weights` must be complete and fit the graph.
    fn import_weights(&mut self, weights: &Weights) -> anyhow::Result<()>;
    /// Untimed: use this input batch `[N, C, H, W]` instead of a random one.
    fn set_input(&mut self, input: &HostTensor) -> anyhow::Result<()>;
    /// The output of the last forward pass (train and infer modes).
    fn output(&self) -> anyhow::Result<HostTensor>;
    /// Untimed: use this upstream gradient instead of a random one (train mode); an
    /// inference-only engine leaves this and [`ExchangeWeights::weight_gradients`] to
    /// their defaults, which refuse.
    fn set_output_grad(&mut self, _grad: &HostTensor) -> anyhow::Result<()> {
        Err(inference_only())
    }
    /// The gradient of every trainable weight after the last backward pass.
    fn weight_gradients(&self) -> anyhow::Result<Weights> {
        Err(inference_only())
    }
}

/// Every node's output, and the gradient arriving at it, for `verify --localize`. An
/// engine on the kit's interpreter gives its [`kit::Program`], which keeps them; another
/// engine overrides the methods.
pub trait NodeProbes {
    /// The kit's interpreter this session runs, for an engine built on it.
    fn program(&self) -> Option<&kit::Program> {
        None
    }
    /// From the next forward pass on, keep every node's output on the host.
    fn keep_node_outputs(&mut self) -> anyhow::Result<()> {
        self.program()
            .ok_or_else(|| anyhow::anyhow!("this engine does not keep its nodes' outputs"))?
            .keep_node_outputs();
        Ok(())
    }
    /// Every node's output of the last forward pass, in node order.
    fn node_outputs(&self) -> anyhow::Result<Vec<kit::NodeOutput>> {
        self.program()
            .ok_or_else(|| anyhow::anyhow!("this engine does not keep its nodes' outputs"))?
            .node_outputs()
    }
    /// From the next training pass on, keep what is needed to read the gradient arriving
    /// at every node after backward (engines on the kit's interpreter with autodiff).
    fn keep_node_gradients(&mut self) -> anyhow::Result<()> {
        self.program()
            .ok_or_else(no_node_gradients)?
            .keep_node_gradients();
        Ok(())
    }
    /// The gradient arriving at every node's output in the last backward pass, in node
    /// order.
    fn node_gradients(&self) -> anyhow::Result<Vec<kit::NodeOutput>> {
        Err(anyhow::anyhow!(
            "this engine does not keep the gradients arriving at its nodes"
        ))
    }
}

fn no_node_gradients() -> anyhow::Error {
    anyhow::anyhow!(
        "this engine cannot show the gradient arriving at each node, so `verify --localize` compares its outputs only"
    )
}

/// A session of one rank in a process group: it averages its gradients with the other
/// ranks' after every backward pass.
pub trait DataParallelRank {
    /// The process group it trains in; `None` for a session of an engine that trains
    /// across processes, made outside a group.
    fn group(&self) -> Option<distributed::GroupInfo>;
    /// Timed: average every gradient across the ranks (an all-reduce), in place.
    fn all_reduce_gradients(&mut self) -> anyhow::Result<()>;
}

/// The capabilities as callers use them: each method reaches the capability, or says
/// that the engine lacks it.
impl dyn Session + '_ {
    fn exchanging(&mut self) -> anyhow::Result<&mut dyn ExchangeWeights> {
        self.exchange().ok_or_else(no_weight_exchange)
    }
    /// See [`ExchangeWeights::export_weights`].
    pub fn export_weights(&mut self) -> anyhow::Result<Weights> {
        self.exchanging()?.export_weights()
    }
    /// See [`ExchangeWeights::import_weights`].
    pub fn import_weights(&mut self, weights: &Weights) -> anyhow::Result<()> {
        self.exchanging()?.import_weights(weights)
    }
    /// See [`ExchangeWeights::set_input`].
    pub fn set_input(&mut self, input: &HostTensor) -> anyhow::Result<()> {
        self.exchanging()?.set_input(input)
    }
    /// See [`ExchangeWeights::output`].
    pub fn output(&mut self) -> anyhow::Result<HostTensor> {
        self.exchanging()?.output()
    }
    /// See [`ExchangeWeights::set_output_grad`].
    pub fn set_output_grad(&mut self, grad: &HostTensor) -> anyhow::Result<()> {
        self.exchanging()?.set_output_grad(grad)
    }
    /// See [`ExchangeWeights::weight_gradients`].
    pub fn weight_gradients(&mut self) -> anyhow::Result<Weights> {
        self.exchanging()?.weight_gradients()
    }
    /// See [`NodeProbes::keep_node_outputs`].
    pub fn keep_node_outputs(&mut self) -> anyhow::Result<()> {
        self.probes()
            .ok_or_else(|| anyhow::anyhow!(
                "this engine cannot show its nodes' outputs (it runs the model as a whole), so `verify --localize` cannot look inside it"
            ))?
            .keep_node_outputs()
    }
    /// See [`NodeProbes::node_outputs`].
    pub fn node_outputs(&mut self) -> anyhow::Result<Vec<kit::NodeOutput>> {
        self.probes()
            .ok_or_else(|| anyhow::anyhow!("this engine does not keep its nodes' outputs"))?
            .node_outputs()
    }
    /// See [`NodeProbes::keep_node_gradients`].
    pub fn keep_node_gradients(&mut self) -> anyhow::Result<()> {
        self.probes()
            .ok_or_else(no_node_gradients)?
            .keep_node_gradients()
    }
    /// See [`NodeProbes::node_gradients`].
    pub fn node_gradients(&mut self) -> anyhow::Result<Vec<kit::NodeOutput>> {
        self.probes()
            .ok_or_else(|| {
                anyhow::anyhow!("this engine does not keep the gradients arriving at its nodes")
            })?
            .node_gradients()
    }
    /// The process group this session trains in, `None` for a single process.
    pub fn data_parallel(&mut self) -> Option<distributed::GroupInfo> {
        self.rank().and_then(|rank| rank.group())
    }
    /// See [`DataParallelRank::all_reduce_gradients`].
    pub fn all_reduce_gradients(&mut self) -> anyhow::Result<()> {
        self.rank()
            .ok_or_else(|| anyhow::anyhow!("this session does not train across processes"))?
            .all_reduce_gradients()
    }
}

/// A way to run graphs on one kind of device.
pub trait Engine {
    fn info(&self) -> EngineInfo;
    fn capabilities(&self) -> Capabilities;
    /// How this engine's stack quantises an int8 network itself, where it does (its own
    /// quantiser and observers, on the calibration images), for the result's record;
    /// `None` where it runs cnnbench's QDQ network, as ONNX Runtime and OpenVINO do.
    fn own_quantization(&self) -> Option<int8::OwnQuantization> {
        None
    }
    /// Lowers `graph` for `config`, which [`Engine::prepare`] has admitted (a mode,
    /// precision and batch the engine's capabilities allow); fails with a clear message
    /// for an op or setting the engine does not support.
    fn lower(&self, graph: &Graph, config: &SessionConfig) -> anyhow::Result<Box<dyn Session>>;
    /// The one way to a session: refuses what the engine's [`Capabilities`] do not allow
    /// ([`Capabilities::admit`]), then lowers. Engines implement [`Engine::lower`], so
    /// that no engine admits on its own terms.
    fn prepare(&self, graph: &Graph, config: &SessionConfig) -> anyhow::Result<Box<dyn Session>> {
        self.capabilities()
            .admit(|| self.info().name, graph, config)?;
        self.lower(graph, config)
    }
}

fn no_weight_exchange() -> anyhow::Error {
    anyhow::anyhow!(
        "this engine cannot exchange weights, inputs and gradients, so it cannot be verified"
    )
}

/// The size of an engine's own thread pool: `threads` as asked (at least 1), or every
/// core when `None`. For engines with a pool of their own (ort-cpu, tract); the
/// pure-Rust engines on rayon's global pool use [`size_global_thread_pool`].
pub fn own_thread_pool_size(threads: Option<usize>) -> anyhow::Result<usize> {
    match threads {
        Some(0) => Err(anyhow::anyhow!("--threads must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
    }
}

/// Sizes rayon's global thread pool, which the pure-Rust CPU engines (burn-flex, candle)
/// compute on, and returns its size (`None`: rayon's default, all cores). The pool is
/// global to the process and can be built once: asking again for a different size is
/// an error, never a silent change.
pub fn size_global_thread_pool(threads: Option<usize>) -> anyhow::Result<usize> {
    if let Some(n) = threads {
        if n == 0 {
            return Err(anyhow::anyhow!("--threads must be at least 1"));
        }
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
        if built.is_err() && rayon::current_num_threads() != n {
            return Err(anyhow::anyhow!(
                "the thread pool already has {} threads in this process and cannot be resized to {n}",
                rayon::current_num_threads()
            ));
        }
    }
    Ok(rayon::current_num_threads())
}

#[cfg(test)]
mod thread_pool_tests {
    use super::{own_thread_pool_size, size_global_thread_pool};

    #[test]
    fn an_own_pool_has_the_threads_asked_or_every_core() {
        assert_eq!(own_thread_pool_size(Some(3)).unwrap(), 3);
        assert!(own_thread_pool_size(None).unwrap() >= 1);
        let e = own_thread_pool_size(Some(0)).unwrap_err().to_string();
        assert!(e.contains("at least 1"), "{e}");
    }

    #[test]
    fn the_global_pool_is_sized_once_and_never_silently_resized() {
        assert!(size_global_thread_pool(Some(0)).is_err());
        let n = size_global_thread_pool(None).unwrap();
        assert!(n >= 1);
        assert_eq!(size_global_thread_pool(Some(n)).unwrap(), n);
        let e = size_global_thread_pool(Some(n + 1))
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot be resized"), "{e}");
    }
}

#[cfg(test)]
mod capabilities_tests {
    use super::*;

    #[test]
    fn inference_engines_differ_from_training_ones_in_their_modes_alone() {
        let infer = Capabilities::cpu_f32_inference(Some(1 << 30));
        assert_eq!(infer.modes, vec![Mode::Infer]);
        assert!(!infer.trains());
        assert_eq!(
            Capabilities {
                modes: Capabilities::cpu_f32(Some(1 << 30)).modes,
                ..infer
            },
            Capabilities::cpu_f32(Some(1 << 30))
        );
    }
}

#[cfg(test)]
mod capability_tests {
    use super::*;

    #[test]
    fn a_cpu_engine_refuses_tf32_saying_why_and_a_given_reason_wins() {
        let cpu = Capabilities::cpu_f32(None);
        let e = cpu.check("x", Mode::Infer, Precision::Tf32).unwrap_err();
        assert!(e.to_string().contains("GPU tensor cores"), "{e}");
        assert!(e.to_string().contains("it computes in: f32"), "{e}");
        let e = cpu
            .clone()
            .refusing(Precision::Tf32, "a reason of its own")
            .check("x", Mode::Infer, Precision::Tf32)
            .unwrap_err();
        assert!(e.to_string().contains("(a reason of its own)"), "{e}");
        // A GPU engine that lacks TF32 gets no CPU wording.
        let gpu = Capabilities {
            device: DeviceKind::Gpu,
            ..cpu
        };
        let e = gpu.check("x", Mode::Infer, Precision::Tf32).unwrap_err();
        assert!(!e.to_string().contains("tensor cores"), "{e}");
    }
}

#[cfg(test)]
mod batch_norm_tests {
    use super::*;
    use cnnbench_graph::ops::Conv2d;
    use cnnbench_graph::GraphBuilder;

    /// A conv to a 1×1 map of 4 channels, then batch norm.
    fn one_by_one_batch_norm() -> Graph {
        let mut b = GraphBuilder::new("lone", [3, 8, 8]);
        let x = b.input();
        let c = b.conv("conv", &x, Conv2d::new(4, 8));
        let n = b.batch_norm("bn\u{1b}", &c);
        b.finish(&n).unwrap()
    }

    fn config(mode: Mode, batch_size: usize) -> SessionConfig {
        SessionConfig {
            mode,
            batch_size,
            seed: 0,
            precision: Precision::F32,
            deterministic: true,
            calibration: None,
        }
    }

    #[test]
    fn training_batch_norm_on_one_value_a_channel_is_refused_with_the_way_out() {
        let graph = one_by_one_batch_norm();
        for mode in [Mode::Train, Mode::Step] {
            let e = refuse_batch_norm_on_one_value("pytorch", &graph, &config(mode, 1))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("layer 'bn\\u{1b}' sees a 1×1 map at batch 1"),
                "{e}"
            );
            assert!(e.contains("-b 2 or more"), "{e}");
            refuse_batch_norm_on_one_value("pytorch", &graph, &config(mode, 2)).unwrap();
        }
        refuse_batch_norm_on_one_value("pytorch", &graph, &config(Mode::Infer, 1)).unwrap();
    }
}
