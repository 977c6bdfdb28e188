//! Graph → int8 ONNX in QDQ form: static post-training quantisation as ONNX Runtime's
//! `quantize_static` writes it (`QuantFormat.QDQ`, activations `uint8` per tensor,
//! weights `int8` symmetric per output channel, biases `int32`), so that ONNX Runtime and
//! OpenVINO each fuse the `DequantizeLinear → op → QuantizeLinear` groups into their own
//! int8 kernels.
//!
//! The float export ([`super::to_onnx_model`]) is rewritten in four steps:
//! 1. a batch norm that is its convolution's only reader is folded into the
//!    convolution's weight and bias (as ONNX Runtime's pre-processing does before
//!    quantising: an int8 convolution cannot be followed by a float batch norm and stay
//!    int8);
//! 2. a ReLU or ReLU6 that is its producer's only reader is dropped, the producer's
//!    output taking the activation's name and range: quantising to a range that starts
//!    at 0 clamps exactly as the ReLU did;
//! 3. every convolution's and linear layer's weight becomes `int8` with a
//!    `DequantizeLinear` (axis 0), its bias `int32` at the input's scale times the
//!    weight's;
//! 4. every activation the calibration measured (the input, each IR node's output; not
//!    the network's output) gets a `QuantizeLinear → DequantizeLinear` pair that all its
//!    readers share. An op that only moves values (max pooling, flatten, dropout,
//!    channel shuffle, a channel slice) keeps its input's range, so that a runtime can
//!    run it on the int8 values directly.

use super::{float_tensor, to_onnx_model, ExportError};
use crate::onnx::f32_values;
use crate::onnx::proto::*;
use cnnbench_graph::quant::{ActivationRanges, AffineU8, PerChannelI8};
use cnnbench_graph::{Graph, HostTensor, Op, Weights, INPUT_NAME};
use prost::Message;
use std::collections::{BTreeMap, HashMap, HashSet};

/// The largest quantised bias allowed, a little under `i32::MAX` so that rounding the
/// scale cannot push one over.
const BIAS_LIMIT: f32 = (1u32 << 30) as f32;

/// Writes `graph` with `weights` as an encoded int8 ONNX model in QDQ form, its
/// activations quantised to the calibrated `ranges`.
pub fn to_onnx_int8(
    graph: &Graph,
    weights: &Weights,
    ranges: &ActivationRanges,
) -> Result<Vec<u8>, ExportError> {
    Ok(to_onnx_int8_model(graph, weights, ranges)?.encode_to_vec())
}

/// The int8 ONNX model (see [`to_onnx_int8`]).
pub fn to_onnx_int8_model(
    graph: &Graph,
    weights: &Weights,
    ranges: &ActivationRanges,
) -> Result<ModelProto, ExportError> {
    let ranges = shared_ranges(graph, ranges)?;
    let mut model = to_onnx_model(graph, weights)?;
    let onnx = model
        .graph
        .as_mut()
        .ok_or_else(|| quantising("the float export has no graph".into()))?;
    let output = graph.nodes()[graph.output_index()].name.clone();
    fold_batch_norms(onnx)?;
    absorb_activations(onnx, &ranges, &output);
    quantize_weights(onnx, &ranges)?;
    quantize_activations(onnx, &ranges, &output)?;
    prune_initializers(onnx);
    Ok(model)
}

fn quantising(message: String) -> ExportError {
    ExportError::Unsupported {
        node: String::new(),
        op: "int8".into(),
        message,
    }
}

