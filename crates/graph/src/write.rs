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
//!
//! Replacing never renames over anything but a regular file: a rename puts a regular
//! file in the place of whatever the name held, and `report -o /dev/null`, run as root,
//! turned `/dev/null` into one. A link is followed (the link stays, the file it leads to
//! is replaced); a FIFO, a terminal or another character device, or a socket is written
//! into as a shell's `>` would (not atomically: a reader of a pipe sees the bytes as they
//! come); a folder or a disk (a block device) is refused.

use std::fmt;
use std::fs::File;
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};

/// Why a file was not written. Its `Display` is one line naming the file and saying what
/// to do; nothing is left on disk in its place.
#[derive(Debug)]
pub struct WriteFileError {
    pub path: PathBuf,
    pub problem: WriteProblem,
    /// Whether the target was a pipe or a device written into directly, where the bytes
    /// before the error did arrive (the message must not say that nothing was left).
    streamed: bool,
}

/// What stopped the write.
#[derive(Debug)]
pub enum WriteProblem {
    /// The file exists and the caller does not replace files.
    Exists,
    /// No temporary file could be made in `folder`, the target's folder.
    Folder { folder: PathBuf, error: io::Error },
    /// Writing the content failed (a full disk, or the caller's own error), or the
    /// target is a pipe or device that could not be opened.
    Write(io::Error),
    /// The finished file could not be given its name, or the name is one that is never
    /// replaced (a folder, a block device: kind `IsADirectory` / `Unsupported`).
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
            WriteProblem::Write(error) if self.streamed => write!(
                f,
                "cannot write {path}: {error}; it is a pipe or a device, written into as the bytes came, so what came before the error was written ({})",
                advice(error)
            ),
            WriteProblem::Persist(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::IsADirectory | io::ErrorKind::Unsupported
                ) =>
            {
                write!(f, "cannot write {path}: {error}; it was left as it is ({})", advice(error))
            }
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
        io::ErrorKind::IsADirectory => "name a file in it, or another path",
        io::ErrorKind::Unsupported => "name a file, a pipe or a terminal instead",
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
/// file is left as it was and nothing else is left behind. A link at `path` stays and the
/// file it leads to is replaced; a FIFO or a device (`-o /dev/stdout`) is written into;
/// a folder is refused (see [`PendingFile::replacing`]).
pub fn write_replacing(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteFileError> {
    let mut pending = PendingFile::replacing(path)?;
    pending.write_with(write)?;
    pending.persist_replacing()
}

/// Writes a file cnnbench keeps in a folder of its own (`choose.toml`, the accuracy
/// costs beside it), replacing it atomically. Unlike [`write_replacing`] nothing planted
/// under its name is followed or written into: a link there could send the write to any
/// file the user may write (`~/.bashrc`), and a FIFO would hang the command, so a name
/// that holds anything but a regular file is refused and left as it is.
pub fn write_owned(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), WriteFileError> {
    refuse_planted(path)?;
    let mut pending = PendingFile::beside(path)?;
    pending.write_with(write)?;
    // Looked at again: what took the name meanwhile is refused as well.
    refuse_planted(path)?;
    let (temp, target) = pending.synced()?;
    temp.persist(&target)
        .map(|_| ())
        .map_err(|e| error(&target, WriteProblem::Persist(e.error)))
}

/// Refuses a name that holds something other than a regular file (links not followed).
fn refuse_planted(path: &Path) -> Result<(), WriteFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Ok(()),
        Ok(m) => Err(error(
            path,
            WriteProblem::Persist(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "it is {}, and cnnbench keeps its own files there only as regular files (remove it, or choose another folder)",
                    crate::read::kind_of(&m.file_type())
                ),
            )),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(error(path, WriteProblem::Write(e))),
    }
}

fn error(path: &Path, problem: WriteProblem) -> WriteFileError {
    WriteFileError {
        path: path.to_path_buf(),
        problem,
        streamed: false,
    }
}

/// More links in a row than this are a loop (Linux's own limit is 40).
const MAX_LINKS: usize = 40;

