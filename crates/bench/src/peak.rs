//! `cnnbench peak`: the best an engine does on this machine in one precision, measured
//! through the engine itself (a dense matrix product as one Linear layer, a 3×3
//! convolution as one Conv2d layer, a streaming ReLU for memory bandwidth), beside the
//! CPU's theoretical f32 rate read from `/proc/cpuinfo`. The measurement is cached per
//! engine, device, thread count and precision so that `run` and `profile` can say what
//! fraction of it a network achieves. Both compute primitives are measured because a
//! stack may run its convolutions on other kernels than its matrix product (PyTorch on
//! the CPU: oneDNN's convolutions, MKL's `mm`), and "% of peak" takes the faster.

use crate::profile::{time_graph, Timing};
use anyhow::{anyhow, Context, Result};
use chrono::Utc;
use cnnbench_engine::{Engine, EngineInfo, Mode, Precision};
use cnnbench_graph::ops::{Conv2d, Linear, NoParams};
use cnnbench_graph::{Activation, Graph, ModelInfo, NodeSpec, Op};
use cnnbench_results::peak::*;
use cnnbench_results::result::ToolInfo;
use cnnbench_results::stats::Summary;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

/// Sizes of the two measurements.
#[derive(Clone, Debug)]
pub struct PeakRequest {
    /// The product is `[n, k] × [k, m]`.
    pub n: usize,
    pub k: usize,
    pub m: usize,
    /// The convolution: `conv_batch` images of `conv_channels` maps of
    /// `conv_size`×`conv_size`, 3×3 to as many channels.
    pub conv_batch: usize,
    pub conv_channels: usize,
    pub conv_size: usize,
    /// Elements the bandwidth test streams through (read once, written once).
    pub elements: usize,
    /// What every measurement computes in.
    pub precision: Precision,
    pub warmup: usize,
    pub passes: usize,
    /// FMA units per core assumed for the theoretical figure.
    pub fma_units: usize,
    pub tool: ToolInfo,
}

impl PeakRequest {
    /// 2048³ (17 GFLOP per product), 256 → 256 channels on 8 maps of 56×56 (ResNet's
    /// second stage: 29.6 GFLOP per convolution) and 64 Mi elements (512 MiB moved in
    /// f32): large enough to leave the caches and the start-up costs behind.
    pub fn new(tool: ToolInfo) -> Self {
        PeakRequest {
            n: 2048,
            k: 2048,
            m: 2048,
            conv_batch: 8,
            conv_channels: 256,
            conv_size: 56,
            elements: 64 << 20,
            precision: Precision::F32,
            warmup: 2,
            passes: 10,
            fma_units: 2,
            tool,
        }
    }
}

/// The matrix product as a Graph: a `[k]` vector per example through `Linear(k → m)`,
/// the batch being `n` (the flatten of a `k×1×1` map is a reshape).
pub fn matmul_graph(k: usize, m: usize) -> Result<Graph> {
    let mut linear = Linear::new(m);
    linear.in_features = k;
    linear.bias = false;
    let specs = vec![
        NodeSpec {
            name: "flat".into(),
            op: Op::Flatten(NoParams {}),
            inputs: vec![cnnbench_graph::INPUT_NAME.into()],
        },
        NodeSpec {
            name: "matmul".into(),
            op: Op::Linear(linear),
            inputs: vec!["flat".into()],
        },
    ];
    Graph::new("matmul", [k, 1, 1], specs, None, ModelInfo::default())
        .context("building the matrix-product graph")
}

/// The convolution as a Graph: 3×3, stride 1, padding 1, no bias, `channels` to as many
/// on `size`×`size` maps.
pub fn conv_graph(channels: usize, size: usize) -> Result<Graph> {
    let conv = Conv2d {
        in_channels: channels,
        bias: false,
        ..Conv2d::new(channels, 3).padding(1)
    };
    let specs = vec![NodeSpec {
        name: "conv".into(),
        op: Op::Conv2d(conv),
        inputs: vec![cnnbench_graph::INPUT_NAME.into()],
    }];
    Graph::new(
        "conv3x3",
        [channels, size, size],
        specs,
        None,
        ModelInfo::default(),
    )
    .context("building the convolution graph")
}

