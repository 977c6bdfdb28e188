//! This machine's run-to-run noise (`cnnbench noise`): how far the median of one fresh
//! process lands from another's, running the same configuration. On shared VMs it is
//! several percent (placement, caches and clocks of the host), far more than the passes
//! of one process differ, so it is what a comparison of one run a side must clear.

use crate::result::MachineInfo;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The cache document's format name.
pub const NOISE_FORMAT: &str = "cnnbench-noise";
/// The cache document's version.
pub const NOISE_VERSION: u32 = 1;
/// The fewest runs a noise figure rests on.
pub const MIN_NOISE_RUNS: usize = 3;

/// The run-to-run noise measured on a machine, as results record it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunNoise {
    /// The relative standard deviation of the runs' medians, in percent.
    pub pct: f64,
    /// How many fresh processes it rests on.
    pub runs: usize,
    /// What each of them ran, in words.
    pub configuration: String,
    pub measured_at: DateTime<Utc>,
}

impl RunNoise {
    /// The noise of these run medians (seconds), or why they cannot give one.
    pub fn of_medians(
        medians: &[f64],
        configuration: &str,
        measured_at: DateTime<Utc>,
    ) -> Result<RunNoise, String> {
        if medians.len() < MIN_NOISE_RUNS {
            return Err(format!(
                "{} run(s): the noise of runs needs at least {MIN_NOISE_RUNS}",
                medians.len()
            ));
        }
        if medians.iter().any(|m| !(m.is_finite() && *m > 0.0)) {
            return Err("a run's median is not a positive time".into());
        }
        let n = medians.len() as f64;
        let mean = medians.iter().sum::<f64>() / n;
        let var = medians.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let noise = RunNoise {
            pct: 100.0 * var.sqrt() / mean,
            runs: medians.len(),
            configuration: configuration.to_string(),
            measured_at,
        };
        noise.check()?;
        Ok(noise)
    }

    /// What a file must hold to be believed: a finite percentage above 0 and below 100
    /// on at least [`MIN_NOISE_RUNS`] runs. No machine runs a benchmark the same twice: a
    /// noise of 0 would judge every difference, however small, a change.
    pub fn check(&self) -> Result<(), String> {
        if !(self.pct.is_finite() && self.pct > 0.0 && self.pct < 100.0) {
            return Err(format!(
                "a run-to-run noise of {}% is not a measurement (runs of one configuration never agree exactly, nor differ by 100%)",
                crate::number(self.pct)
            ));
        }
        if self.runs < MIN_NOISE_RUNS {
            return Err(format!(
                "a run-to-run noise rests on at least {MIN_NOISE_RUNS} runs, not {}",
                self.runs
            ));
        }
        Ok(())
    }
}

/// `cnnbench noise`'s measurement as it is cached: the machine, the noise and each
/// run's median.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoiseDoc {
    pub format: String,
    pub version: u32,
    pub machine: MachineInfo,
    pub noise: RunNoise,
    /// Each run's median total time of a pass, in seconds, in the order they ran.
    pub run_medians_s: Vec<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_noise_is_the_relative_standard_deviation_of_the_run_medians() {
        let at = DateTime::<Utc>::UNIX_EPOCH;
        let n = RunNoise::of_medians(&[0.9, 1.0, 1.1], "x", at).unwrap();
        assert!((n.pct - 10.0).abs() < 1e-9, "{}", n.pct);
        assert_eq!(n.runs, 3);
        assert!(RunNoise::of_medians(&[1.0, 1.0], "x", at)
            .unwrap_err()
            .contains("at least 3"));
        assert!(RunNoise::of_medians(&[1.0, f64::INFINITY, 1.0], "x", at).is_err());
        assert!(RunNoise::of_medians(&[1e-300, 1e300, 1.0], "x", at).is_err());
        let mut bad = n.clone();
        bad.pct = f64::NAN;
        assert!(bad.check().is_err());
        bad.pct = 3.0;
        bad.runs = 1;
        assert!(bad.check().is_err());
    }
}
