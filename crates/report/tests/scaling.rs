//! Data-parallel results at several world sizes: kept apart from each other in the
//! tables, counted over every rank, and shown as a scaling table and chart.

mod common;

use cnnbench_report::{Aliases, Format, Report, ReportOptions};
use common::*;
use std::path::Path;

/// `model` at batch 16 per rank on `ranks` processes, passes of `ms` milliseconds
/// (rank 0's), 25% of it the all-reduce; a single process has no `distributed` record.
fn write_run(dir: &Path, model: &str, ranks: usize, ms: f64) {
    write_run_on(dir, model, ranks, ms, None);
}

/// As [`write_run`], each rank naming its machine: rank r on host `r / per_host`.
fn write_run_on(dir: &Path, model: &str, ranks: usize, ms: f64, per_host: Option<usize>) {
    let mut run = Run::new(model, "Test CPU", vec![ms; 5]);
    run.engine = "torch-cpu";
    run.mode = "step";
    let mut v = run.json();
    if ranks > 1 {
        v["config"]["world_size"] = ranks.into();
        let allreduce: Vec<f64> = vec![ms / 1000.0 * 0.25; 5];
        v["samples"]["allreduce"] = allreduce.clone().into();
        v["summary"]["allreduce"] =
            serde_json::to_value(cnnbench_results::Summary::of(&allreduce).unwrap()).unwrap();
        v["distributed"] = serde_json::json!({
            "backend": "gloo", "transport": "tcp", "bucket_bytes": 26214400, "overlap": false,
            "ranks": (0..ranks).map(|r| serde_json::json!({"rank": r, "samples": v["samples"].clone()})).collect::<Vec<_>>()
        });
        if let Some(per_host) = per_host {
            for r in 0..ranks {
                v["distributed"]["ranks"][r]["host"] = format!("node{}", r / per_host).into();
            }
        }
    }
    std::fs::write(
        dir.join(format!("{model}-{ranks}.json")),
        serde_json::to_string(&v).unwrap(),
    )
    .unwrap();
}

fn build(dir: &Path) -> Report {
    let loaded = cnnbench_report::load_paths(&[dir.to_path_buf()], true).unwrap();
    Report::build(
        loaded.records,
        &Aliases::default(),
        &FakeCatalog,
        &ReportOptions::default(),
    )
    .unwrap()
}

#[test]
fn world_sizes_give_speedup_and_efficiency() {
    let tmp = tempfile::tempdir().unwrap();
    // 16 images in 100 ms on 1 rank: 160 images/s. 2 ranks, 32 images in 125 ms: 256
    // images/s (1.6×, 80%). 4 ranks, 64 images in 200 ms: 320 images/s (2×, 50%).
    write_run(tmp.path(), "resnet50", 1, 100.0);
    write_run(tmp.path(), "resnet50", 2, 125.0);
    write_run(tmp.path(), "resnet50", 4, 200.0);
    write_run(tmp.path(), "vgg16", 1, 100.0);
    let report = build(tmp.path());
    let scalings = cnnbench_report::scaling::scalings(&report);
    assert_eq!(
        scalings.len(),
        1,
        "vgg16 ran at one world size: {scalings:?}"
    );
    let s = &scalings[0];
    assert_eq!(s.world_sizes, [1, 2, 4]);
    assert_eq!(s.series.len(), 1, "one configuration: {:?}", s.series);
    let p = &s.series[0].points;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
    assert!(close(p[0].images_per_s, 160.0), "{p:?}");
    assert!(
        close(p[1].images_per_s, 256.0) && close(p[1].speedup, 1.6),
        "{p:?}"
    );
    assert!(close(p[1].efficiency, 0.8), "{p:?}");
    assert!(
        close(p[2].speedup, 2.0) && close(p[2].efficiency, 0.5),
        "{p:?}"
    );
    assert_eq!(p[0].allreduce_share, None);
    assert!(close(p[2].allreduce_share.unwrap(), 0.25));

    // The ranks are part of the configuration: three rows, not one pooled row.
    let text = Format::Markdown.exporter().render(&report).unwrap();
    assert!(text.contains("torch-cpu 0.22.1, 2 ranks"), "{text}");
    assert!(
        text.contains("## Scaling: resnet50, 3×224×224, step, batch 16 per rank"),
        "{text}"
    );
    assert!(text.contains("|4|320.0|2.00×|50%|25%|"), "{text}");

    let svg = cnnbench_report::charts::scaling::scaling_svg(s).unwrap();
    assert!(svg.contains("Efficiency") && svg.contains("ranks (processes)"));
    let html = Format::Html.exporter().render(&report).unwrap();
    assert!(html.contains("Scaling: resnet50"));
}

/// Ranks on several machines: the scaling row says hosts × ranks per host; one machine's
/// ranks (or results that do not say) keep the plain count.
#[test]
fn multi_host_world_sizes_say_hosts_times_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    write_run_on(tmp.path(), "resnet50", 1, 100.0, Some(1));
    write_run_on(tmp.path(), "resnet50", 2, 125.0, Some(2));
    write_run_on(tmp.path(), "resnet50", 4, 200.0, Some(2));
    let report = build(tmp.path());
    let text = Format::Markdown.exporter().render(&report).unwrap();
    assert!(
        text.contains("|4 (2 hosts × 2)|320.0|2.00×|50%|25%|"),
        "{text}"
    );
    assert!(text.contains("|2|256.0|"), "{text}");
}
