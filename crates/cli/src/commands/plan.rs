//! `cnnbench plan`: a matrix file's cells, and the Slurm, Kubernetes or shell job that
//! runs them; `cnnbench run --plan MATRIX --cell I`: one cell, as every task of that job
//! runs it. The matrix itself lives in `cnnbench-plan`; this file only wires it to `run`.

use super::common::{align_right, new_table};
use super::engines;
use super::run::RunArgs;
use anyhow::{anyhow, Context, Result};
use clap::Parser;
use cnnbench_plan::{
    finished_result, k8s_job, shell_script, slurm_script, Cell, JobCommand, K8sOptions, Matrix,
    SlurmOptions,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["list", "slurm", "k8s", "shell"])))]
pub struct PlanArgs {
    /// The matrix file (TOML, `format = "cnnbench-matrix"`).
    pub matrix: PathBuf,
    /// Print the numbered cells (and the result each already has in --output).
    #[arg(long)]
    pub list: bool,
    /// Print an sbatch script: a Slurm job array with one task per cell.
    #[arg(long)]
    pub slurm: bool,
    /// Print a Kubernetes Indexed Job (and the ConfigMap holding the matrix).
    #[arg(long)]
    pub k8s: bool,
    /// Print a bash script that runs the cells one after the other on this machine.
    #[arg(long)]
    pub shell: bool,
    /// The results folder as the jobs see it (default: ./results made absolute; /results
    /// in the Kubernetes pods, where the volume claim is mounted).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// A label for every result (default: each result is labelled with its host's name).
    #[arg(long)]
    pub label: Option<String>,
    /// The cnnbench program the jobs run (default: this binary's path; `cnnbench` in
    /// the Kubernetes image).
    #[arg(long, value_name = "PROGRAM")]
    pub cnnbench: Option<String>,
    /// The job's name.
    #[arg(long, value_name = "NAME", default_value = "cnnbench")]
    pub job_name: String,
    /// At most this many cells at once (Slurm `--array=…%K`, Kubernetes `parallelism`).
    #[arg(long, value_name = "K")]
    pub max_parallel: Option<usize>,
    /// Slurm partition.
    #[arg(long, value_name = "NAME", requires = "slurm")]
    pub partition: Option<String>,
    /// Slurm generic resources per task, e.g. gpu:1.
    #[arg(long, requires = "slurm")]
    pub gres: Option<String>,
    /// Slurm time limit per task, e.g. 1:00:00.
    #[arg(long, requires = "slurm")]
    pub time: Option<String>,
    /// Slurm CPUs per task.
    #[arg(long, value_name = "N", requires = "slurm")]
    pub cpus_per_task: Option<usize>,
    /// Slurm memory per node, e.g. 32G.
    #[arg(long, requires = "slurm")]
    pub mem: Option<String>,
    /// Slurm account.
    #[arg(long, value_name = "NAME", requires = "slurm")]
    pub account: Option<String>,
    /// Any other sbatch option, as written (e.g. --sbatch=--qos=high); may be repeated.
    #[arg(
        long,
        value_name = "OPTION",
        requires = "slurm",
        allow_hyphen_values = true
    )]
    pub sbatch: Vec<String>,
    /// Kubernetes: the container image with cnnbench in it.
    #[arg(long, requires = "k8s", required_if_eq("k8s", "true"))]
    pub image: Option<String>,
    /// Kubernetes: the PersistentVolumeClaim the results are written to.
    #[arg(
        long,
        value_name = "CLAIM",
        requires = "k8s",
        required_if_eq("k8s", "true")
    )]
    pub volume_claim: Option<String>,
    /// Kubernetes: CPU request and limit per pod, e.g. 8.
    #[arg(long, requires = "k8s")]
    pub cpus: Option<String>,
    /// Kubernetes: memory request and limit per pod, e.g. 16Gi.
    #[arg(long, requires = "k8s")]
    pub memory: Option<String>,
    /// Kubernetes: GPUs per pod (nvidia.com/gpu).
    #[arg(long, value_name = "N", requires = "k8s")]
    pub gpus: Option<usize>,
}

