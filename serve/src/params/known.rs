//! Digests of parameters files kept across restarts, so that a restarted daemon does not hash
//! a 47 GB file again before its first proof.
//!
//! One line a file in the state directory's `params-digests`: the SHA-256 in hex, the file's
//! [`FileVersion`], its published-form digest when one was computed ([`super::Published`], else
//! `-`) and its canonical path. A digest is reused only for the same path at the same
//! version (device, inode, length, modification and change time: a file written to since has
//! another change time, which a user cannot set back), the rule the in-memory table already
//! follows within one run. Lines that do not parse are skipped, so a torn last line after a crash
//! costs one hash, never an error; the file is rewritten whole through core's output writer
//! (a temporary file renamed over it), so a reader never sees a half-written table.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Mutex,
};

use bellows_core::groth16::{io::FileVersion, output::OutputFile};

use super::{hex, Hashed};

/// The table of digests persisted in one file.
#[derive(Debug)]
pub struct KnownDigests {
    path: PathBuf,
    table: Mutex<HashMap<(PathBuf, String), Hashed>>,
}

impl KnownDigests {
    /// The table kept in `path` (read now; a missing or unreadable file is an empty table).
    pub fn open(path: &Path) -> Self {
        let table = match std::fs::read_to_string(path) {
            Ok(text) => text.lines().filter_map(parse_line).collect(),
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(
                        "known parameter digests {} not read ({e}): files will be hashed again",
                        path.display()
                    );
                }
                HashMap::new()
            }
        };
        Self {
            path: path.to_path_buf(),
            table: Mutex::new(table),
        }
    }

    /// The digests recorded for the file at `path` (canonical) at `version`.
    pub fn get(&self, path: &Path, version: &FileVersion) -> Option<Hashed> {
        self.table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(path.to_path_buf(), version.to_string()))
            .cloned()
    }

    /// Records `digest` for the file at `path` at `version`, replacing any other version of the
    /// same path. A failure to write is logged, not returned: the digest is still right, it is
    /// only not kept for the next start.
    pub fn insert(&self, path: &Path, version: &FileVersion, digest: Hashed) {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        table.retain(|(p, _), _| p != path);
        table.insert((path.to_path_buf(), version.to_string()), digest);
        if let Err(e) = self.write(&table) {
            tracing::warn!(
                "known parameter digests not saved to {} ({e}): the next start hashes {} again",
                self.path.display(),
                path.display()
            );
        }
    }

    /// The table written whole through core's output writer (a temporary file beside it,
    /// renamed over it).
    fn write(&self, table: &HashMap<(PathBuf, String), Hashed>) -> bellows_core::Result<()> {
        let mut lines: Vec<String> = table
            .iter()
            .filter_map(|((p, v), h)| {
                let second = h.published.as_deref().unwrap_or("-");
                Some(format!("{} {v} {second} {}\n", hex(&h.sha256), p.to_str()?))
            })
            .collect();
        lines.sort();
        OutputFile::prepare(&self.path, "known parameter digests")?
            .commit_bytes(lines.concat().as_bytes())
    }
}

/// `HEX VERSION SECOND PATH` (the path may hold spaces: it is the rest of the line).
fn parse_line(line: &str) -> Option<((PathBuf, String), Hashed)> {
    let mut parts = line.splitn(4, ' ');
    let (d, version, second, path) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex_digits = |t: &str| t.bytes().all(|b| b.is_ascii_hexdigit());
    if d.len() != 64 || version.split(':').count() != 5 || path.is_empty() {
        return None;
    }
    if second != "-" && !hex_digits(second) {
        return None;
    }
    let mut sha256 = [0u8; 32];
    for (i, b) in sha256.iter_mut().enumerate() {
        *b = u8::from_str_radix(d.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    let published = (second != "-").then(|| second.to_string());
    Some((
        (PathBuf::from(path), version.to_string()),
        Hashed { sha256, published },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_digest_is_found_after_reopening_only_for_the_same_version() {
        let d = std::env::temp_dir().join(format!("bellows-known-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("a b.params");
        std::fs::write(&file, b"one").unwrap();
        let v1 = FileVersion::of_path(&file).unwrap();
        let table = d.join("params-digests");
        let h = |b: u8, second: Option<&str>| Hashed {
            sha256: [b; 32],
            published: second.map(str::to_string),
        };
        KnownDigests::open(&table).insert(&file, &v1, h(7, Some("00ff")));
        // A torn line after a crash, and a line of another shape, are skipped.
        let mut text = std::fs::read_to_string(&table).unwrap();
        text.push_str("zz 1:2 /x\n0123");
        std::fs::write(&table, text).unwrap();

        let again = KnownDigests::open(&table);
        assert_eq!(again.get(&file, &v1), Some(h(7, Some("00ff"))));
        std::fs::write(&file, b"three").unwrap();
        let v2 = FileVersion::of_path(&file).unwrap();
        assert_ne!(v1, v2);
        assert_eq!(again.get(&file, &v2), None);
        // The new version replaces the old one's line.
        again.insert(&file, &v2, h(9, None));
        let last = KnownDigests::open(&table);
        assert_eq!(last.get(&file, &v2), Some(h(9, None)));
        assert_eq!(last.get(&file, &v1), None);
        assert_eq!(std::fs::read_to_string(&table).unwrap().lines().count(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
