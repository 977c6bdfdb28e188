//! Versions of the libraries that set the speed (libtorch, CUDA, cuDNN) and the GPU's
//! name, for result files. They are read at run time, because the libtorch a binary
//! loads on a GPU machine need not be the one it was built against.

use std::path::{Path, PathBuf};

/// The folder holding the libtorch this process loaded, from its memory map.
fn loaded_libtorch_dir() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            Path::new(path)
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("libtorch_cpu"))
        })
        .and_then(|path| Path::new(path).parent().map(Path::to_path_buf))
}

/// Whether the loaded libtorch includes its CUDA part (the CPU-only wheels have none).
pub fn libtorch_has_cuda() -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .map(|maps| maps.contains("libtorch_cuda"))
        .unwrap_or(false)
}

/// PyTorch's version as its `torch/version.py` states it (libtorch carries no version
/// string of its own), e.g. `2.11.0+cu130`.
pub fn libtorch_version() -> String {
    let from_dir = |lib: &Path| -> Option<String> {
        let text = std::fs::read_to_string(lib.parent()?.join("version.py")).ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("__version__ = "))
            .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"').to_string())
    };
    loaded_libtorch_dir()
        .and_then(|dir| from_dir(&dir))
        .or_else(|| option_env!("CNNBENCH_LIBTORCH_VERSION").map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// `major.minor.patch` from cuDNN's integer version (9.x: major·10000 + minor·100 + patch).
pub fn cudnn_version(raw: i64) -> String {
    if raw >= 90000 {
        format!("{}.{}.{}", raw / 10000, raw / 100 % 100, raw % 100)
    } else {
        format!("{}.{}.{}", raw / 1000, raw / 100 % 10, raw % 100)
    }
}

/// `major.minor` from the CUDA runtime's integer version (major·1000 + minor·10).
pub fn cuda_version(raw: i64) -> String {
    format!("{}.{}", raw / 1000, raw % 1000 / 10)
}

/// The GPU's name: `nvidia-smi` when present, else the driver's /proc entry (which
/// lists GPUs by PCI bus, the order CUDA uses with `CUDA_DEVICE_ORDER=PCI_BUS_ID`).
pub fn gpu_name(index: usize) -> String {
    let smi = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=name",
            "--format=csv,noheader",
            &format!("--id={index}"),
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    if let Some(name) = smi {
        return name;
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir("/proc/driver/nvidia/gpus")
        .map(|dir| dir.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    entries
        .get(index)
        .and_then(|dir| std::fs::read_to_string(dir.join("information")).ok())
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix("Model:"))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| format!("CUDA device {index}"))
}

/// The GPU's total memory in bytes, from `nvidia-smi` (MiB), where it answers.
pub fn gpu_memory_bytes(index: usize) -> Option<u64> {
    let out = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=memory.total",
            "--format=csv,noheader,nounits",
            &format!("--id={index}"),
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    parse_mib(&String::from_utf8_lossy(&out.stdout))
}

/// `nvidia-smi`'s memory figure (MiB, no unit) in bytes.
pub(crate) fn parse_mib(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().map(|mib| mib << 20)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_decode() {
        assert_eq!(cudnn_version(91002), "9.10.2");
        assert_eq!(cudnn_version(8902), "8.9.2");
        assert_eq!(cuda_version(13000), "13.0");
        assert_eq!(cuda_version(12080), "12.8");
    }

    #[test]
    fn the_loaded_libtorch_has_a_version() {
        // Linking libtorch is what this crate's tests do; force it to load.
        let _ = tch::utils::get_num_threads();
        let v = libtorch_version();
        assert!(v.starts_with("2."), "{v}");
    }

    #[test]
    fn nvidia_smi_memory_is_read_in_mib() {
        assert_eq!(parse_mib("143771\n"), Some(143_771 << 20));
        assert_eq!(parse_mib("[N/A]"), None);
        assert_eq!(parse_mib(""), None);
    }
}
