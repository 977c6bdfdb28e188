//! `profile` and `peak` on burn-flex with tiny networks: every node is reported once,
//! the heavy layer comes first, peak's JSON reads back. (That the nodes add up to the
//! whole is checked on a fake engine whose time is slept, in `profile.rs`: on burn-flex
//! the isolated benchmarks and the end-to-end run see a neighbour's load differently.)

use cnnbench_bench::peak::{self, PeakRequest};
use cnnbench_bench::profile::{profile, ProfileRequest};
use cnnbench_bench::result::ToolInfo;
use cnnbench_engine::{Mode, Precision};
use cnnbench_engine_burn::BurnFlexEngine;
use cnnbench_graph::ops::Conv2d;
use cnnbench_graph::{Graph, GraphBuilder};
use cnnbench_results::peak::PeakDoc;
use cnnbench_results::profile::ProfileDoc;
use cnnbench_results::{Batches, ModelRef, RunSpec};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

fn tool() -> ToolInfo {
    ToolInfo {
        name: "cnnbench".into(),
        version: "test".into(),
        git_commit: None,
    }
}

fn request(mode: Mode, batch: usize, passes: usize) -> ProfileRequest {
    let mut point = RunSpec::new(
        vec![ModelRef::Zoo {
            name: "test".into(),
        }],
        "burn-flex",
    );
    point.mode = mode;
    point.batch = Batches::Sizes(vec![batch]);
    point.passes = passes;
    ProfileRequest {
        point,
        model_source: "test".into(),
        tool: tool(),
        peak: Some(cnnbench_results::peak::BestRate {
            gflops_per_s: 100.0,
            primitive: "matrix product",
        }),
        ceilings: None,
    }
}

/// Timing tests run one at a time: two at once would share the cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(graph: &Graph, req: &ProfileRequest) -> ProfileDoc {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let engine = BurnFlexEngine::new(None).unwrap();
    profile(
        &engine,
        None,
        graph,
        req,
        &AtomicBool::new(false),
        &mut |_| {},
    )
    .unwrap()
}

/// Every op family the isolation has to build around: the image fed directly, two
/// readers of one value, a concat of different widths, an add of one value twice, a
/// squeeze-and-excitation gate, a flat vector.
fn branchy() -> Graph {
    let mut b = GraphBuilder::new("branchy", [3, 16, 16]);
    let x = b.input();
    let c1 = b.conv("c1", &x, Conv2d::new(8, 3).padding(1));
    let n1 = b.batch_norm("bn1", &c1);
    let r1 = b.relu("r1", &n1);
    let c2 = b.conv("c2", &r1, Conv2d::new(4, 1));
    let cat = b.concat("cat", &[&r1, &c2]);
    let twice = b.sum("twice", &[&cat, &cat]);
    let pool = b.adaptive_avg_pool("squeeze", &twice, 1, 1);
    let gate = b.sigmoid("gate", &pool);
    let gated = b.mul("excite", &twice, &gate);
    let mp = b.max_pool("pool", &gated, cnnbench_graph::ops::MaxPool2d::new(2, 2));
    let flat = b.flatten("flat", &mp);
    let drop = b.dropout("drop", &flat, 0.5);
    let fc = b.linear("fc", &drop, 10);
    b.finish(&fc).unwrap()
}

#[test]
fn every_node_appears_once_in_graph_order() {
    let g = branchy();
    for mode in [Mode::Train, Mode::Infer] {
        let doc = run(&g, &request(mode, 2, 2));
        let names: Vec<&str> = doc.nodes.iter().map(|n| n.name.as_str()).collect();
        let want: Vec<&str> = g.nodes().iter().map(|n| n.name.as_str()).collect();
        assert_eq!(names, want);
        for (i, n) in doc.nodes.iter().enumerate() {
            assert_eq!(n.index, i);
            assert_eq!(n.backward.is_some(), mode == Mode::Train, "{}", n.name);
            assert!(n.forward.p25 <= n.forward.median && n.forward.median <= n.forward.p75);
        }
        assert_eq!(doc.benchmarks, g.nodes().len(), "no two nodes alike here");
        let shares: f64 = doc.by_category().iter().map(|c| c.time_share).sum();
        assert!((shares - 1.0).abs() < 1e-9, "shares add up to 1: {shares}");
        // The file reads back as it was written.
        let text = serde_json::to_string(&doc).unwrap();
        let back: ProfileDoc = serde_json::from_str(&text).unwrap();
        assert_eq!(back.format, "cnnbench-profile");
        assert_eq!(back.nodes.len(), doc.nodes.len());
        assert_eq!(back.nodes[0].name, doc.nodes[0].name);
    }
}

#[test]
fn alike_nodes_share_one_benchmark() {
    let mut b = GraphBuilder::new("alike", [8, 16, 16]);
    let x = b.input();
    let c = b.conv("c", &x, Conv2d::new(8, 3).padding(1));
    let r1 = b.relu("r1", &c);
    let c2 = b.conv("c2", &r1, Conv2d::new(8, 3).padding(1));
    let r2 = b.relu("r2", &c2);
    let g = b.finish(&r2).unwrap();
    let doc = run(&g, &request(Mode::Train, 1, 1));
    // c reads the image and c2 does not, so they are different benchmarks; r2 is r1.
    assert_eq!(doc.benchmarks, 3);
    assert_eq!(doc.nodes[3].same_as, Some(1));
    assert_eq!(doc.nodes[3].forward, doc.nodes[1].forward);
    assert_eq!(doc.nodes[2].same_as, None);
}

