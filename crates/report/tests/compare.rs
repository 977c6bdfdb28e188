//! `compare`: verdicts on synthetic samples (clear regression, clear improvement,
//! noise), the geometric mean, pairing and the regression gate.

mod common;

use cnnbench_report::compare::{compare, CompareOptions, Verdict};
use cnnbench_report::group::{group, Duplicates, Entry, Stat};
use cnnbench_report::{Aliases, Comparison, Format, NoCatalog, Quantity};
use common::*;
use std::path::Path;

fn entries(dir: &Path) -> Vec<Entry> {
    let loaded = cnnbench_report::load_paths(&[dir.to_path_buf()], true).unwrap();
    group(
        loaded.records,
        &Aliases::default(),
        &NoCatalog,
        Duplicates::Pool,
        Stat::Median,
        &mut Vec::new(),
    )
}

fn render(c: &Comparison, format: Format) -> String {
    format.exporter().render_comparison(c).unwrap()
}

/// BASE: three models at 100, 50 and 200 ms with ±3% noise.
/// NEW: `slow` 20% slower, `fast` 20% faster, `same` unchanged (fresh noise).
fn fixture(base: &Path, new: &Path) {
    Run::new("slow", "Test CPU", noisy(100.0, 3.0, 30, 1)).write(base, "slow.json");
    Run::new("fast", "Test CPU", noisy(50.0, 3.0, 30, 2)).write(base, "fast.json");
    Run::new("same", "Test CPU", noisy(200.0, 3.0, 30, 3)).write(base, "same.json");
    Run::new("slow", "Test CPU", noisy(120.0, 3.0, 30, 4)).write(new, "slow.json");
    Run::new("fast", "Test CPU", noisy(40.0, 3.0, 30, 5)).write(new, "fast.json");
    Run::new("same", "Test CPU", noisy(200.0, 3.0, 30, 6)).write(new, "same.json");
}

/// The fixture's base and new entries.
fn fixture_entries() -> (Vec<Entry>, Vec<Entry>) {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture(b.path(), n.path());
    (entries(b.path()), entries(n.path()))
}

/// The fixture compared with `options`.
fn fixture_compared(options: &CompareOptions) -> Comparison {
    let (base, new) = fixture_entries();
    compare(&base, &new, options)
}

#[test]
fn verdicts_on_synthetic_samples() {
    let c = fixture_compared(&CompareOptions::default());
    assert_eq!(c.pairs.len(), 3);
    let get = |m: &str| c.pairs.iter().find(|p| p.model == m).unwrap();
    assert_eq!(get("slow").verdict, Verdict::Slower);
    assert_eq!(get("fast").verdict, Verdict::Faster);
    assert_eq!(get("same").verdict, Verdict::NoChange);
    for p in &c.pairs {
        assert!(p.ci95[0] <= p.ratio && p.ratio <= p.ci95[1], "{p:?}");
    }
    assert!((get("slow").ratio - 1.2).abs() < 0.04, "{:?}", get("slow"));
    assert!((get("fast").ratio - 0.8).abs() < 0.03, "{:?}", get("fast"));
    // Geometric mean of about 1.2, 0.8 and 1.0.
    let g = c.geomean.unwrap();
    assert!((g - (1.2f64 * 0.8).cbrt()).abs() < 0.03, "{g}");
    let ci = c.geomean_ci95.unwrap();
    assert!(ci[0] < g && g < ci[1]);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert!(!c.failed(), "no gate asked for");
    let text = render(&c, Format::Markdown);
    assert!(
        text.contains("1 faster, 1 slower, 1 no change (noise threshold ±2%)"),
        "{text}"
    );
    assert!(
        text.contains(
            "|Model|Input|Configuration|Base (ms)|New (ms)|New/Base|95% CI|Change|Verdict|"
        ),
        "{text}"
    );
}

#[test]
fn the_same_seed_gives_the_same_intervals() {
    let (eb, en) = fixture_entries();
    let one = compare(&eb, &en, &CompareOptions::default());
    let two = compare(&eb, &en, &CompareOptions::default());
    assert_eq!(render(&one, Format::Json), render(&two, Format::Json));
}

#[test]
fn regression_gate_fires_only_beyond_its_percentage() {
    let (eb, en) = fixture_entries();
    let gate = |pct: f64| {
        compare(
            &eb,
            &en,
            &CompareOptions {
                fail_on_regression: Some(pct / 100.0),
                ..Default::default()
            },
        )
    };
    let c = gate(10.0);
    assert!(c.failed());
    assert_eq!(
        c.pairs
            .iter()
            .filter(|p| p.regression)
            .map(|p| p.model.as_str())
            .collect::<Vec<_>>(),
        ["slow"]
    );
    assert!(c
        .summary()
        .iter()
        .any(|l| l.starts_with("REGRESSION: 1 pair(s) slower by more than 10%")));
    assert!(!gate(30.0).failed(), "20% slower is within a 30% gate");
}

