//! Digests already matched, kept across processes: a published parameters file is hashed once
//! per version, not in every `porep c2` (47 GB of blake2b on one core is about a minute).
//!
//! One line a file: the digest in `parameters.json`'s form, the file's [`FileVersion`] (device,
//! inode, length, modification and change time: a file written to since has another change
//! time, which a user cannot set back) and its canonical path. A digest is taken from here only
//! for the same path at the same version, and only when it is the digest the manifest asks for
//! now. Lines that do not parse are skipped; the file is rewritten whole through core's output
//! writer (a temporary file renamed over it), so a reader never sees half of it.

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
};

use bellows_core::groth16::{io::FileVersion, output::OutputFile};

/// The table of matched digests kept in one file.
#[derive(Clone, Debug)]
pub struct DigestMemo {
    path: PathBuf,
}

impl DigestMemo {
    /// The table kept in `path` (created on first record).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }

    /// Whether the file at `file` (any path to it), at `version`, was recorded with `digest`.
    pub fn matches(&self, file: &Path, version: &FileVersion, digest: &str) -> bool {
        let Ok(file) = std::fs::canonicalize(file) else {
            return false;
        };
        self.read()
            .get(&file)
            .is_some_and(|(v, d)| *v == version.to_string() && d == digest)
    }

    /// Records that the file at `file`, at `version`, has `digest` (replacing what was recorded
    /// for that path). A failure to write is logged: the next process hashes the file again.
    pub fn record(&self, file: &Path, version: &FileVersion, digest: &str) {
        let result = std::fs::canonicalize(file)
            .map_err(|e| bellows_core::Error::io(format!("resolving {}", file.display()), e))
            .and_then(|file| {
                let mut table = self.read();
                table.insert(file, (version.to_string(), digest.to_string()));
                self.write(&table)
            });
        if let Err(e) = result {
            tracing::warn!(
                "matched parameter digests not saved to {} ({e}): the next load hashes {} again",
                self.path.display(),
                file.display()
            );
        }
    }

    fn read(&self) -> HashMap<PathBuf, (String, String)> {
        std::fs::read_to_string(&self.path)
            .map(|text| text.lines().filter_map(parse_line).collect())
            .unwrap_or_default()
    }

    /// The table written whole through core's one output writer (a temporary file beside it,
    /// renamed over it), the folder made first.
    fn write(&self, table: &HashMap<PathBuf, (String, String)>) -> bellows_core::Result<()> {
        let mut lines: Vec<String> = table
            .iter()
            .filter_map(|(p, (v, d))| Some(format!("{d} {v} {}\n", p.to_str()?)))
            .collect();
        lines.sort();
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                bellows_core::Error::io(format!("creating the folder {}", dir.display()), e)
            })?;
        }
        OutputFile::prepare(&self.path, "matched parameter digests")?
            .commit_bytes(lines.concat().as_bytes())
    }
}

/// `DIGEST VERSION PATH` (the path may hold spaces: it is the rest of the line).
fn parse_line(line: &str) -> Option<(PathBuf, (String, String))> {
    let mut parts = line.splitn(3, ' ');
    let (d, v, p) = (parts.next()?, parts.next()?, parts.next()?);
    let hex = !d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit());
    (hex && v.split(':').count() == 5 && !p.is_empty())
        .then(|| (PathBuf::from(p), (v.to_string(), d.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_matched_only_for_the_same_file_version_and_digest() {
        let d = std::env::temp_dir().join(format!("bellows-memo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("a b.params");
        std::fs::write(&file, b"one").unwrap();
        let v1 = FileVersion::of_path(&file).unwrap();
        let memo = DigestMemo::new(d.join("sub").join("params-digests"));
        assert!(!memo.matches(&file, &v1, "00ff"));
        memo.record(&file, &v1, "00ff");
        // A torn line after a crash, and one of another shape, are skipped.
        let table = d.join("sub").join("params-digests");
        let mut text = std::fs::read_to_string(&table).unwrap();
        text.push_str("zz 1:2 /x\n0123");
        std::fs::write(&table, text).unwrap();
        let memo = DigestMemo::new(&table);
        assert!(memo.matches(&file, &v1, "00ff"));
        // Through another path to the same file, too.
        assert!(memo.matches(&d.join("sub").join("..").join("a b.params"), &v1, "00ff"));
        // Another digest asked for, or another version of the file: not matched.
        assert!(!memo.matches(&file, &v1, "00fe"));
        std::fs::write(&file, b"two").unwrap();
        let v2 = FileVersion::of_path(&file).unwrap();
        assert_ne!(v1, v2);
        assert!(!memo.matches(&file, &v2, "00ff"));
        // The new version replaces the old one's line.
        memo.record(&file, &v2, "0a0b");
        assert!(memo.matches(&file, &v2, "0a0b") && !memo.matches(&file, &v1, "00ff"));
        assert_eq!(std::fs::read_to_string(&table).unwrap().lines().count(), 1);
        let _ = std::fs::remove_dir_all(&d);
    }
}
