//! The original suite's files, read with its display names, reproduce its README
//! tables to the hundredth of a millisecond.

mod common;

use cnnbench_report::{
    Duplicates, Format, Layout, NoCatalog, Report, ReportOptions, SpeedupRequest,
};
use common::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

fn legacy_report(paths: &[PathBuf], duplicates: Duplicates, with_std: bool) -> Report {
    let records = cnnbench_report::load_paths(paths, true).unwrap().records;
    let opts = ReportOptions {
        layout: Layout::Legacy,
        duplicates,
        with_std,
        ..ReportOptions::default()
    };
    Report::build(records, &legacy_aliases(), &NoCatalog, &opts).unwrap()
}

fn markdown(r: &Report) -> String {
    Format::Markdown.exporter().render(r).unwrap()
}

/// The original README's rows for the configurations whose files are in the fixtures
/// (GTX 1080 Ti with and without cuDNN, the dual-Xeon CPU), in README order, copied
/// from jcjohnson/cnn-benchmarks' README (MIT, see fixtures/legacy/LICENSE).
const README_ROWS: &str = "\
alexnet |GTX 1080 Ti|5.1.10|4.31|9.58|13.89|
googlenet-v1 |GTX 1080 Ti|5.1.10|11.50|25.37|36.87|
googlenet-v1 |GTX 1080 Ti|None|56.34|85.30|141.64|
vgg16 |GTX 1080 Ti|5.1.10|41.23|86.91|128.14|
vgg16 |CPU: Dual Xeon E5-2630 v3|None|3101.76|5393.72|8495.48|
vgg19 |GTX 1080 Ti|5.1.10|48.15|100.04|148.19|
vgg19 |CPU: Dual Xeon E5-2630 v3|None|3609.78|6239.45|9849.23|
resnet-18 |GTX 1080 Ti|5.1.10|10.45|22.34|32.78|
resnet-18 |GTX 1080 Ti|None|50.04|65.99|116.03|
resnet-18 |CPU: Dual Xeon E5-2630 v3|None|847.46|1348.33|2195.78|
resnet-34 |GTX 1080 Ti|5.1.10|16.71|34.60|51.31|
resnet-34 |GTX 1080 Ti|None|86.30|109.43|195.73|
resnet-34 |CPU: Dual Xeon E5-2630 v3|None|1530.01|2435.20|3965.21|
resnet-50 |GTX 1080 Ti|5.1.10|34.14|67.06|101.21|
resnet-50 |GTX 1080 Ti|None|99.90|177.58|277.47|
resnet-50 |CPU: Dual Xeon E5-2630 v3|None|2477.61|4149.64|6627.25|
resnet-101 |GTX 1080 Ti|5.1.10|52.18|102.08|154.26|
resnet-101 |GTX 1080 Ti|None|162.03|266.77|428.81|
resnet-101 |CPU: Dual Xeon E5-2630 v3|None|4414.91|6891.33|11306.24|
resnet-152 |GTX 1080 Ti|5.1.10|73.52|142.02|215.54|
resnet-152 |GTX 1080 Ti|None|225.36|368.42|593.79|
resnet-152 |CPU: Dual Xeon E5-2630 v3|None|6572.17|10300.61|16872.78|
resnet-200 |CPU: Dual Xeon E5-2630 v3|None|8666.43|13758.73|22425.16|";

/// The README's per-model tables: model label → rows, in README order.
fn readme_tables() -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in README_ROWS.lines() {
        let (model, row) = line.split_once(' ').unwrap();
        out.entry(model.to_string())
            .or_default()
            .push(row.to_string());
    }
    out
}

/// Our markdown's tables: heading → (subtitle, rows).
fn our_tables(md: &str) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out = BTreeMap::new();
    for section in md.split("## ").skip(1) {
        let mut lines = section.lines();
        let title = lines.next().unwrap().trim().to_string();
        let sub = lines.next().unwrap_or("").to_string();
        let rows: Vec<String> = section
            .lines()
            .filter(|l| {
                l.starts_with('|')
                    && !l.starts_with("|GPU|")
                    && !l.starts_with("|---")
                    && !l.starts_with("|Network|")
            })
            .map(str::to_string)
            .collect();
        out.insert(title, (sub, rows));
    }
    out
}