/// Where a replacing write goes, decided from what the target's name holds now.
enum Destination {
    /// A regular file, or nothing yet, at this path (the target's links followed): the
    /// new content is renamed over it.
    Rename(PathBuf),
    /// A FIFO, a character device or a socket, opened for writing as a shell's `>` opens
    /// it: a rename would put a regular file in its place.
    Stream(File),
}

/// What replacing `target` means now: a rename onto the file it names (links followed),
/// a pipe or device to write into, or a refusal (a folder, a disk).
fn destination(target: &Path) -> Result<Destination, WriteFileError> {
    let refuse = |kind: io::ErrorKind, what: &str| {
        error(
            target,
            WriteProblem::Persist(io::Error::new(
                kind,
                format!("it is {what}, and cnnbench only replaces regular files"),
            )),
        )
    };
    let followed = |e: io::Error| error(target, WriteProblem::Write(e));
    // `metadata` follows links as the kernel does, `/proc/self/fd/N` (behind
    // `/dev/stdout`) included, whose text (`pipe:[1234]`) names no file.
    match std::fs::metadata(target) {
        Ok(m) if m.is_file() => {
            let resolved = resolve_links(target).map_err(followed)?;
            if same_file(&resolved, &m) {
                Ok(Destination::Rename(resolved))
            } else {
                // A file the link's text does not name (a deleted file behind
                // `/proc/self/fd/N`): written into, as a shell would.
                open_stream(target).map(Destination::Stream)
            }
        }
        Ok(m) if m.is_dir() => Err(refuse(io::ErrorKind::IsADirectory, "a folder")),
        Ok(m) if is_block_device(&m) => Err(refuse(
            io::ErrorKind::Unsupported,
            "a block device (a disk)",
        )),
        Ok(_) => open_stream(target).map(Destination::Stream),
        // Nothing there, or a link to nothing: the file is made where the link leads.
        Err(e) if e.kind() == io::ErrorKind::NotFound => resolve_links(target)
            .map(Destination::Rename)
            .map_err(followed),
        Err(e) => Err(followed(e)),
    }
}

/// A FIFO, device or socket opened for writing (a FIFO waits for its reader, as a shell's
/// redirection does); truncation, which these ignore, covers a regular file reached
/// through a link that names none.
fn open_stream(target: &Path) -> Result<File, WriteFileError> {
    std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        // Not opened, nothing written: `streamed` stays false.
        .open(target)
        .map_err(|e| error(target, WriteProblem::Write(e)))
}

/// `path` with the links of its last part followed to what they lead to (the folders on
/// the way are the kernel's to follow when the file is renamed); a relative link is read
/// from the folder the link is in.
fn resolve_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let leads_to = std::fs::read_link(&path)?;
                path = match path.parent() {
                    Some(folder) => folder.join(leads_to),
                    None => leads_to,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::other(format!(
        "more than {MAX_LINKS} links in a row (a loop?)"
    )))
}

#[cfg(unix)]
fn same_file(path: &Path, known: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(path).is_ok_and(|m| m.dev() == known.dev() && m.ino() == known.ino())
}

#[cfg(not(unix))]
fn same_file(_: &Path, _: &std::fs::Metadata) -> bool {
    true
}

#[cfg(unix)]
fn is_block_device(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_block_device()
}

#[cfg(not(unix))]
fn is_block_device(_: &std::fs::Metadata) -> bool {
    false
}

/// A file being written: a hidden temporary file beside its target, removed when dropped
/// unless it was put in place; or, for a replacing write whose target is a FIFO or a
/// device, that target itself, written into directly.
pub struct PendingFile {
    sink: Sink,
    target: PathBuf,
}

enum Sink {
    Temp(tempfile::NamedTempFile),
    Stream(File),
}

impl PendingFile {
    /// A temporary file in `target`'s folder (`.NAME.XXXXXX.EXT`): hidden, so folder
    /// walkers skip it, and with the target's extension, for writers that pick a format
    /// from it. For a new file ([`persist_new`](Self::persist_new),
    /// [`persist_first_free`](Self::persist_first_free)); a file to replace is
    /// [`replacing`](Self::replacing)'s.
    pub fn beside(target: &Path) -> Result<Self, WriteFileError> {
        Ok(PendingFile {
            sink: Sink::Temp(temp_beside(target, target)?),
            target: target.to_path_buf(),
        })
    }

