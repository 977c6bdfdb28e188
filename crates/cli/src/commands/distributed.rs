//! `cnnbench run --distributed` and `--nproc N`: data-parallel training across
//! processes. A rank learns where the others are from its launcher's environment
//! (torchrun and Kubeflow's PyTorchJob, Slurm's srun, or `--nproc`, which starts the
//! ranks itself on this machine).

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::distributed::{ProcessGroup, Rendezvous};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// The job this process joined, held until it ends well so that a failure on the way can
/// be told to the other ranks ([`announce_failure`]).
static JOINED: std::sync::Mutex<Option<std::sync::Arc<dyn ProcessGroup>>> =
    std::sync::Mutex::new(None);

/// Keeps `group` for [`announce_failure`] until [`leave`].
pub fn hold_for_failure(group: &std::sync::Arc<dyn ProcessGroup>) {
    if let Ok(mut joined) = JOINED.lock() {
        *joined = Some(group.clone());
    }
}

/// The job ended well: nothing to announce, and the group may be torn down.
pub fn leave() {
    if let Ok(mut joined) = JOINED.lock() {
        joined.take();
    }
}

/// Tells the other ranks of the job this process joined (if any) that it fails with
/// `message`, so that they stop at once with it rather than at their timeout.
pub fn announce_failure(message: &str) {
    let group = JOINED.lock().ok().and_then(|mut j| j.take());
    if let Some(group) = group {
        group.announce_failure(message);
    }
}

/// torchrun's and PyTorch's default rendezvous port.
pub const DEFAULT_MASTER_PORT: u16 = 29500;

/// The rendezvous of this rank, from the launcher's variables in `env`: torchrun's and
/// PyTorchJob's `RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`, else
/// Slurm's `SLURM_PROCID`, `SLURM_NTASKS`, `SLURM_LOCALID` with the first host of
/// `SLURM_JOB_NODELIST` (and `MASTER_PORT` or 29500).
pub fn rendezvous_from_env(
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> Result<Rendezvous> {
    let get = |k: &str| env.get(k).map(String::as_str).filter(|v| !v.is_empty());
    let number = |k: &str| -> Result<Option<usize>> {
        get(k)
            .map(|v| {
                v.trim()
                    .parse::<usize>()
                    .map_err(|_| anyhow!("{k}={v} is not a whole number"))
            })
            .transpose()
    };
    let port = match get("MASTER_PORT") {
        Some(p) => p
            .trim()
            .parse::<u16>()
            .map_err(|_| anyhow!("MASTER_PORT={p} is not a port number"))?,
        None => DEFAULT_MASTER_PORT,
    };
    let (rank, world_size, local_rank, master_addr) = if let (Some(rank), Some(world)) =
        (number("RANK")?, number("WORLD_SIZE")?)
    {
        let addr = get("MASTER_ADDR").ok_or_else(|| {
                anyhow!("RANK and WORLD_SIZE are set but MASTER_ADDR is not: the launcher must say where rank 0 is")
            })?;
        (
            rank,
            world,
            number("LOCAL_RANK")?.unwrap_or(0),
            addr.to_string(),
        )
    } else if let (Some(rank), Some(world)) = (number("SLURM_PROCID")?, number("SLURM_NTASKS")?) {
        let addr = match get("MASTER_ADDR") {
            Some(a) => a.to_string(),
            None => {
                let list = get("SLURM_JOB_NODELIST")
                        .or(get("SLURM_NODELIST"))
                        .ok_or_else(|| anyhow!("under Slurm but SLURM_JOB_NODELIST is not set: set MASTER_ADDR to rank 0's host"))?;
                first_slurm_host(list)?
            }
        };
        (rank, world, number("SLURM_LOCALID")?.unwrap_or(0), addr)
    } else {
        return Err(anyhow!(
                "--distributed needs a launcher's environment (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT as torchrun or a Kubernetes PyTorchJob set them, or Slurm's srun): start cnnbench with one of them, or use --nproc N on one machine"
            ));
    };
    if world_size == 0 || rank >= world_size {
        return Err(anyhow!(
            "rank {rank} does not exist in a job of {world_size} process(es): check the launcher's RANK/WORLD_SIZE"
        ));
    }
    // torchrun's agent already serves the store on MASTER_PORT; its workers connect to it.
    let launcher_serves_store = get("TORCHELASTIC_USE_AGENT_STORE")
        .is_some_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let attempt = get("TORCHELASTIC_RESTART_COUNT").unwrap_or("0");
    Ok(Rendezvous {
        rank,
        world_size,
        local_rank,
        master_addr,
        master_port: port,
        launcher_serves_store,
        store_prefix: format!("cnnbench/attempt_{attempt}/"),
        timeout,
    })
}

/// The first host of a Slurm node list: `node[03-05,9],gpu1` → `node03`. Total: any
/// text gives a host name (letters, digits, `-`, `.`, `_`) or an error, never a panic
/// (`a]b[c` sliced backwards).
pub fn first_slurm_host(list: &str) -> Result<String> {
    let list = list.trim();
    let bad = || {
        anyhow!(
            "cannot read the Slurm node list \"{}\": set MASTER_ADDR to rank 0's host",
            cnnbench_results::printable(list)
        )
    };
    let end = list.find([',', '[']).unwrap_or(list.len());
    let prefix = &list[..end];
    let host = match list[end..].strip_prefix('[') {
        Some(rest) => {
            let close = rest.find(']').ok_or_else(bad)?;
            let first = rest[..close].split([',', '-']).next().unwrap_or_default();
            if first.is_empty() {
                return Err(bad());
            }
            format!("{prefix}{first}")
        }
        None => prefix.to_string(),
    };
    let plausible = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    if host.is_empty() || !host.chars().all(plausible) {
        return Err(bad());
    }
    Ok(host)
}

/// A port that was free a moment ago, for `--nproc`'s rendezvous.
pub fn free_port() -> Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .context("finding a free local port for the ranks' rendezvous")?;
    Ok(listener.local_addr()?.port())
}

