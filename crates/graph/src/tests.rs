//! Validation of whole graphs: every error class names the node at fault.

use crate::ops::*;
use crate::*;

fn spec(name: &str, op: Op, inputs: &[&str]) -> NodeSpec {
    NodeSpec {
        name: name.into(),
        op,
        inputs: inputs.iter().map(|s| s.to_string()).collect(),
    }
}

fn relu() -> Op {
    Op::Activation(Activation::Relu)
}

fn conv(cin: usize, cout: usize, k: usize) -> Op {
    let mut c = Conv2d::new(cout, k);
    c.in_channels = cin;
    Op::Conv2d(c)
}

fn build(specs: Vec<NodeSpec>, output: Option<&str>) -> Result<Graph, GraphError> {
    Graph::new("t", [3, 8, 8], specs, output, ModelInfo::default())
}

fn err(specs: Vec<NodeSpec>, output: Option<&str>) -> String {
    build(specs, output).unwrap_err().to_string()
}

#[test]
fn cycles_are_refused() {
    let e = err(
        vec![
            spec("a", Op::Add(NoParams {}), &["input", "b"]),
            spec("b", relu(), &["a"]),
        ],
        Some("b"),
    );
    assert!(e.contains("is part of a cycle"), "{e}");
}

#[test]
fn names_must_be_unique_and_not_input() {
    let e = err(
        vec![spec("a", relu(), &["input"]), spec("a", relu(), &["a"])],
        None,
    );
    assert!(e.contains("node \"a\" is defined twice"), "{e}");
    let e = err(vec![spec("input", relu(), &["input"])], None);
    assert!(e.contains("reserved name"), "{e}");
}

#[test]
fn dangling_inputs_dead_nodes_and_bad_outputs_are_refused() {
    let e = err(vec![spec("a", relu(), &["nothing"])], None);
    assert!(e.contains("node \"a\" reads \"nothing\""), "{e}");
    let e = err(
        vec![spec("a", relu(), &["input"]), spec("b", relu(), &["input"])],
        Some("b"),
    );
    assert!(
        e.contains("node \"a\" does not lead to the output \"b\""),
        "{e}"
    );
    let e = err(vec![spec("a", relu(), &["input"])], Some("zzz"));
    assert!(e.contains("the output \"zzz\""), "{e}");
    assert_eq!(build(vec![], None).unwrap_err(), GraphError::Empty);
}

#[test]
fn arity_and_shape_errors_name_the_node() {
    let e = err(vec![spec("a", relu(), &["input", "input"])], None);
    assert!(
        e.contains("node \"a\" (relu) takes exactly 1 input(s), got 2"),
        "{e}"
    );
    let e = err(
        vec![
            spec("c", conv(3, 4, 3), &["input"]),
            spec("sum", Op::Add(NoParams {}), &["c", "input"]),
        ],
        None,
    );
    assert!(
        e.contains("node \"sum\" (add) adds inputs of different shapes: 4×6×6, 3×8×8"),
        "{e}"
    );
    let e = err(vec![spec("c", conv(5, 4, 3), &["input"])], None);
    assert!(
        e.contains("node \"c\" (conv2d) expects 5 input channels, got 3"),
        "{e}"
    );
    let e = err(
        vec![
            spec("c", conv(3, 4, 3), &["input"]),
            spec("cat", Op::Concat(NoParams {}), &["c", "input"]),
        ],
        None,
    );
    assert!(e.contains("node \"cat\" (concat)"), "{e}");
    let e = err(
        vec![spec("p", Op::MaxPool2d(MaxPool2d::new(9, 1)), &["input"])],
        None,
    );
    assert!(
        e.contains("node \"p\" (max_pool2d) input 3×8×8 is too small"),
        "{e}"
    );
    let e = err(
        vec![
            spec("f", Op::Flatten(NoParams {}), &["input"]),
            spec(
                "fc",
                Op::Linear(Linear {
                    in_features: 100,
                    out_features: 2,
                    bias: true,
                }),
                &["f"],
            ),
        ],
        None,
    );
    assert!(
        e.contains("node \"fc\" (linear) expects 100 input features, got 192"),
        "{e}"
    );
    let e = err(
        vec![spec(
            "fc",
            Op::Linear(Linear {
                in_features: 192,
                out_features: 2,
                bias: true,
            }),
            &["input"],
        )],
        None,
    );
    assert!(e.contains("add a flatten node"), "{e}");
}

