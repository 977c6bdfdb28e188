//! Our own result files: grouping, pooling, speed-ups computed by hand, CSV/JSON shapes.

mod common;

use cnnbench_report::{
    Aliases, Duplicates, Format, NoCatalog, Report, ReportOptions, SpeedupRequest, Stat,
};
use common::*;
use std::path::Path;

/// Three configurations: A and B share three models, C shares two with them.
/// Totals (ms, constant so every statistic agrees):
///   A: m1 10, m2 20, m3 40      B: m1 15, m2 26, m3 60      C: m1 30, m2 50
/// B/A = 1.5, 1.3, 1.5 → "1.30x to 1.50x", geometric mean 2.925^(1/3) = 1.4302.
fn speedup_fixture(dir: &Path) {
    let cfgs: [(&str, &[(&str, f64)]); 3] = [
        ("Device A", &[("m1", 10.0), ("m2", 20.0), ("m3", 40.0)]),
        ("Device B", &[("m1", 15.0), ("m2", 26.0), ("m3", 60.0)]),
        ("Device C", &[("m1", 30.0), ("m2", 50.0)]),
    ];
    for (device, models) in cfgs {
        for (model, t) in models {
            Run::new(model, device, vec![*t; 5])
                .write(dir, &format!("{}-{model}.json", device.replace(' ', "")));
        }
    }
}

fn build(dir: &Path, opts: &ReportOptions) -> Report {
    let loaded = cnnbench_report::load_paths(&[dir.to_path_buf()], true).unwrap();
    Report::build(loaded.records, &Aliases::default(), &FakeCatalog, opts).unwrap()
}

/// Two results written into `dir` as `a.json` and `b.json`, reported with the cold-start
/// columns.
fn cold_start_report(dir: &Path, a: &serde_json::Value, b: &serde_json::Value) -> Report {
    std::fs::write(dir.join("a.json"), a.to_string()).unwrap();
    std::fs::write(dir.join("b.json"), b.to_string()).unwrap();
    build(
        dir,
        &ReportOptions {
            cold_start: true,
            ..Default::default()
        },
    )
}

#[test]
fn speedups_match_a_hand_computation() {
    let tmp = tempfile::tempdir().unwrap();
    speedup_fixture(tmp.path());
    let r = build(
        tmp.path(),
        &ReportOptions {
            speedups: SpeedupRequest::All,
            ..Default::default()
        },
    );
    let lines: Vec<String> = r.speedups.iter().map(|s| s.sentence()).collect();
    assert_eq!(
        lines,
        ["Device A · burn-flex 0.22.1 is 1.30x to 1.50x faster than Device B · burn-flex 0.22.1 across 3 models (geometric mean 1.43x)"],
        "C shares only two models with A and B, so it has no line"
    );
    let s = &r.speedups[0];
    assert!((s.geomean - 2.925f64.powf(1.0 / 3.0)).abs() < 1e-9);

    // Chosen pairs are reported in the order asked, even with fewer than 3 models.
    let r = build(
        tmp.path(),
        &ReportOptions {
            speedups: SpeedupRequest::Pairs(vec![("Device C".into(), "device a".into())]),
            ..Default::default()
        },
    );
    assert_eq!(
        r.speedups[0].sentence(),
        "Device C · burn-flex 0.22.1 is 2.50x to 3.00x slower than Device A · burn-flex 0.22.1 across 2 models (geometric mean 2.74x)"
    );
    let md = Format::Markdown.exporter().render(&r).unwrap();
    assert!(md.contains("## Speed-ups\n\n- Device C"), "{md}");
}

#[test]
fn an_unknown_speedup_name_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    speedup_fixture(tmp.path());
    let loaded = cnnbench_report::load_paths(&[tmp.path().to_path_buf()], true).unwrap();
    let opts = ReportOptions {
        speedups: SpeedupRequest::Pairs(vec![("Device Z".into(), "Device A".into())]),
        ..Default::default()
    };
    let e = Report::build(loaded.records, &Aliases::default(), &NoCatalog, &opts)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no configuration matches \"Device Z\"")
            && e.contains("Device A · burn-flex 0.22.1"),
        "{e}"
    );
}

