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

/// Each side measured in four processes (runs) that land within ±1% of each other.
const RUN_FACTORS: [f64; 4] = [1.0, 1.01, 0.99, 1.005];

/// `center`'s runs: one result file per run, `passes` passes each with ±`spread`% noise.
fn runs(dir: &Path, model: &str, center: f64, spread: f64, passes: usize, seed: u64) {
    for (i, f) in RUN_FACTORS.iter().enumerate() {
        Run::new(
            model,
            "Test CPU",
            noisy(center * f, spread, passes, seed * 10 + i as u64),
        )
        .write(dir, &format!("{model}-{i}.json"));
    }
}

/// BASE: three models at 100, 50 and 200 ms with ±3% noise, four runs each.
/// NEW: `slow` 20% slower, `fast` 20% faster, `same` unchanged (fresh noise).
fn fixture(base: &Path, new: &Path) {
    runs(base, "slow", 100.0, 3.0, 30, 1);
    runs(base, "fast", 50.0, 3.0, 30, 2);
    runs(base, "same", 200.0, 3.0, 30, 3);
    runs(new, "slow", 120.0, 3.0, 30, 4);
    runs(new, "fast", 40.0, 3.0, 30, 5);
    runs(new, "same", 200.0, 3.0, 30, 6);
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
        let ci = p.ci95.unwrap();
        assert!(ci[0] <= p.ratio && p.ratio <= ci[1], "{p:?}");
        assert_eq!((p.base_runs, p.new_runs), (4, 4));
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
    for i in 0..3 {
        let name = format!("m-{i}.json");
        Run::new("m", "Old GPU", noisy(10.0, 1.0, 10, 1 + i)).write(b.path(), &name);
        Run::new("m", "New GPU", noisy(5.0, 1.0, 10, 20 + i)).write(n.path(), &name);
    }
    Run::new("gone", "Old GPU", noisy(10.0, 1.0, 10, 1)).write(b.path(), "gone.json");
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
    // nn vs cuDNN 5.1.10 on the GTX 1080 Ti: one run (file) a model on each side, so
    // not judged, unless the machine's run-to-run noise is given: then cuDNN is faster
    // on every shared model.
    let base = legacy_outputs().join("1080Ti");
    let new = legacy_outputs().join("1080Ti_cudnn51");
    let c = compare(&entries(&base), &entries(&new), &CompareOptions::default());
    assert_eq!(c.pairs.len(), 6);
    assert!(c.pairs.iter().all(|p| p.verdict == Verdict::OneRun));
    let c = compare(
        &entries(&base),
        &entries(&new),
        &CompareOptions {
            run_noise: Some(0.05),
            ..Default::default()
        },
    );
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

/// On a shared VM the passes of one process agree while processes land ±15% apart. Two
/// sets of processes of the same configuration: the pair of first runs looks like a
/// real speed-up from its passes alone; the runs together say no change.
#[test]
fn run_to_run_variation_is_not_called_a_change() {
    let shifts = [1.00, 1.14, 0.88, 1.10, 0.93];
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (i, f) in shifts.iter().enumerate() {
        let name = format!("m-{i}.json");
        Run::new("m", "Test CPU", noisy(100.0 * f, 0.5, 20, 1 + i as u64)).write(b.path(), &name);
        let g = shifts[(i + 2) % shifts.len()];
        Run::new("m", "Test CPU", noisy(100.0 * g, 0.5, 20, 50 + i as u64)).write(n.path(), &name);
    }
    // The first run of each side alone: one run a side, not judged (the old unit, passes,
    // called this 12% faster with a narrow interval).
    let (b1, n1) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::copy(b.path().join("m-0.json"), b1.path().join("m-0.json")).unwrap();
    std::fs::copy(n.path().join("m-0.json"), n1.path().join("m-0.json")).unwrap();
    let one = compare(
        &entries(b1.path()),
        &entries(n1.path()),
        &CompareOptions::default(),
    );
    assert_eq!(one.pairs[0].verdict, Verdict::OneRun);
    assert!(one.pairs[0].ci95.is_none());
    assert!(one.summary().join("\n").contains("run --repeat N"));
    let all = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions::default(),
    );
    assert_eq!(
        all.pairs[0].verdict,
        Verdict::NoChange,
        "{:?}",
        all.pairs[0]
    );
    assert_eq!(all.pairs[0].base_runs, 5);
}

/// A real 10% slow-down, each side in five processes within ±2% of each other: found.
#[test]
fn a_real_change_is_found_with_five_runs_a_side() {
    let shifts = [1.00, 1.02, 0.985, 1.01, 0.99];
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for (i, f) in shifts.iter().enumerate() {
        let name = format!("m-{i}.json");
        Run::new("m", "Test CPU", noisy(100.0 * f, 1.0, 10, 1 + i as u64)).write(b.path(), &name);
        let g = shifts[(i + 1) % shifts.len()];
        Run::new("m", "Test CPU", noisy(110.0 * g, 1.0, 10, 50 + i as u64)).write(n.path(), &name);
    }
    let c = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions {
            fail_on_regression: Some(0.05),
            ..Default::default()
        },
    );
    assert_eq!(c.pairs[0].verdict, Verdict::Slower, "{:?}", c.pairs[0]);
    assert!(c.failed(), "a 10% slow-down crosses a 5% gate");
}

