//! A small table kept in one text file: for each file, by canonical path, the [`FileVersion`]
//! something was learned of it at and what was learned (a digest: hashing a 47 GB parameters
//! file is what such a table saves, in a daemon's restart or the next process).
//!
//! One line a file: the row's first word, the version, the row's other words, the path (the rest
//! of the line: it may hold spaces). A row is found only for the same canonical path at the same
//! version (device, inode, length, modification and change time: a file written to since has
//! another change time, which a user cannot set back). Lines that do not parse are skipped, so a
//! torn last line after a crash costs what the row saved, never an error. The file is read
//! anew at each lookup (another process may have written it) and rewritten whole through
//! [`OutputFile`] (a temporary file renamed over it), so a reader never sees half of it; a
//! failure to write is logged, not returned: what the row holds is still right, it is only not
//! kept.

use std::{
    collections::HashMap,
    marker::PhantomData,
    path::{Path, PathBuf},
    sync::Mutex,
};

use super::FileVersion;
use crate::groth16::output::OutputFile;

/// What a [`VersionTable`] keeps for a file: a fixed number of words without spaces.
pub trait TableRow: Sized {
    /// The number of words in a line (at least one).
    const WORDS: usize;
    /// The row as its words.
    fn to_words(&self) -> Vec<String>;
    /// The row from its words, if they are one.
    fn from_words(words: &[&str]) -> Option<Self>;
}

/// A table of rows by file and version, kept in one file ([module docs](self)).
#[derive(Debug)]
pub struct VersionTable<R> {
    path: PathBuf,
    what: &'static str,
    /// Held across a read and the write after it, so that two records in one process do not
    /// lose each other's row.
    writing: Mutex<()>,
    rows: PhantomData<fn() -> R>,
}

impl<R: TableRow> VersionTable<R> {
    /// The table kept in `path` (created on the first record, its folder too); `what` names it
    /// in the log.
    pub fn new(path: impl Into<PathBuf>, what: &'static str) -> Self {
        Self {
            path: path.into(),
            what,
            writing: Mutex::new(()),
            rows: PhantomData,
        }
    }

    /// The row recorded for the file at `file` (any path to it) at `version`.
    pub fn get(&self, file: &Path, version: &FileVersion) -> Option<R> {
        let file = std::fs::canonicalize(file).ok()?;
        let (v, row) = self.read().remove(&file)?;
        (v == version.to_string()).then_some(row)
    }

    /// Records `row` for the file at `file` at `version`, replacing what was recorded for that
    /// file. A failure to write is logged: the next lookup finds nothing.
    pub fn record(&self, file: &Path, version: &FileVersion, row: R) {
        let _writing = self.writing.lock().unwrap_or_else(|e| e.into_inner());
        let result = std::fs::canonicalize(file)
            .map_err(|e| crate::Error::io(format!("resolving {}", file.display()), e))
            .and_then(|file| {
                let mut table = self.read();
                table.insert(file, (version.to_string(), row));
                self.write(&table)
            });
        if let Err(e) = result {
            tracing::warn!(
                "{} not saved to {} ({e}): what it holds of {} is learned again next time",
                self.what,
                self.path.display(),
                file.display()
            );
        }
    }

    /// Each recorded path's version and row. A missing file is an empty table; an unreadable
    /// one too, with a warning.
    fn read(&self) -> HashMap<PathBuf, (String, R)> {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => text.lines().filter_map(parse_line::<R>).collect(),
            Err(e) => {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!("{} {} not read ({e})", self.what, self.path.display());
                }
                HashMap::new()
            }
        }
    }

    /// The table written whole, sorted, the folder made first.
    fn write(&self, table: &HashMap<PathBuf, (String, R)>) -> crate::Result<()> {
        let mut lines: Vec<String> = table
            .iter()
            .filter_map(|(p, (v, row))| {
                let mut words = row.to_words();
                // The version goes after the first word (the line form's order).
                words.insert(1.min(words.len()), v.clone());
                Some(format!("{} {}\n", words.join(" "), p.to_str()?))
            })
            .collect();
        lines.sort();
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                crate::Error::io(format!("creating the folder {}", dir.display()), e)
            })?;
        }
        OutputFile::prepare(&self.path, self.what)?.commit_bytes(lines.concat().as_bytes())
    }
}

/// `FIRST VERSION REST… PATH`, the row's words read by `R`: (path, (version, row)).
fn parse_line<R: TableRow>(line: &str) -> Option<(PathBuf, (String, R))> {
    let mut parts = line.splitn(R::WORDS + 2, ' ');
    let first = parts.next()?;
    let version = parts.next()?;
    let mut words = vec![first];
    for _ in 1..R::WORDS {
        words.push(parts.next()?);
    }
    let path = parts.next()?;
    if version.split(':').count() != 5 || path.is_empty() || words.iter().any(|w| w.is_empty()) {
        return None;
    }
    let row = R::from_words(&words)?;
    Some((PathBuf::from(path), (version.to_string(), row)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two hex words, the second `-` when absent.
    #[derive(Clone, Debug, PartialEq)]
    struct Pair(String, Option<String>);

    impl TableRow for Pair {
        const WORDS: usize = 2;
        fn to_words(&self) -> Vec<String> {
            vec![self.0.clone(), self.1.clone().unwrap_or_else(|| "-".into())]
        }
        fn from_words(w: &[&str]) -> Option<Self> {
            let hex = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_hexdigit());
            (hex(w[0]) && (w[1] == "-" || hex(w[1])))
                .then(|| Pair(w[0].into(), (w[1] != "-").then(|| w[1].into())))
        }
    }

    #[test]
    fn a_row_is_found_only_for_the_same_file_version_and_survives_torn_lines() {
        let d = std::env::temp_dir().join(format!("bellows-vtable-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let file = d.join("a b.params");
        std::fs::write(&file, b"one").unwrap();
        let v1 = FileVersion::of_path(&file).unwrap();
        let path = d.join("sub").join("digests");
        let table = VersionTable::<Pair>::new(&path, "test digests");
        assert_eq!(table.get(&file, &v1), None);
        let row = Pair("00ff".into(), Some("0a".into()));
        table.record(&file, &v1, row.clone());
        // A torn line after a crash, a line of another shape and a row its type refuses are
        // skipped.
        let mut text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, format!("00ff {v1} 0a {}\n", file.display()));
        text.push_str(&format!("zz {v1} - /x\n0123"));
        std::fs::write(&path, text).unwrap();
        let table = VersionTable::<Pair>::new(&path, "test digests");
        assert_eq!(table.get(&file, &v1), Some(row));
        // Through another path to the same file, too.
        let other = d.join("sub").join("..").join("a b.params");
        assert_eq!(table.get(&other, &v1).map(|r| r.0), Some("00ff".into()));
        // Another version of the file: nothing; its record replaces the old one's line.
        std::fs::write(&file, b"two").unwrap();
        let v2 = FileVersion::of_path(&file).unwrap();
        assert_ne!(v1, v2);
        assert_eq!(table.get(&file, &v2), None);
        table.record(&file, &v2, Pair("0b".into(), None));
        assert_eq!(table.get(&file, &v2), Some(Pair("0b".into(), None)));
        assert_eq!(table.get(&file, &v1), None);
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
        // A file that is not there has no row.
        assert_eq!(table.get(&d.join("gone"), &v2), None);
        let _ = std::fs::remove_dir_all(&d);
    }
}