/// The calibrated ranges with every value-preserving node given its input's range. A
/// node the calibration did not measure is an error naming it: the ranges came from
/// another network.
fn shared_ranges(
    graph: &Graph,
    measured: &ActivationRanges,
) -> Result<HashMap<String, (f32, f32)>, ExportError> {
    let missing = |name: &str| {
        quantising(format!(
            "the calibration measured no range for \"{name}\": it was made for another network"
        ))
    };
    let mut ranges = HashMap::new();
    let input = measured.input_range().ok_or_else(|| missing(INPUT_NAME))?;
    ranges.insert(INPUT_NAME.to_string(), input);
    for node in graph.nodes() {
        let keeps_values = match &node.op {
            Op::MaxPool2d(_)
            | Op::Flatten(_)
            | Op::Dropout(_)
            | Op::StochasticDepth(_)
            | Op::ChannelShuffle(_)
            | Op::SliceChannels(_) => true,
            Op::Conv2d(_)
            | Op::BatchNorm2d(_)
            | Op::Activation(_)
            | Op::LocalResponseNorm(_)
            | Op::AvgPool2d(_)
            | Op::AdaptiveAvgPool2d(_)
            | Op::Linear(_)
            | Op::Concat(_)
            | Op::Add(_)
            | Op::Mul(_)
            | Op::LayerNorm2d(_)
            | Op::LayerScale(_) => false,
        };
        let range = match (keeps_values, node.inputs.first()) {
            (true, Some(&source)) => {
                let name = graph.source_name(source);
                ranges.get(name).copied().ok_or_else(|| missing(name))?
            }
            _ => measured
                .range(&node.name)
                .ok_or_else(|| missing(&node.name))?,
        };
        ranges.insert(node.name.clone(), range);
    }
    Ok(ranges)
}

/// How many nodes read each value (the graph's output counts as a reader).
fn readers(onnx: &GraphProto) -> HashMap<String, usize> {
    let mut count = HashMap::new();
    for node in &onnx.node {
        for input in node.input.iter().filter(|i| !i.is_empty()) {
            *count.entry(input.clone()).or_insert(0) += 1;
        }
    }
    for output in &onnx.output {
        *count.entry(output.name.clone()).or_insert(0) += 1;
    }
    count
}

/// An f32 initializer's values.
fn floats_of(onnx: &GraphProto, name: &str) -> Option<Vec<f32>> {
    let t = onnx.initializer.iter().find(|t| t.name == name)?;
    (t.data_type == DATA_FLOAT).then(|| f32_values(t))
}

fn dims_of(onnx: &GraphProto, name: &str) -> Option<Vec<i64>> {
    onnx.initializer
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.dims.clone())
}

fn float_attr(node: &NodeProto, name: &str) -> Option<f32> {
    node.attribute.iter().find(|a| a.name == name).map(|a| a.f)
}

fn tensor(name: String, dims: Vec<i64>, data_type: i32, raw_data: Vec<u8>) -> TensorProto {
    TensorProto {
        dims,
        data_type,
        name,
        raw_data,
        ..TensorProto::default()
    }
}

