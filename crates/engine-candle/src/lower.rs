//! candle's kernels for the engine kit's interpreter, and the weights they read: one
//! candle `Var` per weight of the Graph, in PyTorch's layout.
//!
//! candle-core has no padded, ceil-mode or count-excluding pooling, and no backward for
//! pooling whose windows overlap (kernel ≠ stride: candle issues #1593, #1851). Pooling is
//! therefore composed here: the input is padded explicitly (−∞ for max, zeros for
//! average), then pooled by candle's own kernel where no gradient is needed or the
//! windows do not overlap, and otherwise as the maximum or sum of the kernel's k_h·k_w
//! strided shifts of the input, which candle differentiates. Ties in a max window share
//! the gradient equally (candle's `maximum`), where PyTorch gives it to the first
//! maximum; the sum reaching the input is the same.

use anyhow::{anyhow, Context, Result};
use candle_core::{DType, Device, Tensor, Var};
use cnnbench_engine::kit::{
    ConvWeights, Kernels, LayerNormWeights, LinearWeights, NormWeights, Program, WeightInit,
    WeightStore,
};
use cnnbench_graph::ops::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d, Conv2d, LayerNorm2d, LayerScale, Linear,
    LocalResponseNorm, MaxPool2d, SliceChannels,
};
use cnnbench_graph::{Activation, Graph, HostTensor, Pad2d, SplitMix64, Weights};

/// A Graph lowered for candle: the kit's program and the weights as candle variables.
pub struct Network {
    program: Program,
    weights: Vec<Var>,
    /// Off for `cnnbench verify`, where engines must compute the same function.
    dropout: bool,
}

impl Network {
    /// The interpreter this network runs on (for the node outputs `verify --localize`
    /// compares).
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Lowers `graph` and creates its weights as PyTorch initialises them, drawn from
    /// `seed` on the host (candle's CPU generator cannot be seeded).
    pub fn lower(graph: &Graph, seed: u64) -> Result<Network> {
        let program = Program::new(graph);
        let mut rng = SplitMix64::new(seed);
        let weights = program
            .weights()
            .iter()
            .map(|spec| {
                let n: usize = spec.shape.iter().product();
                let data: Vec<f32> = match spec.init {
                    WeightInit::Uniform { bound } => (0..n)
                        .map(|_| ((rng.next_f64() * 2.0 - 1.0) * bound) as f32)
                        .collect(),
                    WeightInit::Constant(v) => vec![v as f32; n],
                };
                Ok(Var::from_tensor(&Tensor::from_vec(
                    data,
                    spec.shape.as_slice(),
                    &Device::Cpu,
                )?)?)
            })
            .collect::<Result<Vec<Var>>>()?;
        Ok(Network {
            program,
            weights,
            dropout: true,
        })
    }

    /// Makes dropout the identity in training too.
    pub fn disable_dropout(&mut self) {
        self.dropout = false;
    }

    pub fn graph(&self) -> &Graph {
        self.program.graph()
    }

    /// Runs the network on a batch `[N, C, H, W]`. With `training`, batch norm uses
    /// batch statistics (updating the running ones), dropout is live and candle records
    /// the operations on the weights for backward.
    pub fn forward(&self, input: Tensor, training: bool) -> Result<Tensor> {
        let kernels = CandleKernels {
            weights: &self.weights,
            tracked: training,
        };
        let pass = cnnbench_engine::kit::Pass {
            training,
            dropout: self.dropout,
        };
        self.program.forward(&kernels, input, pass)
    }

    /// The trainable weights and their indices, for the optimizer.
    pub fn trainable(&self) -> impl Iterator<Item = (usize, &Var)> {
        self.program
            .weights()
            .iter()
            .zip(&self.weights)
            .enumerate()
            .filter(|(_, (spec, _))| spec.trainable)
            .map(|(i, (_, var))| (i, var))
    }

    pub fn export_weights(&self) -> Result<Weights> {
        self.program.export_weights(&self.store(None))
    }

    pub fn import_weights(&self, weights: &Weights) -> Result<()> {
        self.program.import_weights(&mut self.store(None), weights)
    }

