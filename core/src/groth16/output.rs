//! Output files, written so that nothing is lost: the one atomic writer of Bellows.
//!
//! An [`OutputFile`] is prepared **before** the work whose result it will hold, so that a bad
//! path (a missing folder, a folder in the way, no permission, a block device) is reported before
//! minutes of proving or setup are spent, and is committed once the result exists:
//!
//! - a **regular file**, or a path where nothing exists yet, is written to a temporary file in the
//!   same folder (created with `create_new`, so never someone else's file), flushed and `fsync`ed,
//!   then renamed over the target, and the folder is synced. A failure at any step removes the
//!   temporary file and leaves any previous file untouched; so does dropping an uncommitted
//!   output. A replaced file keeps its permissions;
//! - a **symbolic link** is followed: the file it points to is replaced, the link stays;
//! - a **character device or FIFO** (`/dev/null`, `/dev/stdout`, a named pipe, a shell's process
//!   substitution) is written straight through: it cannot be renamed over, and replacing it with
//!   a regular file (as a rename would) is exactly the data loss this module exists to prevent;
//! - a **folder, block device or socket** is refused.
//!
//! [`FileId`] tells whether two paths name the same file (the same inode, or the same resolved
//! path for files that do not exist yet), so that callers can refuse an output that would
//! overwrite one of their inputs or another output.
//!
//! On Linux the temporary file is **unnamed** (`O_TMPFILE`): it gets a name
//! (`.NAME.PID.N.tmp`, linked through `/proc/self/fd`) only once it is complete, for the instant
//! before the rename. A process killed mid-write (Ctrl-C, SIGKILL) therefore leaves nothing
//! behind: the kernel frees the unnamed file. Where `O_TMPFILE` is not available (another OS,
//! a file system without it, no `/proc`), the temporary file is named from the start and such a
//! kill can leave it; the target itself is never half-written either way.

use std::fs::{File, Metadata};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// Symbolic links followed before giving up (Linux's own limit).
const MAX_LINKS: usize = 40;

/// What an output path turned out to be when it was prepared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// Nothing exists at the path yet: a new file will be created.
    New,
    /// A regular file exists and will be replaced (atomically) when the output is committed.
    ReplacesFile,
    /// A character device or FIFO: written straight through, never replaced.
    WriteThrough,
}

/// Whether two paths name one file: the same inode, or (for a file that does not exist yet) the
/// same absolute path after following symbolic links.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum FileId {
    /// An existing file: device and inode numbers.
    Inode {
        /// `st_dev`.
        dev: u64,
        /// `st_ino`.
        ino: u64,
    },
    /// A path where no file exists yet, absolute, links resolved.
    Path(PathBuf),
}

impl FileId {
    /// The identity of the file `path` names (following symbolic links).
    pub fn of(path: &Path) -> FileId {
        if let Ok(m) = std::fs::metadata(path) {
            if let Some(id) = inode_id(&m) {
                return id;
            }
        }
        let resolved = follow_links(path)
            .map(|(p, _)| p)
            .unwrap_or_else(|_| path.to_path_buf());
        FileId::Path(absolute(&resolved))
    }
}

#[cfg(unix)]
fn inode_id(m: &Metadata) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    Some(FileId::Inode {
        dev: m.dev(),
        ino: m.ino(),
    })
}

#[cfg(not(unix))]
fn inode_id(_: &Metadata) -> Option<FileId> {
    None
}

/// `path` made absolute with its folder canonicalised (the file itself need not exist).
fn absolute(path: &Path) -> PathBuf {
    let (dir, name) = split(path);
    let dir = dir.canonicalize().unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|c| c.join(&dir))
            .unwrap_or(dir.clone())
    });
    match name {
        Some(n) => dir.join(n),
        None => dir,
    }
}

/// The folder of `path` (`.` for a bare name) and its last component.
fn split(path: &Path) -> (PathBuf, Option<std::ffi::OsString>) {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    (dir, path.file_name().map(|n| n.to_os_string()))
}

/// Follows symbolic links from `path` until a non-link (or nothing) is found. A link whose
/// target is not a regular file, or that the kernel resolves itself (`/dev/fd/N`, `/proc/…/fd`),
/// is returned as is: opening it reaches the right object. Returns the path and its metadata
/// (`None` when nothing exists there).
fn follow_links(path: &Path) -> std::io::Result<(PathBuf, Option<Metadata>)> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        let m = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((p, None)),
            Err(e) => return Err(e),
        };
        if !m.file_type().is_symlink() {
            return Ok((p, Some(m)));
        }
        match std::fs::metadata(&p) {
            // A link to something other than a regular file: open it through the link.
            Ok(target) if !target.is_file() => return Ok((p, Some(target))),
            // A link to a regular file, or a dangling link: follow it by name, so that the
            // temporary file is made beside the real file and renamed over it.
            _ => {
                let t = std::fs::read_link(&p)?;
                p = if t.is_absolute() {
                    t
                } else {
                    split(&p).0.join(t)
                };
            }
        }
    }
    Err(std::io::Error::other(format!(
        "more than {MAX_LINKS} symbolic links to follow"
    )))
}

