//! The few definitions that the Graph IR (`cnnbench-graph`) and the result schema
//! (`cnnbench-results`) both need and neither owns. They live here, with no
//! dependencies, so that the schema (and the report that reads it) stands without the
//! graph, the engines or their thread pools.

mod random;

pub use random::SplitMix64;

/// The largest size any dimension, channel count, kernel, stride or padding may have:
/// far beyond real networks, small enough that shape arithmetic cannot overflow. The
/// graph checks every op against it and the run spec every image size, so both share
/// this one value.
pub const MAX_DIMENSION: usize = 1 << 20;
