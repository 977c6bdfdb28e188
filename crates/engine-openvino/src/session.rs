//! The engine and its session: OpenVINO loaded once per process, the Graph exported to
//! ONNX bytes, read by OpenVINO's ONNX front end, its batch fixed, compiled for the CPU
//! with the run's hints; inputs and outputs as host tensors.

use crate::{
    capabilities, library, profiling, OpenVinoSettings, PerformanceHint, ENGINE_NAME,
    OPENVINO_CRATE_VERSION,
};
use anyhow::{anyhow, Context, Result};
use cnnbench_engine::settings::EngineSettingsRecord;
use cnnbench_engine::whole_model::{WholeModelEngine, WholeModelRuntime};
use cnnbench_engine::{Capabilities, ChosenKernels, EngineInfo, Precision, SessionConfig};
use cnnbench_graph::{Graph, HostTensor, Weights};
use cnnbench_import::onnx::export::{to_onnx_as, EXPORT_OPSET};
use openvino::{
    CompiledModel, Core, DeviceType, ElementType, InferRequest, PartialShape, PropertyKey,
    RwPropertyKey, Shape,
};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How long one infer request may take before a pass gives up on it (OpenVINO's wait
/// takes milliseconds; a day is far beyond any pass and far from overflowing).
const WAIT_MS: i64 = 86_400_000;

/// OpenVINO as loaded into this process: the library can be loaded once only, so every
/// engine shares it. Each compilation takes a `Core` of its own, because a core's CPU
/// properties persist: a stream count set for one session would stay for the next.
struct LoadedLibrary {
    library: PathBuf,
    /// The library's build number, e.g. `2026.4.1-20451-…`.
    build: String,
    /// The CPU as OpenVINO names it (`FULL_DEVICE_NAME`).
    device_name: String,
    /// What the CPU plugin says the CPU computes in (`OPTIMIZATION_CAPABILITIES`:
    /// `FP32 BF16 FP16 INT8 …`).
    optimization_capabilities: Vec<String>,
}

static RUNTIME: Mutex<Option<Arc<LoadedLibrary>>> = Mutex::new(None);

/// Loads OpenVINO (once; a failed attempt is not remembered, so a fixed set-up works
/// without restarting).
fn runtime() -> Result<Arc<LoadedLibrary>> {
    let mut loaded = RUNTIME
        .lock()
        .map_err(|_| anyhow!("{ENGINE_NAME}: an earlier attempt to load OpenVINO panicked"))?;
    if let Some(runtime) = loaded.as_ref() {
        return Ok(runtime.clone());
    }
    let path = library::find(&library::search_places())
        .map_err(|why| anyhow!("{ENGINE_NAME} cannot run: {why}"))?;
    openvino_sys::library::load_from(&path).map_err(|why| {
        anyhow!(
            "{ENGINE_NAME}: cannot load OpenVINO from {}: {why}; {}",
            path.display(),
            library::install_hint()
        )
    })?;
    let core = Core::new().map_err(|e| anyhow!("{ENGINE_NAME}: cannot start OpenVINO: {e}"))?;
    let build = openvino::version().build_number;
    let cpu_property = |key: PropertyKey| {
        core.get_property(&DeviceType::CPU, &key).map_err(|e| {
            anyhow!(
                "{ENGINE_NAME}: OpenVINO {build} has no CPU plugin that answers ({e}); the wheel's openvino/libs/ must hold libopenvino_intel_cpu_plugin.so beside {}",
                path.display()
            )
        })
    };
    let device_name = cpu_property(PropertyKey::DeviceFullName)?;
    let optimization_capabilities = cpu_property(PropertyKey::DeviceCapabilities)?
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let runtime = Arc::new(LoadedLibrary {
        library: path,
        build,
        device_name,
        optimization_capabilities,
    });
    *loaded = Some(runtime.clone());
    Ok(runtime)
}

/// OpenVINO's name of a precision, as its hint takes it and its compiled model reports
/// it, and the CPU capability that must be present to honour it; `None` for automatic
/// mixed precision, which is PyTorch's autocast and has no OpenVINO counterpart.
fn openvino_precision(precision: Precision) -> Option<(&'static str, &'static str)> {
    match precision {
        Precision::F32 => Some(("f32", "FP32")),
        Precision::Bf16 => Some(("bf16", "BF16")),
        Precision::F16 => Some(("f16", "FP16")),
        // The QDQ network's int8 layers run int8 whatever the hint; the hint keeps the
        // layers OpenVINO leaves unquantised in f32.
        Precision::Int8 => Some(("f32", "INT8")),
        Precision::Tf32 | Precision::AmpBf16 | Precision::AmpF16 => None,
    }
}

/// Why OpenVINO has no hint for automatic mixed precision.
const NO_AMP: &str = "automatic mixed precision is PyTorch's autocast; OpenVINO's own choice of low-precision kernels is its inference precision hint, --precision bf16 or f16";

/// The refusal of a precision OpenVINO has no hint for.
fn no_hint_for(precision: Precision) -> anyhow::Error {
    anyhow!("{ENGINE_NAME} has no {}: {NO_AMP}", precision.as_str())
}

/// OpenVINO's CPU plugin: `threads` inference threads, the engine's own settings (its
/// performance hint, its streams).
pub type OpenVinoEngine = WholeModelEngine<OpenVinoRuntime>;

/// The engine with `threads` as OpenVINO's `INFERENCE_NUM_THREADS` (`None`: all cores)
/// and its own settings. Loads OpenVINO (see [`crate::library`]) or says how to install
/// it.
pub fn engine(threads: Option<usize>, settings: OpenVinoSettings) -> Result<OpenVinoEngine> {
    engine_side_by_side(threads, settings, 1)
}

/// The engine, for `sessions` sessions that compute side by side (`run --in-flight`):
/// with more than one, OpenVINO's pinning of threads to cores is turned off, as it pins
/// every separately compiled model's threads to the same first cores (two sessions of
/// one thread each on a 2-core Xeon: 289 inferences/s pinned, 592 unpinned, ResNet-18
/// at 64×64).
pub fn engine_side_by_side(
    threads: Option<usize>,
    settings: OpenVinoSettings,
    sessions: usize,
) -> Result<OpenVinoEngine> {
    let library = runtime()?;
    let mut capabilities = capabilities();
    for precision in [Precision::AmpBf16, Precision::AmpF16] {
        capabilities = capabilities.refusing(precision, NO_AMP);
    }
    let reported = library.optimization_capabilities.join(" ");
    for (precision, needs) in [
        Precision::F32,
        Precision::Bf16,
        Precision::F16,
        Precision::Int8,
    ]
    .into_iter()
    .filter_map(|p| openvino_precision(p).map(|(_, needs)| (p, needs)))
    {
        if !library.optimization_capabilities.iter().any(|c| c == needs) {
            capabilities.precisions.retain(|&p| p != precision);
            capabilities = capabilities.refusing(
                precision,
                format!("OpenVINO's CPU plugin reports {reported} here (no {needs}), and it would run another precision instead"),
            );
        }
    }
    Ok(WholeModelEngine::new(OpenVinoRuntime {
        library,
        threads: cnnbench_engine::own_thread_pool_size(threads)?,
        settings,
        capabilities,
        pin_threads: sessions <= 1,
    }))
}

/// OpenVINO's calls, with what every compilation is given.
pub struct OpenVinoRuntime {
    library: Arc<LoadedLibrary>,
    threads: usize,
    settings: OpenVinoSettings,
    /// The precisions this CPU's plugin computes in.
    capabilities: Capabilities,
    /// OpenVINO's default pinning of threads to cores; off for sessions side by side.
    pin_threads: bool,
}

impl OpenVinoRuntime {
    /// The library file this process loaded.
    pub fn library(&self) -> &std::path::Path {
        &self.library.library
    }
}

impl WholeModelRuntime for OpenVinoRuntime {
    type Loaded = Compiled;
    /// The batch is written into the infer requests' own input tensors.
    type Input = ();
    type Output = HostTensor;

    fn info(&self) -> EngineInfo {
        let mut libraries = BTreeMap::new();
        libraries.insert("openvino".to_string(), self.library.build.clone());
        libraries.insert(
            "openvino-crate".to_string(),
            OPENVINO_CRATE_VERSION.to_string(),
        );
        let mut settings = BTreeMap::new();
        settings.insert("device".to_string(), "CPU".to_string());
        settings.insert(
            "performance_hint".to_string(),
            self.settings.hint.as_str().to_string(),
        );
        if let Some(streams) = self.settings.streams {
            settings.insert("num_streams_asked".to_string(), streams.to_string());
        }
        settings.insert(
            "inference_num_threads".to_string(),
            self.threads.to_string(),
        );
        settings.insert(
            "optimization_capabilities".to_string(),
            self.library.optimization_capabilities.join(" "),
        );
        settings.insert(
            "model".to_string(),
            format!("cnnbench ONNX export, opset {EXPORT_OPSET}, batch fixed before compiling"),
        );
        EngineInfo {
            libraries,
            settings,
            variant: self.settings.label(),
            ..EngineInfo::on_the_cpu(
                ENGINE_NAME,
                "openvino",
                self.library.build.split('-').next().unwrap_or_default(),
                "cpu",
                self.threads,
                self.library.device_name.clone(),
            )
        }
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities.clone()
    }

    fn load(&self, graph: &Graph, weights: &Weights, config: &SessionConfig) -> Result<Compiled> {
        let setup = Setup {
            threads: self.threads,
            hint: self.settings.hint,
            streams: self.settings.streams,
            precision: config.precision,
            batch_size: config.batch_size,
            pin_threads: self.pin_threads,
        };
        let int8_ranges = cnnbench_engine::int8::ranges_of(config, ENGINE_NAME)?;
        let bytes = to_onnx_as(graph, weights, int8_ranges)
            .with_context(|| format!("{ENGINE_NAME}: cannot export {} to ONNX", graph.name()))?;
        let mut compiled = compile(&self.library, &setup, graph, &bytes)?;
        compiled.kernels = kernels_ran(graph, &bytes, &compiled, config.precision)?;
        Ok(compiled)
    }

    /// Copies the batch into the requests' input tensors, a share each.
    fn make_input(&self, compiled: &mut Compiled, input: &HostTensor) -> Result<()> {
        let [_, c, h, w] = <[usize; 4]>::try_from(input.shape.as_slice())
            .map_err(|_| anyhow!("{ENGINE_NAME}: the input is not a batch of images"))?;
        let share = compiled.per_request;
        let dims = [share as i64, c as i64, h as i64, w as i64];
        let shape =
            Shape::new(&dims).map_err(|e| anyhow!("{ENGINE_NAME}: cannot make a shape: {e}"))?;
        let image = c * h * w;
        for (request, images) in compiled
            .requests
            .iter_mut()
            .zip(input.data.chunks(share * image))
        {
            let mut tensor = openvino::Tensor::new(ElementType::F32, &shape)
                .map_err(|e| anyhow!("{ENGINE_NAME}: cannot make the input tensor: {e}"))?;
            tensor
                .get_data_mut::<f32>()
                .map_err(|e| anyhow!("{ENGINE_NAME}: cannot write the input tensor: {e}"))?
                .copy_from_slice(images);
            request
                .set_input_tensor(&tensor)
                .map_err(|e| anyhow!("{ENGINE_NAME}: cannot set the input: {e}"))?;
        }
        Ok(())
    }

    /// One `infer` (latency), or every request started and then waited for
    /// (throughput); the output copied out of OpenVINO's tensors, as its Python API's
    /// `infer` copies them into NumPy arrays.
    fn run(&self, compiled: &mut Compiled, _: &()) -> Result<HostTensor> {
        let failed = |e: openvino::InferenceError| anyhow!("{ENGINE_NAME}: forward: {e}");
        match compiled.requests.as_mut_slice() {
            [one] => one.infer().map_err(failed)?,
            many => {
                for request in many.iter_mut() {
                    request.infer_async().map_err(failed)?;
                }
                for request in many.iter_mut() {
                    request.wait(WAIT_MS).map_err(failed)?;
                }
            }
        }
        let mut data = Vec::new();
        let mut shape = Vec::new();
        for request in &compiled.requests {
            let tensor = request.get_output_tensor().map_err(failed)?;
            let dims = tensor.get_shape().map_err(failed)?;
            shape = dims.get_dimensions().iter().map(|&d| d as usize).collect();
            data.extend_from_slice(
                tensor
                    .get_data::<f32>()
                    .map_err(|e| anyhow!("{ENGINE_NAME}: the output is not an f32 tensor: {e}"))?,
            );
        }
        if let Some(batch) = shape.first_mut() {
            *batch = compiled.per_request * compiled.requests.len();
        }
        Ok(HostTensor::new(shape, data)?)
    }

    fn read_output(&self, output: &HostTensor) -> Result<HostTensor> {
        Ok(output.clone())
    }

    fn reported_settings(&self, compiled: &Compiled) -> BTreeMap<String, String> {
        compiled.reported.clone()
    }

    fn kernels_chosen(&self, compiled: &Compiled) -> ChosenKernels {
        compiled.kernels.clone()
    }
}

/// What OpenVINO ran of a low-precision session's heavy layers, from a profiled second
/// compilation with the same properties and batch (untimed); nothing in f32, where there
/// is no lower precision to fall back from.
fn kernels_ran(
    graph: &Graph,
    bytes: &[u8],
    compiled: &Compiled,
    precision: Precision,
) -> Result<ChosenKernels> {
    match precision {
        Precision::Int8 | Precision::Bf16 | Precision::F16 => {
            let [c, h, w] = graph.input_shape();
            let shape = [compiled.per_request, c, h, w].map(|d| d as i64);
            let layers = profiling::executed_layers(bytes, &compiled.properties, shape)?;
            Ok(profiling::coverage_of(graph, &layers, precision).chosen_kernels("OpenVINO"))
        }
        Precision::F32 | Precision::Tf32 | Precision::AmpBf16 | Precision::AmpF16 => {
            Ok(ChosenKernels::default())
        }
    }
}

/// What a session compiles with.
#[derive(Clone, Copy, Debug)]
struct Setup {
    threads: usize,
    hint: PerformanceHint,
    /// `NUM_STREAMS` as asked; `None`: the hint's choice.
    streams: Option<usize>,
    precision: Precision,
    batch_size: usize,
    /// `false`: `ENABLE_CPU_PINNING` off (sessions side by side).
    pin_threads: bool,
}

/// A compiled model, its infer requests (one per share of the batch), and what OpenVINO
/// reported after compiling.
pub struct Compiled {
    /// Kept alive for its requests.
    _model: CompiledModel,
    requests: Vec<InferRequest>,
    /// Images each request computes.
    per_request: usize,
    reported: BTreeMap<String, String>,
    /// The CPU properties it was compiled with, as OpenVINO's keys and values.
    properties: Vec<(String, String)>,
    /// What OpenVINO ran of its heavy layers (low precisions only).
    kernels: ChosenKernels,
}

/// The graph's ONNX export, compiled for the CPU with the session's hints.
///
/// Under the throughput hint, OpenVINO is asked once at the full batch how many
/// requests it wants in flight (`OPTIMAL_NUMBER_OF_INFER_REQUESTS`); the batch is then
/// split evenly among that many, compiled again at the share with the streams it chose,
/// so that a pass still computes the batch asked for.
fn compile(
    runtime: &LoadedLibrary,
    setup: &Setup,
    graph: &Graph,
    bytes: &[u8],
) -> Result<Compiled> {
    let mut core = Core::new().map_err(|e| anyhow!("{ENGINE_NAME}: cannot start OpenVINO: {e}"))?;
    let (precision, _) =
        openvino_precision(setup.precision).ok_or_else(|| no_hint_for(setup.precision))?;
    let hint = setup.hint.openvino_name();
    let threads = setup.threads.to_string();
    let refused = |what: &str, e: openvino::InferenceError| {
        anyhow!(
            "{ENGINE_NAME}: OpenVINO {} refused {what}: {e}",
            runtime.build
        )
    };
    let mut properties = Vec::new();
    let mut set = |core: &mut Core, key: RwPropertyKey, value: &str| {
        let what = format!("{}={value}", key.as_ref());
        core.set_property(&DeviceType::CPU, &key, value)
            .map_err(|e| refused(&what, e))?;
        properties.retain(|(k, _): &(String, String)| k != key.as_ref());
        properties.push((key.as_ref().to_string(), value.to_string()));
        Ok::<(), anyhow::Error>(())
    };
    set(&mut core, RwPropertyKey::HintPerformanceMode, hint)?;
    set(&mut core, RwPropertyKey::HintInferencePrecision, precision)?;
    set(&mut core, RwPropertyKey::InferenceNumThreads, &threads)?;
    if let Some(streams) = setup.streams {
        set(&mut core, RwPropertyKey::NumStreams, &streams.to_string())?;
    }
    if !setup.pin_threads {
        set(&mut core, RwPropertyKey::HintEnableCpuPinning, "NO")?;
    }
    let [c, h, w] = graph.input_shape();
    let compile_at = |core: &mut Core, batch: usize| -> Result<CompiledModel> {
        let mut model = core
            .read_model_from_buffer(bytes, None)
            .map_err(|e| refused(&format!("the ONNX export of {}", graph.name()), e))?;
        let shape = PartialShape::new_static(4, &[batch as i64, c as i64, h as i64, w as i64])
            .map_err(|e| anyhow!("{ENGINE_NAME}: cannot make the input shape: {e}"))?;
        model
            .reshape_single_input(&shape)
            .map_err(|e| refused(&format!("batch {batch} for {}", graph.name()), e))?;
        core.compile_model(&model, DeviceType::CPU)
            .map_err(|e| refused(&format!("to compile {}", graph.name()), e))
    };
    let mut model = compile_at(&mut core, setup.batch_size)?;
    let mut requests_wanted = 1;
    if setup.hint == PerformanceHint::Throughput {
        requests_wanted = reported_number(&model, PropertyKey::OptimalNumberOfInferRequests)?;
        if requests_wanted > 1 {
            if !setup.batch_size.is_multiple_of(requests_wanted) {
                return Err(anyhow!(
                    "{ENGINE_NAME} under the throughput hint: OpenVINO asks for {requests_wanted} infer requests in flight here, and a batch of {} does not split evenly among them; use a multiple of {requests_wanted}, or --ov-hint latency",
                    setup.batch_size
                ));
            }
            let streams = reported(&model, PropertyKey::Rw(RwPropertyKey::NumStreams))?;
            set(&mut core, RwPropertyKey::NumStreams, &streams)?;
            model = compile_at(&mut core, setup.batch_size / requests_wanted)?;
        }
    }
    drop(core);

    let mut reported_settings = BTreeMap::new();
    let ran = reported(
        &model,
        PropertyKey::Rw(RwPropertyKey::HintInferencePrecision),
    )?;
    if !ran.eq_ignore_ascii_case(precision) {
        return Err(anyhow!(
            "{ENGINE_NAME}: asked for {precision}, OpenVINO {} compiled {} to run in {ran}; refused rather than measured as {precision}",
            runtime.build,
            graph.name()
        ));
    }
    reported_settings.insert("inference_precision".to_string(), ran);
    let scheduled = reported(&model, PropertyKey::Rw(RwPropertyKey::HintPerformanceMode))?;
    if !scheduled.eq_ignore_ascii_case(hint) {
        return Err(anyhow!(
            "{ENGINE_NAME}: asked for the {} hint, OpenVINO {} compiled {} under {scheduled}; refused rather than measured under another schedule",
            setup.hint.as_str(),
            runtime.build,
            graph.name()
        ));
    }
    for (name, key) in [
        ("num_streams", PropertyKey::Rw(RwPropertyKey::NumStreams)),
        (
            "inference_num_threads_reported",
            PropertyKey::Rw(RwPropertyKey::InferenceNumThreads),
        ),
        (
            "optimal_number_of_infer_requests",
            PropertyKey::OptimalNumberOfInferRequests,
        ),
        (
            "cpu_pinning",
            PropertyKey::Rw(RwPropertyKey::HintEnableCpuPinning),
        ),
    ] {
        reported_settings.insert(name.to_string(), reported(&model, key)?);
    }
    reported_settings.insert("infer_requests".to_string(), requests_wanted.to_string());
    let requests = (0..requests_wanted)
        .map(|_| {
            model
                .create_infer_request()
                .map_err(|e| anyhow!("{ENGINE_NAME}: cannot create an infer request: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Compiled {
        _model: model,
        requests,
        per_request: setup.batch_size / requests_wanted,
        reported: reported_settings,
        properties,
        kernels: ChosenKernels::default(),
    })
}

/// A property of a compiled model.
fn reported(model: &CompiledModel, key: PropertyKey) -> Result<String> {
    model
        .get_property(&key)
        .map(|v| v.into_owned())
        .map_err(|e| {
            anyhow!(
                "{ENGINE_NAME}: the compiled model does not report {}: {e}",
                key.as_ref()
            )
        })
}

/// A property of a compiled model that is a count.
fn reported_number(model: &CompiledModel, key: PropertyKey) -> Result<usize> {
    let text = reported(model, key)?;
    text.trim()
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| anyhow!("{ENGINE_NAME}: OpenVINO reported {text:?} as a count"))
}
