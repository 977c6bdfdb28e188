//! One ONNX node as the converters see it: its proto, the name its lowered node gets,
//! typed access to its attributes, and the error that names it.

use super::{AttributeProto, NodeProto};
use crate::ImportError;
use cnnbench_graph::{Hw, Pad2d, T};

/// A node being converted.
pub(super) struct Node<'a> {
    pub(super) proto: &'a NodeProto,
    /// The lowered node's name: the ONNX name without a leading `/` (or
    /// `<op_type>_<index>`), made unique.
    pub(super) name: String,
    /// The node's first output, which names its value ("" when it has none).
    pub(super) output: String,
}

impl Node<'_> {
    pub(super) fn op_type(&self) -> &str {
        &self.proto.op_type
    }
    pub(super) fn error(&self, message: impl Into<String>) -> ImportError {
        ImportError::Layer {
            layer: self.name.clone(),
            kind: self.proto.op_type.clone(),
            message: message.into(),
        }
    }
    /// Whether input `i` is given (ONNX leaves optional inputs out or names them "").
    pub(super) fn has_input(&self, i: usize) -> bool {
        self.proto.input.get(i).is_some_and(|n| !n.is_empty())
    }
    pub(super) fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name == name)
    }
    pub(super) fn int(&self, name: &str, default: i64) -> i64 {
        self.attr(name).map_or(default, |a| a.i)
    }
    pub(super) fn float(&self, name: &str, default: f32) -> f32 {
        self.attr(name).map_or(default, |a| a.f)
    }
    pub(super) fn ints(&self, name: &str) -> Vec<i64> {
        self.attr(name).map(|a| a.ints.clone()).unwrap_or_default()
    }
    pub(super) fn string(&self, name: &str) -> Option<String> {
        self.attr(name)
            .map(|a| String::from_utf8_lossy(&a.s).to_string())
    }
    /// A 2-D attribute such as kernel_shape or strides.
    pub(super) fn hw(&self, name: &str, default: usize) -> Result<Hw, ImportError> {
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

/// An f32 attribute as the f64 its shortest decimal form reads as (0.2f32 → 0.2, not
/// 0.20000000298…), so that settings written from f64 come back as they were.
pub(super) fn decimal(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(v as f64)
}

/// `1 - v` for an f32 `v` rounded to f32's precision (ONNX's BatchNormalization momentum
/// 0.9 is PyTorch's 0.1).
pub(super) fn complement(v: f32) -> f64 {
    ((1.0 - decimal(v)) * 1e7).round() / 1e7
}

pub(super) fn to_usize(node: &Node, what: &str, v: i64) -> Result<usize, ImportError> {
    usize::try_from(v).map_err(|_| node.error(format!("{what} value {v} is negative")))
}

/// ONNX pads are `[top, left, bottom, right]`; `auto_pad` SAME_* computes them.
pub(super) fn padding(
    node: &Node,
    x: &T,
    kernel: Hw,
    stride: Hw,
    dilation: Hw,
) -> Result<Pad2d, ImportError> {
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
