//! The engine and its session: the Graph exported to ONNX bytes, loaded by tract-onnx
//! with the batch fixed, optimised and planned; inputs and outputs as host tensors.

use crate::{capabilities, ENGINE_NAME, TRACT_VERSION};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::whole_model::{WholeModelEngine, WholeModelRuntime};
use cnnbench_engine::{Capabilities, EngineInfo, SessionConfig};
use cnnbench_graph::{Graph, HostTensor, Weights};
use cnnbench_import::onnx::export::{to_onnx, EXPORT_OPSET};
use std::collections::BTreeMap;
use std::sync::Arc;
use tract_linalg::multithread::{multithread_tract_scope, Executor};
use tract_onnx::prelude::*;

/// tract on the CPU with its own thread pool for matrix products.
pub type TractEngine = WholeModelEngine<TractRuntime>;

/// The engine with tract's matrix-product pool of `threads` (`None`: all cores).
pub fn engine(threads: Option<usize>) -> Result<TractEngine> {
    let threads = cnnbench_engine::own_thread_pool_size(threads)?;
    let executor = if threads == 1 {
        Executor::SingleThread
    } else {
        Executor::multithread(threads)
    };
    Ok(WholeModelEngine::new(TractRuntime { threads, executor }))
}

/// tract's calls, with the pool every session runs on.
pub struct TractRuntime {
    threads: usize,
    executor: Executor,
}

type Plan = Arc<TypedRunnableModel>;

impl WholeModelRuntime for TractRuntime {
    type Loaded = Plan;
    type Input = TValue;
    type Output = TValue;

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
        capabilities()
    }

    /// The graph with these weights as tract's optimised plan for the batch.
    fn load(&self, graph: &Graph, weights: &Weights, config: &SessionConfig) -> Result<Plan> {
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
            .with_input_fact(0, f32::fact([config.batch_size, c, h, w]).into())
            .map_err(tract_error("cannot fix the input shape of"))?
            .into_optimized()
            .map_err(tract_error("cannot optimise"))?
            .into_runnable()
            .map_err(tract_error("cannot plan"))
    }

    fn make_input(&self, _: &mut Plan, input: &HostTensor) -> Result<TValue> {
        let tensor = Tensor::from_shape(&input.shape, &input.data)
            .map_err(|e| anyhow!("{ENGINE_NAME}: cannot make the input tensor: {e:#}"))?;
        Ok(tensor.into_tvalue())
    }

    /// One run of the plan on tract's pool; the output stays tract's until read.
    fn run(&self, plan: &mut Plan, input: &TValue) -> Result<TValue> {
        let input = input.clone();
        let mut outputs = multithread_tract_scope(self.executor.clone(), || plan.run(tvec!(input)))
            .map_err(|e| anyhow!("{ENGINE_NAME}: forward: {e:#}"))?;
        Ok(outputs.remove(0))
    }

    fn read_output(&self, output: &TValue) -> Result<HostTensor> {
        let view = output
            .to_plain_array_view::<f32>()
            .map_err(|e| anyhow!("{ENGINE_NAME}: the output is not f32: {e:#}"))?;
        Ok(HostTensor::new(
            view.shape().to_vec(),
            view.iter().copied().collect(),
        )?)
    }
}
