//! `--nproc N`: the run as N ranks on this machine, each this same program given the
//! job on its standard input, with torchrun's variables and a free port.

use super::job::{self, Delivery, Job, Role};
use crate::commands::{distributed, engines};
use anyhow::{anyhow, Context, Result};
use cnnbench_results::RunSpec;
use std::process::ExitCode;

/// The job each rank receives: the run's spec, with each rank's share of the cores when
/// no thread count was given (N ranks of all-core thread pools would fight over the
/// cores; torchrun sets OMP_NUM_THREADS=1 for the same reason).
pub fn rank_job(mut spec: RunSpec, delivery: Delivery, nproc: usize) -> Job {
    if spec.threads.is_none() {
        spec.threads = Some((cnnbench_host::logical_cores() / nproc).max(1));
    }
    Job {
        spec,
        role: Role::Rank,
        delivery,
    }
}

pub fn launch(spec: RunSpec, delivery: Delivery, nproc: usize) -> Result<ExitCode> {
    // Refused once here rather than by each rank.
    let provider = engines::data_parallel_provider(&spec.engine)?;
    let Some(data_parallel) = provider.data_parallel() else {
        return Err(anyhow!(
            "engine {} cannot train across processes",
            spec.engine
        ));
    };
    if let Some(why) = data_parallel.refusal() {
        return Err(anyhow!(why));
    }
    let options = engines::options(&spec.engine_options, spec.threads, spec.precision);
    provider
        .availability(&options)
        .map_err(|why| anyhow!("engine {} cannot run: {why}", spec.engine))?;
    if let Some(gpus) = data_parallel.devices() {
        distributed::check_gpus_for_ranks(nproc, spec.engine_options.device, gpus)?;
    }
    cnnbench_bench::output::check_writable(&delivery.output)?;
    let program =
        std::env::current_exe().context("finding the cnnbench binary to start the ranks")?;
    let share_given = spec.threads.is_some();
    let quiet = delivery.quiet;
    let job = rank_job(spec, delivery, nproc);
    if !share_given && !quiet {
        errln!(
            "starting {nproc} ranks with --threads {} each (their share of this machine's cores; give --threads to choose)",
            job.spec.threads.unwrap_or(1)
        );
    }
    let payload = job::encode(&job)?;
    let child_args = ["run".to_string(), "--job".into(), "-".into()];
    let cancel = crate::commands::common::stop_on_ctrl_c();
    let port = distributed::free_port()?;
    match distributed::launch_local(
        &program,
        &child_args,
        payload.as_bytes(),
        nproc,
        port,
        &cancel,
    )? {
        distributed::Outcome::Success => Ok(ExitCode::SUCCESS),
        distributed::Outcome::Interrupted => {
            errln!("interrupted: stopped the {nproc} ranks; finished results are kept");
            Ok(ExitCode::from(130))
        }
    }
}
