//! Opening the files the formats are read from: regular files (read at offsets, see
//! [`super::source`]), or pipes and devices (read with a bound).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::groth16::output::describe_file_type;
use crate::{Error, Result};

/// Opens `path` for reading and returns it with its metadata; a folder, or a missing file, is
/// an error naming the path.
pub(super) fn open_input(path: &Path, label: &str) -> Result<(File, std::fs::Metadata)> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(format!("opening {label}"), e))?;
    if meta.is_dir() {
        return Err(Error::invalid(format!("{label} is a folder, not a file")));
    }
    let file = File::open(path).map_err(|e| Error::io(format!("opening {label}"), e))?;
    Ok((file, meta))
}

/// Opens a regular file and returns it with its metadata; anything else is refused with `why`
/// (why a regular file is needed). The file is opened without blocking and checked after, so a
/// FIFO is refused without waiting for a writer, and what is checked is what was opened.
pub(super) fn open_regular(
    path: &Path,
    label: &str,
    why: &str,
) -> Result<(File, std::fs::Metadata)> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // Regular files ignore O_NONBLOCK; a FIFO opened with it does not wait for a writer.
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let file = opts
        .open(path)
        .map_err(|e| Error::io(format!("opening {label}"), e))?;
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("opening {label}"), e))?;
    if meta.is_dir() {
        return Err(Error::invalid(format!("{label} is a folder, not a file")));
    }
    if !meta.is_file() {
        return Err(Error::invalid(format!(
            "{label} is {}, not a regular file: {why}, so give a regular file (copy the data \
             to one first)",
            describe_file_type(&meta)
        )));
    }
    Ok((file, meta))
}

/// Reads the whole of `path` (a regular file, or a pipe or device) into memory, refusing more
/// than `limit` bytes: a regular file by its size before reading, a stream after `limit` + 1
/// bytes. `label` names the file in messages.
pub fn read_bounded(path: impl AsRef<Path>, label: &str, limit: u64) -> Result<Vec<u8>> {
    let path = path.as_ref();
    let (file, meta) = open_input(path, label)?;
    if meta.is_file() && meta.len() > limit {
        return Err(Error::invalid(format!(
            "{label} is {} bytes, more than the {limit} bytes allowed",
            meta.len()
        )));
    }
    let mut out = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| Error::io(format!("reading {label}"), e))?;
    if out.len() as u64 > limit {
        return Err(Error::invalid(format!(
            "{label} holds more than the {limit} bytes allowed (it is {})",
            describe_file_type(&meta)
        )));
    }
    Ok(out)
}