#[test]
fn runs_of_one_configuration_are_pooled_with_a_run_count() {
    let tmp = tempfile::tempdir().unwrap();
    Run::new("resnet-50", "Test CPU", vec![100.0, 102.0, 104.0]).write(tmp.path(), "a.json");
    Run::new("resnet50", "Test CPU", vec![110.0, 112.0]).write(&tmp.path().join("sub"), "b.json");
    // Another engine version is another configuration: not pooled.
    let mut other = Run::new("resnet50", "Test CPU", vec![90.0]);
    other.version = "0.23.0";
    other.write(tmp.path(), "c.json");
    let r = build(tmp.path(), &ReportOptions::default());
    assert_eq!(
        r.tables.len(),
        1,
        "resnet-50 and resnet50 are one model for the zoo"
    );
    let (head, rows) = r.cells(&r.tables[0]);
    assert_eq!(
        head,
        [
            "Device",
            "Engine",
            "Forward (ms)",
            "Backward (ms)",
            "Total (ms)",
            "images/s",
            "Runs"
        ]
    );
    assert_eq!(rows.len(), 2);
    // Sorted by total: the 0.23.0 run (90 ms) first; then the two runs, whose median is
    // the median of their medians (102 and 111), not of their 5 passes pooled (104): the
    // run is the unit.
    assert_eq!(rows[0][1], "burn-flex 0.23.0");
    assert_eq!(rows[1][4], "106.50");
    assert_eq!(rows[1][6], "2");
    assert_eq!(rows[1][5], format!("{:.1}", 16.0 / 0.1065));
    assert!(
        r.notes[0].contains("2 runs pooled (5 samples)"),
        "{:?}",
        r.notes
    );
    assert!(
        r.subtitle(&r.tables[0]).contains("median of 1–5 passes"),
        "{}",
        r.subtitle(&r.tables[0])
    );
    // The overview takes depth, parameters and errors from the catalog.
    let (oh, orows) = r.overview_cells();
    assert_eq!(oh[0], "Model");
    assert_eq!(
        orows[0][..8],
        [
            "resnet50",
            "16 x 3 x 224 x 224",
            "train",
            "50",
            "25.56",
            "4.09",
            "23.85",
            "7.13"
        ]
    );
    assert_eq!(orows[0][8], "90.00");
}

#[test]
fn stat_changes_every_number() {
    let tmp = tempfile::tempdir().unwrap();
    Run::new("tiny", "Test CPU", vec![10.0, 11.0, 30.0]).write(tmp.path(), "a.json");
    for (stat, total) in [
        (Stat::Mean, "17.00"),
        (Stat::Median, "11.00"),
        (Stat::Min, "10.00"),
    ] {
        let r = build(
            tmp.path(),
            &ReportOptions {
                stat: Some(stat),
                ..Default::default()
            },
        );
        assert_eq!(r.cells(&r.tables[0]).1[0][4], total, "{stat:?}");
    }
}

#[test]
fn infer_mode_has_no_backward_column_and_its_own_table() {
    let tmp = tempfile::tempdir().unwrap();
    let mut infer = Run::new("tiny", "Test CPU", vec![5.0, 5.0]);
    infer.mode = "infer";
    infer.write(tmp.path(), "i.json");
    Run::new("tiny", "Test CPU", vec![12.0, 12.0]).write(tmp.path(), "t.json");
    let r = build(tmp.path(), &ReportOptions::default());
    assert_eq!(r.tables.len(), 2);
    let infer_table = r
        .tables
        .iter()
        .find(|t| t.key.mode == cnnbench_results::Mode::Infer)
        .unwrap();
    let (head, _) = r.cells(infer_table);
    assert_eq!(
        head,
        ["Device", "Engine", "Forward (ms)", "Total (ms)", "images/s"]
    );
}

#[test]
fn csv_has_one_row_per_result_and_stable_columns() {
    let tmp = tempfile::tempdir().unwrap();
    speedup_fixture(tmp.path());
    let r = build(tmp.path(), &ReportOptions::default());
    let csv = Format::Csv.exporter().render(&r).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1 + 8);
    let head: Vec<&str> = lines[0].split(',').collect();
    for col in [
        "model",
        "device",
        "engine",
        "framework_version",
        "batch_size",
        "image_height",
        "mode",
        "runs",
        "forward_mean_ms",
        "backward_median_ms",
        "total_std_ms",
        "total_min_ms",
        "total_max_ms",
        "images_per_s",
        "gflops_per_s",
        "peak_rss_bytes",
    ] {
        assert!(head.contains(&col), "missing column {col}");
    }
    for l in &lines[1..] {
        assert_eq!(l.split(',').count(), head.len(), "{l}");
    }
    let at = |row: &str, col: &str| {
        row.split(',')
            .nth(head.iter().position(|h| *h == col).unwrap())
            .unwrap()
            .to_string()
    };
    let m2b = lines
        .iter()
        .find(|l| l.starts_with("m2,") && l.contains("Device B"))
        .unwrap();
    assert_eq!(at(m2b, "total_median_ms"), "26.000000");
    assert_eq!(at(m2b, "forward_mean_ms"), format!("{:.6}", 26.0 * 0.4));
    assert_eq!(at(m2b, "update_mean_ms"), "");
    // 2 MACs·batch·3 per pass for training, 2e6 MACs per example: 192e6 FLOPs / 0.026 s.
    assert_eq!(
        at(m2b, "gflops_per_s"),
        format!("{:.6}", 192e6 / 0.026 / 1e9)
    );
    assert_eq!(at(m2b, "peak_rss_bytes"), "123456789");
}

