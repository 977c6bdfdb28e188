//! What a measurement is, for everyone who writes or reads one: the result file schema
//! (`cnnbench-result` version 2; version 1 files still read), the timed [`Quantity`]s and the statistics of timing
//! samples (summaries, quantiles, the median's confidence interval, the bootstrap).
//!
//! The harness (`cnnbench-bench`) fills these types in and the report
//! (`cnnbench-report`) reads them; neither needs the other.

pub mod engine_types;
pub mod folders;
pub mod peak;
pub mod profile;
pub mod quantity;
pub mod result;
pub mod spec;
pub mod stats;
pub mod validity;

/// Mode, precision, engine settings and the engine's record: part of the schema.
pub use engine_types::{CompileMode, EngineInfo, Mode, PerformanceHint, Phase, Precision};
pub use quantity::{Quantity, UnknownQuantity};
pub use result::{
    flops_per_pass, AllocatorRecord, BatchProbe, BatchSearch, BenchResult, MachineInfo,
    MemoryRecord, ModelRecord, ProbeOutcome, RunConfig, StopReason, StopRecord, Throughput,
    ToolInfo, RESULT_FORMAT, RESULT_VERSION, RESULT_VERSIONS_READ,
};
pub use spec::{Batches, DataParallel, EngineSettings, ImageSize, ModelRef, RunSpec};
pub use stats::{Percentiles, Summary};
pub use validity::{ColdStart, GpuSignals, Signals, Validity, Verdict};

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
