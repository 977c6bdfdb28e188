//! PyTorch itself as engines: `pytorch` (eager) and `pytorch-compile` (`torch.compile`,
//! inductor), on the CPU or a CUDA GPU (`pytorch-cuda`, `pytorch-compile-cuda`).
//!
//! `torch.compile` lives only in Python, so these engines run the user's own Python: a
//! worker that ships in this crate (`worker/cnnbench_worker.py`, built into the binary)
//! and imports nothing but `torch` (and `torchao`, for int8 alone). It builds the
//! network in PyTorch from cnnbench's model file, one small function per op, so there is
//! still one description of every model, and answers prepare / forward / backward /
//! update / weights over a pipe. The harness owns the clock around each call; the
//! worker synchronises its device before it answers; the pipe's round trip is measured
//! and recorded as the floor under every timed phase
//! ([`cnnbench_engine::Session::empty_call`]).
//!
//! Nothing is needed at build time: without a Python that has torch 2.11 the engines
//! say so, and how to install it.

use cnnbench_engine::{Capabilities, DeviceKind, Mode, Precision};

mod provider;
pub mod python;
mod session;
mod worker;

pub use provider::{providers, CompileMode, CompiledSettings, EagerSettings};
pub use session::{PytorchEngine, PytorchOptions};

/// The PyTorch release these engines are tested with; its major.minor is required.
pub const TORCH_VERSION: &str = "2.11.0";

/// The torchao release pytorch-compile's int8 is tested with (PyTorch 2.11's PT2E
/// quantisation lives there); its major.minor is required.
pub const TORCHAO_VERSION: &str = "0.18.0";

/// Why pytorch-compile refuses int8 without freezing: freezing is what lowers the
/// quantised network to oneDNN's int8 kernels (without it the quantise-dequantise pairs
/// would run around f32 kernels).
pub const INT8_NEEDS_FREEZING: &str = "pytorch-compile runs int8 only with inductor's freezing, which lowers the quantised network to oneDNN's int8 kernels: add --freezing (--engine-setting freezing=true)";

/// The worker's source, written to a private folder when an engine starts.
const WORKER_SOURCE: &str = include_str!("../worker/cnnbench_worker.py");

/// The four engines: eager or compiled, on the CPU or a CUDA GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flavour {
    pub compiled: bool,
    pub device: DeviceKind,
}

impl Flavour {
    /// All of them, in the order `cnnbench engines` lists them.
    pub const ALL: [Flavour; 4] = [
        Flavour {
            compiled: false,
            device: DeviceKind::Cpu,
        },
        Flavour {
            compiled: true,
            device: DeviceKind::Cpu,
        },
        Flavour {
            compiled: false,
            device: DeviceKind::Gpu,
        },
        Flavour {
            compiled: true,
            device: DeviceKind::Gpu,
        },
    ];

    /// The engine's name on the command line and in result files.
    pub fn engine_name(self) -> &'static str {
        match (self.compiled, self.device) {
            (false, DeviceKind::Cpu) => "pytorch",
            (true, DeviceKind::Cpu) => "pytorch-compile",
            (false, DeviceKind::Gpu) => "pytorch-cuda",
            (true, DeviceKind::Gpu) => "pytorch-compile-cuda",
        }
    }

    /// One line for `cnnbench engines`.
    pub fn describe(self) -> &'static str {
        match (self.compiled, self.device) {
            (false, DeviceKind::Cpu) => "PyTorch eager on the CPU, in a worker on your Python",
            (true, DeviceKind::Cpu) => {
                "PyTorch torch.compile (inductor) on the CPU, in a worker on your Python"
            }
            (false, DeviceKind::Gpu) => "PyTorch eager on a CUDA GPU, in a worker on your Python",
            (true, DeviceKind::Gpu) => {
                "PyTorch torch.compile (inductor) on a CUDA GPU, in a worker on your Python"
            }
        }
    }

    /// Every mode; f32, whole-model bf16 and automatic mixed precision in bf16 on the
    /// CPU (f16 kernels on the CPU are few and slow, so f16 is left to GPUs), and int8
    /// inference compiled (PT2E quantisation lowered by inductor to oneDNN's int8
    /// kernels: only where the Python has torchao, which the engine checks as it
    /// starts); every precision but int8 on a GPU.
    pub fn capabilities(self) -> Capabilities {
        let precisions = match (self.device, self.compiled) {
            (DeviceKind::Cpu, false) => vec![Precision::F32, Precision::Bf16, Precision::AmpBf16],
            (DeviceKind::Cpu, true) => vec![
                Precision::F32,
                Precision::Bf16,
                Precision::AmpBf16,
                Precision::Int8,
            ],
            (DeviceKind::Gpu, _) => Precision::ALL
                .into_iter()
                .filter(|&p| p != Precision::Int8)
                .collect(),
        };
        Capabilities {
            modes: vec![Mode::Train, Mode::Infer, Mode::Step],
            precisions,
            device: self.device,
            weight_exchange: true,
            device_memory: match self.device {
                DeviceKind::Cpu => cnnbench_host::memory_bytes(),
                DeviceKind::Gpu => None,
            },
            precision_refusals: Vec::new(),
            mode_refusals: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(all(test, feature = "torch-tests"))]
mod torch_tests;