#[test]
fn gtx_1080_ti_tables_match_the_readme_exactly() {
    let r = legacy_report(
        &[
            legacy_outputs().join("1080Ti"),
            legacy_outputs().join("1080Ti_cudnn51"),
        ],
        Duplicates::Pool,
        false,
    );
    let md = markdown(&r);
    // The resnet-50 block, verbatim, as the issue shows it.
    assert!(
        md.contains(
            "## resnet-50\n(input 16 x 3 x 224 x 224)\n\n|GPU|cuDNN|Forward (ms)|Backward (ms)|Total (ms)|\n|---|---|---:|---:|---:|\n|GTX 1080 Ti|5.1.10|34.14|67.06|101.21|\n|GTX 1080 Ti|None|99.90|177.58|277.47|\n"
        ),
        "{md}"
    );
    let ours = our_tables(&md);
    let readme = readme_tables();
    let mut checked = 0;
    for (model, rows) in &readme {
        let expected: Vec<&String> = rows
            .iter()
            .filter(|r| r.starts_with("|GTX 1080 Ti|"))
            .collect();
        if expected.is_empty() {
            continue;
        }
        let (sub, got) = ours
            .get(model)
            .unwrap_or_else(|| panic!("no table for {model} in\n{md}"));
        assert_eq!(sub, "(input 16 x 3 x 224 x 224)");
        let got: Vec<&String> = got.iter().collect();
        assert_eq!(got, expected, "table {model}");
        checked += expected.len();
    }
    assert_eq!(checked, 15, "every GTX 1080 Ti row of the README");
    assert!(
        r.notes.is_empty(),
        "no duplicates among these files: {:?}",
        r.notes
    );
}

#[test]
fn every_readme_row_comes_out_of_the_files() {
    // The README shows one run where the suite has two; separate rows show both.
    let r = legacy_report(&[legacy_outputs()], Duplicates::Separate, false);
    let ours = our_tables(&markdown(&r));
    let mut n = 0;
    for (model, rows) in readme_tables() {
        let (_, got) = &ours[&model];
        for row in rows {
            assert!(
                got.contains(&row),
                "{model}: README row {row} not in {got:#?}"
            );
            n += 1;
        }
    }
    assert_eq!(n, 23);
}

#[test]
fn resnet_152_table_is_identical_including_order() {
    let r = legacy_report(&[legacy_outputs()], Duplicates::Pool, false);
    let ours = our_tables(&markdown(&r));
    assert_eq!(ours["resnet-152"].1, readme_tables()["resnet-152"]);
}

#[test]
fn duplicate_runs_are_pooled_by_default_and_said_so() {
    let cpu = legacy_outputs().join("cpu");
    let r = legacy_report(std::slice::from_ref(&cpu), Duplicates::Pool, false);
    let md = markdown(&r);
    let ours = our_tables(&md);
    // 378556.json and 629699.json both hold resnet-18 on the CPU: 20 samples pooled.
    assert_eq!(
        ours["resnet-18"].1,
        vec!["|CPU: Dual Xeon E5-2630 v3|None|853.58|1354.31|2207.90|"]
    );
    assert!(md.contains("2 runs pooled (20 samples)"), "{md}");
    assert_eq!(r.notes.len(), 1);

    let sep = legacy_report(std::slice::from_ref(&cpu), Duplicates::Separate, false);
    let rows = &our_tables(&markdown(&sep))["resnet-18"].1;
    assert_eq!(
        rows,
        &vec![
            "|CPU: Dual Xeon E5-2630 v3|None|847.46|1348.33|2195.78|".to_string(),
            "|CPU: Dual Xeon E5-2630 v3|None|859.70|1360.30|2220.01|".to_string(),
        ]
    );
    let fastest = legacy_report(std::slice::from_ref(&cpu), Duplicates::Fastest, false);
    assert_eq!(
        our_tables(&markdown(&fastest))["resnet-18"].1,
        vec!["|CPU: Dual Xeon E5-2630 v3|None|847.46|1348.33|2195.78|"]
    );
}