#[test]
fn nodes_may_be_written_in_any_order() {
    let g = build(
        vec![
            spec("b", relu(), &["a"]),
            spec("a", conv(3, 4, 1), &["input"]),
        ],
        Some("b"),
    )
    .unwrap();
    let names: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(g.depth(), 1);
    assert_eq!(g.last_uses(), vec![1, usize::MAX]);
    assert_eq!(g.values_to_free(), vec![vec![], vec![0]]);
    assert_eq!(g.reader_counts(), vec![1, 0]);
}

#[test]
fn resizing_recomputes_shapes_and_names_the_failing_layer() {
    let g = build(
        vec![
            spec("c", conv(3, 4, 3), &["input"]),
            spec("p", Op::MaxPool2d(MaxPool2d::new(2, 2)), &["c"]),
        ],
        None,
    )
    .unwrap();
    assert_eq!(g.output_shape(), &Shape::chw(4, 3, 3));
    let big = g.with_input([3, 32, 32]).unwrap();
    assert_eq!(big.output_shape(), &Shape::chw(4, 15, 15));
    assert_eq!(big.macs(), 4 * 30 * 30 * 27);
    let e = g.with_input([3, 2, 2]).unwrap_err().to_string();
    assert!(e.contains("node \"c\""), "{e}");
}

#[test]
fn model_files_round_trip_and_chain_by_default() {
    let text = r#"{"format": "cnnbench-model", "version": 1, "name": "chain", "input": [3, 8, 8],
        "info": {"citation": "me"},
        "nodes": [
          {"name": "c", "op": "conv2d", "in_channels": 3, "out_channels": 4, "kernel": [1, 3], "padding": [0, 1]},
          {"name": "r", "op": "relu"},
          {"name": "p", "op": "avg_pool2d", "kernel": 2, "padding": [0, 0, 1, 1], "ceil_mode": true}
        ]}"#;
    let g = Graph::from_json(text).unwrap();
    // The fifth window would start in the right padding: ceil mode drops it.
    assert_eq!(g.output_shape(), &Shape::chw(4, 4, 4));
    assert_eq!(g.info().citation.as_deref(), Some("me"));
    let again = Graph::from_json(&g.to_json()).unwrap();
    assert_eq!(again, g);
}

/// Each node's counts saturate at `u64::MAX` (dimensions up to 2²⁰ multiply past it);
/// the totals summed them plainly, so a saturated conv and a 1-MAC linear layer came to
/// 0 MACs, and a saturated weight plus its bias to 2²⁰ − 1 parameters. (Hostile input,
/// round three.)
#[test]
fn counts_of_a_model_of_huge_dimensions_saturate_and_never_wrap() {
    let text = r#"{"format": "cnnbench-model", "version": 1, "name": "huge",
        "input": [1048576, 1048576, 1048576],
        "nodes": [
          {"name": "conv", "op": "conv2d", "in_channels": 1048576, "out_channels": 1048576, "kernel": 1, "bias": false},
          {"name": "pool", "op": "adaptive_avg_pool2d", "output": 1},
          {"name": "one", "op": "slice_channels", "start": 0, "end": 1},
          {"name": "flat", "op": "flatten"},
          {"name": "fc", "op": "linear", "in_features": 1, "out_features": 1, "bias": false}
        ]}"#;
    let g = Graph::from_json(text).unwrap();
    assert_eq!(g.nodes()[0].op.macs(&g.nodes()[0].shape), u64::MAX);
    assert_eq!(g.macs(), u64::MAX);
    // A kernel of 2²⁰×2²⁰ over 2²⁰ channels: 2⁸⁰ weights, saturated, then a bias.
    let text = r#"{"format": "cnnbench-model", "version": 1, "name": "wide",
        "input": [1048576, 1048576, 1048576],
        "nodes": [
          {"name": "conv", "op": "conv2d", "in_channels": 1048576, "out_channels": 1048576, "kernel": 1048576},
          {"name": "conv2", "op": "conv2d", "in_channels": 1048576, "out_channels": 1048576, "kernel": 1}
        ]}"#;
    let g = Graph::from_json(text).unwrap();
    assert_eq!(g.nodes()[0].op.params(), u64::MAX);
    assert_eq!(g.params(), u64::MAX);
    assert_eq!(g.macs(), u64::MAX);
    assert_eq!(saturating_sum([u64::MAX, u64::MAX, 1]), u64::MAX);
    assert_eq!(saturating_sum([2, 3]), 5);
}

