//! Correctness of the lowering: every op's gradients against central finite differences,
//! train/infer behaviour, parameter counts and output shapes against the Graph.

use crate::*;
use burn::module::{ModuleMapper, ModuleVisitor, Param};
use cnnbench_graph::ops::*;
use cnnbench_graph::{GraphBuilder, Pad2d, T};

const BATCH: usize = 2;

/// burn's random generator is one per process: tests that seed it and draw from it
/// (every lowering draws its weights lazily, on the first forward pass) take turns, so
/// each sees the same numbers on every run whatever else runs in parallel.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn normal_data(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64(seed);
    (0..n)
        .map(|_| {
            // Box–Muller from two uniforms in (0, 1].
            let u1 = ((rng.next() >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            let u2 = ((rng.next() >> 11) as f64) / (1u64 << 53) as f64;
            ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
        })
        .collect()
}

fn tensor4(data: Vec<f32>, dims: [usize; 4], device: &Device) -> Tensor<4> {
    Tensor::from_data(TensorData::new(data, dims), device)
}

/// loss = Σ output ⊙ R for a fixed random R, so dloss/doutput = R.
struct Probe {
    graph: Graph,
    network: Network,
    weights_out: Vec<f32>,
    device: Device,
}

impl Probe {
    fn new(graph: Graph) -> (Probe, NetParams) {
        let device = device_for(Mode::Train);
        device.seed(7);
        let (network, params) = Network::lower(&graph, &device).unwrap();
        let out = graph.output_shape().elements() as usize * BATCH;
        let probe = Probe {
            graph,
            network,
            weights_out: normal_data(out, 99),
            device,
        };
        (probe, params)
    }

    fn input_dims(&self) -> [usize; 4] {
        let [c, h, w] = self.graph.input_shape();
        [BATCH, c, h, w]
    }

    fn loss(&self, params: &NetParams, input: Tensor<4>) -> Tensor<1> {
        let out = self.network.forward(params, input).unwrap();
        let dims = out.dims();
        let r = self.weights_out.clone();
        let r = match dims.len() {
            4 => Value::Map(Tensor::from_data(
                TensorData::new(r, [dims[0], dims[1], dims[2], dims[3]]),
                &self.device,
            )),
            _ => Value::Flat(Tensor::from_data(
                TensorData::new(r, [dims[0], dims[1]]),
                &self.device,
            )),
        };
        out.dot_sum(r).unwrap()
    }

    fn loss_value(&self, params: &NetParams, input: &[f32]) -> f64 {
        let x = tensor4(input.to_vec(), self.input_dims(), &self.device);
        self.loss(params, x).into_scalar::<f32>() as f64
    }
}

fn assert_close(analytic: f64, numeric: f64, what: &str) {
    let tolerance = 2e-2 + 3e-2 * analytic.abs().max(numeric.abs());
    assert!(
        (analytic - numeric).abs() <= tolerance,
        "{what}: autodiff gives {analytic:.5}, finite differences {numeric:.5}"
    );
}

/// Perturbs element `index` of the `target`-th trainable parameter by `delta`.
struct Perturb {
    target: usize,
    index: usize,
    delta: f32,
    seen: usize,
}

impl ModuleMapper for Perturb {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        if !param.is_require_grad() {
            return param;
        }
        let hit = self.seen == self.target;
        self.seen += 1;
        if !hit {
            return param;
        }
        let (index, delta) = (self.index, self.delta);
        param.map(|t| {
            let dims = t.dims();
            let device = t.device();
            let mut data: Vec<f32> = t.to_data().try_to_vec().unwrap();
            data[index] += delta;
            Tensor::from_data(TensorData::new(data, dims), &device).require_grad()
        })
    }
}

/// Collects the gradient and size of every trainable parameter, in visiting order.
struct CollectGrads<'a> {
    grads: &'a Gradients,
    out: Vec<Vec<f32>>,
}

impl ModuleVisitor for CollectGrads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if param.is_require_grad() {
            let g = param
                .val()
                .grad(self.grads)
                .map(|g| g.to_data().try_to_vec::<f32>().unwrap())
                .unwrap_or_default();
            self.out.push(g);
        }
    }
}