#[test]
fn with_std_uses_the_totals_own_spread() {
    let file = legacy_outputs().join("1080Ti_cudnn51/311738.json");
    let r = legacy_report(std::slice::from_ref(&file), Duplicates::Pool, true);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let std_of = |key: &str| {
        let xs: Vec<f64> = v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - 1) as f64).sqrt() * 1000.0
    };
    let row = &our_tables(&markdown(&r))["resnet-50"].1[0];
    let expected = format!(
        "|GTX 1080 Ti|5.1.10|34.14 ± {:.2}|67.06 ± {:.2}|101.21 ± {:.2}|",
        std_of("forward_times"),
        std_of("backward_times"),
        std_of("total_times")
    );
    assert_eq!(row, &expected);
    // The total's spread is not the backward's (the original script's slip).
    assert_ne!(
        format!("{:.2}", std_of("total_times")),
        format!("{:.2}", std_of("backward_times"))
    );
}

#[test]
fn speedup_range_and_geometric_mean_match_a_hand_computation() {
    let dirs = [
        legacy_outputs().join("1080Ti"),
        legacy_outputs().join("1080Ti_cudnn51"),
    ];
    let records = cnnbench_report::load_paths(&dirs, true).unwrap().records;
    let opts = ReportOptions {
        layout: Layout::Legacy,
        speedups: SpeedupRequest::Pairs(vec![("cuDNN 5.1.10".into(), "nn".into())]),
        ..ReportOptions::default()
    };
    let r = Report::build(records, &legacy_aliases(), &NoCatalog, &opts).unwrap();
    let lines: Vec<String> = r.speedups.iter().map(|s| s.sentence()).collect();
    // By hand from the files: mean total per model, nn / cuDNN, over the common models.
    let mean_total = |path: &std::path::Path| -> (String, f64) {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let t: Vec<f64> = v["total_times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let model = v["opt"]["model_t7"]
            .as_str()
            .unwrap()
            .rsplit('/')
            .next()
            .unwrap()
            .to_string();
        (model, t.iter().sum::<f64>() / t.len() as f64)
    };
    let per_dir = |dir: &std::path::Path| -> BTreeMap<String, f64> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| mean_total(&e.unwrap().path()))
            .collect()
    };
    let (nn, cudnn) = (per_dir(&dirs[0]), per_dir(&dirs[1]));
    let ratios: Vec<f64> = nn
        .iter()
        .filter_map(|(m, t)| cudnn.get(m).map(|c| t / c))
        .collect();
    let lo = ratios.iter().cloned().fold(f64::MAX, f64::min);
    let hi = ratios.iter().cloned().fold(0.0, f64::max);
    let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
    let expected = format!(
        "GTX 1080 Ti · torch7 cuDNN 5.1.10 is {lo:.2}x to {hi:.2}x faster than GTX 1080 Ti · torch7 nn across {} models (geometric mean {geo:.2}x)",
        ratios.len()
    );
    assert_eq!(ratios.len(), 6);
    assert!(
        lines.contains(&expected),
        "expected {expected} in {lines:#?}"
    );
}

#[test]
fn legacy_names_are_kept_for_display_and_mapped_for_grouping() {
    let r = legacy_report(
        &[legacy_outputs().join("1080Ti_cudnn51")],
        Duplicates::Pool,
        false,
    );
    let titles: Vec<&str> = r.tables.iter().map(|t| t.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "alexnet",
            "googlenet-v1",
            "resnet-18",
            "resnet-34",
            "resnet-50",
            "resnet-101",
            "resnet-152",
            "vgg16",
            "vgg19"
        ]
    );
    let ids: Vec<&str> = r.tables.iter().map(|t| t.key.model_id.as_str()).collect();
    assert!(
        ids.contains(&"alexnet-bvlc") && ids.contains(&"inception-v1") && ids.contains(&"resnet50"),
        "{ids:?}"
    );
}

#[test]
fn engine_words_pair_like_devices() {
    // `nn` must not match inside `cuDNN`; both sides name engines, so only the GTX
    // 1080 Ti's own nn run is compared with its cuDNN run.
    let records = gtx_1080ti_records();
    let opts = ReportOptions {
        layout: Layout::Legacy,
        speedups: SpeedupRequest::Pairs(vec![("cuDNN 5.1.10".into(), "nn".into())]),
        ..ReportOptions::default()
    };
    let r = Report::build(records, &legacy_aliases(), &NoCatalog, &opts).unwrap();
    let lines: Vec<String> = r.speedups.iter().map(|s| s.sentence()).collect();
    assert_eq!(
        lines,
        ["GTX 1080 Ti · torch7 cuDNN 5.1.10 is 2.74x to 3.84x faster than GTX 1080 Ti · torch7 nn across 6 models (geometric mean 3.21x)"]
    );
}
