use super::*;

#[test]
fn window_count_matches_pytorch_formulas() {
    // conv 7x7/2 pad 3 on 224 -> 112
    assert_eq!(window_count(224, 7, 2, 1, 3, 3, false), 112);
    // maxpool 3/2 pad 1 on 112 -> 56
    assert_eq!(window_count(112, 3, 2, 1, 1, 1, false), 56);
    // Caffe AlexNet: pool 3/2 ceil on 55 -> 27, on 13 -> 6
    assert_eq!(window_count(55, 3, 2, 1, 0, 0, true), 27);
    assert_eq!(window_count(13, 3, 2, 1, 0, 0, true), 6);
    // GoogLeNet: pool 3/2 ceil on 112 -> 56 (floor would give 55)
    assert_eq!(window_count(112, 3, 2, 1, 0, 0, true), 56);
    assert_eq!(window_count(112, 3, 2, 1, 0, 0, false), 55);
    // ceil mode never starts a window in the right padding
    assert_eq!(window_count(5, 2, 2, 1, 1, 1, true), 3);
    // dilation 2: effective kernel 5
    assert_eq!(window_count(10, 3, 1, 2, 0, 0, false), 6);
    // too small
    assert_eq!(window_count(2, 3, 1, 1, 0, 0, false), 0);
    // ceil mode keeps a partial window on an input smaller than the kernel (PyTorch
    // gives 1 for a 2x2/2 ceil-mode pool on 1x1)
    assert_eq!(window_count(1, 2, 2, 1, 0, 0, true), 1);
    assert_eq!(window_count(1, 2, 2, 1, 0, 0, false), 0);
}

#[test]
fn conv_counts() {
    let mut c = Conv2d::new(64, 7).stride(2).padding(3).bias(false);
    c.in_channels = 3;
    let op = Op::Conv2d(c);
    let out = op.infer(&[&Shape::chw(3, 224, 224)]).unwrap();
    assert_eq!(out, Shape::chw(64, 112, 112));
    assert_eq!(op.params(), 64 * 3 * 49);
    assert_eq!(op.macs(&out), 64 * 112 * 112 * 3 * 49);
}

#[test]
fn grouped_conv_counts_and_validation() {
    let mut c = Conv2d::new(256, 5).padding(2).groups(2);
    c.in_channels = 96;
    let op = Op::Conv2d(c.clone());
    assert_eq!(op.params(), 256 * 48 * 25 + 256);
    let out = op.infer(&[&Shape::chw(96, 27, 27)]).unwrap();
    assert_eq!(op.macs(&out), 256 * 27 * 27 * 48 * 25);
    c.groups = 5;
    let err = Op::Conv2d(c).validate().unwrap_err();
    assert!(err.contains("groups 5 must divide"), "{err}");
}

#[test]
fn shape_errors_say_what_is_wrong() {
    let add = Op::Add(NoParams {});
    let err = add
        .infer(&[&Shape::chw(64, 8, 8), &Shape::chw(32, 8, 8)])
        .unwrap_err();
    assert!(err.contains("different shapes"), "{err}");
    let cat = Op::Concat(NoParams {});
    let err = cat
        .infer(&[&Shape::chw(64, 8, 8), &Shape::chw(32, 4, 4)])
        .unwrap_err();
    assert!(err.contains("spatial size"), "{err}");
    let lin = Op::Linear(Linear {
        in_features: 10,
        out_features: 2,
        bias: true,
    });
    let err = lin.infer(&[&Shape::flat(12)]).unwrap_err();
    assert!(err.contains("expects 10 input features, got 12"), "{err}");
    let pool = Op::MaxPool2d(MaxPool2d::new(3, 2));
    let err = pool.infer(&[&Shape::chw(8, 2, 2)]).unwrap_err();
    assert!(err.contains("too small"), "{err}");
}