#[test]
fn json_is_machine_readable_with_every_statistic() {
    let tmp = tempfile::tempdir().unwrap();
    speedup_fixture(tmp.path());
    let r = build(
        tmp.path(),
        &ReportOptions {
            speedups: SpeedupRequest::All,
            ..Default::default()
        },
    );
    let v: serde_json::Value =
        serde_json::from_str(&Format::Json.exporter().render(&r).unwrap()).unwrap();
    assert_eq!(v["format"], "cnnbench-report");
    assert_eq!(v["stat"], "median");
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 8);
    let first = &results[0];
    for k in [
        "model",
        "device",
        "engine",
        "batch_size",
        "mode",
        "runs",
        "images_per_s",
        "sources",
    ] {
        assert!(first.get(k).is_some(), "missing {k}");
    }
    for k in [
        "count",
        "mean_ms",
        "median_ms",
        "std_ms",
        "min_ms",
        "max_ms",
        "median_ci95_ms",
    ] {
        assert!(
            first["quantities"]["total"].get(k).is_some(),
            "missing total.{k}"
        );
    }
    assert_eq!(v["speedups"][0]["ratios"].as_array().unwrap().len(), 3);
}

#[test]
fn aliases_rename_devices_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    speedup_fixture(tmp.path());
    let loaded = cnnbench_report::load_paths(&[tmp.path().to_path_buf()], true).unwrap();
    let aliases =
        Aliases::parse("[devices]\n\"Device A\" = \"Alpha\"\n[models]\nm1 = \"Model One\"\n")
            .unwrap();
    let r = Report::build(
        loaded.records,
        &aliases,
        &NoCatalog,
        &ReportOptions {
            speedups: SpeedupRequest::All,
            ..Default::default()
        },
    )
    .unwrap();
    let md = Format::Markdown.exporter().render(&r).unwrap();
    assert!(md.contains("|Alpha|burn-flex 0.22.1|"), "{md}");
    assert!(md.contains("## Model One\n"), "{md}");
    assert!(!md.contains("Device A"), "{md}");
    assert!(r.speedups[0].sentence().starts_with("Alpha · burn-flex"));
}

#[test]
fn model_filter_keeps_only_what_was_asked() {
    let tmp = tempfile::tempdir().unwrap();
    speedup_fixture(tmp.path());
    let loaded = cnnbench_report::load_paths(&[tmp.path().to_path_buf()], true).unwrap();
    let opts = ReportOptions {
        models: vec!["M2".into()],
        ..Default::default()
    };
    let r = Report::build(
        loaded.records.clone(),
        &Aliases::default(),
        &NoCatalog,
        &opts,
    )
    .unwrap();
    assert_eq!(r.tables.len(), 1);
    let opts = ReportOptions {
        models: vec!["nope".into()],
        ..Default::default()
    };
    let e = Report::build(loaded.records, &Aliases::default(), &NoCatalog, &opts)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "no results for model nope; the results hold: m1, m2, m3");
}

#[test]
fn duplicates_latest_keeps_the_newest_run() {
    let tmp = tempfile::tempdir().unwrap();
    let mut old = Run::new("tiny", "Test CPU", vec![50.0]).json();
    old["started_at"] = "2024-01-01T00:00:00Z".into();
    std::fs::write(tmp.path().join("old.json"), old.to_string()).unwrap();
    Run::new("tiny", "Test CPU", vec![70.0]).write(tmp.path(), "new.json");
    let r = build(
        tmp.path(),
        &ReportOptions {
            duplicates: Duplicates::Latest,
            ..Default::default()
        },
    );
    assert_eq!(r.cells(&r.tables[0]).1[0][4], "70.00");
    assert!(
        r.notes[0].contains("latest of 2 runs kept"),
        "{:?}",
        r.notes
    );
}

