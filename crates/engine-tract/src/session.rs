//! The engine and its session: the Graph exported to ONNX bytes, loaded by tract-onnx
//! with the batch fixed, optimised and planned; inputs and outputs as host tensors.

use crate::{capabilities, ENGINE_NAME, TRACT_VERSION};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::kit::InputBatches;
use cnnbench_engine::{Capabilities, Engine, EngineInfo, Mode, Session, SessionConfig};
use cnnbench_graph::{Graph, HostTensor, Weights};
use cnnbench_import::onnx::export::{to_onnx, EXPORT_OPSET};
use std::collections::BTreeMap;
use std::sync::Arc;
use tract_linalg::multithread::{multithread_tract_scope, Executor};
use tract_onnx::prelude::*;

/// tract on the CPU with its own thread pool for matrix products.
pub struct TractEngine {
    threads: usize,
    executor: Executor,
    capabilities: Capabilities,
}

impl TractEngine {
    /// `threads`: the size of tract's matrix-product pool (`None`: all cores).
    pub fn new(threads: Option<usize>) -> Result<Self> {
        let threads = cnnbench_engine::own_thread_pool_size(threads)?;
        let executor = if threads == 1 {
            Executor::SingleThread
        } else {
            Executor::multithread(threads)
        };
        Ok(Self {
            threads,
            executor,
            capabilities: capabilities(),
        })
    }
}

impl Engine for TractEngine {
    fn info(&self) -> EngineInfo {
        let mut libraries = BTreeMap::new();
        libraries.insert("tract-onnx".to_string(), TRACT_VERSION.to_string());
        let mut settings = BTreeMap::new();
        settings.insert("optimisation".to_string(), "into_optimized".to_string());
        settings.insert(
            "model".to_string(),
            format!("cnnbench ONNX export, opset {EXPORT_OPSET}"),
        );
        EngineInfo {
            libraries,
            settings,
            ..EngineInfo::on_the_cpu(
                ENGINE_NAME,
                "tract",
                TRACT_VERSION,
                "cpu",
                self.threads,
                cnnbench_host::cpu_name(),
            )
        }
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn prepare(&self, graph: &Graph, config: &SessionConfig) -> Result<Box<dyn Session>> {
        self.capabilities.admit(ENGINE_NAME, graph, config)?;
        debug_assert_eq!(config.mode, Mode::Infer);
        let weights = Weights::initial(graph, config.seed);
        let plan = plan(graph, &weights, config.batch_size)?;
        let mut session = TractSession {
            graph: graph.clone(),
            batches: InputBatches::new(graph, config),
            weights,
            plan,
            executor: self.executor.clone(),
            input: None,
            output: None,
        };
        session.prepare_batch()?;
        Ok(Box::new(session))
    }
}

type Plan = Arc<TypedRunnableModel>;

/// The graph with these weights as tract's optimised plan for `batch` images.
fn plan(graph: &Graph, weights: &Weights, batch: usize) -> Result<Plan> {
    let bytes = to_onnx(graph, weights)
        .with_context(|| format!("{ENGINE_NAME}: cannot export {} to ONNX", graph.name()))?;
    let [c, h, w] = graph.input_shape();
    let tract_error = |what: &str| {
        let what = what.to_string();
        move |e: TractError| anyhow!("{ENGINE_NAME}: {what} {}: {e:#}", graph.name())
    };
    onnx()
        .model_for_read(&mut bytes.as_slice())
        .map_err(tract_error("cannot load the ONNX export of"))?
        .with_input_fact(0, f32::fact([batch, c, h, w]).into())
        .map_err(tract_error("cannot fix the input shape of"))?
        .into_optimized()
        .map_err(tract_error("cannot optimise"))?
        .into_runnable()
        .map_err(tract_error("cannot plan"))
}

struct TractSession {
    graph: Graph,
    batches: InputBatches,
    weights: Weights,
    plan: Plan,
    executor: Executor,
    input: Option<TValue>,
    output: Option<TValue>,
}

impl TractSession {
    fn use_input(&mut self, input: &HostTensor) -> Result<()> {
        self.batches.check_input(input)?;
        let tensor = Tensor::from_shape(&input.shape, &input.data)
            .map_err(|e| anyhow!("{ENGINE_NAME}: cannot make the input tensor: {e:#}"))?;
        self.input = Some(tensor.into_tvalue());
        Ok(())
    }
}

impl Session for TractSession {
    fn prepare_batch(&mut self) -> Result<()> {
        let input = self.batches.next_input();
        self.use_input(&input)
    }

    fn forward(&mut self) -> Result<()> {
        let input = self
            .input
            .clone()
            .ok_or_else(|| anyhow!("no input: prepare a batch first"))?;
        let plan = &self.plan;
        let mut outputs = multithread_tract_scope(self.executor.clone(), || plan.run(tvec!(input)))
            .map_err(|e| anyhow!("{ENGINE_NAME}: forward: {e:#}"))?;
        self.output = Some(outputs.remove(0));
        Ok(())
    }

    fn sync(&mut self) -> Result<()> {
        // tract runs synchronously on the calling thread (and its pool).
        Ok(())
    }

    fn export_weights(&self) -> Result<Weights> {
        Ok(self.weights.clone())
    }

    fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        weights.check(&self.graph, true)?;
        self.plan = plan(&self.graph, weights, self.batches.batch_size())?;
        self.weights = weights.clone();
        Ok(())
    }

    fn set_input(&mut self, input: &HostTensor) -> Result<()> {
        self.use_input(input)
    }

    fn output(&self) -> Result<HostTensor> {
        let out = self
            .output
            .as_ref()
            .ok_or_else(|| anyhow!("no output: run a forward pass first"))?;
        let view = out
            .to_plain_array_view::<f32>()
            .map_err(|e| anyhow!("{ENGINE_NAME}: the output is not f32: {e:#}"))?;
        Ok(HostTensor::new(
            view.shape().to_vec(),
            view.iter().copied().collect(),
        )?)
    }
}
