//! Where the bytes of a parameters or verifying-key file come from: a buffer in memory, or an
//! open regular file read with positional reads (`pread`) into memory the process owns.
//!
//! A file is never memory-mapped: a mapped page that the file no longer has (another process
//! truncated it, or `cp` rewrote it in place) kills the process with SIGBUS on first touch,
//! a daemon with every client's jobs in it. A positional read of a file that shrank returns
//! short instead, which is an error naming the file, the byte where it ended and what was being
//! read. A file changed in place with the same length, or replaced by a rename, is found by its
//! [`FileVersion`], checked when the reading is done; changed bytes read before that went
//! through the same point checks as any others.
//!
//! Large ranges are read in blocks of [`BLOCK`] bytes by a reader thread, one block ahead of
//! the caller that decodes the last one, into two buffers used in turn and kept for the next
//! range (so that their pages are faulted in once a file): the only memory reading costs beyond
//! the decoded points is those two blocks, while the file is open.

use std::fs::File;
use std::path::Path;
use std::sync::{mpsc, Mutex};

use crate::groth16::output::describe_file_type;
use crate::{Error, Result};

/// Bytes read at once from a file for a long range (a section, a digest).
pub(super) const BLOCK: usize = 64 << 20;

/// What identifies one version of a file without reading it: a file written to since has
/// another length, modification or change time (the change time cannot be set back by a
/// user, as the modification time can), and a file replaced by a rename is another inode (and
/// the open one, unlinked, has a new change time).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileVersion {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl FileVersion {
    /// The version described by `meta`.
    #[cfg(unix)]
    pub fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            len: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// The version described by `meta` (its length and modification time here).
    #[cfg(not(unix))]
    pub fn of(meta: &std::fs::Metadata) -> Self {
        let mtime_ns = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        Self {
            dev: 0,
            ino: 0,
            len: meta.len(),
            mtime_ns,
            ctime_ns: 0,
        }
    }

    /// The file's length in bytes.
    pub fn bytes(&self) -> u64 {
        self.len
    }

    /// The version of the regular file at `path` now (following links); anything else is an
    /// error naming the path and what it is.
    pub fn of_path(path: &Path) -> Result<Self> {
        let label = format!("parameters file {}", path.display());
        let meta = std::fs::metadata(path).map_err(|e| Error::io(format!("opening {label}"), e))?;
        if !meta.is_file() {
            return Err(Error::invalid(format!(
                "{label} is {}, not a regular file",
                describe_file_type(&meta)
            )));
        }
        Ok(Self::of(&meta))
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `dev:ino:len:mtime_ns:ctime_ns`, a form a version can be compared by after a restart.
impl std::fmt::Display for FileVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}:{}:{}:{}",
            self.dev, self.ino, self.len, self.mtime_ns, self.ctime_ns
        )
    }
}

/// Bytes that a format is read from, at byte offsets.
pub(super) trait Source: Sync {
    /// Its length in bytes.
    fn len(&self) -> u64;

    /// Fills `buf` from byte `offset`; `what` (e.g. `section h`) names the read in errors.
    fn read_at(&self, buf: &mut [u8], offset: u64, what: &str) -> Result<()>;

    /// Calls `f` on the consecutive pieces of the `len` bytes from `offset`, in order, each a
    /// whole number of `unit`-byte records (the last piece may be shorter than the others); an
    /// error from `f` stops the reading and is returned.
    fn pieces(
        &self,
        offset: u64,
        len: u64,
        unit: usize,
        what: &str,
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()>;

    /// An error if the data changed since it was opened (a file's [`FileVersion`]).
    fn check_unchanged(&self) -> Result<()> {
        Ok(())
    }
}

/// Bytes already in memory.
pub(super) struct Memory<'a>(pub(super) &'a [u8]);

impl Source for Memory<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_at(&self, buf: &mut [u8], offset: u64, _what: &str) -> Result<()> {
        // Callers read inside the lengths they checked against `len`.
        let at = offset as usize;
        buf.copy_from_slice(&self.0[at..at + buf.len()]);
        Ok(())
    }

    fn pieces(
        &self,
        offset: u64,
        len: u64,
        _unit: usize,
        _what: &str,
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        // Already in memory: one piece, nothing copied.
        f(&self.0[offset as usize..(offset + len) as usize])
    }
}

/// An open regular file read with positional reads (see the module docs).
pub(super) struct FileSource {
    file: File,
    label: String,
    version: FileVersion,
    /// Bytes read at once for a long range ([`BLOCK`]; smaller in tests).
    block: usize,
    /// Bytes below which a part of a block is not read on a thread of its own ([`MIN_PART`]).
    min_part: usize,
    /// Block buffers kept for the next range (at most [`BUFFERS`]), each `block` bytes long.
    spare: Mutex<Vec<Vec<u8>>>,
}

/// Block buffers a range is read into, one being filled while the other is decoded.
const BUFFERS: usize = 2;

/// Positional reads a block is read with at once (see [`FileSource::fill_exact`]).
const READERS: usize = 4;

/// Bytes below which a part of a block is not read on a thread of its own.
const MIN_PART: usize = 4 << 20;

