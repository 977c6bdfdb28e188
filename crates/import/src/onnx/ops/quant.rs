//! `QuantizeLinear` and `DequantizeLinear`: an int8 network in QDQ form (float operators
//! between quantisations, as `cnnbench convert --precision int8` and ONNX Runtime's
//! `quantize_static` with `QuantFormat.QDQ` write it) read back as the float network it
//! approximates, because the IR describes what a network computes, not the precision an
//! engine computes it in (that is `run --precision`).
//!
//! - `DequantizeLinear` of a constant (int8, uint8, int16, uint16 or int32; per tensor or
//!   per axis) is folded: the constant `(q − zero_point) × scale`, which the Conv or Gemm
//!   that reads it takes as its float weight or bias. A `QuantizeLinear` of a constant
//!   (a float weight stored with its own quantisation) is folded too, so the weight reads
//!   as the quantised values it stands for.
//! - `QuantizeLinear → DequantizeLinear` on an activation is the identity: the value
//!   passes in f32, neither rounded to the scale's steps nor clamped to the range.
//! - Except at 0: a range that starts exactly at 0 (the zero point is the type's least
//!   value, 0 for uint8) clamps at 0 as a ReLU does, and that is how a quantiser writes a
//!   ReLU it absorbed into its producer's output (cnnbench's export drops every ReLU and
//!   ReLU6 that is its producer's only reader, and ONNX Runtime's does the same). So a
//!   ReLU is put back there, unless the value is non-negative already (a ReLU's, a
//!   sigmoid's, or a max pool of one: the clamp is then no operation of the network) or
//!   is the network's input (a quantiser absorbs activations into operations; an input
//!   range from 0 is the data's, images in [0, 1]). A ReLU6 absorbed the same way cannot
//!   be told from a ReLU by the range alone: the range ends at the calibration's maximum,
//!   which for a ReLU6 is 6 only where some calibration value reached 6. A ReLU is the
//!   faithful reading of "clamped at 0, up to this maximum" for the dequantised values
//!   (the upper clamp is the quantisation's own, dropped with it, and no ReLU6 ever
//!   clamps below 6); where the range's top is exactly 6, a ReLU6 is put back instead.
//!   So import(export_int8(g)) has g's operations, batch norms folded into their
//!   convolutions, and computes g's function up to the quantisation: the weights are the
//!   dequantised int8 ones, and the activations are neither rounded nor clamped at the
//!   calibration's maxima.
//!
//! Operators that compute on the integers themselves (`QLinearConv`, `ConvInteger`, …),
//! a `QuantizeLinear` read by anything but a `DequantizeLinear` with its own parameters,
//! and a `DequantizeLinear` of a computed value outside such a pair are errors that name
//! the node.

use super::{Ctx, Output};
use crate::onnx::node::Node;
use crate::onnx::{
    Const, NodeProto, Val, DATA_FLOAT, DATA_INT16, DATA_INT32, DATA_INT8, DATA_UINT16, DATA_UINT8,
};
use crate::ImportError;

/// How many of each rewrite reading an int8 QDQ model made, for its note.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct QdqCounts {
    /// `QuantizeLinear` nodes on activations dropped with their `DequantizeLinear`s.
    pub(crate) pairs: usize,
    /// Constants dequantised (weights and biases).
    pub(crate) constants: usize,
    /// ReLUs put back where a range started at 0.
    pub(crate) relus: usize,
    /// ReLU6s put back where a range was [0, 6].
    pub(crate) relu6s: usize,
}

impl QdqCounts {
    /// The note saying the model was int8 and what of its quantisation was dropped, so
    /// that nobody benchmarks the import believing it runs in int8; `None` for a float
    /// model.
    pub(crate) fn note(&self) -> Option<String> {
        if self.pairs == 0 && self.constants == 0 {
            return None;
        }
        let mut note = format!(
            "the model is int8 in QDQ form and is read as the float network it approximates: {} quantised constants (weights, biases) dequantised to f32, (q − zero point) × scale; {} QuantizeLinear → DequantizeLinear pairs on activations dropped (values pass in f32, neither rounded nor clamped to the calibrated ranges)",
            self.constants, self.pairs
        );
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        let put_back: Vec<String> = [(self.relus, "ReLU"), (self.relu6s, "ReLU6")]
            .into_iter()
            .filter(|&(n, _)| n > 0)
            .map(|(n, what)| plural(n, what))
            .collect();
        if !put_back.is_empty() {
            note += &format!(
                "; {} put back where a range started at 0 (an activation the quantisation had absorbed)",
                put_back.join(" and ")
            );
        }
        note += "; `run --precision int8` quantises it again on an engine that runs int8";
        Some(note)
    }
}

