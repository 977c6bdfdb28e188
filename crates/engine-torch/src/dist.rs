//! Data-parallel training on PyTorch's own c10d: a TCPStore rendezvous and a Gloo
//! process group (CPU tensors) or an NCCL one (CUDA tensors, in builds with
//! `cfg(cnnbench_nccl)`), driven through the C++ shim in `shim/c10d_shim.cpp` (compiled
//! by build.rs against the same libtorch). Gradients are averaged in DDP's 25 MiB
//! buckets.
//!
//! A rank that fails says so in the store (`failed`: its rank and message, the first
//! failure wins) before it exits, and the others end within a second with that message:
//! during the join by a watch on a second store connection (the join itself cannot be
//! interrupted), afterwards when their next collective fails.

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::distributed::{
    Endpoint, GroupInfo, ProcessGroup, Rendezvous, DEFAULT_BUCKET_BYTES,
};
use cnnbench_host::network;
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tch::Tensor;

#[repr(C)]
struct CnbGroup {
    _private: [u8; 0],
}

#[repr(C)]
struct CnbStore {
    _private: [u8; 0],
}

/// `at::Tensor*`, as torch-sys hands them out.
type CTensor = *mut torch_sys::C_tensor;

extern "C" {
    fn cnb_free(p: *mut std::ffi::c_void);
    fn cnb_has_nccl() -> c_int;
    fn cnb_nccl_version() -> *mut c_char;
    fn cnb_store_new(
        host: *const c_char,
        port: c_int,
        rank: c_int,
        world: c_int,
        agent_store: c_int,
        prefix: *const c_char,
        timeout_s: f64,
        counted: c_int,
        out: *mut *mut CnbStore,
    ) -> *mut c_char;
    fn cnb_store_free(s: *mut CnbStore);
    fn cnb_group_new(
        store: *mut CnbStore,
        rank: c_int,
        world: c_int,
        timeout_s: f64,
        interfaces: *const c_char,
        address: *const c_char,
        cuda_device: c_int,
        out: *mut *mut CnbGroup,
    ) -> *mut c_char;
    fn cnb_allreduce_mean(
        g: *mut CnbGroup,
        tensors: *const CTensor,
        count: usize,
        bucket_bytes: usize,
    ) -> *mut c_char;
    fn cnb_broadcast(
        g: *mut CnbGroup,
        tensors: *const CTensor,
        count: usize,
        root: c_int,
    ) -> *mut c_char;
    fn cnb_barrier(g: *mut CnbGroup) -> *mut c_char;
    fn cnb_store_set(
        s: *mut CnbStore,
        key: *const c_char,
        data: *const u8,
        len: usize,
    ) -> *mut c_char;
    fn cnb_store_set_first(
        s: *mut CnbStore,
        key: *const c_char,
        data: *const u8,
        len: usize,
    ) -> *mut c_char;
    fn cnb_store_check(s: *mut CnbStore, key: *const c_char, present: *mut c_int) -> *mut c_char;
    fn cnb_store_get(
        s: *mut CnbStore,
        key: *const c_char,
        data: *mut *mut u8,
        len: *mut usize,
    ) -> *mut c_char;
    fn cnb_group_mark_failed(g: *mut CnbGroup);
    fn cnb_group_destroy(g: *mut CnbGroup) -> *mut c_char;
}

/// The shim's answer: null for success, else a message it allocated.
fn check(error: *mut c_char) -> Result<()> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: the shim returns a NUL-terminated string from malloc, or null.
    let message = unsafe { CStr::from_ptr(error) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated by the shim's malloc, freed once here.
    unsafe { cnb_free(error.cast()) };
    Err(anyhow!("{}", message.trim()))
}

fn c_string(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| anyhow!("{what} contains a NUL byte: {s:?}"))
}

struct GroupPtr(*mut CnbGroup);
// SAFETY: the c10d store and process group are thread-safe; the Mutex around the pointer
// keeps our calls one at a time anyway.
unsafe impl Send for GroupPtr {}

/// The store key under which the first rank to fail leaves its rank and message.
const FAILED_KEY: &str = "failed";

