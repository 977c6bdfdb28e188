//! `cnnbench`: benchmark convolutional networks. This binary only wires the crates
//! together: the zoo and model files give Graphs, engines run them, the harness times
//! them, the report reads the results.

/// `println!` that never panics: see `commands::out`.
#[macro_export]
macro_rules! outln {
    () => {
        $crate::commands::out::print(format_args!(""), true)
    };
    ($($arg:tt)*) => {
        $crate::commands::out::print(format_args!($($arg)*), true)
    };
}

/// `eprintln!` that never panics and prints inert text: see `commands::out`.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::commands::out::print_on_stderr(format_args!($($arg)*))
    };
}

/// `print!` that never panics: see `commands::out`.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::commands::out::print(format_args!($($arg)*), false)
    };
}

mod commands;

use clap::{CommandFactory, FromArgMatches, Subcommand};
use std::process::ExitCode;

#[derive(clap::Parser)]
#[command(name = "cnnbench", version, about = "Benchmark convolutional networks: forward, backward and training-step times on CPUs and GPUs", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Heap policy: `keep` freed memory for the next pass, or the C library's `system`
    /// defaults (fresh pages for large tensors). Recorded in every result
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "POLICY",
        default_value = "keep",
        env = "CNNBENCH_ALLOCATOR",
        hide_env_values = true
    )]
    allocator: AllocatorChoice,
}

/// `--allocator`'s values (`cnnbench_host::allocator::HeapPolicy` on the command line).
#[derive(Clone, Copy, clap::ValueEnum)]
enum AllocatorChoice {
    Keep,
    System,
}

#[derive(Subcommand)]
enum Command {
    /// List the model zoo, or show one model's per-layer summary.
    Models(commands::models::ModelsArgs),
    /// Benchmark models on an engine; prints a table and writes one result JSON per model.
    // Boxed: the run's flags are far larger than any other command's.
    Run(Box<commands::run::RunArgs>),
    /// Tables, speed-ups, CSV/JSON/HTML and charts from result files (ours and the original suite's).
    Report(commands::report::ReportArgs),
    /// Compare two sets of results: ratios with confidence intervals and verdicts.
    Compare(commands::compare::CompareArgs),
    /// Convert a model file (ONNX, Caffe prototxt, model JSON) into a cnnbench model JSON, or any model into ONNX.
    Convert(commands::convert::ConvertArgs),
    /// Run one network on two engines with the same weights and inputs; compare outputs and gradients.
    Verify(commands::verify::VerifyArgs),
    /// Which stack and precision to deploy a model on, here: every engine and precision ranked, with its accuracy cost.
    Choose(commands::choose::ChooseArgs),
    /// List the engines this build can run on this machine, and why not the others.
    Engines,
    /// Per-node forward/backward times: share of time against share of MACs, % of peak.
    Profile(commands::profile::ProfileArgs),
    /// This machine's measured matrix-multiply rate and memory bandwidth on an engine.
    Peak(commands::peak::PeakArgs),
    /// This machine's run-to-run noise: one small configuration in fresh processes; cached, recorded in results, used by compare.
    Noise(commands::noise::NoiseArgs),
    /// A matrix file's cells as a Slurm job array, a Kubernetes Indexed Job or a shell script.
    Plan(commands::plan::PlanArgs),
}

/// The command line: the derived commands, and the flags the engines declare for their
/// own settings on every command that takes engine settings.
fn command() -> clap::Command {
    let mut command = Cli::command();
    for name in ["run", "profile", "verify", "peak"] {
        command = command.mut_subcommand(name, commands::args::with_engine_setting_flags);
    }
    command
}

/// The engine settings given by the engines' own flags, added to the command's
/// `--engine-setting` pairs.
fn take_engine_setting_flags(matches: &clap::ArgMatches, command: &mut Command) {
    let (name, gpu) = match command {
        Command::Run(args) => ("run", &mut args.gpu),
        Command::Profile(args) => ("profile", &mut args.gpu),
        Command::Verify(args) => ("verify", &mut args.gpu),
        Command::Peak(args) => ("peak", &mut args.gpu),
        Command::Models(_)
        | Command::Report(_)
        | Command::Compare(_)
        | Command::Convert(_)
        | Command::Choose(_)
        | Command::Engines
        | Command::Noise(_)
        | Command::Plan(_) => return,
    };
    if let Some(sub) = matches.subcommand_matches(name) {
        commands::args::take_engine_setting_flags(sub, gpu);
    }
}

