//! Errors of building, validating and loading graphs. Each names the node at fault.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum GraphError {
    #[error("node \"{node}\" {message}")]
    Node { node: String, message: String },
    #[error("the model has no nodes")]
    Empty,
    #[error("{0}")]
    BadInput(String),
    #[error("{0}")]
    BadOutput(String),
    #[error("model file: {0}")]
    File(String),
    #[error("weights: {0}")]
    Weights(String),
}

impl GraphError {
    pub(crate) fn node(node: impl Into<String>, message: impl Into<String>) -> Self {
        GraphError::Node {
            node: node.into(),
            message: message.into(),
        }
    }
}
