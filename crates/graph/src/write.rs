//! Writing a file whole or not at all: every file cnnbench writes (results, models,
//! reports, charts, caches) is first written to a hidden temporary file in the target's
//! own folder, synced, and only then put in place under its name. A write that fails
//! half-way (a full disk, a quota, an I/O error, an error of the caller's own) leaves
//! neither a truncated file nor a temporary one behind, so a retry is never blocked by
//! "exists already" and no `.tmp` litter is left.
//!
//! [`write_new`] never replaces a file (the name is taken without a race:
//! `persist_noclobber`); [`write_replacing`] replaces it atomically (a reader sees the old
//! file or the new one, never a mix). [`PendingFile`] is the step by step form, for a
//! writer that wants a path rather than a `Write` (the chart library) or a choice of names.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Why a file was not written. Its `Display` is one line naming the file and saying what
/// to do; nothing is left on disk in its place.
#[derive(Debug)]
pub struct WriteFileError {
    pub path: PathBuf,
    pub problem: WriteProblem,
}

/// What stopped the write.
#[derive(Debug)]
pub enum WriteProblem {
    /// The file exists and the caller does not replace files.
    Exists,
    /// No temporary file could be made in `folder`, the target's folder.
    Folder { folder: PathBuf, error: io::Error },
    /// Writing the content failed (a full disk, or the caller's own error).
    Write(io::Error),
    /// The finished file could not be given its name.
    Persist(io::Error),
}

impl fmt::Display for WriteFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.problem {
            WriteProblem::Exists => write!(
                f,
                "cannot create {path}: it exists already, and cnnbench does not replace files (pick another name, or remove it)"
            ),
            WriteProblem::Folder { folder, error } => match error.kind() {
                io::ErrorKind::NotFound => write!(
                    f,
                    "cannot create {path}: the folder {} does not exist (create it first)",
                    folder.display()
                ),
                io::ErrorKind::NotADirectory => write!(
                    f,
                    "cannot create {path}: {} is not a folder (choose another place)",
                    folder.display()
                ),
                _ => write!(
                    f,
                    "cannot create {path}: no file can be made in the folder {}: {error} (check that it is writable, or choose another place)",
                    folder.display()
                ),
            },
            WriteProblem::Write(error) | WriteProblem::Persist(error) => write!(
                f,
                "cannot write {path}: {error}; nothing was left in its place ({})",
                advice(error)
            ),
        }
    }
}

/// No `source`: the message already quotes the operating system's error.
impl std::error::Error for WriteFileError {}

/// What a user can do about a failed write.
fn advice(error: &io::Error) -> &'static str {
    match error.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded | io::ErrorKind::FileTooLarge => {
            "free some space or write elsewhere, then try again"
        }
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            "write somewhere you may write, then try again"
        }
        _ => "fix the cause or write elsewhere, then try again",
    }
}

