//! The engine and its session: ONNX Runtime loaded once per process, the Graph exported
//! to ONNX bytes and committed as an inference session on the CPU execution provider;
//! inputs and outputs as host tensors.

use crate::library;
use crate::{
    capabilities, cpu_has_vnni, GraphOptimization, Int8Products, OrtSettings, ENGINE_NAME,
    ORT_CRATE_VERSION,
};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::coverage::KernelCoverage;
use cnnbench_engine::settings::EngineSettingsRecord;
use cnnbench_engine::whole_model::{WholeModelEngine, WholeModelRuntime};
use cnnbench_engine::{Capabilities, ChosenKernels, EngineInfo, Precision, SessionConfig};
use cnnbench_graph::{Graph, HostTensor, Weights};
use cnnbench_import::onnx::export::{to_onnx_as, EXPORT_OPSET};
use cnnbench_import::onnx::{DATA_INT8, DATA_UINT8};
use ort::environment::Environment;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use prost::Message;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The `ort` crate's name for a graph optimisation level.
fn optimization_level(level: GraphOptimization) -> GraphOptimizationLevel {
    match level {
        GraphOptimization::All => GraphOptimizationLevel::All,
        GraphOptimization::Extended => GraphOptimizationLevel::Level2,
        GraphOptimization::Basic => GraphOptimizationLevel::Level1,
        GraphOptimization::Disabled => GraphOptimizationLevel::Disable,
    }
}
const EXECUTION_PROVIDER: &str = "CPUExecutionProvider";

/// ONNX Runtime as loaded into this process: the library can be loaded once only, so
/// every engine shares it (and its environment).
struct LoadedLibrary {
    environment: Environment,
    library: PathBuf,
    version: String,
}

static RUNTIME: Mutex<Option<Arc<LoadedLibrary>>> = Mutex::new(None);

/// Loads ONNX Runtime (once; a failed attempt is not remembered, so a fixed set-up
/// works without restarting).
fn runtime() -> Result<Arc<LoadedLibrary>> {
    let mut loaded = RUNTIME
        .lock()
        .map_err(|_| anyhow!("{ENGINE_NAME}: an earlier attempt to load ONNX Runtime panicked"))?;
    if let Some(runtime) = loaded.as_ref() {
        return Ok(runtime.clone());
    }
    let path = library::find(&library::search_places())
        .map_err(|why| anyhow!("{ENGINE_NAME} cannot run: {why}"))?;
    let version = onnxruntime_version(&path)?;
    let environment = ort::init_from(&path)
        .map_err(|e| {
            anyhow!(
                "{ENGINE_NAME}: cannot load ONNX Runtime from {}: {e}; {}",
                path.display(),
                library::install_hint()
            )
        })?
        .with_name("cnnbench")
        .build()
        .map_err(|e| anyhow!("{ENGINE_NAME}: cannot start ONNX Runtime {version}: {e}"))?;
    let runtime = Arc::new(LoadedLibrary {
        environment,
        library: path,
        version,
    });
    *loaded = Some(runtime.clone());
    Ok(runtime)
}

/// ONNX Runtime's own version string (`OrtGetApiBase()->GetVersionString()`, e.g.
/// `1.32.0`) of the library at `path`, read before `ort` takes it so that a refused
/// version can be named.
pub fn onnxruntime_version(path: &Path) -> Result<String> {
    let cannot = |what: &str| {
        format!(
            "{ENGINE_NAME}: {} {what}; {}",
            path.display(),
            library::install_hint()
        )
    };
    // SAFETY: loading ONNX Runtime runs only its static initialisers; OrtGetApiBase takes
    // no arguments and returns a pointer to a static table whose GetVersionString returns
    // a static NUL-terminated string. The library stays loaded for the process (ort loads
    // the same file next), so the string outlives this call; it is copied anyway.
    unsafe {
        let lib = libloading::Library::new(path)
            .with_context(|| cannot("cannot be loaded as a shared library"))?;
        let get_api_base: libloading::Symbol<
            unsafe extern "C" fn() -> *const ort::sys::OrtApiBase,
        > = lib
            .get(b"OrtGetApiBase")
            .with_context(|| cannot("is not ONNX Runtime (no OrtGetApiBase)"))?;
        let base = get_api_base();
        if base.is_null() {
            return Err(anyhow!(cannot("returned no API base")));
        }
        let version = ((*base).GetVersionString)();
        if version.is_null() {
            return Err(anyhow!(cannot("returned no version string")));
        }
        let version = std::ffi::CStr::from_ptr(version)
            .to_string_lossy()
            .into_owned();
        // Keep it loaded: ort opens the same file next, and unloading ONNX Runtime
        // while its thread pools may exist is not safe.
        std::mem::forget(lib);
        Ok(version)
    }
}

/// ONNX Runtime on the CPU: intra-op pool of `threads`, inter-op parallelism off.
pub type OrtEngine = WholeModelEngine<OrtRuntime>;