/// One run a side cannot pass a regression gate: it is undecided, as a disturbed pair is.
#[test]
fn one_run_a_side_is_undecided_for_the_gate() {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Run::new("m", "Test CPU", noisy(100.0, 1.0, 30, 1)).write(b.path(), "m.json");
    Run::new("m", "Test CPU", noisy(150.0, 1.0, 30, 2)).write(n.path(), "m.json");
    let opts = CompareOptions {
        fail_on_regression: Some(0.05),
        ..Default::default()
    };
    let c = compare(&entries(b.path()), &entries(n.path()), &opts);
    assert_eq!(c.pairs[0].verdict, Verdict::OneRun);
    assert!(!c.failed() && c.undecided() == 1);
    let md = render(&c, Format::Markdown);
    assert!(md.contains("not judged: one run"), "{md}");
    assert!(
        md.contains("No pair can be judged: 1 with one run on a side."),
        "{md}"
    );
    // With the machine's run-to-run noise known (3%), a 50% slow-down is judged.
    let c = compare(
        &entries(b.path()),
        &entries(n.path()),
        &CompareOptions {
            run_noise: Some(0.03),
            ..opts
        },
    );
    assert_eq!(c.pairs[0].verdict, Verdict::Slower);
    assert!(c.failed());
}

/// One run a side whose results both recorded the machine's run-to-run noise (`cnnbench
/// noise`) is judged against it, and the comparison says so; with it on one side only,
/// or with a noise as large as the change, it is not called.
#[test]
fn one_run_a_side_is_judged_against_the_noise_its_results_recorded() {
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    Run::new("m", "Test CPU", noisy(100.0, 1.0, 30, 1)).write(b.path(), "m.json");
    Run::new("m", "Test CPU", noisy(150.0, 1.0, 30, 2)).write(n.path(), "m.json");
    let record_noise = |dir: &Path, pct: f64| {
        let path = dir.join("m.json");
        let mut v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["run_noise"] = serde_json::json!({
            "pct": pct, "runs": 8, "configuration": "burn-flex resnet18 64x64",
            "measured_at": "2026-12-03T00:00:00Z"
        });
        std::fs::write(&path, v.to_string()).unwrap();
    };
    let judge = || {
        compare(
            &entries(b.path()),
            &entries(n.path()),
            &CompareOptions::default(),
        )
    };
    record_noise(b.path(), 3.0);
    assert_eq!(judge().pairs[0].verdict, Verdict::OneRun);
    record_noise(n.path(), 4.0);
    let c = judge();
    assert_eq!(c.pairs[0].verdict, Verdict::Slower, "{:?}", c.pairs[0]);
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("judged against the run-to-run noise its results recorded")),
        "{:?}",
        c.warnings
    );
    // A noise of 20%: a change must exceed 56%, and 50% does not.
    record_noise(n.path(), 20.0);
    assert_eq!(judge().pairs[0].verdict, Verdict::NoChange);
    // A figure no measurement gives is not believed.
    record_noise(b.path(), 1e9);
    assert_eq!(judge().pairs[0].verdict, Verdict::OneRun);
}

#[test]
fn the_geometric_mean_says_when_it_is_not_a_clear_change() {
    // Noisy samples and a 4% slow-down: the interval of the mean reaches below +2%.
    let (b, n) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    runs(b.path(), "noisy", 100.0, 15.0, 5, 11);
    runs(n.path(), "noisy", 104.0, 15.0, 5, 12);
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
    let doc = Run::new("slow", "Test CPU", noisy(120.0, 3.0, 30, 40)).json();
    let doc = disturbed(
        doc,
        "other processes used 95% of the machine's CPU time (limit 10%)",
    );
    std::fs::write(n.path().join("slow-0.json"), doc.to_string()).unwrap();
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

/// A median no pass could take (0, 5e-324 s, infinite, NaN) made the ratio infinite or
/// NaN, and the pair read "no change" while the gate passed. Such a pair is not judged,
/// is left out of the geometric mean, and holds the gate (`undecided`). Loading refuses
/// such times first (`report_cli`'s and `cli_hostile`'s tests); this is the last guard.
#[test]
fn a_ratio_that_is_not_a_number_is_not_judged_and_holds_the_gate() {
    let (base, new) = fixture_entries();
    for (side, value) in [
        ("base", 0.0),
        ("base", 5e-324),
        ("new", f64::INFINITY),
        ("new", f64::NAN),
        ("new", 1e308),
    ] {
        let (mut b, mut n) = (base.clone(), new.clone());
        let entries = if side == "base" { &mut b } else { &mut n };
        let same = entries.iter_mut().find(|e| e.model_name == "same").unwrap();
        for runs in same.run_samples.values_mut() {
            for run in runs.iter_mut() {
                run.iter_mut().for_each(|x| *x = value);
            }
        }
        let c = compare(
            &b,
            &n,
            &CompareOptions {
                fail_on_regression: Some(0.05),
                ..Default::default()
            },
        );
        let pair = c.pairs.iter().find(|p| p.model == "same").unwrap();
        assert_eq!(pair.verdict, Verdict::Implausible, "{side} {value}");
        assert!(!pair.regression, "{side} {value}");
        assert!(c.undecided() >= 1, "{side} {value}");
        assert!(
            c.geomean.is_some_and(f64::is_finite),
            "{side} {value}: {:?}",
            c.geomean
        );
        assert!(
            c.summary()
                .iter()
                .any(|l| l.contains("1 not judged (times no pass could take)")),
            "{side} {value}: {:?}",
            c.summary()
        );
    }
}
