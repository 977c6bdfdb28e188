//! A benchmark matrix: what to measure across a fleet, said once. The `cnnbench-matrix`
//! TOML file (version 1) lists models × engines × batch sizes × image sizes × modes ×
//! precisions plus the run settings; its cells are the cross product less the `exclude`
//! entries, numbered from 0 in a fixed order so that a scheduler's array index names
//! one cell. This crate reads and checks the file, tells which cells already have a
//! result, and writes the jobs that run the cells: a Slurm job array, a Kubernetes
//! Indexed Job, or a shell script; and what one `run` process does, a [`job::Job`]. It
//! knows nothing of the command line; the CLI turns a cell into a `run`.

pub mod finished;
pub mod job;
pub mod matrix;
pub mod scripts;

pub use finished::{finished_result, FinishedError};
pub use matrix::{
    Cell, CellKeys, ImageSize, KeyValue, Matrix, MatrixError, MATRIX_FORMAT, MATRIX_VERSION,
};
pub use scripts::{
    k8s_job, shell_script, slurm_script, JobCommand, K8sOptions, ScriptError, SlurmOptions,
};