/// Checks d(loss)/d(input) and d(loss)/d(every parameter) at a few elements each.
fn check_gradients(graph: Graph) {
    let name = graph.name().to_string();
    let (probe, params) = Probe::new(graph);
    let dims = probe.input_dims();
    let input: Vec<f32> = normal_data(dims.iter().product(), 3);
    let x = tensor4(input.clone(), dims, &probe.device).require_grad();
    let grads = probe.loss(&params, x.clone()).backward();
    let input_grad: Vec<f32> = x
        .grad(&grads)
        .expect("input gradient")
        .to_data()
        .try_to_vec()
        .unwrap();
    let mut collect = CollectGrads {
        grads: &grads,
        out: Vec::new(),
    };
    params.visit(&mut collect);
    let param_grads = collect.out;

    let eps = 1e-2f32;
    let n = input.len();
    for k in 0..6 {
        let i = (k * 7919 + 13) % n;
        let mut plus = input.clone();
        plus[i] += eps;
        let mut minus = input.clone();
        minus[i] -= eps;
        let numeric = (probe.loss_value(&params, &plus) - probe.loss_value(&params, &minus))
            / (2.0 * eps as f64);
        assert_close(
            input_grad[i] as f64,
            numeric,
            &format!("{name}: d/dinput[{i}]"),
        );
    }
    for (p, grad) in param_grads.iter().enumerate() {
        assert!(!grad.is_empty(), "{name}: parameter {p} has no gradient");
        for k in 0..3 {
            let i = (k * 104729 + 5) % grad.len();
            let shifted = |delta: f32| {
                let moved = params.clone().map(&mut Perturb {
                    target: p,
                    index: i,
                    delta,
                    seen: 0,
                });
                probe.loss_value(&moved, &input)
            };
            let numeric = (shifted(eps) - shifted(-eps)) / (2.0 * eps as f64);
            assert_close(
                grad[i] as f64,
                numeric,
                &format!("{name}: d/dparam{p}[{i}]"),
            );
        }
    }
}

/// A one-op network (plus what it needs around it) on a small input.
fn single(name: &str, input: [usize; 3], f: impl FnOnce(&mut GraphBuilder, &T) -> T) -> Graph {
    let mut b = GraphBuilder::new(name, input);
    let x = b.input();
    let y = f(&mut b, &x);
    b.finish(&y).unwrap()
}

#[test]
fn conv_gradients_with_groups_dilation_and_asymmetric_padding() {
    let _serial = serial();
    check_gradients(single("conv", [4, 7, 6], |b, x| {
        b.conv(
            "c",
            x,
            Conv2d::new(6, [3, 2])
                .stride([2, 1])
                .groups(2)
                .dilation([1, 2])
                .padding(Pad2d {
                    top: 1,
                    left: 0,
                    bottom: 2,
                    right: 1,
                }),
        )
    }));
    check_gradients(single("conv-nobias", [3, 5, 5], |b, x| {
        b.conv("c", x, Conv2d::new(4, 3).padding(1).bias(false))
    }));
}

#[test]
fn batch_norm_gradients_in_training_mode() {
    let _serial = serial();
    check_gradients(single("bn", [3, 4, 4], |b, x| b.batch_norm("bn", x)));
}

#[test]
fn relu_and_linear_gradients() {
    let _serial = serial();
    check_gradients(single("linear", [2, 3, 3], |b, x| {
        let f = b.flatten("flat", x);
        let r = b.relu("relu", &f);
        b.linear("fc", &r, 5)
    }));
}

#[test]
fn lrn_gradients() {
    let _serial = serial();
    check_gradients(single("lrn", [6, 3, 3], |b, x| {
        b.lrn(
            "lrn",
            x,
            LocalResponseNorm {
                size: 5,
                alpha: 1e-1,
                beta: 0.75,
                k: 2.0,
            },
        )
    }));
}