impl FileSource {
    /// Wraps `file`, a regular file whose metadata is `meta`, named `label` in messages.
    pub(super) fn new(file: File, meta: &std::fs::Metadata, label: String) -> Self {
        FileSource {
            file,
            label,
            version: FileVersion::of(meta),
            block: BLOCK,
            min_part: MIN_PART,
            spare: Mutex::new(Vec::new()),
        }
    }

    /// A buffer for a block of `need` bytes (at most `block`): a kept one when the block is
    /// large, else a new one.
    fn take_buffer(&self, need: usize) -> Vec<u8> {
        if need < self.block / 2 {
            return vec![0u8; need];
        }
        let kept = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        kept.unwrap_or_else(|| vec![0u8; self.block])
    }

    /// Keeps a block buffer for the next range.
    fn keep_buffer(&self, buf: Vec<u8>) {
        let mut spare = self.spare.lock().unwrap_or_else(|e| e.into_inner());
        if buf.len() == self.block && spare.len() < BUFFERS {
            spare.push(buf);
        }
    }

    /// Reads long ranges `block` bytes at a time, each in parts (tests: many blocks, each
    /// read in parts, from a small file).
    #[cfg(test)]
    pub(super) fn set_block(&mut self, block: usize) {
        self.block = block;
        self.min_part = (block / READERS).max(1);
    }

    /// The file's label in messages.
    pub(super) fn label(&self) -> &str {
        &self.label
    }

    /// The version of the file when it was opened.
    pub(super) fn version(&self) -> FileVersion {
        self.version
    }

