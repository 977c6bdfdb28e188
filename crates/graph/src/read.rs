//! Reading a user-named file whole, safely: [`read_bounded`] refuses what is not a
//! regular file (a device such as `/dev/zero`, a pipe, a socket, a folder) and what is
//! larger than the caller's limit, both from the file's metadata before it is opened
//! (opening a FIFO blocks until a writer comes), and then reads at most `limit + 1`
//! bytes, so a file that grows while it is read cannot take more memory than that.
//! Every command that reads a model, weights, result or aliases file goes through it.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a file was not read. Its `Display` is one line naming the file.
#[derive(Debug)]
pub struct ReadFileError {
    pub path: PathBuf,
    pub problem: ReadProblem,
}

/// What was wrong with the file; its `Display` is the part of the message after the
/// file's name (e.g. `is 3.0 GiB; ONNX files above 2 GiB are refused …`).
#[derive(Debug)]
pub enum ReadProblem {
    /// Not a regular file: `kind` says what it is ("a character device", …).
    NotRegular { kind: &'static str, what: String },
    /// Larger than the limit before reading (`size` from the metadata).
    TooLarge { size: u64, limit: u64, what: String },
    /// Within the limit when looked at, but more than the limit came out of it.
    Grew { limit: u64, what: String },
    /// The text variant found bytes that are not UTF-8.
    NotUtf8,
    /// The operating system's error (missing file, no permission, …).
    Io(std::io::Error),
}

impl fmt::Display for ReadProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadProblem::NotRegular { kind, what } => write!(
                f,
                "is {kind}, not a regular file; cnnbench reads {what} only from regular files on disk"
            ),
            ReadProblem::TooLarge { size, limit, what } => write!(
                f,
                "is {}; {what} above {} are refused (is it the right file?)",
                size_beside_limit(*size, *limit),
                human_bytes(*limit)
            ),
            ReadProblem::Grew { limit, what } => write!(
                f,
                "grew past {} while being read; {what} above that are refused",
                human_bytes(*limit)
            ),
            ReadProblem::NotUtf8 => write!(f, "is not UTF-8 text"),
            ReadProblem::Io(e) => write!(f, "cannot be read: {e}"),
        }
    }
}

impl fmt::Display for ReadFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.problem {
            ReadProblem::Io(e) => write!(f, "cannot read {}: {e}", self.path.display()),
            problem => write!(f, "{} {problem}", self.path.display()),
        }
    }
}

/// No `source`: the message already holds the operating system's error, and an error
/// chain printed in full would say it twice.
impl std::error::Error for ReadFileError {}

/// Reads the file at `path` whole if it is a regular file of at most `limit` bytes.
/// `what` names the kind of file in plural for the messages ("model files", "result
/// files"). Symbolic links are followed. Never blocks on a FIFO and never reads more
/// than `limit + 1` bytes.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> Result<Vec<u8>, ReadFileError> {
    let fail = |problem| ReadFileError {
        path: path.to_path_buf(),
        problem,
    };
    // Metadata first: it follows symbolic links and does not open the file.
    let meta = std::fs::metadata(path).map_err(|e| fail(ReadProblem::Io(e)))?;
    check(&meta, limit, what).map_err(fail)?;
    let file = std::fs::File::open(path).map_err(|e| fail(ReadProblem::Io(e)))?;
    // The same questions of what was opened, in case the path changed in between.
    let meta = file.metadata().map_err(|e| fail(ReadProblem::Io(e)))?;
    check(&meta, limit, what).map_err(fail)?;
    // The metadata's size is a hint only; `take` is the bound.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| fail(ReadProblem::Io(e)))?;
    if bytes.len() as u64 > limit {
        return Err(fail(ReadProblem::Grew {
            limit,
            what: what.to_string(),
        }));
    }
    Ok(bytes)
}

/// Reads a file cnnbench keeps in a folder of its own (the accuracy costs of `choose`),
/// as [`read_bounded`] does but without following a link: what is planted under its
/// name (a link to `/dev/zero` or to another user's file, a FIFO) is refused, not read.
/// `Ok(None)`: nothing is there yet.
pub fn read_owned(path: &Path, limit: u64, what: &str) -> Result<Option<Vec<u8>>, ReadFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(ReadFileError {
            path: path.to_path_buf(),
            problem: ReadProblem::NotRegular {
                kind: "a symbolic link",
                what: what.to_string(),
            },
        }),
        Ok(_) => read_bounded(path, limit, what).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ReadFileError {
            path: path.to_path_buf(),
            problem: ReadProblem::Io(e),
        }),
    }
}

/// [`read_bounded`], then the bytes as UTF-8 text.
pub fn read_bounded_to_string(
    path: &Path,
    limit: u64,
    what: &str,
) -> Result<String, ReadFileError> {
    let bytes = read_bounded(path, limit, what)?;
    String::from_utf8(bytes).map_err(|_| ReadFileError {
        path: path.to_path_buf(),
        problem: ReadProblem::NotUtf8,
    })
}

fn check(meta: &std::fs::Metadata, limit: u64, what: &str) -> Result<(), ReadProblem> {
    if !meta.is_file() {
        return Err(ReadProblem::NotRegular {
            kind: kind_of(&meta.file_type()),
            what: what.to_string(),
        });
    }
    if meta.len() > limit {
        return Err(ReadProblem::TooLarge {
            size: meta.len(),
            limit,
            what: what.to_string(),
        });
    }
    Ok(())
}

