//! End-to-end tests of `cnnbench profile` and `cnnbench peak` on tiny inputs.

use crate::common::*;
use predicates::prelude::*;
use serde_json::Value;

#[test]
fn profile_lists_every_node_once_and_writes_json() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r18.profile.json");
    let v: Value = json_stdout(
        one_pass("profile", "resnet18", "32")
            .env("XDG_CACHE_HOME", dir.path())
            .args(["-q", "--json", "-o"])
            .arg(&file),
    );
    assert_eq!(v["format"], "cnnbench-profile");
    assert_eq!(v["version"], 1);
    let graph = cnnbench_zoo::find("resnet18").unwrap();
    let graph = (graph.build)([3, 32, 32]).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), graph.nodes().len());
    for (node, want) in nodes.iter().zip(graph.nodes()) {
        assert_eq!(node["name"], want.name.as_str());
        assert!(node["forward"]["median"].as_f64().unwrap() >= 0.0);
        assert!(node["backward"]["median"].as_f64().unwrap() >= 0.0);
    }
    // No peak measured in this cache: none claimed.
    assert!(v.get("peak_gflops_per_s").is_none());
    let written: Value = read_json(&file);
    assert_eq!(written, v);
}

#[test]
fn profile_tables_say_how_they_were_measured() {
    let cache = tempfile::tempdir().unwrap();
    one_pass("profile", "alexnet", "64")
        .env("XDG_CACHE_HOME", cache.path())
        .args(["-q", "--mode", "infer", "--top", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Slowest 3 of"))
        .stdout(predicate::str::contains("By op type"))
        .stdout(predicate::str::contains("sum of nodes: forward"))
        .stdout(predicate::str::contains("end to end (same run)"))
        .stdout(predicate::str::contains("each node benchmarked alone"))
        .stdout(predicate::str::contains("Backward ms").not())
        .stdout(predicate::str::contains(
            "roofline: unknown until `cnnbench peak --engine burn-flex --precision f32`",
        ));
}

#[test]
fn profile_refuses_step_mode() {
    // The profile's own refusal, not clap's list of possible values (which names
    // "train" too).
    fails_saying(
        cnnbench().args(["profile", "resnet18", "--mode", "step"]),
        "a step's optimizer update is not per node",
    );
}

#[test]
fn peak_is_cached_and_profile_then_shows_percent_of_peak() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_ok(tiny_peak(dir.path()).args(["-n", "2", "--json"]));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["format"], "cnnbench-peak");
    assert_eq!(v["matmul"]["flops"].as_f64().unwrap(), 2.0 * 64f64.powi(3));
    // "% of peak" is against the faster of the matrix product and the convolution.
    let peak = v["matmul"]["gflops_per_s"]
        .as_f64()
        .unwrap()
        .max(v["conv"]["gflops_per_s"].as_f64().unwrap());
    assert!(peak > 0.0);
    assert!(v["bandwidth"]["gb_per_s"].as_f64().unwrap() > 0.0);
    let cached = std::fs::read_dir(dir.path().join("cnnbench").join("peak"))
        .unwrap()
        .count();
    assert_eq!(cached, 1);
    let p: Value = json_stdout(
        one_pass("profile", "resnet18", "32")
            .env("XDG_CACHE_HOME", dir.path())
            .args(["-q", "--json"]),
    );
    assert_eq!(p["peak_gflops_per_s"].as_f64().unwrap(), peak);
}

