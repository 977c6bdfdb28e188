//! The interpreter on a kernel that writes expressions instead of computing, so the
//! walk itself (order, moves, frees, in-place hints, weight routing, errors) is checked
//! apart from any engine.

use super::*;
use cnnbench_graph::GraphBuilder;
use std::cell::RefCell;
use std::sync::Arc;

/// A value is an expression; the `Arc` lets the test see how many copies are alive.
#[derive(Clone, Debug)]
struct Expr(Arc<String>);

#[derive(Default)]
struct Trace {
    /// (node expression, overwrite hint, copies of the first input alive at the call).
    calls: RefCell<Vec<(String, bool, usize)>>,
    /// Mark every value the interpreter settles as `s(…)`.
    settles: bool,
}

impl Trace {
    fn record(&self, out: String, overwrite: bool, first: &Expr) -> Result<Expr> {
        self.calls
            .borrow_mut()
            .push((out.clone(), overwrite, Arc::strong_count(&first.0)));
        Ok(Expr(Arc::new(out)))
    }
    fn unary(&self, name: &str, x: Expr) -> Result<Expr> {
        self.record(format!("{name}({})", x.0), false, &x)
    }
}

impl Kernels for Trace {
    type Value = Expr;
    fn conv2d(&self, x: Expr, _: &Conv2d, w: ConvWeights) -> Result<Expr> {
        self.record(
            format!("conv[{},{:?}]({})", w.weight, w.bias, x.0),
            false,
            &x,
        )
    }
    fn batch_norm2d(&self, x: Expr, _: &BatchNorm2d, w: NormWeights, t: bool) -> Result<Expr> {
        let out = format!(
            "bn[{:?},{},{},train={t}]({})",
            w.affine, w.running_mean, w.running_var, x.0
        );
        self.record(out, false, &x)
    }
    fn linear(&self, x: Expr, _: &Linear, w: LinearWeights) -> Result<Expr> {
        self.record(format!("fc[{},{:?}]({})", w.weight, w.bias, x.0), false, &x)
    }
    fn layer_norm2d(&self, x: Expr, _: &LayerNorm2d, _: LayerNormWeights) -> Result<Expr> {
        self.unary("ln", x)
    }
    fn layer_scale(&self, x: Expr, _: &LayerScale, _: usize) -> Result<Expr> {
        self.unary("scale", x)
    }
    fn activation(&self, x: Expr, act: Activation, overwrite: bool) -> Result<Expr> {
        self.record(format!("{}({})", act.display_name(), x.0), overwrite, &x)
    }
    fn local_response_norm(&self, x: Expr, _: &LocalResponseNorm) -> Result<Expr> {
        self.unary("lrn", x)
    }
    fn max_pool2d(&self, x: Expr, _: &MaxPool2d) -> Result<Expr> {
        self.unary("maxpool", x)
    }
    fn avg_pool2d(&self, x: Expr, _: &AvgPool2d) -> Result<Expr> {
        self.unary("avgpool", x)
    }
    fn adaptive_avg_pool2d(&self, x: Expr, _: &AdaptiveAvgPool2d) -> Result<Expr> {
        self.unary("gap", x)
    }
    fn dropout(&self, x: Expr, p: f64) -> Result<Expr> {
        self.unary(&format!("dropout{p}"), x)
    }
    fn flatten(&self, x: Expr) -> Result<Expr> {
        self.unary("flat", x)
    }
    fn concat(&self, xs: Vec<Expr>) -> Result<Expr> {
        let parts: Vec<&str> = xs.iter().map(|x| x.0.as_str()).collect();
        self.record(format!("cat({})", parts.join(",")), false, &xs[0])
    }
    fn add(&self, xs: Vec<Expr>, overwrite: bool) -> Result<Expr> {
        let parts: Vec<&str> = xs.iter().map(|x| x.0.as_str()).collect();
        self.record(format!("add({})", parts.join(",")), overwrite, &xs[0])
    }
    fn mul(&self, a: Expr, b: Expr) -> Result<Expr> {
        self.record(format!("mul({},{})", a.0, b.0), false, &a)
    }
    fn channel_shuffle(&self, x: Expr, groups: usize) -> Result<Expr> {
        if groups == 3 {
            return Err(anyhow!("three groups are not supported here"));
        }
        self.unary("shuffle", x)
    }
    fn slice_channels(&self, x: Expr, s: &SliceChannels) -> Result<Expr> {
        self.unary(&format!("slice{}..{}", s.start, s.end), x)
    }
    /// The expression's bytes, so a test can read back which value was kept.
    fn to_host(&self, value: &Expr) -> Result<HostTensor> {
        let data: Vec<f32> = value.0.bytes().map(f32::from).collect();
        Ok(HostTensor::new(vec![data.len()], data)?)
    }
    fn gradient_probe(&self, value: Expr) -> Result<(Expr, Expr)> {
        Ok((
            Expr(Arc::new(format!("p({})", value.0))),
            Expr(Arc::new(format!("probe of {}", value.0))),
        ))
    }
    fn settle(&self, value: Expr) -> Result<Expr> {
        Ok(if self.settles {
            Expr(Arc::new(format!("s({})", value.0)))
        } else {
            value
        })
    }
}

