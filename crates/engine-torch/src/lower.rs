//! Lowering of Graph nodes onto libtorch's native ops, and the interpreter that runs
//! them under autograd. Weights are plain libtorch tensors keyed as
//! [`Graph::weight_specs`] names them, which is PyTorch's own layout.

use crate::aten::AutocastGuard;
use anyhow::{anyhow, Result};
use cnnbench_engine::kit::{
    ConvWeights, Kernels, LayerNormWeights, LinearWeights, NormWeights, Pass, Program, WeightInit,
    WeightStore,
};
use cnnbench_engine::Precision;
use cnnbench_graph::ops::{
    AdaptiveAvgPool2d, AvgPool2d, BatchNorm2d, Conv2d, LayerNorm2d, LayerScale, Linear,
    LocalResponseNorm, MaxPool2d, SliceChannels,
};
use cnnbench_graph::{Activation, Graph, HostTensor, Op, Pad2d, Weights};
use tch::{Device, Kind, Tensor};

/// One weight tensor: a trained parameter (requires grad) or a running statistic.
pub struct Weight {
    pub tensor: Tensor,
    pub trainable: bool,
}

/// libtorch pads both sides of an axis alike; other paddings are applied explicitly.
#[derive(Clone, Copy)]
enum Padding {
    Symmetric([i64; 2]),
    /// `[left, right, top, bottom]`, as `constant_pad_nd` takes them.
    Explicit([i64; 4]),
}

impl Padding {
    fn of(p: Pad2d) -> Self {
        if p.top == p.bottom && p.left == p.right {
            Padding::Symmetric([p.top as i64, p.left as i64])
        } else {
            Padding::Explicit([p.left as i64, p.right as i64, p.top as i64, p.bottom as i64])
        }
    }
    /// Pads `x` explicitly where needed (with `fill`) and returns the symmetric padding
    /// left for the op itself.
    fn apply(self, x: Tensor, fill: f64) -> Result<(Tensor, [i64; 2])> {
        match self {
            Padding::Symmetric(p) => Ok((x, p)),
            Padding::Explicit(p) => Ok((x.f_pad(p, "constant", fill)?, [0, 0])),
        }
    }
}

fn hw(v: cnnbench_graph::Hw) -> [i64; 2] {
    [v.h as i64, v.w as i64]
}

/// What libtorch cannot do of the IR, refused when a session is prepared.
pub fn supports(op: &Op) -> Result<(), String> {
    // Every op has its kernels (the kit's `Kernels` trait makes a new one a compile
    // error); only these forms of them are beyond libtorch.
    if let Op::AvgPool2d(p) = op {
        if matches!(Padding::of(p.padding), Padding::Explicit(_)) && !p.count_include_pad {
            return Err(
                "libtorch cannot average-pool with uneven padding that is left out of the count"
                    .into(),
            );
        }
    }
    Ok(())
}

/// A Graph lowered for libtorch: the kit's program and the weights, plain libtorch
/// tensors in PyTorch's own layout.
pub struct Network {
    program: Program,
    pub weights: Vec<Weight>,
    dropout: bool,
    /// Mixed precision (`amp-bf16`, `amp-f16`): the forward pass runs in libtorch's
    /// autocast to this kind; the weights stay f32.
    autocast: Option<Kind>,
    device: Device,
    /// The whole model's kind (`bf16`, `f16`: weights, running statistics and input
    /// converted, as `model.to(torch.bfloat16)` does); f32 otherwise.
    kind: Kind,
}

