//! Graph → ONNX: writes a standard ONNX model (opset [`EXPORT_OPSET`]) with the network's
//! weights as initializers, so that any ONNX runtime (ONNX Runtime, tract, …) runs the
//! very network cnnbench benchmarks, with the same weights.
//!
//! One exporter per IR op (see [`ops`]), mirroring the importer's registry: every op
//! either exports or fails with an error that names the node and the op. The patterns
//! an op becomes (GELU's `Div → Erf → Add → Mul → Mul`, LayerNorm2d's
//! `Transpose → LayerNormalization → Transpose`, …) are those PyTorch's exporter emits,
//! and the importer folds them back, so `import(export(g))` has `g`'s parameters, MACs
//! and shapes. Values are named after the IR nodes, initializers `<node>.<tensor>` as
//! the weights are keyed; the batch dimension is symbolic (`batch`).

mod int8;
mod ops;

pub use int8::{to_onnx_int8, to_onnx_int8_model};

use super::proto::*;
use cnnbench_graph::{Graph, GraphError, Shape, Weights, INPUT_NAME};
use prost::Message;
use thiserror::Error;

/// The ONNX operator set the exported models declare and keep to.
pub const EXPORT_OPSET: i64 = 17;
/// The ONNX IR version that goes with opset 17.
pub const EXPORT_IR_VERSION: i64 = 8;
/// The name of the symbolic batch dimension of the input and output.
pub const BATCH_DIM: &str = "batch";

/// Why a graph cannot be written as ONNX.
#[derive(Debug, Error)]
pub enum ExportError {
    /// An op (with these settings) has no ONNX equivalent.
    #[error("node \"{node}\" ({op}): {message}")]
    Unsupported {
        node: String,
        op: String,
        message: String,
    },
    /// The weights do not fit the graph.
    #[error("the weights do not fit the graph: {0}")]
    Weights(#[from] GraphError),
}

/// Writes `graph` with `weights` (every tensor of the graph, PyTorch's layout) as an
/// encoded ONNX model, ready to save as a `.onnx` file.
pub fn to_onnx(graph: &Graph, weights: &Weights) -> Result<Vec<u8>, ExportError> {
    Ok(to_onnx_model(graph, weights)?.encode_to_vec())
}

/// The network an engine runs: the float export, or with activation ranges the int8 QDQ
/// one ([`to_onnx_int8`]).
pub fn to_onnx_as(
    graph: &Graph,
    weights: &Weights,
    int8_ranges: Option<&cnnbench_graph::quant::ActivationRanges>,
) -> Result<Vec<u8>, ExportError> {
    match int8_ranges {
        Some(ranges) => to_onnx_int8(graph, weights, ranges),
        None => to_onnx(graph, weights),
    }
}

/// The ONNX model of `graph` with `weights`, for callers that add to it before encoding.
pub fn to_onnx_model(graph: &Graph, weights: &Weights) -> Result<ModelProto, ExportError> {
    weights.check(graph, true)?;
    let mut emit = Emitter::new(weights);
    for node in graph.nodes() {
        let inputs: Vec<String> = node
            .inputs
            .iter()
            .map(|&s| graph.source_name(s).to_string())
            .collect();
        let input_shapes: Vec<Shape> = node
            .inputs
            .iter()
            .map(|&s| graph.source_shape(s).clone())
            .collect();
        let site = Site {
            name: &node.name,
            op: &node.op,
            inputs: &inputs,
            input_shapes: &input_shapes,
            shape: &node.shape,
        };
        ops::export(&mut emit, &site)?;
    }
    let [c, h, w] = graph.input_shape();
    let output = graph.nodes()[graph.output_index()].name.clone();
    let mut output_dims = vec![None];
    output_dims.extend(graph.output_shape().0.iter().map(|&d| Some(d as i64)));
    let model = ModelProto {
        ir_version: EXPORT_IR_VERSION,
        producer_name: "cnnbench".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        graph: Some(GraphProto {
            node: emit.nodes,
            name: graph.name().to_string(),
            initializer: emit.initializers,
            input: vec![value_info(
                INPUT_NAME,
                &[None, Some(c as i64), Some(h as i64), Some(w as i64)],
            )],
            output: vec![value_info(&output, &output_dims)],
        }),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: EXPORT_OPSET,
        }],
    };
    Ok(model)
}

