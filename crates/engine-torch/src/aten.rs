//! What the engines need from ATen beyond tch, through `shim/aten_shim.cpp`: autocast
//! for any device and low type (`torch.autocast`), and what the CPU kernels ran on
//! (oneDNN's verbose output, ATen's CPU capability).

use anyhow::{anyhow, Context, Result};
use cnnbench_engine::onednn::OneDnnReport;
use std::ffi::{c_char, c_int, CStr};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use tch::{Device, Kind, Tensor};
use torch_sys::C_tensor;

extern "C" {
    fn cnb_aten_free(message: *mut c_char);
    fn cnb_autocast_enter(
        device: c_int,
        dtype: c_int,
        was_enabled: *mut c_int,
        was_dtype: *mut c_int,
    ) -> *mut c_char;
    fn cnb_autocast_exit(device: c_int, was_enabled: c_int, was_dtype: c_int) -> *mut c_char;
    #[cfg(test)]
    fn cnb_autocast_state(device: c_int, enabled: *mut c_int, dtype: *mut c_int) -> *mut c_char;
    fn cnb_amp_unscale(
        grads: *const *mut C_tensor,
        count: usize,
        found_inf: *mut C_tensor,
        inv_scale: *mut C_tensor,
    ) -> *mut c_char;
    fn cnb_onednn_verbose(level: c_int, accepted: *mut c_int) -> *mut c_char;
    fn cnb_aten_cpu_capability(out: *mut *mut c_char) -> *mut c_char;
}

/// Takes the shim's error message (null: success) and frees it.
fn checked(message: *mut c_char) -> Result<()> {
    if message.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null return is a NUL-terminated string malloc'd by the shim.
    let text = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: freed once, by the function that pairs with the shim's malloc.
    unsafe { cnb_aten_free(message) };
    Err(anyhow!(text))
}

/// The shim's device number: autocast state is kept per device type.
fn device_code(device: Device) -> c_int {
    match device {
        Device::Cpu => 0,
        _ => 1,
    }
}

/// c10::ScalarType's numbers for the kinds autocast computes in (tch keeps its own
/// mapping private).
const SCALAR_TYPES: [(Kind, c_int); 3] = [(Kind::Half, 5), (Kind::Float, 6), (Kind::BFloat16, 15)];

fn scalar_type(kind: Kind) -> Result<c_int> {
    SCALAR_TYPES
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, n)| *n)
        .ok_or_else(|| anyhow!("autocast computes in f16, bf16 or f32, not {kind:?}"))
}

/// An autocast region, as `with torch.autocast(device, dtype):` opens one: ATen casts
/// the inputs of the ops on its lists (convolutions and matrix products to the low type,
/// the numerically touchy ones to f32) and leaves the rest alone. Dropping it leaves the
/// region and restores what was set before.
pub struct AutocastGuard {
    device: c_int,
    was_enabled: c_int,
    was_dtype: c_int,
}

impl AutocastGuard {
    /// Opens a region computing in `kind` (bf16 or f16) on `device`'s type.
    pub fn enter(device: Device, kind: Kind) -> Result<Self> {
        let device = device_code(device);
        let dtype = scalar_type(kind)?;
        let (mut was_enabled, mut was_dtype) = (0, 0);
        // SAFETY: the out-pointers are live locals.
        checked(unsafe { cnb_autocast_enter(device, dtype, &mut was_enabled, &mut was_dtype) })
            .context("entering libtorch's autocast")?;
        Ok(Self {
            device,
            was_enabled,
            was_dtype,
        })
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        // SAFETY: plain integers in; the message, if any, is freed by `checked`.
        let left =
            checked(unsafe { cnb_autocast_exit(self.device, self.was_enabled, self.was_dtype) });
        if let Err(e) = left {
            // Drop cannot return it, and a process left in autocast computes wrongly.
            panic!("leaving libtorch's autocast failed: {e:#}");
        }
    }
}

/// Whether autocast is on for `device`'s type, and the kind it casts to (`None` for a
/// kind autocast does not compute in).
#[cfg(test)]
pub fn autocast_state(device: Device) -> Result<(bool, Option<Kind>)> {
    let (mut enabled, mut dtype) = (0, 0);
    // SAFETY: the out-pointers are live locals.
    checked(unsafe { cnb_autocast_state(device_code(device), &mut enabled, &mut dtype) })?;
    let kind = SCALAR_TYPES
        .iter()
        .find(|(_, n)| *n == dtype)
        .map(|(k, _)| *k);
    Ok((enabled != 0, kind))
}

