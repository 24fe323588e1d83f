//! The directories the daemon reads parameters from, and nothing else.
//!
//! A client names a parameters file by its path on the daemon's host. The daemon reads it only
//! when it lies inside one of the configured directories (`--params-dir`, repeatable; by default
//! the state directory's `params/` and, in a build with Filecoin support,
//! `FIL_PROOFS_PARAMETER_CACHE`). A path outside them gets one answer whether it exists or not,
//! a file, a folder or a device, and none of its bytes is read: the daemon is no oracle for
//! the rest of its host's files.
//!
//! The check is made twice: on the path as written, with `.` and `..` folded (so nothing
//! outside is even looked at), then on the path with every link resolved (so a link inside
//! that points outside is refused the same way).

use std::path::{Component, Path, PathBuf};

use crate::error::{Result, ServeError};

/// Longest parameters path a request may give, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// The configured parameter directories (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ParamsDirs {
    /// Canonical (absolute, links resolved).
    dirs: Vec<PathBuf>,
}

/// `p` with `.` removed and `..` folded into its parent, without touching the file system.
fn fold(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

impl ParamsDirs {
    /// The directories `dirs`, each made canonical. A directory that does not exist is left
    /// out with a warning (it cannot hold anything yet; restart the daemon once it does).
    pub fn new(dirs: &[PathBuf]) -> Self {
        let mut out = Vec::new();
        for d in dirs {
            match std::fs::canonicalize(d) {
                Ok(c) if c.is_dir() => {
                    if !out.contains(&c) {
                        out.push(c);
                    }
                }
                Ok(_) => tracing::warn!(
                    "parameters directory {} is not a folder: no parameters are read from it",
                    d.display()
                ),
                Err(e) => tracing::warn!(
                    "parameters directory {}: {e}: no parameters are read from it",
                    d.display()
                ),
            }
        }
        Self { dirs: out }
    }

    /// The directories, canonical.
    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    fn inside(&self, p: &Path) -> bool {
        self.dirs.iter().any(|d| p.starts_with(d))
    }

    fn outside(&self, requested: &Path) -> ServeError {
        ServeError::invalid(format!(
            "parameters file {} is not inside the directories this daemon reads parameters from \
             ({}; the daemon's --params-dir)",
            requested.display(),
            if self.dirs.is_empty() {
                "none is configured".to_string()
            } else {
                self.dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ))
    }

    /// The canonical path of `requested` (an absolute path) if it lies inside the
    /// directories; the same refusal for anything outside (see the module docs). Inside, a
    /// file that does not exist is `NOT_FOUND` with its name.
    pub fn resolve(&self, requested: &Path) -> Result<PathBuf> {
        if requested.as_os_str().len() > MAX_PATH_BYTES {
            return Err(ServeError::invalid(format!(
                "a parameters path of {} bytes: at most {MAX_PATH_BYTES}",
                requested.as_os_str().len()
            )));
        }
        if !requested.is_absolute() {
            return Err(ServeError::invalid(format!(
                "parameters path {} is relative: give its absolute path on the daemon's host",
                requested.display()
            )));
        }
        let folded = fold(requested);
        // Lexically inside first: nothing outside is looked at.
        if !self.inside(&folded) {
            return Err(self.outside(requested));
        }
        let canon = std::fs::canonicalize(&folded)
            .map_err(|e| ServeError::io(format!("parameters file {}", requested.display()), e))?;
        if !self.inside(&canon) {
            return Err(self.outside(requested));
        }
        Ok(canon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paths_inside_are_resolved_and_outside_gets_one_answer() {
        let root = std::env::temp_dir().join(format!("bellows-dirs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let (inside, outside) = (root.join("in"), root.join("out"));
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(inside.join("p.params"), b"x").unwrap();
        std::fs::write(outside.join("secret"), b"x").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), inside.join("link")).unwrap();
        let dirs = ParamsDirs::new(&[inside.clone(), root.join("missing")]);
        assert_eq!(dirs.dirs().len(), 1);
        let canon_in = std::fs::canonicalize(&inside).unwrap();
        assert_eq!(
            dirs.resolve(&inside.join("p.params")).unwrap(),
            canon_in.join("p.params")
        );
        // Outside: existing, missing, a folder, through `..` or a link, all the same answer.
        let answers: Vec<String> = [
            outside.join("secret"),
            outside.join("nothing"),
            outside.clone(),
            inside.join("../out/secret"),
            inside.join("link"),
            PathBuf::from("/dev/zero"),
        ]
        .iter()
        .map(|p| {
            let e = dirs.resolve(p).unwrap_err().to_string();
            assert!(e.contains("not inside"), "{e}");
            e.replace(&p.display().to_string(), "PATH")
        })
        .collect();
        assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");
        // Inside, a missing file is named as missing.
        let e = dirs.resolve(&inside.join("gone.params")).unwrap_err();
        assert!(
            matches!(&e, ServeError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
            "{e}"
        );
        assert!(dirs.resolve(Path::new("rel/p.params")).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