/// How `--nproc` ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every rank exited 0.
    Success,
    /// Ctrl-C: the ranks were stopped.
    Interrupted,
}

/// Starts `nproc` ranks of `program args…` on this machine with torchrun's variables
/// (and `port` for the rendezvous), then waits: when one fails, the others are killed
/// and the error names the rank that failed first; `cancel` (Ctrl-C) kills them all.
pub fn launch_local(
    program: &std::path::Path,
    args: &[String],
    stdin: &[u8],
    nproc: usize,
    port: u16,
    cancel: &AtomicBool,
) -> Result<Outcome> {
    let mut children: Vec<Child> = Vec::with_capacity(nproc);
    // c10d warns on stderr each time a rank retries the rendezvous while rank 0 is
    // still starting; for ranks started together that is noise, not news.
    let log_level = std::env::var("TORCH_CPP_LOG_LEVEL").unwrap_or_else(|_| "ERROR".to_string());
    for rank in 0..nproc {
        let child = Command::new(program)
            .args(args)
            .env("TORCH_CPP_LOG_LEVEL", &log_level)
            .env("RANK", rank.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("WORLD_SIZE", nproc.to_string())
            .env("LOCAL_WORLD_SIZE", nproc.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", port.to_string())
            .env_remove("TORCHELASTIC_USE_AGENT_STORE")
            .stdin(std::process::Stdio::piped())
            .spawn();
        match child {
            Ok(mut c) => {
                // The job is small (a pipe holds it whole), and the pipe closes after it.
                let written = c.stdin.take().map(|mut pipe| pipe.write_all(stdin));
                children.push(c);
                if let Some(Err(e)) = written {
                    kill_all(&mut children);
                    return Err(anyhow!("could not give rank {rank} its job: {e}"));
                }
            }
            Err(e) => {
                kill_all(&mut children);
                return Err(anyhow!(
                    "could not start rank {rank} ({}): {e}",
                    program.display()
                ));
            }
        }
    }
    let mut done: Vec<Option<ExitStatus>> = vec![None; nproc];
    loop {
        if cancel.load(Ordering::SeqCst) {
            kill_all(&mut children);
            return Ok(Outcome::Interrupted);
        }
        for (rank, child) in children.iter_mut().enumerate() {
            if done[rank].is_some() {
                continue;
            }
            let status = child
                .try_wait()
                .with_context(|| format!("waiting for rank {rank}"))?;
            if let Some(status) = status {
                done[rank] = Some(status);
                if !status.success() {
                    kill_all(&mut children);
                    return Err(anyhow!(
                        "rank {rank} of {nproc} failed ({}); the other ranks were stopped (its error is above)",
                        describe(status)
                    ));
                }
            }
        }
        if done.iter().all(Option::is_some) {
            return Ok(Outcome::Success);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn kill_all(children: &mut [Child]) {
    for child in children.iter_mut() {
        if let Ok(None) = child.try_wait() {
            let _ = child.kill();
        }
    }
    for child in children.iter_mut() {
        let _ = child.wait();
    }
}

fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("killed by signal {signal}");
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

/// Whether `nproc` local GPU ranks each get a GPU of their own (GPU `LOCAL_RANK`, or all
/// on `--device`), as NCCL requires: it refuses two ranks on one GPU.
pub fn check_gpus_for_ranks(nproc: usize, device: Option<usize>, gpus: usize) -> Result<()> {
    match device {
        Some(d) if nproc > 1 => Err(anyhow!(
            "--device {d} would put all {nproc} ranks on one GPU, which NCCL refuses: leave --device out (each rank takes GPU LOCAL_RANK)"
        )),
        None if nproc > gpus => Err(anyhow!(
            "{nproc} ranks need {nproc} GPUs (one each, GPU LOCAL_RANK), but this machine has {gpus}: give --nproc {gpus} or less",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gpu_rank_gets_a_gpu_of_its_own() {
        check_gpus_for_ranks(2, None, 2).unwrap();
        check_gpus_for_ranks(1, Some(3), 4).unwrap();
        let e = check_gpus_for_ranks(4, None, 2).unwrap_err().to_string();
        assert!(
            e.contains("4 ranks need 4 GPUs") && e.contains("has 2"),
            "{e}"
        );
        let e = check_gpus_for_ranks(2, Some(0), 8).unwrap_err().to_string();
        assert!(e.contains("--device 0") && e.contains("NCCL"), "{e}");
    }

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const T: Duration = Duration::from_secs(5);

    #[test]
    fn torchrun_and_pytorchjob_variables_give_the_rendezvous() {
        let r = rendezvous_from_env(
            &env(&[
                ("RANK", "3"),
                ("WORLD_SIZE", "4"),
                ("LOCAL_RANK", "1"),
                ("MASTER_ADDR", "trainer-master-0"),
                ("MASTER_PORT", "23456"),
                ("TORCHELASTIC_USE_AGENT_STORE", "True"),
                ("TORCHELASTIC_RESTART_COUNT", "2"),
            ]),
            T,
        )
        .unwrap();
        assert_eq!((r.rank, r.world_size, r.local_rank), (3, 4, 1));
        assert_eq!(
            (r.master_addr.as_str(), r.master_port),
            ("trainer-master-0", 23456)
        );
        assert!(r.launcher_serves_store);
        assert_eq!(r.store_prefix, "cnnbench/attempt_2/");
    }

    #[test]
    fn slurm_variables_give_the_first_node_and_the_default_port() {
        let r = rendezvous_from_env(
            &env(&[
                ("SLURM_PROCID", "5"),
                ("SLURM_NTASKS", "8"),
                ("SLURM_LOCALID", "1"),
                ("SLURM_JOB_NODELIST", "gpu[07-10,12],login1"),
            ]),
            T,
        )
        .unwrap();
        assert_eq!((r.rank, r.world_size, r.local_rank), (5, 8, 1));
        assert_eq!((r.master_addr.as_str(), r.master_port), ("gpu07", 29500));
        assert!(!r.launcher_serves_store);
    }

    #[test]
    fn slurm_node_lists() {
        assert_eq!(first_slurm_host("node1").unwrap(), "node1");
        assert_eq!(first_slurm_host("a1,a2").unwrap(), "a1");
        assert_eq!(first_slurm_host("n[003-004]").unwrap(), "n003");
        assert_eq!(first_slurm_host("n[9,11]").unwrap(), "n9");
        assert!(first_slurm_host("").is_err());
        assert!(first_slurm_host("n[1-2").is_err());
        for hostile in ["a]b[c", "]a[", "[]", "a[]b]", "n[\u{1b}]", "a b", "]["] {
            assert!(first_slurm_host(hostile).is_err(), "{hostile}");
        }
        let why = first_slurm_host("a]b[c\u{1b}").unwrap_err().to_string();
        assert!(
            !why.contains('\u{1b}') && why.contains("MASTER_ADDR"),
            "{why}"
        );
    }

    proptest::proptest! {
        /// Any text is a host or an error, never a panic, and a host is a plain name.
        #[test]
        fn any_node_list_gives_a_plain_host_or_an_error(
            list in proptest::prop_oneof![".{0,24}", "[\\[\\],a-z0-9-]{0,16}"]
        ) {
            if let Ok(host) = first_slurm_host(&list) {
                proptest::prop_assert!(!host.is_empty());
                proptest::prop_assert!(
                    host.chars().all(|c| c.is_ascii_alphanumeric() || "-._".contains(c)),
                    "{host:?} from {list:?}"
                );
            }
        }
    }

    #[test]
    fn missing_or_inconsistent_variables_are_explained() {
        let e = rendezvous_from_env(&env(&[]), T).unwrap_err().to_string();
        assert!(e.contains("torchrun") && e.contains("--nproc"), "{e}");
        let e = rendezvous_from_env(&env(&[("RANK", "0"), ("WORLD_SIZE", "2")]), T)
            .unwrap_err()
            .to_string();
        assert!(e.contains("MASTER_ADDR"), "{e}");
        let e = rendezvous_from_env(
            &env(&[("RANK", "2"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "h")]),
            T,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("rank 2 does not exist"), "{e}");
        let e = rendezvous_from_env(&env(&[("RANK", "x"), ("WORLD_SIZE", "2")]), T)
            .unwrap_err()
            .to_string();
        assert!(e.contains("RANK=x"), "{e}");
    }

    fn sh(script: &str) -> (std::path::PathBuf, Vec<String>) {
        ("/bin/sh".into(), vec!["-c".into(), script.into()])
    }

    #[test]
    fn ranks_that_all_succeed_succeed() {
        let (program, args) = sh("test \"$WORLD_SIZE\" = 3 && test \"$MASTER_PORT\" = 1234");
        let outcome = launch_local(&program, &args, b"", 3, 1234, &AtomicBool::new(false)).unwrap();
        assert_eq!(outcome, Outcome::Success);
    }

    #[test]
    fn a_failing_rank_stops_the_others_and_is_named() {
        // Rank 1 fails at once; the others would run for a minute.
        let (program, args) = sh("if [ \"$RANK\" = 1 ]; then exit 3; fi; sleep 60");
        let started = std::time::Instant::now();
        let e = launch_local(&program, &args, b"", 3, 1, &AtomicBool::new(false))
            .unwrap_err()
            .to_string();
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert!(e.contains("rank 1 of 3 failed (exit status 3)"), "{e}");
    }

    #[test]
    fn cancelling_kills_every_rank() {
        let (program, args) = sh("sleep 60");
        let started = std::time::Instant::now();
        let outcome = launch_local(&program, &args, b"", 2, 1, &AtomicBool::new(true)).unwrap();
        assert_eq!(outcome, Outcome::Interrupted);
        assert!(started.elapsed() < Duration::from_secs(10));
    }
}
