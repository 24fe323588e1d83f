//! The output files of a command: checked before its work starts, written together after it.
//!
//! Every output path is checked before any proving or setup, so a bad path costs nothing: a
//! path that names a folder (`out/`, `x/.`), an output that is the same file as an input or as
//! another output (usage errors, exit 2), an existing regular file without `--force`, a missing
//! folder (core's writer, [`OutputFile`], finds the rest). Two outputs may share a character
//! device (`--out /dev/null --inputs-out /dev/null`).
//!
//! Writing is **one transaction**: a command's regular files are all written and synced first,
//! each to a temporary file beside its target, and only then renamed over their targets; a
//! rename that fails puts back the files already renamed (the previous file of each is kept as
//! a hard link until the end), so a failure leaves every previous file as it was, never new
//! parameters beside an old key. Character devices and FIFOs (written straight through, they
//! cannot be taken back) are written after the temporary files and before any rename. One
//! output alone is core's atomic write as it is.
//!
//! A process killed while it writes several outputs can leave the temporary files of those it
//! finished (`.NAME.PID.N.staged`, beside their targets); the targets themselves are untouched.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bellows_core::groth16::output::{FileId, OutputFile, OutputKind};
use bellows_core::Error;

use crate::error::{CliError, Result};

/// One output: its option name, path and what it holds (`"proof file"`).
pub struct Out<'a> {
    /// `--out`.
    pub opt: &'static str,
    /// The path given.
    pub path: &'a Path,
    /// What it holds, for messages.
    pub what: &'static str,
}

/// What an output's content is written by.
pub type Content<'a> = Box<dyn FnOnce(&mut dyn Write) -> bellows_core::Result<()> + 'a>;

/// Content that is these bytes.
pub fn bytes(b: &[u8]) -> Content<'_> {
    Box::new(move |w| {
        w.write_all(b)
            .map_err(|e| Error::io("writing".to_string(), e))
    })
}

fn is_char_device(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
}

/// Whether the path as written names a folder (`out/`, `x/.`, `..`): writing a file there
/// could only fail, after the work.
fn names_a_folder(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let b = path.as_os_str().as_bytes();
    b.ends_with(b"/") || b.ends_with(b"/.") || b.ends_with(b"/..") || b == b"." || b == b".."
}

/// One prepared output.
struct Entry {
    path: PathBuf,
    what: &'static str,
    file: OutputFile,
}

/// The outputs of one command, checked (see the module docs).
pub struct Outputs {
    entries: Vec<Entry>,
}

/// Checks and prepares `outputs` (in order) against `inputs` (option name and path).
pub fn prepare(
    inputs: &[(&'static str, &Path)],
    outputs: &[Out<'_>],
    force: bool,
) -> Result<Outputs> {
    // Usage errors first: they hold whatever the files are.
    for o in outputs {
        if names_a_folder(o.path) {
            return Err(CliError::Usage(format!(
                "{} {} names a folder: give the path of a file",
                o.opt,
                o.path.display()
            )));
        }
    }
    let ids: Vec<FileId> = outputs.iter().map(|o| FileId::of(o.path)).collect();
    for (o, id) in outputs.iter().zip(&ids) {
        for (opt, path) in inputs {
            if FileId::of(path) == *id {
                return Err(CliError::Usage(format!(
                    "{} {} is the same file as {opt} {}: refusing to overwrite an input",
                    o.opt,
                    o.path.display(),
                    path.display()
                )));
            }
        }
    }
    for i in 0..outputs.len() {
        for j in 0..i {
            if ids[i] == ids[j] && !is_char_device(outputs[i].path) {
                return Err(CliError::Usage(format!(
                    "{} {} and {} {} are the same file: each output needs its own",
                    outputs[j].opt,
                    outputs[j].path.display(),
                    outputs[i].opt,
                    outputs[i].path.display()
                )));
            }
        }
    }
    let mut entries = Vec::with_capacity(outputs.len());
    for o in outputs {
        let file = OutputFile::prepare(o.path, o.what)?;
        if file.kind() == OutputKind::ReplacesFile && !force {
            return Err(Error::invalid(format!(
                "{} {} already exists: give --force to replace it",
                o.what,
                o.path.display()
            ))
            .into());
        }
        entries.push(Entry {
            path: o.path.to_path_buf(),
            what: o.what,
            file,
        });
    }
    Ok(Outputs { entries })
}

/// The prepared files one by one, each committed on its own: for a command with one output
/// (several go through [`Outputs::commit`], all or none).
impl IntoIterator for Outputs {
    type Item = OutputFile;
    type IntoIter = std::vec::IntoIter<OutputFile>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries
            .into_iter()
            .map(|e| e.file)
            .collect::<Vec<_>>()
            .into_iter()
    }
}

/// `--out` (the proofs) and `--inputs-out` (their public inputs, when given), the outputs of
/// `prove`, `submit` and `await`.
pub fn proof_outputs<'a>(out: &'a Path, inputs_out: Option<&'a Path>) -> Vec<Out<'a>> {
    let mut v = vec![Out {
        opt: "--out",
        path: out,
        what: "proof file",
    }];
    if let Some(p) = inputs_out {
        v.push(Out {
            opt: "--inputs-out",
            path: p,
            what: "public inputs file",
        });
    }
    v
}

/// Follows symbolic links from `path` to the file they name (which need not exist): the file a
/// rename must replace, so that a link stays a link.
fn link_target(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(dir) if t.is_relative() => dir.join(t),
                    _ => t,
                };
            }
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("more than 40 symbolic links"))
}

