//! The engines that run a whole exported network (ort-cpu, tract, openvino-cpu) differ
//! only in their runtime's calls: load the network, take an input batch in the
//! runtime's form, run a pass, read the output back. Everything else — the initial
//! weights, the input batches, reloading after a weight import, the session's state and
//! the engine's admission — is written once here, so that such an engine supplies a
//! [`WholeModelRuntime`] and nothing more.

use crate::kit::InputBatches;
use crate::{
    Capabilities, ChosenKernels, Engine, EngineInfo, ExchangeWeights, Session, SessionConfig,
};
use anyhow::{anyhow, Result};
use cnnbench_graph::{Graph, HostTensor, Weights};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A stack's calls for running a whole network. The runtime holds what every session of
/// the engine shares (the loaded library, the thread count, the engine's own settings).
pub trait WholeModelRuntime: Send + Sync + 'static {
    /// The network loaded and ready to run: an ONNX Runtime session, tract's plan,
    /// OpenVINO's compiled model with its infer requests.
    type Loaded: Send;
    /// An input batch in the runtime's own form, made before a timed pass (nothing,
    /// where the runtime holds its inputs inside [`WholeModelRuntime::Loaded`]).
    type Input: Send;
    /// A pass's output as the runtime leaves it; a runtime whose own API hands a copy on
    /// the host (as its Python API does) copies inside the timed pass.
    type Output: Send;

    /// What the result file records about the engine.
    fn info(&self) -> EngineInfo;
    /// What the engine can do.
    fn capabilities(&self) -> Capabilities;
    /// Loads `graph` with these weights for batches of `config.batch_size`.
    fn load(
        &self,
        graph: &Graph,
        weights: &Weights,
        config: &SessionConfig,
    ) -> Result<Self::Loaded>;
    /// Untimed: the batch in the runtime's form (or placed into `loaded`).
    fn make_input(&self, loaded: &mut Self::Loaded, input: &HostTensor) -> Result<Self::Input>;
    /// Timed: one forward pass; returns when its output is computed.
    fn run(&self, loaded: &mut Self::Loaded, input: &Self::Input) -> Result<Self::Output>;
    /// Untimed: a pass's output on the host.
    fn read_output(&self, output: &Self::Output) -> Result<HostTensor>;
    /// What the runtime reports about the loaded network (added to the result's engine
    /// settings); nothing unless it reports something.
    fn reported_settings(&self, _loaded: &Self::Loaded) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    /// Which kernels the runtime chose for the loaded network, where it says (what an
    /// int8 network really ran in: [`crate::coverage::KernelCoverage`]); nothing otherwise.
    fn kernels_chosen(&self, _loaded: &Self::Loaded) -> ChosenKernels {
        ChosenKernels::default()
    }
}

/// An engine that runs a whole exported network through a [`WholeModelRuntime`].
pub struct WholeModelEngine<R: WholeModelRuntime> {
    runtime: Arc<R>,
    info: EngineInfo,
    capabilities: Capabilities,
}

impl<R: WholeModelRuntime> WholeModelEngine<R> {
    /// The engine of this runtime; its info and capabilities are read once, here.
    pub fn new(runtime: R) -> Self {
        WholeModelEngine {
            info: runtime.info(),
            capabilities: runtime.capabilities(),
            runtime: Arc::new(runtime),
        }
    }

    /// The runtime, for what an engine says about itself beyond [`Engine`] (the library
    /// file it loaded).
    pub fn runtime(&self) -> &R {
        &self.runtime
    }
}

impl<R: WholeModelRuntime> Engine for WholeModelEngine<R> {
    fn info(&self) -> EngineInfo {
        self.info.clone()
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn lower(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        let weights = Weights::initial(graph, config.seed);
        let loaded = self.runtime.load(graph, &weights, config)?;
        let mut session = WholeModelSession {
            runtime: self.runtime.clone(),
            graph: graph.clone(),
            config: config.clone(),
            batches: InputBatches::new(graph, config),
            weights,
            loaded,
            host_input: None,
            input: None,
            output: None,
        };
        session.prepare_batch()?;
        Ok(Box::new(session))
    }
}

/// A session of a [`WholeModelEngine`]: inference, with weights, inputs and outputs
/// exchanged (importing weights loads the network again).
struct WholeModelSession<R: WholeModelRuntime> {
    runtime: Arc<R>,
    graph: Graph,
    config: SessionConfig,
    batches: InputBatches,
    weights: Weights,
    loaded: R::Loaded,
    /// The batch as given, to make the runtime's input again after a reload.
    host_input: Option<HostTensor>,
    input: Option<R::Input>,
    output: Option<R::Output>,
}

impl<R: WholeModelRuntime> WholeModelSession<R> {
    fn use_input(&mut self, input: HostTensor) -> Result<()> {
        self.batches.check_input(&input)?;
        self.input = Some(self.runtime.make_input(&mut self.loaded, &input)?);
        self.host_input = Some(input);
        Ok(())
    }
}

impl<R: WholeModelRuntime> Session for WholeModelSession<R> {
    fn prepare_batch(&mut self) -> Result<()> {
        let input = self.batches.next_input();
        self.use_input(input)
    }

    /// The input stays with the session after a pass: the next computes it again.
    fn prepare_same_batch(&mut self) -> Result<()> {
        match self.input {
            Some(_) => Ok(()),
            None => self.prepare_batch(),
        }
    }

