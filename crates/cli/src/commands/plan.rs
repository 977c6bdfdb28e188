//! `cnnbench plan`: a matrix file's cells, and the Slurm, Kubernetes or shell job that
//! runs them (each task runs `cnnbench run --plan MATRIX --cell I`: see `run/cell.rs`).
//! The matrix itself lives in `cnnbench-plan`.

use super::common::{align_right, new_table};
use super::engines;
use anyhow::{anyhow, Context, Result};
use cnnbench_plan::{
    finished_result, k8s_job, shell_script, slurm_script, JobCommand, K8sOptions, Matrix,
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
pub fn load(path: &Path) -> Result<Matrix> {
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
        let spec = matrix.spec(cell);
        if let Some((key, _)) = engines::program_settings(&spec).first() {
            return Err(anyhow!(
                "{}: `engine_settings.{}`: `{key}` names a program the engine runs, and a matrix file is data that never names one; give it on each host's command line instead (`cnnbench run --plan MATRIX --engine-setting {key}=PATH`, or the engine's own flag)",
                path.display(),
                cell.engine
            ));
        }
        // What the engine refuses (its own settings, channels-last), now rather than in
        // the job that runs the cell.
        engines::check_spec(&spec).map_err(|e| {
            anyhow!(
                "{}: cell {} ({}): {e:#}",
                path.display(),
                cell.index,
                cell.describe()
            )
        })?;
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
    out!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The numbered cells, with the result each already has under `output`; the engine's
/// own settings, the run settings a matrix gives as lists and its scenario, when it
/// has any.
fn list(matrix: &Matrix, output: &Path) -> Result<ExitCode> {
    let with_sizes = matrix.cells.iter().any(|c| c.image_size.is_some());
    let with_settings = matrix
        .cells
        .iter()
        .any(|c| !c.settings.is_empty() || !c.axis_values().is_empty());
    let mut headers = vec!["Cell", "Model"];
    if with_sizes {
        headers.push("Image");
    }
    headers.extend(["Engine", "Mode", "Batch", "Precision"]);
    if with_settings {
        headers.push("Settings");
    }
    headers.push("Result");
    let mut table = new_table(&headers);
    let mut done = 0;
    for c in &matrix.cells {
        let found = finished_result(output, c.index, &matrix.spec(c), None)?;
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
        ]);
        if with_settings {
            let own = c.settings.iter().map(|(k, v)| format!("{k}={v}"));
            let run = c
                .axis_values()
                .into_iter()
                .map(|(key, value)| format!("{key}={value}"));
            row.push(own.chain(run).collect::<Vec<_>>().join(" "));
        }
        row.push(found.map_or("–".into(), |p| {
            p.strip_prefix(output).unwrap_or(&p).display().to_string()
        }));
        table.add_row(row);
    }
    let batch_column = headers.iter().position(|h| *h == "Batch").unwrap_or(0);
    align_right(&mut table, &[0, batch_column]);
    outln!("{table}");
    let n = matrix.cells.len();
    outln!(
        "{n} cells, {done} with a result in {}; each runs as `cnnbench run --plan MATRIX --cell I` (I from 0 to {})",
        output.display(),
        n - 1
    );
    Ok(ExitCode::SUCCESS)
}