/// The operators that compute on quantised integers, which the IR cannot hold (ONNX's
/// default domain; ONNX Runtime's `com.microsoft` ones are refused for their domain).
pub(super) fn is_integer_operator(op_type: &str) -> bool {
    op_type.starts_with("QLinear")
        || matches!(
            op_type,
            "ConvInteger" | "MatMulInteger" | "DynamicQuantizeLinear" | "QGemm"
        )
}

/// An integer type a quantised tensor can have: its width in bytes and its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IntType {
    data_type: i32,
    bytes: usize,
    min: i64,
    max: i64,
}

fn int_type(data_type: i32) -> Option<IntType> {
    let (bytes, min, max) = match data_type {
        DATA_UINT8 => (1, 0, u8::MAX as i64),
        DATA_INT8 => (1, i8::MIN as i64, i8::MAX as i64),
        DATA_UINT16 => (2, 0, u16::MAX as i64),
        DATA_INT16 => (2, i16::MIN as i64, i16::MAX as i64),
        DATA_INT32 => (4, i32::MIN as i64, i32::MAX as i64),
        _ => return None,
    };
    Some(IntType {
        data_type,
        bytes,
        min,
        max,
    })
}

fn type_name(data_type: i32) -> String {
    match data_type {
        DATA_FLOAT => "FLOAT".into(),
        DATA_UINT8 => "UINT8".into(),
        DATA_INT8 => "INT8".into(),
        DATA_UINT16 => "UINT16".into(),
        DATA_INT16 => "INT16".into(),
        DATA_INT32 => "INT32".into(),
        other => format!("data type {other}"),
    }
}

/// The number of elements of a constant's shape.
fn elements(dims: &[i64]) -> Result<usize, String> {
    dims.iter().try_fold(1usize, |acc, &d| {
        usize::try_from(d)
            .ok()
            .and_then(|d| acc.checked_mul(d))
            .ok_or_else(|| format!("implausible shape {dims:?}"))
    })
}

/// A constant integer tensor's values (`elements` of them, checked), whichever way they
/// are stored.
fn integers(
    c: &Const,
    t: IntType,
    elements: usize,
) -> Result<Box<dyn Iterator<Item = i64> + '_>, String> {
    if c.raw.is_empty() {
        if c.ints.len() != elements {
            return Err(format!(
                "{} values stored, but the shape {:?} needs {elements}",
                c.ints.len(),
                c.dims
            ));
        }
        if let Some(v) = c.ints.iter().find(|&&v| v < t.min || v > t.max) {
            return Err(format!(
                "the value {v} is outside {}'s range",
                type_name(t.data_type)
            ));
        }
        return Ok(Box::new(c.ints.iter().copied()));
    }
    if Some(c.raw.len()) != elements.checked_mul(t.bytes) {
        return Err(format!(
            "{} bytes stored, but the shape {:?} needs {elements} values of {} bytes",
            c.raw.len(),
            c.dims,
            t.bytes
        ));
    }
    let raw = c.raw.as_slice();
    Ok(match t.data_type {
        DATA_UINT8 => Box::new(raw.iter().map(|&b| b as i64)),
        DATA_INT8 => Box::new(raw.iter().map(|&b| b as i8 as i64)),
        DATA_UINT16 => Box::new(
            raw.chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]) as i64),
        ),
        DATA_INT16 => Box::new(
            raw.chunks_exact(2)
                .map(|b| i16::from_le_bytes([b[0], b[1]]) as i64),
        ),
        // INT32 is decoded into `ints` when read; raw bytes of another type are not kept.
        _ => {
            return Err(format!(
                "{} stored as raw bytes is not read",
                type_name(t.data_type)
            ))
        }
    })
}

/// A quantisation's parameters: one scale and zero point for the whole tensor, or one
/// per slice along `axis`.
#[derive(Clone, Debug, PartialEq)]
struct Params {
    scales: Vec<f32>,
    zero_points: Vec<i64>,
    /// The quantised values' type.
    ty: IntType,
    /// The axis the scales run along (per-axis quantisation only), within the rank.
    axis: Option<usize>,
}