    fn forward(&mut self) -> Result<()> {
        let input = self
            .input
            .as_ref()
            .ok_or_else(|| anyhow!("no input: prepare a batch first"))?;
        self.output = Some(self.runtime.run(&mut self.loaded, input)?);
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // A whole-model runtime's run returns when the output is computed.
        Ok(())
    }

    fn reported_settings(&self) -> BTreeMap<String, String> {
        self.runtime.reported_settings(&self.loaded)
    }

    fn kernels_chosen(&mut self) -> Result<ChosenKernels> {
        Ok(self.runtime.kernels_chosen(&self.loaded))
    }

    fn exchange(&mut self) -> Option<&mut dyn ExchangeWeights> {
        Some(self)
    }
}

impl<R: WholeModelRuntime> ExchangeWeights for WholeModelSession<R> {
    fn export_weights(&self) -> Result<Weights> {
        Ok(self.weights.clone())
    }

    fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        weights.check(&self.graph, true)?;
        self.loaded = self.runtime.load(&self.graph, weights, &self.config)?;
        self.weights = weights.clone();
        self.output = None;
        match self.host_input.take() {
            Some(input) => self.use_input(input),
            None => self.prepare_batch(),
        }
    }

    fn set_input(&mut self, input: &HostTensor) -> Result<()> {
        self.use_input(input.clone())
    }

    fn output(&self) -> Result<HostTensor> {
        let output = self
            .output
            .as_ref()
            .ok_or_else(|| anyhow!("no output: run a forward pass first"))?;
        self.runtime.read_output(output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mode, Precision};
    use cnnbench_graph::ops::Conv2d;
    use cnnbench_graph::GraphBuilder;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A runtime that doubles its input and counts its loads: the kit's bookkeeping is
    /// what is tested.
    struct Doubling {
        loads: Arc<AtomicUsize>,
    }

    impl WholeModelRuntime for Doubling {
        type Loaded = f32;
        type Input = HostTensor;
        type Output = HostTensor;

        fn info(&self) -> EngineInfo {
            EngineInfo::on_the_cpu("doubling", "test", "0", "cpu", 1, "a CPU".into())
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities::cpu_f32_inference(None)
        }
        fn load(&self, _: &Graph, weights: &Weights, _: &SessionConfig) -> Result<f32> {
            self.loads.fetch_add(1, Ordering::SeqCst);
            // The "network" multiplies by 2, plus the first weight's first value.
            Ok(2.0 + weights.get("conv.weight").map_or(0.0, |t| t.data[0]))
        }
        fn make_input(&self, _: &mut f32, input: &HostTensor) -> Result<HostTensor> {
            Ok(input.clone())
        }
        fn run(&self, factor: &mut f32, input: &HostTensor) -> Result<HostTensor> {
            let data = input.data.iter().map(|x| x * *factor).collect();
            Ok(HostTensor::new(input.shape.clone(), data)?)
        }
        fn read_output(&self, output: &HostTensor) -> Result<HostTensor> {
            Ok(output.clone())
        }
    }

    fn a_graph() -> Graph {
        let mut b = GraphBuilder::new("tiny", [1, 2, 2]);
        let x = b.input();
        let y = b.conv("conv", &x, Conv2d::new(1, 1).bias(false));
        b.finish(&y).unwrap()
    }

    fn config(mode: Mode) -> SessionConfig {
        SessionConfig {
            mode,
            batch_size: 1,
            seed: 0,
            precision: Precision::F32,
            deterministic: true,
            calibration: None,
        }
    }

    #[test]
    fn a_session_runs_the_input_it_was_given_and_reloads_on_import() {
        let loads = Arc::new(AtomicUsize::new(0));
        let engine = WholeModelEngine::new(Doubling {
            loads: loads.clone(),
        });
        let graph = a_graph();
        let mut session = engine.prepare(&graph, &config(Mode::Infer)).unwrap();
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert!(session.output().is_err(), "no output before a pass");
        let input = HostTensor::new(vec![1, 1, 2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
        session.set_input(&input).unwrap();
        session.forward().unwrap();
        let factor = session.output().unwrap().data[0];
        let mut weights = session.export_weights().unwrap();
        let ones = HostTensor::new(vec![1, 1, 1, 1], vec![1.0]).unwrap();
        weights.insert("conv.weight", ones);
        session.import_weights(&weights).unwrap();
        assert_eq!(
            loads.load(Ordering::SeqCst),
            2,
            "an import loads the network again"
        );
        assert!(session.output().is_err(), "the old output is gone");
        session.forward().unwrap();
        // The input given before the import is still the one run.
        assert_eq!(session.output().unwrap().data, vec![3.0, 6.0, 9.0, 12.0]);
        assert_ne!(factor, 3.0);
        let wrong = HostTensor::new(vec![1, 1, 3, 3], vec![0.0; 9]).unwrap();
        assert!(session.set_input(&wrong).is_err());
    }

    #[test]
    fn the_engine_admits_only_what_its_capabilities_allow() {
        let engine = WholeModelEngine::new(Doubling {
            loads: Arc::new(AtomicUsize::new(0)),
        });
        let refused = engine.prepare(&a_graph(), &config(Mode::Train));
        let why = format!("{:#}", refused.err().expect("training refused"));
        assert!(why.contains("doubling cannot run train mode"), "{why}");
        assert_eq!(
            engine.runtime().loads.load(Ordering::SeqCst),
            0,
            "nothing loaded"
        );
    }
}
