//! RegNetY-400MF as torchvision builds it: the stage widths and depths come from the
//! paper's quantised linear rule (w₀ = 48, wₐ = 27.89, wₘ = 2.09, depth 16), each
//! stage a run of residual bottlenecks with grouped 3×3 convolutions (group width 8)
//! and squeeze-and-excitation.

use crate::blocks::{conv_norm_act, make_divisible, squeeze_excitation, Act, BN};
use crate::{ZooEntry, IMAGENET};
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{Graph, GraphBuilder, GraphError, T};

const CITATION: &str = "Radosavovic, Kosaraju, Girshick, He, Dollár. Designing Network \
                        Design Spaces. CVPR 2020";

/// The design-space parameters of one RegNet.
struct RegNetParams {
    depth: usize,
    w_0: f64,
    w_a: f64,
    w_m: f64,
    group_width: usize,
    se_ratio: f64,
}

const Y_400MF: RegNetParams = RegNetParams {
    depth: 16,
    w_0: 48.0,
    w_a: 27.89,
    w_m: 2.09,
    group_width: 8,
    se_ratio: 0.25,
};

/// One stage: width, depth and group width (all stages stride 2, bottleneck ratio 1).
#[derive(Debug, PartialEq)]
struct Stage {
    width: usize,
    depth: usize,
    group_width: usize,
}

impl RegNetParams {
    /// torchvision `BlockParams.from_init_params`: per-block widths `w₀ + wₐ·j`
    /// quantised to powers of wₘ and multiples of 8, runs of equal width as stages, and
    /// widths made divisible by the group width.
    fn stages(&self) -> Vec<Stage> {
        const QUANT: f64 = 8.0;
        let widths: Vec<usize> = (0..self.depth)
            .map(|j| {
                let cont = j as f64 * self.w_a + self.w_0;
                let capacity = ((cont / self.w_0).ln() / self.w_m.ln()).round();
                ((self.w_0 * self.w_m.powf(capacity) / QUANT).round() * QUANT) as usize
            })
            .collect();
        let mut stages: Vec<Stage> = Vec::new();
        for w in widths {
            match stages.last_mut() {
                Some(s) if s.width == w => s.depth += 1,
                _ => stages.push(Stage {
                    width: w,
                    depth: 1,
                    group_width: self.group_width,
                }),
            }
        }
        for s in &mut stages {
            s.group_width = s.group_width.min(s.width);
            s.width = make_divisible(s.width as f64, s.group_width);
        }
        stages
    }
}

/// torchvision `ResBottleneckBlock`: 1×1, grouped 3×3 (stride), SE squeezing to a
/// quarter of the block's *input* width, 1×1; a projected shortcut when the shape
/// changes; ReLU after the sum.
fn block(b: &mut GraphBuilder, p: &str, x: &T, stage: &Stage, stride: usize, se: f64) -> T {
    let w = stage.width;
    let groups = w / stage.group_width;
    let shortcut = if x.channels() != w || stride != 1 {
        let c = b.conv(
            format!("{p}.proj.0"),
            x,
            Conv2d::new(w, 1).stride(stride).bias(false),
        );
        b.batch_norm(format!("{p}.proj.1"), &c)
    } else {
        x.clone()
    };
    let f = format!("{p}.f");
    let y = conv_norm_act(
        b,
        &format!("{f}.a"),
        x,
        Conv2d::new(w, 1),
        BN,
        Some(Act::Relu),
    );
    let conv = Conv2d::new(w, 3).stride(stride).groups(groups);
    let y = conv_norm_act(b, &format!("{f}.b"), &y, conv, BN, Some(Act::Relu));
    let squeeze = (se * x.channels() as f64).round() as usize;
    let y = squeeze_excitation(b, &format!("{f}.se"), &y, squeeze, Act::Relu, Act::Sigmoid);
    let y = conv_norm_act(b, &format!("{f}.c"), &y, Conv2d::new(w, 1), BN, None);
    let y = b.sum(format!("{p}.add"), &[&y, &shortcut]);
    b.relu(format!("{p}.activation"), &y)
}

fn regnet(model: &ZooEntry, params: &RegNetParams, input: [usize; 3]) -> Result<Graph, GraphError> {
    let mut b = GraphBuilder::new(model.name, input).info(model.info());
    let x = b.input();
    let stem = Conv2d::new(32, 3).stride(2);
    let mut x = conv_norm_act(&mut b, "stem", &x, stem, BN, Some(Act::Relu));
    for (i, stage) in params.stages().iter().enumerate() {
        for j in 0..stage.depth {
            let p = format!("trunk_output.block{}.block{}-{j}", i + 1, i + 1);
            let stride = if j == 0 { 2 } else { 1 };
            x = block(&mut b, &p, &x, stage, stride, params.se_ratio);
        }
    }
    let x = b.adaptive_avg_pool("avgpool", &x, 1, 1);
    let x = b.flatten("flatten", &x);
    let x = b.linear("fc", &x, 1000);
    b.finish(&x)
}

/// The family's models. Counts and errors: torchvision's (the errors are 100 − the
/// ImageNet weights' acc@1 and acc@5).
pub(crate) const MODELS: &[ZooEntry] = &[REGNET_Y_400MF];

const REGNET_Y_400MF: ZooEntry = ZooEntry {
    name: "regnet-y-400mf",
    aliases: &["regnet_y_400mf"],
    family: "regnet",
    source: "torchvision regnet_y_400mf",
    citation: CITATION,
    top1_error: Some(25.95),
    top5_error: Some(8.28),
    params: 4_344_144,
    macs: 401_842_848,
    default_input: IMAGENET,
    min_input: 1,
    legacy: false,
    build: regnet_y_400mf,
};

/// torchvision `regnet_y_400mf`.
pub fn regnet_y_400mf(input: [usize; 3]) -> Result<Graph, GraphError> {
    regnet(&REGNET_Y_400MF, &Y_400MF, input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y_400mf_stages_follow_the_paper() {
        let stages = Y_400MF.stages();
        let widths: Vec<usize> = stages.iter().map(|s| s.width).collect();
        let depths: Vec<usize> = stages.iter().map(|s| s.depth).collect();
        assert_eq!(widths, [48, 104, 208, 440]);
        assert_eq!(depths, [1, 3, 6, 6]);
    }
}