fn input() -> Expr {
    Expr(Arc::new("x".into()))
}

/// conv → bn → relu, a residual add with the block's input, relu, pool, dropout, fc.
fn residual() -> Graph {
    let mut b = GraphBuilder::new("residual", [4, 8, 8]);
    let x = b.input();
    let stem = b.conv("stem", &x, Conv2d::new(4, 3).padding(1));
    let conv = b.conv("conv", &stem, Conv2d::new(4, 3).padding(1));
    let bn = b.batch_norm("bn", &conv);
    let relu = b.relu("relu", &bn);
    let sum = b.sum("sum", &[&relu, &stem]);
    let out = b.relu("out", &sum);
    let pool = b.adaptive_avg_pool("pool", &out, 1, 1);
    let flat = b.flatten("flat", &pool);
    let drop = b.dropout("drop", &flat, 0.5);
    let fc = b.linear("fc", &drop, 3);
    b.finish(&fc).unwrap()
}

#[test]
fn walks_in_order_and_routes_weights_by_index() {
    let program = Program::new(&residual());
    let keys: Vec<&str> = program.weights().iter().map(|w| w.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "stem.weight",
            "stem.bias",
            "conv.weight",
            "conv.bias",
            "bn.weight",
            "bn.bias",
            "bn.running_mean",
            "bn.running_var",
            "fc.weight",
            "fc.bias"
        ]
    );
    let trace = Trace::default();
    let pass = Pass {
        training: true,
        dropout: true,
    };
    let out = program.forward(&trace, input(), pass).unwrap();
    let stem = "conv[0,Some(1)](x)";
    let block = format!("ReLU(bn[Some((4, 5)),6,7,train=true](conv[2,Some(3)]({stem})))");
    assert_eq!(
        *out.0,
        format!("fc[8,Some(9)](dropout0.5(flat(gap(ReLU(add({block},{stem}))))))")
    );
}

#[test]
fn every_node_output_is_settled_before_a_later_node_reads_it() {
    let program = Program::new(&residual());
    let trace = Trace {
        settles: true,
        ..Trace::default()
    };
    let pass = Pass {
        training: true,
        dropout: true,
    };
    let out = program.forward(&trace, input(), pass).unwrap();
    let stem = "s(conv[0,Some(1)](x))";
    let block = format!("s(ReLU(s(bn[Some((4, 5)),6,7,train=true](s(conv[2,Some(3)]({stem}))))))");
    assert_eq!(
        *out.0,
        format!(
            "s(fc[8,Some(9)](s(dropout0.5(s(flat(s(gap(s(ReLU(s(add({block},{stem}))))))))))))"
        )
    );
}

#[test]
fn node_outputs_are_kept_in_node_order_only_when_asked() {
    let program = Program::new(&residual());
    let trace = Trace {
        settles: true,
        ..Trace::default()
    };
    let pass = Pass {
        training: false,
        dropout: false,
    };
    program.forward(&trace, input(), pass).unwrap();
    let not_asked = program.node_outputs().unwrap_err().to_string();
    assert!(
        not_asked.contains("ask before the forward pass"),
        "{not_asked}"
    );
    program.keep_node_outputs();
    assert!(program.node_outputs().is_err(), "no pass yet");
    for _ in 0..2 {
        // A second pass replaces the first pass's outputs rather than adding to them.
        program.forward(&trace, input(), pass).unwrap();
        let kept = program.node_outputs().unwrap();
        let names: Vec<&str> = kept.iter().map(|k| k.node.as_str()).collect();
        let graph = residual();
        let expected: Vec<&str> = graph.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, expected);
        // What is kept is the value later nodes read: after `settle`.
        let text: String = kept[0]
            .value
            .data
            .iter()
            .map(|&b| b as u8 as char)
            .collect();
        assert_eq!(text, "s(conv[0,Some(1)](x))");
    }
}

