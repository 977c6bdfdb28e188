//! Hand-built ONNX models, shared by the ONNX import tests: what PyTorch does not emit
//! is written here as protobuf messages.
#![allow(dead_code)] // each test binary uses its own subset

use cnnbench_import::onnx::*;
use prost::Message;

/// A float tensor's type with these dimensions (`None`: the symbolic batch `N`).
pub fn value_info(name: &str, dims: &[Option<i64>]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type: DATA_FLOAT,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|d| DimensionProto {
                            dim_value: *d,
                            dim_param: if d.is_none() { Some("N".into()) } else { None },
                        })
                        .collect(),
                }),
            }),
        }),
    }
}

/// A model of `nodes` and `initializers` at `opset`, reading `x` of shape `input` and
/// giving `output`, as encoded bytes.
pub fn model(
    nodes: Vec<NodeProto>,
    initializers: Vec<TensorProto>,
    input: &[Option<i64>],
    output: &str,
    opset: i64,
) -> Vec<u8> {
    ModelProto {
        ir_version: 8,
        producer_name: "cnnbench-tests".into(),
        producer_version: "1".into(),
        graph: Some(GraphProto {
            node: nodes,
            name: "hand".into(),
            initializer: initializers,
            input: vec![value_info("x", input)],
            output: vec![value_info(output, &[])],
        }),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
    }
    .encode_to_vec()
}
