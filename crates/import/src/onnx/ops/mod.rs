//! One converter per ONNX operator (or tight family of operators), all with the same
//! signature, and the registry that maps an `op_type` to its converter. The registry is
//! also the list of supported operators that error messages give.

mod activations;
mod add_mul;
mod batch_norm;
mod concat;
mod constant;
mod conv;
mod div;
mod dropout;
mod gemm;
mod lrn;
mod matmul;
mod pool;
mod quant;
mod reshape;
mod shape;
mod slice;
mod softmax;
mod transpose;

use super::node::Node;
use super::weights::WeightUse;
use super::{Const, GraphProto, Val};
use crate::ImportError;
use cnnbench_graph::{GraphBuilder, T};
use std::collections::{HashMap, HashSet};

pub(super) use quant::QdqCounts;

/// What the converters share while a model is converted.
pub(super) struct Ctx<'m> {
    /// The ONNX graph (a MatMul looks ahead at the Add that reads it).
    pub(super) graph: &'m GraphProto,
    /// The default domain's opset version.
    pub(super) opset: i64,
    /// The batch size the image input was exported with, when fixed.
    pub(super) export_batch: Option<i64>,
    /// The lowered graph so far.
    pub(super) builder: GraphBuilder,
    /// The values computed so far, by ONNX name.
    pub(super) vals: HashMap<String, Val>,
    /// Initializers and `Constant` outputs, by ONNX name.
    pub(super) consts: HashMap<String, Const>,
    /// Which constant feeds which weight tensor of which lowered node.
    pub(super) uses: Vec<WeightUse>,
    /// For each value, the indices of the nodes that read it.
    pub(super) readers: HashMap<&'m str, Vec<usize>>,
    /// For each value, the index of the node that produces it.
    pub(super) producers: HashMap<&'m str, usize>,
    /// The graph's output names.
    pub(super) outputs: HashSet<&'m str>,
    /// Nodes already converted by an earlier one (a bias Add folded into its MatMul).
    pub(super) skip: HashSet<usize>,
    /// The lowered nodes' names given so far (each ONNX node's, and a ReLU put back
    /// after a quantisation), so that a new one is unique.
    pub(super) names: HashSet<String>,
    /// What reading an int8 QDQ model did, for its note.
    pub(super) qdq: QdqCounts,
}

impl Ctx<'_> {
    /// The node's input `i`, which must be a tensor of the network.
    pub(super) fn tensor(&self, node: &Node, i: usize) -> Result<T, ImportError> {
        let input = node
            .proto
            .input
            .get(i)
            .ok_or_else(|| node.error(format!("has no input {i}")))?;
        match self.vals.get(input) {
            Some(Val::Tensor(t)) => Ok(t.clone()),
            Some(Val::Ints(_)) => {
                Err(node.error(format!("input \"{input}\" is a shape, not a tensor")))
            }
            None if self.consts.contains_key(input) => Err(node.error(format!(
                "input \"{input}\" is a constant; constant operands are only supported as weights"
            ))),
            None => Err(node.error(format!("reads \"{input}\", which no earlier node produces"))),
        }
    }

    /// The index of the node that is the only reader of `value`, when it is an `op_type`
    /// (for the converters that fold a pattern of nodes into one IR op).
    pub(super) fn only_reader(&self, value: &str, op_type: &str) -> Option<usize> {
        match self.readers.get(value).map(Vec::as_slice) {
            Some([j])
                if self.graph.node[*j].op_type == op_type && !self.outputs.contains(value) =>
            {
                Some(*j)
            }
            _ => None,
        }
    }

    /// The single float value of a constant named `name` (a scalar or a one-element
    /// tensor).
    pub(super) fn scalar(&self, name: &str) -> Option<f32> {
        self.consts
            .get(name)
            .and_then(|c| match c.floats.as_slice() {
                [v] => Some(*v),
                _ => None,
            })
    }

    /// Marks the nodes `folded` as converted and names their last output `y`.
    pub(super) fn fold(&mut self, folded: &[usize], y: &T) {
        let graph = self.graph;
        for &j in folded {
            self.skip.insert(j);
        }
        if let Some(o) = folded.last().and_then(|&j| graph.node[j].output.first()) {
            self.vals.insert(o.clone(), Val::Tensor(y.clone()));
        }
    }

    /// The node's input `i` when it is a constant (an initializer or a `Constant`).
    pub(super) fn weight(&self, node: &Node, i: usize) -> Option<&Const> {
        node.proto.input.get(i).and_then(|n| self.consts.get(n))
    }

    /// A name for a lowered node that no ONNX node gave (`base` without a leading `/`,
    /// else with `/<what>` and a number added), recorded as taken.
    pub(super) fn fresh_name(&mut self, base: &str, what: &str) -> String {
        let base = base.trim_start_matches('/');
        let taken = |n: &str| n.is_empty() || n == cnnbench_graph::INPUT_NAME;
        let mut name = base.to_string();
        if taken(&name) || self.names.contains(&name) {
            name = format!("{base}/{what}");
        }
        let mut k = 1;
        while taken(&name) || self.names.contains(&name) {
            name = format!("{base}/{what}#{k}");
            k += 1;
        }
        self.names.insert(name.clone());
        name
    }
}

/// What a converter produces for its node's (first) output.
pub(super) enum Output {
    /// A value of the network or a shape computed at conversion time.
    Value(Val),
    /// A constant (a `Constant` node, or an identity of a constant).
    Constant(Const),
}

