//! Data-parallel training across processes (`run --nproc`, `run --distributed` under a
//! launcher's variables, and under torchrun): what a job writes, how it ends when a rank
//! dies, and what it refuses. The runs need `--features torch` (torch-cpu on Gloo); the
//! refusals run in every build.
#![allow(
    clippy::disallowed_macros,
    reason = "a test's diagnostics for whoever reads the test log"
)]

use crate::common::{cnnbench, fails_saying};
use predicates::prelude::*;

#[test]
fn engines_that_cannot_train_across_processes_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    cnnbench()
        .args(["run", "resnet18", "-e", "burn-flex", "--nproc", "2", "-o"])
        .arg(dir.path())
        .assert()
        .failure()
        .stderr(
            predicate::str::contains("burn-flex cannot train across processes")
                .and(predicate::str::contains("torch-cpu")),
        );
}

#[test]
fn distributed_without_a_launcher_says_how_to_start_one() {
    cnnbench()
        .args(["run", "resnet18", "-e", "torch-cpu", "--distributed"])
        .env_remove("RANK")
        .env_remove("WORLD_SIZE")
        .env_remove("SLURM_PROCID")
        .env_remove("SLURM_NTASKS")
        .assert()
        .failure()
        .stderr(predicate::str::contains("torchrun").and(predicate::str::contains("--nproc")));
}

#[test]
fn settings_that_differ_per_rank_are_refused() {
    for extra in [
        &["--target-ci", "2"][..],
        &["-b", "max"],
        &["--mode", "infer"],
    ] {
        fails_saying(
            cnnbench()
                .args(["run", "resnet18", "-e", "torch-cpu", "--nproc", "2"])
                .args(extra),
            "data-parallel",
        );
    }
}

#[cfg(feature = "torch")]
mod torch {
    use super::*;
    use crate::common::result_files;
    use std::path::Path;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// resnet18 at 32×32, two images per rank, on torch-cpu.
    const TINY: [&str; 10] = [
        "run",
        "resnet18",
        "-e",
        "torch-cpu",
        "--image-size",
        "32",
        "-b",
        "2",
        "-q",
        "--threads",
    ];

    fn only_result(dir: &Path) -> serde_json::Value {
        let files = result_files(dir);
        assert_eq!(files.len(), 1, "one result for the whole job: {files:?}");
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap()
    }

    /// Rank 0's result holds both ranks' samples, with the all-reduce timed apart.
    fn check_two_rank_result(r: &serde_json::Value, passes: usize) {
        assert_eq!(r["config"]["world_size"], 2);
        let d = &r["distributed"];
        assert_eq!(d["backend"], "gloo");
        assert_eq!(d["transport"], "tcp");
        assert_eq!(d["bucket_bytes"], 25 * 1024 * 1024);
        let ranks = d["ranks"].as_array().unwrap();
        assert_eq!(ranks.len(), 2);
        for (i, rank) in ranks.iter().enumerate() {
            assert_eq!(rank["rank"], i);
            for q in ["forward", "backward", "allreduce", "update", "total"] {
                let v = rank["samples"][q]
                    .as_array()
                    .unwrap_or_else(|| panic!("rank {i} has no {q}"));
                assert_eq!(v.len(), passes, "rank {i} {q}");
                assert!(v.iter().all(|x| x.as_f64().unwrap() > 0.0));
            }
        }
        assert_eq!(r["samples"], ranks[0]["samples"]);
        // Images of both ranks over rank 0's median total.
        let median = r["summary"]["total"]["median"].as_f64().unwrap();
        let ips = r["throughput"]["images_per_s"].as_f64().unwrap();
        assert!(
            (ips - 4.0 / median).abs() < 1e-6 * ips,
            "{ips} vs {}",
            4.0 / median
        );
    }

    #[test]
    fn nproc_two_ranks_train_and_rank_zero_writes_both_ranks_samples() {
        let dir = tempfile::tempdir().unwrap();
        let out = cnnbench()
            .args(TINY)
            .args(["1", "--mode", "step", "--passes", "2", "--nproc", "2", "-o"])
            .arg(dir.path())
            .timeout(Duration::from_secs(240))
            .assert()
            .success();
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(!stderr.contains("terminate called"), "{stderr}");
        check_two_rank_result(&only_result(dir.path()), 2);
    }