impl Network {
    /// The interpreter this network runs on (for the node outputs `verify --localize`
    /// compares).
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Lowers `graph` and initialises its weights as PyTorch's layers do (the kit's
    /// [`WeightInit`]).
    pub fn lower(graph: &Graph, device: Device, precision: Precision) -> Result<Network> {
        let program = Program::new(graph);
        program.check_support(supports)?;
        let (kind, autocast) = match precision {
            // TF32 is a switch of the CUDA libraries, set when the engine starts.
            Precision::F32 | Precision::Tf32 => (Kind::Float, None),
            Precision::Bf16 => (Kind::BFloat16, None),
            Precision::F16 => (Kind::Half, None),
            Precision::AmpBf16 => (Kind::Float, Some(Kind::BFloat16)),
            Precision::AmpF16 => (Kind::Float, Some(Kind::Half)),
            // Admission refuses int8 first (the capabilities do not list it).
            Precision::Int8 => {
                return Err(anyhow::anyhow!(
                    "libtorch has no int8 here: {}",
                    cnnbench_engine::INT8_ENGINES
                ))
            }
        };
        let f32_on = (Kind::Float, device);
        let mut weights = Vec::with_capacity(program.weights().len());
        for slot in program.weights() {
            let shape: Vec<i64> = slot.shape.iter().map(|&d| d as i64).collect();
            // Drawn in f32 whatever the precision, so every precision starts from the
            // same weights (rounded to the model's kind).
            let tensor = match slot.init {
                WeightInit::Uniform { bound } => {
                    Tensor::f_empty(shape.as_slice(), f32_on)?.f_uniform_(-bound, bound)?
                }
                WeightInit::Constant(v) => Tensor::f_full(shape.as_slice(), v, f32_on)?,
            }
            .f_to_kind(kind)?;
            let tensor = if slot.trainable {
                tensor.f_set_requires_grad(true)?
            } else {
                tensor
            };
            weights.push(Weight {
                tensor,
                trainable: slot.trainable,
            });
        }
        Ok(Network {
            program,
            weights,
            dropout: true,
            autocast,
            device,
            kind,
        })
    }

    /// Moves every 4-D weight (the convolutions') into channels-last memory, as
    /// `model.to(memory_format=torch.channels_last)` does. Call before an optimizer
    /// takes the parameters: the tensors are replaced.
    pub fn use_channels_last(&mut self) -> Result<()> {
        for w in &mut self.weights {
            if w.tensor.dim() == 4 {
                let nhwc = channels_last(&w.tensor.f_detach()?)?;
                w.tensor = if w.trainable {
                    nhwc.f_set_requires_grad(true)?
                } else {
                    nhwc
                };
            }
        }
        Ok(())
    }

    /// The kind the input must arrive in: the model's (f32 under autocast).
    pub fn input_kind(&self) -> Kind {
        self.kind
    }

    /// Makes dropout the identity in training too (`cnnbench verify`).
    pub fn disable_dropout(&mut self) {
        self.dropout = false;
    }

    /// The trainable weights, for the optimizer and for gradients.
    pub fn parameters(&self) -> impl Iterator<Item = &Weight> {
        self.weights.iter().filter(|w| w.trainable)
    }

    /// Runs the network on `input` `[N, C, H, W]`. `training` selects batch statistics
    /// (updating the running ones) and live dropout; autograd records when any weight
    /// requires grad and no `no_grad` guard is active.
    ///
    /// Mixed precision (`amp-*`) is libtorch's own autocast around the forward pass,
    /// as `with torch.autocast(device, dtype):` (tch's switch is CUDA-and-f16 only, so
    /// the ATen shim opens it): ATen's op lists decide what computes in the low kind.
    /// The backward pass runs outside it, as PyTorch recommends. A whole-model kind
    /// (`bf16`, `f16`) computes every op in that kind, except layer norms, which
    /// PyTorch computes in f32 as well.
    pub fn forward(&self, input: &Tensor, training: bool) -> Result<Tensor> {
        let pass = Pass {
            training,
            dropout: self.dropout,
        };
        let kernels = TorchKernels {
            weights: &self.weights,
        };
        let _autocast = self
            .autocast
            .map(|kind| AutocastGuard::enter(self.device, kind))
            .transpose()?;
        self.program
            .forward(&kernels, Shared(input.shallow_clone()), pass)
            .map(|v| v.0)
    }

    /// Every weight, copied to the host.
    pub fn export_weights(&self) -> Result<Weights> {
        self.program.export_weights(&Store(&self.weights))
    }