    /// The gradient arriving at every node in the last backward pass, read from the
    /// probes the kit added ([`Program::keep_node_gradients`]).
    pub fn node_gradients(
        &self,
        grads: &candle_core::backprop::GradStore,
    ) -> Result<Vec<cnnbench_engine::kit::NodeOutput>> {
        self.program
            .gradient_probes::<Tensor>()?
            .into_iter()
            .map(|(node, probe)| {
                // A node the loss does not reach (a detached path) gets zeros.
                let value = match grads.get(&probe) {
                    Some(grad) => to_host(grad)?,
                    None => HostTensor::zeros(probe.dims().to_vec()),
                };
                Ok(cnnbench_engine::kit::NodeOutput { node, value })
            })
            .collect()
    }

    pub fn weight_gradients(&self, grads: &candle_core::backprop::GradStore) -> Result<Weights> {
        self.program.weight_gradients(&self.store(Some(grads)))
    }

    fn store<'a>(&'a self, grads: Option<&'a candle_core::backprop::GradStore>) -> Store<'a> {
        Store {
            weights: &self.weights,
            grads,
        }
    }
}

struct CandleKernels<'a> {
    weights: &'a [Var],
    /// Whether candle should record operations on the weights (training passes).
    tracked: bool,
}

impl CandleKernels<'_> {
    fn weight(&self, i: usize) -> Tensor {
        if self.tracked {
            self.weights[i].as_tensor().clone()
        } else {
            self.weights[i].as_tensor().detach()
        }
    }
    /// A per-channel vector shaped to broadcast over `[N, C, H, W]`.
    fn channel(&self, i: usize) -> Result<Tensor> {
        let w = self.weight(i);
        let c = w.dim(0)?;
        Ok(w.reshape((1, c, 1, 1))?)
    }
}

