//! A job: what one `cnnbench run` process does. The user's run builds one from its
//! command line; a data-parallel rank or a `-b max` probe is started with one on its
//! standard input (`cnnbench run --job -`), so that every setting reaches it as the
//! parent had it: the spec is serialised, never rebuilt as arguments. Here, apart from
//! the command line, so that the fuzz harness reaches the decoder a child runs.

use anyhow::{anyhow, Context, Result};
use cnnbench_results::RunSpec;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One process's work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    pub spec: RunSpec,
    pub role: Role,
    pub delivery: Delivery,
}

/// Which part of a run this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// The run the user asked for, in this process.
    Main,
    /// One rank of a data-parallel job (started by `--nproc` or by a launcher).
    Rank,
    /// A `-b max` probe: one pass of one point, its memory printed as JSON, no result.
    Probe,
}

/// Where results go and what the terminal shows: not part of the measurement.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    pub output: PathBuf,
    pub label: Option<String>,
    pub json: bool,
    pub quiet: bool,
    pub force: bool,
    pub require_clean: bool,
    pub retries: usize,
    /// Which of `--repeat N`'s runs this process is (set by the run that starts it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<cnnbench_results::Round>,
}

/// The largest `--retries`: past it, the machine is not going to be quiet.
pub const MAX_RETRIES: usize = 20;

impl Delivery {
    /// Refuses what the command line would: more retries than [`MAX_RETRIES`].
    pub fn validate(&self) -> Result<()> {
        if self.retries > MAX_RETRIES {
            return Err(anyhow!(
                "--retries {} is more than {MAX_RETRIES}: a machine that is still busy after that many attempts needs the neighbour found (`top`, /proc/pressure/cpu), not more retries",
                self.retries
            ));
        }
        Ok(())
    }
}

/// The job as a child reads it: one line of JSON.
pub fn encode(job: &Job) -> Result<String> {
    serde_json::to_string(job).context("encoding the job for a child process")
}

/// A job as encoded by [`encode`], checked like the user's own run: its spec and its
/// delivery, whichever way they arrive.
pub fn decode(text: &str) -> Result<Job> {
    let job: Job = serde_json::from_str(text)
        .context("the job given on standard input is not one this cnnbench reads (--job is for the processes cnnbench starts itself)")?;
    job.spec.validate().map_err(|e| anyhow!(e))?;
    job.delivery.validate()?;
    Ok(job)
}

/// The largest job read from standard input: a spec is a few kilobytes.
pub const MAX_JOB_BYTES: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            spec: RunSpec::new(
                vec![cnnbench_results::ModelRef::Zoo {
                    name: "resnet18".into(),
                }],
                "burn-flex",
            ),
            role: Role::Rank,
            delivery: Delivery {
                output: "results".into(),
                label: None,
                json: false,
                quiet: true,
                force: false,
                require_clean: false,
                retries: 2,
                round: None,
            },
        }
    }

    #[test]
    fn a_job_reads_back_as_it_was_written() {
        let job = job();
        assert_eq!(decode(&encode(&job).unwrap()).unwrap(), job);
    }

    /// `--retries` is held to 20 on the command line; a job that a hand or a file made
    /// bypassed it. (Hostile input, round three.)
    #[test]
    fn a_job_is_held_to_the_command_lines_retries() {
        let mut job = job();
        job.delivery.retries = MAX_RETRIES + 1;
        let e = decode(&encode(&job).unwrap()).unwrap_err().to_string();
        assert!(e.contains("--retries 21 is more than 20"), "{e}");
    }
}