/// What a file that is not a regular file is, with its article.
pub(crate) fn kind_of(t: &std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        return "a symbolic link";
    }
    if t.is_dir() {
        return "a folder";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_fifo() {
            return "a named pipe (FIFO)";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "a device, pipe or socket"
}

/// `n` bytes in the largest binary unit that keeps it at least 1, e.g. `3.0 GiB`;
/// whole multiples without decimals (`64 MiB`), small counts in bytes.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut unit = 0;
    while unit + 1 < UNITS.len() && n >= 1u64 << (10 * (unit + 2)) {
        unit += 1;
    }
    let scale = 1u64 << (10 * (unit + 1));
    if n.is_multiple_of(scale) {
        format!("{} {}", n / scale, UNITS[unit])
    } else {
        format!("{:.1} {}", n as f64 / scale as f64, UNITS[unit])
    }
}

/// A size that is over `limit`, written so that it does not read as equal to it (2 GiB
/// and one byte is given in bytes, not as "2.0 GiB").
fn size_beside_limit(size: u64, limit: u64) -> String {
    let decimal = |n: u64| {
        let h = human_bytes(n);
        match h.split_once(' ') {
            Some((num, unit)) if !num.contains('.') && unit != "bytes" => format!("{num}.0 {unit}"),
            _ => h,
        }
    };
    let (s, l) = (decimal(size), decimal(limit));
    if s == l {
        format!("{size} bytes")
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    const MIB: u64 = 1 << 20;

    #[test]
    fn reads_a_small_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.json");
        std::fs::write(&p, "hello").unwrap();
        assert_eq!(read_bounded(&p, 5, "model files").unwrap(), b"hello");
        assert_eq!(
            read_bounded_to_string(&p, 64, "model files").unwrap(),
            "hello"
        );
        let e = read_bounded(&p, 4, "model files").unwrap_err();
        assert!(matches!(
            e.problem,
            ReadProblem::TooLarge {
                size: 5,
                limit: 4,
                ..
            }
        ));
        assert_eq!(
            e.to_string(),
            format!(
                "{} is 5 bytes; model files above 4 bytes are refused (is it the right file?)",
                p.display()
            )
        );
    }

    #[test]
    fn a_sparse_huge_file_is_refused_by_its_size_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("zeros.onnx");
        // Sparse: costs no disk, and reading it would take 3 GiB of memory.
        std::fs::File::create(&p).unwrap().set_len(3 << 30).unwrap();
        let start = Instant::now();
        let e = read_bounded(&p, 2 << 30, "ONNX files").unwrap_err();
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(
            e.to_string(),
            format!(
                "{} is 3.0 GiB; ONNX files above 2 GiB are refused (is it the right file?)",
                p.display()
            )
        );
        let e = read_bounded_to_string(&p, 64 * MIB, "model files").unwrap_err();
        assert!(e.to_string().contains("model files above 64 MiB"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pipe.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&p)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        // Opening a FIFO for reading blocks until a writer comes: the refusal must come
        // from the metadata, before any open. Run it on a thread so that a regression
        // fails the test instead of hanging it.
        let (tx, rx) = std::sync::mpsc::channel();
        let q = p.clone();
        std::thread::spawn(move || {
            let _ = tx.send(read_bounded(&q, MIB, "result files").map_err(|e| e.to_string()));
        });
        let got = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("read_bounded blocked on a FIFO");
        assert_eq!(
            got.unwrap_err(),
            format!(
                "{} is a named pipe (FIFO), not a regular file; cnnbench reads result files only from regular files on disk",
                p.display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn dev_zero_and_folders_are_refused() {
        let e = read_bounded(Path::new("/dev/zero"), MIB, "model files").unwrap_err();
        assert_eq!(
            e.to_string(),
            "/dev/zero is a character device, not a regular file; cnnbench reads model files only from regular files on disk"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = read_bounded(dir.path(), MIB, "model files").unwrap_err();
        assert!(
            e.to_string().contains("is a folder, not a regular file"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.json");
        std::fs::write(&target, "{}").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(read_bounded(&link, 2, "result files").unwrap(), b"{}");
        let zero = dir.path().join("zero.json");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = read_bounded(&zero, MIB, "result files").unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
    }

    #[test]
    fn missing_files_and_bad_text_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("none.json");
        let e = read_bounded(&p, MIB, "model files").unwrap_err();
        assert!(matches!(e.problem, ReadProblem::Io(_)));
        assert!(e
            .to_string()
            .starts_with(&format!("cannot read {}: ", p.display())));
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        let e = read_bounded_to_string(&p, MIB, "model files").unwrap_err();
        assert_eq!(e.to_string(), format!("{} is not UTF-8 text", p.display()));
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human_bytes(0), "0 bytes");
        assert_eq!(human_bytes(1023), "1023 bytes");
        assert_eq!(human_bytes(1024), "1 KiB");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes(2 << 30), "2 GiB");
        assert_eq!(human_bytes(10 << 30), "10 GiB");
        assert_eq!(human_bytes(16 << 40), "16 TiB");
        assert_eq!(size_beside_limit(3 << 30, 2 << 30), "3.0 GiB");
        assert_eq!(
            size_beside_limit((2 << 30) + 1, 2 << 30),
            "2147483649 bytes"
        );
        assert_eq!(size_beside_limit(5, 4), "5 bytes");
    }
}