#[test]
fn implausible_sizes_are_refused() {
    let mut c = Conv2d::new(1 << 40, 3);
    c.in_channels = 3;
    let err = Op::Conv2d(c).validate().unwrap_err();
    assert!(err.contains("implausibly large"), "{err}");
    let pool = Op::MaxPool2d(MaxPool2d::new(3, 2).padding(usize::MAX));
    assert!(pool.validate().unwrap_err().contains("implausibly large"));
}

#[test]
fn batch_norm_params_exclude_running_stats() {
    let bn = Op::BatchNorm2d(BatchNorm2d::new(64));
    assert_eq!(bn.params(), 128);
    assert_eq!(bn.buffers(), 128);
}

#[test]
fn modern_ops_infer_count_and_round_trip() {
    let map = Shape::chw(8, 5, 5);
    let gate = Shape::chw(8, 1, 1);
    let unit = || NoParams {};
    let ops = [
        Op::Activation(Activation::Relu6),
        Op::Activation(Activation::Silu),
        Op::Activation(Activation::Gelu),
        Op::Activation(Activation::Hardswish),
        Op::Activation(Activation::Hardsigmoid),
        Op::Activation(Activation::Sigmoid),
        Op::LayerNorm2d(LayerNorm2d::new(8)),
        Op::LayerScale(LayerScale::new(8)),
        Op::ChannelShuffle(ChannelShuffle { groups: 2 }),
        Op::StochasticDepth(StochasticDepth { p: 0.1 }),
    ];
    for op in ops {
        op.validate().unwrap();
        assert_eq!(op.infer(&[&map]).unwrap(), map, "{}", op.tag());
        assert_eq!(op.macs(&map), 0, "{}", op.tag());
        assert_eq!(op.buffers(), 0, "{}", op.tag());
        let json = serde_json::to_value(&op).unwrap();
        assert_eq!(json["op"], op.tag());
        let back: Op = serde_json::from_value(json).unwrap();
        assert_eq!(back, op);
        assert!(OP_TAGS.contains(&op.tag()));
        assert!(!op.describe().is_empty());
    }
    assert_eq!(Op::LayerNorm2d(LayerNorm2d::new(8)).params(), 16);
    assert_eq!(Op::LayerScale(LayerScale::new(8)).params(), 8);
    // Defaults: ConvNeXt's eps and layer-scale init.
    let ln: Op = serde_json::from_str(r#"{"op": "layer_norm2d", "num_channels": 4}"#).unwrap();
    assert_eq!(ln, Op::LayerNorm2d(LayerNorm2d::new(4)));

    let mul = Op::Mul(unit());
    assert_eq!(mul.arity(), (2, 2));
    assert_eq!(mul.infer(&[&map, &gate]).unwrap(), map);
    assert_eq!(mul.infer(&[&gate, &map]).unwrap(), map);
    assert_eq!(mul.infer(&[&map, &map]).unwrap(), map);
    let err = mul.infer(&[&map, &Shape::chw(4, 1, 1)]).unwrap_err();
    assert!(err.contains("do not broadcast"), "{err}");
    let err = mul.infer(&[&map, &Shape::flat(8)]).unwrap_err();
    assert!(err.contains("do not broadcast"), "{err}");

    let slice = Op::SliceChannels(SliceChannels { start: 2, end: 6 });
    assert_eq!(slice.infer(&[&map]).unwrap(), Shape::chw(4, 5, 5));
    let err = Op::SliceChannels(SliceChannels { start: 4, end: 12 })
        .infer(&[&map])
        .unwrap_err();
    assert!(err.contains("channels 4..12 of an input with 8"), "{err}");
    let err = Op::SliceChannels(SliceChannels { start: 3, end: 3 })
        .validate()
        .unwrap_err();
    assert!(err.contains("empty"), "{err}");

    let err = Op::ChannelShuffle(ChannelShuffle { groups: 3 })
        .infer(&[&map])
        .unwrap_err();
    assert!(err.contains("must divide the 8 channels"), "{err}");
    let err = Op::LayerNorm2d(LayerNorm2d::new(4))
        .infer(&[&map])
        .unwrap_err();
    assert!(err.contains("expects 4 channels, got 8"), "{err}");
    let err = Op::LayerScale(LayerScale::new(4))
        .infer(&[&map])
        .unwrap_err();
    assert!(err.contains("expects 4 channels, got 8"), "{err}");
    let err = Op::StochasticDepth(StochasticDepth { p: 1.0 })
        .validate()
        .unwrap_err();
    assert!(err.contains("[0, 1)"), "{err}");
    let err = Op::LayerNorm2d(LayerNorm2d {
        num_channels: 4,
        eps: 0.0,
    })
    .validate()
    .unwrap_err();
    assert!(err.contains("eps"), "{err}");
}

/// One op of every JSON tag.
fn one_of_each_tag() -> Vec<Op> {
    let mut conv = Conv2d::new(4, 3);
    conv.in_channels = 4;
    let mut ops: Vec<Op> = Activation::ALL.iter().map(|a| Op::Activation(*a)).collect();
    ops.extend([
        Op::Conv2d(conv),
        Op::BatchNorm2d(BatchNorm2d::new(4)),
        Op::LocalResponseNorm(LocalResponseNorm {
            size: 3,
            alpha: 1e-4,
            beta: 0.75,
            k: 1.0,
        }),
        Op::MaxPool2d(MaxPool2d::new(2, 2)),
        Op::AvgPool2d(AvgPool2d::new(2, 2)),
        Op::AdaptiveAvgPool2d(AdaptiveAvgPool2d {
            output: Hw::square(1),
        }),
        Op::Dropout(Dropout { p: 0.5 }),
        Op::Flatten(NoParams {}),
        Op::Linear(Linear::new(3)),
        Op::Concat(NoParams {}),
        Op::Add(NoParams {}),
        Op::Mul(NoParams {}),
        Op::LayerNorm2d(LayerNorm2d::new(4)),
        Op::LayerScale(LayerScale::new(4)),
        Op::ChannelShuffle(ChannelShuffle { groups: 2 }),
        Op::SliceChannels(SliceChannels { start: 0, end: 2 }),
        Op::StochasticDepth(StochasticDepth { p: 0.1 }),
    ]);
    ops
}

#[test]
fn op_tags_are_exactly_the_tags_that_parse() {
    let ops = one_of_each_tag();
    let mut tags: Vec<&str> = ops.iter().map(|op| op.tag()).collect();
    for op in &ops {
        let json = serde_json::to_value(op).unwrap();
        assert_eq!(json["op"], op.tag(), "{op:?}");
        let back: Op = serde_json::from_value(json).unwrap();
        assert_eq!(&back, op);
    }
    tags.sort_unstable();
    let mut listed = OP_TAGS.to_vec();
    listed.sort_unstable();
    assert_eq!(tags, listed, "OP_TAGS and the ops that parse differ");
}

#[test]
fn activations_keep_their_own_tags() {
    let relu: Op = serde_json::from_str(r#"{"op": "relu"}"#).unwrap();
    assert_eq!(relu, Op::Activation(Activation::Relu));
    let hs: Op = serde_json::from_str(r#"{"op": "hardswish"}"#).unwrap();
    assert_eq!(hs.describe(), "Hardswish");
    let err = serde_json::from_str::<Op>(r#"{"op": "relu", "inplace": true}"#).unwrap_err();
    assert!(err.to_string().contains("inplace"), "{err}");
}

#[test]
fn counts_come_from_the_weight_specs() {
    for op in one_of_each_tag() {
        let (params, buffers): (Vec<_>, Vec<_>) =
            op.weight_specs().into_iter().partition(|w| w.trainable);
        let size = |v: &[OpWeight]| -> u64 {
            v.iter()
                .map(|w| w.shape.iter().product::<usize>() as u64)
                .sum()
        };
        assert_eq!(op.params(), size(&params), "{}", op.tag());
        assert_eq!(op.buffers(), size(&buffers), "{}", op.tag());
    }
}
