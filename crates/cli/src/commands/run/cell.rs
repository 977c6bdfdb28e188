//! `cnnbench run --plan MATRIX [--cell I]`: one cell of a matrix, as every task of the
//! job `cnnbench plan` writes runs it. The cell is a run spec (`Matrix::spec`); the
//! options the matrix sets are refused beside it, the others (the device, say) apply.

use super::job::Delivery;
use super::spec::{self, Given};
use super::RunArgs;
use anyhow::{anyhow, Context, Result};
use cnnbench_plan::finished_result;
use std::path::Path;
use std::process::ExitCode;

/// The cell to run: `--cell`, else the array index Slurm or Kubernetes gives the task.
fn cell_index(given: Option<usize>) -> Result<usize> {
    if let Some(i) = given {
        return Ok(i);
    }
    for var in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] {
        if let Ok(value) = std::env::var(var) {
            return value
                .trim()
                .parse()
                .map_err(|_| anyhow!("{var} is \"{value}\", not a cell number"));
        }
    }
    Err(anyhow!(
        "which cell? give --cell I (`cnnbench plan MATRIX --list` numbers them); in a Slurm array or a Kubernetes Indexed Job the task's index is read from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX"
    ))
}

/// One cell, skipped when the output folder already holds its result (unless
/// `--rerun`).
pub fn run_cell(
    matrix_path: &Path,
    args: &RunArgs,
    given: &Given,
    mut delivery: Delivery,
) -> Result<ExitCode> {
    let matrix = crate::commands::plan::load(matrix_path)?;
    let index = cell_index(args.cell)?;
    let cell = matrix
        .cell(index)
        .with_context(|| format!("{}", matrix_path.display()))?;
    let mut spec = matrix.spec(cell);
    if let Some(refused) = spec::apply_given(&mut spec, args, given, |o| o.matrix_sets)? {
        return Err(anyhow!(
            "{} cannot be used with --plan: the matrix file sets it for every cell (edit {} instead)",
            refused.flag,
            matrix_path.display()
        ));
    }
    // The heap policy is this process's: a matrix that names one is run under it (the
    // jobs `cnnbench plan` writes start cnnbench with it), else under the host's own.
    let now = spec::current_allocator();
    if let Some(policy) = &matrix.allocator {
        if *policy != now {
            return Err(anyhow!(
                "{} runs its cells under the heap policy `{policy}` and this process has `{now}`: the policy is set when cnnbench starts, so give it first: cnnbench --allocator {policy} run --plan {} (the jobs `cnnbench plan` writes do)",
                matrix_path.display(),
                matrix_path.display()
            ));
        }
    }
    spec.allocator = now;
    let n = matrix.cells.len();
    if !args.rerun {
        if let Some(path) =
            finished_result(&delivery.output, index, &spec, delivery.label.as_deref())?
        {
            errln!(
                "cell {index} of {n} ({}) already has a result: {}; skipped (--rerun runs it again)",
                cell.describe(),
                path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Results from many hosts must stay apart in the report: label them with the host.
    delivery.label = delivery.label.or_else(cnnbench_host::host_name);
    if !delivery.quiet {
        errln!("cell {index} of {n}: {}", cell.describe());
    }
    super::start(spec, delivery)
}