impl Params {
    /// Each slice's (zero point, scale), in the order of the axis.
    fn zero_points_and_scales(&self) -> Vec<(i64, f32)> {
        self.zero_points
            .iter()
            .copied()
            .zip(self.scales.iter().copied())
            .collect()
    }

    /// Whether the quantised range starts at exactly 0: every zero point is the type's
    /// least value, so that nothing below 0 survives the quantisation.
    fn starts_at_zero(&self) -> bool {
        self.zero_points.iter().all(|&z| z == self.ty.min)
    }

    /// Whether the quantised range is exactly [0, 6] (to f32's rounding of the scale).
    fn is_zero_to_six(&self) -> bool {
        self.starts_at_zero()
            && self
                .scales
                .iter()
                .all(|&s| ((self.ty.max - self.ty.min) as f32 * s - 6.0).abs() <= 6.0 * 1e-6)
    }
}

/// The node's input `i` as a constant, or why it is not one.
fn constant<'c>(ctx: &'c Ctx, node: &Node, i: usize, what: &str) -> Result<&'c Const, ImportError> {
    let name = node
        .proto
        .input
        .get(i)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| node.error(format!("has no {what}")))?;
    ctx.consts.get(name).ok_or_else(|| {
        node.error(format!(
            "its {what} \"{name}\" is computed in the graph; only constant quantisation parameters are supported"
        ))
    })
}

/// The node's scale, zero point and axis, for a quantised tensor of `rank` dimensions
/// whose type is `ty` (a `DequantizeLinear`'s input) or is the zero point's (a
/// `QuantizeLinear`'s output: uint8 without one, as ONNX says). `axis_sizes` gives the
/// size of each dimension when known (`None` for a batch dimension).
fn params(
    ctx: &Ctx,
    node: &Node,
    ty: Option<i32>,
    axis_sizes: &[Option<usize>],
) -> Result<Params, ImportError> {
    if node.int("block_size", 0) != 0 {
        return Err(node.error("blocked quantisation (block_size) is not supported"));
    }
    let scale = constant(ctx, node, 1, "scale")?;
    if scale.data_type != DATA_FLOAT {
        return Err(node.error(format!(
            "its scale is {}; only FLOAT scales are supported",
            type_name(scale.data_type)
        )));
    }
    let count = elements(&scale.dims).map_err(|m| node.error(format!("scale: {m}")))?;
    if scale.floats.len() != count || count == 0 {
        return Err(node.error(format!(
            "its scale has {} values for the shape {:?}",
            scale.floats.len(),
            scale.dims
        )));
    }
    if let Some(s) = scale.floats.iter().find(|s| !s.is_finite() || **s <= 0.0) {
        return Err(node.error(format!("its scale {s} is not a positive number")));
    }
    let zero = if node.has_input(2) {
        Some(constant(ctx, node, 2, "zero point")?)
    } else {
        None
    };
    let declared = match node.int("output_dtype", 0) {
        0 => None,
        t => Some(t as i32),
    };
    let data_type = ty
        .or(zero.map(|z| z.data_type))
        .or(declared)
        .unwrap_or(DATA_UINT8);
    let ty = int_type(data_type).ok_or_else(|| {
        node.error(format!(
            "quantised values of {} are not supported (only UINT8, INT8, UINT16, INT16 and INT32)",
            type_name(data_type)
        ))
    })?;
    let zero_points = match zero {
        None => vec![0; count],
        Some(z) => {
            if z.data_type != ty.data_type {
                return Err(node.error(format!(
                    "its zero point is {}, its values {}; ONNX requires the same type",
                    type_name(z.data_type),
                    type_name(ty.data_type)
                )));
            }
            let n = elements(&z.dims).map_err(|m| node.error(format!("zero point: {m}")))?;
            if n != count {
                return Err(node.error(format!(
                    "{count} scales but {n} zero points; they go in pairs"
                )));
            }
            integers(z, ty, n)
                .map_err(|m| node.error(format!("zero point: {m}")))?
                .collect()
        }
    };
    let axis = if count == 1 {
        None
    } else {
        let rank = axis_sizes.len() as i64;
        let given = node.int("axis", 1);
        let axis = if given < 0 { given + rank } else { given };
        let index = usize::try_from(axis)
            .ok()
            .filter(|&a| a < axis_sizes.len())
            .ok_or_else(|| {
                node.error(format!("axis {given} is outside a tensor of rank {rank}"))
            })?;
        match axis_sizes.get(index).copied().flatten() {
            Some(size) if size == count => Some(index),
            Some(size) => {
                return Err(node.error(format!(
                    "{count} scales along axis {given}, which has {size} elements"
                )))
            }
            None => {
                return Err(node.error(format!(
                    "{count} scales along the batch axis {given}; a quantisation per image is not supported"
                )))
            }
        }
    };
    Ok(Params {
        scales: scale.floats.clone(),
        zero_points,
        ty,
        axis,
    })
}

