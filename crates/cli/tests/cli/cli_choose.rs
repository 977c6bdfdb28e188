//! `cnnbench choose` end to end on burn-flex alone (the default build): its runs become a
//! matrix in the output folder, each cell a run of its own, the accuracy costs are
//! measured and kept, the ranking, the chart and the conclusion are written; a second
//! invocation resumes rather than runs again, and `--budget` stops starting runs.
//! (Two engines and two precisions, int8 among them, are in `cli_ort`.)

use crate::common::*;
use predicates::prelude::*;

fn choose(out: &std::path::Path, extra: &[&str]) -> assert_cmd::Command {
    let mut cmd = cnnbench();
    cmd.args([
        "choose",
        "resnet18",
        "--image-size",
        "32",
        "--engines",
        "burn-flex",
        "--passes",
        "2",
        "--warmup",
        "0",
        "-o",
    ])
    .arg(out)
    .args(extra);
    cmd
}

#[test]
fn choose_ranks_what_ran_keeps_its_costs_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    // This machine's ceilings, measured small, in a cache of the test's own: the runs
    // record their forward pass's share of the roof, and the ranking shows it.
    let cache = dir.path().join("cache");
    run_ok(tiny_peak(&cache).args(["-n", "1"]));
    let first = run_ok(choose(&out, &["-b", "1,2"]).env("XDG_CACHE_HOME", &cache));
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(
        text.contains("% of roof b1") && text.contains("% of roof: the least time"),
        "{text}"
    );
    assert!(text.contains("| burn-flex 0.22.1, f32"), "{text}");
    assert!(
        text.contains("Latency b1 (ms)") && text.contains("Images/s b2"),
        "{text}"
    );
    // burn-flex against itself: the accuracy cost is measured, and it passes.
    assert!(text.contains("PASS"), "{text}");
    // One configuration: nothing else in f32 to compare it with.
    assert!(
        text.contains("At batch 1, burn-flex 0.22.1, f32 has the best latency"),
        "{text}"
    );
    assert!(out.join("choose.toml").is_file());
    assert!(out.join("choose-pareto.svg").is_file() && out.join("choose-pareto.png").is_file());
    let costs: serde_json::Value = read_json(&out.join("choose-accuracy.json"));
    assert_eq!(costs[0]["engine"], "burn-flex", "{costs}");
    assert_eq!(costs[0]["precision"], "f32", "{costs}");
    let runs = result_files(&out.join("runs"));
    assert_eq!(runs.len(), 2, "{runs:?}");

    // Again: every cell already has its result, and no run is added.
    let again = run_ok(choose(&out, &["-b", "1,2"]).env("XDG_CACHE_HOME", &cache));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already has a result"), "{stderr}");
    assert_eq!(result_files(&out.join("runs")).len(), 2);
}

/// `--images`: the accuracy costs are measured on the user's images, with the share of
/// them on which each configuration picks f32's class; a resumed choice with another
/// folder measures the costs again rather than keep the first folder's.
#[test]
fn the_users_images_give_each_cost_its_class_agreement() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    let folder = image_folder(dir.path(), 3);
    let mut cmd = choose(&out, &["-b", "1,2", "--images"]);
    let first = run_ok(cmd.arg(&folder));
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.contains("Top-1 / top-5 vs f32"), "{text}");
    assert!(text.contains("100.0% / 100.0%"), "{text}");
    assert!(
        text.contains("top-1 / top-5 vs f32: the share of the images")
            && text.contains("(3 images from"),
        "{text}"
    );
    let costs: serde_json::Value = read_json(&out.join("choose-accuracy.json"));
    assert_eq!(costs[0]["top1_agreement"], 1.0, "{costs}");
    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let moved = image_folder(&other, 2);
    let mut cmd = choose(&out, &["-b", "1,2", "--images"]);
    let again = run_ok(cmd.arg(&moved));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        stderr.contains("choose: accuracy of burn-flex f32"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&again.stdout).contains("(2 images from"));
}

#[test]
fn the_budget_stops_new_runs_and_says_how_to_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    choose(&out, &["-b", "1,2", "--budget", "0.001"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "the budget ran out before 1 run(s): run the same command again to go on",
        ));
    assert_eq!(result_files(&out.join("runs")).len(), 1);
}

#[test]
fn batch_sizes_and_engines_are_checked_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    fails_saying(&mut choose(&out, &["-b", "4,2"]), "the small batch first");
    fails_saying(&mut choose(&out, &["-b", "1,2,4"]), "takes two");
    fails_saying(
        &mut choose(&out, &["--budget=-1"]),
        "--budget must be from 0 to 2592000 seconds",
    );
    // Round four (#63): a budget of 1e300 s panicked (a Duration cannot hold it).
    fails_saying(&mut choose(&out, &["--budget", "1e300"]), "not 1e300");
    // A server bound or time that `run` refuses was written into the matrix, which
    // then had no cell that could run; now nothing is written.
    for (extra, says) in [
        (
            &["--scenario", "server", "--latency-bound", "1e308"][..],
            "--latency-bound must be from 0.001",
        ),
        (
            &[
                "--scenario",
                "server",
                "--latency-bound",
                "100",
                "--scenario-time",
                "NaN",
            ][..],
            "--scenario-time must be from 0 to 86400",
        ),
    ] {
        fails_saying(&mut choose(&out, extra), says);
    }
    // Images that cannot be read are found before the first run, not after the last.
    fails_saying(
        &mut choose(&out, &["--images", "/nonexistent/images"]),
        "/nonexistent/images",
    );
    assert!(!out.join("choose.toml").exists() && !out.join("runs").exists());
    fails_saying(
        &mut choose(&out, &["--precisions", "int8"]),
        "no engine here runs inference in int8",
    );
}

