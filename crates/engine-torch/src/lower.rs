//! Lowering of Graph nodes onto libtorch's native ops, and the interpreter that runs
//! them under autograd. Weights are plain libtorch tensors keyed as
//! [`Graph::weight_specs`] names them, which is PyTorch's own layout.

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::Precision;
use cnnbench_graph::{Graph, HostTensor, Op, Pad2d, Source, Weights};
use tch::{Device, Kind, Tensor};

/// One weight tensor: a trained parameter (requires grad) or a running statistic.
pub struct Weight {
    pub key: String,
    pub tensor: Tensor,
    pub trainable: bool,
}

/// Element-wise activations.
#[derive(Clone, Copy)]
enum Activation {
    Relu,
    Relu6,
    Silu,
    Gelu,
    Hardswish,
    Hardsigmoid,
    Sigmoid,
}

/// What a step does; numbers index [`Network::weights`].
enum Lowered {
    Conv {
        weight: usize,
        bias: Option<usize>,
        stride: [i64; 2],
        padding: Padding,
        dilation: [i64; 2],
        groups: i64,
    },
    Norm {
        affine: Option<(usize, usize)>,
        running: (usize, usize),
        momentum: f64,
        eps: f64,
    },
    Linear {
        weight: usize,
        bias: Option<usize>,
    },
    LayerNorm {
        weight: usize,
        bias: usize,
        channels: i64,
        eps: f64,
    },
    Scale(usize),
    Act(Activation),
    Mul,
    Shuffle(i64),
    Slice(i64, i64),
    Identity,
    Lrn {
        size: i64,
        alpha: f64,
        beta: f64,
        k: f64,
    },
    MaxPool {
        kernel: [i64; 2],
        stride: [i64; 2],
        padding: Padding,
        ceil_mode: bool,
    },
    AvgPool {
        kernel: [i64; 2],
        stride: [i64; 2],
        padding: Padding,
        ceil_mode: bool,
        count_include_pad: bool,
    },
    AdaptiveAvgPool([i64; 2]),
    Dropout(f64),
    Flatten,
    Concat,
    Add,
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

struct Step {
    name: String,
    op: Lowered,
    inputs: Vec<Source>,
    frees: Vec<usize>,
    /// ReLU, ReLU6 and Add may overwrite their (first) input, as torchvision's
    /// `ReLU(inplace=True)` and `out += identity` do: saves an allocation and a pass over
    /// memory. See [`may_overwrite`].
    in_place: bool,
}

/// Whether node `index` may overwrite its first input: the input is another node's
/// value that nothing else reads, and its producer's backward does not need its own
/// output (convolution, batch norm, linear and add need only their inputs), so
/// autograd's saved tensors stay intact.
pub(crate) fn may_overwrite(graph: &Graph, index: usize, readers: &[usize]) -> bool {
    let node = &graph.nodes()[index];
    let overwrites = matches!(node.op, Op::Relu(_) | Op::Relu6(_) | Op::Add(_));
    let Some(Source::Node(producer)) = node.inputs.first().copied() else {
        return false;
    };
    overwrites
        && readers[producer] == 1
        && producer != graph.output_index()
        && matches!(
            graph.nodes()[producer].op,
            Op::Conv2d(_) | Op::BatchNorm2d(_) | Op::Linear(_) | Op::Add(_)
        )
}

/// A Graph lowered for libtorch, with its weights.
pub struct Network {
    steps: Vec<Step>,
    output: usize,
    pub weights: Vec<Weight>,
    dropout: bool,
    /// Autocast policy: convolutions and linear layers compute in this kind.
    compute: Option<Kind>,
}

fn hw(v: cnnbench_graph::Hw) -> [i64; 2] {
    [v.h as i64, v.w as i64]
}

impl Network {
    /// Lowers every node and initialises weights as PyTorch's layers do: Kaiming-uniform
    /// (a = √5) convolution and linear weights with biases uniform in ±1/√fan_in, unit
    /// norm scales, zero shifts, zero running means and unit running variances.
    pub fn lower(graph: &Graph, device: Device, precision: Precision) -> Result<Network> {
        let mut weights: Vec<Weight> = Vec::new();
        let mut add = |key: String, tensor: Tensor, trainable: bool| -> Result<usize> {
            let tensor = if trainable {
                tensor.f_set_requires_grad(true)?
            } else {
                tensor
            };
            weights.push(Weight {
                key,
                tensor,
                trainable,
            });
            Ok(weights.len() - 1)
        };
        let f32_on = (Kind::Float, device);
        let uniform = |shape: &[i64], bound: f64| -> Result<Tensor> {
            Ok(Tensor::f_empty(shape, f32_on)?.f_uniform_(-bound, bound)?)
        };
        let frees = graph.values_to_free();
        let readers = graph.reader_counts();
        let mut steps = Vec::with_capacity(graph.nodes().len());
        for (index, (node, frees)) in graph.nodes().iter().zip(frees).enumerate() {
            let key = |name: &str| format!("{}.{name}", node.name);
            let op = match &node.op {
                Op::Conv2d(c) => {
                    let fan_in = (c.in_channels / c.groups * c.kernel.h * c.kernel.w) as f64;
                    let bound = 1.0 / fan_in.sqrt();
                    let shape = [
                        c.out_channels as i64,
                        (c.in_channels / c.groups) as i64,
                        c.kernel.h as i64,
                        c.kernel.w as i64,
                    ];
                    let weight = add(key("weight"), uniform(&shape, bound)?, true)?;
                    let bias = if c.bias {
                        Some(add(
                            key("bias"),
                            uniform(&[c.out_channels as i64], bound)?,
                            true,
                        )?)
                    } else {
                        None
                    };
                    Lowered::Conv {
                        weight,
                        bias,
                        stride: hw(c.stride),
                        padding: Padding::of(c.padding),
                        dilation: hw(c.dilation),
                        groups: c.groups as i64,
                    }
                }
                Op::BatchNorm2d(b) => {
                    let c = [b.num_features as i64];
                    let affine = if b.affine {
                        Some((
                            add(key("weight"), Tensor::f_ones(c, f32_on)?, true)?,
                            add(key("bias"), Tensor::f_zeros(c, f32_on)?, true)?,
                        ))
                    } else {
                        None
                    };
                    let running = (
                        add(key("running_mean"), Tensor::f_zeros(c, f32_on)?, false)?,
                        add(key("running_var"), Tensor::f_ones(c, f32_on)?, false)?,
                    );
                    Lowered::Norm {
                        affine,
                        running,
                        momentum: b.momentum,
                        eps: b.eps,
                    }
                }
                Op::Linear(l) => {
                    let bound = 1.0 / (l.in_features as f64).sqrt();
                    let shape = [l.out_features as i64, l.in_features as i64];
                    let weight = add(key("weight"), uniform(&shape, bound)?, true)?;
                    let bias = if l.bias {
                        Some(add(
                            key("bias"),
                            uniform(&[l.out_features as i64], bound)?,
                            true,
                        )?)
                    } else {
                        None
                    };
                    Lowered::Linear { weight, bias }
                }
                Op::LayerNorm2d(l) => {
                    let c = [l.num_channels as i64];
                    Lowered::LayerNorm {
                        weight: add(key("weight"), Tensor::f_ones(c, f32_on)?, true)?,
                        bias: add(key("bias"), Tensor::f_zeros(c, f32_on)?, true)?,
                        channels: l.num_channels as i64,
                        eps: l.eps,
                    }
                }
                Op::LayerScale(l) => {
                    let scale = Tensor::f_full([l.channels as i64], l.init, f32_on)?;
                    Lowered::Scale(add(key("scale"), scale, true)?)
                }
                Op::Relu(_) => Lowered::Act(Activation::Relu),
                Op::Relu6(_) => Lowered::Act(Activation::Relu6),
                Op::Silu(_) => Lowered::Act(Activation::Silu),
                Op::Gelu(_) => Lowered::Act(Activation::Gelu),
                Op::Hardswish(_) => Lowered::Act(Activation::Hardswish),
                Op::Hardsigmoid(_) => Lowered::Act(Activation::Hardsigmoid),
                Op::Sigmoid(_) => Lowered::Act(Activation::Sigmoid),
                Op::Mul(_) => Lowered::Mul,
                Op::ChannelShuffle(c) => Lowered::Shuffle(c.groups as i64),
                Op::SliceChannels(c) => Lowered::Slice(c.start as i64, (c.end - c.start) as i64),
                // The identity when benchmarking, as in the burn engine.
                Op::StochasticDepth(_) => Lowered::Identity,
                Op::LocalResponseNorm(l) => Lowered::Lrn {
                    size: l.size as i64,
                    alpha: l.alpha,
                    beta: l.beta,
                    k: l.k,
                },
                Op::MaxPool2d(p) => Lowered::MaxPool {
                    kernel: hw(p.kernel),
                    stride: hw(p.effective_stride()),
                    padding: Padding::of(p.padding),
                    ceil_mode: p.ceil_mode,
                },
                Op::AvgPool2d(p) => {
                    let padding = Padding::of(p.padding);
                    if matches!(padding, Padding::Explicit(_)) && !p.count_include_pad {
                        return Err(anyhow!(
                            "node \"{}\": libtorch cannot average-pool with uneven padding that is left out of the count",
                            node.name
                        ));
                    }
                    Lowered::AvgPool {
                        kernel: hw(p.kernel),
                        stride: hw(p.effective_stride()),
                        padding,
                        ceil_mode: p.ceil_mode,
                        count_include_pad: p.count_include_pad,
                    }
                }
                Op::AdaptiveAvgPool2d(p) => Lowered::AdaptiveAvgPool(hw(p.output)),
                Op::Dropout(d) => Lowered::Dropout(d.p),
                Op::Flatten(_) => Lowered::Flatten,
                Op::Concat(_) => Lowered::Concat,
                Op::Add(_) => Lowered::Add,
            };
            steps.push(Step {
                name: node.name.clone(),
                op,
                inputs: node.inputs.clone(),
                frees,
                in_place: may_overwrite(graph, index, &readers),
            });
        }
        let compute = match precision {
            Precision::F32 => None,
            Precision::F16 => Some(Kind::Half),
            Precision::Bf16 => Some(Kind::BFloat16),
        };
        Ok(Network {
            steps,
            output: graph.output_index(),
            weights,
            dropout: true,
            compute,
        })
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
    /// Mixed precision follows PyTorch's autocast policy: convolutions and linear
    /// layers compute in the reduced kind, layer norms in f32, everything else in the
    /// kind its input arrives in. (tch's own autocast switch is CUDA-only and f16-only.)
    pub fn forward(&self, input: &Tensor, training: bool) -> Result<Tensor> {
        let mut values: Vec<Option<Tensor>> = (0..self.steps.len()).map(|_| None).collect();
        let weight = |i: usize| &self.weights[i].tensor;
        let reduce = |t: &Tensor| -> Result<Tensor> {
            Ok(match self.compute {
                Some(kind) if t.kind() != kind => t.f_to_kind(kind)?,
                _ => t.shallow_clone(),
            })
        };
        for (i, step) in self.steps.iter().enumerate() {
            let fetch = |s: &Source| -> Result<Tensor> {
                match s {
                    Source::Input => Ok(input.shallow_clone()),
                    Source::Node(j) => values[*j]
                        .as_ref()
                        .map(Tensor::shallow_clone)
                        .ok_or_else(|| anyhow!("node \"{}\" read a freed value", step.name)),
                }
            };
            let x = fetch(&step.inputs[0])?;
            let out = match &step.op {
                Lowered::Conv {
                    weight: w,
                    bias,
                    stride,
                    padding,
                    dilation,
                    groups,
                } => {
                    let (x, pad) = padding.apply(reduce(&x)?, 0.0)?;
                    let bias = bias.map(|b| reduce(weight(b))).transpose()?;
                    x.f_conv2d(
                        &reduce(weight(*w))?,
                        bias.as_ref(),
                        *stride,
                        pad,
                        *dilation,
                        *groups,
                    )?
                }
                Lowered::Norm {
                    affine,
                    running,
                    momentum,
                    eps,
                } => x.f_batch_norm(
                    affine.map(|(w, _)| weight(w)),
                    affine.map(|(_, b)| weight(b)),
                    Some(weight(running.0)),
                    Some(weight(running.1)),
                    training,
                    *momentum,
                    *eps,
                    true,
                )?,
                Lowered::Linear { weight: w, bias } => {
                    let bias = bias.map(|b| reduce(weight(b))).transpose()?;
                    reduce(&x)?.f_linear(&reduce(weight(*w))?, bias.as_ref())?
                }
                Lowered::LayerNorm {
                    weight: w,
                    bias,
                    channels,
                    eps,
                } => {
                    let kind = x.kind();
                    x.f_to_kind(Kind::Float)?
                        .f_permute([0, 2, 3, 1])?
                        .f_layer_norm(
                            [*channels],
                            Some(weight(*w)),
                            Some(weight(*bias)),
                            *eps,
                            true,
                        )?
                        .f_permute([0, 3, 1, 2])?
                        .f_to_kind(kind)?
                }
                Lowered::Scale(s) => {
                    let scale = weight(*s);
                    x.f_mul(&scale.f_view([1, -1, 1, 1])?)?
                }
                Lowered::Act(a) => match a {
                    Activation::Relu if step.in_place => {
                        let mut x = x;
                        x.f_relu_()?
                    }
                    Activation::Relu6 if step.in_place => {
                        let mut x = x;
                        x.f_relu6_()?
                    }
                    Activation::Relu => x.f_relu()?,
                    Activation::Relu6 => x.f_relu6()?,
                    Activation::Silu => x.f_silu()?,
                    Activation::Gelu => x.f_gelu("none")?,
                    Activation::Hardswish => x.f_hardswish()?,
                    Activation::Hardsigmoid => x.f_hardsigmoid()?,
                    Activation::Sigmoid => x.f_sigmoid()?,
                },
                Lowered::Mul => x.f_mul(&fetch(&step.inputs[1])?)?,
                Lowered::Shuffle(groups) => {
                    let size = x.size();
                    let (n, c, h, w) = (size[0], size[1], size[2], size[3]);
                    x.f_view([n, *groups, c / groups, h, w])?
                        .f_transpose(1, 2)?
                        .f_contiguous()?
                        .f_view([n, c, h, w])?
                }
                Lowered::Slice(start, length) => x.f_narrow(1, *start, *length)?,
                Lowered::Identity => x,
                Lowered::Lrn {
                    size,
                    alpha,
                    beta,
                    k,
                } => local_response_norm(&x, *size, *alpha, *beta, *k)?,
                Lowered::MaxPool {
                    kernel,
                    stride,
                    padding,
                    ceil_mode,
                } => {
                    let (x, pad) = padding.apply(x, f64::NEG_INFINITY)?;
                    x.f_max_pool2d(*kernel, *stride, pad, [1, 1], *ceil_mode)?
                }
                Lowered::AvgPool {
                    kernel,
                    stride,
                    padding,
                    ceil_mode,
                    count_include_pad,
                } => {
                    let (x, pad) = padding.apply(x, 0.0)?;
                    x.f_avg_pool2d(*kernel, *stride, pad, *ceil_mode, *count_include_pad, None)?
                }
                Lowered::AdaptiveAvgPool(size) => x.f_adaptive_avg_pool2d(*size)?,
                Lowered::Dropout(p) => {
                    if training && self.dropout && *p > 0.0 {
                        x.f_dropout(*p, true)?
                    } else {
                        x
                    }
                }
                Lowered::Flatten => x.f_flatten(1, -1)?,
                Lowered::Concat => {
                    let mut parts = vec![x];
                    for s in &step.inputs[1..] {
                        parts.push(fetch(s)?);
                    }
                    Tensor::f_cat(&parts, 1)?
                }
                Lowered::Add => {
                    let mut acc = x;
                    for (k, s) in step.inputs[1..].iter().enumerate() {
                        // The first sum may overwrite the first input; later ones always
                        // overwrite the fresh sum.
                        acc = if step.in_place || k > 0 {
                            acc.f_add_(&fetch(s)?)?
                        } else {
                            acc.f_add(&fetch(s)?)?
                        };
                    }
                    acc
                }
            };
            values[i] = Some(out);
            for &j in &step.frees {
                values[j] = None;
            }
        }
        values[self.output]
            .take()
            .ok_or_else(|| anyhow!("the output node produced no value"))
    }

    /// Every weight, copied to the host.
    pub fn export_weights(&self) -> Result<Weights> {
        let mut weights = Weights::new();
        for w in &self.weights {
            weights.insert(w.key.clone(), to_host(&w.tensor)?);
        }
        Ok(weights)
    }

    /// Overwrites every weight in place (so the optimizer keeps tracking them).
    pub fn import_weights(&mut self, weights: &Weights) -> Result<()> {
        let _guard = tch::no_grad_guard();
        for w in &mut self.weights {
            let host = weights
                .get(&w.key)
                .with_context(|| format!("the weights have no tensor \"{}\"", w.key))?;
            let source = from_host(host, w.tensor.device())?;
            w.tensor.f_copy_(&source)?;
        }
        Ok(())
    }

    /// The gradient of every trainable weight after a backward pass; a weight the loss
    /// does not reach gets zeros.
    pub fn weight_gradients(&self) -> Result<Weights> {
        let mut grads = Weights::new();
        for w in self.parameters() {
            let grad = w.tensor.grad();
            let grad = if grad.defined() {
                grad
            } else {
                w.tensor.f_zeros_like()?
            };
            grads.insert(w.key.clone(), to_host(&grad)?);
        }
        Ok(grads)
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