impl Kernels for CandleKernels<'_> {
    type Value = Tensor;

    fn gradient_probe(&self, value: Tensor) -> Result<(Tensor, Tensor)> {
        let probe = Var::zeros(value.dims(), value.dtype(), value.device())?;
        let probe = probe.as_tensor().clone();
        Ok(((value + &probe)?, probe))
    }

    fn to_host(&self, value: &Tensor) -> Result<HostTensor> {
        to_host(value)
    }

    /// candle's conv2d takes one padding, stride and dilation for both axes; others are
    /// composed: padding done explicitly, a kernel dilated with zeros, a stride-1
    /// convolution subsampled.
    fn conv2d(&self, x: Tensor, c: &Conv2d, w: ConvWeights) -> Result<Tensor> {
        let (x, pad) = pad_for_square(x, c.padding, 0.0)?;
        let mut kernel = self.weight(w.weight);
        let dilation = if c.dilation.h == c.dilation.w {
            c.dilation.h
        } else {
            kernel = dilate(&dilate(&kernel, 2, c.dilation.h)?, 3, c.dilation.w)?;
            1
        };
        let square = c.stride.h == c.stride.w;
        let stride = if square { c.stride.h } else { 1 };
        let mut out = x.conv2d(&kernel, pad, stride, dilation, c.groups)?;
        if !square {
            for (dim, step) in [(2, c.stride.h), (3, c.stride.w)] {
                let count = (out.dim(dim)? - 1) / step + 1;
                out = strided(&out, dim, 0, count, step)?;
            }
        }
        Ok(match w.bias {
            Some(b) => out.broadcast_add(&self.channel(b)?)?,
            None => out,
        })
    }

    fn batch_norm2d(
        &self,
        x: Tensor,
        b: &BatchNorm2d,
        w: NormWeights,
        training: bool,
    ) -> Result<Tensor> {
        let (mean, var) = if training {
            let mean = x.mean_keepdim((0, 2, 3))?;
            let centred = x.broadcast_sub(&mean)?;
            let var = centred.sqr()?.mean_keepdim((0, 2, 3))?;
            // The running variance follows the unbiased batch variance, as in PyTorch.
            let (n, _, h, wd) = x.dims4()?;
            let count = (n * h * wd) as f64;
            let unbiased = if count > 1.0 {
                count / (count - 1.0)
            } else {
                1.0
            };
            let m = b.momentum;
            let update = |index: usize, batch: &Tensor, scale: f64| -> Result<()> {
                let running = self.weights[index].as_tensor().detach();
                let batch = batch.detach().flatten_all()?.affine(scale * m, 0.0)?;
                let next = running.affine(1.0 - m, 0.0)?.add(&batch)?;
                self.weights[index].set(&next)?;
                Ok(())
            };
            update(w.running_mean, &mean, 1.0)?;
            update(w.running_var, &var, unbiased)?;
            (mean, var)
        } else {
            (self.channel(w.running_mean)?, self.channel(w.running_var)?)
        };
        let normalised = x
            .broadcast_sub(&mean)?
            .broadcast_div(&var.affine(1.0, b.eps)?.sqrt()?)?;
        Ok(match w.affine {
            Some((g, s)) => normalised
                .broadcast_mul(&self.channel(g)?)?
                .broadcast_add(&self.channel(s)?)?,
            None => normalised,
        })
    }

    fn linear(&self, x: Tensor, _: &Linear, w: LinearWeights) -> Result<Tensor> {
        let x = if x.rank() == 2 { x } else { x.flatten_from(1)? };
        let out = x.matmul(&self.weight(w.weight).t()?)?;
        Ok(match w.bias {
            Some(b) => out.broadcast_add(&self.weight(b))?,
            None => out,
        })
    }

    fn layer_norm2d(&self, x: Tensor, l: &LayerNorm2d, w: LayerNormWeights) -> Result<Tensor> {
        let mean = x.mean_keepdim(1)?;
        let centred = x.broadcast_sub(&mean)?;
        let var = centred.sqr()?.mean_keepdim(1)?;
        Ok(centred
            .broadcast_div(&var.affine(1.0, l.eps)?.sqrt()?)?
            .broadcast_mul(&self.channel(w.weight)?)?
            .broadcast_add(&self.channel(w.bias)?)?)
    }

    fn layer_scale(&self, x: Tensor, _: &LayerScale, scale: usize) -> Result<Tensor> {
        Ok(x.broadcast_mul(&self.channel(scale)?)?)
    }

    /// candle has no in-place kernels, so the overwrite hint is not used.
    fn activation(&self, x: Tensor, act: Activation, _overwrite: bool) -> Result<Tensor> {
        let hard_sigmoid = |x: &Tensor| -> Result<Tensor> {
            // PyTorch: relu6(x + 3) / 6 = clamp(x / 6 + 1/2, 0, 1).
            Ok(x.affine(1.0 / 6.0, 0.5)?.clamp(0f32, 1f32)?)
        };
        Ok(match act {
            Activation::Relu => x.relu()?,
            Activation::Relu6 => x.clamp(0f32, 6f32)?,
            Activation::Silu => x.silu()?,
            Activation::Gelu => x.gelu_erf()?,
            Activation::Hardswish => (&x * hard_sigmoid(&x)?)?,
            Activation::Hardsigmoid => hard_sigmoid(&x)?,
            Activation::Sigmoid => (x.neg()?.exp()? + 1.0)?.recip()?,
        })
    }

    /// PyTorch's (and Caffe's) cross-channel LRN: `x / (k + alpha · mean_window(x²))^beta`,
    /// the window of `size` channels centred and zero-padded at the ends.
    fn local_response_norm(&self, x: Tensor, l: &LocalResponseNorm) -> Result<Tensor> {
        let c = x.dim(1)?;
        let squares = x.sqr()?.pad_with_zeros(1, l.size / 2, (l.size - 1) / 2)?;
        let mut sum = squares.narrow(1, 0, c)?;
        for offset in 1..l.size {
            sum = (sum + squares.narrow(1, offset, c)?)?;
        }
        let denominator = sum.affine(l.alpha / l.size as f64, l.k)?.powf(l.beta)?;
        Ok(x.div(&denominator)?)
    }

    fn max_pool2d(&self, x: Tensor, p: &MaxPool2d) -> Result<Tensor> {
        let window = Window::new(&x, p.kernel, p.effective_stride(), p.padding, p.ceil_mode)?;
        let padded = window.pad(&x, f64::NEG_INFINITY)?;
        window.reduce(&padded, Reduce::Max, self.tracked)
    }

    fn avg_pool2d(&self, x: Tensor, p: &AvgPool2d) -> Result<Tensor> {
        let window = Window::new(&x, p.kernel, p.effective_stride(), p.padding, p.ceil_mode)?;
        let sums = window.reduce(&window.pad(&x, 0.0)?, Reduce::Sum, self.tracked)?;
        // The divisor per output: the window's elements inside the input (and inside the
        // explicit padding when it counts), never those of the ceil-mode overhang.
        let (_, _, h, w) = x.dims4()?;
        let ones = Tensor::ones((1, 1, h, w), DType::F32, x.device())?;
        let counted = if p.count_include_pad {
            pad_hw(&ones, p.padding, 1.0)?
        } else {
            pad_hw(&ones, p.padding, 0.0)?
        };
        let counted = window.pad_overhang(&counted, 0.0)?;
        let divisor = window.reduce(&counted, Reduce::Sum, false)?;
        Ok(sums.broadcast_div(&divisor)?)
    }

    /// PyTorch's adaptive bins: output row i averages input rows ⌊i·H/o⌋ .. ⌈(i+1)·H/o⌉;
    /// averages over rectangles are separable, so rows first, then columns.
    fn adaptive_avg_pool2d(&self, x: Tensor, p: &AdaptiveAvgPool2d) -> Result<Tensor> {
        let (_, _, h, w) = x.dims4()?;
        if p.output.h == 1 && p.output.w == 1 {
            return Ok(x.mean_keepdim((2, 3))?);
        }
        let bins = |dim: usize, size: usize, out: usize, x: &Tensor| -> Result<Tensor> {
            if size == out {
                return Ok(x.clone());
            }
            let parts = (0..out)
                .map(|i| {
                    let start = i * size / out;
                    let end = ((i + 1) * size).div_ceil(out);
                    Ok(x.narrow(dim, start, end - start)?.mean_keepdim(dim)?)
                })
                .collect::<Result<Vec<Tensor>>>()?;
            Ok(Tensor::cat(&parts, dim)?)
        };
        let rows = bins(2, h, p.output.h, &x)?;
        bins(3, w, p.output.w, &rows)
    }

    fn dropout(&self, x: Tensor, p: f64) -> Result<Tensor> {
        let keep = 1.0 - p;
        let mask = x.rand_like(0.0, 1.0)?.lt(keep)?.to_dtype(DType::F32)?;
        Ok((x * mask)?.affine(1.0 / keep, 0.0)?)
    }

    fn flatten(&self, x: Tensor) -> Result<Tensor> {
        Ok(x.flatten_from(1)?)
    }

    fn concat(&self, xs: Vec<Tensor>) -> Result<Tensor> {
        Ok(Tensor::cat(&xs, 1)?)
    }

    fn add(&self, xs: Vec<Tensor>, _overwrite: bool) -> Result<Tensor> {
        let mut xs = xs.into_iter();
        let mut acc = xs.next().ok_or_else(|| anyhow!("add has no inputs"))?;
        for x in xs {
            acc = (acc + x)?;
        }
        Ok(acc)
    }

    fn mul(&self, a: Tensor, b: Tensor) -> Result<Tensor> {
        Ok(a.broadcast_mul(&b)?)
    }

    fn channel_shuffle(&self, x: Tensor, groups: usize) -> Result<Tensor> {
        let (n, c, h, w) = x.dims4()?;
        Ok(x.reshape((n, groups, c / groups, h, w))?
            .transpose(1, 2)?
            .contiguous()?
            .reshape((n, c, h, w))?)
    }

    fn slice_channels(&self, x: Tensor, s: &SliceChannels) -> Result<Tensor> {
        Ok(x.narrow(1, s.start, s.end - s.start)?)
    }
}