/// With the ceilings measured, a profile judges every computing node's forward pass
/// against the roof of the memory level its bytes stream from, and the network against
/// the least time the roofs allow; the report draws the roofline beside the bars.
#[test]
fn a_measured_peak_gives_the_profile_its_roofline_and_the_report_its_chart() {
    let dir = tempfile::tempdir().unwrap();
    let v: Value = json_stdout(tiny_peak(dir.path()).args(["-n", "2", "--json"]));
    let levels = v["memory_levels"].as_array().unwrap();
    assert_eq!(levels.last().unwrap()["level"], "DRAM", "{levels:?}");
    for level in levels {
        assert!(level["gb_per_s"].as_f64().unwrap() > 0.0, "{level}");
    }
    let file = dir.path().join("results").join("alexnet.profile.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let p: Value = json_stdout(
        one_pass("profile", "alexnet", "64")
            .env("XDG_CACHE_HOME", dir.path())
            .args(["-q", "--mode", "infer", "--json", "-o"])
            .arg(&file),
    );
    assert_eq!(
        p["ceilings"]["memory"].as_array().unwrap().len(),
        levels.len()
    );
    let network = &p["roofline"];
    let of_roof = network["of_roof"].as_f64().unwrap();
    assert!(of_roof > 0.0 && of_roof.is_finite(), "{network}");
    let nodes = p["nodes"].as_array().unwrap();
    for node in nodes {
        let bytes = node["forward_bytes"].as_f64().unwrap();
        assert!(bytes > 0.0, "{node}");
        // Every node that computes is judged; a ReLU or a pool only in the sum.
        let computes = node["forward_flops"].as_f64().unwrap() > 0.0;
        assert_eq!(node.get("roofline").is_some(), computes, "{node}");
        if let Some(roof) = node.get("roofline") {
            let bound = roof["bound"].as_str().unwrap();
            assert!(["compute", "memory", "overhead"].contains(&bound), "{roof}");
            let intensity = roof["intensity"].as_f64().unwrap();
            let flops = node["forward_flops"].as_f64().unwrap();
            assert!(
                (intensity - flops / bytes).abs() <= 1e-9 * intensity,
                "{roof}"
            );
        }
    }
    one_pass("profile", "alexnet", "64")
        .env("XDG_CACHE_HOME", dir.path())
        .args(["-q", "--mode", "infer", "--top", "3"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "Roofline of the forward pass, slowest 3 of",
        ))
        .stdout(predicate::str::contains("the network: "))
        .stdout(predicate::str::contains("of the measured roof"));
    let charts = dir.path().join("charts");
    cnnbench()
        .args(["report"])
        .arg(file.parent().unwrap())
        .arg("--charts")
        .arg(&charts)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote 6 profile charts"));
    for ext in ["svg", "png"] {
        let f = charts.join(format!(
            "profile-alexnet-burn-flex-b1-64x64-infer-roofline.{ext}"
        ));
        assert!(f.is_file(), "{}", f.display());
    }
    let svg = std::fs::read_to_string(
        charts.join("profile-alexnet-burn-flex-b1-64x64-infer-roofline.svg"),
    )
    .unwrap();
    assert!(svg.contains("DRAM") && svg.contains("-bound"), "{svg}");
}

#[test]
fn peak_table_states_the_fma_assumption() {
    let dir = tempfile::tempdir().unwrap();
    let assert = tiny_peak(dir.path())
        .args(["-n", "1", "--no-save"])
        .assert()
        .success()
        .stdout(predicate::str::contains("f32 matrix product (measured)"));
    if std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| t.contains("flags")) {
        assert.stdout(predicate::str::contains(
            "FMA units per core is an assumption",
        ));
    }
    assert!(
        !dir.path().join("cnnbench").exists(),
        "--no-save writes nothing"
    );
}

#[test]
fn run_records_the_cached_peak() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let run = || {
        one_pass("run", "resnet18", "32")
            .env("XDG_CACHE_HOME", dir.path())
            .args(["-q", "-o"])
            .arg(&results)
            .assert()
            .success()
    };
    // Without a cached peak, the result has none.
    run().stdout(predicate::str::contains("% of peak").not());
    let first = result_files(&results);
    let v: Value = read_json(&first[0]);
    assert!(v.get("peak_gflops_per_s").is_none());
    assert!(v.get("roofline").is_none());
    tiny_peak(dir.path()).args(["-n", "1"]).assert().success();
    run()
        .stdout(predicate::str::contains("% of peak ("))
        .stdout(predicate::str::contains("% of roof (the least time"));
    let files = result_files(&results);
    let newest = files.iter().find(|f| !first.contains(f)).unwrap();
    let r: cnnbench_bench::BenchResult = read_json(newest);
    assert!(r.peak.gflops_per_s.unwrap() > 0.0);
    // The forward pass against the cached ceilings: its least time over its median.
    let roof = r.roofline.expect("a roofline with the ceilings cached");
    let forward = r.summary[&cnnbench_bench::Quantity::Forward].median;
    assert!(roof.forward_roof_s > 0.0, "{roof:?}");
    assert!((roof.forward_of_roof - roof.forward_roof_s / forward).abs() < 1e-12);
}

