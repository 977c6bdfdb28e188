//! The versioned JSON model file (`"format": "cnnbench-model", "version": 1`): the
//! counterpart of the original suite's `.t7` files, written by `cnnbench models --export`
//! and by converters, and short enough to write by hand:
//!
//! ```json
//! {
//!   "format": "cnnbench-model", "version": 1, "name": "tiny", "input": [3, 32, 32],
//!   "nodes": [
//!     {"name": "conv", "op": "conv2d", "inputs": ["input"], "in_channels": 3,
//!      "out_channels": 8, "kernel": 3, "padding": 1},
//!     {"name": "relu", "op": "relu", "inputs": ["conv"]},
//!     {"name": "pool", "op": "adaptive_avg_pool2d", "inputs": ["relu"], "output": 1},
//!     {"name": "flat", "op": "flatten", "inputs": ["pool"]},
//!     {"name": "fc", "op": "linear", "inputs": ["flat"], "in_features": 8, "out_features": 10}
//!   ]
//! }
//! ```
//!
//! `inputs` defaults to the previous node (or the image input for the first node) and
//! `output` to the last node, so a plain chain needs neither.

use crate::error::GraphError;
use crate::graph::{Graph, ModelInfo, NodeSpec, INPUT_NAME};
use crate::ops::{Op, OP_TAGS};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const MODEL_FORMAT: &str = "cnnbench-model";
pub const MODEL_VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    format: String,
    version: u32,
    name: String,
    input: [usize; 3],
    #[serde(default, skip_serializing_if = "is_default_info")]
    info: ModelInfo,
    nodes: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    output: Option<String>,
}

fn is_default_info(info: &ModelInfo) -> bool {
    *info == ModelInfo::default()
}

impl Graph {
    /// The model file as pretty JSON.
    pub fn to_json(&self) -> String {
        let nodes = self
            .specs()
            .into_iter()
            .map(|spec| {
                let mut obj = Map::new();
                obj.insert("name".into(), Value::String(spec.name));
                if let Ok(Value::Object(fields)) = serde_json::to_value(&spec.op) {
                    if let Some(tag) = fields.get("op") {
                        obj.insert("op".into(), tag.clone());
                    }
                    obj.insert(
                        "inputs".into(),
                        Value::Array(spec.inputs.into_iter().map(Value::String).collect()),
                    );
                    for (k, v) in fields {
                        if k != "op" {
                            obj.insert(k, v);
                        }
                    }
                }
                Value::Object(obj)
            })
            .collect();
        let file = ModelFile {
            format: MODEL_FORMAT.into(),
            version: MODEL_VERSION,
            name: self.name().to_string(),
            input: self.input_shape(),
            info: self.info().clone(),
            nodes,
            output: Some(self.nodes()[self.output_index()].name.clone()),
        };
        // Serialising plain data into a string cannot fail.
        serde_json::to_string_pretty(&file).unwrap_or_default()
    }

    /// Parses and validates a model file. Every problem is reported with the node it
    /// concerns; nothing panics on any input.
    pub fn from_json(text: &str) -> Result<Graph, GraphError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| GraphError::File(format!("not valid JSON: {e}")))?;
        match value.get("format").and_then(Value::as_str) {
            Some(MODEL_FORMAT) => {}
            Some(other) => {
                return Err(GraphError::File(format!(
                    "\"format\" is \"{other}\", expected \"{MODEL_FORMAT}\""
                )))
            }
            None => {
                return Err(GraphError::File(format!(
                    "no \"format\": \"{MODEL_FORMAT}\" field; is this a cnnbench model file?"
                )))
            }
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(v) if v == u64::from(MODEL_VERSION) => {}
            Some(v) => {
                return Err(GraphError::File(format!(
                    "version {v} is not supported; this cnnbench reads version {MODEL_VERSION}"
                )))
            }
            None => return Err(GraphError::File("missing \"version\"".into())),
        }
        let file: ModelFile =
            serde_json::from_value(value).map_err(|e| GraphError::File(e.to_string()))?;
        let mut specs = Vec::with_capacity(file.nodes.len());
        for (i, node) in file.nodes.into_iter().enumerate() {
            let previous = specs
                .last()
                .map(|s: &NodeSpec| s.name.clone())
                .unwrap_or_else(|| INPUT_NAME.to_string());
            specs.push(parse_node(i, node, previous)?);
        }
        Graph::new(
            file.name,
            file.input,
            specs,
            file.output.as_deref(),
            file.info,
        )
    }
}

fn parse_node(index: usize, node: Value, previous: String) -> Result<NodeSpec, GraphError> {
    let Value::Object(mut fields) = node else {
        return Err(GraphError::File(format!(
            "node #{index} is not a JSON object"
        )));
    };
    let name = match fields.remove("name") {
        Some(Value::String(s)) => s,
        Some(_) => {
            return Err(GraphError::File(format!(
                "node #{index}: \"name\" must be a string"
            )))
        }
        None => return Err(GraphError::File(format!("node #{index} has no \"name\""))),
    };
    let inputs = match fields.remove("inputs") {
        None => vec![previous],
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => Ok(s),
                _ => Err(GraphError::node(
                    &name,
                    "\"inputs\" must be a list of node names",
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(GraphError::node(
                &name,
                "\"inputs\" must be a list of node names",
            ))
        }
    };
    let tag = match fields.get("op") {
        Some(Value::String(t)) => t.clone(),
        _ => {
            return Err(GraphError::node(
                &name,
                format!("has no \"op\"; supported ops: {}", OP_TAGS.join(", ")),
            ))
        }
    };
    if !OP_TAGS.contains(&tag.as_str()) {
        return Err(GraphError::node(
            &name,
            format!(
                "has unknown op \"{tag}\"; supported ops: {}",
                OP_TAGS.join(", ")
            ),
        ));
    }
    let op: Op = serde_json::from_value(Value::Object(fields))
        .map_err(|e| GraphError::node(&name, format!("({tag}) {e}")))?;
    Ok(NodeSpec { name, op, inputs })
}
