//! ONNX → Graph. Reads a `ModelProto` (prost decodes it), maps the operators classic and
//! modern CNNs use onto IR ops, and folds the small constant subgraphs exporters emit to
//! compute shapes (`Shape → Gather → Unsqueeze → Concat → Reshape` for a flatten).
//!
//! [`from_onnx`] reads shapes only and never opens external-data files;
//! [`from_onnx_with_weights`] also keeps the float weights the file carries, in PyTorch's
//! layout keyed `<node>.<tensor>`, and says in notes what it could not keep.

mod proto;
mod weights;

pub use proto::*;
pub use weights::MAX_EXTERNAL_DATA_BYTES;

use crate::{ImportError, Imported};
use cnnbench_graph::ops::*;
use cnnbench_graph::{Activation, Graph, GraphBuilder, Hw, ModelInfo, Pad2d, T};
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use weights::{Layout, WeightUse};

/// Larger files are refused before decoding (weights inline can make real models large,
/// but not this large).
pub const MAX_MODEL_BYTES: usize = 2 << 30;

/// The operators this converter maps.
pub const SUPPORTED_OPS: &[&str] = &[
    "Conv",
    "BatchNormalization",
    "Relu",
    "Clip",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "Mul",
    "Add",
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "ReduceMean",
    "Gemm",
    "MatMul (+ Add)",
    "Flatten",
    "Reshape (flattening)",
    "Concat",
    "LRN",
    "Dropout",
    "Identity",
    "Softmax (at the output)",
    "Constant",
    "Shape",
    "Gather",
    "Unsqueeze",
];

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
}

fn read_const(t: &TensorProto) -> Const {
    let mut c = Const {
        dims: t.dims.clone(),
        data_type: t.data_type,
        external: (t.data_location == LOCATION_EXTERNAL).then(|| t.external_data.clone()),
        ..Const::default()
    };
    match t.data_type {
        DATA_FLOAT => {
            c.floats = if t.raw_data.is_empty() {
                t.float_data.clone()
            } else {
                t.raw_data
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect()
            }
        }
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

struct Node<'a> {
    proto: &'a NodeProto,
    name: String,
}

impl Node<'_> {
    fn error(&self, message: impl Into<String>) -> ImportError {
        ImportError::Layer {
            layer: self.name.clone(),
            kind: self.proto.op_type.clone(),
            message: message.into(),
        }
    }
    fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name == name)
    }
    fn int(&self, name: &str, default: i64) -> i64 {
        self.attr(name).map_or(default, |a| a.i)
    }
    fn float(&self, name: &str, default: f32) -> f32 {
        self.attr(name).map_or(default, |a| a.f)
    }
    fn ints(&self, name: &str) -> Vec<i64> {
        self.attr(name).map(|a| a.ints.clone()).unwrap_or_default()
    }
    fn string(&self, name: &str) -> Option<String> {
        self.attr(name)
            .map(|a| String::from_utf8_lossy(&a.s).to_string())
    }
    /// A 2-D attribute such as kernel_shape or strides.
    fn hw(&self, name: &str, default: usize) -> Result<Hw, ImportError> {
        match self.ints(name).as_slice() {
            [] => Ok(Hw::square(default)),
            [h, w] => Ok(Hw::new(
                to_usize(self, name, *h)?,
                to_usize(self, name, *w)?,
            )),
            other => Err(self.error(format!(
                "{name} has {} values; only 2-D is supported",
                other.len()
            ))),
        }
    }
}

fn to_usize(node: &Node, what: &str, v: i64) -> Result<usize, ImportError> {
    usize::try_from(v).map_err(|_| node.error(format!("{what} value {v} is negative")))
}

