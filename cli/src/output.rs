//! The output files of a command, checked and prepared before its work starts.
//!
//! Every output path is prepared with core's writer ([`OutputFile`]: atomic for regular files,
//! straight through for devices and FIFOs) before any proving or setup, so a bad path costs
//! nothing. An output that is the same file as an input, or as another output, is a usage error
//! (exit 2); an existing regular file is replaced only with `--force`. Two outputs may share a
//! character device (`--out /dev/null --inputs-out /dev/null`).

use std::path::Path;

use bellows_core::groth16::output::{FileId, OutputFile, OutputKind};

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

fn is_char_device(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Checks and prepares `outputs` (in order) against `inputs` (option name and path).
pub fn prepare(
    inputs: &[(&'static str, &Path)],
    outputs: &[Out<'_>],
    force: bool,
) -> Result<Vec<OutputFile>> {
    // Same-file conflicts first: they are usage errors whatever the files hold.
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
    let mut prepared = Vec::with_capacity(outputs.len());
    for o in outputs {
        let f = OutputFile::prepare(o.path, o.what)?;
        if f.kind() == OutputKind::ReplacesFile && !force {
            return Err(bellows_core::Error::invalid(format!(
                "{} {} already exists: give --force to replace it",
                o.what,
                o.path.display()
            ))
            .into());
        }
        prepared.push(f);
    }
    Ok(prepared)
}
