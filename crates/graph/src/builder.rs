//! A small API for writing networks in Rust so that a zoo builder reads like the paper's
//! table: each call adds one named node and returns a handle carrying its shape.

use crate::error::GraphError;
use crate::geometry::Shape;
use crate::graph::{Graph, ModelInfo, NodeSpec, INPUT_NAME};
use crate::ops::*;

/// A value flowing through the network under construction: the node's name and shape.
#[derive(Clone, Debug, PartialEq)]
pub struct T {
    name: String,
    shape: Shape,
}

impl T {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn shape(&self) -> &Shape {
        &self.shape
    }
    /// Channels of a feature map (0 for a flat vector).
    pub fn channels(&self) -> usize {
        self.shape.as_chw().map_or(0, |(c, _, _)| c)
    }
}

/// Builds a [`Graph`] node by node. Shapes are inferred as nodes are added (so that
/// `in_channels`/`in_features` can be filled in); the first error is kept and returned by
/// [`GraphBuilder::finish`], so builders need no error handling on every line.
pub struct GraphBuilder {
    name: String,
    input: [usize; 3],
    specs: Vec<NodeSpec>,
    info: ModelInfo,
    error: Option<GraphError>,
}

impl GraphBuilder {
    pub fn new(name: impl Into<String>, input: [usize; 3]) -> Self {
        Self {
            name: name.into(),
            input,
            specs: Vec::new(),
            info: ModelInfo::default(),
            error: None,
        }
    }

    pub fn info(mut self, info: ModelInfo) -> Self {
        self.info = info;
        self
    }

    /// The image input.
    pub fn input(&self) -> T {
        T {
            name: INPUT_NAME.to_string(),
            shape: Shape(self.input.to_vec()),
        }
    }

    /// Adds a node reading `inputs`; in_channels/in_features are taken from the first input.
    pub fn add(&mut self, name: impl Into<String>, mut op: Op, inputs: &[&T]) -> T {
        let name = name.into();
        let placeholder = inputs
            .first()
            .map(|t| t.shape.clone())
            .unwrap_or_else(|| Shape(self.input.to_vec()));
        if self.error.is_some() {
            return T {
                name,
                shape: placeholder,
            };
        }
        if let Some(first) = inputs.first() {
            op.adapt_to_input(&first.shape);
        }
        let shapes: Vec<&Shape> = inputs.iter().map(|t| &t.shape).collect();
        let shape = match op
            .validate()
            .and_then(|_| op.infer(&shapes))
            .map_err(|e| GraphError::node(&name, format!("({}) {e}", op.tag())))
        {
            Ok(s) => s,
            Err(e) => {
                self.error = Some(e);
                return T {
                    name,
                    shape: placeholder,
                };
            }
        };
        self.specs.push(NodeSpec {
            name: name.clone(),
            op,
            inputs: inputs.iter().map(|t| t.name.clone()).collect(),
        });
        T { name, shape }
    }

