//! The benchmark harness and everything around a measurement: the clock, the machine
//! and memory, result files and `verify`. The result schema and the statistics are
//! `cnnbench-results`, re-exported here.

pub mod bandwidth;
pub mod batch_search;
pub mod distributed;
pub mod env;
pub mod harness;
pub mod images;
pub mod measure;
pub mod memory;
pub mod noise;
pub mod output;
pub mod peak;
pub mod profile;
pub mod quantize;
pub mod scenario;
pub mod stopping;
pub mod validity;
pub mod verify;

/// The result schema and the statistics live in `cnnbench-results`, which the report
/// reads without the harness; they stay reachable here under their old paths.
pub use cnnbench_results::{result, stats, Quantity};

pub use harness::{run, HarnessError, Progress, RunRequest};
pub use result::BenchResult;
