//! What a measurement is, for everyone who writes or reads one: the result file schema
//! (`cnnbench-result` version 2; version 1 files still read), the timed [`Quantity`]s and the statistics of timing
//! samples (summaries, quantiles, the median's confidence interval, the bootstrap).
//!
//! The harness (`cnnbench-bench`) fills these types in and the report
//! (`cnnbench-report`) reads them; neither needs the other.

pub mod engine_types;
pub mod folders;
pub mod noise;
pub mod peak;
pub mod profile;
pub mod quantity;
pub mod result;
pub mod scenario;
pub mod spec;
pub mod stats;
pub mod validity;

/// Mode, precision, engine settings and the engine's record: part of the schema.
pub use engine_types::{EngineInfo, Mode, Phase, Precision};
pub use quantity::{Quantity, UnknownQuantity};
pub use result::{
    flops_per_pass, AllocatorRecord, BatchProbe, BatchSearch, BenchResult, MachineInfo,
    MemoryRecord, ModelRecord, ProbeOutcome, Round, RunConfig, StopReason, StopRecord, Throughput,
    ToolInfo, RESULT_FORMAT, RESULT_VERSION, RESULT_VERSIONS_READ,
};
pub use spec::{Batches, DataParallel, EngineSettings, ImageSize, ModelRef, RunSpec, SettingsMap};
pub use stats::{Percentiles, Summary};
pub use validity::{ColdStart, GpuSignals, Signals, Validity, Verdict};

/// Bytes in binary units, e.g. "2.25 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{value:.2} {}", UNITS[unit])
    }
}

/// Text from a file or a user (a model, device or file name, a label) made safe to print
/// on a terminal or write into a table, a heading or a comment line: control characters
/// (ESC, CR, newlines) are shown escaped (`\n`, `\u{1b}`) instead of acting.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}