    /// Overwrites every weight in place (so the optimizer keeps tracking them).
    pub fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        let _guard = tch::no_grad_guard();
        let program = &self.program;
        program.import_weights(&mut StoreMut(&mut self.weights), weights)
    }

    /// The gradient arriving at every node in the last backward pass, read from the
    /// probes the kit added ([`Program::keep_node_gradients`]).
    pub fn node_gradients(&self) -> Result<Vec<cnnbench_engine::kit::NodeOutput>> {
        self.program
            .gradient_probes::<Shared>()?
            .into_iter()
            .map(|(node, probe)| {
                // A node the loss does not reach (a detached path) gets zeros.
                let grad = probe.0.grad();
                let value = if grad.defined() {
                    to_host(&grad)?
                } else {
                    let shape = probe.0.size().iter().map(|&d| d as usize).collect();
                    HostTensor::zeros(shape)
                };
                Ok(cnnbench_engine::kit::NodeOutput { node, value })
            })
            .collect()
    }

    /// The gradients of the trainable weights the loss reached (a parameter it did not
    /// reach has none, on every rank alike), as handles: writing to one writes the
    /// weight's `.grad`, as the gradient scaler and the all-reduce do.
    pub fn reached_gradients(&self) -> Vec<Tensor> {
        self.parameters()
            .map(|p| p.tensor.grad())
            .filter(|g| g.defined())
            .collect()
    }

    /// The gradient of every trainable weight after a backward pass; a weight the loss
    /// does not reach gets zeros.
    pub fn weight_gradients(&self) -> Result<Weights> {
        self.program.weight_gradients(&Store(&self.weights))
    }
}

/// A libtorch tensor handle as the interpreter's value: cloning shares the storage, as
/// Python's references do.
pub struct Shared(pub Tensor);

impl Clone for Shared {
    fn clone(&self) -> Self {
        Shared(self.0.shallow_clone())
    }
}

struct TorchKernels<'a> {
    weights: &'a [Weight],
}

impl TorchKernels<'_> {
    fn weight(&self, i: usize) -> &Tensor {
        &self.weights[i].tensor
    }
}

