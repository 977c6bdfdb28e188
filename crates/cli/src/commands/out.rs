//! Standard output that never panics. `println!` panics when stdout cannot be written
//! (`cnnbench models > /dev/full` ended with exit 101, and `run --json` never ran its
//! later models). Every command prints through [`outln!`](crate::outln) and
//! [`out!`](crate::out) instead:
//!
//! * a reader that has gone away (`| head -1`, `EPIPE`) ends the process quietly, as
//!   the kernel ends `cat` (by SIGPIPE, status 141): nothing more can be shown, and a
//!   result is written whole under a temporary name or not at all;
//! * any other failure (a full disk, an I/O error) is kept, the command goes on (a run
//!   still measures and writes its results), and `main` reports it once at the end with
//!   a failing status ([`failure`]).
//!
//! Whatever is printed, on stdout or (through [`errln!`](crate::errln)) on stderr, is
//! made inert on the way: a name read from a file cannot act on the terminal, wherever
//! a message happens to quote it. `clippy.toml` disallows `println!` and `eprintln!`
//! so that no message goes around this.
//!
//! SIGPIPE itself stays ignored (Rust's default): a write to a worker or a rank that has
//! died is then an error that is shown, not a silent death of cnnbench.

use cnnbench_results::inert_for_terminal;
use std::io::Write;
use std::sync::Mutex;

/// The first write to stdout that failed, other than a closed pipe.
static FAILURE: Mutex<Option<std::io::Error>> = Mutex::new(None);

/// Writes `args` (and a newline when `newline`) to stdout, inert
/// ([`inert_for_terminal`]); used by the macros.
pub fn print(args: std::fmt::Arguments, newline: bool) {
    let mut failure = FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    if failure.is_some() {
        return;
    }
    let text = args.to_string();
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(inert_for_terminal(&text).as_bytes())
        .and_then(|()| {
            if newline {
                stdout.write_all(b"\n")?;
            }
            Ok(())
        });
    if let Err(e) = written {
        gone_or_kept(e, &mut failure);
    }
}

/// Writes `args` and a newline to stderr, inert ([`inert_for_terminal`]); used by
/// [`errln!`](crate::errln). A stderr that cannot be written is left unsaid: there is
/// nowhere else to say it (`eprintln!` would panic).
pub fn print_on_stderr(args: std::fmt::Arguments) {
    cnnbench_results::inert_line_on_stderr(&args.to_string());
}

/// Writes a whole text to stdout, ending it with a newline if it has none.
pub fn text(text: &str) {
    if text.ends_with('\n') {
        print(format_args!("{text}"), false);
    } else {
        print(format_args!("{text}"), true);
    }
}

/// Flushes stdout, and returns the first failure to write it, for `main` to report.
pub fn failure() -> Option<std::io::Error> {
    let mut failure = FAILURE.lock().unwrap_or_else(|e| e.into_inner());
    if failure.is_none() {
        if let Err(e) = std::io::stdout().lock().flush() {
            gone_or_kept(e, &mut failure);
        }
    }
    failure.take()
}

/// A closed pipe ends the process as SIGPIPE's default action would; anything else is
/// kept in `failure`.
fn gone_or_kept(e: std::io::Error, failure: &mut Option<std::io::Error>) {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        end_as_by_sigpipe();
    }
    *failure = Some(e);
}

/// Ends the process the way the kernel ends one that writes to a closed pipe.
fn end_as_by_sigpipe() -> ! {
    // SAFETY: SIG_DFL is a valid disposition for SIGPIPE, and raise only sends the
    // signal to this process, which it then ends.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    // Not reached: SIGPIPE's default action ends the process.
    std::process::exit(141)
}