#[test]
fn a_wide_threshold_calls_everything_no_change() {
    let c = fixture_compared(&CompareOptions {
        threshold: 0.5,
        ..Default::default()
    });
    assert!(c.pairs.iter().all(|p| p.verdict == Verdict::NoChange));
}

#[test]
fn software_and_machine_differences_are_warned_about() {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Run::new("m", "Test CPU", noisy(10.0, 1.0, 10, 1)).write(b.path(), "m.json");
    let mut newer = Run::new("m", "Test CPU", noisy(10.0, 1.0, 10, 2));
    newer.version = "0.23.0";
    newer.cpu = "Other CPU";
    newer.write(n.path(), "m.json");
    let c = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions::default(),
    );
    assert_eq!(c.pairs.len(), 1);
    let w = c.warnings.join("\n");
    assert!(
        w.contains("framework version differs: BASE burn 0.22.1 vs NEW burn 0.23.0"),
        "{w}"
    );
    assert!(
        w.contains("CPU differs: BASE Test CPU vs NEW Other CPU"),
        "{w}"
    );
}

#[test]
fn a_new_machine_is_paired_by_model_and_unmatched_rows_are_listed() {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Run::new("m", "Old GPU", noisy(10.0, 1.0, 10, 1)).write(b.path(), "m.json");
    Run::new("gone", "Old GPU", noisy(10.0, 1.0, 10, 1)).write(b.path(), "gone.json");
    Run::new("m", "New GPU", noisy(5.0, 1.0, 10, 2)).write(n.path(), "m.json");
    Run::new("added", "New GPU", noisy(5.0, 1.0, 10, 2)).write(n.path(), "added.json");
    let c = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions::default(),
    );
    assert_eq!(c.pairs.len(), 1);
    assert_eq!(c.pairs[0].verdict, Verdict::Faster);
    assert_eq!(c.only_in_base.len(), 1);
    assert!(c.only_in_base[0].starts_with("gone "));
    assert!(c.only_in_new[0].starts_with("added "));
    assert!(c
        .warnings
        .iter()
        .any(|w| w.contains("device differs: BASE Old GPU vs NEW New GPU")));
    let (_, rows) = c.cells();
    assert!(rows[0][2].contains(" → "), "{rows:?}");
}

#[test]
fn single_samples_cannot_support_a_verdict() {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Run::new("m", "Test CPU", vec![10.0]).write(b.path(), "m.json");
    Run::new("m", "Test CPU", vec![20.0]).write(n.path(), "m.json");
    let c = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions {
            fail_on_regression: Some(0.05),
            ..Default::default()
        },
    );
    assert_eq!(c.pairs[0].verdict, Verdict::TooFewSamples);
    assert!(!c.failed(), "no confidence, no failure");
}

#[test]
fn legacy_files_compare_too() {
    // nn vs cuDNN 5.1.10 on the GTX 1080 Ti: cuDNN is faster on every shared model.
    let base = legacy_outputs().join("1080Ti");
    let new = legacy_outputs().join("1080Ti_cudnn51");
    let c = compare(&entries(&base), &entries(&new), &CompareOptions::default());
    assert_eq!(c.pairs.len(), 6);
    assert!(
        c.pairs.iter().all(|p| p.verdict == Verdict::Faster),
        "{:?}",
        c.pairs
    );
    assert_eq!(
        c.only_in_new.len(),
        3,
        "alexnet, vgg16 and vgg19 only ran with cuDNN"
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("libraries differs") || w.contains("settings differs")),
        "{:?}",
        c.warnings
    );
}

#[test]
fn the_geometric_mean_says_when_it_is_not_a_clear_change() {
    // Noisy samples and a 4% slow-down: the interval of the mean reaches below +2%.
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Run::new("noisy", "Test CPU", noisy(100.0, 15.0, 5, 11)).write(b.path(), "noisy.json");
    Run::new("noisy", "Test CPU", noisy(104.0, 15.0, 5, 12)).write(n.path(), "noisy.json");
    let c = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions::default(),
    );
    let ci = c.geomean_ci95.unwrap();
    assert!(ci[0] < 1.02, "{ci:?}");
    let text = c.summary().join("\n");
    assert!(text.contains("not a clear change"), "{text}");
    // A clear regression keeps its plain sentence.
    let c = fixture_compared(&CompareOptions::default());
    let clear = c.geomean_ci95.unwrap();
    let text = c.summary().join("\n");
    assert_eq!(
        text.contains("not a clear change"),
        !(clear[0] > 1.02 || clear[1] < 0.98),
        "{text}"
    );
}