/// The engine with ONNX Runtime's intra-op pool of `threads` (`None`: all cores) and its
/// own settings. Loads ONNX Runtime (see [`crate::library`]) or says how to install it.
pub fn engine(threads: Option<usize>, settings: OrtSettings) -> Result<OrtEngine> {
    Ok(WholeModelEngine::new(OrtRuntime {
        library: runtime()?,
        threads: cnnbench_engine::own_thread_pool_size(threads)?,
        graph_optimization: settings.graph_optimization,
        int8_products: settings.int8_products,
        vnni: cpu_has_vnni(),
    }))
}

/// ONNX Runtime's calls, with what every session is loaded with.
pub struct OrtRuntime {
    library: Arc<LoadedLibrary>,
    threads: usize,
    graph_optimization: GraphOptimization,
    int8_products: Int8Products,
    /// Whether this CPU has VNNI (see [`cpu_has_vnni`]).
    vnni: bool,
}

/// ONNX Runtime's session entry for its exact u8 × u8 int8 kernels on x86
/// (`kOrtSessionOptionsAvx2PrecisionMode`): it rewrites each int8 weight to u8 at graph
/// optimisation level 2 and above.
const EXACT_INT8_ENTRY: &str = "session.x64quantprecision";

impl OrtRuntime {
    /// What the record says of int8's products.
    fn int8_products_record(&self) -> String {
        let cpu = if self.vnni {
            "this CPU has VNNI: 32-bit sums"
        } else {
            "this CPU has no VNNI: the fast kernels' 16-bit pair sums saturate"
        };
        let kernels = if self.int8_products.exact_kernels(self.vnni) {
            format!("exact: u8 x u8 kernels ({EXACT_INT8_ENTRY}=1)")
        } else {
            "fast: u8 x s8 kernels".to_string()
        };
        format!("{} → {kernels}; {cpu}", self.int8_products.as_str())
    }

    /// The library file this process loaded.
    pub fn library(&self) -> &Path {
        &self.library.library
    }
}

/// A loaded network: the session, and for int8 what ONNX Runtime made of it.
pub struct OrtLoaded {
    session: ort::session::Session,
    kernels: ChosenKernels,
}

impl OrtRuntime {
    /// A session of the ONNX bytes with the engine's options; `optimized_to`: where ONNX
    /// Runtime writes the graph it optimised.
    fn session(&self, bytes: &[u8], optimized_to: Option<&Path>) -> Result<ort::session::Session> {
        let options = |e: ort::Error<_>| anyhow!("{ENGINE_NAME}: session options refused: {e}");
        let mut builder = ort::session::Session::builder(&self.library.environment)
            .map_err(|e| anyhow!("{ENGINE_NAME}: cannot make a session builder: {e}"))?
            .with_optimization_level(optimization_level(self.graph_optimization))
            .map_err(options)?
            .with_intra_threads(self.threads)
            .map_err(options)?
            .with_inter_threads(1)
            .map_err(options)?;
        if self.int8_products.exact_kernels(self.vnni) {
            builder = builder
                .with_config_entry(EXACT_INT8_ENTRY, "1")
                .map_err(options)?;
        }
        if let Some(path) = optimized_to {
            builder = builder.with_optimized_model_path(path).map_err(options)?;
        }
        builder.commit_from_memory(bytes).map_err(|e| {
            anyhow!(
                "{ENGINE_NAME}: ONNX Runtime {} cannot load the network: {e}",
                self.library.version
            )
        })
    }

    /// What ONNX Runtime runs of an int8 network: a second session, untimed, writes its
    /// optimised graph, whose kernels say which convolutions and matrix products run in
    /// int8 (`QLinearConv`, `QGemm`, …) and which in f32 (`Conv`, `FusedConv`, …).
    fn int8_kernels(&self, graph: &Graph, bytes: &[u8]) -> Result<ChosenKernels> {
        let folder =
            tempfile::tempdir().context("a temporary folder for ONNX Runtime's optimised graph")?;
        let path = folder.path().join("optimized.onnx");
        drop(self.session(bytes, Some(&path))?);
        let written = std::fs::read(&path).with_context(|| {
            format!("reading ONNX Runtime's optimised graph {}", path.display())
        })?;
        let model = cnnbench_import::onnx::ModelProto::decode(written.as_slice())
            .context("ONNX Runtime's optimised graph does not decode")?;
        let mut coverage = KernelCoverage::new(Precision::Int8);
        // The weight type of each QLinearConv (its fourth input): ONNX Runtime's exact
        // products rewrite the int8 weights to uint8.
        let mut weight_types = std::collections::BTreeSet::new();
        for node in model.graph.iter().flat_map(|g| &g.node) {
            if node.op_type == "QLinearConv" {
                let weight = node.input.get(3).and_then(|name| {
                    model
                        .graph
                        .iter()
                        .flat_map(|g| &g.initializer)
                        .find(|t| &t.name == name)
                });
                weight_types.insert(match weight.map(|t| t.data_type) {
                    Some(DATA_UINT8) => "u8 (exact products)",
                    Some(DATA_INT8) => "s8",
                    Some(_) | None => "not read",
                });
            }
            let int8 = match node.op_type.as_str() {
                "QLinearConv"
                | "ConvInteger"
                | "QLinearMatMul"
                | "MatMulInteger"
                | "QGemm"
                | "MatMulIntegerToFloat"
                | "DynamicQuantizeMatMul" => true,
                "Conv" | "FusedConv" | "Gemm" | "FusedGemm" | "MatMul" | "FusedMatMul"
                | "ConvTranspose" => false,
                _ => continue,
            };
            coverage.add(graph, &node.op_type, &node.name, int8);
        }
        let mut chosen = coverage.chosen_kernels("ONNX Runtime");
        if !weight_types.is_empty() {
            let types: Vec<&str> = weight_types.into_iter().collect();
            chosen
                .settings
                .insert("int8_conv_weights".to_string(), types.join(", "));
        }
        Ok(chosen)
    }
}

