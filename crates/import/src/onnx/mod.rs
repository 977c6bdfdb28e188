//! ONNX → Graph. Reads a `ModelProto` (prost decodes it), maps the operators classic and
//! modern CNNs use onto IR ops, and folds the small constant subgraphs exporters emit to
//! compute shapes (`Shape → Gather → Unsqueeze → Concat → Reshape` for a flatten).
//!
//! An int8 network in QDQ form (`QuantizeLinear → DequantizeLinear` around float
//! operators, as `cnnbench convert --precision int8` and ONNX Runtime's `quantize_static`
//! write it) is read as the float network it approximates: see `ops/quant.rs`.
//!
//! [`from_onnx`] reads shapes only and never opens external-data files;
//! [`from_onnx_with_weights`] also keeps the float weights the file carries, in PyTorch's
//! layout keyed `<node>.<tensor>`, and says in notes what it could not keep.

pub mod export;
mod node;
mod ops;
mod proto;
mod weights;

pub use proto::*;
pub use weights::MAX_EXTERNAL_DATA_BYTES;

use crate::{ImportError, Imported};
use cnnbench_graph::{Graph, GraphBuilder, ModelInfo, T};
use node::Node;
use ops::{Ctx, Output};
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use weights::WeightUse;

/// Larger files are refused before decoding (weights inline can make real models large,
/// but not this large).
pub const MAX_MODEL_BYTES: usize = 2 << 30;

/// The operators this converter maps (as error messages list them; from the registry of
/// converters in `ops`).
pub const SUPPORTED_OPS: &[&str] = &ops::SUPPORTED;

/// What a value name stands for while converting.
#[derive(Clone, Debug)]
enum Val {
    /// A tensor of the network (batch × …).
    Tensor(T),
    /// A small integer vector known at conversion time; `None` entries are the batch size.
    Ints(Vec<Option<i64>>),
}

/// A constant tensor: an initializer or a `Constant` node's value.
#[derive(Clone, Debug, Default)]
struct Const {
    dims: Vec<i64>,
    ints: Vec<i64>,
    floats: Vec<f32>,
    /// TensorProto.data_type (DATA_FLOAT or DATA_INT64 for attribute values).
    data_type: i32,
    /// The `external_data` entries (location, offset, length) when the values live in
    /// another file.
    external: Option<Vec<StringStringEntryProto>>,
    /// The little-endian bytes of a small-integer tensor (INT8, UINT8, INT16, UINT16 in
    /// `raw_data`), kept as stored and decoded only when a `DequantizeLinear` reads them:
    /// an int8 network's weights would take eight times their size as `ints`.
    raw: Vec<u8>,
    /// Why the values cannot be had although the shape is known (a dequantised constant
    /// whose integers are in an external file): the weights' note says it.
    unreadable: Option<String>,
}

/// A float tensor's values, stored as `raw_data` (little-endian) or as `float_data`.
pub(crate) fn f32_values(t: &TensorProto) -> Vec<f32> {
    if t.raw_data.is_empty() {
        t.float_data.clone()
    } else {
        t.raw_data
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }
}

fn read_const(t: &TensorProto) -> Const {
    let mut c = Const {
        dims: t.dims.clone(),
        data_type: t.data_type,
        external: (t.data_location == LOCATION_EXTERNAL).then(|| t.external_data.clone()),
        ..Const::default()
    };
    match t.data_type {
        DATA_FLOAT => c.floats = f32_values(t),
        DATA_INT64 => {
            c.ints = if t.raw_data.is_empty() {
                t.int64_data.clone()
            } else {
                t.raw_data
                    .chunks_exact(8)
                    .map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                    .collect()
            }
        }
        DATA_INT8 | DATA_UINT8 | DATA_INT16 | DATA_UINT16 => {
            // ONNX stores these types either as raw bytes or one per int32_data entry.
            if t.raw_data.is_empty() {
                c.ints = t.int32_data.iter().map(|&v| v as i64).collect();
            } else {
                c.raw = t.raw_data.clone();
            }
        }
        DATA_INT32 => {
            c.ints = if t.raw_data.is_empty() {
                t.int32_data.iter().map(|&v| v as i64).collect()
            } else {
                t.raw_data
                    .chunks_exact(4)
                    .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64)
                    .collect()
            }
        }
        _ => {}
    }
    c
}

/// Converts an ONNX model (the bytes of a `.onnx` file): the network's structure only;
/// weight values are not read and external-data files are never opened.
pub fn from_onnx(bytes: &[u8], fallback_name: &str) -> Result<Graph, ImportError> {
    convert(bytes, fallback_name).map(|c| c.graph)
}

/// Converts an ONNX model and keeps the float weights it carries, in PyTorch's layout
/// keyed `<node>.<tensor>` (Gemm's B with transB = 0 and MatMul's B are transposed to
/// Linear's [out, in]; a MatMul's bias Add becomes the Linear's bias). Values stored in
/// external-data files are read from `external_dir` (the model's folder) when the file is
/// there, within it and within [`MAX_EXTERNAL_DATA_BYTES`]. What cannot be kept (a
/// missing external file, another data type than FLOAT, a tensor that does not fit its
/// layer) is left out with a note: the weights may then be partial, never wrong.
pub fn from_onnx_with_weights(
    bytes: &[u8],
    fallback_name: &str,
    external_dir: Option<&Path>,
) -> Result<Imported, ImportError> {
    let Converted {
        graph,
        uses,
        consts,
        mut notes,
    } = convert(bytes, fallback_name)?;
    let (weights, weight_notes) = weights::collect(&graph, &uses, consts, external_dir);
    notes.extend(weight_notes);
    weights.check(&graph, false)?;
    Ok(Imported {
        graph,
        weights,
        notes,
    })
}

