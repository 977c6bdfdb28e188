//! `cnnbench peak`: the engine's measured matrix-product and 3×3-convolution rates and
//! memory bandwidth on this machine in one precision, beside the CPU's theoretical f32
//! rate; cached so that `run` and `profile` can show "% of peak".

use super::args::{EngineArgs, PrecisionArg};
use super::common::{align_right, new_table};
use super::engines;
use anyhow::{anyhow, Result};
use cnnbench_bench::peak::{self, PeakRequest};
use cnnbench_bench::result::ToolInfo;
use cnnbench_bench::HarnessError;
use cnnbench_results::peak::PeakDoc;
use cnnbench_results::Precision;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct PeakArgs {
    /// Engine to measure (see `cnnbench engines`).
    #[arg(long, short = 'e', default_value = cnnbench_engine_burn::ENGINE_NAME)]
    pub engine: String,
    /// Size of the engine's thread pool (default: all cores).
    #[arg(long, value_parser = crate::commands::common::thread_count)]
    pub threads: Option<usize>,
    #[command(flatten)]
    pub gpu: EngineArgs,
    /// What every measurement computes in: a run's "% of peak" is against the peak of
    /// its own precision.
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: PrecisionArg,
    /// Side of the square matrix product N×N × N×N.
    #[arg(long, default_value_t = 2048, value_name = "N")]
    pub size: usize,
    /// The 3×3 convolution: CH channels to as many on --conv-batch maps of
    /// --conv-size² (ResNet-50's second stage by default).
    #[arg(long, default_value_t = 256, value_name = "CH")]
    pub conv_channels: usize,
    #[arg(long, default_value_t = 56, value_name = "N")]
    pub conv_size: usize,
    #[arg(long, default_value_t = 8, value_name = "N")]
    pub conv_batch: usize,
    /// Millions of f32 elements streamed for the bandwidth (read once, written once).
    #[arg(long, default_value_t = 64, value_name = "MI")]
    pub stream_mi: usize,
    /// Timed passes of each measurement.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub passes: usize,
    /// FMA units per core assumed for the theoretical figure (2 on most server cores
    /// since Haswell and Zen; AMD Zen 4 runs AVX-512 on 256-bit units, so 1 there).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub fma_units: usize,
    /// Print the measurement as JSON (`cnnbench-peak` v1).
    #[arg(long)]
    pub json: bool,
    /// Do not cache the measurement for `run` and `profile`.
    #[arg(long)]
    pub no_save: bool,
}