/// Reads a matrix and checks, beyond the file itself, that each engine can run its
/// cells' modes and precisions.
fn load(path: &Path) -> Result<Matrix> {
    let statuses = engines::statuses();
    let known: Vec<&str> = statuses.iter().map(|s| s.name).collect();
    let matrix = Matrix::load(path, &known).with_context(|| format!("{}", path.display()))?;
    for cell in &matrix.cells {
        if let Some(status) = statuses.iter().find(|s| s.name == cell.engine) {
            status
                .capabilities
                .check(&cell.engine, cell.mode, cell.precision)
                .map_err(|e| {
                    anyhow!(
                        "{}: cell {} ({}): {e}; drop it with an [[exclude]] entry",
                        path.display(),
                        cell.index,
                        cell.describe()
                    )
                })?;
        }
    }
    Ok(matrix)
}

/// A path made absolute against the current folder, so that every node reads the same.
fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot make {} absolute", path.display()))
}

pub fn run(args: PlanArgs) -> Result<ExitCode> {
    let matrix = load(&args.matrix)?;
    if args.list {
        let output = args.output.clone().unwrap_or_else(|| "results".into());
        return list(&matrix, &output);
    }
    let matrix_name = args.matrix.display().to_string();
    let program = match &args.cnnbench {
        Some(p) => p.clone(),
        None if args.k8s => "cnnbench".into(),
        None => std::env::current_exe()
            .context("cannot find this program's path; give it with --cnnbench")?
            .display()
            .to_string(),
    };
    let output = match (&args.output, args.k8s) {
        (Some(o), true) => o.display().to_string(),
        (None, true) => "/results".into(),
        (o, false) => absolute(o.as_deref().unwrap_or(Path::new("results")))?
            .display()
            .to_string(),
    };
    let job = JobCommand {
        program,
        output,
        label: args.label.clone(),
        matrix_name,
    };
    let text = if args.slurm {
        slurm_script(
            &matrix,
            &job,
            &SlurmOptions {
                job_name: args.job_name.clone(),
                max_parallel: args.max_parallel,
                partition: args.partition.clone(),
                gres: args.gres.clone(),
                time: args.time.clone(),
                cpus_per_task: args.cpus_per_task,
                mem: args.mem.clone(),
                account: args.account.clone(),
                extra: args.sbatch.clone(),
            },
        )?
    } else if args.k8s {
        k8s_job(
            &matrix,
            &job,
            &K8sOptions {
                job_name: args.job_name.clone(),
                image: args.image.clone().unwrap_or_default(),
                volume_claim: args.volume_claim.clone().unwrap_or_default(),
                max_parallel: args.max_parallel,
                cpus: args.cpus.clone(),
                memory: args.memory.clone(),
                gpus: args.gpus,
            },
        )?
    } else {
        shell_script(&matrix, &job)?
    };
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The numbered cells, with the result each already has under `output`.
fn list(matrix: &Matrix, output: &Path) -> Result<ExitCode> {
    let with_sizes = matrix.cells.iter().any(|c| c.image_size.is_some());
    let mut headers = vec!["Cell", "Model"];
    if with_sizes {
        headers.push("Image");
    }
    headers.extend(["Engine", "Mode", "Batch", "Precision", "Result"]);
    let mut table = new_table(&headers);
    let mut done = 0;
    for c in &matrix.cells {
        let found = finished_result(output, c, &matrix.settings, None)?;
        done += usize::from(found.is_some());
        let mut row = vec![c.index.to_string(), c.model.clone()];
        if let Some(s) = c.image_size {
            row.push(s.to_string());
        } else if with_sizes {
            row.push("own".into());
        }
        row.extend([
            c.engine.clone(),
            c.mode.to_string(),
            c.batch_size.to_string(),
            c.precision.as_str().into(),
            found.map_or("–".into(), |p| {
                p.strip_prefix(output).unwrap_or(&p).display().to_string()
            }),
        ]);
        table.add_row(row);
    }
    let batch_column = headers.len() - 3;
    align_right(&mut table, &[0, batch_column]);
    println!("{table}");
    let n = matrix.cells.len();
    println!(
        "{n} cells, {done} with a result in {}; each runs as `cnnbench run --plan MATRIX --cell I` (I from 0 to {})",
        output.display(),
        n - 1
    );
    Ok(ExitCode::SUCCESS)
}

/// `run --plan` parses the cell's settings with `run`'s own options, so a cell runs
/// exactly as the same `cnnbench run` command line would.
#[derive(Parser)]
#[command(name = "cnnbench run")]
struct RunCommand {
    #[command(flatten)]
    run: RunArgs,
}

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

/// The `run` command line of a cell.
fn cell_command(cell: &Cell, matrix: &Matrix, args: &RunArgs, label: Option<&str>) -> Vec<String> {
    let s = &matrix.settings;
    let mut a: Vec<String> = vec![
        "cnnbench run".into(),
        cell.model.clone(),
        "--engine".into(),
        cell.engine.clone(),
        "--batch-size".into(),
        cell.batch_size.to_string(),
        "--mode".into(),
        cell.mode.to_string(),
        "--precision".into(),
        cell.precision.as_str().into(),
        "--passes".into(),
        s.passes.to_string(),
        "--warmup".into(),
        s.warmup.to_string(),
        "--seed".into(),
        s.seed.to_string(),
        "--output".into(),
        args.output.display().to_string(),
    ];
    if let Some(size) = cell.image_size {
        a.extend(["--image-size".into(), size.to_string()]);
    }
    if let Some(t) = s.threads {
        a.extend(["--threads".into(), t.to_string()]);
    }
    for (flag, value) in [
        ("--min-time", s.min_time),
        ("--max-time", s.max_time),
        ("--target-ci", s.target_ci),
        ("--warmup-time", s.warmup_time),
    ] {
        if let Some(v) = value {
            a.extend([flag.into(), v.to_string()]);
        }
    }
    for (flag, on) in [
        ("--cudnn-benchmark", s.cudnn_benchmark),
        ("--tf32", s.tf32),
        ("--channels-last", s.channels_last),
        ("--quiet", args.quiet),
        ("--json", args.json),
        ("--force", args.force),
        ("--require-clean", args.require_clean),
    ] {
        if on {
            a.push(flag.into());
        }
    }
    if args.retries > 0 {
        a.extend(["--retries".into(), args.retries.to_string()]);
    }
    if let Some(l) = label {
        a.extend(["--label".into(), l.into()]);
    }
    a
}

/// `cnnbench run --plan MATRIX [--cell I]`: one cell, skipped when the output folder
/// already holds its result (unless `--rerun`).
pub fn run_cell(matrix_path: &Path, args: RunArgs) -> Result<ExitCode> {
    let matrix = load(matrix_path)?;
    let index = cell_index(args.cell)?;
    let cell = matrix
        .cell(index)
        .with_context(|| format!("{}", matrix_path.display()))?;
    let n = matrix.cells.len();
    if !args.rerun {
        if let Some(path) =
            finished_result(&args.output, cell, &matrix.settings, args.label.as_deref())?
        {
            eprintln!(
                "cell {index} of {n} ({}) already has a result: {}; skipped (--rerun runs it again)",
                cell.describe(),
                path.display()
            );
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Results from many hosts must stay apart in the report: label them with the host.
    let label = args.label.clone().or_else(cnnbench_host::host_name);
    if !args.quiet {
        eprintln!("cell {index} of {n}: {}", cell.describe());
    }
    let command = cell_command(cell, &matrix, &args, label.as_deref());
    let parsed = RunCommand::try_parse_from(&command).map_err(|e| {
        anyhow!(
            "cell {index} does not make a valid run ({}): {e}",
            command.join(" ")
        )
    })?;
    super::run::run(parsed.run)
}
