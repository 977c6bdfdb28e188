//! Data-parallel training across two machines, made of two network namespaces joined by a
//! veth pair (rank 0 in the first, rank 1 in the second, as two hosts whose host names
//! resolve to 127.0.0.1: Debian's default, and this project's machines). Each test makes
//! its own pair on its own /24 of 10.231.0.0/16, uses no other address, and removes the
//! namespaces (and with them the veth pair) whatever happens. Needs root and iproute2's
//! `ip`; without root it says so and passes (CI runs as root).
#![allow(
    clippy::disallowed_macros,
    reason = "a test's note for whoever reads the test log"
)]
#![cfg(feature = "torch")]

use crate::common::result_files;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Two namespaces, `a` (10.231.N.1 on `cnbN-a`) and `b` (10.231.N.2 on `cnbN-b`).
struct TwoHosts {
    names: [String; 2],
    interfaces: [String; 2],
    addresses: [String; 2],
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run iproute2's `ip` ({e}): install iproute2"));
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl TwoHosts {
    /// The pair for test number `n` (1–254), or `None` (said on stderr) without root.
    fn make(n: u8) -> Option<Self> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            cnnbench_engine::test_prerequisite::skip_missing(
                &format!("cli_multi_host (pair {n})"),
                "making network namespaces needs root (CI runs this as root)",
            );
            return None;
        }
        let tag = format!("{}-{n}", std::process::id());
        let hosts = TwoHosts {
            names: [format!("cnb-{tag}-a"), format!("cnb-{tag}-b")],
            // Interface names are at most 15 bytes.
            interfaces: [format!("cnb{n}-a"), format!("cnb{n}-b")],
            addresses: [format!("10.231.{n}.1"), format!("10.231.{n}.2")],
        };
        // From here on, Drop removes whatever was made.
        for ns in &hosts.names {
            ip(&["netns", "add", ns]);
        }
        let [ia, ib] = &hosts.interfaces;
        ip(&["link", "add", ia, "type", "veth", "peer", "name", ib]);
        for i in 0..2 {
            let (ns, iface) = (&hosts.names[i], &hosts.interfaces[i]);
            ip(&["link", "set", iface, "netns", ns]);
            let cidr = format!("{}/24", hosts.addresses[i]);
            ip(&["-n", ns, "addr", "add", &cidr, "dev", iface]);
            ip(&["-n", ns, "link", "set", iface, "up"]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        Some(hosts)
    }

    /// `program` run inside host `i`'s namespace.
    fn command(&self, i: usize, program: &Path) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[i]]).arg(program);
        c
    }
}