#[test]
fn values_move_into_their_last_reader_and_in_place_hints_follow_autograd() {
    let program = Program::new(&residual());
    let trace = Trace::default();
    let pass = Pass {
        training: false,
        dropout: true,
    };
    program.forward(&trace, input(), pass).unwrap();
    let calls = trace.calls.borrow();
    let find = |prefix: &str| {
        calls
            .iter()
            .find(|(e, _, _)| e.starts_with(prefix))
            .unwrap_or_else(|| panic!("no call {prefix}"))
            .clone()
    };
    // The block's ReLU reads batch norm's output, which nothing else reads: in place,
    // and the value was moved in (one copy alive).
    assert!(find("ReLU(bn").1);
    assert_eq!(find("ReLU(bn").2, 1);
    // The stem's output is read twice (conv and add): the conv gets a copy.
    assert_eq!(find("conv[2").2, 2);
    // The add may overwrite the ReLU's output? No: ReLU's backward needs its output.
    assert!(!find("add(").1);
    // The final ReLU reads the sum (an add): in place.
    assert!(find("ReLU(add").1);
    // Inference: batch statistics off, dropout the identity.
    assert!(find("bn[").0.contains("train=false"));
    assert!(!calls.iter().any(|(e, _, _)| e.starts_with("dropout")));
}

#[test]
fn dropout_is_off_when_the_pass_says_so() {
    let program = Program::new(&residual());
    let trace = Trace::default();
    let pass = Pass {
        training: true,
        dropout: false,
    };
    let out = program.forward(&trace, input(), pass).unwrap();
    assert!(!out.0.contains("dropout"), "{}", out.0);
}

#[test]
fn kernel_errors_name_the_node_and_op() {
    let mut b = GraphBuilder::new("shuffle", [6, 4, 4]);
    let x = b.input();
    let y = b.channel_shuffle("mix", &x, 3);
    let program = Program::new(&b.finish(&y).unwrap());
    let pass = Pass {
        training: false,
        dropout: false,
    };
    let err = program
        .forward(&Trace::default(), input(), pass)
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("node \"mix\" (channel_shuffle)"), "{text}");
    assert!(text.contains("three groups"), "{text}");

    let refused = program
        .check_support(|op| match op {
            Op::ChannelShuffle(_) => Err("not on this engine".into()),
            _ => Ok(()),
        })
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "node \"mix\" (channel_shuffle): not on this engine"
    );
}

#[test]
fn weights_start_as_pytorch_initialises_them() {
    let program = Program::new(&residual());
    let init = |key: &str| {
        program
            .weights()
            .iter()
            .find(|w| w.key == key)
            .unwrap()
            .init
    };
    // 3×3 convolution over 4 channels: fan-in 36.
    assert_eq!(
        init("conv.weight"),
        WeightInit::Uniform {
            bound: 1.0 / 6.0_f64
        }
    );
    assert_eq!(init("conv.bias"), init("conv.weight"));
    assert_eq!(init("bn.weight"), WeightInit::Constant(1.0));
    assert_eq!(init("bn.bias"), WeightInit::Constant(0.0));
    assert_eq!(init("bn.running_mean"), WeightInit::Constant(0.0));
    assert_eq!(init("bn.running_var"), WeightInit::Constant(1.0));
    assert_eq!(init("fc.weight"), WeightInit::Uniform { bound: 0.5 });
}

/// Weights as host tensors in a map, to check the kit's import/export/gradient helpers.
struct HostStore(Vec<HostTensor>);

impl WeightStore for HostStore {
    fn read(&self, index: usize) -> Result<HostTensor> {
        Ok(self.0[index].clone())
    }
    fn write(&mut self, index: usize, value: &HostTensor) -> Result<()> {
        self.0[index] = value.clone();
        Ok(())
    }
    fn gradient(&self, index: usize) -> Result<Option<HostTensor>> {
        Ok((index != 0).then(|| self.0[index].clone()))
    }
}