/// The streaming op as a Graph: ReLU over `[64, 256, 256]` maps (4 Mi elements each).
pub fn stream_graph() -> Result<Graph> {
    let specs = vec![NodeSpec {
        name: "relu".into(),
        op: Op::Activation(Activation::Relu),
        inputs: vec![cnnbench_graph::INPUT_NAME.into()],
    }];
    Graph::new("stream", STREAM_MAP, specs, None, ModelInfo::default())
        .context("building the streaming graph")
}

const STREAM_MAP: [usize; 3] = [64, 256, 256];

/// Median seconds of `graph`'s forward pass at `batch_size` in the request's precision.
fn median_forward(
    engine: &dyn Engine,
    int8_reference: Option<&dyn Engine>,
    graph: &Graph,
    batch_size: usize,
    request: &PeakRequest,
    cancel: &AtomicBool,
) -> Result<Summary> {
    let samples = time_graph(
        engine,
        graph,
        Timing {
            mode: Mode::Infer,
            batch_size,
            seed: 0,
            warmup: request.warmup,
            passes: request.passes,
            precision: request.precision,
            int8_reference,
        },
        cancel,
    )
    .with_context(|| format!("timing the {}", graph.name()))?;
    Summary::of(&samples.forward).ok_or_else(|| anyhow!("no samples of the {}", graph.name()))
}

/// Bytes an element of the streamed tensor takes in `precision`: the whole-model casts
/// stream 2-byte values, int8 1-byte ones; the others (mixed precision keeps element-wise ops in f32) 4.
pub fn element_bytes(precision: Precision) -> f64 {
    match precision {
        Precision::Int8 => 1.0,
        Precision::Bf16 | Precision::F16 => 2.0,
        Precision::F32 | Precision::Tf32 | Precision::AmpBf16 | Precision::AmpF16 => 4.0,
    }
}

/// Measures the engine's matrix-product and convolution rates and memory bandwidth on
/// this machine.
/// An int8 measurement calibrates each graph on `int8_reference` first (an f32 engine),
/// as `run` does.
pub fn measure(
    engine: &dyn Engine,
    int8_reference: Option<&dyn Engine>,
    request: &PeakRequest,
    cancel: &AtomicBool,
) -> Result<PeakDoc> {
    if request.passes == 0
        || [request.n, request.k, request.m].contains(&0)
        || [request.conv_batch, request.conv_channels, request.conv_size].contains(&0)
    {
        return Err(anyhow!(
            "the sizes and the number of passes must be at least 1"
        ));
    }
    let info = engine.info();
    // The machine's memory levels, for the roofline (a GPU engine's memory is not the
    // host's): streamed first, before the engine's thread pool has run (its threads spin
    // a while after their work and would share the cores with the copies). DRAM's
    // working set is the streaming op's bytes and at least eight times the largest
    // cache, so that it streams from DRAM whatever `--elements` asks.
    let memory_levels = if info.device == "cpu" {
        let levels = crate::bandwidth::cache_levels(Path::new(SYSFS_CPU), info.threads);
        let largest = levels.iter().map(|l| l.holds_bytes()).max().unwrap_or(0);
        let dram_bytes = (request.elements as u64)
            .saturating_mul(2 * element_bytes(request.precision) as u64)
            .max(largest.saturating_mul(8));
        crate::bandwidth::measure_levels(&levels, dram_bytes, info.threads, request.passes, cancel)
            .context("streaming the memory levels")?
    } else {
        Vec::new()
    };
    let mm_time = median_forward(
        engine,
        int8_reference,
        &matmul_graph(request.k, request.m)?,
        request.n,
        request,
        cancel,
    )?;
    let flops = 2.0 * request.n as f64 * request.k as f64 * request.m as f64;

    let conv = conv_graph(request.conv_channels, request.conv_size)?;
    let conv_time = median_forward(
        engine,
        int8_reference,
        &conv,
        request.conv_batch,
        request,
        cancel,
    )?;
    let conv_flops = 2.0 * conv.macs() as f64 * request.conv_batch as f64;

    let per_map: usize = STREAM_MAP.iter().product();
    let batch = request.elements.div_ceil(per_map).max(1);
    let bw_time = median_forward(
        engine,
        int8_reference,
        &stream_graph()?,
        batch,
        request,
        cancel,
    )?;
    let elements = (batch * per_map) as u64;
    let bytes = elements as f64 * 2.0 * element_bytes(request.precision);

    let cpuinfo = (info.device == "cpu").then(read_cpuinfo).flatten();
    let theoretical = cpuinfo.as_deref().and_then(|text| {
        theoretical_peak(text, cpufreq_max_khz(), info.threads, request.fma_units)
    });
    let nominal = cpuinfo
        .as_deref()
        .zip(theoretical.as_ref())
        .and_then(|(text, f32_peak)| nominal_peak(request.precision, f32_peak, text));
    Ok(PeakDoc {
        format: PEAK_FORMAT.into(),
        version: PEAK_VERSION,
        tool: request.tool.clone(),
        engine: info,
        machine: crate::env::detect_machine(),
        measured_at: Utc::now(),
        precision: request.precision,
        matmul: MatmulPeak {
            n: request.n,
            k: request.k,
            m: request.m,
            flops,
            gflops_per_s: flops / mm_time.median / 1e9,
            time: mm_time,
        },
        conv: Some(ConvPeak {
            batch: request.conv_batch,
            channels: request.conv_channels,
            size: request.conv_size,
            flops: conv_flops,
            gflops_per_s: conv_flops / conv_time.median / 1e9,
            time: conv_time,
        }),
        bandwidth: BandwidthPeak {
            elements,
            bytes,
            gb_per_s: bytes / bw_time.median / 1e9,
            time: bw_time,
        },
        theoretical,
        nominal,
        memory_levels,
    })
}