    /// A pending replacement of `target`, decided by what its name holds: a regular file
    /// or nothing gets a temporary file beside it; a link is followed, and the temporary
    /// file made beside the file it leads to (so the rename replaces that file, on its
    /// file system, and the link stays); a FIFO, a character device or a socket is opened
    /// for writing now (a FIFO waits for a reader) and written into directly, since a
    /// rename would replace it with a regular file; a folder or a block device is refused.
    pub fn replacing(target: &Path) -> Result<Self, WriteFileError> {
        let sink = match destination(target)? {
            Destination::Rename(resolved) => Sink::Temp(temp_beside(&resolved, target)?),
            Destination::Stream(file) => Sink::Stream(file),
        };
        Ok(PendingFile {
            sink,
            target: target.to_path_buf(),
        })
    }

    /// The temporary file's path, for a writer that opens the file itself; `None` for a
    /// FIFO or device written into directly (it cannot be read back).
    pub fn path(&self) -> Option<&Path> {
        match &self.sink {
            Sink::Temp(temp) => Some(temp.path()),
            Sink::Stream(_) => None,
        }
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
        let (file, streamed) = match &mut self.sink {
            Sink::Temp(temp) => (temp.as_file_mut(), false),
            Sink::Stream(file) => (file, true),
        };
        let mut out = io::BufWriter::new(file);
        write(&mut out)
            .and_then(|()| out.flush())
            .map_err(|e| WriteFileError {
                streamed,
                ..error(&self.target, WriteProblem::Write(e))
            })
    }