impl Kernels for TorchKernels<'_> {
    type Value = Shared;

    fn to_host(&self, value: &Shared) -> Result<HostTensor> {
        to_host(&value.0)
    }

    fn gradient_probe(&self, value: Shared) -> Result<(Shared, Shared)> {
        let probe = value.0.f_zeros_like()?.set_requires_grad(true);
        Ok((Shared(value.0.f_add(&probe)?), Shared(probe)))
    }

    fn conv2d(&self, x: Shared, c: &Conv2d, w: ConvWeights) -> Result<Shared> {
        let (x, pad) = Padding::of(c.padding).apply(x.0, 0.0)?;
        let bias = w.bias.map(|b| self.weight(b));
        let out = x.f_conv2d(
            self.weight(w.weight),
            bias,
            hw(c.stride),
            pad,
            hw(c.dilation),
            c.groups as i64,
        )?;
        Ok(Shared(out))
    }

    fn batch_norm2d(
        &self,
        x: Shared,
        b: &BatchNorm2d,
        w: NormWeights,
        training: bool,
    ) -> Result<Shared> {
        Ok(Shared(x.0.f_batch_norm(
            w.affine.map(|(g, _)| self.weight(g)),
            w.affine.map(|(_, s)| self.weight(s)),
            Some(self.weight(w.running_mean)),
            Some(self.weight(w.running_var)),
            training,
            b.momentum,
            b.eps,
            true,
        )?))
    }

    fn linear(&self, x: Shared, _: &Linear, w: LinearWeights) -> Result<Shared> {
        let bias = w.bias.map(|b| self.weight(b));
        Ok(Shared(x.0.f_linear(self.weight(w.weight), bias)?))
    }

    fn layer_norm2d(&self, x: Shared, l: &LayerNorm2d, w: LayerNormWeights) -> Result<Shared> {
        let kind = x.0.kind();
        Ok(Shared(
            x.0.f_to_kind(Kind::Float)?
                .f_permute([0, 2, 3, 1])?
                .f_layer_norm(
                    [l.num_channels as i64],
                    Some(&self.weight(w.weight).f_to_kind(Kind::Float)?),
                    Some(&self.weight(w.bias).f_to_kind(Kind::Float)?),
                    l.eps,
                    true,
                )?
                .f_permute([0, 3, 1, 2])?
                .f_to_kind(kind)?,
        ))
    }

    fn layer_scale(&self, x: Shared, _: &LayerScale, scale: usize) -> Result<Shared> {
        Ok(Shared(
            x.0.f_mul(&self.weight(scale).f_view([1, -1, 1, 1])?)?,
        ))
    }

    fn activation(&self, x: Shared, act: Activation, overwrite: bool) -> Result<Shared> {
        let mut x = x.0;
        Ok(Shared(match act {
            Activation::Relu if overwrite => x.f_relu_()?,
            Activation::Relu6 if overwrite => x.f_relu6_()?,
            Activation::Relu => x.f_relu()?,
            Activation::Relu6 => x.f_relu6()?,
            Activation::Silu => x.f_silu()?,
            Activation::Gelu => x.f_gelu("none")?,
            Activation::Hardswish => x.f_hardswish()?,
            Activation::Hardsigmoid => x.f_hardsigmoid()?,
            Activation::Sigmoid => x.f_sigmoid()?,
        }))
    }

    fn local_response_norm(&self, x: Shared, l: &LocalResponseNorm) -> Result<Shared> {
        Ok(Shared(local_response_norm(
            &x.0,
            l.size as i64,
            l.alpha,
            l.beta,
            l.k,
        )?))
    }

    fn max_pool2d(&self, x: Shared, p: &MaxPool2d) -> Result<Shared> {
        let (x, pad) = Padding::of(p.padding).apply(x.0, f64::NEG_INFINITY)?;
        Ok(Shared(x.f_max_pool2d(
            hw(p.kernel),
            hw(p.effective_stride()),
            pad,
            [1, 1],
            p.ceil_mode,
        )?))
    }

    fn avg_pool2d(&self, x: Shared, p: &AvgPool2d) -> Result<Shared> {
        let (x, pad) = Padding::of(p.padding).apply(x.0, 0.0)?;
        Ok(Shared(x.f_avg_pool2d(
            hw(p.kernel),
            hw(p.effective_stride()),
            pad,
            p.ceil_mode,
            p.count_include_pad,
            None,
        )?))
    }

    fn adaptive_avg_pool2d(&self, x: Shared, p: &AdaptiveAvgPool2d) -> Result<Shared> {
        Ok(Shared(x.0.f_adaptive_avg_pool2d(hw(p.output))?))
    }

    fn dropout(&self, x: Shared, p: f64) -> Result<Shared> {
        Ok(Shared(x.0.f_dropout(p, true)?))
    }

    fn flatten(&self, x: Shared) -> Result<Shared> {
        Ok(Shared(x.0.f_flatten(1, -1)?))
    }

    fn concat(&self, xs: Vec<Shared>) -> Result<Shared> {
        let parts: Vec<Tensor> = xs.into_iter().map(|x| x.0).collect();
        Ok(Shared(Tensor::f_cat(&parts, 1)?))
    }

    fn add(&self, xs: Vec<Shared>, overwrite: bool) -> Result<Shared> {
        let mut xs = xs.into_iter();
        let mut acc = xs.next().ok_or_else(|| anyhow!("add has no inputs"))?.0;
        for (k, x) in xs.enumerate() {
            // The first sum may overwrite the first input; later ones always overwrite
            // the fresh sum.
            acc = if overwrite || k > 0 {
                acc.f_add_(&x.0)?
            } else {
                acc.f_add(&x.0)?
            };
        }
        Ok(Shared(acc))
    }

    fn mul(&self, a: Shared, b: Shared) -> Result<Shared> {
        Ok(Shared(a.0.f_mul(&b.0)?))
    }

    fn channel_shuffle(&self, x: Shared, groups: usize) -> Result<Shared> {
        let size = x.0.size();
        let (n, c, h, w) = (size[0], size[1], size[2], size[3]);
        let g = groups as i64;
        Ok(Shared(
            x.0.f_view([n, g, c / g, h, w])?
                .f_transpose(1, 2)?
                .f_contiguous()?
                .f_view([n, c, h, w])?,
        ))
    }

    fn slice_channels(&self, x: Shared, s: &SliceChannels) -> Result<Shared> {
        Ok(Shared(x.0.f_narrow(
            1,
            s.start as i64,
            (s.end - s.start) as i64,
        )?))
    }
}

