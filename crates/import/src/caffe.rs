//! Caffe deploy `.prototxt` → Graph. Weights are not needed to benchmark, so only the
//! network description is read. In-place layers (top == bottom) are followed by blob
//! name; `BatchNorm` + `Scale` pairs fold into one affine batch norm.

use crate::text_format::{self, Message};
use crate::ImportError;
use cnnbench_graph::ops::MAX_DIMENSION;
use cnnbench_graph::ops::*;
use cnnbench_graph::{Graph, GraphBuilder, Hw, ModelInfo, Pad2d, T};
use std::collections::HashMap;

/// The Caffe layer types this converter understands.
pub const SUPPORTED_LAYERS: &[&str] = &[
    "Input",
    "Convolution",
    "Pooling",
    "LRN",
    "ReLU",
    "InnerProduct",
    "Dropout",
    "Concat",
    "Eltwise",
    "BatchNorm",
    "Scale (after BatchNorm)",
    "Softmax (as the last layer)",
];

struct Layer<'a> {
    name: String,
    kind: String,
    bottoms: Vec<String>,
    tops: Vec<String>,
    message: &'a Message,
}

impl Layer<'_> {
    fn error(&self, message: impl Into<String>) -> ImportError {
        ImportError::Layer {
            layer: self.name.clone(),
            kind: self.kind.clone(),
            message: message.into(),
        }
    }

    fn params(&self, field: &str) -> Message {
        self.message.message(field).cloned().unwrap_or_default()
    }
}

fn number<F: std::str::FromStr>(
    layer: &Layer,
    m: &Message,
    field: &str,
) -> Result<Option<F>, ImportError> {
    match m.scalar(field) {
        None => Ok(None),
        Some(v) => v
            .parse::<F>()
            .map(Some)
            .map_err(|_| layer.error(format!("{field}: \"{v}\" is not a valid number here"))),
    }
}

fn numbers(layer: &Layer, m: &Message, field: &str) -> Result<Vec<usize>, ImportError> {
    m.scalars(field)
        .map(|v| {
            v.parse::<usize>()
                .map_err(|_| layer.error(format!("{field}: \"{v}\" is not a non-negative integer")))
        })
        .collect()
}

fn flag(layer: &Layer, m: &Message, field: &str, default: bool) -> Result<bool, ImportError> {
    match m.scalar(field) {
        None => Ok(default),
        Some("true") | Some("1") => Ok(true),
        Some("false") | Some("0") => Ok(false),
        Some(v) => Err(layer.error(format!("{field}: \"{v}\" is not true or false"))),
    }
}

/// A spatial setting given as `name` (one or two values) or `name_h`/`name_w`.
fn hw(layer: &Layer, m: &Message, name: &str, default: usize) -> Result<Hw, ImportError> {
    let h = number::<usize>(layer, m, &format!("{name}_h"))?;
    let w = number::<usize>(layer, m, &format!("{name}_w"))?;
    if let (Some(h), Some(w)) = (h, w) {
        return Ok(Hw::new(h, w));
    }
    let field = if name == "kernel" {
        "kernel_size"
    } else {
        name
    };
    match numbers(layer, m, field)?.as_slice() {
        [] => Ok(Hw::square(default)),
        [n] => Ok(Hw::square(*n)),
        [h, w] => Ok(Hw::new(*h, *w)),
        more => Err(layer.error(format!(
            "{field} has {} values; a 2-D layer takes 1 or 2",
            more.len()
        ))),
    }
}

fn layers(net: &Message) -> Result<Vec<Layer<'_>>, ImportError> {
    if net.messages("layers").next().is_some() {
        return Err(ImportError::Unsupported(
            "this is an old (V1) Caffe prototxt with `layers { … }`; upgrade it with Caffe's upgrade_net_proto_text tool".into(),
        ));
    }
    let mut out = Vec::new();
    for (i, m) in net.messages("layer").enumerate() {
        let train_only = m
            .messages("include")
            .any(|inc| inc.scalar("phase") == Some("TRAIN"));
        if train_only {
            continue;
        }
        out.push(Layer {
            name: m
                .scalar("name")
                .map_or_else(|| format!("layer{i}"), String::from),
            kind: m.scalar("type").unwrap_or("").to_string(),
            bottoms: m.scalars("bottom").map(String::from).collect(),
            tops: m.scalars("top").map(String::from).collect(),
            message: m,
        });
    }
    Ok(out)
}

