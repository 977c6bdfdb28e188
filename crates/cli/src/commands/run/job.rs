//! The command line's side of a [`Job`] (`cnnbench_plan::job`): its delivery options,
//! and `--job -`, a job on standard input.

use super::RunArgs;
use anyhow::{anyhow, Context, Result};
pub use cnnbench_plan::job::{decode, encode, Delivery, Job, Role, MAX_JOB_BYTES};
use std::io::Read;

/// The command line's delivery options.
pub fn delivery_of(args: &RunArgs) -> Delivery {
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