/// The store key under which the first rank to fail *during the join* leaves its rank and
/// message: the only failure that can keep another rank waiting in its join, and so the
/// only one the join's watch acts on. A rank that fails after it joined has finished its
/// part of every other rank's join (its connections are made), so their joins complete and
/// their next collective reports the failure; ending their processes from the watch would
/// race with the join's return (it ended a test process holding two ranks, issue 44).
const JOIN_FAILED_KEY: &str = "failed-joining";

/// How often the watch looks for another rank's failure during the join.
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// How long a rank whose collective failed waits for the failing rank's own message.
const FAILURE_MESSAGE_WAIT: Duration = Duration::from_secs(3);

/// One connection to the rendezvous store, under the job's prefix.
struct Store(*mut CnbStore);
// SAFETY: c10d's TCPStore serialises the requests of each connection itself.
unsafe impl Send for Store {}
// SAFETY: as above.
unsafe impl Sync for Store {}

impl Store {
    /// A rank's own connection (`counted`: rank 0 serves the store unless the launcher
    /// does, and waits for every rank), or a second, uncounted client of it.
    fn connect(r: &Rendezvous, counted: bool) -> Result<Self> {
        let host = c_string(&r.master_addr, "the rendezvous host")?;
        let prefix = c_string(&r.store_prefix, "the store prefix")?;
        let mut store: *mut CnbStore = std::ptr::null_mut();
        // SAFETY: valid C strings; `store` receives a new object or stays null.
        check(unsafe {
            cnb_store_new(
                host.as_ptr(),
                c_int::from(r.master_port),
                r.rank as c_int,
                r.world_size as c_int,
                c_int::from(r.launcher_serves_store),
                prefix.as_ptr(),
                r.timeout.as_secs_f64(),
                c_int::from(counted),
                &mut store,
            )
        })?;
        Ok(Self(store))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        let key = c_string(key, "a store key")?;
        // SAFETY: a live store; valid key and bytes for the duration of the call.
        check(unsafe { cnb_store_set(self.0, key.as_ptr(), value.as_ptr(), value.len()) })
    }

    fn set_first(&self, key: &str, value: &[u8]) -> Result<()> {
        let key = c_string(key, "a store key")?;
        // SAFETY: as in `set`.
        check(unsafe { cnb_store_set_first(self.0, key.as_ptr(), value.as_ptr(), value.len()) })
    }

    fn contains(&self, key: &str) -> Result<bool> {
        let key = c_string(key, "a store key")?;
        let mut present: c_int = 0;
        // SAFETY: a live store and a valid key.
        check(unsafe { cnb_store_check(self.0, key.as_ptr(), &mut present) })?;
        Ok(present != 0)
    }

    /// Waits (up to the job's timeout) for `key`.
    fn get(&self, key: &str) -> Result<Vec<u8>> {
        let c_key = c_string(key, "a store key")?;
        let mut data: *mut u8 = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: on success `data` holds `len` bytes from the shim's malloc.
        check(unsafe { cnb_store_get(self.0, c_key.as_ptr(), &mut data, &mut len) })?;
        if data.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: see above; copied, then freed once.
        let bytes = unsafe { std::slice::from_raw_parts(data, len) }.to_vec();
        unsafe { cnb_free(data.cast()) };
        Ok(bytes)
    }