#[test]
fn model_file_errors_are_specific() {
    let cases = [
        (
            r#"{"format": "other", "version": 1}"#,
            "expected \"cnnbench-model\"",
        ),
        (r#"{"version": 1}"#, "no \"format\""),
        (r#"{"format": "cnnbench-model"}"#, "missing \"version\""),
        (
            r#"{"format": "cnnbench-model", "version": 1, "name": "x", "input": [3, 8, 8], "nodes": [{"op": "relu"}]}"#,
            "node #0 has no \"name\"",
        ),
        (
            r#"{"format": "cnnbench-model", "version": 1, "name": "x", "input": [3, 8, 8], "nodes": [{"name": "a"}]}"#,
            "node \"a\" has no \"op\"",
        ),
        (
            r#"{"format": "cnnbench-model", "version": 1, "name": "x", "input": [3, 8, 8], "nodes": [{"name": "a", "op": "conv2d", "in_channels": 3, "out_channels": 4, "kernel": 3, "groups": 2}]}"#,
            "groups 2 must divide",
        ),
        (
            r#"{"format": "cnnbench-model", "version": 1, "name": "x", "input": [3, 0, 8], "nodes": [{"name": "a", "op": "relu"}]}"#,
            "zero dimension",
        ),
        (
            r#"{"format": "cnnbench-model", "version": 1, "name": "x", "input": [3, 8, 8], "nodes": [{"name": "a", "op": "dropout", "p": 1.5}]}"#,
            "must be in [0, 1)",
        ),
        (
            r#"{"format": "cnnbench-model", "version": 1, "name": "x", "input": [3, 8, 8], "extra": 1, "nodes": []}"#,
            "unknown field `extra`",
        ),
    ];
    for (text, expected) in cases {
        let e = Graph::from_json(text).unwrap_err().to_string();
        assert!(e.contains(expected), "expected \"{expected}\" in: {e}");
    }
}

mod weights {
    use super::*;

    fn net() -> Graph {
        let mut bn = BatchNorm2d::new(4);
        bn.affine = true;
        let mut fc = Linear::new(5);
        fc.in_features = 4 * 6 * 6;
        build(
            vec![
                spec("conv", conv(3, 4, 3), &["input"]),
                spec("bn", Op::BatchNorm2d(bn), &["conv"]),
                spec("flat", Op::Flatten(NoParams {}), &["bn"]),
                spec("fc", Op::Linear(fc), &["flat"]),
            ],
            None,
        )
        .unwrap()
    }

    fn full(graph: &Graph) -> Weights {
        let mut w = Weights::new();
        for (i, s) in graph.weight_specs().into_iter().enumerate() {
            w.insert(s.key, HostTensor::standard_normal(s.shape, i as u64));
        }
        w
    }

    #[test]
    fn specs_use_pytorch_names_and_layout() {
        let keys: Vec<(String, Vec<usize>, bool)> = net()
            .weight_specs()
            .into_iter()
            .map(|s| (s.key, s.shape, s.trainable))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("conv.weight".into(), vec![4, 3, 3, 3], true),
                ("conv.bias".into(), vec![4], true),
                ("bn.weight".into(), vec![4], true),
                ("bn.bias".into(), vec![4], true),
                ("bn.running_mean".into(), vec![4], false),
                ("bn.running_var".into(), vec![4], false),
                ("fc.weight".into(), vec![5, 144], true),
                ("fc.bias".into(), vec![5], true),
            ]
        );
    }

    #[test]
    fn safetensors_round_trip() {
        let g = net();
        let w = full(&g);
        let back = Weights::from_safetensors(&w.to_safetensors().unwrap()).unwrap();
        assert_eq!(back, w);
        back.check(&g, true).unwrap();
        let dir = std::env::temp_dir().join(format!("cnnbench-weights-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.safetensors");
        w.save(&path).unwrap();
        assert_eq!(Weights::load(&path).unwrap(), w);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn check_names_missing_misshapen_and_unknown_tensors() {
        let g = net();
        let mut w = full(&g);
        w.insert("fc.weight", HostTensor::standard_normal(vec![144, 5], 0));
        let e = w.check(&g, true).unwrap_err().to_string();
        assert!(
            e.contains("\"fc.weight\" has shape [144, 5]") && e.contains("[5, 144]"),
            "{e}"
        );

        let mut w = Weights::new();
        w.insert(
            "conv.weight",
            HostTensor::standard_normal(vec![4, 3, 3, 3], 0),
        );
        w.check(&g, false).unwrap();
        let e = w.check(&g, true).unwrap_err().to_string();
        assert!(
            e.contains("7 of model \"t\"'s 8 tensors are missing: conv.bias"),
            "{e}"
        );

        w.insert("conv2.weight", HostTensor::standard_normal(vec![1], 0));
        let e = w.check(&g, false).unwrap_err().to_string();
        assert!(e.contains("\"conv2.weight\" is not a tensor"), "{e}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bytes in [
            &b""[..],
            b"\x08\0\0\0\0\0\0\0{\"a\":1}",
            b"\xff\xff\xff\xff\xff\xff\xff\xff",
        ] {
            let e = Weights::from_safetensors(bytes).unwrap_err().to_string();
            assert!(e.contains("not a valid safetensors file"), "{e}");
        }
        assert!(HostTensor::new(vec![2, 3], vec![0.0; 5]).is_err());
    }

    #[test]
    fn relative_error_scales_by_the_reference() {
        let a = HostTensor::new(vec![3], vec![1.0, 2.0, 4.0]).unwrap();
        let b = HostTensor::new(vec![3], vec![1.0, 2.0, 4.004]).unwrap();
        let e = max_relative_error(&b, &a).unwrap();
        assert!((e - 1e-3).abs() < 1e-6, "{e}");
        assert_eq!(max_relative_error(&a, &a).unwrap(), 0.0);
        let nan = HostTensor::new(vec![3], vec![1.0, f32::NAN, 4.0]).unwrap();
        assert!(max_relative_error(&nan, &a).unwrap().is_infinite());
        let other = HostTensor::new(vec![1, 3], vec![1.0, 2.0, 4.0]).unwrap();
        assert!(max_relative_error(&other, &a).is_err());
    }

    #[test]
    fn standard_normal_is_seeded_and_plausible() {
        let a = HostTensor::standard_normal(vec![10_000], 7);
        assert_eq!(a, HostTensor::standard_normal(vec![10_000], 7));
        assert_ne!(a, HostTensor::standard_normal(vec![10_000], 8));
        let mean = a.data.iter().sum::<f32>() / 1e4;
        let var = a.data.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / 1e4;
        assert!(
            mean.abs() < 0.05 && (var - 1.0).abs() < 0.05,
            "{mean} {var}"
        );
    }
}

// HostTensor::standard_normal draws from the seeded generator (`cnnbench_base::SplitMix64`).
#[test]
fn host_tensors_keep_their_values() {
    // HostTensor::standard_normal as it was written before it used SplitMix64:
    // verify feeds engines these values, so they must not change.
    fn reference(n: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        let mut next_unit = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64
        };
        let mut data = Vec::with_capacity(n);
        while data.len() < n {
            let (u1, u2) = (next_unit(), next_unit());
            let radius = (-2.0 * u1.ln()).sqrt();
            let angle = 2.0 * std::f64::consts::PI * u2;
            data.push((radius * angle.cos()) as f32);
            if data.len() < n {
                data.push((radius * angle.sin()) as f32);
            }
        }
        data
    }
    for (n, seed) in [(1, 0), (7, 5), (1000, 7), (3 * 32 * 32 * 2, 12345)] {
        let t = crate::HostTensor::standard_normal(vec![n], seed);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&t.data),
            bits(&reference(n, seed)),
            "n {n} seed {seed}"
        );
    }
    // And two pinned values, so a change to both would be seen too.
    let t = crate::HostTensor::standard_normal(vec![2], 0);
    let bits: Vec<u32> = t.data.iter().map(|x| x.to_bits()).collect();
    assert_eq!(bits, [0xBEE7_CFDD, 0x3E54_C09F], "{:?}", t.data); // −0.45275775, 0.20776604
}