    pub fn conv(&mut self, name: impl Into<String>, x: &T, conv: Conv2d) -> T {
        self.add(name, Op::Conv2d(conv), &[x])
    }
    /// Batch norm with PyTorch's defaults over `x`'s channels.
    pub fn batch_norm(&mut self, name: impl Into<String>, x: &T) -> T {
        let bn = BatchNorm2d::new(x.channels());
        self.add(name, Op::BatchNorm2d(bn), &[x])
    }
    pub fn relu(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Relu), &[x])
    }
    pub fn lrn(&mut self, name: impl Into<String>, x: &T, lrn: LocalResponseNorm) -> T {
        self.add(name, Op::LocalResponseNorm(lrn), &[x])
    }
    pub fn max_pool(&mut self, name: impl Into<String>, x: &T, pool: MaxPool2d) -> T {
        self.add(name, Op::MaxPool2d(pool), &[x])
    }
    pub fn avg_pool(&mut self, name: impl Into<String>, x: &T, pool: AvgPool2d) -> T {
        self.add(name, Op::AvgPool2d(pool), &[x])
    }
    pub fn adaptive_avg_pool(&mut self, name: impl Into<String>, x: &T, h: usize, w: usize) -> T {
        let op = Op::AdaptiveAvgPool2d(AdaptiveAvgPool2d {
            output: crate::Hw::new(h, w),
        });
        self.add(name, op, &[x])
    }
    pub fn dropout(&mut self, name: impl Into<String>, x: &T, p: f64) -> T {
        self.add(name, Op::Dropout(Dropout { p }), &[x])
    }
    pub fn flatten(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Flatten(NoParams {}), &[x])
    }
    pub fn linear(&mut self, name: impl Into<String>, x: &T, out_features: usize) -> T {
        self.add(name, Op::Linear(Linear::new(out_features)), &[x])
    }
    pub fn concat(&mut self, name: impl Into<String>, xs: &[&T]) -> T {
        self.add(name, Op::Concat(NoParams {}), xs)
    }
    pub fn sum(&mut self, name: impl Into<String>, xs: &[&T]) -> T {
        self.add(name, Op::Add(NoParams {}), xs)
    }

    /// Batch norm with explicit settings (eps, momentum) over `x`'s channels.
    pub fn batch_norm_with(
        &mut self,
        name: impl Into<String>,
        x: &T,
        eps: f64,
        momentum: f64,
    ) -> T {
        let mut bn = BatchNorm2d::new(x.channels());
        bn.eps = eps;
        bn.momentum = momentum;
        self.add(name, Op::BatchNorm2d(bn), &[x])
    }
    pub fn relu6(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Relu6), &[x])
    }
    pub fn silu(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Silu), &[x])
    }
    pub fn gelu(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Gelu), &[x])
    }
    pub fn hardswish(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Hardswish), &[x])
    }
    pub fn hardsigmoid(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Hardsigmoid), &[x])
    }
    pub fn sigmoid(&mut self, name: impl Into<String>, x: &T) -> T {
        self.add(name, Op::Activation(Activation::Sigmoid), &[x])
    }
    /// `x ⊙ gate`, broadcasting size-1 dimensions of `gate`.
    pub fn mul(&mut self, name: impl Into<String>, x: &T, gate: &T) -> T {
        self.add(name, Op::Mul(NoParams {}), &[x, gate])
    }
    /// LayerNorm over `x`'s channels with the given eps.
    pub fn layer_norm2d(&mut self, name: impl Into<String>, x: &T, eps: f64) -> T {
        let mut ln = LayerNorm2d::new(x.channels());
        ln.eps = eps;
        self.add(name, Op::LayerNorm2d(ln), &[x])
    }
    /// A learned per-channel scale over `x`'s channels, starting at `init`.
    pub fn layer_scale(&mut self, name: impl Into<String>, x: &T, init: f64) -> T {
        let op = Op::LayerScale(LayerScale {
            channels: x.channels(),
            init,
        });
        self.add(name, op, &[x])
    }
    pub fn channel_shuffle(&mut self, name: impl Into<String>, x: &T, groups: usize) -> T {
        self.add(name, Op::ChannelShuffle(ChannelShuffle { groups }), &[x])
    }
    /// Channels `start..end` of `x`.
    pub fn slice_channels(
        &mut self,
        name: impl Into<String>,
        x: &T,
        start: usize,
        end: usize,
    ) -> T {
        self.add(name, Op::SliceChannels(SliceChannels { start, end }), &[x])
    }
    pub fn stochastic_depth(&mut self, name: impl Into<String>, x: &T, p: f64) -> T {
        self.add(name, Op::StochasticDepth(StochasticDepth { p }), &[x])
    }

    /// Validates the whole network; `output` is the network's result.
    pub fn finish(self, output: &T) -> Result<Graph, GraphError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Graph::new(
            self.name,
            self.input,
            self.specs,
            Some(output.name()),
            self.info,
        )
    }
}