    #[test]
    fn torchrun_starts_the_ranks() {
        let torchrun = std::env::var_os("PATH")
            .and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|p| p.join("torchrun"))
                    .find(|p| p.is_file())
            })
            .expect("torchrun is not on PATH: put PyTorch's venv (.venv-torch/bin) on PATH, as .ci/run does");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new(torchrun)
            .args(["--no-python", "--nproc-per-node", "2", "--master-port"])
            .arg(port.to_string())
            .arg(assert_cmd::cargo::cargo_bin("cnnbench"))
            .args(TINY)
            .args([
                "1",
                "--mode",
                "step",
                "--passes",
                "2",
                "--distributed",
                "-o",
            ])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(status.success(), "{status}");
        check_two_rank_result(&only_result(dir.path()), 2);
    }

    #[test]
    fn a_rank_that_dies_ends_the_others_in_seconds() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let start = |rank: usize| {
            Command::new(assert_cmd::cargo::cargo_bin("cnnbench"))
                .args(TINY)
                .args([
                    "1",
                    "--passes",
                    "100000",
                    "--distributed",
                    "--dist-timeout",
                    "15",
                    "-o",
                ])
                .arg(dir.path())
                .env("RANK", rank.to_string())
                .env("WORLD_SIZE", "2")
                .env("LOCAL_RANK", rank.to_string())
                .env("MASTER_ADDR", "127.0.0.1")
                .env("MASTER_PORT", port.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let mut rank0 = start(0);
        let mut rank1 = start(1);
        // Let them join and train a few passes, then kill rank 1 as a crash would.
        std::thread::sleep(Duration::from_secs(8));
        assert!(
            rank0.try_wait().unwrap().is_none(),
            "rank 0 ended before rank 1 died"
        );
        rank1.kill().unwrap();
        rank1.wait().unwrap();
        let killed = Instant::now();
        let status = loop {
            if let Some(status) = rank0.try_wait().unwrap() {
                break status;
            }
            if killed.elapsed() > Duration::from_secs(30) {
                rank0.kill().unwrap();
                panic!("rank 0 still runs 30 s after rank 1 died");
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(rank0.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        assert!(
            !status.success(),
            "rank 0 succeeded without rank 1: {stderr}"
        );
        assert!(stderr.contains("rank 0"), "{stderr}");
        eprintln!(
            "rank 0 ended {:?} after rank 1 died: {stderr}",
            killed.elapsed()
        );
        assert!(
            result_files(dir.path()).is_empty(),
            "a failed job wrote a result"
        );
    }

    /// `cnnbench engines` says which engines train across processes in this build: Gloo
    /// for torch-cpu always, NCCL for torch-cuda or why not.
    #[test]
    fn engines_say_which_c10d_backends_this_build_has() {
        let out = cnnbench().arg("engines").assert().success();
        let stdout = String::from_utf8_lossy(&out.get_output().stdout).to_string();
        // The paragraph, wrapped to the listing's width, read as one line.
        let line = stdout
            .lines()
            .skip_while(|l| !l.starts_with("Data-parallel training"))
            .take_while(|l| !l.trim().is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(!line.is_empty(), "no data-parallel line: {stdout}");
        assert!(line.contains("torch-cpu (c10d's Gloo backend)"), "{line}");
        assert!(
            line.contains("torch-cuda and torch-cuda-nocudnn (c10d's NCCL backend)")
                != line.contains("NCCL backend is not compiled in"),
            "{line}"
        );
    }

    /// What a torch-cuda run says on a machine without a GPU (or a build without NCCL):
    /// why, and no panic.
    fn refused_without_a_gpu() -> impl predicates::Predicate<str> {
        predicate::str::contains("torch-cuda")
            .and(predicate::str::contains("panicked").not())
            .and(
                predicate::str::contains("no CUDA GPU").or(predicate::str::contains(
                    "NCCL backend, which was not compiled in",
                )),
            )
    }

    /// Whether torch-cuda can run here, from `cnnbench engines`.
    fn torch_cuda_runs_here() -> bool {
        let out = cnnbench().arg("engines").output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with("| torch-cuda ") && l.contains("| yes"))
    }

    /// torch-cuda ranks on a machine without a GPU stop at once with the reason, whether
    /// cnnbench starts them or a launcher does (no panic, no wait for the others).
    #[test]
    fn torch_cuda_ranks_without_a_gpu_say_why() {
        if torch_cuda_runs_here() {
            cnnbench_engine::test_prerequisite::skip_not_applicable(
                "torch_cuda_ranks_without_a_gpu_say_why",
                "this machine has a GPU (scripts/gpu-check-nccl.sh runs NCCL there)",
            );
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let tiny_cuda = [
            "run",
            "resnet18",
            "-e",
            "torch-cuda",
            "--image-size",
            "32",
            "-b",
            "1",
            "--passes",
            "1",
            "-q",
        ];
        let started = Instant::now();
        cnnbench()
            .args(tiny_cuda)
            .args(["--nproc", "2", "-o"])
            .arg(dir.path())
            .timeout(Duration::from_secs(60))
            .assert()
            .failure()
            .stderr(refused_without_a_gpu());
        // One rank under a launcher's variables, its peer never started.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        cnnbench()
            .args(tiny_cuda)
            .args(["--distributed", "--dist-timeout", "30", "-o"])
            .arg(dir.path())
            .env("RANK", "0")
            .env("WORLD_SIZE", "2")
            .env("LOCAL_RANK", "0")
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .timeout(Duration::from_secs(60))
            .assert()
            .failure()
            .stderr(refused_without_a_gpu());
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the refusals took {:?}",
            started.elapsed()
        );
        assert!(result_files(dir.path()).is_empty());
    }
}