fn main() -> ExitCode {
    let code = run_command();
    match commands::out::failure() {
        None => code,
        Some(e) => {
            errln!(
                "error: cannot write to standard output ({e}); the results written to files are kept: \
                 send the output elsewhere (a file on a disk with room, or a pipe)"
            );
            ExitCode::FAILURE
        }
    }
}

/// Parses the command line and runs the command, with its exit status.
fn run_command() -> ExitCode {
    // clap would blame `--allocator` for a bad CNNBENCH_ALLOCATOR the user never typed.
    if let Err(e) = check_allocator_variable() {
        errln!("error: {e}");
        return ExitCode::from(2);
    }
    let matches = command().get_matches();
    let mut cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    take_engine_setting_flags(&matches, &mut cli.command);
    if let Err(e) = set_heap_policy(cli.allocator) {
        errln!("error: {e}");
        return ExitCode::FAILURE;
    }
    // rayon starts that many threads in every pool it makes: refused like --threads.
    if let Some(n) = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
    {
        if let Err(e) = commands::common::check_thread_count(n, "RAYON_NUM_THREADS") {
            errln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    commands::engines::before_threads_start();
    let outcome = match cli.command {
        Command::Models(args) => commands::models::run(args),
        Command::Run(args) => {
            let given = commands::run::Given::of(matches.subcommand_matches("run"));
            commands::run::run(*args, &given)
        }
        Command::Report(args) => commands::report::run(args),
        Command::Compare(args) => commands::compare::run(args),
        Command::Convert(args) => commands::convert::run(args),
        Command::Verify(args) => commands::verify::run(args),
        Command::Choose(args) => commands::choose::run(args),
        Command::Engines => commands::engines::run(),
        Command::Profile(args) => commands::profile::run(args),
        Command::Peak(args) => commands::peak::run(args),
        Command::Noise(args) => commands::noise::run(args),
        Command::Plan(args) => commands::plan::run(args),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            let message = error_message(&e);
            // A rank of a data-parallel job tells the others before it goes.
            commands::distributed::announce_failure(&message);
            errln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// CNNBENCH_ALLOCATOR, when set, must be a policy (clap reads it even beside the flag).
fn check_allocator_variable() -> Result<(), String> {
    let Some(value) = std::env::var_os("CNNBENCH_ALLOCATOR") else {
        return Ok(());
    };
    let value = value.to_string_lossy();
    if <AllocatorChoice as clap::ValueEnum>::from_str(&value, false).is_ok() {
        return Ok(());
    }
    Err(format!(
        "CNNBENCH_ALLOCATOR={} is not a heap policy: set it to keep or system, or unset it",
        cnnbench_results::printable(&value)
    ))
}

/// Sets the heap policy before anything large is allocated, and passes it on to the
/// processes cnnbench starts (local ranks, batch probes) through the environment.
fn set_heap_policy(choice: AllocatorChoice) -> Result<(), String> {
    use cnnbench_host::allocator::{apply, HeapPolicy};
    let policy = match choice {
        AllocatorChoice::Keep => HeapPolicy::Keep,
        AllocatorChoice::System => HeapPolicy::System,
    };
    apply(policy)?;
    // Called before any thread is started, so nothing reads the environment meanwhile.
    std::env::set_var("CNNBENCH_ALLOCATOR", policy.as_str());
    Ok(())
}

/// The error and its causes, joined with ": " as anyhow's `{:#}` does, but without a cause
/// whose text its parent already quotes (`cannot read X: Permission denied` over an I/O
/// error would otherwise end "…: Permission denied: Permission denied").
fn error_message(e: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::error_message;

    /// An error that quotes its source, as thiserror's `#[error("…: {source}")]` does.
    #[derive(Debug)]
    struct Quoting {
        source: std::io::Error,
    }

    impl std::fmt::Display for Quoting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "cannot read /r: {}", self.source)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn a_cause_the_message_already_quotes_is_said_once() {
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let said = io.to_string();
        let e = anyhow::Error::new(Quoting { source: io }).context("report");
        assert_eq!(error_message(&e), format!("report: cannot read /r: {said}"));
        // Causes that add something are all kept, in order.
        let e = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(error_message(&e), "outer: middle: inner");
    }
}