#[test]
fn the_heavy_layer_comes_first() {
    let mut b = GraphBuilder::new("one-heavy", [3, 24, 24]);
    let x = b.input();
    let c1 = b.conv("light1", &x, Conv2d::new(16, 3).padding(1));
    let r1 = b.relu("relu1", &c1);
    let heavy = b.conv("heavy", &r1, Conv2d::new(128, 5).padding(2));
    let r2 = b.relu("relu2", &heavy);
    let p = b.max_pool("pool", &r2, cnnbench_graph::ops::MaxPool2d::new(2, 2));
    let g = b.finish(&p).unwrap();
    let doc = run(&g, &request(Mode::Train, 2, 7));
    let order: Vec<&str> = doc
        .nodes_by_time()
        .iter()
        .map(|n| n.name.as_str())
        .collect();
    let times: Vec<String> = doc
        .nodes
        .iter()
        .map(|n| format!("{} {:.3} ms", n.name, n.total_median() * 1e3))
        .collect();
    assert_eq!(order[0], "heavy", "{times:?}");
    let heavy = &doc.nodes[2];
    assert!(heavy.gflops_per_s().unwrap() > 0.0);
    assert_eq!(doc.by_category()[0].category, "conv 5×5");
}

/// An int8 timing calibrates its graph first on the f32 engine it is given, and cannot
/// go without one; no other precision calibrates.
#[test]
fn an_int8_timing_is_calibrated_on_its_reference_and_no_other_precision_is() {
    use cnnbench_bench::profile::int8_calibration;
    let engine = BurnFlexEngine::new(None).unwrap();
    let mut b = GraphBuilder::new("one-conv", [3, 8, 8]);
    let x = b.input();
    let c = b.conv("c", &x, Conv2d::new(4, 3).padding(1));
    let g = b.finish(&c).unwrap();
    let calibration = int8_calibration(&g, 0, Precision::Int8, Some(&engine))
        .unwrap()
        .expect("int8 calibrates");
    assert_eq!(
        calibration.ranges().images(),
        cnnbench_bench::profile::INT8_CALIBRATION_IMAGES
    );
    assert!(
        calibration.ranges().range("c").is_some(),
        "the convolution's output range"
    );
    assert!(int8_calibration(&g, 0, Precision::F32, Some(&engine))
        .unwrap()
        .is_none());
    let without = int8_calibration(&g, 0, Precision::Int8, None).unwrap_err();
    assert!(
        without.to_string().contains("an f32 engine to calibrate"),
        "{without}"
    );
}

#[test]
fn peak_measures_and_reads_back() {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let engine = BurnFlexEngine::new(None).unwrap();
    let mut req = PeakRequest::new(tool());
    (req.n, req.k, req.m, req.elements, req.passes, req.warmup) = (64, 128, 96, 1 << 20, 2, 1);
    (req.conv_batch, req.conv_channels, req.conv_size) = (2, 16, 8);
    let doc = peak::measure(&engine, None, &req, &AtomicBool::new(false)).unwrap();
    assert_eq!(doc.matmul.flops, 2.0 * 64.0 * 128.0 * 96.0);
    let conv = doc.conv.as_ref().unwrap();
    assert_eq!(conv.flops, 2.0 * 2.0 * 16.0 * 16.0 * 9.0 * 64.0);
    assert!(conv.gflops_per_s > 0.0);
    // "% of peak" is against the faster of the two primitives.
    let best = doc.best();
    assert_eq!(
        best.gflops_per_s,
        doc.matmul.gflops_per_s.max(conv.gflops_per_s)
    );
    assert_eq!(doc.precision, cnnbench_engine::Precision::F32);
    assert!(doc.matmul.gflops_per_s > 0.0 && doc.bandwidth.gb_per_s > 0.0);
    assert!(doc.bandwidth.elements >= 1 << 20);
    let text = serde_json::to_string_pretty(&doc).unwrap();
    let back: PeakDoc = serde_json::from_str(&text).unwrap();
    assert_eq!(back.matmul.gflops_per_s, doc.matmul.gflops_per_s);
    assert_eq!(back.theoretical, doc.theoretical);
    // The cache finds it again for the same engine, and not for another thread count.
    let dir = tempfile::tempdir().unwrap();
    peak::save(dir.path(), &doc).unwrap();
    let f32 = cnnbench_engine::Precision::F32;
    let cached = peak::load(dir.path(), &doc.engine, f32).unwrap();
    assert_eq!(cached.matmul.gflops_per_s, doc.matmul.gflops_per_s);
    let mut other = doc.engine.clone();
    other.threads += 1;
    assert_eq!(peak::load(dir.path(), &other, f32), None);
    // Nor for another precision: a bf16 run is not measured against f32's peak.
    assert_eq!(
        peak::load(dir.path(), &doc.engine, cnnbench_engine::Precision::Bf16),
        None
    );
}