/// Step 1: `Conv → BatchNormalization` with the convolution read by the batch norm
/// alone becomes one convolution: `w' = w·γ/√(σ²+ε)`, `b' = (b − μ)·γ/√(σ²+ε) + β`.
fn fold_batch_norms(onnx: &mut GraphProto) -> Result<(), ExportError> {
    let mut index = 0;
    while index < onnx.node.len() {
        let bn = &onnx.node[index];
        if bn.op_type != "BatchNormalization" || bn.input.len() != 5 {
            index += 1;
            continue;
        }
        let readers = readers(onnx);
        let Some(conv_at) = onnx.node.iter().position(|n| {
            n.op_type == "Conv" && n.output.first() == bn.input.first() && n.input.len() >= 2
        }) else {
            index += 1;
            continue;
        };
        if readers.get(&bn.input[0]).copied() != Some(1) {
            index += 1;
            continue;
        }
        let read = |name: &str| {
            floats_of(onnx, name).ok_or_else(|| {
                quantising(format!(
                    "batch norm \"{}\": no f32 tensor \"{name}\"",
                    bn.name
                ))
            })
        };
        let (gamma, beta, mean, var) = (
            read(&bn.input[1])?,
            read(&bn.input[2])?,
            read(&bn.input[3])?,
            read(&bn.input[4])?,
        );
        let eps = float_attr(bn, "epsilon").unwrap_or(1e-5);
        let conv = &onnx.node[conv_at];
        let weight = read(&conv.input[1])?;
        let weight_dims = dims_of(onnx, &conv.input[1]).unwrap_or_default();
        let channels = gamma.len();
        if channels == 0 || !weight.len().is_multiple_of(channels) {
            return Err(quantising(format!(
                "batch norm \"{}\" has {channels} channels, its convolution's weight {} values",
                bn.name,
                weight.len()
            )));
        }
        let bias = match conv.input.get(2) {
            Some(name) => read(name)?,
            None => vec![0.0; channels],
        };
        let factor: Vec<f32> = (0..channels)
            .map(|c| gamma[c] / (var[c] + eps).sqrt())
            .collect();
        let per_channel = weight.len() / channels;
        let folded_weight: Vec<f32> = weight
            .iter()
            .enumerate()
            .map(|(i, w)| w * factor[i / per_channel])
            .collect();
        let folded_bias: Vec<f32> = (0..channels)
            .map(|c| (bias[c] - mean[c]) * factor[c] + beta[c])
            .collect();
        let (weight_name, bias_name) = (
            format!("{}/folded_weight", bn.name),
            format!("{}/folded_bias", bn.name),
        );
        let bn_output = bn.output[0].clone();
        onnx.initializer
            .push(float_tensor(&weight_name, weight_dims, &folded_weight));
        onnx.initializer.push(float_tensor(
            &bias_name,
            vec![channels as i64],
            &folded_bias,
        ));
        let conv = &mut onnx.node[conv_at];
        conv.input.truncate(1);
        conv.input.push(weight_name);
        conv.input.push(bias_name);
        conv.output = vec![bn_output];
        onnx.node.remove(index);
    }
    Ok(())
}

/// Whether a node is a ReLU (or ReLU6: `Clip` to [0, 6]).
fn is_relu(onnx: &GraphProto, node: &NodeProto) -> bool {
    match node.op_type.as_str() {
        "Relu" => true,
        "Clip" => {
            let bound = |i: usize| {
                node.input
                    .get(i)
                    .and_then(|name| floats_of(onnx, name))
                    .and_then(|v| v.first().copied())
            };
            bound(1) == Some(0.0) && bound(2) == Some(6.0)
        }
        _ => false,
    }
}

/// Step 2: a ReLU read from a producer it alone reads is dropped; the producer writes
/// the ReLU's value, whose range (from 0) the quantisation clamps to.
fn absorb_activations(onnx: &mut GraphProto, ranges: &HashMap<String, (f32, f32)>, output: &str) {
    let mut index = 0;
    while index < onnx.node.len() {
        let node = &onnx.node[index];
        let quantised = node
            .output
            .first()
            .is_some_and(|o| o != output && ranges.get(o).is_some_and(|r| r.0 >= 0.0));
        let input = node.input.first().cloned().unwrap_or_default();
        if !(is_relu(onnx, node) && quantised) || readers(onnx).get(&input).copied() != Some(1) {
            index += 1;
            continue;
        }
        let Some(producer) = onnx
            .node
            .iter()
            .position(|n| n.output.first() == Some(&input))
        else {
            index += 1;
            continue;
        };
        let relu_output = node.output[0].clone();
        onnx.node[producer].output = vec![relu_output];
        onnx.node.remove(index);
    }
}

