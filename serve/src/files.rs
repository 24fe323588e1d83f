//! File-type checks made without opening a file: opening a FIFO blocks until a writer comes,
//! reading a device never ends (`/dev/zero`), and writing through a link reaches wherever it
//! points. A cache's entries are only ever regular files that the cache itself wrote.

use std::path::Path;

use bellows_core::groth16::output::describe_file_type;

/// Whether a regular file is at `path` (not following a link): `Ok(false)` when nothing is
/// there, an error naming the path and what is there instead for anything else (a link, a
/// FIFO, a device, a folder), which is then neither read nor written.
pub fn regular_or_absent(path: &Path, what: &str) -> bellows_core::Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_file() => Ok(true),
        Ok(m) => Err(bellows_core::Error::invalid(format!(
            "{what} {} is {}, not a regular file: refused without opening it (remove it; the \
             cache writes its own entries)",
            path.display(),
            if m.file_type().is_symlink() {
                "a symbolic link"
            } else {
                describe_file_type(&m)
            }
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(bellows_core::Error::io(
            format!("inspecting {what} {}", path.display()),
            e,
        )),
    }
}