#[test]
fn weights_move_in_and_out_by_key_and_unreached_gradients_are_zero() {
    let program = Program::new(&residual());
    let mut store = HostStore(
        program
            .weights()
            .iter()
            .map(|w| zeros(&w.shape).unwrap())
            .collect(),
    );
    let mut weights = program.export_weights(&store).unwrap();
    let stem = weights.get("stem.weight").unwrap().clone();
    let ones = HostTensor::new(stem.shape.clone(), vec![1.0; stem.data.len()]).unwrap();
    weights.insert("stem.weight", ones.clone());
    program.import_weights(&mut store, &weights).unwrap();
    assert_eq!(store.0[0], ones);

    let grads = program.weight_gradients(&store).unwrap();
    assert_eq!(grads.len(), 8, "running statistics have no gradient");
    assert!(grads
        .get("stem.weight")
        .unwrap()
        .data
        .iter()
        .all(|v| *v == 0.0));

    let mut incomplete = Weights::new();
    for (k, v) in weights.iter().filter(|(k, _)| *k != "fc.bias") {
        incomplete.insert(k.clone(), v.clone());
    }
    let err = program.import_weights(&mut store, &incomplete).unwrap_err();
    assert!(err.to_string().contains("fc.bias"), "{err}");
}

#[test]
fn relu_and_add_overwrite_only_values_nobody_else_needs() {
    let graph = cnnbench_zoo::build("resnet18", Some([3, 32, 32])).unwrap();
    let program = Program::new(&graph);
    let in_place = program.overwriting_nodes();
    // As torchvision: the stem's ReLU after bn1, each block's inner ReLU, the residual
    // add (over bn2's output) and the ReLU after it.
    for name in [
        "relu",
        "layer1.0.relu1",
        "layer1.0.add",
        "layer1.0.relu",
        "layer4.1.add",
    ] {
        assert!(
            in_place.contains(&name),
            "{name} not in place: {in_place:?}"
        );
    }
    // The max-pool's output feeds both layer1.0.conv1 and the residual add: never
    // overwritten, and no op other than ReLU, ReLU6 and Add is.
    for name in in_place {
        let node = graph.nodes().iter().find(|n| n.name == name).unwrap();
        assert!(
            matches!(node.op.tag(), "relu" | "relu6" | "add"),
            "{name}: {}",
            node.op.tag()
        );
    }
}

/// With node gradients asked for, a training pass probes every node's output once,
/// after it is settled and before any later node reads it, tells no kernel it may
/// overwrite (a later in-place write would land in a probed value), and hands the
/// probes back in node order; an inference pass probes nothing.
#[test]
fn gradient_probes_wrap_every_node_output_in_training_only() {
    let graph = residual();
    let program = Program::new(&graph);
    let train = Pass {
        training: true,
        dropout: false,
    };
    assert!(program.gradient_probes::<Expr>().is_err(), "not asked for");
    let unprobed = Trace::default();
    program.forward(&unprobed, input(), train).unwrap();
    assert!(
        unprobed
            .calls
            .borrow()
            .iter()
            .any(|(_, overwrite, _)| *overwrite),
        "the residual graph has in-place nodes"
    );

    program.keep_node_gradients();
    let trace = Trace::default();
    let out = program.forward(&trace, input(), train).unwrap();
    assert!(trace
        .calls
        .borrow()
        .iter()
        .all(|(_, overwrite, _)| !overwrite));
    let stem = "p(conv[0,Some(1)](x))";
    let block = format!("p(ReLU(p(bn[Some((4, 5)),6,7,train=true](p(conv[2,Some(3)]({stem}))))))");
    // Dropout is off (the identity), and its output is probed all the same.
    assert_eq!(
        *out.0,
        format!("p(fc[8,Some(9)](p(p(flat(p(gap(p(ReLU(p(add({block},{stem})))))))))))")
    );
    let probes = program.gradient_probes::<Expr>().unwrap();
    let names: Vec<&str> = probes.iter().map(|(n, _)| n.as_str()).collect();
    let nodes: Vec<&str> = graph.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, nodes);
    assert_eq!(*probes[0].1 .0, "probe of conv[0,Some(1)](x)");
    assert!(program.gradient_probes::<String>().is_err(), "another type");

    // Inference keeps the last training pass's probes and adds none.
    let infer = Trace::default();
    let out = program
        .forward(
            &infer,
            input(),
            Pass {
                training: false,
                dropout: false,
            },
        )
        .unwrap();
    assert!(!out.0.contains("p(conv"), "{}", out.0);
    assert_eq!(
        program.gradient_probes::<Expr>().unwrap().len(),
        nodes.len()
    );
}
