//! Writing result files: `DIR/<machine-and-engine slug>/<model>_<mode>_b<batch>_<H>x<W>_<UTC time>.json`,
//! atomically (a temporary file, then a hard link that fails rather than overwrite) so a
//! reader never sees half a file and an earlier result is never replaced.

use crate::result::BenchResult;
use anyhow::{anyhow, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Text from a model or file name made safe to print on a terminal: control characters
/// (ESC, CR, newlines) are shown escaped instead of reaching the terminal.
pub fn terminal_safe(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Lower-case ASCII letters and digits, other runs collapsed to one '-'.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for ch in text.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        "unknown".into()
    } else {
        out
    }
}

/// The folder for results of one machine and engine, e.g. `amd-epyc-7b13_burn-flex`.
pub fn result_folder(result: &BenchResult) -> String {
    let device = if result.engine.device == "cpu" {
        &result.machine.cpu
    } else {
        &result.engine.device_name
    };
    let mut folder = format!("{}_{}", slug(device), slug(&result.engine.name));
    if let Some(label) = &result.label {
        folder = format!("{}_{folder}", slug(label));
    }
    folder
}

/// The file name of a result, without the folder.
pub fn result_file_name(result: &BenchResult) -> String {
    let [h, w] = result.config.image_size;
    format!(
        "{}_{}_b{}_{}x{}_{}.json",
        slug(&result.model.name),
        result.config.mode,
        result.config.batch_size,
        h,
        w,
        result.started_at.format("%Y%m%dT%H%M%SZ")
    )
}

/// Checks up front that results can be written under `dir`, so a long run does not fail
/// at its end.
pub fn check_writable(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the output folder {}", dir.display()))?;
    let probe = tempfile_in(dir)
        .with_context(|| format!("the output folder {} is not writable", dir.display()))?;
    drop(probe);
    Ok(())
}

struct TempFile {
    path: PathBuf,
    file: Option<std::fs::File>,
}

impl Drop for TempFile {
    fn drop(&mut self) {
        self.file.take();
        let _ = std::fs::remove_file(&self.path);
    }
}

fn tempfile_in(dir: &Path) -> std::io::Result<TempFile> {
    for attempt in 0..100u32 {
        let path = dir.join(format!(".cnnbench-{}-{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                return Ok(TempFile {
                    path,
                    file: Some(file),
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("could not create a temporary file"))
}

/// Writes the result under `dir` and returns its path. Never overwrites: if the name is
/// taken (two runs in the same second), `-2`, `-3`, … is appended.
pub fn write_result(dir: &Path, result: &BenchResult) -> Result<PathBuf> {
    let folder = dir.join(result_folder(result));
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let json = serde_json::to_string_pretty(result).context("cannot serialise the result")?;
    let mut temp =
        tempfile_in(&folder).with_context(|| format!("cannot write in {}", folder.display()))?;
    {
        let file = temp
            .file
            .as_mut()
            .ok_or_else(|| anyhow!("temporary file closed"))?;
        file.write_all(json.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
    }
    let name = result_file_name(result);
    let stem = name.trim_end_matches(".json").to_string();
    for n in 1..1000 {
        let target = if n == 1 {
            folder.join(&name)
        } else {
            folder.join(format!("{stem}-{n}.json"))
        };
        match std::fs::hard_link(&temp.path, &target) {
            Ok(()) => return Ok(target),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot write {}", target.display())),
        }
    }
    Err(anyhow!(
        "too many results named {name} in {}",
        folder.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_filename_safe() {
        assert_eq!(
            slug("AMD EPYC 7B13 64-Core Processor"),
            "amd-epyc-7b13-64-core-processor"
        );
        assert_eq!(slug("  NVIDIA H200 (SXM) "), "nvidia-h200-sxm");
        assert_eq!(slug("***"), "unknown");
    }
}