    /// The temporary file, synced, so a full disk that the file system reports only now
    /// (delayed allocation, NFS) is an error here and not a truncated file later; a
    /// stream has none and is [`WriteProblem::Exists`]: it is no new name.
    fn synced(self) -> Result<(tempfile::NamedTempFile, PathBuf), WriteFileError> {
        match self.sink {
            Sink::Temp(temp) => match temp.as_file().sync_all() {
                Ok(()) => Ok((temp, self.target)),
                Err(e) => Err(error(&self.target, WriteProblem::Write(e))),
            },
            Sink::Stream(_) => Err(error(&self.target, WriteProblem::Exists)),
        }
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
        let (mut temp, mut last) = self.synced()?;
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

    /// Puts the file in place under its target's name, atomically replacing a regular
    /// file there (or the one a link there leads to). What the name holds is looked at
    /// again now, so a FIFO or a device that took the name meanwhile (or the target of a
    /// [`beside`](Self::beside)) is written into rather than renamed over, and a folder
    /// is refused. A stream was written already: nothing is left to do.
    pub fn persist_replacing(self) -> Result<(), WriteFileError> {
        if let Sink::Stream(_) = self.sink {
            return Ok(());
        }
        let (mut temp, target) = self.synced()?;
        match destination(&target)? {
            Destination::Rename(path) => temp
                .persist(&path)
                .map(|_| ())
                .map_err(|e| error(&target, WriteProblem::Persist(e.error))),
            Destination::Stream(mut stream) => {
                let file = temp.as_file_mut();
                file.rewind()
                    .and_then(|()| io::copy(file, &mut stream))
                    .map(|_| ())
                    .map_err(|e| WriteFileError {
                        streamed: true,
                        ..error(&target, WriteProblem::Write(e))
                    })
            }
        }
    }
}

/// A hidden temporary file beside `file` (`.NAME.XXXXXX.EXT`); errors name `target`,
/// the name the caller gave.
fn temp_beside(file: &Path, target: &Path) -> Result<tempfile::NamedTempFile, WriteFileError> {
    let folder = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Cut, so that the temporary name stays within the 255 bytes a name may have
    // where the target's own name is long.
    let prefix: String = file
        .file_stem()
        .map(|s| s.to_string_lossy().chars().take(64).collect())
        .unwrap_or_default();
    let prefix = format!(".{prefix}.");
    let suffix = file
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
    builder.tempfile_in(folder).map_err(|e| {
        error(
            target,
            WriteProblem::Folder {
                folder: folder.to_path_buf(),
                error: io::Error::new(e.kind(), strip_path(e)),
            },
        )
    })
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

    /// A file cnnbench keeps in its own folder is replaced when it is a regular file,
    /// and whatever else was planted under its name is refused and left as it is.
    #[cfg(unix)]
    #[test]
    fn an_owned_file_is_never_written_through_what_was_planted() {
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("choose.toml");
        let write = |text: &'static str| move |out: &mut dyn Write| out.write_all(text.as_bytes());
        write_owned(&own, write("one")).unwrap();
        write_owned(&own, write("two")).unwrap();
        assert_eq!(std::fs::read_to_string(&own).unwrap(), "two");
        assert_eq!(
            crate::read_owned(&own, 100, "files").unwrap().as_deref(),
            Some(&b"two"[..])
        );
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = write_owned(&link, write("evil")).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        let e = crate::read_owned(&link, 100, "files")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(crate::read_owned(&dir.path().join("none"), 100, "files")
            .unwrap()
            .is_none());
        // Nothing but the files themselves is left in the folder.
        let mut names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .collect();
        names.sort();
        assert_eq!(names, ["choose.toml", "link.toml", "victim"]);
    }

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
            .and_then(Path::file_name)
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

    /// Runs `f` on a thread of its own and returns what it returns, or fails the test
    /// after `seconds`: a FIFO that nobody opens would otherwise hang the test for ever.
    #[cfg(unix)]
    fn within<T: Send + 'static>(
        seconds: u64,
        what: &str,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(seconds))
            .unwrap_or_else(|_| panic!("{what} did not finish within {seconds} s"))
    }

    #[cfg(unix)]
    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("mkfifo (coreutils) makes the test's FIFO");
        assert!(status.success(), "mkfifo {}", path.display());
    }

    /// `report -o FIFO` (or `-o /dev/null` as root) renamed a regular file over it. The
    /// FIFO receives the bytes and stays a FIFO, through `write_replacing` and through a
    /// `PendingFile` made `beside` it (whose content is copied in at the end). Never a
    /// real device here: a bug would turn the machine's `/dev/null` into a file.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_written_into_and_stays_a_fifo() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("report.md");
        mkfifo(&fifo);
        for (round, text) in ["# report\n", "# again\n"].into_iter().enumerate() {
            let reading = fifo.clone();
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let _ = tx.send(std::fs::read(reading));
            });
            let writing = fifo.clone();
            within(30, "writing into the FIFO", move || {
                if round == 0 {
                    write_replacing(&writing, |w| w.write_all(text.as_bytes()))
                } else {
                    let mut pending = PendingFile::beside(&writing)?;
                    pending.write_with(|w| w.write_all(text.as_bytes()))?;
                    pending.persist_replacing()
                }
            })
            .unwrap();
            let read = rx
                .recv_timeout(std::time::Duration::from_secs(30))
                .expect("the FIFO's reader got its bytes");
            assert_eq!(read.unwrap(), text.as_bytes());
            let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
            assert!(kind.is_fifo(), "round {round}: {kind:?}");
            assert_eq!(names(dir.path()), ["report.md"], "no temporary file left");
        }
        // A stream has no temporary file to hand a writer that opens one itself.
        let reading = fifo.clone();
        std::thread::spawn(move || std::fs::read(reading));
        let writing = fifo.clone();
        let pending = within(30, "opening the FIFO", move || {
            PendingFile::replacing(&writing).map(|p| p.path().is_none())
        });
        assert!(pending.unwrap());
    }

    /// A link to a regular file stays a link; the file it leads to is replaced atomically,
    /// from a temporary file made beside that file (not beside the link, which may be on
    /// another file system); a link to nothing makes the file where it leads.
    #[cfg(unix)]
    #[test]
    fn a_link_stays_and_the_file_it_leads_to_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.md");
        std::fs::write(&real, "old").unwrap();
        let links = dir.path().join("links");
        std::fs::create_dir(&links).unwrap();
        let link = links.join("out.md");
        std::os::unix::fs::symlink("../real.md", &link).unwrap();
        let held = std::fs::File::open(&real).unwrap();

        let pending = PendingFile::replacing(&link).unwrap();
        let folder = pending.path().and_then(Path::parent).unwrap();
        assert_eq!(
            folder.canonicalize().unwrap(),
            dir.path().canonicalize().unwrap()
        );
        assert_eq!(pending.target(), link);
        drop(pending);
        write_replacing(&link, |w| w.write_all(b"new")).unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("../real.md"));
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        assert_eq!(
            io::read_to_string(held).unwrap(),
            "old",
            "replaced by a rename"
        );
        assert_eq!(names(&links), ["out.md"]);
        assert_eq!(names(dir.path()), ["links", "real.md"]);

        // A link to that link, absolute.
        let twice = dir.path().join("twice.md");
        std::os::unix::fs::symlink(&link, &twice).unwrap();
        write_replacing(&twice, |w| w.write_all(b"again")).unwrap();
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "again");
        assert!(std::fs::symlink_metadata(&twice)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());

        // A link to nothing yet.
        let later = links.join("later.md");
        std::os::unix::fs::symlink("../later.md", &later).unwrap();
        write_replacing(&later, |w| w.write_all(b"made")).unwrap();
        assert!(std::fs::symlink_metadata(&later)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("later.md")).unwrap(),
            "made"
        );
        assert_eq!(
            names(dir.path()),
            ["later.md", "links", "real.md", "twice.md"]
        );

        // A loop is an error, not a hang.
        let a = dir.path().join("a.md");
        std::os::unix::fs::symlink("b.md", &a).unwrap();
        std::os::unix::fs::symlink("a.md", dir.path().join("b.md")).unwrap();
        assert!(write_replacing(&a, |w| w.write_all(b"x")).is_err());
    }

    /// A folder is refused, with what to do, and left as it was (through a link too).
    #[test]
    fn a_folder_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("out.md");
        std::fs::create_dir(&folder).unwrap();
        std::fs::write(folder.join("keep.txt"), "kept").unwrap();
        let e = write_replacing(&folder, |w| w.write_all(b"x")).unwrap_err();
        assert!(
            matches!(&e.problem, WriteProblem::Persist(io) if io.kind() == io::ErrorKind::IsADirectory),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(
            message.contains("out.md")
                && message.contains("it is a folder")
                && message.contains("left as it is")
                && message.contains("name a file in it, or another path"),
            "{message}"
        );
        assert!(std::fs::metadata(&folder).unwrap().is_dir());
        assert_eq!(names(&folder), ["keep.txt"]);
        assert_eq!(names(dir.path()), ["out.md"], "no temporary file left");
        // Nor does a pending file made beside it rename over it at the end.
        let mut pending = PendingFile::beside(&folder).unwrap();
        pending.write_with(|w| w.write_all(b"x")).unwrap();
        assert!(pending.persist_replacing().is_err());
        assert_eq!(names(&folder), ["keep.txt"]);
        assert_eq!(names(dir.path()), ["out.md"]);
        #[cfg(unix)]
        {
            let link = dir.path().join("link.md");
            std::os::unix::fs::symlink("out.md", &link).unwrap();
            assert!(write_replacing(&link, |w| w.write_all(b"x")).is_err());
            assert_eq!(names(&folder), ["keep.txt"]);
            assert!(std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
        }
    }

    /// A socket cannot be opened for writing (as a shell's `>` cannot): an error naming
    /// it, and the socket stays.
    #[cfg(unix)]
    #[test]
    fn a_socket_is_an_error_and_stays_a_socket() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("out.md");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let e = write_replacing(&socket, |w| w.write_all(b"x")).unwrap_err();
        assert!(e.to_string().contains("out.md"), "{e}");
        assert!(std::fs::symlink_metadata(&socket)
            .unwrap()
            .file_type()
            .is_socket());
        assert_eq!(names(dir.path()), ["out.md"]);
    }
}