/// Round four (#63): what is planted in choose's folder under the names of its own files
/// is refused before any cell runs, and left as it is: a link at `choose.toml` wrote the
/// matrix into the file it led to, a link at `choose-accuracy.json` to `/dev/zero` read
/// until memory ran out, a FIFO there hung the command.
#[cfg(unix)]
#[test]
fn what_is_planted_under_chooses_own_names_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "keep me\n").unwrap();
    let planted = |case: usize, name: &str, how: &dyn Fn(&std::path::Path)| {
        let out = dir.path().join(format!("choice-{case}"));
        std::fs::create_dir_all(&out).unwrap();
        how(&out.join(name));
        out
    };
    let link_to = |target: std::path::PathBuf| {
        move |at: &std::path::Path| std::os::unix::fs::symlink(&target, at).unwrap()
    };
    let fifo = |at: &std::path::Path| {
        let made = std::process::Command::new("mkfifo")
            .arg(at)
            .status()
            .unwrap();
        assert!(made.success());
    };
    for (case, (name, how, says)) in [
        (
            "choose.toml",
            &link_to(victim.clone()) as &dyn Fn(&std::path::Path),
            "is a symbolic link",
        ),
        ("choose.toml", &fifo, "is a named pipe (FIFO)"),
        (
            "choose-accuracy.json",
            &link_to(victim.clone()),
            "is a symbolic link",
        ),
        (
            "choose-accuracy.json",
            &link_to("/dev/zero".into()),
            "is a symbolic link",
        ),
        ("choose-accuracy.json", &fifo, "is a named pipe (FIFO)"),
    ]
    .into_iter()
    .enumerate()
    {
        let out = planted(case, name, how);
        let mut cmd = choose(&out, &[]);
        cmd.timeout(std::time::Duration::from_secs(120));
        fails_saying(&mut cmd, says);
        assert!(!out.join("runs").exists(), "{name}: a cell ran");
        assert!(
            std::fs::symlink_metadata(out.join(name)).is_ok_and(|m| !m.is_file()),
            "{name}: what was planted was replaced"
        );
    }
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
}

/// `--scenario server --latency-bound MS`: each cell is a `--find-peak` server run of
/// one-image queries, and the ranking is by the highest load held within the bound,
/// the accuracy cost beside it, with its own chart. The bound is ten times what the
/// lightest load needs on a machine shared with two busy loops and another benchmark
/// (p99 107 ms there, 100 broke it): that some load is held must not depend on the host.
#[test]
fn choose_by_the_servers_peak_ranks_by_the_load_held_within_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("choice");
    let mut cmd = cnnbench();
    cmd.args([
        "choose",
        "mobilenet-v2",
        "--image-size",
        "32",
        "--engines",
        "burn-flex",
        "--warmup",
        "0",
        "--scenario",
        "server",
        "--latency-bound",
        "1000",
        "--scenario-time",
        "0",
        "-o",
    ])
    .arg(&out);
    let output = run_ok(&mut cmd);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("by the highest load it serves with p99 ≤ 1000 ms"),
        "{text}"
    );
    assert!(
        text.contains("Peak QPS") && text.contains("| burn-flex 0.22.1, f32"),
        "{text}"
    );
    assert!(
        text.contains("Under p99 ≤ 1000 ms, burn-flex 0.22.1, f32 serves the most"),
        "{text}"
    );
    let matrix = std::fs::read_to_string(out.join("choose.toml")).unwrap();
    let cells = cnnbench_plan::matrix::Matrix::parse(&matrix, &["burn-flex"])
        .unwrap_or_else(|e| panic!("{e}\n{matrix}"));
    let scenario = cells.spec(&cells.cells[0]).scenario;
    let scenario = scenario.unwrap_or_else(|| panic!("no scenario in\n{matrix}"));
    assert_eq!(
        (
            scenario.kind.as_str(),
            scenario.find_peak,
            scenario.latency_bound_ms,
            scenario.min_queries
        ),
        ("server", true, Some(1000.0), 459),
        "{matrix}"
    );
    assert!(!matrix.contains("batch_sizes"), "{matrix}");
    assert!(out.join("choose-server-pareto.png").is_file());
    let runs = result_files(&out.join("runs"));
    assert_eq!(runs.len(), 1, "{runs:?}");
    let r: serde_json::Value = read_json(&runs[0]);
    assert_eq!(r["scenario"]["kind"], "server", "{r}");
    assert!(r["scenario"]["peak_search"]
        .as_array()
        .is_some_and(|p| p.len() >= 2));

    fails_saying(
        cnnbench().args(["choose", "resnet18", "--scenario", "server"]),
        "--latency-bound",
    );
    fails_saying(
        cnnbench().args([
            "choose",
            "resnet18",
            "--scenario",
            "server",
            "--latency-bound",
            "0",
        ]),
        "--latency-bound must be from 0.001 to 3600000 milliseconds (an hour), not 0",
    );
}