/// A constant's dims as sizes (its elements counted, every dim checked).
fn dim_sizes(dims: &[i64]) -> Result<Vec<Option<usize>>, String> {
    elements(dims)?;
    Ok(dims.iter().map(|&d| usize::try_from(d).ok()).collect())
}

/// For element `i` of a tensor of `dims`, the index of its scale: which slice along
/// `axis` it is in. `inner` is the product of the dims after the axis.
fn slice_index(i: usize, axis_len: usize, inner: usize) -> usize {
    if axis_len <= 1 || inner == 0 {
        0
    } else {
        (i / inner) % axis_len
    }
}

/// The dims after `axis` multiplied (1 for per-tensor parameters).
fn inner_size(dims: &[i64], axis: Option<usize>) -> usize {
    axis.map_or(1, |a| {
        dims.iter()
            .skip(a + 1)
            .map(|&d| usize::try_from(d).unwrap_or(0))
            .fold(1usize, usize::saturating_mul)
    })
}

/// `(q − zero_point) × scale` for every element of the integer constant `x`.
fn dequantized(x: &Const, p: &Params) -> Result<Vec<f32>, String> {
    let n = elements(&x.dims)?;
    let inner = inner_size(&x.dims, p.axis);
    let pairs = p.zero_points_and_scales();
    let mut out = Vec::with_capacity(n);
    for (i, q) in integers(x, p.ty, n)?.enumerate() {
        let (zero, scale) = pairs
            .get(slice_index(i, pairs.len(), inner))
            .copied()
            .unwrap_or((0, 1.0));
        out.push((q - zero) as f32 * scale);
    }
    Ok(out)
}

/// `clamp(round(x / scale) + zero_point)` for every element of the float constant `x`
/// (ONNX rounds half to even).
fn quantized(x: &Const, p: &Params) -> Result<Vec<i64>, String> {
    let n = elements(&x.dims)?;
    if x.floats.len() != n {
        return Err(format!(
            "{} values stored, but the shape {:?} needs {n}",
            x.floats.len(),
            x.dims
        ));
    }
    let inner = inner_size(&x.dims, p.axis);
    let pairs = p.zero_points_and_scales();
    Ok(x.floats
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let (zero, scale) = pairs
                .get(slice_index(i, pairs.len(), inner))
                .copied()
                .unwrap_or((0, 1.0));
            // `as` saturates (NaN to 0), and so does the sum.
            let q = ((v / scale).round_ties_even() as i64).saturating_add(zero);
            q.clamp(p.ty.min, p.ty.max)
        })
        .collect())
}