#[test]
fn pooling_gradients() {
    let _serial = serial();
    check_gradients(single("maxpool-ceil", [2, 7, 7], |b, x| {
        b.max_pool("p", x, MaxPool2d::new(3, 2).ceil_mode(true))
    }));
    check_gradients(single("maxpool-pad", [2, 6, 6], |b, x| {
        b.max_pool("p", x, MaxPool2d::new(3, 2).padding(1))
    }));
    check_gradients(single("avgpool", [2, 6, 6], |b, x| {
        let mut pool = AvgPool2d::new(3, 2);
        pool.padding = Pad2d::same(1);
        pool.count_include_pad = false;
        pool.ceil_mode = true;
        b.avg_pool("p", x, pool)
    }));
    check_gradients(single("adaptive", [2, 7, 5], |b, x| {
        b.adaptive_avg_pool("p", x, 2, 3)
    }));
}

#[test]
fn concat_and_add_gradients() {
    let _serial = serial();
    check_gradients(single("concat-add", [3, 4, 4], |b, x| {
        let a = b.conv("a", x, Conv2d::new(2, 1));
        let c = b.conv("c", x, Conv2d::new(2, 3).padding(1));
        let cat = b.concat("cat", &[&a, &c, x]);
        let d = b.conv("d", &cat, Conv2d::new(3, 1));
        b.sum("add", &[&d, x])
    }));
}

#[test]
fn activation_gradients() {
    let _serial = serial();
    type Act = fn(&mut GraphBuilder, &str, &T) -> T;
    let acts: [(&str, Act); 6] = [
        ("relu6", |b, n, x| b.relu6(n, x)),
        ("silu", |b, n, x| b.silu(n, x)),
        ("gelu", |b, n, x| b.gelu(n, x)),
        ("hardswish", |b, n, x| b.hardswish(n, x)),
        ("hardsigmoid", |b, n, x| b.hardsigmoid(n, x)),
        ("sigmoid", |b, n, x| b.sigmoid(n, x)),
    ];
    for (name, act) in acts {
        check_gradients(single(name, [2, 4, 4], |b, x| {
            let c = b.conv("c", x, Conv2d::new(3, 1));
            let a = act(b, "act", &c);
            // On flat vectors too.
            let f = b.flatten("flat", &a);
            let g = act(b, "act_flat", &f);
            b.linear("fc", &g, 4)
        }));
    }
}

#[test]
fn squeeze_and_excitation_mul_gradients() {
    let _serial = serial();
    check_gradients(single("se", [4, 5, 5], |b, x| {
        let s = b.adaptive_avg_pool("squeeze", x, 1, 1);
        let s = b.conv("fc1", &s, Conv2d::new(2, 1));
        let s = b.silu("act", &s);
        let s = b.conv("fc2", &s, Conv2d::new(4, 1));
        let s = b.sigmoid("gate", &s);
        // The gate second and first: both broadcast.
        let y = b.mul("scale", x, &s);
        let z = b.mul("scale2", &s, &y);
        b.mul("same", &z, x)
    }));
}

#[test]
fn layer_norm_and_layer_scale_gradients() {
    let _serial = serial();
    check_gradients(single("layer-norm", [5, 3, 4], |b, x| {
        let y = b.layer_norm2d("ln", x, 1e-6);
        let y = b.conv("c", &y, Conv2d::new(3, 1));
        // A large initial scale keeps the input gradients measurable.
        let y = b.layer_scale("gamma", &y, 0.7);
        let y = b.stochastic_depth("drop_path", &y, 0.2);
        b.sum("add", &[&y, &y])
    }));
}

#[test]
fn channel_shuffle_and_slice_gradients() {
    let _serial = serial();
    check_gradients(single("shuffle", [6, 3, 3], |b, x| {
        let left = b.slice_channels("left", x, 0, 2);
        let right = b.slice_channels("right", x, 2, 6);
        let right = b.conv("c", &right, Conv2d::new(4, 3).padding(1));
        let cat = b.concat("cat", &[&left, &right]);
        b.channel_shuffle("shuffle", &cat, 3)
    }));
}