/// A file type in words, for messages.
pub fn describe_file_type(m: &Metadata) -> &'static str {
    let t = m.file_type();
    if t.is_dir() {
        return "a folder";
    }
    if t.is_file() {
        return "a regular file";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (a named pipe or a shell's process substitution)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

fn is_write_through(m: &Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = m.file_type();
        t.is_fifo() || t.is_char_device()
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        false
    }
}

enum Target {
    /// Written to `tmp` beside `real`, then renamed over it. With `unnamed`, `file` is an
    /// `O_TMPFILE` file that is linked as `tmp` only when complete.
    Atomic {
        real: PathBuf,
        tmp: PathBuf,
        file: Option<File>,
        unnamed: bool,
        committed: bool,
    },
    /// Opened and written in place (a character device or FIFO).
    Through,
}

/// An output file prepared before the work and committed after it (see the module docs).
pub struct OutputFile {
    path: PathBuf,
    what: String,
    kind: OutputKind,
    id: FileId,
    target: Target,
}

impl std::fmt::Debug for OutputFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputFile")
            .field("path", &self.path)
            .field("what", &self.what)
            .field("kind", &self.kind)
            .finish()
    }
}

impl OutputFile {
    /// Checks `path` and, for a regular or new file, creates the temporary file beside it now.
    /// `what` names the file in messages (`"proof file"`). Fails, naming the path and the
    /// reason, for a missing folder, a folder or block device or socket at the path, or a folder
    /// where no file can be created.
    pub fn prepare(path: impl AsRef<Path>, what: &str) -> Result<Self> {
        let path = path.as_ref();
        let label = format!("{what} {}", path.display());
        if path.as_os_str().is_empty() {
            return Err(Error::invalid(format!("{what}: the path is empty")));
        }
        let (real, meta) = follow_links(path).map_err(|e| {
            // "Not a directory": a component of the folder is a file.
            let dir = split(path).0;
            match std::fs::metadata(&dir) {
                Ok(m) if !m.is_dir() => Error::invalid(format!(
                    "{label}: {} is {}, not a folder",
                    dir.display(),
                    describe_file_type(&m)
                )),
                _ => Error::io(format!("inspecting {label}"), e),
            }
        })?;
        let id = match &meta {
            Some(m) => inode_id(m).unwrap_or_else(|| FileId::Path(absolute(&real))),
            None => FileId::Path(absolute(&real)),
        };
        let kind = match &meta {
            None => OutputKind::New,
            Some(m) if m.is_file() => OutputKind::ReplacesFile,
            Some(m) if is_write_through(m) => OutputKind::WriteThrough,
            Some(m) => {
                return Err(Error::invalid(format!(
                    "{label} is {}: refusing to write over it (give a file path)",
                    describe_file_type(m)
                )))
            }
        };
        if kind == OutputKind::WriteThrough {
            // Devices are opened now to find a permission problem early; FIFOs only at commit
            // (opening one blocks until a reader appears).
            #[cfg(unix)]
            if meta
                .as_ref()
                .is_some_and(|m| std::os::unix::fs::FileTypeExt::is_char_device(&m.file_type()))
            {
                File::options()
                    .write(true)
                    .open(path)
                    .map_err(|e| Error::io(format!("opening {label} for writing"), e))?;
            }
            return Ok(OutputFile {
                path: path.to_path_buf(),
                what: what.to_string(),
                kind,
                id,
                target: Target::Through,
            });
        }
        let (dir, name) = split(&real);
        let name = name.ok_or_else(|| {
            Error::invalid(format!("{label}: the path names a folder, not a file"))
        })?;
        match std::fs::metadata(&dir) {
            Ok(m) if m.is_dir() => {}
            Ok(m) => {
                return Err(Error::invalid(format!(
                    "{label}: {} is {}, not a folder",
                    dir.display(),
                    describe_file_type(&m)
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::invalid(format!(
                    "{label}: the folder {} does not exist",
                    dir.display()
                )))
            }
            Err(e) => return Err(Error::io(format!("inspecting the folder of {label}"), e)),
        }
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let tmp = dir.join(format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let creating = |e| {
            Error::io(
                format!("creating a temporary file in {} for {label}", dir.display()),
                e,
            )
        };
        let (file, unnamed) = match unnamed::create(&dir) {
            Some(Ok(f)) => (f, true),
            Some(Err(e)) => return Err(creating(e)),
            None => (
                File::options()
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(creating)?,
                false,
            ),
        };
        if let Some(m) = &meta {
            // A replaced file keeps its permissions (best effort: the owner may differ).
            let _ = file.set_permissions(m.permissions());
        }
        Ok(OutputFile {
            path: path.to_path_buf(),
            what: what.to_string(),
            kind,
            id,
            target: Target::Atomic {
                real: real.clone(),
                tmp,
                file: Some(file),
                unnamed,
                committed: false,
            },
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What was found at the path.
    pub fn kind(&self) -> OutputKind {
        self.kind
    }

    /// The identity of the target (see [`FileId`]).
    pub fn id(&self) -> &FileId {
        &self.id
    }

    /// Writes the content with `f` and commits it: renamed over the target (regular files) or
    /// written through (devices, FIFOs). On failure nothing of the target is lost and the
    /// temporary file is removed.
    pub fn commit(mut self, f: impl FnOnce(&mut dyn Write) -> Result<()>) -> Result<()> {
        let label = format!("{} {}", self.what, self.path.display());
        match &mut self.target {
            Target::Through => {
                let file = File::options()
                    .write(true)
                    .open(&self.path)
                    .map_err(|e| Error::io(format!("opening {label} for writing"), e))?;
                let mut w = BufWriter::with_capacity(1 << 20, file);
                f(&mut w).map_err(|e| in_file(e, &label))?;
                w.flush()
                    .map_err(|e| Error::io(format!("writing {label}"), e))?;
                Ok(())
            }
            Target::Atomic {
                real,
                tmp,
                file,
                unnamed,
                committed,
            } => {
                let file = file.take().expect("an output is committed once");
                let mut w = BufWriter::with_capacity(1 << 20, file);
                f(&mut w).map_err(|e| in_file(e, &label))?;
                let file = w
                    .into_inner()
                    .map_err(|e| Error::io(format!("writing {label}"), e.into_error()))?;
                file.sync_all()
                    .map_err(|e| Error::io(format!("syncing {label}"), e))?;
                if *unnamed {
                    // From here on the temporary file has a name, removed on failure below.
                    unnamed::link(&file, tmp).map_err(|e| {
                        Error::io(format!("naming the temporary file of {label}"), e)
                    })?;
                    *unnamed = false;
                }
                drop(file);
                std::fs::rename(&*tmp, &*real).map_err(|e| {
                    Error::io(format!("renaming the temporary file over {label}"), e)
                })?;
                *committed = true;
                // Make the rename itself durable (best effort: not every platform can sync a
                // folder).
                if let Ok(d) = File::open(split(real).0) {
                    let _ = d.sync_all();
                }
                Ok(())
            }
        }
    }

    /// Commits `bytes` (see [`OutputFile::commit`]).
    pub fn commit_bytes(self, bytes: &[u8]) -> Result<()> {
        self.commit(|w| {
            w.write_all(bytes)
                .map_err(|e| Error::io("writing".to_string(), e))
        })
    }
}

/// Adds the file to an I/O error raised inside a writer callback.
fn in_file(e: Error, label: &str) -> Error {
    match e {
        Error::Io { context, source } => Error::io(format!("{context} ({label})"), source),
        other => other,
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        if let Target::Atomic {
            tmp,
            file,
            unnamed,
            committed,
            ..
        } = &mut self.target
        {
            // An unnamed file vanishes when closed; a named one is removed.
            if !*committed {
                drop(file.take());
                if !*unnamed {
                    let _ = std::fs::remove_file(&*tmp);
                }
            }
        }
    }
}

/// Unnamed temporary files (`O_TMPFILE`), Linux only.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod unnamed {
    use std::fs::File;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    use std::path::Path;

    /// An unnamed file in `dir`, or `None` where the kernel, the file system or a missing
    /// `/proc` rule it out (the caller then names its temporary file from the start).
    pub fn create(dir: &Path) -> Option<std::io::Result<File>> {
        if !Path::new("/proc/self/fd").is_dir() {
            return None;
        }
        match File::options()
            .write(true)
            .mode(0o666)
            .custom_flags(libc::O_TMPFILE)
            .open(dir)
        {
            Ok(f) => Some(Ok(f)),
            // Not supported here: fall back to a named file.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL | libc::ENOENT)
                ) =>
            {
                None
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// Gives the unnamed `file` the name `to` (which must not exist).
    pub fn link(file: &File, to: &Path) -> std::io::Result<()> {
        let from = std::ffi::CString::new(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .expect("no NUL in a formatted number");
        let to = std::ffi::CString::new(to.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::other("a NUL byte in the path"))?;
        // SAFETY: both are valid NUL-terminated strings that outlive the call; linkat only
        // reads them. AT_SYMLINK_FOLLOW makes it link the file the /proc entry stands for.
        let r = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
}

/// Named temporary files everywhere else.
#[cfg(not(target_os = "linux"))]
mod unnamed {
    use std::fs::File;
    use std::path::Path;

    pub fn create(_dir: &Path) -> Option<std::io::Result<File>> {
        None
    }

    pub fn link(_file: &File, _to: &Path) -> std::io::Result<()> {
        unreachable!("no unnamed files on this platform")
    }
}

/// Writes `path` atomically with `f` (prepare and commit at once; see [`OutputFile`]).
pub fn write_file(
    path: &Path,
    what: &str,
    f: impl FnOnce(&mut dyn Write) -> Result<()>,
) -> Result<()> {
    OutputFile::prepare(path, what)?.commit(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmpdir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("bellows-output-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn new_and_replaced_files_and_no_temporary_left() {
        let d = tmpdir("basic");
        let p = d.join("x.bin");
        let o = OutputFile::prepare(&p, "test file").unwrap();
        assert_eq!(o.kind(), OutputKind::New);
        // The temporary exists from the start (the folder is writable), unnamed where it can.
        let named = usize::from(!cfg!(target_os = "linux"));
        assert!(entries(&d).len() <= 1 && (named == 0 || entries(&d).len() == 1));
        o.commit_bytes(b"one").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"one");
        let o = OutputFile::prepare(&p, "test file").unwrap();
        assert_eq!(o.kind(), OutputKind::ReplacesFile);
        o.commit_bytes(b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(entries(&d), vec!["x.bin"]);
        // A failing writer leaves the old file and no temporary.
        let e = OutputFile::prepare(&p, "test file")
            .unwrap()
            .commit(|_| Err(Error::invalid("deliberate")))
            .unwrap_err();
        assert!(e.to_string().contains("deliberate"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(entries(&d), vec!["x.bin"]);
        // Dropped without commit: nothing left either.
        drop(OutputFile::prepare(d.join("y.bin"), "test file").unwrap());
        assert_eq!(entries(&d), vec!["x.bin"]);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn bad_paths_are_refused_before_any_work() {
        let d = tmpdir("bad");
        let e = OutputFile::prepare(d.join("nodir/x"), "proof file").unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = OutputFile::prepare(&d, "proof file").unwrap_err();
        assert!(e.to_string().contains("is a folder"), "{e}");
        std::fs::write(d.join("plain"), b"").unwrap();
        let e = OutputFile::prepare(d.join("plain/x"), "proof file").unwrap_err();
        assert!(e.to_string().contains("not a folder"), "{e}");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_and_devices_written_through() {
        let d = tmpdir("links");
        let target = d.join("target.bin");
        std::fs::write(&target, b"old").unwrap();
        let link = d.join("link.bin");
        std::os::unix::fs::symlink("target.bin", &link).unwrap();
        let o = OutputFile::prepare(&link, "test file").unwrap();
        assert_eq!(o.kind(), OutputKind::ReplacesFile);
        assert_eq!(o.id(), &FileId::of(&target));
        o.commit_bytes(b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        // A dangling link creates its target.
        let dangling = d.join("dangling");
        std::os::unix::fs::symlink("created.bin", &dangling).unwrap();
        OutputFile::prepare(&dangling, "test file")
            .unwrap()
            .commit_bytes(b"x")
            .unwrap();
        assert_eq!(std::fs::read(d.join("created.bin")).unwrap(), b"x");
        // /dev/null stays a device.
        let o = OutputFile::prepare("/dev/null", "test file").unwrap();
        assert_eq!(o.kind(), OutputKind::WriteThrough);
        o.commit_bytes(b"gone").unwrap();
        let m = std::fs::metadata("/dev/null").unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &m.file_type()
        ));
        // /dev/full reports the write error.
        if Path::new("/dev/full").exists() {
            let e = OutputFile::prepare("/dev/full", "test file")
                .unwrap()
                .commit_bytes(&[0u8; 100])
                .unwrap_err();
            assert!(e.to_string().contains("/dev/full"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn file_ids_match_through_links_and_spellings() {
        let d = tmpdir("ids");
        let a = d.join("a");
        assert_eq!(FileId::of(&a), FileId::of(&d.join(".").join("a")));
        std::fs::write(&a, b"").unwrap();
        assert_eq!(
            FileId::of(&a),
            FileId::of(&d.join("..").join(d.file_name().unwrap()).join("a"))
        );
        assert_ne!(FileId::of(&a), FileId::of(&d.join("b")));
        let _ = std::fs::remove_dir_all(&d);
    }
}