#[test]
fn cosine_similarity_is_one_for_a_positive_multiple_and_falls_with_the_angle() {
    let t = |v: Vec<f32>| HostTensor::new(vec![v.len()], v).unwrap();
    let a = t(vec![1.0, 2.0, 3.0]);
    assert!((crate::cosine_similarity(&t(vec![2.0, 4.0, 6.0]), &a).unwrap() - 1.0).abs() < 1e-12);
    // Orthogonal, opposite, and a hand computation: (1·1 + 0·1) / (1 · √2).
    assert_eq!(
        crate::cosine_similarity(&t(vec![0.0, 1.0]), &t(vec![1.0, 0.0])).unwrap(),
        0.0
    );
    assert!(
        (crate::cosine_similarity(&t(vec![-1.0, -2.0, -3.0]), &a).unwrap() + 1.0).abs() < 1e-12
    );
    let c = crate::cosine_similarity(&t(vec![1.0, 0.0]), &t(vec![1.0, 1.0])).unwrap();
    assert!((c - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-12);
    assert_eq!(
        crate::cosine_similarity(&t(vec![f32::NAN, 1.0]), &t(vec![1.0, 1.0])).unwrap(),
        -1.0
    );
    assert!(crate::cosine_similarity(&t(vec![1.0]), &a).is_err());
}