    /// Waits for `key` (up to `timeout`) while watching for another rank's failure, which
    /// ends the wait at once with that rank's message: a rank that failed will never
    /// write the key, and a plain `get` would sit out the whole timeout.
    fn wait_for(&self, key: &str, own_rank: usize, timeout: Duration) -> Result<Vec<u8>> {
        let started = Instant::now();
        loop {
            if self.contains(key)? {
                return self.get(key);
            }
            if let Some((other, message)) = self.failure_of_another(own_rank) {
                return Err(anyhow!("rank {other} failed: {message}"));
            }
            if started.elapsed() >= timeout {
                return Err(anyhow!(
                    "no \"{key}\" after {} s (--dist-timeout)",
                    timeout.as_secs()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Leaves this rank's failure for the others (the first failure stays).
    fn announce_failure(&self, rank: usize, message: &str) -> Result<()> {
        self.set_first(FAILED_KEY, format!("{rank}\n{message}").as_bytes())
    }

    /// Leaves this rank's failure to join for the others: for their joins' watches, and
    /// as any failure for their later waits.
    fn announce_join_failure(&self, rank: usize, message: &str) -> Result<()> {
        let record = format!("{rank}\n{message}");
        let joining = self.set_first(JOIN_FAILED_KEY, record.as_bytes());
        self.set_first(FAILED_KEY, record.as_bytes())?;
        joining
    }

    /// Another rank's failure, if one is in the store: its rank and message.
    fn failure_of_another(&self, own_rank: usize) -> Option<(usize, String)> {
        self.failure_under(FAILED_KEY, own_rank)
    }

    /// Another rank's failure during its join, if one is in the store.
    fn join_failure_of_another(&self, own_rank: usize) -> Option<(usize, String)> {
        self.failure_under(JOIN_FAILED_KEY, own_rank)
    }

    fn failure_under(&self, key: &str, own_rank: usize) -> Option<(usize, String)> {
        if !self.contains(key).ok()? {
            return None;
        }
        let bytes = self.get(key).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        let (rank, message) = text.split_once('\n')?;
        let rank: usize = rank.parse().ok()?;
        (rank != own_rank).then(|| (rank, message.to_string()))
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        // SAFETY: freed once; the shim accepts null.
        unsafe { cnb_store_free(self.0) };
    }
}

/// Watches the store during the join for another rank's failure to join, and ends this
/// process with that rank's message when one comes: the join (Gloo's connections, NCCL's
/// communicator) would otherwise wait for the whole timeout for a rank that has gone.
/// A failure after that rank joined is not its business ([`JOIN_FAILED_KEY`]).
struct FailureWatch {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FailureWatch {
    fn start(r: &Rendezvous) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, r) = (stop.clone(), r.clone());
        let thread = std::thread::Builder::new()
            .name("cnnbench-failure-watch".into())
            .spawn(move || {
                // Without a second connection there is no watch; the join's own timeout
                // still ends it.
                let Ok(store) = Store::connect(&r, false) else {
                    return;
                };
                while !flag.load(Ordering::Relaxed) {
                    if let Some((other, message)) = store.join_failure_of_another(r.rank) {
                        if flag.load(Ordering::Relaxed) {
                            return;
                        }
                        cnnbench_engine::warn_on_stderr(&format!(
                            "error: rank {} of {} could not join the job: rank {other} failed: {message}",
                            r.rank, r.world_size
                        ));
                        // SAFETY: ends the process at once: the main thread is inside
                        // c10d's join, which cannot be interrupted, and exit handlers
                        // would tear libtorch down under it.
                        unsafe { libc::_exit(1) };
                    }
                    std::thread::sleep(WATCH_EVERY);
                }
            })
            .ok();
        Self { stop, thread }
    }
}

impl Drop for FailureWatch {
    /// Stops the watch; its thread ends at its next look (not waited for: it could be
    /// inside a connection attempt that a joined rank need not sit through).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take();
    }
}

/// Whether the shim was compiled with ProcessGroupNCCL (asked of the C++ side, so a
/// build script and shim that disagree show in the tests).
pub fn shim_has_nccl() -> bool {
    // SAFETY: no arguments, no state.
    unsafe { cnb_has_nccl() != 0 }
}

/// The NCCL version libtorch_cuda was built with, e.g. `2.28.9`, in NCCL builds.
pub fn nccl_version() -> Option<String> {
    // SAFETY: null, or a NUL-terminated string from the shim's malloc, freed once here.
    unsafe {
        let p = cnb_nccl_version();
        if p.is_null() {
            return None;
        }
        let v = CStr::from_ptr(p).to_string_lossy().into_owned();
        cnb_free(p.cast());
        Some(v)
    }
}

/// How NCCL's messages travel: NCCL picks NVLink/PCIe peer-to-peer or shared memory
/// within a machine and InfiniBand or TCP sockets across machines, unless `NCCL_NET`
/// forces its network (NCCL_DEBUG=INFO prints what it chose).
fn nccl_transport() -> String {
    match std::env::var("NCCL_NET") {
        Ok(net) if !net.trim().is_empty() => format!("auto (NCCL_NET={})", net.trim()),
        _ => "auto".to_string(),
    }
}

/// Which collective library a rank uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collectives {
    /// Gloo over TCP, on CPU tensors.
    Gloo,
    /// NCCL, on CUDA tensors of this GPU.
    Nccl { device: usize },
}

/// One rank's process group (Gloo or NCCL) and its store.
pub struct TorchProcessGroup {
    group: Mutex<GroupPtr>,
    store: Store,
    rank: usize,
    world_size: usize,
    backend: &'static str,
    transport: String,
    endpoint: Option<Endpoint>,
    /// How long a rank waits for the others (`--dist-timeout`).
    timeout: Duration,
}

impl TorchProcessGroup {
    /// Joins the job: connects to (rank 0: serves) the store at the rendezvous address
    /// and sets up Gloo's connections, or NCCL's communicator on the rank's GPU, to
    /// every other rank. Gloo advertises the address `GLOO_SOCKET_IFNAME` names, else the
    /// one routed towards the rendezvous host ([`network::local_endpoint`]). Fails after
    /// `timeout` when the others do not come, and within a second when one fails.
    pub fn join(rendezvous: &Rendezvous, collectives: Collectives) -> Result<Self> {
        let Rendezvous {
            rank,
            world_size,
            master_addr,
            master_port,
            ..
        } = rendezvous;
        let (rank, world_size, master_port) = (*rank, *world_size, *master_port);
        if world_size == 0 || rank >= world_size {
            return Err(anyhow!(
                "rank {rank} does not exist in a job of {world_size} process(es)"
            ));
        }
        let (cuda_device, backend, transport) = match collectives {
            Collectives::Gloo => (-1, "gloo", "tcp".to_string()),
            Collectives::Nccl { device } => {
                let device = c_int::try_from(device)
                    .map_err(|_| anyhow!("GPU index {device} is out of range"))?;
                (device, "nccl", nccl_transport())
            }
        };
        let failed_to_join = || {
            format!(
                "rank {rank} of {world_size} could not join the job at {master_addr}:{master_port} with {backend} (is every rank started, and the address reachable from here?)"
            )
        };
        if let Some(warning) = network::loopback_warning(master_addr, master_port, world_size) {
            cnnbench_engine::warn_on_stderr(&format!("warning: {warning}"));
        }
        let store = Store::connect(rendezvous, true).with_context(failed_to_join)?;
        let watch = FailureWatch::start(rendezvous);
        // From here on the others wait for this rank: a failure is told to them.
        let fail = |e: anyhow::Error| {
            let _ = store.announce_join_failure(rank, &format!("{e:#}"));
            e
        };
        // NCCL chooses its own interfaces (NCCL_SOCKET_IFNAME); Gloo binds ours.
        let endpoint = match collectives {
            Collectives::Gloo => {
                let ifname = std::env::var(network::GLOO_SOCKET_IFNAME).ok();
                let local = network::local_endpoint(master_addr, master_port, ifname.as_deref())
                    .map_err(|e| anyhow!(e))
                    .with_context(failed_to_join)
                    .map_err(fail)?;
                Some(local)
            }
            Collectives::Nccl { .. } => None,
        };
        let (interfaces, address) = match endpoint.as_ref().map(|e| &e.choice) {
            Some(network::AddressChoice::Interfaces(names)) => (names.join(","), String::new()),
            Some(network::AddressChoice::RouteTo(_)) => (
                String::new(),
                endpoint
                    .as_ref()
                    .map_or(String::new(), |e| e.address.to_string()),
            ),
            None => (String::new(), String::new()),
        };
        let interfaces = c_string(&interfaces, "GLOO_SOCKET_IFNAME").map_err(fail)?;
        let address = c_string(&address, "the local address").map_err(fail)?;
        let mut group: *mut CnbGroup = std::ptr::null_mut();
        // SAFETY: a live store and valid C strings; `group` receives a new object or stays null.
        let joined = check(unsafe {
            cnb_group_new(
                store.0,
                rank as c_int,
                world_size as c_int,
                rendezvous.timeout.as_secs_f64(),
                interfaces.as_ptr(),
                address.as_ptr(),
                cuda_device,
                &mut group,
            )
        })
        .with_context(failed_to_join);
        drop(watch);
        joined.map_err(fail)?;
        let endpoint = endpoint.map(|e| Endpoint {
            address: e.address.to_string(),
            interface: e.interface.clone(),
            chosen_by: e.how(),
        });
        Ok(Self {
            group: Mutex::new(GroupPtr(group)),
            store,
            rank,
            world_size,
            backend,
            transport,
            endpoint,
            timeout: rendezvous.timeout,
        })
    }

    fn with<T>(&self, f: impl FnOnce(*mut CnbGroup) -> Result<T>) -> Result<T> {
        let guard = self
            .group
            .lock()
            .map_err(|_| anyhow!("the process group was poisoned by a panic"))?;
        f(guard.0)
    }

    /// `error`, with the message of the rank that failed first where it left one: a
    /// collective fails here when that rank's process ends, moments after it wrote it.
    fn explained(&self, error: anyhow::Error) -> anyhow::Error {
        let waited = Instant::now();
        loop {
            if let Some((other, message)) = self.store.failure_of_another(self.rank) {
                return error.context(format!("rank {other} failed: {message}"));
            }
            if waited.elapsed() >= FAILURE_MESSAGE_WAIT {
                return error;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Averages `tensors` across the ranks, in place, in buckets of `bucket_bytes`.
    pub fn all_reduce_mean(&self, tensors: &mut [Tensor], bucket_bytes: usize) -> Result<()> {
        let ptrs: Vec<CTensor> = tensors.iter_mut().map(|t| t.as_mut_ptr()).collect();
        self.with(|g| {
            // SAFETY: `ptrs` point at live tensors for the duration of the call.
            check(unsafe { cnb_allreduce_mean(g, ptrs.as_ptr(), ptrs.len(), bucket_bytes) })
        })
        .with_context(|| {
            format!(
                "rank {}: averaging the gradients failed (did another rank stop?)",
                self.rank
            )
        })
        .map_err(|e| self.explained(e))
    }

    /// Copies rank 0's `tensors` into every rank's.
    pub fn broadcast_from_root(&self, tensors: &mut [Tensor]) -> Result<()> {
        let ptrs: Vec<CTensor> = tensors.iter_mut().map(|t| t.as_mut_ptr()).collect();
        self.with(|g| {
            // SAFETY: as in `all_reduce_mean`.
            check(unsafe { cnb_broadcast(g, ptrs.as_ptr(), ptrs.len(), 0) })
        })
        .with_context(|| format!("rank {}: receiving rank 0's weights failed", self.rank))
        .map_err(|e| self.explained(e))
    }

    /// The store's answer, or its failure (with the failing rank's message where
    /// `explain`: an answer that did not watch for it itself); the group is then torn
    /// down by abort, not by a shutdown that would wait for that rank.
    fn in_store<T>(&self, what: &str, answer: Result<T>, explain: bool) -> Result<T> {
        answer.map_err(|e| {
            if let Ok(guard) = self.group.lock() {
                // SAFETY: a live group (null only after drop).
                unsafe { cnb_group_mark_failed(guard.0) };
            }
            let e = e.context(format!("rank {}: {what}", self.rank));
            if explain {
                self.explained(e)
            } else {
                e
            }
        })
    }
}

impl ProcessGroup for TorchProcessGroup {
    fn info(&self) -> GroupInfo {
        GroupInfo {
            rank: self.rank,
            world_size: self.world_size,
            backend: self.backend.into(),
            transport: self.transport.clone(),
            bucket_bytes: DEFAULT_BUCKET_BYTES,
            host: cnnbench_host::host_name(),
            endpoint: self.endpoint.clone(),
        }
    }

    fn gather_to_root(&self, key: &str, value: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
        if self.rank != 0 {
            let sent = self.store.set(&format!("{key}/{}", self.rank), value);
            self.in_store(&format!("sending \"{key}\" to rank 0"), sent, true)?;
            return Ok(None);
        }
        let mut all = vec![value.to_vec()];
        for rank in 1..self.world_size {
            let got = self
                .store
                .wait_for(&format!("{key}/{rank}"), self.rank, self.timeout);
            all.push(self.in_store(
                &format!("waiting for \"{key}\" from rank {rank}"),
                got,
                false,
            )?);
        }
        Ok(Some(all))
    }

    fn barrier(&self) -> Result<()> {
        // SAFETY: a live group.
        self.with(|g| check(unsafe { cnb_barrier(g) }))
            .with_context(|| format!("rank {}: waiting for the other ranks failed", self.rank))
            .map_err(|e| self.explained(e))
    }

    fn announce_failure(&self, message: &str) {
        // Best effort: the store may be what failed.
        let _ = self.store.announce_failure(self.rank, message);
    }
}

impl Drop for TorchProcessGroup {
    /// Releases the process group before its store (the order PyTorch's own teardown
    /// gets wrong at exit, see the README's distributed page).
    fn drop(&mut self) {
        if let Ok(mut guard) = self.group.lock() {
            let g = std::mem::replace(&mut guard.0, std::ptr::null_mut());
            // SAFETY: destroyed once; null is accepted.
            if let Err(e) = check(unsafe { cnb_group_destroy(g) }) {
                cnnbench_engine::warn_on_stderr(&format!(
                    "warning: tearing down the process group: {e:#}"
                ));
            }
        }
    }
}

#[cfg(test)]
mod watch_tests {
    //! The join's watch ends its process, so each case runs in a child process (this test
    //! binary run again on one test): a wrong exit shows as that child's status, not as
    //! the whole test binary vanishing with status 1 and no output (issue 44).
    use super::*;
    use std::process::Command;

    const CHILD: &str = "CNNBENCH_WATCH_TEST_CASE";

    fn rendezvous(rank: usize, port: u16) -> Rendezvous {
        Rendezvous {
            rank,
            world_size: 2,
            local_rank: rank,
            master_addr: "127.0.0.1".into(),
            master_port: port,
            launcher_serves_store: false,
            store_prefix: "watch-test/".into(),
            timeout: Duration::from_secs(20),
        }
    }

    /// Rank 0 is inside its join (its watch running) when rank 1, which has joined,
    /// announces a failure: `after-join` (the watch must leave the process alone) or
    /// `during-join` (the watch must end it with rank 1's message).
    fn case(which: &str) {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let second = std::thread::spawn(move || Store::connect(&rendezvous(1, port), true));
        let _serving = Store::connect(&rendezvous(0, port), true).expect("rank 0's store");
        let rank1 = second
            .join()
            .expect("rank 1's thread")
            .expect("rank 1's store");
        let watch = FailureWatch::start(&rendezvous(0, port));
        let announced = match which {
            "after-join" => rank1.announce_failure(1, "out of memory after the join"),
            _ => rank1.announce_join_failure(1, "no route to rank 0"),
        };
        announced.expect("the failure is in the store");
        std::thread::sleep(WATCH_EVERY * 6);
        drop(watch);
        #[allow(
            clippy::disallowed_macros,
            reason = "the parent test reads this line from the child's stdout"
        )]
        {
            println!("{which}: the process lives on");
        }
    }

    fn run_case(which: &str) -> std::process::Output {
        let exe = std::env::current_exe().expect("this test binary's path");
        Command::new(exe)
            .args([
                "--exact",
                "dist::watch_tests::the_join_watch_ends_its_process_only_for_a_failure_to_join",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(CHILD, which)
            .output()
            .expect("this test binary runs again")
    }

    #[test]
    fn the_join_watch_ends_its_process_only_for_a_failure_to_join() {
        if let Ok(which) = std::env::var(CHILD) {
            case(&which);
            return;
        }
        let after = run_case("after-join");
        let stdout = String::from_utf8_lossy(&after.stdout);
        let stderr = String::from_utf8_lossy(&after.stderr);
        assert!(
            after.status.success() && stdout.contains("after-join: the process lives on"),
            "a failure announced after the join ended a process still in its join ({}):\n{stdout}\n{stderr}",
            after.status
        );
        let during = run_case("during-join");
        let stdout = String::from_utf8_lossy(&during.stdout);
        let stderr = String::from_utf8_lossy(&during.stderr);
        assert_eq!(during.status.code(), Some(1), "{stdout}\n{stderr}");
        assert!(
            !stdout.contains("the process lives on")
                && stderr.contains("could not join the job: rank 1 failed: no route to rank 0"),
            "{stdout}\n{stderr}"
        );
    }
}