#[test]
fn new_ops_compute_what_pytorch_computes() {
    let _serial = serial();
    let device = device_for(Mode::Infer);
    let run = |graph: &Graph, data: Vec<f32>| -> Vec<f32> {
        let [c, h, w] = graph.input_shape();
        let (network, params) = Network::lower(graph, &device).unwrap();
        let out = network
            .forward(&params, tensor4(data, [1, c, h, w], &device))
            .unwrap();
        match out {
            Value::Map(t) => t.to_data().try_to_vec().unwrap(),
            Value::Flat(t) => t.to_data().try_to_vec().unwrap(),
        }
    };
    let input: Vec<f32> = vec![-4.0, -1.0, 0.0, 1.0, 2.0, 4.0, 7.0, 0.5];
    let close = |got: &[f32], want: &[f32], what: &str| {
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-4, "{what}: got {got:?}, want {want:?}");
        }
    };
    let relu6 = run(
        &single("r6", [8, 1, 1], |b, x| b.relu6("a", x)),
        input.clone(),
    );
    close(&relu6, &[0.0, 0.0, 0.0, 1.0, 2.0, 4.0, 6.0, 0.5], "relu6");
    let hs = run(
        &single("hs", [8, 1, 1], |b, x| b.hardswish("a", x)),
        input.clone(),
    );
    let want: Vec<f32> = input
        .iter()
        .map(|x| x * ((x + 3.0).clamp(0.0, 6.0) / 6.0))
        .collect();
    close(&hs, &want, "hardswish");
    // [0, 1, 2, 3, 4, 5] in 3 groups of 2 → [0, 2, 4, 1, 3, 5].
    let shuffle = run(
        &single("cs", [6, 1, 1], |b, x| b.channel_shuffle("s", x, 3)),
        (0..6).map(|v| v as f32).collect(),
    );
    close(&shuffle, &[0.0, 2.0, 4.0, 1.0, 3.0, 5.0], "channel_shuffle");
    // LayerNorm over channels of each pixel: 2 pixels with channels (1, 3) and (2, 6).
    let ln = run(
        &single("ln", [2, 1, 2], |b, x| b.layer_norm2d("ln", x, 1e-6)),
        vec![1.0, 2.0, 3.0, 6.0],
    );
    close(&ln, &[-1.0, -1.0, 1.0, 1.0], "layer_norm2d");
}

#[test]
fn lowering_matches_graph_shapes_and_parameter_counts_on_every_zoo_model() {
    let _serial = serial();
    for entry in cnnbench_zoo::entries() {
        // VGG and AlexNet are large in parameters, not in compute at 32x32: check them all,
        // but keep the input small (32x32, or the smallest the model accepts: inception-v1
        // needs 31x31, inception-v3 75x75).
        let [c, smallest, _] = entry.smallest_input();
        let size = smallest.max(32);
        let graph = (entry.build)([c, size, size]).unwrap();
        // Parameters only require gradients on an autodiff device.
        let device = device_for(Mode::Train);
        let (network, params) = Network::lower(&graph, &device).unwrap();
        assert_eq!(
            trainable_params(&params) as u64,
            graph.params(),
            "{}",
            entry.name
        );
        let [c, h, w] = graph.input_shape();
        let out = network
            .forward(&params, Tensor::zeros([1, c, h, w], &device))
            .unwrap();
        let mut expected = vec![1];
        expected.extend(&graph.output_shape().0);
        assert_eq!(out.dims(), expected, "{}", entry.name);
    }
}

#[test]
fn batch_norm_uses_batch_statistics_in_training_and_running_ones_in_inference() {
    let _serial = serial();
    let graph = single("bn", [2, 3, 3], |b, x| b.batch_norm("bn", x));
    let input: Vec<f32> = normal_data(2 * 2 * 3 * 3, 5)
        .iter()
        .map(|v| v * 3.0 + 10.0)
        .collect();
    for (mode, expect_normalised) in [(Mode::Train, true), (Mode::Infer, false)] {
        let device = device_for(mode);
        let (network, params) = Network::lower(&graph, &device).unwrap();
        let out = network
            .forward(&params, tensor4(input.clone(), [2, 2, 3, 3], &device))
            .unwrap();
        let values: Vec<f32> = out.into_map().unwrap().to_data().try_to_vec().unwrap();
        let mean = values.iter().sum::<f32>() / values.len() as f32;
        if expect_normalised {
            assert!(mean.abs() < 1e-3, "training output mean {mean}");
        } else {
            // Fresh running stats are mean 0, variance 1: the input passes nearly unchanged.
            assert!((mean - 10.0).abs() < 1.5, "inference output mean {mean}");
        }
    }
}