/// `DequantizeLinear` of a constant: folded into the float constant it stands for. (Of
/// an activation it is part of a pair its `QuantizeLinear` has already read, and is
/// skipped.)
pub(super) fn dequantize_linear(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let input = node
        .proto
        .input
        .first()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| node.error("has no input"))?;
    let Some(x) = ctx.consts.get(input) else {
        return Err(if ctx.vals.contains_key(input) {
            node.error(format!(
                "dequantises \"{input}\", a value the network computes that is not a QuantizeLinear's output; cnnbench reads int8 networks in QDQ form only (constants dequantised, activations as QuantizeLinear → DequantizeLinear pairs)"
            ))
        } else {
            node.error(format!("reads \"{input}\", which no earlier node produces"))
        });
    };
    let ty = int_type(x.data_type).ok_or_else(|| {
        node.error(format!(
            "dequantises \"{input}\" of {}; only UINT8, INT8, UINT16, INT16 and INT32 are supported",
            type_name(x.data_type)
        ))
    })?;
    let sizes = dim_sizes(&x.dims).map_err(|m| node.error(format!("\"{input}\": {m}")))?;
    let p = params(ctx, node, Some(ty.data_type), &sizes)?;
    let folded = if x.external.is_some() {
        Const {
            dims: x.dims.clone(),
            data_type: DATA_FLOAT,
            unreadable: Some(format!(
                "the dequantisation of \"{input}\", whose integers are stored in an external file (not read for a DequantizeLinear): shapes only"
            )),
            ..Const::default()
        }
    } else {
        Const {
            dims: x.dims.clone(),
            floats: dequantized(x, &p).map_err(|m| node.error(format!("\"{input}\": {m}")))?,
            data_type: DATA_FLOAT,
            ..Const::default()
        }
    };
    // The integers are not needed again when this node is their only reader.
    let only_reader = matches!(
        ctx.readers.get(input.as_str()).map(Vec::as_slice),
        Some([j]) if std::ptr::eq(&ctx.graph.node[*j], node.proto)
    );
    if only_reader && !ctx.outputs.contains(input.as_str()) {
        ctx.consts.remove(input);
    }
    ctx.qdq.constants += 1;
    Ok(Output::Constant(folded))
}

/// `QuantizeLinear` of a constant: folded (the integers it stands for). Of an
/// activation: with its `DequantizeLinear` readers, the identity, or a ReLU where its
/// range starts at 0 (see the module's doc).
pub(super) fn quantize_linear(ctx: &mut Ctx, node: &Node) -> Result<Output, ImportError> {
    let input = node
        .proto
        .input
        .first()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| node.error("has no input"))?;
    if let Some(x) = ctx.consts.get(input) {
        if x.data_type != DATA_FLOAT {
            return Err(node.error(format!(
                "quantises \"{input}\" of {}; only FLOAT constants are supported",
                type_name(x.data_type)
            )));
        }
        let sizes = dim_sizes(&x.dims).map_err(|m| node.error(format!("\"{input}\": {m}")))?;
        let p = params(ctx, node, None, &sizes)?;
        let ints = quantized(x, &p).map_err(|m| node.error(format!("\"{input}\": {m}")))?;
        return Ok(Output::Constant(Const {
            dims: x.dims.clone(),
            ints,
            data_type: p.ty.data_type,
            ..Const::default()
        }));
    }
    let x = ctx.tensor(node, 0)?;
    let mut sizes = vec![None];
    sizes.extend(x.shape().0.iter().map(|&d| Some(d)));
    let p = params(ctx, node, None, &sizes)?;
    if p.ty.data_type == DATA_INT32 {
        return Err(node.error("QuantizeLinear to INT32 is not an ONNX quantisation"));
    }
    if ctx.outputs.contains(node.output.as_str()) {
        return Err(node.error(format!(
            "its quantised \"{}\" is the network's output; cnnbench reads networks whose output is float",
            node.output
        )));
    }
    let graph = ctx.graph;
    let readers = ctx
        .readers
        .get(node.output.as_str())
        .cloned()
        .unwrap_or_default();
    for &j in &readers {
        let reader = &graph.node[j];
        let reader_node = Node {
            proto: reader,
            name: if reader.name.is_empty() {
                format!("{}_{j}", reader.op_type)
            } else {
                reader.name.trim_start_matches('/').to_string()
            },
            output: reader.output.first().cloned().unwrap_or_default(),
        };
        let is_dequantize = reader.op_type == "DequantizeLinear"
            && (reader.domain.is_empty() || reader.domain == "ai.onnx")
            && reader.input.first() == Some(&node.output);
        if !is_dequantize {
            return Err(node.error(format!(
                "its quantised \"{}\" is read by \"{}\" ({}), not as a DequantizeLinear's input; cnnbench reads int8 networks in QDQ form only (float operators between QuantizeLinear → DequantizeLinear pairs)",
                node.output, reader_node.name, reader.op_type
            )));
        }
        let theirs = params(ctx, &reader_node, Some(p.ty.data_type), &sizes)?;
        if theirs != p {
            return Err(reader_node.error(format!(
                "dequantises \"{}\" with another scale, zero point or axis than its QuantizeLinear \"{}\" quantised it with: a requantisation, not a QDQ pair",
                node.output, node.name
            )));
        }
    }
    // A ReLU the quantisation absorbed, put back (see the module's doc for why a ReLU).
    let produced = ctx.producers.contains_key(input.as_str());
    let y = if p.starts_at_zero() && produced && !non_negative(ctx, input) {
        let name = ctx.fresh_name(input, "relu");
        if p.is_zero_to_six() {
            ctx.qdq.relu6s += 1;
            ctx.builder.relu6(name, &x)
        } else {
            ctx.qdq.relus += 1;
            ctx.builder.relu(name, &x)
        }
    } else {
        x
    };
    for &j in &readers {
        ctx.skip.insert(j);
        if let Some(o) = graph.node[j].output.first().filter(|o| !o.is_empty()) {
            ctx.vals.insert(o.clone(), Val::Tensor(y.clone()));
        }
    }
    ctx.qdq.pairs += 1;
    Ok(Output::Value(Val::Tensor(y)))
}