/// Step 3: convolution and linear weights to `int8` per output channel, their biases
/// to `int32` at the input's scale times each channel's weight scale.
fn quantize_weights(
    onnx: &mut GraphProto,
    ranges: &HashMap<String, (f32, f32)>,
) -> Result<(), ExportError> {
    let mut added_nodes = Vec::new();
    let mut added_initializers = Vec::new();
    for node in &mut onnx.node {
        let weighted = match node.op_type.as_str() {
            "Conv" => true,
            "Gemm" => node
                .attribute
                .iter()
                .any(|a| a.name == "transB" && a.i == 1),
            _ => false,
        };
        if !weighted || node.input.len() < 2 {
            continue;
        }
        let Some(&(low, high)) = ranges.get(&node.input[0]) else {
            continue;
        };
        let input_scale = AffineU8::of_range(low, high).scale;
        let weight_name = node.input[1].clone();
        let find = |name: &str| {
            onnx.initializer
                .iter()
                .find(|t| t.name == name)
                .ok_or_else(|| quantising(format!("\"{}\": no weight \"{name}\"", node.name)))
        };
        let weight = find(&weight_name)?;
        let shape: Vec<usize> = weight.dims.iter().map(|&d| d.max(0) as usize).collect();
        let values = f32_values(weight);
        let host = HostTensor::new(shape, values)
            .map_err(|e| quantising(format!("\"{}\": weight \"{weight_name}\": {e}", node.name)))?;
        let bias = match node.input.get(2) {
            Some(name) => Some((name.clone(), f32_values(find(name)?))),
            None => None,
        };
        // Each channel's weight scale at least what keeps its int32 bias in range.
        let least: Vec<f32> = bias.as_ref().map_or_else(Vec::new, |(_, b)| {
            b.iter()
                .map(|b| b.abs() / (input_scale * BIAS_LIMIT))
                .collect()
        });
        let q = PerChannelI8::with_least_scales(&host, &least)
            .map_err(|e| quantising(format!("\"{}\": {e}", node.name)))?;
        let channels = q.scales.len() as i64;
        let int8 = format!("{weight_name}/int8");
        let scale = format!("{weight_name}/scale");
        let zero = format!("{weight_name}/zero_point");
        let dequantized = format!("{weight_name}/dequantized");
        added_initializers.push(tensor(
            int8.clone(),
            weight.dims.clone(),
            DATA_INT8,
            q.values.iter().map(|&v| v as u8).collect(),
        ));
        added_initializers.push(float_tensor(&scale, vec![channels], &q.scales));
        added_initializers.push(tensor(
            zero.clone(),
            vec![channels],
            DATA_INT8,
            vec![0; channels as usize],
        ));
        added_nodes.push(dequantize(&int8, &scale, &zero, &dequantized, Some(0)));
        node.input[1] = dequantized;
        if let Some((bias_name, bias)) = bias {
            if bias.len() != q.scales.len() {
                return Err(quantising(format!(
                    "\"{}\": {} biases for {} channels",
                    node.name,
                    bias.len(),
                    q.scales.len()
                )));
            }
            let bias_scales: Vec<f32> = q.scales.iter().map(|s| s * input_scale).collect();
            let int32: Vec<u8> = bias
                .iter()
                .zip(&bias_scales)
                .flat_map(|(b, s)| {
                    let q = (b / s).round().clamp(i32::MIN as f32, i32::MAX as f32) as i32;
                    q.to_le_bytes()
                })
                .collect();
            let (int32_name, scale, zero, dequantized) = (
                format!("{bias_name}/int32"),
                format!("{bias_name}/scale"),
                format!("{bias_name}/zero_point"),
                format!("{bias_name}/dequantized"),
            );
            added_initializers.push(tensor(
                int32_name.clone(),
                vec![channels],
                DATA_INT32,
                int32,
            ));
            added_initializers.push(float_tensor(&scale, vec![channels], &bias_scales));
            added_initializers.push(tensor(
                zero.clone(),
                vec![channels],
                DATA_INT32,
                vec![0; 4 * channels as usize],
            ));
            added_nodes.push(dequantize(
                &int32_name,
                &scale,
                &zero,
                &dequantized,
                Some(0),
            ));
            node.input[2] = dequantized;
        }
    }
    onnx.initializer.extend(added_initializers);
    // Constants' dequantisation first: a node list in topological order stays so.
    added_nodes.append(&mut onnx.node);
    onnx.node = added_nodes;
    Ok(())
}