#[test]
fn dropout_is_active_in_training_and_identity_in_inference() {
    let _serial = serial();
    let graph = single("drop", [1, 40, 50], |b, x| b.dropout("d", x, 0.5));
    let ones = vec![1.0f32; 2000];
    let device = device_for(Mode::Train);
    let (network, params) = Network::lower(&graph, &device).unwrap();
    let out: Vec<f32> = network
        .forward(&params, tensor4(ones.clone(), [1, 1, 40, 50], &device))
        .unwrap()
        .into_map()
        .unwrap()
        .to_data()
        .try_to_vec()
        .unwrap();
    let zeros = out.iter().filter(|v| **v == 0.0).count();
    assert!(
        (800..1200).contains(&zeros),
        "{zeros} of 2000 dropped at p=0.5"
    );
    assert!(
        out.iter().all(|v| *v == 0.0 || (*v - 2.0).abs() < 1e-6),
        "kept values are scaled by 2"
    );

    let device = device_for(Mode::Infer);
    let (network, params) = Network::lower(&graph, &device).unwrap();
    let out: Vec<f32> = network
        .forward(&params, tensor4(ones, [1, 1, 40, 50], &device))
        .unwrap()
        .into_map()
        .unwrap()
        .to_data()
        .try_to_vec()
        .unwrap();
    assert!(out.iter().all(|v| *v == 1.0));
}

#[test]
fn sessions_run_every_mode_and_refuse_other_precisions() {
    let _serial = serial();
    let graph = single("tiny", [3, 8, 8], |b, x| {
        let c = b.conv("c", x, Conv2d::new(4, 3).padding(1));
        let r = b.relu("r", &c);
        let p = b.adaptive_avg_pool("p", &r, 1, 1);
        let f = b.flatten("f", &p);
        b.linear("fc", &f, 10)
    });
    let engine = BurnFlexEngine::new(None).unwrap();
    for mode in [Mode::Train, Mode::Infer, Mode::Step] {
        let config = SessionConfig {
            mode,
            batch_size: 2,
            seed: 1,
            precision: Precision::F32,
            deterministic: false,
        };
        let mut s = engine.prepare(&graph, &config).unwrap();
        for _ in 0..2 {
            s.prepare_batch().unwrap();
            s.forward().unwrap();
            match mode {
                Mode::Train => {
                    s.prepare_output_grad().unwrap();
                    s.backward().unwrap();
                }
                Mode::Step => {
                    s.backward().unwrap();
                    s.update().unwrap();
                }
                Mode::Infer => assert!(s.backward().is_err()),
            }
            s.sync().unwrap();
        }
    }
    let config = SessionConfig {
        mode: Mode::Train,
        batch_size: 2,
        seed: 1,
        precision: Precision::F16,
        deterministic: false,
    };
    let err = engine
        .prepare(&graph, &config)
        .err()
        .expect("f16 is refused");
    assert!(err.to_string().contains("f32 only"), "{err}");
}

#[test]
fn a_network_without_parameters_still_trains() {
    let _serial = serial();
    // Backward reaches only the input; it must not panic for lack of tracked weights.
    let graph = single("lrn-only", [6, 4, 4], |b, x| {
        b.lrn(
            "lrn",
            x,
            LocalResponseNorm {
                size: 3,
                alpha: 1e-1,
                beta: 0.75,
                k: 2.0,
            },
        )
    });
    let engine = BurnFlexEngine::new(None).unwrap();
    let config = SessionConfig {
        mode: Mode::Train,
        batch_size: 2,
        seed: 1,
        precision: Precision::F32,
        deterministic: false,
    };
    let mut s = engine.prepare(&graph, &config).unwrap();
    s.prepare_batch().unwrap();
    s.forward().unwrap();
    s.prepare_output_grad().unwrap();
    s.backward().unwrap();
    assert!(s.weight_gradients().unwrap().is_empty());
}