/// GradScaler's unscale step: multiplies every gradient by `inv_scale` in place (one
/// foreach call, as PyTorch's does) and sets `found_inf` to 1 where any value is not
/// finite.
pub fn unscale_gradients(
    grads: &mut [Tensor],
    found_inf: &mut Tensor,
    inv_scale: &mut Tensor,
) -> Result<()> {
    let pointers: Vec<*mut C_tensor> = grads.iter_mut().map(|g| g.as_mut_ptr()).collect();
    // SAFETY: every pointer is a live tch tensor (an at::Tensor*) borrowed for the call.
    checked(unsafe {
        cnb_amp_unscale(
            pointers.as_ptr(),
            pointers.len(),
            found_inf.as_mut_ptr(),
            inv_scale.as_mut_ptr(),
        )
    })
}

/// The vector instructions ATen's own CPU kernels dispatch to ("AVX2", "AVX512", …).
pub fn cpu_capability() -> Result<String> {
    let mut out: *mut c_char = std::ptr::null_mut();
    // SAFETY: `out` receives a malloc'd string on success.
    checked(unsafe { cnb_aten_cpu_capability(&mut out) })?;
    if out.is_null() {
        return Err(anyhow!("ATen did not say its CPU capability"));
    }
    // SAFETY: NUL-terminated, malloc'd by the shim; freed right after the copy.
    let text = unsafe { CStr::from_ptr(out) }
        .to_string_lossy()
        .into_owned();
    unsafe { cnb_aten_free(out) };
    Ok(text)
}

fn set_onednn_verbose(level: c_int) -> Result<bool> {
    let mut accepted = 0;
    // SAFETY: the out-pointer is a live local.
    checked(unsafe { cnb_onednn_verbose(level, &mut accepted) })?;
    Ok(accepted != 0)
}

/// The standard output of this process sent to a file until dropped, flushed on both
/// sides (Rust's and C's buffers), so that what oneDNN prints while it lives is read
/// back and nothing of it reaches the user's terminal.
struct StdoutCapture {
    saved: c_int,
    file: std::fs::File,
}

impl StdoutCapture {
    fn start() -> Result<Self> {
        let file = tempfile::tempfile().context("creating a file for oneDNN's verbose output")?;
        std::io::stdout().flush().ok();
        // SAFETY: fflush(NULL) flushes every C output stream; dup/dup2 on valid fds.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            let saved = libc::dup(1);
            if saved < 0 {
                return Err(anyhow!(
                    "cannot duplicate standard output to capture oneDNN's verbose output"
                ));
            }
            if libc::dup2(file.as_raw_fd(), 1) < 0 {
                libc::close(saved);
                return Err(anyhow!(
                    "cannot redirect standard output to capture oneDNN's verbose output"
                ));
            }
            Ok(Self { saved, file })
        }
    }

    /// Restores the standard output and returns what was written meanwhile.
    fn finish(mut self) -> Result<String> {
        self.restore();
        let mut text = String::new();
        self.file.rewind()?;
        self.file.read_to_string(&mut text)?;
        Ok(text)
    }

    fn restore(&mut self) {
        if self.saved < 0 {
            return;
        }
        // SAFETY: as in `start`; `saved` is closed once.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(self.saved, 1);
            libc::close(self.saved);
        }
        self.saved = -1;
    }
}

impl Drop for StdoutCapture {
    fn drop(&mut self) {
        self.restore();
    }
}

/// Runs `pass` with oneDNN printing every primitive it executes, and says what ran.
/// The pass's own result comes back too.
pub fn with_onednn_verbose<T>(pass: impl FnOnce() -> Result<T>) -> Result<(T, OneDnnReport)> {
    let capture = StdoutCapture::start()?;
    // Without verbose output there is nothing to read: no pass is run for nothing.
    if !set_onednn_verbose(1)? {
        return Err(anyhow!("this libtorch's oneDNN has no verbose output"));
    }
    let ran = pass();
    let quiet = set_onednn_verbose(0);
    let text = capture.finish()?;
    let value = ran?;
    quiet?;
    Ok((value, OneDnnReport::parse(&text)))
}