/// ONNX pads are `[top, left, bottom, right]`; `auto_pad` SAME_* computes them.
fn padding(node: &Node, x: &T, kernel: Hw, stride: Hw, dilation: Hw) -> Result<Pad2d, ImportError> {
    let auto = node.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    match auto.as_str() {
        "NOTSET" | "" => match node.ints("pads").as_slice() {
            [] => Ok(Pad2d::default()),
            [t, l, b, r] => Ok(Pad2d {
                top: to_usize(node, "pads", *t)?,
                left: to_usize(node, "pads", *l)?,
                bottom: to_usize(node, "pads", *b)?,
                right: to_usize(node, "pads", *r)?,
            }),
            other => Err(node.error(format!("pads has {} values; expected 4", other.len()))),
        },
        "VALID" => Ok(Pad2d::default()),
        "SAME_UPPER" | "SAME_LOWER" => {
            let (_, h, w) = x
                .shape()
                .as_chw()
                .ok_or_else(|| node.error("needs a feature map"))?;
            let total = |size: usize, k: usize, s: usize, d: usize| {
                let out = size.div_ceil(s.max(1));
                (out.saturating_sub(1))
                    .saturating_mul(s)
                    .saturating_add(k.saturating_sub(1).saturating_mul(d))
                    .saturating_add(1)
                    .saturating_sub(size)
            };
            let (th, tw) = (
                total(h, kernel.h, stride.h, dilation.h),
                total(w, kernel.w, stride.w, dilation.w),
            );
            let split = |t: usize| {
                if auto == "SAME_UPPER" {
                    (t / 2, t - t / 2)
                } else {
                    (t - t / 2, t / 2)
                }
            };
            let ((top, bottom), (left, right)) = (split(th), split(tw));
            Ok(Pad2d {
                top,
                left,
                bottom,
                right,
            })
        }
        other => Err(node.error(format!("auto_pad {other} is not supported"))),
    }
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
    } = convert(bytes, fallback_name)?;
    let (weights, notes) = weights::collect(&graph, &uses, consts, external_dir);
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

    let mut consts: HashMap<String, Const> = graph
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
        [_, Some(c), Some(h), Some(w)] if *c > 0 && *h > 0 && *w > 0 => [*c as usize, *h as usize, *w as usize],
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
    let mut b = GraphBuilder::new(name, input).info(info);
    let mut vals: HashMap<String, Val> = HashMap::new();
    vals.insert(image.name.clone(), Val::Tensor(b.input()));

    // Who reads each value: a MatMul followed by a bias Add folds into one Linear.
    let mut readers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, n) in graph.node.iter().enumerate() {
        for input in &n.input {
            readers.entry(input.as_str()).or_default().push(i);
        }
    }
    let outputs: HashSet<&str> = graph.output.iter().map(|o| o.name.as_str()).collect();
    let mut used_names: HashSet<String> = HashSet::new();
    let mut skip: HashSet<usize> = HashSet::new();
    // Which constant feeds which weight tensor of which lowered node.
    let mut uses: Vec<WeightUse> = Vec::new();

    for (index, proto) in graph.node.iter().enumerate() {
        if skip.contains(&index) {
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
        if name == cnnbench_graph::INPUT_NAME || used_names.contains(&name) {
            name = format!("{name}#{index}");
        }
        used_names.insert(name.clone());
        let node = Node {
            proto,
            name: name.clone(),
        };
        let out_name = proto.output.first().cloned().unwrap_or_default();
        let tensor = |i: usize| -> Result<T, ImportError> {
            let input = proto
                .input
                .get(i)
                .ok_or_else(|| node.error(format!("has no input {i}")))?;
            match vals.get(input) {
                Some(Val::Tensor(t)) => Ok(t.clone()),
                Some(Val::Ints(_)) => Err(node.error(format!("input \"{input}\" is a shape, not a tensor"))),
                None if consts.contains_key(input) => Err(node.error(format!(
                    "input \"{input}\" is a constant; constant operands are only supported as weights"
                ))),
                None => Err(node.error(format!("reads \"{input}\", which no earlier node produces"))),
            }
        };
        let weight =
            |i: usize| -> Option<&Const> { proto.input.get(i).and_then(|n| consts.get(n)) };
        let has_input = |i: usize| proto.input.get(i).is_some_and(|n| !n.is_empty());

        let result: Val = match proto.op_type.as_str() {
            "Constant" => {
                let value = node
                    .attr("value")
                    .and_then(|a| a.t.as_ref())
                    .map(read_const)
                    .or_else(|| {
                        node.attr("value_ints").map(|a| Const {
                            dims: vec![a.ints.len() as i64],
                            ints: a.ints.clone(),
                            data_type: DATA_INT64,
                            ..Const::default()
                        })
                    })
                    .or_else(|| {
                        node.attr("value_int").map(|a| Const {
                            ints: vec![a.i],
                            data_type: DATA_INT64,
                            ..Const::default()
                        })
                    })
                    .or_else(|| {
                        node.attr("value_float").map(|a| Const {
                            floats: vec![a.f],
                            data_type: DATA_FLOAT,
                            ..Const::default()
                        })
                    })
                    .ok_or_else(|| node.error("has no supported value attribute"))?;
                consts.insert(out_name.clone(), value);
                continue;
            }
            "Identity" | "Dropout" => {
                let input = proto
                    .input
                    .first()
                    .ok_or_else(|| node.error("has no input"))?;
                if let Some(c) = consts.get(input).cloned() {
                    consts.insert(out_name.clone(), c);
                    continue;
                }
                let x = tensor(0)?;
                if proto.op_type == "Dropout" {
                    let p = weight(1)
                        .and_then(|c| c.floats.first().copied())
                        .unwrap_or_else(|| node.float("ratio", 0.5));
                    Val::Tensor(b.dropout(name, &x, p as f64))
                } else {
                    Val::Tensor(x)
                }
            }
            "Conv" => {
                let x = tensor(0)?;
                let w =
                    weight(1).ok_or_else(|| node.error("its weight W is not an initializer"))?;
                let [out_channels, _, kh, kw] = w.dims.as_slice() else {
                    return Err(node.error(format!(
                        "weight has shape {:?}; only 2-D convolutions are supported",
                        w.dims
                    )));
                };
                let kernel = match node.hw("kernel_shape", 0)? {
                    k if k.h == 0 => {
                        Hw::new(to_usize(&node, "W", *kh)?, to_usize(&node, "W", *kw)?)
                    }
                    k => k,
                };
                let stride = node.hw("strides", 1)?;
                let dilation = node.hw("dilations", 1)?;
                let pad = padding(&node, &x, kernel, stride, dilation)?;
                let conv = Conv2d::new(to_usize(&node, "W", *out_channels)?, kernel)
                    .stride(stride)
                    .dilation(dilation)
                    .padding(pad)
                    .groups(to_usize(&node, "group", node.int("group", 1))?)
                    .bias(has_input(2));
                uses.extend(WeightUse::inputs(
                    &name,
                    proto,
                    &[(1, "weight", Layout::AsIs), (2, "bias", Layout::Vector)],
                ));
                Val::Tensor(b.conv(name, &x, conv))
            }
            "BatchNormalization" => {
                let x = tensor(0)?;
                let mut bn = BatchNorm2d::new(x.channels());
                bn.eps = node.float("epsilon", 1e-5) as f64;
                bn.momentum = 1.0 - node.float("momentum", 0.9) as f64;
                uses.extend(WeightUse::inputs(
                    &name,
                    proto,
                    &[
                        (1, "weight", Layout::Vector),
                        (2, "bias", Layout::Vector),
                        (3, "running_mean", Layout::Vector),
                        (4, "running_var", Layout::Vector),
                    ],
                ));
                Val::Tensor(b.add(name, Op::BatchNorm2d(bn), &[&x]))
            }
            "Relu" => Val::Tensor(b.relu(name, &tensor(0)?)),
            "Sigmoid" => Val::Tensor(b.add(name, Op::Activation(Activation::Sigmoid), &[&tensor(0)?])),
            "HardSwish" => Val::Tensor(b.add(name, Op::Activation(Activation::Hardswish), &[&tensor(0)?])),
            "HardSigmoid" => {
                let (alpha, beta) = (node.float("alpha", 0.2), node.float("beta", 0.5));
                if (alpha - 1.0 / 6.0).abs() > 1e-4 || (beta - 0.5).abs() > 1e-6 {
                    return Err(node.error(format!(
                        "alpha {alpha}, beta {beta}: only PyTorch's hardsigmoid (alpha 1/6, beta 0.5) is supported"
                    )));
                }
                Val::Tensor(b.add(name, Op::Activation(Activation::Hardsigmoid), &[&tensor(0)?]))
            }
            "Clip" => {
                let bound = |i: usize, attr: &str| -> Option<f32> {
                    if opset >= 11 {
                        weight(i).and_then(|c| c.floats.first().copied())
                    } else {
                        node.attr(attr).map(|a| a.f)
                    }
                };
                let (lo, hi) = (bound(1, "min"), bound(2, "max"));
                let x = tensor(0)?;
                match (lo, hi) {
                    (Some(l), Some(h)) if l == 0.0 && h == 6.0 => Val::Tensor(b.relu6(name, &x)),
                    (Some(0.0), None) => Val::Tensor(b.relu(name, &x)),
                    _ => return Err(node.error(format!("clip to [{lo:?}, {hi:?}] is not supported; only ReLU ([0, ∞)) and ReLU6 ([0, 6])"))),
                }
            }
            "Mul" | "Add" | "Sum" => {
                let a = tensor(0)?;
                let c = tensor(1).map_err(|e| match e {
                    ImportError::Layer { message, .. } if message.contains("constant") => node.error(format!(
                        "{} with a constant operand is not supported (only between two tensors, or as a MatMul's bias)",
                        proto.op_type
                    )),
                    other => other,
                })?;
                let op = if proto.op_type == "Mul" {
                    Op::Mul(NoParams {})
                } else {
                    Op::Add(NoParams {})
                };
                // The smaller operand (a squeeze-excitation gate) goes second.
                let (first, second) = if a.shape().elements() >= c.shape().elements() {
                    (a, c)
                } else {
                    (c, a)
                };
                Val::Tensor(b.add(name, op, &[&first, &second]))
            }
            "MaxPool" | "AveragePool" => {
                let x = tensor(0)?;
                let kernel = node.hw("kernel_shape", 0)?;
                let stride = node.hw("strides", 1)?;
                if node.ints("dilations").iter().any(|&d| d != 1) {
                    return Err(node.error("dilated pooling is not supported"));
                }
                let pad = padding(&node, &x, kernel, stride, Hw::square(1))?;
                let ceil = node.int("ceil_mode", 0) != 0;
                if proto.op_type == "MaxPool" {
                    Val::Tensor(b.max_pool(
                        name,
                        &x,
                        MaxPool2d::new(kernel, stride).padding(pad).ceil_mode(ceil),
                    ))
                } else {
                    let mut pool = AvgPool2d::new(kernel, stride);
                    pool.padding = pad;
                    pool.ceil_mode = ceil;
                    pool.count_include_pad = node.int("count_include_pad", 0) != 0;
                    Val::Tensor(b.avg_pool(name, &x, pool))
                }
            }
            "GlobalAveragePool" => Val::Tensor(b.adaptive_avg_pool(name, &tensor(0)?, 1, 1)),
            "ReduceMean" => {
                let x = tensor(0)?;
                let axes = if has_input(1) {
                    weight(1)
                        .map(|c| c.ints.clone())
                        .ok_or_else(|| node.error("axes must be a constant"))?
                } else {
                    node.ints("axes")
                };
                let mut axes: Vec<i64> = axes
                    .iter()
                    .map(|&a| if a < 0 { a + 4 } else { a })
                    .collect();
                axes.sort_unstable();
                if axes != [2, 3] {
                    return Err(node.error(format!(
                        "mean over axes {axes:?}; only the spatial axes [2, 3] are supported"
                    )));
                }
                let pooled = b.adaptive_avg_pool(name.clone(), &x, 1, 1);
                if node.int("keepdims", 1) == 0 {
                    Val::Tensor(b.flatten(format!("{name}.flatten"), &pooled))
                } else {
                    Val::Tensor(pooled)
                }
            }
            "Flatten" => {
                if node.int("axis", 1) != 1 {
                    return Err(node.error("only axis 1 is supported"));
                }
                Val::Tensor(b.flatten(name, &tensor(0)?))
            }
            "Shape" => {
                let x = tensor(0)?;
                let mut dims = vec![None];
                dims.extend(x.shape().0.iter().map(|&d| Some(d as i64)));
                Val::Ints(dims)
            }
            "Gather" => {
                let source = proto.input.first().and_then(|n| vals.get(n)).cloned();
                let Some(Val::Ints(values)) = source else {
                    return Err(node.error("only gathering from a shape is supported"));
                };
                let indices = weight(1)
                    .map(|c| (c.ints.clone(), c.dims.is_empty()))
                    .ok_or_else(|| node.error("indices must be a constant"))?;
                let picked: Vec<Option<i64>> = indices
                    .0
                    .iter()
                    .map(|&i| {
                        let i = if i < 0 { i + values.len() as i64 } else { i };
                        values
                            .get(i as usize)
                            .copied()
                            .ok_or_else(|| node.error(format!("index {i} out of range")))
                    })
                    .collect::<Result<_, _>>()?;
                Val::Ints(picked)
            }
            "Unsqueeze" | "Squeeze" => match proto.input.first().and_then(|n| vals.get(n)).cloned()
            {
                Some(Val::Ints(values)) => Val::Ints(values),
                _ => return Err(node.error("only (un)squeezing shape values is supported")),
            },
            "Concat" => {
                let first = proto.input.first().and_then(|n| {
                    vals.get(n).cloned().or_else(|| {
                        consts
                            .get(n)
                            .map(|c| Val::Ints(c.ints.iter().map(|&v| Some(v)).collect()))
                    })
                });
                match first {
                    Some(Val::Ints(_)) => {
                        let mut all = Vec::new();
                        for n in &proto.input {
                            match (vals.get(n), consts.get(n)) {
                                (Some(Val::Ints(v)), _) => all.extend(v.iter().copied()),
                                (None, Some(c)) => all.extend(c.ints.iter().map(|&v| Some(v))),
                                _ => return Err(node.error("mixes shape values and tensors")),
                            }
                        }
                        Val::Ints(all)
                    }
                    _ => {
                        let axis = node.int("axis", 1);
                        if axis != 1 && axis != -3 {
                            return Err(node.error(format!("concatenation along axis {axis}; only channels (axis 1) are supported")));
                        }
                        let xs: Vec<T> = (0..proto.input.len())
                            .map(&tensor)
                            .collect::<Result<_, _>>()?;
                        let refs: Vec<&T> = xs.iter().collect();
                        Val::Tensor(b.concat(name, &refs))
                    }
                }
            }
            "Reshape" => {
                let x = tensor(0)?;
                let target: Vec<Option<i64>> =
                    match (proto.input.get(1).and_then(|n| vals.get(n)), weight(1)) {
                        (Some(Val::Ints(v)), _) => v.clone(),
                        (_, Some(c)) => c.ints.iter().map(|&v| Some(v)).collect(),
                        _ => {
                            return Err(node
                                .error("the target shape must be computable at conversion time"))
                        }
                    };
                let features = x.shape().elements() as i64;
                // The batch entry: symbolic, 0 (copy), -1 (infer) or the export's batch size.
                let is_batch = |d: &Option<i64>| match d {
                    None | Some(0) => true,
                    Some(-1) => true,
                    Some(n) => Some(*n) == export_batch,
                };
                let flattens = match target.as_slice() {
                    [batch, Some(rest)] => {
                        is_batch(batch)
                            && (*rest == features || (*rest == -1 && *batch != Some(-1)))
                    }
                    _ => false,
                };
                if !flattens {
                    return Err(node.error(format!("reshape to {target:?} is not a flatten; only flattening reshapes are supported")));
                }
                Val::Tensor(b.flatten(name, &x))
            }
            "Gemm" => {
                let x = tensor(0)?;
                let w =
                    weight(1).ok_or_else(|| node.error("its weight B is not an initializer"))?;
                if node.int("transA", 0) != 0
                    || node.float("alpha", 1.0) != 1.0
                    || node.float("beta", 1.0) != 1.0
                {
                    return Err(node.error(
                        "only Gemm with transA 0, alpha 1 and beta 1 (a linear layer) is supported",
                    ));
                }
                let [d0, d1] = w.dims.as_slice() else {
                    return Err(node.error("weight B is not a matrix"));
                };
                let trans_b = node.int("transB", 0) != 0;
                let out = if trans_b { *d0 } else { *d1 };
                let flat = if x.shape().rank() == 1 {
                    x
                } else {
                    b.flatten(format!("{name}.flatten"), &x)
                };
                let linear = Linear {
                    bias: has_input(2),
                    ..Linear::new(to_usize(&node, "B", out)?)
                };
                // B is [out, in] (Linear's layout) with transB, else [in, out].
                let layout = if trans_b {
                    Layout::AsIs
                } else {
                    Layout::Transpose
                };
                uses.extend(WeightUse::inputs(
                    &name,
                    proto,
                    &[(1, "weight", layout), (2, "bias", Layout::Vector)],
                ));
                Val::Tensor(b.add(name, Op::Linear(linear), &[&flat]))
            }
            "MatMul" => {
                let x = tensor(0)?;
                let w = weight(1)
                    .ok_or_else(|| node.error("its second operand is not an initializer"))?;
                let [_, out] = w.dims.as_slice() else {
                    return Err(node.error("weight is not a matrix"));
                };
                // A following Add of a 1-D constant is this layer's bias.
                let bias_add = readers
                    .get(out_name.as_str())
                    .and_then(|r| match r.as_slice() {
                        [j] if graph.node[*j].op_type == "Add" => {
                            let add = &graph.node[*j];
                            add.input
                                .iter()
                                .find(|n| **n != out_name)
                                .and_then(|n| consts.get(n))
                                .filter(|c| c.dims.len() == 1)
                                .map(|_| *j)
                        }
                        _ => None,
                    });
                let linear = Linear {
                    bias: bias_add.is_some(),
                    ..Linear::new(to_usize(&node, "weight", *out)?)
                };
                // B is [in, out]: Linear's weight is its transpose.
                uses.extend(WeightUse::inputs(
                    &name,
                    proto,
                    &[(1, "weight", Layout::Transpose)],
                ));
                if let Some(j) = bias_add {
                    if let Some(c) = graph.node[j].input.iter().find(|n| **n != out_name) {
                        uses.push(WeightUse::new(&name, "bias", c, Layout::Vector));
                    }
                }
                let y = b.add(name, Op::Linear(linear), &[&x]);
                if let Some(j) = bias_add {
                    skip.insert(j);
                    if let Some(o) = graph.node[j].output.first() {
                        vals.insert(o.clone(), Val::Tensor(y.clone()));
                    }
                }
                Val::Tensor(y)
            }
            "LRN" => {
                let lrn = LocalResponseNorm {
                    size: to_usize(&node, "size", node.int("size", 0))?,
                    alpha: node.float("alpha", 1e-4) as f64,
                    beta: node.float("beta", 0.75) as f64,
                    k: node.float("bias", 1.0) as f64,
                };
                Val::Tensor(b.lrn(name, &tensor(0)?, lrn))
            }
            "Softmax" | "LogSoftmax" if outputs.contains(out_name.as_str()) => {
                // The benchmark's output is the class scores; a final softmax is dropped.
                let x = tensor(0)?;
                vals.insert(out_name, Val::Tensor(x));
                continue;
            }
            other => {
                return Err(node.error(format!(
                    "operator \"{other}\" is not supported; supported: {}",
                    SUPPORTED_OPS.join(", ")
                )))
            }
        };
        vals.insert(out_name, result);
    }
    let output_name = graph
        .output
        .first()
        .map(|o| o.name.clone())
        .ok_or_else(|| ImportError::Unsupported("the graph has no output".into()))?;
    match vals.get(&output_name) {
        Some(Val::Tensor(t)) => Ok(Converted {
            graph: b.finish(&t.clone())?,
            uses,
            consts,
        }),
        _ => Err(ImportError::Unsupported(format!(
            "the graph output \"{output_name}\" is not produced by a supported node"
        ))),
    }
}