/// A float tensor's type with these dimensions (`None`: the symbolic batch).
fn value_info(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.to_string(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: DATA_FLOAT,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| DimensionProto {
                            dim_value: *d,
                            dim_param: d.is_none().then(|| BATCH_DIM.to_string()),
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

/// One IR node as its exporter sees it.
pub(crate) struct Site<'a> {
    /// The node's name: the name of its ONNX node (or of the first node of its pattern)
    /// and of the value it produces.
    pub(crate) name: &'a str,
    pub(crate) op: &'a cnnbench_graph::Op,
    /// The names of the values it reads.
    pub(crate) inputs: &'a [String],
    /// Their shapes (one example, no batch).
    pub(crate) input_shapes: &'a [Shape],
    /// The node's output shape (one example).
    pub(crate) shape: &'a Shape,
}

impl Site<'_> {
    /// The error for settings of this node that ONNX cannot express.
    pub(crate) fn unsupported(&self, message: impl Into<String>) -> ExportError {
        ExportError::Unsupported {
            node: self.name.to_string(),
            op: self.op.describe(),
            message: message.into(),
        }
    }
    /// A name derived from the node's for a helper value or node (`<node>/<what>`).
    pub(crate) fn sub(&self, what: &str) -> String {
        format!("{}/{what}", self.name)
    }
}

/// Collects the ONNX nodes and initializers while the graph is walked.
pub(crate) struct Emitter<'w> {
    weights: &'w Weights,
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
}

impl<'w> Emitter<'w> {
    fn new(weights: &'w Weights) -> Self {
        Self {
            weights,
            nodes: Vec::new(),
            initializers: Vec::new(),
        }
    }

    /// Adds a node of the default domain.
    pub(crate) fn node(
        &mut self,
        op_type: &str,
        name: &str,
        inputs: &[&str],
        output: &str,
        attributes: Vec<AttributeProto>,
    ) {
        self.nodes.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![output.to_string()],
            name: name.to_string(),
            op_type: op_type.to_string(),
            attribute: attributes,
            domain: String::new(),
        });
    }

    /// Adds the weight `<node>.<tensor>` as an initializer of that name (with `dims`
    /// instead of its own shape when given, e.g. a per-channel scale as C×1×1) and
    /// returns the name.
    pub(crate) fn weight(
        &mut self,
        site: &Site,
        tensor: &str,
        dims: Option<Vec<i64>>,
    ) -> Result<String, ExportError> {
        let key = format!("{}.{tensor}", site.name);
        let t = self
            .weights
            .get(&key)
            .ok_or_else(|| site.unsupported(format!("the weights have no tensor \"{key}\"")))?;
        let dims = dims.unwrap_or_else(|| t.shape.iter().map(|&d| d as i64).collect());
        self.initializers.push(float_tensor(&key, dims, &t.data));
        Ok(key)
    }

    /// Adds a float constant and returns its name.
    pub(crate) fn floats(&mut self, name: String, dims: Vec<i64>, values: &[f32]) -> String {
        self.initializers.push(float_tensor(&name, dims, values));
        name
    }

    /// Adds a 1-D int64 constant (shapes, axes, slice bounds) and returns its name.
    pub(crate) fn ints(&mut self, name: String, values: &[i64]) -> String {
        self.initializers.push(TensorProto {
            dims: vec![values.len() as i64],
            data_type: DATA_INT64,
            name: name.clone(),
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            ..TensorProto::default()
        });
        name
    }
}

/// A float initializer of these dimensions and values (`raw_data`, little-endian).
pub(crate) fn float_tensor(name: &str, dims: Vec<i64>, values: &[f32]) -> TensorProto {
    TensorProto {
        dims,
        data_type: DATA_FLOAT,
        name: name.to_string(),
        raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ..TensorProto::default()
    }
}

/// Attribute constructors (AttributeProto.AttributeType values of onnx.proto).
pub(crate) mod attr {
    use super::AttributeProto;

    pub(crate) fn int(name: &str, i: i64) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            i,
            r#type: 2,
            ..AttributeProto::default()
        }
    }
    pub(crate) fn float(name: &str, f: f32) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            f,
            r#type: 1,
            ..AttributeProto::default()
        }
    }
    pub(crate) fn ints(name: &str, ints: &[i64]) -> AttributeProto {
        AttributeProto {
            name: name.into(),
            ints: ints.to_vec(),
            r#type: 7,
            ..AttributeProto::default()
        }
    }
}
