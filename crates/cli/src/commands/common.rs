//! Pieces several subcommands share: image sizes, model resolution, tables, numbers.

use anyhow::{anyhow, Result};
use cnnbench_graph::{Graph, Weights};
use cnnbench_import::Imported;
use comfy_table::{presets, ContentArrangement, Table};
use std::io::IsTerminal;
use std::path::Path;

/// `224` or `HxW` (e.g. `299x299`): the one image-size type, the run spec's.
pub use cnnbench_results::ImageSize;

/// A zoo model by name (any alias), at `size` if given, else its default input.
pub fn zoo_model(name: &str, size: Option<ImageSize>) -> Result<Graph> {
    let entry = cnnbench_zoo::find(name).ok_or_else(|| {
        anyhow!(cnnbench_zoo::ZooError::Unknown {
            name: name.to_string(),
            suggestions: cnnbench_zoo::suggest(name),
        })
    })?;
    let [c, h, w] = entry.default_input;
    let input = size.map_or([c, h, w], |s| [c, s.height, s.width]);
    (entry.build)(input).map_err(|e| {
        anyhow!(
            "{} cannot take a {}×{} image: {e}",
            entry.name,
            input[1],
            input[2]
        )
    })
}

/// A model file in any supported format (model JSON, ONNX, Caffe prototxt), resized if asked.
pub fn file_model(path: &Path, size: Option<ImageSize>) -> Result<Graph> {
    let graph = cnnbench_import::load_model(path).map_err(|e| naming_the_file(e, path))?;
    resize(graph, size)
}

/// A model file with the weights it carries (ONNX initializers), unresized; see
/// [`cnnbench_import::load_model_with_weights`].
pub fn file_model_with_weights(path: &Path) -> Result<Imported> {
    cnnbench_import::load_model_with_weights(path).map_err(|e| naming_the_file(e, path))
}

/// The import error, prefixed with the file's name unless its message names it already.
fn naming_the_file(e: cnnbench_import::ImportError, path: &Path) -> anyhow::Error {
    if e.names_the_file() {
        e.into()
    } else {
        anyhow::Error::new(e).context(format!("cannot use {}", path.display()))
    }
}

/// A model file, resized if asked, with the weights it carries when they are a complete
/// set for the (resized) network. Otherwise the weights are `None`, and notes on stderr
/// say why: what the importer could not keep, and that random weights will be used.
pub fn file_model_and_weights(
    path: &Path,
    size: Option<ImageSize>,
) -> Result<(Graph, Option<Weights>)> {
    let imported = file_model_with_weights(path)?;
    for note in &imported.notes {
        errln!("note: {note}");
    }
    let graph = resize(imported.graph, size)?;
    let weights = imported.weights;
    if weights.is_empty() {
        return Ok((graph, None));
    }
    if let Err(e) = weights.check(&graph, false) {
        errln!(
            "note: the weights in {} do not fit this network ({e}); using random weights",
            path.display()
        );
        return Ok((graph, None));
    }
    let total = graph.weight_specs().len();
    if weights.len() < total {
        errln!(
            "note: {} carries {} of the network's {total} weight tensors (partial); using random weights",
            path.display(),
            weights.len()
        );
        return Ok((graph, None));
    }
    Ok((graph, Some(weights)))
}

fn resize(graph: Graph, size: Option<ImageSize>) -> Result<Graph> {
    match size {
        None => Ok(graph),
        Some(s) => {
            let [c, _, _] = graph.input_shape();
            graph.with_input([c, s.height, s.width]).map_err(|e| {
                anyhow!(
                    "{} cannot take a {}×{} image: {e}",
                    graph.name(),
                    s.height,
                    s.width
                )
            })
        }
    }
}

/// A table that looks good on a terminal and is markdown when piped into a file.
pub fn new_table(headers: &[&str]) -> Table {
    let mut table = Table::new();
    if std::io::stdout().is_terminal() {
        table
            .load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Dynamic);
    } else {
        table.load_preset(presets::ASCII_MARKDOWN);
    }
    table.set_header(headers.to_vec());
    table
}

/// Right-aligns the given columns.
pub fn align_right(table: &mut Table, columns: &[usize]) {
    for &i in columns {
        if let Some(col) = table.column_mut(i) {
            col.set_cell_alignment(comfy_table::CellAlignment::Right);
        }
    }
}

/// 25557032 → "25,557,032". A count at `u64::MAX` has saturated (a model file's
/// layers whose MACs or parameters do not fit in 64 bits): it is shown as at least that.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::from(saturated_prefix(n));
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// "≥ " before a count that has saturated at `u64::MAX`, else nothing.
pub fn saturated_prefix(n: u64) -> &'static str {
    if n == u64::MAX {
        "≥ "
    } else {
        ""
    }
}

