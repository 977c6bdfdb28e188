//! The cache of this machine's run-to-run noise (`cnnbench noise`), beside `peak`'s: one
//! file per CPU model and core count, read by `run` (recorded in every result) and by
//! `compare` through the results.

use anyhow::{Context, Result};
use cnnbench_results::noise::{NoiseDoc, RunNoise, NOISE_FORMAT, NOISE_VERSION};
use cnnbench_results::MachineInfo;
use std::path::{Path, PathBuf};

/// The largest cache file read: a real one is well under a kilobyte.
const MAX_NOISE_FILE_BYTES: u64 = 64 << 10;

/// `$XDG_CACHE_HOME/cnnbench/noise` (else `~/.cache/cnnbench/noise`).
pub fn default_cache_dir() -> Option<PathBuf> {
    crate::peak::default_cache_dir().and_then(|peak| peak.parent().map(|base| base.join("noise")))
}

/// The cache file of this kind of machine: its CPU model and logical core count.
pub fn cache_file(dir: &Path, machine: &MachineInfo) -> PathBuf {
    dir.join(format!(
        "{}_c{}.json",
        crate::output::slug(&machine.cpu),
        machine.cores_logical
    ))
}

/// Writes the measurement (replacing the machine's previous one).
pub fn save(dir: &Path, doc: &NoiseDoc) -> Result<PathBuf> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the noise cache folder {}", dir.display()))?;
    let path = cache_file(dir, &doc.machine);
    let text = serde_json::to_string_pretty(doc)?;
    // Whole or not at all: a full disk leaves the previous measurement, not a `.tmp` file.
    cnnbench_graph::write_replacing(&path, |w| w.write_all(text.as_bytes()))?;
    Ok(path)
}

/// The noise cached for this machine, if any: a file that is not a regular one, is too
/// large, does not parse, was measured on another CPU or core count, or holds an
/// implausible figure counts as none.
pub fn load(dir: &Path, machine: &MachineInfo) -> Option<RunNoise> {
    let text = cnnbench_graph::read_bounded_to_string(
        &cache_file(dir, machine),
        MAX_NOISE_FILE_BYTES,
        "noise files",
    )
    .ok()?;
    let doc: NoiseDoc = serde_json::from_str(&text).ok()?;
    let same_machine =
        doc.machine.cpu == machine.cpu && doc.machine.cores_logical == machine.cores_logical;
    (doc.format == NOISE_FORMAT
        && doc.version == NOISE_VERSION
        && same_machine
        && doc.noise.check().is_ok())
    .then_some(doc.noise)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_saved_noise_loads_for_the_same_machine_only() {
        let dir = tempfile::tempdir().unwrap();
        let machine = crate::env::detect_machine();
        let noise =
            RunNoise::of_medians(&[1.0, 1.1, 0.9], "burn-flex resnet18", chrono::Utc::now())
                .unwrap();
        let doc = NoiseDoc {
            format: NOISE_FORMAT.into(),
            version: NOISE_VERSION,
            machine: machine.clone(),
            noise: noise.clone(),
            run_medians_s: vec![1.0, 1.1, 0.9],
        };
        assert_eq!(load(dir.path(), &machine), None);
        let path = save(dir.path(), &doc).unwrap();
        assert_eq!(load(dir.path(), &machine), Some(noise));
        let mut other = machine.clone();
        other.cores_logical += 1;
        assert_eq!(load(dir.path(), &other), None);
        // A figure no measurement gives is not believed; a FIFO is not read.
        let mut bad = doc.clone();
        bad.noise.pct = 1e9;
        std::fs::write(&path, serde_json::to_string(&bad).unwrap()).unwrap();
        assert_eq!(load(dir.path(), &machine), None);
        // Round four (#63): a noise of 0% judged every difference a change.
        bad.noise.pct = 0.0;
        std::fs::write(&path, serde_json::to_string(&bad).unwrap()).unwrap();
        assert_eq!(load(dir.path(), &machine), None);
        assert!(RunNoise::of_medians(&[1.0, 1.0, 1.0], "x", chrono::Utc::now()).is_err());
        std::fs::remove_file(&path).unwrap();
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo (coreutils) failed");
        assert_eq!(load(dir.path(), &machine), None);
    }

    /// A save that cannot be put in place (here a folder holds the name; a full disk
    /// alike) left a `.tmp-PID` file beside the cache; now it leaves nothing and names the
    /// file.
    #[test]
    fn a_failed_save_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let machine = crate::env::detect_machine();
        let doc = NoiseDoc {
            format: NOISE_FORMAT.into(),
            version: NOISE_VERSION,
            machine: machine.clone(),
            noise: RunNoise::of_medians(&[1.0, 1.1, 0.9], "x", chrono::Utc::now()).unwrap(),
            run_medians_s: vec![1.0, 1.1, 0.9],
        };
        let path = cache_file(dir.path(), &machine);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("keep"), "").unwrap();
        let e = save(dir.path(), &doc).unwrap_err();
        assert!(e.to_string().contains(&path.display().to_string()), "{e}");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
