//! Does lowering through the Graph IR cost anything on top of hand-written burn?
//!
//! Times ResNet-50 written directly against burn's modules (the only second description
//! of a model in this repository, kept solely as this yardstick) and the zoo's resnet50
//! lowered by the burn-flex engine, interleaving their passes so that drift affects both
//! equally. Same device, same batch, same method as the harness (train mode, sync around
//! each phase, first pass dropped).
//!
//! `cargo run --release -p cnnbench-engine-burn --example ir_overhead -- [BATCH] [PASSES] [SIZE]`
#![allow(
    clippy::disallowed_macros,
    reason = "an example that prints its own figures"
)]

use burn::module::Module;
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{AdaptiveAvgPool2d, AdaptiveAvgPool2dConfig, MaxPool2d, MaxPool2dConfig};
use burn::nn::{BatchNorm, BatchNormConfig, Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::activation::relu;
use burn::tensor::{Device, Distribution, Tensor};
use cnnbench_engine::Mode;
use cnnbench_engine_burn::{device_for, Network};
use std::time::Instant;

fn conv(cin: usize, cout: usize, k: usize, stride: usize, pad: usize, dev: &Device) -> Conv2d {
    Conv2dConfig::new([cin, cout], [k, k])
        .with_stride([stride, stride])
        .with_padding(PaddingConfig2d::Explicit(pad, pad, pad, pad))
        .with_bias(false)
        .init(dev)
}

#[derive(Module, Debug)]
struct Bottleneck {
    convs: Vec<Conv2d>,
    norms: Vec<BatchNorm>,
    downsample: Option<(Conv2d, BatchNorm)>,
}

impl Bottleneck {
    fn new(cin: usize, planes: usize, stride: usize, dev: &Device) -> Self {
        let cout = planes * 4;
        let downsample = (stride != 1 || cin != cout).then(|| {
            (
                conv(cin, cout, 1, stride, 0, dev),
                BatchNormConfig::new(cout).init(dev),
            )
        });
        Self {
            convs: vec![
                conv(cin, planes, 1, 1, 0, dev),
                conv(planes, planes, 3, stride, 1, dev),
                conv(planes, cout, 1, 1, 0, dev),
            ],
            norms: [planes, planes, cout]
                .iter()
                .map(|&c| BatchNormConfig::new(c).init(dev))
                .collect(),
            downsample,
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<4> {
        let identity = match &self.downsample {
            Some((c, n)) => n.forward(c.forward(x.clone())),
            None => x.clone(),
        };
        let y = relu(self.norms[0].forward(self.convs[0].forward(x)));
        let y = relu(self.norms[1].forward(self.convs[1].forward(y)));
        let y = self.norms[2].forward(self.convs[2].forward(y));
        relu(y + identity)
    }
}

#[derive(Module, Debug)]
struct ResNet50 {
    stem: Conv2d,
    stem_norm: BatchNorm,
    pool: MaxPool2d,
    blocks: Vec<Bottleneck>,
    avgpool: AdaptiveAvgPool2d,
    fc: Linear,
}

impl ResNet50 {
    fn new(dev: &Device) -> Self {
        let mut blocks = Vec::new();
        let mut cin = 64;
        for (planes, count, stride) in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)] {
            for i in 0..count {
                blocks.push(Bottleneck::new(
                    cin,
                    planes,
                    if i == 0 { stride } else { 1 },
                    dev,
                ));
                cin = planes * 4;
            }
        }
        Self {
            stem: conv(3, 64, 7, 2, 3, dev),
            stem_norm: BatchNormConfig::new(64).init(dev),
            pool: MaxPool2dConfig::new([3, 3])
                .with_strides([2, 2])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(),
            blocks,
            avgpool: AdaptiveAvgPool2dConfig::new([1, 1]).init(),
            fc: LinearConfig::new(2048, 1000).init(dev),
        }
    }

    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let mut x = self
            .pool
            .forward(relu(self.stem_norm.forward(self.stem.forward(x))));
        for block in &self.blocks {
            x = block.forward(x);
        }
        self.fc.forward(self.avgpool.forward(x).flatten::<2>(1, 3))
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> anyhow::Result<()> {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let batch = args.first().copied().unwrap_or(16);
    let passes = args.get(1).copied().unwrap_or(5);
    let size = args.get(2).copied().unwrap_or(224);
    let dev = device_for(Mode::Train);
    dev.seed(0);

    let hand = ResNet50::new(&dev);
    let graph = cnnbench_zoo::build("resnet50", Some([3, size, size]))?;
    let (network, params) = Network::lower(&graph, &dev)?;
    println!("ResNet-50, batch {batch}, {size}×{size}, train mode, {passes} timed passes each (+1 dropped), interleaved");

    let sync = |d: &Device| d.sync().map_err(|e| anyhow::anyhow!("{e:?}"));
    let (mut hand_f, mut hand_b, mut ir_f, mut ir_b) = (vec![], vec![], vec![], vec![]);
    for pass in 0..=passes {
        for which in ["hand", "ir"] {
            let x =
                Tensor::<4>::random([batch, 3, size, size], Distribution::Normal(0.0, 1.0), &dev);
            let g = Tensor::<2>::random([batch, 1000], Distribution::Normal(0.0, 1.0), &dev);
            sync(&dev)?;
            let t0 = Instant::now();
            let out = if which == "hand" {
                hand.forward(x)
            } else {
                network.forward(&params, x)?.into_flat()?
            };
            sync(&dev)?;
            let forward = t0.elapsed().as_secs_f64();
            let t1 = Instant::now();
            let grads = (out * g).sum().backward();
            sync(&dev)?;
            let backward = t1.elapsed().as_secs_f64();
            drop(grads);
            if pass > 0 {
                let (f, b) = if which == "hand" {
                    (&mut hand_f, &mut hand_b)
                } else {
                    (&mut ir_f, &mut ir_b)
                };
                f.push(forward);
                b.push(backward);
            }
            println!(
                "pass {pass} {which:>4}: forward {:8.1} ms  backward {:8.1} ms",
                forward * 1e3,
                backward * 1e3
            );
        }
    }
    let (hf, hb, xf, xb) = (median(hand_f), median(hand_b), median(ir_f), median(ir_b));
    println!(
        "median  hand-written burn: forward {:.1} ms, backward {:.1} ms",
        hf * 1e3,
        hb * 1e3
    );
    println!(
        "median  cnnbench IR      : forward {:.1} ms, backward {:.1} ms",
        xf * 1e3,
        xb * 1e3
    );
    println!(
        "IR / hand-written        : forward {:.3}×, backward {:.3}×",
        xf / hf,
        xb / hb
    );
    Ok(())
}