#[test]
fn disturbed_rows_are_marked_and_cold_start_shown_on_request() {
    let tmp = tempfile::tempdir().unwrap();
    let quiet = |mut doc: serde_json::Value| {
        doc["validity"] = serde_json::json!({
            "verdict": "clean", "reasons": [], "notes": [],
            "limits": {"cpu_pressure_pct": 20.0, "memory_pressure_pct": 5.0, "steal_pct": 5.0,
                       "other_cpu_pct": 10.0, "major_faults": 100, "min_ticks": 100},
            "timed": {"window_s": 3.0}, "passes": []
        });
        doc["cold_start"] = serde_json::json!({
            "process_before_run_s": 0.2, "prepare_s": 1.25, "first_pass_s": 0.5,
            "process_to_first_timed_pass_s": 2.0, "first_in_process": true
        });
        doc
    };
    let a = quiet(Run::new("tiny", "Device A", vec![10.0; 5]).json());
    let mut b = quiet(Run::new("tiny", "Device B", vec![30.0; 5]).json());
    b["validity"]["verdict"] = "disturbed".into();
    b["validity"]["reasons"] =
        serde_json::json!(["other processes used 97% of the machine's CPU time (limit 10%)"]);
    let r = cold_start_report(tmp.path(), &a, &b);
    let (head, rows) = r.cells(&r.tables[0]);
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("{head:?}"))
    };
    assert_eq!(rows[0][col("Machine")], "quiet");
    assert_eq!(rows[1][col("Machine")], "DISTURBED");
    assert_eq!(rows[0][col("Prepare (s)")], "1.250");
    assert_eq!(rows[0][col("First pass (s)")], "0.500");
    // No engine here compiled: no compile column.
    assert!(!head.iter().any(|h| h == "Compile (s)"), "{head:?}");
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("DISTURBED") && n.contains("other processes used 97%")),
        "{:?}",
        r.notes
    );
    // Without a disturbed row or the option, the table is as before.
    std::fs::remove_file(tmp.path().join("b.json")).unwrap();
    let r = build(tmp.path(), &ReportOptions::default());
    let (head, _) = r.cells(&r.tables[0]);
    assert!(
        !head.iter().any(|h| h == "Machine" || h == "Prepare (s)"),
        "{head:?}"
    );
}

/// A compiling engine's compile time (`cold_start.compile_s`) gets its own column, and
/// a row of an engine that compiles nothing shows "-" in it.
#[test]
fn cold_start_shows_compile_time_where_an_engine_compiled() {
    let tmp = tempfile::tempdir().unwrap();
    let with = |mut doc: serde_json::Value, compile: Option<f64>| {
        doc["cold_start"] = serde_json::json!({
            "process_before_run_s": 0.2, "prepare_s": 1.0, "first_pass_s": 0.25,
            "process_to_first_timed_pass_s": 2.0, "first_in_process": true
        });
        if let Some(c) = compile {
            doc["cold_start"]["compile_s"] = c.into();
        }
        doc
    };
    let compiled = with(
        Run::new("tiny", "Device A", vec![10.0; 3]).json(),
        Some(42.5),
    );
    let eager = with(Run::new("tiny", "Device B", vec![20.0; 3]).json(), None);
    let r = cold_start_report(tmp.path(), &compiled, &eager);
    let (head, rows) = r.cells(&r.tables[0]);
    let col = head
        .iter()
        .position(|h| h == "Compile (s)")
        .expect("a compile column");
    let cells: Vec<&str> = rows.iter().map(|r| r[col].as_str()).collect();
    assert!(
        cells.contains(&"42.500") && cells.contains(&"-"),
        "{cells:?}"
    );
}

#[test]
fn the_overview_tells_an_inference_row_from_a_training_row() {
    let tmp = tempfile::tempdir().unwrap();
    Run::new("tiny", "Device A", vec![10.0; 3]).write(tmp.path(), "train.json");
    let mut infer = Run::new("tiny", "Device A", vec![4.0; 3]);
    infer.mode = "infer";
    infer.write(tmp.path(), "infer.json");
    let r = build(tmp.path(), &ReportOptions::default());
    let (head, rows) = r.overview_cells();
    assert_eq!(head[2], "Mode");
    let mut modes: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
    modes.sort();
    assert_eq!(modes, ["infer", "train"]);
}
