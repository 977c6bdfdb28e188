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
    let loaded = cnnbench_report::load_paths(paths, true).unwrap();
    let opts = ReportOptions {
        layout: Layout::Legacy,
        duplicates,
        with_std,
        ..ReportOptions::default()
    };
    Report::build(loaded.records, &legacy_aliases(), &NoCatalog, &opts).unwrap()
}

fn markdown(r: &Report) -> String {
    Format::Markdown.exporter().render(r).unwrap()
}

/// The README's per-model tables: model label → rows, in README order.
fn readme_tables() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(fixtures().join("legacy/README.md")).unwrap();
    let mut out = BTreeMap::new();
    for section in text.split("\n## ").skip(1) {
        let title = section.lines().next().unwrap().trim();
        let label = match title {
            "AlexNet" => "alexnet".to_string(),
            "Inception-V1" => "googlenet-v1".to_string(),
            "VGG-16" => "vgg16".to_string(),
            "VGG-19" => "vgg19".to_string(),
            t if t.starts_with("ResNet-") => t.to_lowercase(),
            _ => continue,
        };
        let rows: Vec<String> = section
            .lines()
            .filter(|l| l.starts_with('|') && !l.starts_with("|GPU|") && !l.starts_with("|---"))
            .map(str::to_string)
            .collect();
        out.insert(label, rows);
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
    assert_eq!(n, 116);
}

#[test]
fn resnet_200_table_is_identical_including_order() {
    let r = legacy_report(&[legacy_outputs()], Duplicates::Pool, false);
    let ours = our_tables(&markdown(&r));
    assert_eq!(ours["resnet-200"].1, readme_tables()["resnet-200"]);
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
fn the_readme_speedup_claim_is_computed() {
    let loaded = cnnbench_report::load_paths(&[legacy_outputs()], true).unwrap();
    let opts = ReportOptions {
        layout: Layout::Legacy,
        speedups: SpeedupRequest::Pairs(vec![("Pascal Titan X".into(), "GTX 1080".into())]),
        ..ReportOptions::default()
    };
    let r = Report::build(loaded.records, &legacy_aliases(), &NoCatalog, &opts).unwrap();
    let lines: Vec<String> = r.speedups.iter().map(|s| s.sentence()).collect();
    // Devices named on both sides: like engines are paired.
    assert!(
        lines.contains(
            &"Pascal Titan X · torch7 cuDNN 5.1.05 is 1.39x to 1.45x faster than GTX 1080 · torch7 cuDNN 5.1.05 across 8 models (geometric mean 1.42x)"
                .to_string()
        ),
        "{lines:#?}"
    );
    assert!(lines
        .iter()
        .all(|l| !l.contains("cuDNN 5.1.05 is") || !l.contains("than GTX 1080 · torch7 nn")));
    assert_eq!(lines.len(), 3, "cuDNN 5.0.05, 5.1.05 and nn: {lines:#?}");
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