/// Writes a new file at `path` with what `write` writes; an existing file (or link) at
/// `path` is refused and left as it is. On any error nothing is left behind.
pub fn write_new(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteFileError> {
    // Said before any work is done; `persist_noclobber` below is what makes it race-free.
    if std::fs::symlink_metadata(path).is_ok() {
        return Err(error(path, WriteProblem::Exists));
    }
    let mut pending = PendingFile::beside(path)?;
    pending.write_with(write)?;
    pending.persist_new()
}

/// Writes the file at `path` with what `write` writes, replacing it atomically if it
/// exists: a reader sees the old file or the new one, never a part. On any error the old
/// file is left as it was and nothing else is left behind.
pub fn write_replacing(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteFileError> {
    let mut pending = PendingFile::beside(path)?;
    pending.write_with(write)?;
    pending.persist_replacing()
}

fn error(path: &Path, problem: WriteProblem) -> WriteFileError {
    WriteFileError {
        path: path.to_path_buf(),
        problem,
    }
}

/// A file being written: a hidden temporary file beside its target, removed when dropped
/// unless it was put in place.
pub struct PendingFile {
    temp: tempfile::NamedTempFile,
    target: PathBuf,
}

impl PendingFile {
    /// A temporary file in `target`'s folder (`.NAME.XXXXXX.EXT`): hidden, so folder
    /// walkers skip it, and with the target's extension, for writers that pick a format
    /// from it (the chart library's PNG encoder).
    pub fn beside(target: &Path) -> Result<Self, WriteFileError> {
        let folder = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        // Cut, so that the temporary name stays within the 255 bytes a name may have
        // where the target's own name is long.
        let prefix: String = target
            .file_stem()
            .map(|s| s.to_string_lossy().chars().take(64).collect())
            .unwrap_or_default();
        let prefix = format!(".{prefix}.");
        let suffix = target
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(&suffix);
        // As `File::create` would make it (0666 less the umask), not tempfile's 0600:
        // results and charts are shared.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder.tempfile_in(folder).map_err(|e| {
            error(
                target,
                WriteProblem::Folder {
                    folder: folder.to_path_buf(),
                    error: io::Error::new(e.kind(), strip_path(e)),
                },
            )
        })?;
        Ok(PendingFile {
            temp,
            target: target.to_path_buf(),
        })
    }

    /// The temporary file's path, for a writer that opens the file itself.
    pub fn path(&self) -> &Path {
        self.temp.path()
    }

    /// The file it will become.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Writes through `write` (buffered, flushed at the end).
    pub fn write_with(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), WriteFileError> {
        let mut out = io::BufWriter::new(self.temp.as_file_mut());
        write(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| error(&self.target, WriteProblem::Write(e)))
    }

    /// Syncs the file, so a full disk that the file system reports only now (delayed
    /// allocation, NFS) is an error here and not a truncated file later.
    fn sync(&self) -> Result<(), WriteFileError> {
        self.temp
            .as_file()
            .sync_all()
            .map_err(|e| error(&self.target, WriteProblem::Write(e)))
    }

    /// Puts the file in place under its target's name, which must be free.
    pub fn persist_new(self) -> Result<(), WriteFileError> {
        let target = self.target.clone();
        self.persist_first_free(std::iter::once(target)).map(|_| ())
    }

    /// Puts the file in place under the first of `names` that is free (e.g. `r.json`,
    /// `r-2.json`, …) and returns it; none free is [`WriteProblem::Exists`] for the last.
    pub fn persist_first_free(
        self,
        names: impl IntoIterator<Item = PathBuf>,
    ) -> Result<PathBuf, WriteFileError> {
        self.sync()?;
        let mut temp = self.temp;
        let mut last = self.target;
        for name in names {
            match temp.persist_noclobber(&name) {
                Ok(_) => return Ok(name),
                Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                    temp = e.file;
                    last = name;
                }
                Err(e) => return Err(error(&name, WriteProblem::Persist(e.error))),
            }
        }
        Err(error(&last, WriteProblem::Exists))
    }

    /// Puts the file in place under its target's name, atomically replacing a file there.
    pub fn persist_replacing(self) -> Result<(), WriteFileError> {
        self.sync()?;
        let target = self.target;
        self.temp
            .persist(&target)
            .map(|_| ())
            .map_err(|e| error(&target, WriteProblem::Persist(e.error)))
    }
}