#[test]
fn report_draws_profiles_beside_results() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    std::fs::create_dir_all(&results).unwrap();
    // No peak in this cache: the profile has no ceilings, and no roofline to draw.
    one_pass("profile", "alexnet", "64")
        .env("XDG_CACHE_HOME", dir.path())
        .args(["-q", "-o"])
        .arg(results.join("alexnet.profile.json"))
        .assert()
        .success();
    // A profile alone: charts and an HTML page, no complaint that it is not a result.
    let charts = dir.path().join("charts");
    let html = dir.path().join("report.html");
    cnnbench()
        .args(["report"])
        .arg(&results)
        .arg("--charts")
        .arg(&charts)
        .arg("-o")
        .arg(&html)
        .assert()
        .success()
        .stderr(predicate::str::contains("wrote 4 profile charts"))
        .stderr(predicate::str::contains("skipping").not());
    for suffix in ["op-types", "nodes"] {
        for ext in ["svg", "png"] {
            let f = charts.join(format!(
                "profile-alexnet-burn-flex-b1-64x64-train-{suffix}.{ext}"
            ));
            assert!(f.is_file(), "{}", f.display());
        }
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("Profile: alexnet"));
    assert_eq!(page.matches("<svg").count(), 2);
    // Beside a result, the result's report and the profile's section share the page.
    one_pass("run", "alexnet", "64")
        .args(["-q", "-o"])
        .arg(&results)
        .assert()
        .success();
    cnnbench()
        .args(["report"])
        .arg(&results)
        .args(["--format", "html"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Profile: alexnet"))
        .stdout(predicate::str::contains("</body>"));
    cnnbench()
        .args(["report"])
        .arg(&results)
        .args(["--format", "markdown"])
        .assert()
        .success()
        .stdout(predicate::str::contains("By op type"));
}

#[test]
fn a_run_faster_than_its_peak_says_so_and_names_the_primitive() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    tiny_peak(dir.path())
        .args(["-n", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains("f32 3×3 convolution (measured)"));
    // A peak far below anything the network reaches, as a stale or busy measurement
    // would leave: every share is over 100%.
    let cache = dir.path().join("cnnbench/peak");
    let file = std::fs::read_dir(&cache)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut doc: Value = read_json(&file);
    doc["matmul"]["gflops_per_s"] = 1e-6.into();
    doc["conv"]["gflops_per_s"] = 2e-6.into();
    std::fs::write(&file, doc.to_string()).unwrap();
    one_pass("run", "resnet18", "32")
        .env("XDG_CACHE_HOME", dir.path())
        .args(["-q", "-o"])
        .arg(&results)
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "'s 3×3 convolution in f32 by `cnnbench peak`",
        ))
        .stderr(predicate::str::contains(
            "warning: % of peak above 100% (resnet18",
        ))
        .stderr(predicate::str::contains(
            "cnnbench peak --engine burn-flex --precision f32",
        ));
    let r: cnnbench_bench::BenchResult = only_result(&results);
    assert_eq!(r.peak.gflops_per_s, Some(2e-6));
    assert_eq!(r.peak.primitive(), "3×3 convolution");
    // A profile against the same peak names the nodes over it.
    one_pass("profile", "resnet18", "32")
        .env("XDG_CACHE_HOME", dir.path())
        .assert()
        .success()
        .stdout(predicate::str::contains("node(s) above 100% of peak"));
}

#[test]
fn peak_and_profile_refuse_a_precision_the_engine_lacks() {
    let dir = tempfile::tempdir().unwrap();
    tiny_peak(dir.path())
        .args(["--precision", "bf16", "-n", "1", "--no-save"])
        .assert()
        .failure()
        .stderr(predicate::str::contains(
            "burn-flex does not compute in bf16",
        ));
    one_pass("profile", "resnet18", "32")
        .args(["--precision", "tf32"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("GPU tensor cores"));
}