/// A converted model with what its weights need: which constant feeds which tensor.
struct Converted {
    graph: Graph,
    uses: Vec<WeightUse>,
    consts: HashMap<String, Const>,
    /// What the conversion itself says (an int8 QDQ model read as float).
    notes: Vec<String>,
}

fn convert(bytes: &[u8], fallback_name: &str) -> Result<Converted, ImportError> {
    let model = ModelProto::decode(bytes).map_err(|e| {
        ImportError::Unsupported(format!(
            "not a valid ONNX model (protobuf decoding failed: {e})"
        ))
    })?;
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| ImportError::Unsupported("the ONNX model has no graph".into()))?;
    let opset = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map_or(1, |o| o.version);

    let consts: HashMap<String, Const> = graph
        .initializer
        .iter()
        .map(|t| (t.name.clone(), read_const(t)))
        .collect();
    let image_inputs: Vec<&ValueInfoProto> = graph
        .input
        .iter()
        .filter(|i| !consts.contains_key(&i.name))
        .collect();
    let [image] = image_inputs.as_slice() else {
        return Err(ImportError::Unsupported(format!(
            "the model has {} non-constant inputs; cnnbench benchmarks networks with one image input",
            image_inputs.len()
        )));
    };
    let dims: Vec<Option<i64>> = image
        .r#type
        .as_ref()
        .and_then(|t| t.tensor_type.as_ref())
        .and_then(|t| t.shape.as_ref())
        .map(|s| s.dim.iter().map(|d| d.dim_value).collect())
        .unwrap_or_default();
    let export_batch = dims.first().copied().flatten();
    let input = match dims.as_slice() {
        [_, Some(c), Some(h), Some(w)] if *c > 0 && *h > 0 && *w > 0 => {
            [*c as usize, *h as usize, *w as usize]
        }
        _ => {
            return Err(ImportError::Unsupported(format!(
                "input \"{}\" must be N×C×H×W with fixed C, H and W; got {dims:?} (export with a fixed image size)",
                image.name
            )))
        }
    };
    let name = if graph.name.is_empty() || graph.name == "main_graph" || graph.name == "main" {
        fallback_name.to_string()
    } else {
        graph.name.clone()
    };
    let info = ModelInfo {
        source: Some(format!(
            "ONNX (producer {} {}, opset {opset})",
            if model.producer_name.is_empty() {
                "unknown"
            } else {
                &model.producer_name
            },
            model.producer_version
        )),
        ..ModelInfo::default()
    };
    let builder = GraphBuilder::new(name, input).info(info);
    let mut vals: HashMap<String, Val> = HashMap::new();
    vals.insert(image.name.clone(), Val::Tensor(builder.input()));

    // Who reads each value: a MatMul followed by a bias Add folds into one Linear.
    let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
    // Who produces each value: a quantisation's reader looks back at what it quantises.
    let mut producers: HashMap<&str, usize> = HashMap::new();
    for (i, n) in graph.node.iter().enumerate() {
        for input in &n.input {
            readers.entry(input.as_str()).or_default().push(i);
        }
        for output in n.output.iter().filter(|o| !o.is_empty()) {
            producers.entry(output.as_str()).or_insert(i);
        }
    }
    let mut ctx = Ctx {
        graph,
        opset,
        export_batch,
        builder,
        vals,
        consts,
        uses: Vec::new(),
        readers,
        producers,
        outputs: graph.output.iter().map(|o| o.name.as_str()).collect(),
        skip: HashSet::new(),
        names: HashSet::new(),
        qdq: ops::QdqCounts::default(),
    };

    for (index, proto) in graph.node.iter().enumerate() {
        if ctx.skip.contains(&index) {
            continue;
        }
        if !(proto.domain.is_empty() || proto.domain == "ai.onnx") {
            return Err(ImportError::Layer {
                layer: proto.name.clone(),
                kind: proto.op_type.clone(),
                message: format!("operators of domain \"{}\" are not supported", proto.domain),
            });
        }
        let mut name = if proto.name.is_empty() {
            format!("{}_{index}", proto.op_type)
        } else {
            proto.name.trim_start_matches('/').to_string()
        };
        if name == cnnbench_graph::INPUT_NAME || ctx.names.contains(&name) {
            name = format!("{name}#{index}");
        }
        ctx.names.insert(name.clone());
        let node = Node {
            proto,
            name,
            output: proto.output.first().cloned().unwrap_or_default(),
        };
        let convert = ops::converter(&proto.op_type).ok_or_else(|| ops::unsupported(&node))?;
        match convert(&mut ctx, &node)? {
            Output::Value(v) => {
                ctx.vals.insert(node.output, v);
            }
            Output::Constant(c) => {
                ctx.consts.insert(node.output, c);
            }
        }
    }
    let output_name = graph
        .output
        .first()
        .map(|o| o.name.clone())
        .ok_or_else(|| ImportError::Unsupported("the graph has no output".into()))?;
    let Ctx {
        builder,
        vals,
        uses,
        consts,
        qdq,
        ..
    } = ctx;
    match vals.get(&output_name) {
        Some(Val::Tensor(t)) => Ok(Converted {
            graph: builder.finish(&t.clone())?,
            uses,
            consts,
            notes: qdq.note().into_iter().collect(),
        }),
        _ => Err(ImportError::Unsupported(format!(
            "the graph output \"{output_name}\" is not produced by a supported node"
        ))),
    }
}
