//! Data-parallel training across processes: what the harness and the command line need
//! to know of a process group, whichever library provides it (PyTorch's c10d for the
//! torch engines). Each rank trains on its own batch; after backward the gradients are
//! averaged across the ranks, as PyTorch's DistributedDataParallel does.

use std::time::Duration;

/// How a rank finds the others: what a launcher (torchrun, Slurm, Kubernetes, or
/// `cnnbench run --nproc`) tells every process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rendezvous {
    /// This process's rank, `0..world_size`.
    pub rank: usize,
    pub world_size: usize,
    /// The rank's index on its machine (which GPU it takes).
    pub local_rank: usize,
    /// Host and port of the rendezvous store, served by rank 0 …
    pub master_addr: String,
    pub master_port: u16,
    /// … unless the launcher serves it already (torchrun's agent does).
    pub launcher_serves_store: bool,
    /// Keys of this job in the store, so that a restarted job does not read an earlier
    /// attempt's.
    pub store_prefix: String,
    /// How long a rank waits for the others (to join, or in a collective) before it
    /// gives up with an error.
    pub timeout: Duration,
}

/// What a rank's session reports of its process group, for the result file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupInfo {
    pub rank: usize,
    pub world_size: usize,
    /// The collective library's backend: `gloo` or `nccl`.
    pub backend: String,
    /// How its messages travel, e.g. `tcp`.
    pub transport: String,
    /// Gradients are all-reduced in buckets of at most this many bytes.
    pub bucket_bytes: usize,
    /// The machine the rank ran on, to tell a multi-host job's ranks apart.
    pub host: Option<String>,
    /// Where the rank's collectives travel from, where cnnbench chose it (Gloo; NCCL
    /// chooses its own interfaces).
    pub endpoint: Option<Endpoint>,
}

/// The address a rank advertised to the others, and why that one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub address: String,
    /// The interface holding the address, where the system says.
    pub interface: Option<String>,
    /// "GLOO_SOCKET_IFNAME=eth1" or "route to 10.0.0.1".
    pub chosen_by: String,
}

/// DDP's default gradient bucket (`bucket_cap_mb=25`).
pub const DEFAULT_BUCKET_BYTES: usize = 25 * 1024 * 1024;

/// A process group seen from one rank, beyond the gradient averaging that sessions do:
/// the harness's results travel to rank 0 through it, and the job ends together.
pub trait ProcessGroup: Send + Sync {
    fn info(&self) -> GroupInfo;
    /// Gives every rank's `value` under `key` to rank 0, which gets them in rank order;
    /// the other ranks get `None`. Every rank must call it with the same key.
    fn gather_to_root(&self, key: &str, value: &[u8]) -> anyhow::Result<Option<Vec<Vec<u8>>>>;
    /// Waits until every rank has reached this point.
    fn barrier(&self) -> anyhow::Result<()>;
    /// Tells the other ranks that this one is failing with `message`, before it exits,
    /// so that they end at once with it instead of waiting for the timeout.
    fn announce_failure(&self, message: &str);
}
