//! A job: what one `cnnbench run` process does. The user's run builds one from its
//! command line; a data-parallel rank or a `-b max` probe is started with one on its
//! standard input (`cnnbench run --job -`), so that every setting reaches it as the
//! parent had it: the spec is serialised, never rebuilt as arguments.

use super::RunArgs;
use anyhow::{anyhow, Context, Result};
use cnnbench_results::RunSpec;
use serde::{Deserialize, Serialize};
use std::io::Read;
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

impl Delivery {
    /// The command line's delivery options.
    pub fn of(args: &RunArgs) -> Delivery {
        Delivery {
            output: args.output.clone(),
            label: args.label.clone(),
            json: args.json,
            quiet: args.quiet,
            force: args.force,
            require_clean: args.require_clean,
            retries: args.retries,
            round: None,
        }
    }
}

/// The job as a child reads it: one line of JSON.
pub fn encode(job: &Job) -> Result<String> {
    serde_json::to_string(job).context("encoding the job for a child process")
}

/// A job as encoded by [`encode`], checked like the user's own run.
pub fn decode(text: &str) -> Result<Job> {
    let job: Job = serde_json::from_str(text)
        .context("the job given on standard input is not one this cnnbench reads (--job is for the processes cnnbench starts itself)")?;
    job.spec.validate().map_err(|e| anyhow!(e))?;
    Ok(job)
}

/// The largest job read from standard input: a spec is a few kilobytes.
const MAX_JOB_BYTES: u64 = 1 << 20;

/// `--job -`: the job on standard input.
pub fn read(source: &str) -> Result<Job> {
    if source != "-" {
        return Err(anyhow!(
            "--job takes `-` (the job on standard input); it is for the processes cnnbench starts itself: to rerun a result use --again RESULT.json"
        ));
    }
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_JOB_BYTES)
        .read_to_string(&mut text)
        .context("reading the job from standard input")?;
    decode(&text)
}