pub use cnnbench_results::bytes;

/// The most threads an engine's pool may have here: 8 per logical core, at least 256.
/// More only makes the kernel schedule thousands of threads (`--threads 10000` took
/// minutes to start); set `CNNBENCH_MAX_THREADS` to lift it.
pub fn max_threads() -> usize {
    // 0 (or anything not a count) leaves the limit where it is: it would refuse every
    // thread count with "at most 0".
    std::env::var("CNNBENCH_MAX_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| (8 * cnnbench_host::logical_cores()).max(256))
}

/// `--threads N`: a whole number from 1 to [`max_threads`].
pub fn thread_count(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("{s} is not a whole number of threads"))?;
    check_thread_count(n, "--threads")
}

/// A thread count from a flag or a variable (`what`), within 1..=[`max_threads`].
pub fn check_thread_count(n: usize, what: &str) -> Result<usize, String> {
    let max = max_threads();
    if n == 0 {
        return Err(format!("{what} must be at least 1"));
    }
    if n > max {
        return Err(format!(
            "{what} {n} is more threads than this machine can use ({} logical cores; at most {max}: set CNNBENCH_MAX_THREADS to lift the limit)",
            cnnbench_host::logical_cores()
        ));
    }
    Ok(n)
}

/// Refuses a command whose buffers cannot fit before it allocates them (`verify`,
/// `profile` and `peak` allocated until the process aborted): `need` bytes (`what`
/// says for what) against what the host can still hand out, and never past
/// [`cnnbench_bench::memory::BEYOND_ANY_MACHINE`].
pub fn check_fits(need: u64, what: &str) -> Result<()> {
    let available = cnnbench_bench::env::available_memory();
    if need >= cnnbench_bench::memory::BEYOND_ANY_MACHINE {
        return Err(anyhow!(
            "{what} would need about {}, more than any machine has: use a smaller size",
            bytes(need)
        ));
    }
    if available > 0 && need > available {
        return Err(anyhow!(
            "{what} needs about {} but {} (host memory available) is free: use a smaller size",
            bytes(need),
            bytes(available)
        ));
    }
    Ok(())
}

/// The refusal to replace `path` (`what` says what it was for, e.g. " for the weights"),
/// for a check made before anything is written as well as for the create itself.
pub fn exists_already(path: &Path, what: &str) -> anyhow::Error {
    anyhow!(
        "cannot create {}{what}: it exists already, and cnnbench does not replace files (pick another name, or remove it)",
        path.display()
    )
}

/// Writes a new file whole or not at all (cnnbench never replaces a model or weights
/// file): a full disk leaves no partial file to block the retry, and the error names the
/// file and says whether it exists already or its folder does not.
pub fn write_new_file(path: &Path, bytes: &[u8]) -> Result<()> {
    cnnbench_graph::write_new(path, |w| w.write_all(bytes)).map_err(|e| anyhow!(e))
}

/// Ctrl-C asks the command to stop after the current pass: the flag returned is set, and
/// what has finished is kept. A second Ctrl-C stops at once (exit status 130) for a pass
/// that would take minutes: result files are written under a temporary name and renamed,
/// so stopping mid-write leaves no partial file, and every finished one is on disk.
pub fn stop_on_ctrl_c() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    use std::sync::atomic::{AtomicBool, Ordering};
    let cancel = std::sync::Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    // Only one handler per process (a second call fails, as in tests): the first stays.
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) {
            errln!("\ninterrupted again: stopping now; finished results are kept");
            // SAFETY: `_exit` ends the process without running atexit handlers, which
            // (libtorch's among them) may wait on threads that are mid-pass.
            unsafe { libc::_exit(130) };
        }
        errln!("\ninterrupting after the current pass (Ctrl-C again to stop now)");
    });
    cancel
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_sizes_parse() {
        assert_eq!(
            "224".parse::<ImageSize>().unwrap(),
            ImageSize {
                height: 224,
                width: 224
            }
        );
        assert_eq!(
            "299x300".parse::<ImageSize>().unwrap(),
            ImageSize {
                height: 299,
                width: 300
            }
        );
        assert!("0".parse::<ImageSize>().is_err());
        assert!("abc".parse::<ImageSize>().is_err());
        assert!("3x".parse::<ImageSize>().is_err());
    }

    #[test]
    fn numbers_format() {
        assert_eq!(thousands(25557032), "25,557,032");
        assert_eq!(thousands(999), "999");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024 / 2), "1.50 GiB");
    }
}