/// Whether a quantisation's range (its zero point, read from the constants) starts at 0.
fn starts_at_zero(ctx: &Ctx, q: &NodeProto) -> bool {
    let Some(zero) = q.input.get(2).filter(|n| !n.is_empty()) else {
        // No zero point: uint8 with zero point 0.
        return true;
    };
    let Some(z) = ctx.consts.get(zero) else {
        return false;
    };
    let Some(ty) = int_type(z.data_type) else {
        return false;
    };
    let Ok(n) = elements(&z.dims) else {
        return false;
    };
    integers(z, ty, n).is_ok_and(|mut values| values.all(|v| v == ty.min))
}

/// Most producers looked through when deciding whether a value is non-negative.
const LOOK_BACK: usize = 256;

/// Whether the ONNX value `value` is non-negative by construction: made by an
/// activation whose values are (ReLU, a clip from 0 or more, sigmoid, softmax), or by
/// an operation that moves, averages, adds or multiplies only such values (constants
/// included: an adaptive pool's averaging matrices), or by a
/// quantisation pair whose range starts at 0 (a ReLU was put back there). `false` when
/// unsure: a ReLU too many clamps nothing, a ReLU too few would change the network.
fn non_negative(ctx: &Ctx, value: &str) -> bool {
    let graph = ctx.graph;
    let mut pending = vec![value];
    let mut looked = 0;
    while let Some(v) = pending.pop() {
        looked += 1;
        if looked > LOOK_BACK {
            return false;
        }
        let Some(node) = ctx.producers.get(v).and_then(|&j| graph.node.get(j)) else {
            // A constant operand (an averaging matrix, a scale) counts when all of it is.
            match ctx.consts.get(v) {
                Some(c) if c.data_type == DATA_FLOAT && c.floats.iter().all(|&f| f >= 0.0) => {
                    continue
                }
                _ => return false,
            }
        };
        let first = || node.input.first().map(String::as_str);
        match node.op_type.as_str() {
            "Relu" | "Sigmoid" | "HardSigmoid" | "Softmax" | "Abs" => {}
            "Clip" => {
                let low = if ctx.opset >= 11 {
                    node.input
                        .get(1)
                        .and_then(|n| ctx.consts.get(n))
                        .and_then(|c| c.floats.first().copied())
                } else {
                    node.attribute.iter().find(|a| a.name == "min").map(|a| a.f)
                };
                if !low.is_some_and(|l| l >= 0.0) {
                    return false;
                }
            }
            "MaxPool" | "AveragePool" | "GlobalAveragePool" | "GlobalMaxPool" | "Flatten"
            | "Reshape" | "Dropout" | "Identity" | "Transpose" | "Squeeze" | "Unsqueeze"
            | "Slice" | "ReduceMean" | "ReduceMax" => match first() {
                Some(i) => pending.push(i),
                None => return false,
            },
            "Concat" | "Add" | "Sum" | "Mul" | "MatMul" | "Max" => {
                pending.extend(
                    node.input
                        .iter()
                        .filter(|i| !i.is_empty())
                        .map(String::as_str),
                );
            }
            "DequantizeLinear" => {
                let quantize = first()
                    .and_then(|i| ctx.producers.get(i))
                    .and_then(|&j| graph.node.get(j))
                    .filter(|q| q.op_type == "QuantizeLinear");
                match quantize {
                    Some(q) if starts_at_zero(ctx, q) => {}
                    Some(q) => match q.input.first() {
                        Some(i) => pending.push(i),
                        None => return false,
                    },
                    None => return false,
                }
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests;