fn dequantize(input: &str, scale: &str, zero: &str, output: &str, axis: Option<i64>) -> NodeProto {
    NodeProto {
        input: vec![input.into(), scale.into(), zero.into()],
        output: vec![output.into()],
        name: output.into(),
        op_type: "DequantizeLinear".into(),
        attribute: axis
            .map(|a| super::attr::int("axis", a))
            .into_iter()
            .collect(),
        domain: String::new(),
    }
}

/// Step 4: a `QuantizeLinear → DequantizeLinear` pair on every measured activation but
/// the network's output, shared by all its readers.
fn quantize_activations(
    onnx: &mut GraphProto,
    ranges: &HashMap<String, (f32, f32)>,
    output: &str,
) -> Result<(), ExportError> {
    let taken: HashSet<String> = onnx
        .node
        .iter()
        .flat_map(|n| n.output.iter().cloned())
        .chain(onnx.initializer.iter().map(|t| t.name.clone()))
        .collect();
    let mut produced: Vec<String> = vec![INPUT_NAME.to_string()];
    produced.extend(onnx.node.iter().filter_map(|n| n.output.first().cloned()));
    let mut renamed: BTreeMap<String, String> = BTreeMap::new();
    let mut pairs: HashMap<String, [NodeProto; 2]> = HashMap::new();
    for value in produced {
        let Some(&(low, high)) = ranges.get(&value) else {
            continue;
        };
        if value == output {
            continue;
        }
        let q = AffineU8::of_range(low, high);
        let (scale, zero, quantized, dequantized) = (
            format!("{value}/scale"),
            format!("{value}/zero_point"),
            format!("{value}/quantized"),
            format!("{value}/dequantized"),
        );
        for name in [&scale, &zero, &quantized, &dequantized] {
            if taken.contains(name) {
                return Err(quantising(format!(
                    "the network already has a value named \"{name}\"; rename that node"
                )));
            }
        }
        onnx.initializer
            .push(float_tensor(&scale, Vec::new(), &[q.scale]));
        onnx.initializer.push(tensor(
            zero.clone(),
            Vec::new(),
            DATA_UINT8,
            vec![q.zero_point],
        ));
        let quantize = NodeProto {
            input: vec![value.clone(), scale.clone(), zero.clone()],
            output: vec![quantized.clone()],
            name: quantized.clone(),
            op_type: "QuantizeLinear".into(),
            attribute: Vec::new(),
            domain: String::new(),
        };
        let restore = dequantize(&quantized, &scale, &zero, &dequantized, None);
        renamed.insert(value.clone(), dequantized);
        pairs.insert(value, [quantize, restore]);
    }
    for node in &mut onnx.node {
        for input in &mut node.input {
            if let Some(new) = renamed.get(input) {
                *input = new.clone();
            }
        }
    }
    // Each pair right after its value's producer (the input's first).
    let mut nodes = Vec::with_capacity(onnx.node.len() + 2 * pairs.len());
    if let Some(pair) = pairs.remove(INPUT_NAME) {
        nodes.extend(pair);
    }
    for node in std::mem::take(&mut onnx.node) {
        let pair = node.output.first().and_then(|o| pairs.remove(o));
        nodes.push(node);
        nodes.extend(pair.into_iter().flatten());
    }
    onnx.node = nodes;
    Ok(())
}

/// Drops the initializers no node reads any more (the float weights replaced by int8,
/// the batch norms folded away).
fn prune_initializers(onnx: &mut GraphProto) {
    let read: HashSet<&String> = onnx.node.iter().flat_map(|n| n.input.iter()).collect();
    let keep: Vec<bool> = onnx
        .initializer
        .iter()
        .map(|t| read.contains(&t.name))
        .collect();
    let mut keep = keep.into_iter();
    onnx.initializer.retain(|_| keep.next().unwrap_or(true));
}