/// tempfile's errors end in " at path …/.name.XXXXXX": the message names the target and
/// its folder already, and the random name would only confuse.
fn strip_path(e: io::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at path ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every name in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// A disk that fills up half-way: some bytes are written, then the error.
    fn half_then_full(w: &mut dyn Write) -> io::Result<()> {
        w.write_all(&[b'x'; 100_000])?;
        Err(io::Error::from(io::ErrorKind::StorageFull))
    }

    /// `convert` and `models --export` left a 0-byte or truncated file that then blocked
    /// the retry ("exists already"); `report -o` and `peak` left `.tmp-PID` files.
    #[test]
    fn a_write_that_fails_half_way_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("model.json");
        let e = write_new(&target, half_then_full).unwrap_err();
        assert!(matches!(e.problem, WriteProblem::Write(_)), "{e:?}");
        let message = e.to_string();
        assert!(
            message.contains(&target.display().to_string()) && message.contains("free some space"),
            "{message}"
        );
        assert_eq!(names(dir.path()), Vec::<String>::new());
        // The retry is not blocked.
        write_new(&target, |w| w.write_all(b"{}\n")).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"{}\n");
        assert_eq!(names(dir.path()), ["model.json"]);

        let e = write_replacing(&target, half_then_full).unwrap_err();
        assert!(e.to_string().contains("model.json"), "{e}");
        assert_eq!(
            std::fs::read(&target).unwrap(),
            b"{}\n",
            "the old file stays"
        );
        assert_eq!(names(dir.path()), ["model.json"]);
    }

    #[test]
    fn an_existing_file_is_refused_and_left_intact() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("r.onnx");
        std::fs::write(&target, "mine").unwrap();
        let e = write_new(&target, |w| w.write_all(b"new")).unwrap_err();
        assert!(matches!(e.problem, WriteProblem::Exists), "{e:?}");
        assert!(e.to_string().contains("exists already"), "{e}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "mine");
        // A name taken between the check and the rename is refused too.
        let other = dir.path().join("s.onnx");
        let mut pending = PendingFile::beside(&other).unwrap();
        pending.write_with(|w| w.write_all(b"new")).unwrap();
        std::fs::write(&other, "theirs").unwrap();
        assert!(matches!(
            pending.persist_new().unwrap_err().problem,
            WriteProblem::Exists
        ));
        assert_eq!(std::fs::read_to_string(&other).unwrap(), "theirs");
        // A dangling link is a name taken as well.
        #[cfg(unix)]
        {
            let link = dir.path().join("link.json");
            std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
            assert!(write_new(&link, |w| w.write_all(b"x")).is_err());
            assert!(!dir.path().join("nowhere").exists());
        }
        assert_eq!(names(dir.path()).len(), if cfg!(unix) { 3 } else { 2 });
    }

    #[test]
    fn replacing_is_atomic_and_numbered_names_are_tried_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("peak.json");
        std::fs::write(&target, "old").unwrap();
        // A reader holding the old file keeps reading the old content: it was replaced
        // by a rename, not rewritten in place.
        let held = std::fs::File::open(&target).unwrap();
        write_replacing(&target, |w| w.write_all(b"new")).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        assert_eq!(io::read_to_string(held).unwrap(), "old");
        assert_eq!(names(dir.path()), ["peak.json"]);

        let mut pending = PendingFile::beside(&target).unwrap();
        pending.write_with(|w| w.write_all(b"2")).unwrap();
        let names_tried = [target.clone(), dir.path().join("peak-2.json")];
        assert_eq!(
            pending.persist_first_free(names_tried).unwrap(),
            dir.path().join("peak-2.json")
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
    }

    /// The chart library picks the image format from the extension.
    #[test]
    fn the_temporary_file_keeps_the_extension_and_is_hidden() {
        let dir = tempfile::tempdir().unwrap();
        let pending = PendingFile::beside(&dir.path().join("chart.png")).unwrap();
        let name = pending
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(
            name.starts_with(".chart.") && name.ends_with(".png"),
            "{name}"
        );
        drop(pending);
        assert_eq!(names(dir.path()), Vec::<String>::new(), "dropped, removed");
    }

    #[test]
    fn a_missing_folder_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("no-such-folder/m.json");
        let e = write_new(&target, |w| w.write_all(b"x")).unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains("no-such-folder")
                && message.contains("does not exist (create it first)"),
            "{message}"
        );
        assert!(!message.contains(".m."), "no temporary name: {message}");
        // Below a regular file (unwritable even for root).
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let e = write_new(&file.join("m.json"), |w| w.write_all(b"x")).unwrap_err();
        assert!(e.to_string().contains("is not a folder"), "{e}");
    }
}