/// Where Linux describes the CPUs' caches.
const SYSFS_CPU: &str = "/sys/devices/system/cpu";

/// The nominal rate of `precision`'s instructions, from the f32 figure (its cores,
/// clock and lanes) and the CPU's flags: AMX tiles compute 1,024 bf16 or f16 FLOPs and
/// 2,048 int8 ops a cycle a core; without them AVX-512's bf16 and f16 instructions do
/// twice f32's work a lane, VNNI's int8 dot products four times. `None` where the CPU
/// has no instructions for the precision (it is then computed in another).
pub fn nominal_peak(
    precision: Precision,
    f32_peak: &TheoreticalPeak,
    cpuinfo: &str,
) -> Option<NominalPeak> {
    let flags = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        matches!(k.trim(), "flags" | "Features").then_some(v)
    })?;
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    let cores_ghz = f32_peak.cores as f64 * f32_peak.ghz;
    let amx = |ops_per_cycle: f64, name: &str| NominalPeak {
        gflops_per_s: ops_per_cycle * cores_ghz,
        reckoning: format!(
            "{name}: {ops_per_cycle} ops/cycle/core × {} cores × {:.2} GHz",
            f32_peak.cores, f32_peak.ghz
        ),
    };
    let times_f32 = |factor: f64, name: &str| NominalPeak {
        gflops_per_s: factor * f32_peak.gflops_per_s,
        reckoning: format!(
            "{name}: {factor}× the f32 rate ({:.1} GFLOP/s, {})",
            f32_peak.gflops_per_s, f32_peak.isa
        ),
    };
    let f32_rate = || NominalPeak {
        gflops_per_s: f32_peak.gflops_per_s,
        reckoning: format!(
            "{}: {} lanes × {} FMA units × {} cores × {:.2} GHz",
            f32_peak.isa, f32_peak.lanes, f32_peak.fma_units_assumed, f32_peak.cores, f32_peak.ghz
        ),
    };
    match precision {
        Precision::F32 => Some(f32_rate()),
        Precision::Bf16 | Precision::AmpBf16 if has("amx_bf16") => Some(amx(1024.0, "AMX-BF16")),
        Precision::Bf16 | Precision::AmpBf16 if has("avx512_bf16") => {
            Some(times_f32(2.0, "AVX512-BF16"))
        }
        Precision::F16 | Precision::AmpF16 if has("amx_fp16") => Some(amx(1024.0, "AMX-FP16")),
        Precision::F16 | Precision::AmpF16 if has("avx512_fp16") => {
            Some(times_f32(2.0, "AVX512-FP16"))
        }
        Precision::Int8 if has("amx_int8") => Some(amx(2048.0, "AMX-INT8")),
        Precision::Int8 if has("avx512_vnni") || has("avx_vnni") => Some(times_f32(4.0, "VNNI")),
        Precision::Bf16
        | Precision::AmpBf16
        | Precision::F16
        | Precision::AmpF16
        | Precision::Int8
        | Precision::Tf32 => None,
    }
}