/// `[C, H, W]` from the net's `input_dim`/`input_shape` or an `Input` layer (the batch
/// size in the file is ignored: it is a run-time choice).
fn input_of(net: &Message, layers: &[Layer]) -> Result<(String, [usize; 3]), ImportError> {
    let to_chw = |dims: Vec<usize>, where_: &str| -> Result<[usize; 3], ImportError> {
        match dims.as_slice() {
            [_, c, h, w] => Ok([*c, *h, *w]),
            other => Err(ImportError::Unsupported(format!(
                "{where_} gives {} dimensions; cnnbench needs N×C×H×W",
                other.len()
            ))),
        }
    };
    let parse_dims = |values: Vec<&str>| -> Result<Vec<usize>, ImportError> {
        values
            .into_iter()
            .map(|v| {
                v.parse::<usize>().map_err(|_| {
                    ImportError::Unsupported(format!("input dimension \"{v}\" is not a number"))
                })
            })
            .collect()
    };
    if let Some(name) = net.scalar("input") {
        let dims: Vec<&str> = match net.message("input_shape") {
            Some(shape) => shape.scalars("dim").collect(),
            None => net.scalars("input_dim").collect(),
        };
        return Ok((name.to_string(), to_chw(parse_dims(dims)?, "input_dim")?));
    }
    for layer in layers {
        if layer.kind == "Input" {
            let top = layer
                .tops
                .first()
                .cloned()
                .ok_or_else(|| layer.error("has no top"))?;
            let shape = layer
                .params("input_param")
                .message("shape")
                .cloned()
                .ok_or_else(|| layer.error("input_param has no shape"))?;
            let dims = parse_dims(shape.scalars("dim").collect())?;
            return Ok((top, to_chw(dims, "the Input layer")?));
        }
    }
    Err(ImportError::Unsupported(
        "no input found: expected `input:` with `input_dim`/`input_shape`, or an Input layer"
            .into(),
    ))
}

/// Node names must be unique and cannot be the IR's reserved "input".
fn node_name(name: &str) -> String {
    if name == cnnbench_graph::INPUT_NAME {
        format!("{name}.caffe")
    } else {
        name.to_string()
    }
}

