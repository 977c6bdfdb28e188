//! The benchmark harness and everything around a measurement: statistics, the machine
//! and memory, the result schema and result files.

pub mod env;
pub mod harness;
pub mod memory;
pub mod output;
pub mod result;
pub mod stats;
pub mod verify;

pub use harness::{run, HarnessError, Progress, RunRequest};
pub use result::BenchResult;