impl WholeModelRuntime for OrtRuntime {
    type Loaded = OrtLoaded;
    type Input = Tensor<f32>;
    type Output = HostTensor;

    fn info(&self) -> EngineInfo {
        let mut libraries = BTreeMap::new();
        libraries.insert("onnxruntime".to_string(), self.library.version.clone());
        libraries.insert("ort".to_string(), ORT_CRATE_VERSION.to_string());
        let mut settings = BTreeMap::new();
        settings.insert(
            "execution_provider".to_string(),
            EXECUTION_PROVIDER.to_string(),
        );
        let level = self.graph_optimization;
        settings.insert(
            "graph_optimization_level".to_string(),
            format!("{} ({})", level.as_str(), level.onnxruntime_name()),
        );
        settings.insert("int8_products".to_string(), self.int8_products_record());
        settings.insert("intra_op_threads".to_string(), self.threads.to_string());
        settings.insert("inter_op_threads".to_string(), "1".to_string());
        settings.insert("execution_mode".to_string(), "sequential".to_string());
        settings.insert(
            "intra_op_spinning".to_string(),
            "on (ONNX Runtime's default)".to_string(),
        );
        settings.insert(
            "model".to_string(),
            format!("cnnbench ONNX export, opset {EXPORT_OPSET}"),
        );
        EngineInfo {
            libraries,
            settings,
            variant: OrtSettings {
                graph_optimization: level,
                int8_products: self.int8_products,
            }
            .label(),
            ..EngineInfo::on_the_cpu(
                ENGINE_NAME,
                "onnxruntime",
                &self.library.version,
                "cpu",
                self.threads,
                cnnbench_host::cpu_name(),
            )
        }
    }

    fn capabilities(&self) -> Capabilities {
        capabilities()
    }

    /// The graph with these weights as an ONNX Runtime session on the CPU provider.
    fn load(&self, graph: &Graph, weights: &Weights, config: &SessionConfig) -> Result<OrtLoaded> {
        let int8_ranges = cnnbench_engine::int8::ranges_of(config, ENGINE_NAME)?;
        let bytes = to_onnx_as(graph, weights, int8_ranges)
            .with_context(|| format!("{ENGINE_NAME}: cannot export {} to ONNX", graph.name()))?;
        let session = self
            .session(&bytes, None)
            .with_context(|| format!("loading the ONNX export of {}", graph.name()))?;
        // An int8 network: what ONNX Runtime made of it.
        let kernels = match int8_ranges {
            Some(_) => self
                .int8_kernels(graph, &bytes)
                .unwrap_or_else(|e| ChosenKernels {
                    warnings: vec![format!("{ENGINE_NAME}: what ran in int8 is unknown: {e:#}")],
                    ..ChosenKernels::default()
                }),
            None => ChosenKernels::default(),
        };
        Ok(OrtLoaded { session, kernels })
    }

    fn make_input(&self, _: &mut OrtLoaded, input: &HostTensor) -> Result<Tensor<f32>> {
        let shape: Vec<i64> = input.shape.iter().map(|&d| d as i64).collect();
        Tensor::from_array((shape, input.data.clone()))
            .map_err(|e| anyhow!("{ENGINE_NAME}: cannot make the input tensor: {e}"))
    }

    /// One `Session::run`, and the output copied out of ONNX Runtime's buffer (as
    /// `InferenceSession.run` copies it into a NumPy array).
    fn run(&self, loaded: &mut OrtLoaded, input: &Tensor<f32>) -> Result<HostTensor> {
        let outputs = loaded
            .session
            .run(ort::inputs![input])
            .map_err(|e| anyhow!("{ENGINE_NAME}: forward: {e}"))?;
        let (shape, data) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| anyhow!("{ENGINE_NAME}: the output is not an f32 tensor: {e}"))?;
        let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
        Ok(HostTensor::new(shape, data.to_vec())?)
    }

    fn read_output(&self, output: &HostTensor) -> Result<HostTensor> {
        Ok(output.clone())
    }

    fn kernels_chosen(&self, loaded: &OrtLoaded) -> ChosenKernels {
        loaded.kernels.clone()
    }
}