/// Converts a Caffe deploy prototxt into a Graph.
pub fn from_prototxt(text: &str) -> Result<Graph, ImportError> {
    let net = text_format::parse(text)?;
    let layers = layers(&net)?;
    let (input_blob, input) = input_of(&net, &layers)?;
    let name = net.scalar("name").unwrap_or("caffe-model").to_string();
    let info = ModelInfo {
        source: Some(format!("Caffe prototxt \"{name}\"")),
        ..ModelInfo::default()
    };
    let mut b = GraphBuilder::new(name, input).info(info);
    let mut blobs: HashMap<String, T> = HashMap::new();
    blobs.insert(input_blob, b.input());
    let mut last: Option<T> = None;

    let mut i = 0;
    while i < layers.len() {
        let layer = &layers[i];
        i += 1;
        if layer.kind == "Input" {
            continue;
        }
        let inputs: Vec<T> = layer
            .bottoms
            .iter()
            .map(|blob| {
                blobs.get(blob).cloned().ok_or_else(|| {
                    layer.error(format!(
                        "reads blob \"{blob}\", which no earlier layer produces"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let x = inputs.first().ok_or_else(|| layer.error("has no bottom"))?;
        let node = node_name(&layer.name);
        let out = match layer.kind.as_str() {
            "Convolution" => {
                let p = layer.params("convolution_param");
                let out_channels = number::<usize>(layer, &p, "num_output")?
                    .ok_or_else(|| layer.error("convolution_param has no num_output"))?;
                let pad = hw(layer, &p, "pad", 0)?;
                let conv = Conv2d::new(out_channels, hw(layer, &p, "kernel", 0)?)
                    .stride(hw(layer, &p, "stride", 1)?)
                    .padding(Pad2d::hw(pad.h, pad.w))
                    .dilation(hw(layer, &p, "dilation", 1)?)
                    .groups(number(layer, &p, "group")?.unwrap_or(1))
                    .bias(flag(layer, &p, "bias_term", true)?);
                b.conv(node, x, conv)
            }
            "Pooling" => pooling(&mut b, layer, node, x)?,
            "LRN" => {
                let p = layer.params("lrn_param");
                if let Some(region) = p.scalar("norm_region") {
                    if region != "ACROSS_CHANNELS" {
                        return Err(layer.error(format!(
                            "norm_region {region} is not supported; only ACROSS_CHANNELS"
                        )));
                    }
                }
                let lrn = LocalResponseNorm {
                    size: number(layer, &p, "local_size")?.unwrap_or(5),
                    alpha: number(layer, &p, "alpha")?.unwrap_or(1.0),
                    beta: number(layer, &p, "beta")?.unwrap_or(0.75),
                    k: number(layer, &p, "k")?.unwrap_or(1.0),
                };
                b.lrn(node, x, lrn)
            }
            "ReLU" => {
                let p = layer.params("relu_param");
                let slope: f64 = number(layer, &p, "negative_slope")?.unwrap_or(0.0);
                if slope != 0.0 {
                    return Err(layer.error("leaky ReLU (negative_slope ≠ 0) is not supported"));
                }
                b.relu(node, x)
            }
            "InnerProduct" => {
                let p = layer.params("inner_product_param");
                if number::<i64>(layer, &p, "axis")?.unwrap_or(1) != 1 {
                    return Err(layer.error("only axis 1 is supported"));
                }
                let out_features = number::<usize>(layer, &p, "num_output")?
                    .ok_or_else(|| layer.error("inner_product_param has no num_output"))?;
                // Caffe flattens implicitly; the IR says so.
                let flat = if x.shape().rank() == 1 {
                    x.clone()
                } else {
                    b.flatten(format!("{node}.flatten"), x)
                };
                let linear = Linear {
                    out_features,
                    bias: flag(layer, &p, "bias_term", true)?,
                    ..Linear::new(out_features)
                };
                b.add(node, Op::Linear(linear), &[&flat])
            }
            "Dropout" => {
                let p = layer.params("dropout_param");
                b.dropout(node, x, number(layer, &p, "dropout_ratio")?.unwrap_or(0.5))
            }
            "Concat" => {
                let p = layer.params("concat_param");
                let axis = number::<i64>(layer, &p, "axis")?
                    .or(number::<i64>(layer, &p, "concat_dim")?)
                    .unwrap_or(1);
                if axis != 1 {
                    return Err(layer.error(format!(
                        "concatenation along axis {axis}; only channels (axis 1) are supported"
                    )));
                }
                let refs: Vec<&T> = inputs.iter().collect();
                b.concat(node, &refs)
            }
            "Eltwise" => {
                let p = layer.params("eltwise_param");
                let operation = p.scalar("operation").unwrap_or("SUM");
                if operation != "SUM" {
                    return Err(
                        layer.error(format!("operation {operation} is not supported; only SUM"))
                    );
                }
                if p.scalars("coeff").any(|c| c.parse::<f64>() != Ok(1.0)) {
                    return Err(layer.error("weighted sums (coeff ≠ 1) are not supported"));
                }
                let refs: Vec<&T> = inputs.iter().collect();
                b.sum(node, &refs)
            }
            "BatchNorm" => {
                let p = layer.params("batch_norm_param");
                let top = layer.tops.first().cloned().unwrap_or_default();
                // A Scale reading this batch norm's output supplies γ and β.
                let scale = layers
                    .get(i)
                    .filter(|next| next.kind == "Scale" && next.bottoms.first() == Some(&top));
                let mut bn = BatchNorm2d::new(x.channels());
                bn.eps = number(layer, &p, "eps")?.unwrap_or(1e-5);
                bn.affine = scale.is_some();
                if let Some(scale) = scale {
                    i += 1;
                    if !flag(scale, &scale.params("scale_param"), "bias_term", false)? {
                        return Err(scale.error(
                            "a Scale without bias_term cannot fold into batch norm's affine (γ, β)",
                        ));
                    }
                    let out = b.add(node, Op::BatchNorm2d(bn), &[x]);
                    for top in &scale.tops {
                        blobs.insert(top.clone(), out.clone());
                    }
                    out
                } else {
                    b.add(node, Op::BatchNorm2d(bn), &[x])
                }
            }
            "Softmax" if i == layers.len() => {
                // The benchmark's output is the class scores; a final softmax is dropped.
                continue;
            }
            other => {
                return Err(layer.error(format!(
                    "layer type \"{other}\" is not supported; supported: {}",
                    SUPPORTED_LAYERS.join(", ")
                )))
            }
        };
        for top in &layer.tops {
            blobs.insert(top.clone(), out.clone());
        }
        last = Some(out);
    }
    let out = last.ok_or_else(|| ImportError::Unsupported("the network has no layers".into()))?;
    Ok(b.finish(&out)?)
}

fn pooling(b: &mut GraphBuilder, layer: &Layer, node: String, x: &T) -> Result<T, ImportError> {
    let p = layer.params("pooling_param");
    let method = p.scalar("pool").unwrap_or("MAX");
    let (_, h, w) = x
        .shape()
        .as_chw()
        .ok_or_else(|| layer.error("pools a flat vector"))?;
    if flag(layer, &p, "global_pooling", false)? {
        return match method {
            "AVE" => Ok(b.adaptive_avg_pool(node, x, 1, 1)),
            "MAX" => Ok(b.max_pool(node, x, MaxPool2d::new([h, w], 1))),
            other => Err(layer.error(format!("pool {other} is not supported; MAX or AVE"))),
        };
    }
    let kernel = hw(layer, &p, "kernel", 0)?;
    let stride = hw(layer, &p, "stride", 1)?;
    let pad = hw(layer, &p, "pad", 0)?;
    // Caffe rounds pooled sizes up unless round_mode is FLOOR.
    let ceil = p.scalar("round_mode") != Some("FLOOR");
    let sane = [kernel.h, kernel.w, stride.h, stride.w]
        .iter()
        .all(|&v| v > 0 && v <= MAX_DIMENSION)
        && pad.h.max(pad.w) <= MAX_DIMENSION;
    // Insane values are left for the graph's validation to report.
    if ceil && sane {
        // Caffe drops a window that starts in the padding only when there is padding;
        // PyTorch always does. Refuse the rare case where the two disagree.
        let caffe = |size: usize, k: usize, s: usize, p: usize| -> i64 {
            let span = (size + 2 * p) as i64 - k as i64;
            let mut out = if span < 0 {
                0
            } else {
                (span + s as i64 - 1) / s as i64 + 1
            };
            if p > 0 && (out - 1) * s as i64 >= (size + p) as i64 {
                out -= 1;
            }
            out
        };
        let ours =
            |size: usize, k: usize, s: usize, p: usize| window_count(size, k, s, 1, p, p, true);
        if caffe(h, kernel.h, stride.h, pad.h) != ours(h, kernel.h, stride.h, pad.h)
            || caffe(w, kernel.w, stride.w, pad.w) != ours(w, kernel.w, stride.w, pad.w)
        {
            return Err(layer.error(
                "Caffe's and PyTorch's ceil rounding give different output sizes for this pooling",
            ));
        }
    }
    match method {
        "MAX" => Ok(b.max_pool(
            node,
            x,
            MaxPool2d::new(kernel, stride)
                .padding(Pad2d::hw(pad.h, pad.w))
                .ceil_mode(ceil),
        )),
        "AVE" => {
            let mut pool = AvgPool2d::new(kernel, stride);
            pool.padding = Pad2d::hw(pad.h, pad.w);
            pool.ceil_mode = ceil;
            pool.count_include_pad = true;
            Ok(b.avg_pool(node, x, pool))
        }
        other => Err(layer.error(format!("pool {other} is not supported; MAX or AVE"))),
    }
}