pub fn run(args: PeakArgs) -> Result<ExitCode> {
    let sizes = [
        args.size,
        args.stream_mi,
        args.passes,
        args.fma_units,
        args.conv_channels,
        args.conv_size,
        args.conv_batch,
    ];
    if sizes.contains(&0) {
        return Err(anyhow!(
            "--size, --stream-mi, --passes, --fma-units and the --conv-… sizes must be at least 1"
        ));
    }
    // Three f32 matrices of --size² for the matrix product, three --stream-mi Mi-element
    // vectors for the stream; the convolution's input and output maps and weights.
    let square = (args.size as u64).saturating_mul(args.size as u64);
    let stream = (args.stream_mi as u64).saturating_mul(1 << 20);
    let channels = args.conv_channels as u64;
    let maps = channels
        .saturating_mul((args.conv_size as u64).saturating_pow(2))
        .saturating_mul(args.conv_batch as u64);
    let conv = maps
        .saturating_mul(2)
        .saturating_add(channels.saturating_mul(channels).saturating_mul(9));
    super::common::check_fits(
        square
            .saturating_add(stream)
            .saturating_mul(3)
            .saturating_add(conv)
            .saturating_mul(4),
        &format!("peak --size {} --stream-mi {}", args.size, args.stream_mi),
    )?;
    let precision = args.precision.into();
    let engine = engines::create(
        &args.engine,
        &args.gpu.engine_options(args.threads, precision)?,
    )?;
    let cancel = super::common::stop_on_ctrl_c();
    let mut request = PeakRequest::new(ToolInfo {
        name: "cnnbench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: Some(env!("CNNBENCH_GIT_COMMIT").to_string()).filter(|s| !s.is_empty()),
    });
    request.n = args.size;
    request.k = args.size;
    request.m = args.size;
    request.elements = args.stream_mi << 20;
    request.conv_channels = args.conv_channels;
    request.conv_size = args.conv_size;
    request.conv_batch = args.conv_batch;
    request.precision = precision;
    request.passes = args.passes;
    request.fma_units = args.fma_units;
    let reference = engines::int8_reference(precision, args.threads)?;
    let doc = match peak::measure(engine.as_ref(), reference.as_deref(), &request, &cancel) {
        Ok(doc) => doc,
        Err(e) if e.downcast_ref::<HarnessError>().is_some() => {
            errln!("interrupted: nothing measured");
            return Ok(ExitCode::from(130));
        }
        Err(e) => return Err(e),
    };
    if !args.no_save {
        match peak::default_cache_dir() {
            Some(dir) => {
                let path = peak::save(&dir, &doc)?;
                errln!("cached for `run` and `profile`: {}", path.display());
            }
            None => errln!(
                "warning: no cache folder (neither XDG_CACHE_HOME nor HOME is set); not cached"
            ),
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_peak(&doc);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_peak(doc: &PeakDoc) {
    let precision = doc.precision.as_str();
    outln!(
        "{} on {} ({} threads), {precision}",
        doc.engine.name,
        doc.engine.device_name,
        doc.engine.threads
    );
    let mut table = new_table(&["Measure", "Size", "Median ms", "Rate"]);
    let mm = &doc.matmul;
    table.add_row(vec![
        format!("{precision} matrix product (measured)"),
        format!("{}×{} · {}×{}", mm.n, mm.k, mm.k, mm.m),
        format!("{:.2}", mm.time.median * 1e3),
        format!("{:.1} GFLOP/s", mm.gflops_per_s),
    ]);
    if let Some(c) = &doc.conv {
        table.add_row(vec![
            format!("{precision} 3×3 convolution (measured)"),
            format!("{} × {}×{}² → {}", c.batch, c.channels, c.size, c.channels),
            format!("{:.2}", c.time.median * 1e3),
            format!("{:.1} GFLOP/s", c.gflops_per_s),
        ]);
    }
    let bw = &doc.bandwidth;
    table.add_row(vec![
        "memory bandwidth, ReLU (measured)".to_string(),
        format!("{:.0} MiB moved", bw.bytes / (1u64 << 20) as f64),
        format!("{:.2}", bw.time.median * 1e3),
        format!("{:.1} GB/s", bw.gb_per_s),
    ]);
    for m in &doc.memory_levels {
        table.add_row(vec![
            format!("{} bandwidth, copy (measured)", m.level),
            format!(
                "{:.1} MiB working set{}",
                m.working_set_bytes as f64 / (1u64 << 20) as f64,
                m.holds_bytes.map_or(String::new(), |h| format!(
                    " of {:.1} MiB",
                    h as f64 / (1u64 << 20) as f64
                ))
            ),
            format!("{:.2}", m.time.median * 1e3),
            format!("{:.1} GB/s", m.gb_per_s),
        ]);
    }
    if let Some(t) = &doc.theoretical {
        table.add_row(vec![
            "f32 theoretical (CPU)".to_string(),
            format!(
                "{} cores × {:.2} GHz × {} lanes ({}) × {} × {} FMA units",
                t.cores,
                t.ghz,
                t.lanes,
                t.isa,
                if t.fma { 2 } else { 1 },
                t.fma_units_assumed
            ),
            "–".to_string(),
            format!("{:.1} GFLOP/s", t.gflops_per_s),
        ]);
    }
    if let Some(n) = doc
        .nominal
        .as_ref()
        .filter(|_| doc.precision != Precision::F32)
    {
        table.add_row(vec![
            format!("{precision} nominal (CPU)"),
            n.reckoning.clone(),
            "–".to_string(),
            format!("{:.1} GFLOP/s", n.gflops_per_s),
        ]);
    }
    align_right(&mut table, &[2, 3]);
    outln!("{table}");
    let ceilings = doc.ceilings();
    let ridges: Vec<String> = ceilings
        .memory
        .iter()
        .map(|m| format!("{} {:.1}", m.level, ceilings.ridge(m)))
        .collect();
    outln!(
        "roofline in `profile` ({precision}): compute {:.1} GFLOP/s; the memory roofs meet it at {} FLOP/byte",
        ceilings.compute_gflops_per_s,
        ridges.join(", ")
    );
    let best = doc.best();
    outln!(
        "% of peak in `run` and `profile` ({precision}): against the {}, {:.1} GFLOP/s",
        best.primitive,
        best.gflops_per_s
    );
    if let Some(n) = doc
        .nominal
        .as_ref()
        .filter(|_| doc.precision != Precision::F32)
    {
        outln!(
            "measured / {precision} nominal: {:.0}% ({})",
            best.gflops_per_s / n.gflops_per_s * 100.0,
            n.reckoning
        );
    } else if let Some(t) = &doc.theoretical {
        let share = best.gflops_per_s / t.gflops_per_s * 100.0;
        outln!(
            "measured / f32 theoretical: {share:.0}% (clock from {}; {} FMA units per core is an assumption, set it with --fma-units)",
            t.clock_source,
            t.fma_units_assumed
        );
        if share > 100.0 {
            outln!(
                "warning: above 100% of the f32 theoretical rate: {}",
                if doc.precision == Precision::F32 {
                    format!("the CPU does more per cycle than {} FMA unit(s) of {} lanes assumed; give --fma-units", t.fma_units_assumed, t.lanes)
                } else {
                    format!("{precision} packs more values per vector than f32, which the theoretical figure counts")
                }
            );
        }
    } else if doc.engine.device == "cpu" {
        outln!("theoretical: unknown (no vector unit or clock readable in /proc/cpuinfo)");
    }
}