impl Drop for TwoHosts {
    fn drop(&mut self) {
        for ns in &self.names {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// resnet18 at 32×32, one image per rank, one thread, training.
const TINY: [&str; 11] = [
    "run",
    "resnet18",
    "-e",
    "torch-cpu",
    "--image-size",
    "32",
    "-b",
    "1",
    "-q",
    "--threads",
    "1",
];

fn cnnbench_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("cnnbench")
}

/// Rank `rank` of 2 inside host `rank`, under launcher variables, rendezvous at host a.
fn start_rank(
    hosts: &TwoHosts,
    rank: usize,
    port: u16,
    out: &Path,
    extra_env: &[(&str, String)],
    passes: &str,
) -> Child {
    let mut c = hosts.command(rank, &cnnbench_bin());
    c.args(TINY)
        .args([
            "--passes",
            passes,
            "--distributed",
            "--dist-timeout",
            "120",
            "-o",
        ])
        .arg(out)
        .env("RANK", rank.to_string())
        .env("WORLD_SIZE", "2")
        .env("LOCAL_RANK", "0")
        .env("MASTER_ADDR", &hosts.addresses[0])
        .env("MASTER_PORT", port.to_string())
        .env("CNNBENCH_HOST", format!("host-{rank}"))
        .env_remove("GLOO_SOCKET_IFNAME")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in extra_env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

fn finish(child: Child, limit: Duration) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = child;
    loop {
        if child.try_wait().unwrap().is_some() {
            return (child.wait_with_output().unwrap(), started.elapsed());
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The job's one result: both ranks, each with its host, address and interface.
fn check_result(dir: &Path, hosts: &TwoHosts, chosen_by: [&str; 2]) {
    let files = result_files(dir);
    assert_eq!(files.len(), 1, "one result for the job: {files:?}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(r["config"]["world_size"], 2);
    let ranks = r["distributed"]["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 2);
    for (i, rank) in ranks.iter().enumerate() {
        assert_eq!(rank["rank"], i);
        assert_eq!(rank["host"], format!("host-{i}"), "{rank}");
        assert_eq!(rank["address"], hosts.addresses[i].as_str(), "{rank}");
        assert_eq!(rank["interface"], hosts.interfaces[i].as_str(), "{rank}");
        assert_eq!(rank["address_chosen_by"], chosen_by[i], "{rank}");
        assert_eq!(rank["samples"]["total"].as_array().unwrap().len(), 2);
    }
}

fn free_port() -> u16 {
    // Ports are per namespace; one free here is as good a guess as any in a fresh one.
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Without GLOO_SOCKET_IFNAME each rank advertises the address it routes to rank 0 from
/// (PyTorch's default, the host name's 127.0.0.1, is refused across machines); with it,
/// the named interface's.
#[test]
fn two_hosts_train_on_the_routed_address_and_on_a_named_interface() {
    let Some(hosts) = TwoHosts::make(11) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("routed");
    let port = free_port();
    let ranks: Vec<Child> = (0..2)
        .map(|r| start_rank(&hosts, r, port, &out, &[], "2"))
        .collect();
    for (r, child) in ranks.into_iter().enumerate() {
        let (o, _) = finish(child, Duration::from_secs(120));
        assert!(o.status.success(), "rank {r}: {}", stderr(&o));
    }
    let route = format!("route to {}", hosts.addresses[0]);
    check_result(&out, &hosts, [&route, &route]);

    let out = dir.path().join("named");
    let port = free_port();
    let ranks: Vec<Child> = (0..2)
        .map(|r| {
            let iface = hosts.interfaces[r].clone();
            start_rank(&hosts, r, port, &out, &[("GLOO_SOCKET_IFNAME", iface)], "2")
        })
        .collect();
    for (r, child) in ranks.into_iter().enumerate() {
        let (o, _) = finish(child, Duration::from_secs(120));
        assert!(o.status.success(), "rank {r}: {}", stderr(&o));
    }
    let named = |i: usize| format!("GLOO_SOCKET_IFNAME={}", hosts.interfaces[i]);
    check_result(&out, &hosts, [&named(0), &named(1)]);
}

/// torchrun on each host (`--nnodes 2 --node-rank i`), its agent serving the store.
#[test]
fn torchrun_on_two_hosts() {
    let Some(hosts) = TwoHosts::make(12) else {
        return;
    };
    let torchrun = std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join("torchrun"))
                .find(|p| p.is_file())
        })
        .expect("torchrun is not on PATH: put PyTorch's venv (.venv-torch/bin) on PATH, as .ci/run does");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port().to_string();
    let nodes: Vec<Child> = (0..2)
        .map(|node| {
            hosts
                .command(node, &torchrun)
                .args(["--no-python", "--nnodes", "2", "--node-rank"])
                .arg(node.to_string())
                .args([
                    "--nproc-per-node",
                    "1",
                    "--master-addr",
                    &hosts.addresses[0],
                ])
                .args(["--master-port", &port])
                .arg(cnnbench_bin())
                .args(TINY)
                .args(["--passes", "2", "--distributed", "-o"])
                .arg(dir.path())
                .env("CNNBENCH_HOST", format!("host-{node}"))
                .env_remove("GLOO_SOCKET_IFNAME")
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (node, child) in nodes.into_iter().enumerate() {
        let (o, _) = finish(child, Duration::from_secs(180));
        assert!(o.status.success(), "node {node}: {}", stderr(&o));
    }
    let route = format!("route to {}", hosts.addresses[0]);
    check_result(dir.path(), &hosts, [&route, &route]);
}

/// Rank 1 cannot join (GLOO_SOCKET_IFNAME names an interface its host lacks) and fails;
/// rank 0, inside a join that would wait for the whole --dist-timeout (120 s here), ends
/// within seconds with rank 1's message. Then a rank 1 that is killed mid-run: rank 0
/// fails fast with its own.
#[test]
fn a_remote_rank_that_fails_ends_rank_zero_in_seconds() {
    let Some(hosts) = TwoHosts::make(13) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let rank0 = start_rank(&hosts, 0, port, dir.path(), &[], "2");
    let missing = [("GLOO_SOCKET_IFNAME", "nosuch0".to_string())];
    let rank1 = start_rank(&hosts, 1, port, dir.path(), &missing, "2");
    let (o1, _) = finish(rank1, Duration::from_secs(120));
    let ended_rank1 = Instant::now();
    let (o0, _) = finish(rank0, Duration::from_secs(120));
    let after = ended_rank1.elapsed();
    assert!(!o1.status.success() && !o0.status.success());
    let (e0, e1) = (stderr(&o0), stderr(&o1));
    assert!(
        e1.contains("rank 1 of 2 could not join") && e1.contains("\"nosuch0\""),
        "{e1}"
    );
    assert!(
        e0.contains(
            "rank 0 of 2 could not join the job: rank 1 failed: rank 1 of 2 could not join"
        ) && e0.contains("\"nosuch0\""),
        "{e0}"
    );
    assert!(
        after < Duration::from_secs(15),
        "rank 0 ended {after:?} after rank 1"
    );
    assert!(
        result_files(dir.path()).is_empty(),
        "a failed job wrote a result"
    );

    // Killed mid-run: it can say nothing, and rank 0's next collective fails.
    let port = free_port();
    let rank0 = start_rank(&hosts, 0, port, dir.path(), &[], "100000");
    let mut rank1 = start_rank(&hosts, 1, port, dir.path(), &[], "100000");
    std::thread::sleep(Duration::from_secs(8));
    rank1.kill().unwrap();
    rank1.wait().unwrap();
    let (o0, after) = finish(rank0, Duration::from_secs(60));
    let e0 = stderr(&o0);
    assert!(
        !o0.status.success(),
        "rank 0 succeeded without rank 1: {e0}"
    );
    assert!(e0.contains("rank 0"), "{e0}");
    assert!(
        after < Duration::from_secs(30),
        "rank 0 ended {after:?} after rank 1"
    );
    assert!(
        result_files(dir.path()).is_empty(),
        "a failed job wrote a result"
    );
}
