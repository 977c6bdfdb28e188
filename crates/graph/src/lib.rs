//! The framework-neutral description of a convolutional network (the Graph IR).
//!
//! A [`Graph`] is a validated DAG of typed [`Op`]s with one image input. It knows every
//! node's output shape, its parameter count, MACs and depth without any engine, and it
//! round-trips through a versioned JSON model file. Engines lower a `Graph`; nobody
//! writes a model twice.

mod builder;
mod error;
mod geometry;
mod graph;
mod initial;
mod model_file;
pub mod ops;
pub mod quant;
pub mod read;
mod weights;
pub mod write;

pub use builder::{GraphBuilder, T};
/// The workspace's one seeded generator (weights, inputs, labels, bootstrap resamples).
pub use cnnbench_base::SplitMix64;
pub use error::GraphError;
pub use geometry::{Hw, Pad2d, Shape};
pub use graph::{saturating_sum, Graph, ModelInfo, Node, NodeSpec, Source, INPUT_NAME};
pub use model_file::{MODEL_FORMAT, MODEL_VERSION};
pub use ops::{Activation, Op, OpWeight, WeightInit};
pub use read::{read_bounded, read_bounded_to_string, read_owned, ReadFileError, ReadProblem};
pub use weights::{
    cosine_similarity, max_relative_error, relative_l2_error, HostTensor, WeightSpec, Weights,
};
pub use write::{
    write_new, write_owned, write_replacing, PendingFile, WriteFileError, WriteProblem,
};

#[cfg(test)]
mod tests;