    /// Reads into `buf` from `offset` until it is full or the file ends; returns the bytes read.
    fn fill(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match pread(&self.file, &mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    /// `fill`, with a short read or a failure made an error naming the file and `what`. A large
    /// block is read in [`READERS`] parts at once: one thread copies from the page cache more
    /// slowly than many cores decode curve-checked points.
    fn fill_exact(&self, buf: &mut [u8], offset: u64, what: &str) -> Result<()> {
        let parts = (buf.len() / self.min_part).clamp(1, READERS);
        let part = buf.len().div_ceil(parts);
        // (where the part starts, bytes read, bytes wanted), in order.
        let results: Vec<(u64, std::io::Result<usize>, usize)> = if parts == 1 {
            vec![(offset, self.fill(buf, offset), buf.len())]
        } else {
            std::thread::scope(|scope| {
                let reads: Vec<_> = buf
                    .chunks_mut(part)
                    .enumerate()
                    .map(|(i, chunk)| {
                        let at = offset + (i * part) as u64;
                        scope.spawn(move || (at, self.fill(chunk, at), chunk.len()))
                    })
                    .collect();
                reads
                    .into_iter()
                    .map(|r| r.join().expect("a positional read does not panic"))
                    .collect()
            })
        };
        for (at, got, want) in results {
            let got =
                got.map_err(|e| Error::io(format!("reading {what} of the {}", self.label), e))?;
            if got < want {
                return Err(self.ended(at + got as u64, what));
            }
        }
        Ok(())
    }

    fn ended(&self, at: u64, what: &str) -> Error {
        Error::invalid(format!(
            "the {} ended at byte {at} while reading {what}: it was truncated or replaced while \
             in use (it was {} bytes when opened); nothing read from it is used",
            self.label, self.version.len
        ))
    }
}

/// Fills `buf` with the whole of the regular file `file` (metadata `meta`, `label` in
/// messages) by [`FileSource`]'s positional reads, several parts at once: a file whose length is
/// not `buf`'s, or that shrank or grew while it was read, is an error naming it. A file renamed
/// over while open is read whole (the open one), as a cache replaced atomically is meant to be;
/// a change in place of the same length is for the caller's own digest to find.
pub(crate) fn read_whole_into(
    file: File,
    meta: &std::fs::Metadata,
    label: String,
    buf: &mut [u8],
) -> Result<()> {
    let src = FileSource::new(file, meta, label);
    if src.len() != buf.len() as u64 {
        return Err(Error::invalid(format!(
            "the {} is {} bytes, not the {} expected: it changed while in use",
            src.label,
            src.len(),
            buf.len()
        )));
    }
    src.read_at(buf, 0, "the whole file")?;
    let now = src
        .file
        .metadata()
        .map_err(|e| Error::io(format!("reading the {}", src.label), e))?
        .len();
    if now != src.len() {
        return Err(Error::invalid(format!(
            "the {} is {now} bytes, it was {} when opened: written to while it was read",
            src.label,
            src.len()
        )));
    }
    Ok(())
}

/// One positional read.
#[cfg(unix)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// One positional read.
#[cfg(windows)]
fn pread(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

impl Source for FileSource {
    fn len(&self) -> u64 {
        self.version.len
    }

    fn read_at(&self, buf: &mut [u8], offset: u64, what: &str) -> Result<()> {
        self.fill_exact(buf, offset, what)
    }

    fn pieces(
        &self,
        offset: u64,
        len: u64,
        unit: usize,
        what: &str,
        f: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let block = (self.block / unit).max(1) * unit;
        let buffers = if len as usize > block { BUFFERS } else { 1 };
        let need = block.min(len as usize);
        std::thread::scope(|scope| {
            // Full buffers go to the caller, emptied ones come back to the reader.
            let (full_tx, full_rx) = mpsc::sync_channel::<Result<(Vec<u8>, usize)>>(buffers);
            let (free_tx, free_rx) = mpsc::sync_channel::<Vec<u8>>(buffers);
            for _ in 0..buffers {
                let _ = free_tx.send(self.take_buffer(need));
            }
            let reader = scope.spawn(move || {
                let mut at = offset;
                while at < offset + len {
                    // The caller stopped (an error): so does the reader.
                    let Ok(mut buf) = free_rx.recv() else { break };
                    let n = block.min((offset + len - at) as usize);
                    let r = self.fill_exact(&mut buf[..n], at, what).map(|()| (buf, n));
                    let failed = r.is_err();
                    if full_tx.send(r).is_err() || failed {
                        break;
                    }
                    at += n as u64;
                }
                free_rx
            });
            let mut at = offset;
            while at < offset + len {
                let (buf, n) = full_rx
                    .recv()
                    .map_err(|_| Error::invalid("internal error: the file reader stopped"))??;
                f(&buf[..n])?;
                at += n as u64;
                let _ = free_tx.send(buf);
            }
            // All read: the buffers are back in the free channel, kept for the next range.
            if let Ok(free_rx) = reader.join() {
                free_rx.try_iter().for_each(|b| self.keep_buffer(b));
            }
            Ok(())
        })
    }

    fn check_unchanged(&self) -> Result<()> {
        let meta = self
            .file
            .metadata()
            .map_err(|e| Error::io(format!("reading the {}", self.label), e))?;
        if FileVersion::of(&meta) == self.version {
            return Ok(());
        }
        let was = self.version.len;
        let why = if meta.len() < was {
            format!(
                "it is {} bytes, it was {was} when opened: truncated or replaced while in use",
                meta.len()
            )
        } else if unlinked(&meta) {
            "it was deleted, or replaced by another file renamed over it, while in use".into()
        } else {
            "its length, modification or change time differ from when it was opened: it was \
             rewritten in place while in use"
                .into()
        };
        Err(Error::invalid(format!(
            "the {} changed while it was being read ({why}); nothing read from it is used",
            self.label
        )))
    }
}

/// Whether the open file no longer has a name (deleted, or a file was renamed over it).
#[cfg(unix)]
fn unlinked(meta: &std::fs::Metadata) -> bool {
    std::os::unix::fs::MetadataExt::nlink(meta) == 0
}

/// Whether the open file no longer has a name (not known here).
#[cfg(not(unix))]
fn unlinked(_meta: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!("bellows-source-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        p
    }

    fn open(p: &Path, block: usize) -> FileSource {
        let f = File::open(p).unwrap();
        let meta = f.metadata().unwrap();
        let mut s = FileSource::new(f, &meta, format!("test file {}", p.display()));
        s.set_block(block);
        s
    }

    /// Pieces of whole records, in order, covering the range; a file cut short names the byte
    /// where it ended; an error from the caller stops the reader.
    #[test]
    fn pieces_cover_the_range_in_whole_records_and_a_short_file_is_named() {
        let bytes: Vec<u8> = (0..7000u32).map(|i| (i * 31 % 251) as u8).collect();
        let p = temp_file("pieces", &bytes);
        let src = open(&p, 64);
        for (offset, len) in [(0u64, 7000u64), (14, 6986), (21, 7 * 9), (700, 0)] {
            let mut got = Vec::new();
            let mut sizes = Vec::new();
            src.pieces(offset, len, 7, "a range", &mut |b| {
                sizes.push(b.len());
                got.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(got, &bytes[offset as usize..(offset + len) as usize]);
            assert!(sizes.iter().all(|&n| n % 7 == 0 && n <= 63), "{sizes:?}");
        }
        let mut calls = 0;
        let e = src
            .pieces(0, 7000, 7, "a range", &mut |_| {
                calls += 1;
                if calls == 3 {
                    return Err(Error::invalid("stop here"));
                }
                Ok(())
            })
            .unwrap_err();
        assert!(e.to_string().contains("stop here") && calls == 3, "{e}");
        src.check_unchanged().unwrap();

        // Cut to 1000 bytes after it was opened: the read that crosses the end says where.
        File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(1000)
            .unwrap();
        let mut seen = 0;
        let e = src
            .pieces(0, 7000, 7, "section x", &mut |b| {
                seen += b.len();
                Ok(())
            })
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("ended at byte 1000 while reading section x")
                && e.contains("truncated or replaced while in use"),
            "{e}"
        );
        assert!(seen < 1000, "{seen}");
        let mut b = [0u8; 10];
        let e = src.read_at(&mut b, 995, "a field").unwrap_err().to_string();
        assert!(
            e.contains("ended at byte 1000 while reading a field"),
            "{e}"
        );
        let e = src.check_unchanged().unwrap_err().to_string();
        assert!(e.contains("changed while it was being read"), "{e}");
        let _ = std::fs::remove_file(&p);
    }
}