#[test]
fn every_format_renders_a_comparison_through_the_exporters() {
    let c = fixture_compared(&CompareOptions::default());
    let summary = "1 faster, 1 slower, 1 no change (noise threshold ±2%).";
    let pretty = render(&c, Format::Pretty);
    assert!(
        pretty.contains("│ Model") && pretty.contains(summary),
        "{pretty}"
    );
    let md = render(&c, Format::Markdown);
    assert!(md.starts_with("|Model|Input|") && md.ends_with(&format!("{summary}\n")));
    let csv = render(&c, Format::Csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 4, "{csv}");
    assert!(lines[0].starts_with("model,input,mode,base_config,new_config,base_median_ms,"));
    assert!(lines
        .iter()
        .any(|l| l.starts_with("slow,") && l.ends_with(",slower,false")));
    let json: serde_json::Value = serde_json::from_str(&render(&c, Format::Json)).unwrap();
    assert_eq!(json["quantity"], "total");
    assert_eq!(json["pairs"].as_array().unwrap().len(), 3);
    let html = render(&c, Format::Html);
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<h1>cnnbench compare</h1>"));
    assert!(
        html.contains("<th>Verdict</th>") && html.contains(summary),
        "{html}"
    );
}

#[test]
fn a_phase_can_be_compared() {
    let (base, new) = fixture_entries();
    let forward = compare(
        &base,
        &new,
        &CompareOptions {
            quantity: Quantity::Forward,
            ..Default::default()
        },
    );
    // Forward is 40% of every total in the fixtures: the same ratios.
    assert_eq!(forward.pairs.len(), 3);
    let slow = forward.pairs.iter().find(|p| p.model == "slow").unwrap();
    assert!((slow.ratio - 1.2).abs() < 0.04, "{slow:?}");
    assert!(forward.summary()[0].contains("(forward time, medians)"));
    // Train-mode results have no update phase: nothing to compare, and a warning each.
    let update = compare(
        &base,
        &new,
        &CompareOptions {
            quantity: Quantity::Update,
            ..Default::default()
        },
    );
    assert!(update.pairs.is_empty());
    assert_eq!(
        update
            .warnings
            .iter()
            .filter(|w| w.ends_with("no `update` samples on one side, not compared"))
            .count(),
        3
    );
}

/// A result written while the machine was busy, as the harness marks it.
fn disturbed(mut doc: serde_json::Value, why: &str) -> serde_json::Value {
    doc["validity"] = serde_json::json!({
        "verdict": "disturbed",
        "reasons": [why],
        "notes": [],
        "limits": {"cpu_pressure_pct": 20.0, "memory_pressure_pct": 5.0, "steal_pct": 5.0,
                   "other_cpu_pct": 10.0, "major_faults": 100, "min_ticks": 100},
        "timed": {"window_s": 3.0, "other_cpu_pct": 95.0, "ticks": 600},
        "passes": []
    });
    doc
}

#[test]
fn a_disturbed_side_is_not_judged_and_fails_the_gate() {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    fixture(b.path(), n.path());
    // NEW's `slow` was measured beside a busy neighbour: its 20% is not a regression.
    let doc = Run::new("slow", "Test CPU", noisy(120.0, 3.0, 30, 4)).json();
    let doc = disturbed(
        doc,
        "other processes used 95% of the machine's CPU time (limit 10%)",
    );
    std::fs::write(n.path().join("slow.json"), doc.to_string()).unwrap();
    let opts = CompareOptions {
        fail_on_regression: Some(0.05),
        ..CompareOptions::default()
    };
    let c = compare(&entries(b.path()), &entries(n.path()), &opts);
    let slow = c.pairs.iter().find(|p| p.model == "slow").unwrap();
    assert_eq!(slow.verdict, Verdict::Disturbed);
    assert!(!slow.regression, "a disturbed pair is no regression");
    assert!(
        slow.disturbed[0].starts_with("new "),
        "{:?}",
        slow.disturbed
    );
    assert!(!c.failed());
    assert_eq!(c.undecided(), 1);
    // The geometric mean is over the two trusted pairs only.
    let g = c.geomean.unwrap();
    assert!((g - 0.8f64.sqrt()).abs() < 0.03, "{g}");
    let summary = c.summary().join("\n");
    assert!(summary.contains("over 2 pairs"), "{summary}");
    assert!(
        summary.contains("1 not judged (measured on a disturbed machine)"),
        "{summary}"
    );
    assert!(summary.contains("Not judged, slow"), "{summary}");
    assert!(summary.contains("other processes used 95%"), "{summary}");
    let md = render(&c, Format::Markdown);
    assert!(md.contains("not judged: disturbed"), "{md}");
}