/// `kernel` `[O, I, kH, kW]` with `dilation − 1` zeros between its taps along `dim`.
fn dilate(kernel: &Tensor, dim: usize, dilation: usize) -> Result<Tensor> {
    if dilation == 1 {
        return Ok(kernel.clone());
    }
    let taps = kernel.dim(dim)?;
    let mut spread = kernel.dims().to_vec();
    spread[dim] = taps * dilation;
    Ok(kernel
        .unsqueeze(dim + 1)?
        .pad_with_zeros(dim + 1, 0, dilation - 1)?
        .reshape(spread)?
        .narrow(dim, 0, (taps - 1) * dilation + 1)?)
}

/// Pads `x` where candle's one symmetric `padding` argument cannot say it, and returns
/// the padding left for the convolution itself.
fn pad_for_square(x: Tensor, p: Pad2d, fill: f64) -> Result<(Tensor, usize)> {
    if p.top == p.bottom && p.left == p.right && p.top == p.left {
        return Ok((x, p.top));
    }
    Ok((pad_hw(&x, p, fill)?, 0))
}

/// `x` `[N, C, H, W]` with `p` rows and columns of `fill` around it.
fn pad_hw(x: &Tensor, p: Pad2d, fill: f64) -> Result<Tensor> {
    let x = pad_dim(x, 2, p.top, p.bottom, fill)?;
    pad_dim(&x, 3, p.left, p.right, fill)
}