fn read_cpuinfo() -> Option<String> {
    std::fs::read_to_string("/proc/cpuinfo").ok()
}

/// The highest clock cpufreq reports for CPU 0, in kHz, where the kernel exposes it.
fn cpufreq_max_khz() -> Option<u64> {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// The CPU's theoretical f32 rate from `/proc/cpuinfo` text: cores (the engine's
/// `threads`, at most the physical cores) × clock (cpufreq's maximum when given, else
/// the `cpu MHz` line) × f32 lanes of the widest vector unit (AVX-512: 16, AVX: 8,
/// SSE: 4, NEON: 4) × 2 when there is FMA × `fma_units`. `None` when the text names no
/// vector unit or clock.
pub fn theoretical_peak(
    cpuinfo: &str,
    max_khz: Option<u64>,
    threads: usize,
    fma_units: usize,
) -> Option<TheoreticalPeak> {
    let field = |name: &str| {
        cpuinfo.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let flags = field("flags").or_else(|| field("Features"))?;
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    let (isa, lanes, fma) = if has("avx512f") {
        ("avx512f", 16, true)
    } else if has("avx2") && has("fma") {
        ("avx2+fma", 8, true)
    } else if has("avx") {
        ("avx", 8, has("fma"))
    } else if has("sse") || has("sse2") {
        ("sse", 4, false)
    } else if has("asimd") {
        ("neon", 4, true)
    } else {
        return None;
    };
    // Physical cores: distinct (physical id, core id) pairs; without them, processors.
    let mut pairs = std::collections::BTreeSet::new();
    let mut processors = 0usize;
    let (mut physical, mut core) = (None, None);
    for line in cpuinfo.lines().chain(std::iter::once("")) {
        let Some((k, v)) = line.split_once(':') else {
            if line.trim().is_empty() {
                if let (Some(p), Some(c)) = (physical.take(), core.take()) {
                    pairs.insert((p, c));
                }
            }
            continue;
        };
        match k.trim() {
            "processor" => processors += 1,
            "physical id" => physical = Some(v.trim().to_string()),
            "core id" => core = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let physical_cores = if pairs.is_empty() {
        processors.max(1)
    } else {
        pairs.len()
    };
    let cores = threads.clamp(1, physical_cores);
    let (ghz, clock_source) = match max_khz {
        Some(khz) if khz > 0 => (khz as f64 / 1e6, "cpufreq max"),
        _ => (
            field("cpu MHz")?.parse::<f64>().ok().filter(|m| *m > 0.0)? / 1e3,
            "/proc/cpuinfo MHz",
        ),
    };
    let per_cycle = lanes as f64 * if fma { 2.0 } else { 1.0 } * fma_units as f64;
    Some(TheoreticalPeak {
        isa: isa.into(),
        lanes,
        fma,
        fma_units_assumed: fma_units,
        cores,
        ghz,
        clock_source: clock_source.into(),
        gflops_per_s: cores as f64 * ghz * per_cycle,
    })
}

/// Where measured peaks are cached: `$XDG_CACHE_HOME/cnnbench/peak`, else
/// `~/.cache/cnnbench/peak`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("cnnbench").join("peak"))
}

/// The cache file of one engine on one device with one thread count, in one precision
/// (f32's file keeps the name it had before peaks had a precision).
pub fn cache_file(dir: &Path, info: &EngineInfo, precision: Precision) -> PathBuf {
    let slug = crate::output::slug;
    let suffix = match precision {
        Precision::F32 => String::new(),
        other => format!("_{}", other.as_str()),
    };
    dir.join(format!(
        "{}_{}_{}_t{}{suffix}.json",
        slug(&info.name),
        slug(&info.device),
        slug(&info.device_name),
        info.threads
    ))
}

/// Writes `doc` to the cache (replacing the previous measurement of that engine).
pub fn save(dir: &Path, doc: &PeakDoc) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the peak cache folder {}", dir.display()))?;
    let path = cache_file(dir, &doc.engine, doc.precision);
    let text = serde_json::to_string_pretty(doc)?;
    // Whole or not at all: a full disk leaves the previous measurement, not a `.tmp` file.
    cnnbench_graph::write_replacing(&path, |w| w.write_all(text.as_bytes()))?;
    Ok(path)
}

/// The largest peak cache file read: a real one is a few kilobytes.
const MAX_PEAK_FILE_BYTES: u64 = 1 << 20;

/// What `run` and `profile` set their measurements against, from the cached peak of
/// this engine in this precision: its best compute rate ("% of peak") and its ceilings
/// (the roofline, where they can judge); neither before `cnnbench peak` has run.
pub fn cached_yardsticks(
    info: &EngineInfo,
    precision: Precision,
) -> (
    Option<BestRate>,
    Option<cnnbench_results::roofline::Ceilings>,
) {
    let Some(doc) = default_cache_dir().and_then(|dir| load(&dir, info, precision)) else {
        return (None, None);
    };
    let ceilings = Some(doc.ceilings()).filter(|c| c.usable());
    (Some(doc.best()), ceilings)
}

/// The cached measurement for this engine, device, thread count and precision, if any
/// (a file that does not parse as a peak, or of another precision, counts as none).
pub fn load(dir: &Path, info: &EngineInfo, precision: Precision) -> Option<PeakDoc> {
    // Bounded, and never a FIFO or a device: a cache file is read before every run.
    let text = cnnbench_graph::read_bounded_to_string(
        &cache_file(dir, info, precision),
        MAX_PEAK_FILE_BYTES,
        "peak files",
    )
    .ok()?;
    let doc: PeakDoc = serde_json::from_str(&text).ok()?;
    (doc.format == PEAK_FORMAT && doc.version == PEAK_VERSION && doc.precision == precision)
        .then_some(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPYC: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2596.146\nphysical id\t: 0\ncore id\t\t: 0\nflags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512dq\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\ncpu MHz\t\t: 2596.146\nphysical id\t: 0\ncore id\t\t: 1\nflags\t\t: fpu sse sse2 avx fma avx2 avx512f avx512dq\n\n";

    #[test]
    fn theoretical_peak_from_cpuinfo_text() {
        let p = theoretical_peak(EPYC, None, 2, 2).unwrap();
        assert_eq!((p.isa.as_str(), p.lanes, p.cores), ("avx512f", 16, 2));
        assert_eq!(p.clock_source, "/proc/cpuinfo MHz");
        // 2 cores × 2.596146 GHz × 16 lanes × 2 (FMA) × 2 units.
        assert!((p.gflops_per_s - 2.0 * 2.596146 * 64.0).abs() < 1e-6);
        // cpufreq's maximum wins; threads beyond the physical cores do not count.
        let p = theoretical_peak(EPYC, Some(3_500_000), 8, 1).unwrap();
        assert_eq!(p.cores, 2);
        assert!((p.gflops_per_s - 2.0 * 3.5 * 32.0).abs() < 1e-9);
        // One thread counts one core; AVX2 with FMA has 8 lanes.
        let avx2 = EPYC.replace(" avx512f avx512dq", "");
        let p = theoretical_peak(&avx2, None, 1, 2).unwrap();
        assert_eq!((p.lanes, p.cores), (8, 1));
        assert!(theoretical_peak("processor : 0\n", None, 1, 2).is_none());
    }

    #[test]
    fn the_nominal_rate_of_a_precision_is_what_its_instructions_do_per_cycle() {
        let f32_peak = theoretical_peak(EPYC, Some(2_000_000), 2, 2).unwrap();
        // 2 cores × 2 GHz × 16 lanes × 2 (FMA) × 2 units.
        assert!((f32_peak.gflops_per_s - 256.0).abs() < 1e-9);
        let f32_rate = nominal_peak(Precision::F32, &f32_peak, EPYC).unwrap();
        assert_eq!(f32_rate.gflops_per_s, f32_peak.gflops_per_s);
        // No bf16 or int8 instructions in EPYC's flags: nothing nominal to say.
        assert!(nominal_peak(Precision::Int8, &f32_peak, EPYC).is_none());
        assert!(nominal_peak(Precision::Bf16, &f32_peak, EPYC).is_none());
        let vnni = EPYC.replace("avx512dq", "avx512dq avx512_vnni avx512_bf16");
        let int8 = nominal_peak(Precision::Int8, &f32_peak, &vnni).unwrap();
        assert!((int8.gflops_per_s - 4.0 * 256.0).abs() < 1e-9);
        assert!(int8.reckoning.starts_with("VNNI"));
        let bf16 = nominal_peak(Precision::Bf16, &f32_peak, &vnni).unwrap();
        assert!((bf16.gflops_per_s - 2.0 * 256.0).abs() < 1e-9);
        // AMX: 2,048 int8 ops and 1,024 bf16 FLOPs a cycle a core, 2 cores at 2 GHz.
        let amx = vnni.replace("avx512_bf16", "avx512_bf16 amx_bf16 amx_int8");
        let int8 = nominal_peak(Precision::Int8, &f32_peak, &amx).unwrap();
        assert!((int8.gflops_per_s - 2048.0 * 4.0).abs() < 1e-9);
        let bf16 = nominal_peak(Precision::Bf16, &f32_peak, &amx).unwrap();
        assert!((bf16.gflops_per_s - 1024.0 * 4.0).abs() < 1e-9);
        assert!(nominal_peak(Precision::Tf32, &f32_peak, &amx).is_none());
    }

    #[test]
    fn graphs_have_the_sizes_asked_for() {
        let g = matmul_graph(64, 32).unwrap();
        assert_eq!(g.macs(), 64 * 32);
        assert_eq!(g.output_shape().as_flat(), Some(32));
        assert_eq!(stream_graph().unwrap().macs(), 0);
        let c = conv_graph(8, 5).unwrap();
        assert_eq!(c.macs(), 8 * 8 * 9 * 5 * 5);
        assert_eq!(c.output_shape().0, vec![8, 5, 5]);
    }

    #[test]
    fn each_precision_has_its_own_cache_file_and_f32_keeps_the_old_name() {
        let info = EngineInfo::on_the_cpu("burn-flex", "burn", "0", "flex", 2, "CPU X".into());
        let dir = Path::new("/cache");
        let f32_file = cache_file(dir, &info, Precision::F32);
        assert_eq!(f32_file, dir.join("burn-flex_cpu_cpu-x_t2.json"));
        let bf16 = cache_file(dir, &info, Precision::Bf16);
        assert_eq!(bf16, dir.join("burn-flex_cpu_cpu-x_t2_bf16.json"));
        assert_eq!(element_bytes(Precision::Bf16), 2.0);
        assert_eq!(element_bytes(Precision::AmpBf16), 4.0);
    }

    /// The cache is read before every run: a FIFO put where the file goes blocked every
    /// `run` (hostile input, round three); it counts as no measurement, at once.
    #[test]
    fn a_fifo_in_place_of_the_cache_file_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let info = EngineInfo::on_the_cpu("burn-flex", "burn", "0", "flex", 2, "CPU X".into());
        let path = cache_file(dir.path(), &info, Precision::F32);
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo (coreutils) failed");
        let (tx, rx) = std::sync::mpsc::channel();
        let dir_path = dir.path().to_path_buf();
        std::thread::spawn(move || {
            let _ = tx.send(load(&dir_path, &info, Precision::F32).is_none());
        });
        let answered = rx.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(
            answered,
            Ok(true),
            "loading a FIFO as the peak cache blocked"
        );
    }
}
