//! Writing result files: `DIR/<machine-and-engine slug>/<model>_<mode>_b<batch>_<H>x<W>_<UTC time>.json`,
//! atomically (a temporary file, then a rename that fails rather than overwrite) so a
//! reader never sees half a file and an earlier result is never replaced.

use crate::result::BenchResult;
use anyhow::{anyhow, Context, Result};
use cnnbench_graph::WriteProblem;
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
    let probe = cnnbench_graph::PendingFile::beside(&dir.join("cnnbench-probe"))
        .map_err(|e| anyhow!("the output folder {} is not writable ({e})", dir.display()))?;
    drop(probe);
    Ok(())
}

/// Writes the result under `dir` and returns its path. Never overwrites: if the name is
/// taken (two runs in the same second), `-2`, `-3`, … is appended. When it cannot be
/// written there (a read-only or missing folder, a full disk), the measurement is kept in
/// [`rescue_folder`] and the error says where; when that fails too (`TMPDIR` unusable, the
/// same full disk), the whole result is printed on stderr between [`BEGIN_MARK`] and
/// [`END_MARK`] lines, so that a measurement is never lost.
pub fn write_result(dir: &Path, result: &BenchResult) -> Result<PathBuf> {
    let json = serde_json::to_string_pretty(result).context("cannot serialise the result")?;
    let name = result_file_name(result);
    let folder = dir.join(result_folder(result));
    let e = match write_numbered(&folder, &name, &json) {
        Ok(path) => return Ok(path),
        Err(e) => e,
    };
    let second = match rescue_folder().and_then(|rescue| write_numbered(&rescue, &name, &json)) {
        Ok(kept) => {
            return Err(e.context(format!(
                "the result could not be written under {}; the measurement is kept in {} (move it where it belongs)",
                dir.display(),
                kept.display()
            )))
        }
        Err(second) => second,
    };
    let block = format!("{BEGIN_MARK}{name}\n{json}\n{END_MARK}{name}\n");
    let fate = match print_on(&mut std::io::stderr().lock(), &block) {
        Ok(()) => format!(
            "the whole result is printed above on stderr, between the lines {BEGIN_MARK}{name} and {END_MARK}{name}: save what is between them as {name}"
        ),
        // Standard error full or closed (a pipe no one reads, /dev/full): standard
        // output is the last place the measurement can go.
        Err(third) => match print_on(&mut std::io::stdout().lock(), &block) {
            Ok(()) => format!(
                "printing it on stderr failed too ({third}); the whole result is printed on stdout, between the lines {BEGIN_MARK}{name} and {END_MARK}{name}: save what is between them as {name}"
            ),
            Err(fourth) => format!(
                "printing it on stderr ({third}) and on stdout ({fourth}) failed too: it is lost unless --json printed it"
            ),
        },
    };
    Err(e.context(format!(
        "the result could not be written under {}, nor kept in a rescue folder ({second:#}); {fate}",
        dir.display(),
    )))
}

/// The line before a result printed on stderr as the last resort (the file name follows).
pub const BEGIN_MARK: &str = "-----BEGIN CNNBENCH RESULT ";
/// The line after it.
pub const END_MARK: &str = "-----END CNNBENCH RESULT ";

/// The last resorts: the result on stderr, else on stdout, in one write, between marker
/// lines.
fn print_on(out: &mut dyn Write, block: &str) -> std::io::Result<()> {
    out.write_all(block.as_bytes()).and_then(|()| out.flush())
}

/// The name of the shared rescue folder in the temporary folder.
pub const RESCUE_NAME: &str = "cnnbench-rescued";

/// Where a result that could not be written where asked is kept:
/// `$TMPDIR/cnnbench-rescued` (`/tmp` without TMPDIR), made private (0700). If that name
/// is taken by something cnnbench must not write into (a link, which could lead anywhere,
/// a file, or a folder of another user or writable by others), a fresh private folder
/// `$TMPDIR/cnnbench-rescued-XXXXXX` is made and kept instead.
pub fn rescue_folder() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    let shared = base.join(RESCUE_NAME);
    if usable_rescue_folder(&shared) {
        return Ok(shared);
    }
    let mut builder = tempfile::Builder::new();
    let prefix = format!("{RESCUE_NAME}-");
    builder.prefix(&prefix);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let fresh = builder
        .tempdir_in(&base)
        .with_context(|| format!("cannot make a folder in {}", base.display()))?;
    Ok(fresh.keep())
}

/// Makes `path` a private folder, or says whether the one there is safe to write into:
/// a real folder (not a link), of this user, writable by nobody else. Never follows a link.
fn usable_rescue_folder(path: &Path) -> bool {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(path) {
        Ok(()) => return true,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return false,
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.file_type().is_dir() {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me || meta.mode() & 0o022 != 0 {
            return false;
        }
    }
    true
}

/// Writes `json` as a new file `name` in `folder` (made if missing), never replacing one:
/// `name`, then `stem-2.json`, … up to 999. Whole or not at all.
fn write_numbered(folder: &Path, name: &str, json: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(folder)
        .with_context(|| format!("cannot create the folder {}", folder.display()))?;
    let first = folder.join(name);
    let mut pending = cnnbench_graph::PendingFile::beside(&first)?;
    pending.write_with(|w| {
        w.write_all(json.as_bytes())?;
        w.write_all(b"\n")
    })?;
    let stem = name.trim_end_matches(".json").to_string();
    let numbered = (2..1000).map(|n| folder.join(format!("{stem}-{n}.json")));
    pending
        .persist_first_free(std::iter::once(first).chain(numbered))
        .map_err(|e| match &e.problem {
            WriteProblem::Exists => {
                anyhow!("too many results named {name} in {}", folder.display())
            }
            WriteProblem::Folder { .. } | WriteProblem::Write(_) | WriteProblem::Persist(_) => {
                anyhow!(e)
            }
        })
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
