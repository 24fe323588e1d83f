//! Digests already matched, kept across processes: a published parameters file is hashed once
//! per version, not in every `porep c2` (47 GB of blake2b on one core is about a minute).
//!
//! A core [`VersionTable`]: a line a file, the digest in `parameters.json`'s form, the file's
//! version and its canonical path. A digest is taken from here only for the same path at the
//! same version, and only when it is the digest the manifest asks for now.

use std::path::{Path, PathBuf};

use bellows_core::groth16::io::{FileVersion, TableRow, VersionTable};

/// A digest in the manifest's form (hex).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Matched(String);

impl TableRow for Matched {
    const WORDS: usize = 1;

    fn to_words(&self) -> Vec<String> {
        vec![self.0.clone()]
    }

    fn from_words(words: &[&str]) -> Option<Self> {
        let d = words.first()?;
        (!d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Matched(d.to_string()))
    }
}

/// The table of matched digests kept in one file.
#[derive(Debug)]
pub struct DigestMemo(VersionTable<Matched>);

impl DigestMemo {
    /// The table kept in `path` (created on first record).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self(VersionTable::new(path, "matched parameter digests"))
    }

    /// Whether the file at `file` (any path to it), at `version`, was recorded with `digest`.
    pub fn matches(&self, file: &Path, version: &FileVersion, digest: &str) -> bool {
        self.0.get(file, version).is_some_and(|m| m.0 == digest)
    }

    /// Records that the file at `file`, at `version`, has `digest` (replacing what was recorded
    /// for that file). A failure to write is logged: the next process hashes the file again.
    pub fn record(&self, file: &Path, version: &FileVersion, digest: &str) {
        self.0.record(file, version, Matched(digest.to_string()))
    }
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
        let table = d.join("sub").join("params-digests");
        let memo = DigestMemo::new(&table);
        assert!(!memo.matches(&file, &v1, "00ff"));
        memo.record(&file, &v1, "00ff");
        // `DIGEST VERSION PATH`, the form of earlier releases.
        let text = std::fs::read_to_string(&table).unwrap();
        assert_eq!(text, format!("00ff {v1} {}\n", file.display()));
        let memo = DigestMemo::new(&table);
        assert!(memo.matches(&file, &v1, "00ff"));
        // Another digest asked for, or another version of the file: not matched.
        assert!(!memo.matches(&file, &v1, "00fe"));
        std::fs::write(&file, b"two").unwrap();
        let v2 = FileVersion::of_path(&file).unwrap();
        assert!(!memo.matches(&file, &v2, "00ff"));
        memo.record(&file, &v2, "0a0b");
        assert!(memo.matches(&file, &v2, "0a0b") && !memo.matches(&file, &v1, "00ff"));
        let _ = std::fs::remove_dir_all(&d);
    }
}