/// The weights seen by the kit as host tensors (read-only).
struct Store<'a>(&'a [Weight]);

impl WeightStore for Store<'_> {
    fn read(&self, i: usize) -> Result<HostTensor> {
        to_host(&self.0[i].tensor)
    }
    fn write(&mut self, _: usize, _: &HostTensor) -> Result<()> {
        Err(anyhow!("these weights are read-only"))
    }
    fn gradient(&self, i: usize) -> Result<Option<HostTensor>> {
        let grad = self.0[i].tensor.grad();
        Ok(if grad.defined() {
            Some(to_host(&grad)?)
        } else {
            None
        })
    }
}

/// The weights, writable: values are copied into the existing tensors, so the
/// optimizer keeps tracking them.
struct StoreMut<'a>(&'a mut [Weight]);

impl WeightStore for StoreMut<'_> {
    fn read(&self, i: usize) -> Result<HostTensor> {
        to_host(&self.0[i].tensor)
    }
    fn write(&mut self, i: usize, value: &HostTensor) -> Result<()> {
        let w = &mut self.0[i];
        let source = from_host(value, w.tensor.device())?;
        w.tensor.f_copy_(&source)?;
        Ok(())
    }
    fn gradient(&self, i: usize) -> Result<Option<HostTensor>> {
        Store(self.0).gradient(i)
    }
}

/// Cross-channel LRN as `torch.nn.functional.local_response_norm` composes it:
/// `x / (k + alpha · mean_{size channels}(x²))^beta`, the window zero-padded.
fn local_response_norm(x: &Tensor, size: i64, alpha: f64, beta: f64, k: f64) -> Result<Tensor> {
    let s = x.size();
    let (n, c, h, w) = (s[0], s[1], s[2], s[3]);
    let squares = x.f_mul(x)?.f_view([n, 1, c, h * w])?;
    let padded = squares.f_constant_pad_nd([0, 0, size / 2, (size - 1) / 2])?;
    let mean = padded
        .f_avg_pool2d([size, 1], [1, 1], [0, 0], false, true, None)?
        .f_view([n, c, h, w])?;
    let denominator = mean
        .f_mul_scalar(alpha)?
        .f_add_scalar(k)?
        .f_pow_tensor_scalar(beta)?;
    Ok(x.f_div(&denominator)?)
}

/// The same `[N, C, H, W]` values laid out channels-last in memory (strides
/// `[H·W·C, 1, W·C, C]`): PyTorch's `x.to(memory_format=torch.channels_last)`, written
/// with permutes as tch has no memory-format argument.
pub fn channels_last(t: &Tensor) -> Result<Tensor> {
    Ok(t.f_permute([0, 2, 3, 1])?
        .f_contiguous()?
        .f_permute([0, 3, 1, 2])?)
}

/// Copies a tensor (any kind, any device) to the host as f32.
pub fn to_host(t: &Tensor) -> Result<HostTensor> {
    let shape: Vec<usize> = t.size().iter().map(|&d| d as usize).collect();
    let flat = t
        .f_detach()?
        .f_to_kind(Kind::Float)?
        .f_to_device(Device::Cpu)?
        .f_contiguous()?
        .f_view([-1])?;
    let data = Vec::<f32>::try_from(&flat)
        .map_err(|e| anyhow!("cannot read a tensor back from libtorch: {e}"))?;
    Ok(HostTensor::new(shape, data)?)
}

/// A libtorch f32 tensor on `device` with the host tensor's values.
pub fn from_host(host: &HostTensor, device: Device) -> Result<Tensor> {
    let shape: Vec<i64> = host.shape.iter().map(|&d| d as i64).collect();
    Ok(Tensor::f_from_slice(&host.data)?
        .f_view(shape.as_slice())?
        .f_to_device(device)?)
}
