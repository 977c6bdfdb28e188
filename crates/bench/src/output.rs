//! Writing result files: `DIR/<machine-and-engine slug>/<model>_<mode>_b<batch>_<H>x<W>_<UTC time>.json`,
//! atomically (a temporary file, then a hard link that fails rather than overwrite) so a
//! reader never sees half a file and an earlier result is never replaced.

use crate::result::BenchResult;
use anyhow::{anyhow, Context, Result};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Text from a model or file name made safe to print on a terminal.
pub use cnnbench_results::printable as terminal_safe;

/// The longest slug: a file name stays far below the 255 bytes file systems allow, with
/// the mode, batch, size and time around the model's slug.
pub const MAX_SLUG_LEN: usize = 64;

/// Lower-case ASCII letters and digits, other runs collapsed to one '-'; a longer one is
/// cut to [`MAX_SLUG_LEN`] and ends in 8 hex digits of the full text's SHA-256, so that
/// two long names that start alike stay apart.
pub fn slug(text: &str) -> String {
    let full = full_slug(text);
    if full.len() <= MAX_SLUG_LEN {
        return full;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = full[..MAX_SLUG_LEN - tag.len() - 1].trim_end_matches('-');
    format!("{keep}-{tag}")
}

fn full_slug(text: &str) -> String {
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
/// taken (two runs in the same second), `-2`, `-3`, … is appended. When it cannot be
/// written there (a read-only or missing folder, a full disk), the measurement is kept in
/// [`rescue_folder`] and the error says where.
pub fn write_result(dir: &Path, result: &BenchResult) -> Result<PathBuf> {
    let json = serde_json::to_string_pretty(result).context("cannot serialise the result")?;
    let name = result_file_name(result);
    let folder = dir.join(result_folder(result));
    match write_new(&folder, &name, &json) {
        Ok(path) => Ok(path),
        Err(e) => {
            let rescue = rescue_folder();
            match write_new(&rescue, &name, &json) {
                Ok(kept) => Err(e.context(format!(
                    "the result could not be written under {}; the measurement is kept in {} (move it where it belongs)",
                    dir.display(),
                    kept.display()
                ))),
                Err(second) => Err(e.context(format!(
                    "the result could not be written under {}, nor kept in {} ({second:#}); it is printed above with --json only",
                    dir.display(),
                    rescue.display()
                ))),
            }
        }
    }
}

/// Where a result that could not be written where asked is kept:
/// `$TMPDIR/cnnbench-rescued` (`/tmp` without TMPDIR).
pub fn rescue_folder() -> PathBuf {
    std::env::temp_dir().join("cnnbench-rescued")
}

/// Writes `json` as a new file `name` in `folder` (made if missing), never replacing one.
fn write_new(folder: &Path, name: &str, json: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create the folder {}", folder.display()))?;
    let mut temp =
        tempfile_in(folder).with_context(|| format!("cannot write in {}", folder.display()))?;
    {
        let file = temp
            .file
            .as_mut()
            .ok_or_else(|| anyhow!("temporary file closed"))?;
        file.write_all(json.as_bytes())
            .and_then(|()| file.write_all(b"\n"))
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {}", temp.path.display()))?;
    }
    let stem = name.trim_end_matches(".json").to_string();
    for n in 1..1000 {
        let target = if n == 1 {
            folder.join(name)
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

    #[test]
    fn long_names_are_cut_and_told_apart_by_a_hash() {
        let a = format!("{}a", "m".repeat(300));
        let b = format!("{}b", "m".repeat(300));
        let (sa, sb) = (slug(&a), slug(&b));
        assert!(sa.len() <= MAX_SLUG_LEN && sb.len() <= MAX_SLUG_LEN, "{sa}");
        assert_ne!(sa, sb);
        assert_eq!(sa, slug(&a), "stable");
        assert!(sa.starts_with("mmmm"), "{sa}");
        // Short names are as before.
        assert_eq!(slug(&"x".repeat(MAX_SLUG_LEN)), "x".repeat(MAX_SLUG_LEN));
    }
}
