//! Data-parallel training on PyTorch's own c10d: a TCPStore rendezvous and a Gloo
//! process group (CPU tensors) or an NCCL one (CUDA tensors, in builds with
//! `cfg(cnnbench_nccl)`), driven through the C++ shim in `shim/c10d_shim.cpp` (compiled
//! by build.rs against the same libtorch). Gradients are averaged in DDP's 25 MiB
//! buckets.

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::distributed::{GroupInfo, ProcessGroup, Rendezvous, DEFAULT_BUCKET_BYTES};
use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::Mutex;
use tch::Tensor;

#[repr(C)]
struct CnbGroup {
    _private: [u8; 0],
}

/// `at::Tensor*`, as torch-sys hands them out.
type CTensor = *mut torch_sys::C_tensor;

extern "C" {
    fn cnb_free(p: *mut std::ffi::c_void);
    fn cnb_has_nccl() -> c_int;
    fn cnb_nccl_version() -> *mut c_char;
    fn cnb_group_new(
        host: *const c_char,
        port: c_int,
        rank: c_int,
        world: c_int,
        agent_store: c_int,
        prefix: *const c_char,
        timeout_s: f64,
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
        g: *mut CnbGroup,
        key: *const c_char,
        data: *const u8,
        len: usize,
    ) -> *mut c_char;
    fn cnb_store_get(
        g: *mut CnbGroup,
        key: *const c_char,
        data: *mut *mut u8,
        len: *mut usize,
    ) -> *mut c_char;
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
    rank: usize,
    world_size: usize,
    backend: &'static str,
    transport: String,
}

impl TorchProcessGroup {
    /// Joins the job: connects to (rank 0: serves) the store at the rendezvous address
    /// and sets up Gloo's connections, or NCCL's communicator on the rank's GPU, to
    /// every other rank. Fails after `timeout` when the others do not come.
    pub fn join(rendezvous: &Rendezvous, collectives: Collectives) -> Result<Self> {
        let Rendezvous {
            rank,
            world_size,
            master_addr,
            master_port,
            ..
        } = rendezvous;
        if *world_size == 0 || rank >= world_size {
            return Err(anyhow!(
                "rank {rank} does not exist in a job of {world_size} process(es)"
            ));
        }
        let host = c_string(master_addr, "the rendezvous host")?;
        let prefix = c_string(&rendezvous.store_prefix, "the store prefix")?;
        let (cuda_device, backend, transport) = match collectives {
            Collectives::Gloo => (-1, "gloo", "tcp".to_string()),
            Collectives::Nccl { device } => {
                let device = c_int::try_from(device)
                    .map_err(|_| anyhow!("GPU index {device} is out of range"))?;
                (device, "nccl", nccl_transport())
            }
        };
        let mut group: *mut CnbGroup = std::ptr::null_mut();
        // SAFETY: valid C strings; `group` receives a new object or stays null.
        check(unsafe {
            cnb_group_new(
                host.as_ptr(),
                c_int::from(*master_port),
                *rank as c_int,
                *world_size as c_int,
                c_int::from(rendezvous.launcher_serves_store),
                prefix.as_ptr(),
                rendezvous.timeout.as_secs_f64(),
                cuda_device,
                &mut group,
            )
        })
        .with_context(|| {
            format!(
                "rank {rank} of {world_size} could not join the job at {master_addr}:{master_port} with {backend} (is every rank started, and the address reachable from here?)"
            )
        })?;
        Ok(Self {
            group: Mutex::new(GroupPtr(group)),
            rank: *rank,
            world_size: *world_size,
            backend,
            transport,
        })
    }

    fn with<T>(&self, f: impl FnOnce(*mut CnbGroup) -> Result<T>) -> Result<T> {
        let guard = self
            .group
            .lock()
            .map_err(|_| anyhow!("the process group was poisoned by a panic"))?;
        f(guard.0)
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
    }

    /// Copies rank 0's `tensors` into every rank's.
    pub fn broadcast_from_root(&self, tensors: &mut [Tensor]) -> Result<()> {
        let ptrs: Vec<CTensor> = tensors.iter_mut().map(|t| t.as_mut_ptr()).collect();
        self.with(|g| {
            // SAFETY: as in `all_reduce_mean`.
            check(unsafe { cnb_broadcast(g, ptrs.as_ptr(), ptrs.len(), 0) })
        })
        .with_context(|| format!("rank {}: receiving rank 0's weights failed", self.rank))
    }

    fn store_set(&self, key: &str, value: &[u8]) -> Result<()> {
        let key = c_string(key, "a store key")?;
        // SAFETY: valid key and byte slice for the duration of the call.
        self.with(|g| check(unsafe { cnb_store_set(g, key.as_ptr(), value.as_ptr(), value.len()) }))
    }

    fn store_get(&self, key: &str) -> Result<Vec<u8>> {
        let c_key = c_string(key, "a store key")?;
        self.with(|g| {
            let mut data: *mut u8 = std::ptr::null_mut();
            let mut len = 0usize;
            // SAFETY: on success `data` holds `len` bytes from the shim's malloc.
            check(unsafe { cnb_store_get(g, c_key.as_ptr(), &mut data, &mut len) })?;
            let bytes = if data.is_null() {
                Vec::new()
            } else {
                // SAFETY: see above; copied, then freed once.
                let v = unsafe { std::slice::from_raw_parts(data, len) }.to_vec();
                unsafe { cnb_free(data.cast()) };
                v
            };
            Ok(bytes)
        })
        .with_context(|| format!("waiting for \"{key}\" from another rank"))
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
        }
    }

    fn gather_to_root(&self, key: &str, value: &[u8]) -> Result<Option<Vec<Vec<u8>>>> {
        if self.rank != 0 {
            self.store_set(&format!("{key}/{}", self.rank), value)?;
            return Ok(None);
        }
        let mut all = vec![value.to_vec()];
        for rank in 1..self.world_size {
            all.push(self.store_get(&format!("{key}/{rank}"))?);
        }
        Ok(Some(all))
    }

    fn barrier(&self) -> Result<()> {
        // SAFETY: a live group.
        self.with(|g| check(unsafe { cnb_barrier(g) }))
            .with_context(|| format!("rank {}: waiting for the other ranks failed", self.rank))
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
                eprintln!("warning: tearing down the process group: {e:#}");
            }
        }
    }
}