impl From<T> for Output {
    fn from(t: T) -> Self {
        Output::Value(Val::Tensor(t))
    }
}

/// The signature every converter has.
pub(super) type Convert = fn(&mut Ctx, &Node) -> Result<Output, ImportError>;

/// One registry row: an ONNX `op_type`, how the supported list shows it (`None`: accepted
/// but not listed) and its converter.
struct Entry {
    op_type: &'static str,
    listed_as: Option<&'static str>,
    convert: Convert,
}

const fn op(op_type: &'static str, convert: Convert) -> Entry {
    Entry {
        op_type,
        listed_as: Some(op_type),
        convert,
    }
}

const fn op_listed_as(op_type: &'static str, label: &'static str, convert: Convert) -> Entry {
    Entry {
        op_type,
        listed_as: Some(label),
        convert,
    }
}

const fn op_unlisted(op_type: &'static str, convert: Convert) -> Entry {
    Entry {
        op_type,
        listed_as: None,
        convert,
    }
}

/// Every supported operator, in the order the supported list gives them.
const REGISTRY: &[Entry] = &[
    op("Conv", conv::convert),
    op("BatchNormalization", batch_norm::convert),
    op("Relu", activations::relu),
    op("Clip", activations::clip),
    op("Sigmoid", activations::sigmoid),
    op("HardSigmoid", activations::hard_sigmoid),
    op("HardSwish", activations::hard_swish),
    op("Mul", add_mul::convert),
    op("Add", add_mul::convert),
    op_unlisted("Sum", add_mul::convert),
    op("MaxPool", pool::max_or_average),
    op("AveragePool", pool::max_or_average),
    op("GlobalAveragePool", pool::global_average),
    op("ReduceMean", pool::reduce_mean),
    op("Gemm", gemm::convert),
    op_listed_as("MatMul", "MatMul (+ Add)", matmul::convert),
    op("Flatten", reshape::flatten),
    op_listed_as(
        "Reshape",
        "Reshape (flattening, or + Transpose + Reshape: a channel shuffle)",
        reshape::reshape,
    ),
    op("Concat", concat::convert),
    op_listed_as("Slice", "Slice (of channels)", slice::convert),
    op_listed_as(
        "Transpose",
        "Transpose (+ LayerNormalization + Transpose: a channel LayerNorm)",
        transpose::convert,
    ),
    op_listed_as("Div", "Div (+ Erf + Add + Mul + Mul: GELU)", div::convert),
    op("LRN", lrn::convert),
    op("Dropout", dropout::dropout),
    op("Identity", dropout::identity),
    op_listed_as("Softmax", "Softmax (at the output)", softmax::convert),
    op_unlisted("LogSoftmax", softmax::convert),
    op_listed_as(
        "QuantizeLinear",
        "QuantizeLinear → DequantizeLinear (int8 QDQ, read as float)",
        quant::quantize_linear,
    ),
    op_unlisted("DequantizeLinear", quant::dequantize_linear),
    op("Constant", constant::convert),
    op("Shape", shape::shape),
    op("Gather", shape::gather),
    op("Unsqueeze", shape::squeeze),
    op_unlisted("Squeeze", shape::squeeze),
];

/// The converter of an `op_type`.
pub(super) fn converter(op_type: &str) -> Option<Convert> {
    REGISTRY
        .iter()
        .find(|e| e.op_type == op_type)
        .map(|e| e.convert)
}

const fn listed_count(registry: &[Entry]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < registry.len() {
        if registry[i].listed_as.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn listed<const N: usize>(registry: &[Entry]) -> [&'static str; N] {
    let mut labels = [""; N];
    let (mut i, mut n) = (0, 0);
    while i < registry.len() {
        if let Some(label) = registry[i].listed_as {
            labels[n] = label;
            n += 1;
        }
        i += 1;
    }
    labels
}

const LISTED: usize = listed_count(REGISTRY);

/// The supported list, as error messages give it (derived from [`REGISTRY`]).
pub(super) const SUPPORTED: [&str; LISTED] = listed::<LISTED>(REGISTRY);

/// The error for an operator without a converter.
pub(super) fn unsupported(node: &Node) -> ImportError {
    if quant::is_integer_operator(node.op_type()) {
        return node.error(format!(
            "\"{}\" computes on quantised integers; cnnbench reads int8 networks in QDQ form only (float operators between QuantizeLinear → DequantizeLinear pairs, as `cnnbench convert --precision int8` and ONNX Runtime's quantize_static with QuantFormat.QDQ write them)",
            node.op_type()
        ));
    }
    node.error(format!(
        "operator \"{}\" is not supported; supported: {}",
        node.op_type(),
        SUPPORTED.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_type_has_one_converter_and_the_list_shows_the_listed_ones() {
        let mut seen = HashSet::new();
        for e in REGISTRY {
            assert!(seen.insert(e.op_type), "{} twice", e.op_type);
            assert!(converter(e.op_type).is_some());
        }
        assert_eq!(SUPPORTED.len(), LISTED);
        assert!(SUPPORTED.iter().all(|s| !s.is_empty()));
        assert_eq!(SUPPORTED.first(), Some(&"Conv"));
        assert!(SUPPORTED.contains(&"MatMul (+ Add)"));
        assert!(converter("Erf").is_none());
    }
}