/// `dir/.NAME.PID.N.SUFFIX` beside `target`.
fn beside(target: &Path, suffix: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    target.with_file_name(format!(
        ".{name}.{}.{}.{suffix}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A regular file written to its temporary name, waiting to be renamed over `target`.
struct Staged {
    label: String,
    target: PathBuf,
    staged: PathBuf,
    /// Whether a file was there before.
    existed: bool,
    /// The previous file, kept as a hard link until the transaction ends.
    backup: Option<PathBuf>,
    installed: bool,
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.installed {
            let _ = std::fs::remove_file(&self.staged);
        }
        if let Some(b) = &self.backup {
            let _ = std::fs::remove_file(b);
        }
    }
}

impl Outputs {
    /// Writes output i with `contents[i]` (see the module docs): every regular file or none.
    pub fn commit(self, contents: Vec<Content<'_>>) -> Result<()> {
        assert_eq!(contents.len(), self.entries.len(), "one content per output");
        if self.entries.len() == 1 {
            let (e, c) = (self.entries.into_iter().next(), contents.into_iter().next());
            let (e, c) = (e.expect("one"), c.expect("one"));
            return Ok(e.file.commit(c)?);
        }
        let mut staged = Vec::new();
        let mut through = Vec::new();
        for (e, c) in self.entries.into_iter().zip(contents) {
            if e.file.kind() == OutputKind::WriteThrough {
                through.push((e, c));
                continue;
            }
            let label = format!("{} {}", e.what, e.path.display());
            drop(e.file); // its own temporary file goes; the staged one replaces it
            let target = link_target(&e.path)
                .map_err(|err| Error::io(format!("inspecting {label}"), err))?;
            let staged_path = beside(&target, "staged");
            let s = Staged {
                label: label.clone(),
                target,
                staged: staged_path.clone(),
                existed: false,
                backup: None,
                installed: false,
            };
            OutputFile::prepare(&staged_path, e.what)?.commit(c)?;
            if let Ok(m) = std::fs::metadata(&s.target) {
                // A replaced file keeps its permissions (best effort: the owner may differ).
                let _ = std::fs::set_permissions(&s.staged, m.permissions());
            }
            staged.push(s);
        }
        for (e, c) in through {
            e.file.commit(c)?;
        }
        install(&mut staged)
    }
}

/// Renames every staged file over its target; on a failure puts back the ones renamed.
fn install(staged: &mut [Staged]) -> Result<()> {
    for s in staged.iter_mut() {
        s.existed = s.target.exists();
        if s.existed {
            // Without hard links (some file systems) a failed rename cannot be undone; the
            // message then says which file was not put back.
            let b = beside(&s.target, "old");
            s.backup = std::fs::hard_link(&s.target, &b).is_ok().then_some(b);
        }
    }
    for k in 0..staged.len() {
        if let Err(e) = std::fs::rename(&staged[k].staged, &staged[k].target) {
            let undone = roll_back(&mut staged[..k]);
            return Err(Error::io(
                format!("renaming the new {} into place{undone}", staged[k].label),
                e,
            )
            .into());
        }
        staged[k].installed = true;
    }
    for s in staged.iter() {
        if let Some(dir) = s.target.parent() {
            // Make the renames durable (best effort: not every platform syncs a folder).
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
    }
    Ok(())
}

/// Puts back the previous files of `done` (renamed already); says what could not be.
fn roll_back(done: &mut [Staged]) -> String {
    let mut failed = Vec::new();
    for s in done.iter_mut().rev() {
        let r = match s.backup.take() {
            Some(b) => std::fs::rename(&b, &s.target).map_err(|e| {
                let kept = b.display().to_string();
                s.backup = None; // keep the link: it is the previous file now
                format!("{} (its previous content is in {kept}: {e})", s.label)
            }),
            None if s.existed => Err(format!("{} (no copy of its previous content)", s.label)),
            None => std::fs::remove_file(&s.target)
                .map_err(|e| format!("{} (the new file stays: {e})", s.label)),
        };
        if let Err(m) = r {
            failed.push(m);
        }
    }
    if failed.is_empty() {
        "; every output written before it was put back as it was".into()
    } else {
        format!("; NOT put back: {}", failed.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_rename_puts_back_the_files_renamed_before_it() {
        let d = std::env::temp_dir().join(format!("bellows-out-rollback-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("a"), d.join("b"));
        std::fs::write(&a, b"old a").unwrap();
        // `b` is a new file whose rename fails: a folder appears at its path after staging.
        let mut staged = Vec::new();
        for (t, content) in [(&a, b"new a"), (&b, b"new b")] {
            let s = beside(t, "staged");
            std::fs::write(&s, content).unwrap();
            staged.push(Staged {
                label: t.display().to_string(),
                target: t.clone(),
                staged: s,
                existed: false,
                backup: None,
                installed: false,
            });
        }
        std::fs::create_dir(&b).unwrap();
        std::fs::write(b.join("x"), b"").unwrap();
        let e = install(&mut staged).unwrap_err().to_string();
        assert!(e.contains("put back as it was"), "{e}");
        drop(staged);
        assert_eq!(std::fs::read(&a).unwrap(), b"old a");
        assert!(b.is_dir());
        // Nothing else: no staged file, no kept copy of `a`.
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 2);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn paths_that_name_folders_are_usage_errors() {
        for p in ["out/", "x/.", "..", "a/.."] {
            let e = prepare(
                &[],
                &[Out {
                    opt: "--out",
                    path: Path::new(p),
                    what: "proof file",
                }],
                false,
            )
            .err()
            .unwrap();
            assert!(
                matches!(&e, CliError::Usage(m) if m.contains("names a folder")),
                "{p}: {e}"
            );
        }
    }
}