fn pad_dim(x: &Tensor, dim: usize, before: usize, after: usize, fill: f64) -> Result<Tensor> {
    if before == 0 && after == 0 {
        return Ok(x.clone());
    }
    if fill == 0.0 {
        return Ok(x.pad_with_zeros(dim, before, after)?);
    }
    let mut parts = Vec::with_capacity(3);
    let block = |len: usize| -> Result<Tensor> {
        let mut dims = x.dims().to_vec();
        dims[dim] = len;
        Ok(Tensor::full(fill as f32, dims, x.device())?)
    };
    if before > 0 {
        parts.push(block(before)?);
    }
    parts.push(x.clone());
    if after > 0 {
        parts.push(block(after)?);
    }
    Ok(Tensor::cat(&parts, dim)?)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Reduce {
    Max,
    Sum,
}

/// A pooling window's geometry on one input, PyTorch's rules (ceil mode drops a window
/// that would start in the right or bottom padding).
struct Window {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: Pad2d,
    out: [usize; 2],
    /// Rows and columns the padded input lacks for the last (ceil-mode) window.
    overhang: [usize; 2],
}

impl Window {
    fn new(
        x: &Tensor,
        kernel: cnnbench_graph::Hw,
        stride: cnnbench_graph::Hw,
        padding: Pad2d,
        ceil: bool,
    ) -> Result<Window> {
        let (_, _, h, w) = x.dims4()?;
        let axis = |size: usize, k: usize, s: usize, before: usize, after: usize| {
            let span = size + before + after;
            let steps = if ceil {
                (span.saturating_sub(k)).div_ceil(s)
            } else {
                span.saturating_sub(k) / s
            };
            let mut out = steps + 1;
            if ceil && (out - 1) * s >= size + before {
                out -= 1;
            }
            let needed = (out - 1) * s + k;
            (out, needed.saturating_sub(span))
        };
        let (oh, extra_h) = axis(h, kernel.h, stride.h, padding.top, padding.bottom);
        let (ow, extra_w) = axis(w, kernel.w, stride.w, padding.left, padding.right);
        Ok(Window {
            kernel: [kernel.h, kernel.w],
            stride: [stride.h, stride.w],
            padding,
            out: [oh, ow],
            overhang: [extra_h, extra_w],
        })
    }

    /// The input padded with `fill`, including the ceil-mode overhang.
    fn pad(&self, x: &Tensor, fill: f64) -> Result<Tensor> {
        self.pad_overhang(&pad_hw(x, self.padding, fill)?, fill)
    }

    fn pad_overhang(&self, x: &Tensor, fill: f64) -> Result<Tensor> {
        let x = pad_dim(x, 2, 0, self.overhang[0], fill)?;
        pad_dim(&x, 3, 0, self.overhang[1], fill)
    }

    /// Max or sum over each window of the padded input. candle's own pooling kernels
    /// serve when no gradient is needed or the windows tile the input; otherwise the
    /// k_h·k_w strided shifts are combined, which candle can differentiate.
    fn reduce(&self, padded: &Tensor, how: Reduce, differentiable: bool) -> Result<Tensor> {
        let [kh, kw] = self.kernel;
        let [sh, sw] = self.stride;
        let [oh, ow] = self.out;
        // Exactly the rows and columns the windows cover.
        let used = padded
            .narrow(2, 0, (oh - 1) * sh + kh)?
            .narrow(3, 0, (ow - 1) * sw + kw)?;
        let tiles = kh == sh && kw == sw;
        if !differentiable || tiles {
            let used = used.contiguous()?;
            return Ok(match how {
                Reduce::Max => used.max_pool2d_with_stride((kh, kw), (sh, sw))?,
                Reduce::Sum => used
                    .avg_pool2d_with_stride((kh, kw), (sh, sw))?
                    .affine((kh * kw) as f64, 0.0)?,
            });
        }
        let mut acc: Option<Tensor> = None;
        for i in 0..kh {
            let rows = strided(&used, 2, i, oh, sh)?;
            for j in 0..kw {
                let shift = strided(&rows, 3, j, ow, sw)?;
                acc = Some(match acc {
                    None => shift,
                    Some(a) => match how {
                        Reduce::Max => a.maximum(&shift)?,
                        Reduce::Sum => (a + shift)?,
                    },
                });
            }
        }
        acc.context("a pooling window has no elements")
    }
}

/// Elements `start, start + step, …` (`count` of them) of `x` along `dim` (2 or 3).
fn strided(x: &Tensor, dim: usize, start: usize, count: usize, step: usize) -> Result<Tensor> {
    if step == 1 {
        return Ok(x.narrow(dim, start, count)?);
    }
    let available = x.dim(dim)? - start;
    let x = x.narrow(dim, start, available.min(count * step))?;
    // Room for `count` whole steps, so that a reshape can split them off.
    let x = if available < count * step {
        x.pad_with_zeros(dim, 0, count * step - available)?
    } else {
        x
    };
    let mut split = x.dims().to_vec();
    split[dim] = count;
    split.insert(dim + 1, step);
    let mut out = x.dims().to_vec();
    out[dim] = count;
    Ok(x.contiguous()?
        .reshape(split)?
        .narrow(dim + 1, 0, 1)?
        .reshape(out)?)
}

/// The network's weights seen by the kit as host tensors in PyTorch's layout.
struct Store<'a> {
    weights: &'a [Var],
    grads: Option<&'a candle_core::backprop::GradStore>,
}

impl WeightStore for Store<'_> {
    fn read(&self, i: usize) -> Result<HostTensor> {
        to_host(self.weights[i].as_tensor())
    }

    fn write(&mut self, i: usize, value: &HostTensor) -> Result<()> {
        Ok(self.weights[i].set(&from_host(value)?)?)
    }

    fn gradient(&self, i: usize) -> Result<Option<HostTensor>> {
        let grads = self
            .grads
            .ok_or_else(|| anyhow!("no gradients: run backward first"))?;
        grads
            .get(self.weights[i].as_tensor())
            .map(to_host)
            .transpose()
    }
}

/// Copies a tensor to the host in row-major order.
pub fn to_host(t: &Tensor) -> Result<HostTensor> {
    let shape = t.dims().to_vec();
    let data = t.flatten_all()?.to_vec1::<f32>()?;
    Ok(HostTensor::new(shape, data)?)
}

/// A candle tensor on the CPU holding `host`'s values.
pub fn from_host(host: &HostTensor) -> Result<Tensor> {
    Ok(Tensor::from_vec(
        host.data.clone(),
        host.shape.as_slice(),
        &Device::Cpu,
    )?)
}
