//! The on-disk cache of recordings: one file per circuit identifier, `<dir>/<id>.pce`, written
//! atomically and memory-mapped on load.
//!
//! The folder is `$BELLOWS_PCE_DIR`, else `$XDG_CACHE_HOME/bellows/pce`, else
//! `~/.cache/bellows/pce`. An entry is looked up by its circuit identifier; the file carries the
//! shape digest, which loading checks against the contents (and [`PceCache::load`] against an
//! expected digest when the caller knows one), and the witness-only pass checks counts and
//! sampled rows against the circuit, so a stale or foreign entry is refused, never used.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use bellpepper_core::Circuit;
use blstrs::Scalar;

use super::{format, Pce};
use crate::{circuits::CircuitSpec, Error, Result};

/// The circuit identifier of a built-in circuit instance: `synthetic-k20-b90`, `sha256-n55`.
pub fn builtin_id(spec: &CircuitSpec) -> String {
    match spec {
        CircuitSpec::Synthetic { log_size, bits_pct } => {
            format!("synthetic-k{log_size}-b{bits_pct}")
        }
        CircuitSpec::Sha256 { bytes } => format!("sha256-n{bytes}"),
    }
}

/// A folder of recordings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PceCache {
    dir: PathBuf,
}

/// How [`PceCache::load_or_record`] got its recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Loaded (memory-mapped) from the cache.
    Loaded,
    /// Recorded now and written to the cache.
    RecordedAndSaved,
    /// Recorded now; writing it to the cache failed (the error was logged), so it lives in
    /// memory only.
    RecordedNotSaved,
}

impl PceCache {
    /// A cache in `dir` (created when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// The default folder (see the module docs), or an error when none can be determined.
    pub fn default_dir() -> Result<PathBuf> {
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        if let Some(d) = env("BELLOWS_PCE_DIR") {
            return Ok(PathBuf::from(d));
        }
        if let Some(d) = env("XDG_CACHE_HOME") {
            return Ok(PathBuf::from(d).join("bellows").join("pce"));
        }
        if let Some(h) = env("HOME") {
            return Ok(PathBuf::from(h).join(".cache").join("bellows").join("pce"));
        }
        Err(Error::invalid(
            "no folder for pre-compiled constraint systems: set BELLOWS_PCE_DIR or pass --pce-dir",
        ))
    }

    /// The cache in `dir`, or in the default folder.
    pub fn open(dir: Option<&Path>) -> Result<Self> {
        Ok(Self::new(match dir {
            Some(d) => d.to_path_buf(),
            None => Self::default_dir()?,
        }))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of entry `id`. Identifiers are restricted to `[A-Za-z0-9._-]` so that an entry
    /// is always a plain file name inside the folder.
    pub fn path(&self, id: &str) -> Result<PathBuf> {
        let ok = !id.is_empty()
            && id.len() <= format::MAX_ID_LEN
            && !id.starts_with('.')
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
        if !ok {
            return Err(Error::invalid(format!(
                "circuit identifier {id:?} is not usable as a cache entry (1..={} characters of \
                 A-Z a-z 0-9 . _ -, not starting with '.')",
                format::MAX_ID_LEN
            )));
        }
        Ok(self.dir.join(format!("{id}.pce")))
    }

    /// Whether an entry for `id` exists (not whether it is valid).
    pub fn contains(&self, id: &str) -> bool {
        self.path(id).is_ok_and(|p| p.is_file())
    }

    /// Loads entry `id`, checked (see [`Pce::load`]); with `digest`, a recording of another
    /// shape is refused too.
    pub fn load(&self, id: &str, digest: Option<&[u8; 32]>) -> Result<Pce> {
        let path = self.path(id)?;
        let pce = Pce::load(&path, Some(id))?;
        if let Some(d) = digest {
            if pce.digest() != *d {
                return Err(Error::malformed(
                    format!("pre-compiled constraint system {}", path.display()),
                    format!(
                        "its shape digest is {}, expected {}",
                        pce.digest_hex(),
                        format::hex(d)
                    ),
                ));
            }
        }
        Ok(pce)
    }

    /// Records `circuit` as entry `id` and writes it atomically; returns it with the recording
    /// time (the write not included).
    pub fn build<C: Circuit<Scalar>>(&self, circuit: C, id: &str) -> Result<(Pce, Duration)> {
        let path = self.path(id)?;
        let t = Instant::now();
        let pce = Pce::record(circuit, id)?;
        let took = t.elapsed();
        pce.save(&path)?;
        Ok((pce, took))
    }

    /// Loads entry `id` when it exists; otherwise records `circuit` (one run of the circuit's
    /// constraint code) and writes it to the cache, keeping it in memory if the write fails.
    /// An entry that exists but is refused (corrupted, another version, another circuit) is an
    /// error, not silently replaced: the message says how to rebuild it.
    pub fn load_or_record<C: Circuit<Scalar>>(
        &self,
        circuit: C,
        id: &str,
    ) -> Result<(Pce, Source)> {
        let path = self.path(id)?;
        if path.is_file() {
            return Ok((self.load(id, None)?, Source::Loaded));
        }
        let pce = Pce::record(circuit, id)?;
        match pce.save(&path) {
            Ok(()) => Ok((pce, Source::RecordedAndSaved)),
            Err(e) => {
                tracing::warn!("not caching the recording of {id}: {e}");
                Ok((pce, Source::RecordedNotSaved))
            }
        }
    }

    /// The entries in the folder (file names ending in `.pce`), sorted.
    pub fn list(&self) -> Result<Vec<PathBuf>> {
        let rd = match std::fs::read_dir(&self.dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(format!("listing {}", self.dir.display()), e)),
        };
        let mut out: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "pce")
                    && !p
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
            })
            .collect();
        out.sort();
        Ok(out)
    }
}

/// Writes `bytes` to `path` atomically through core's one output writer
/// ([`crate::groth16::output::OutputFile`]: an unnamed or uniquely named temporary file beside
/// the target, flushed, then renamed over it, so concurrent writers never share one and a
/// crash leaves nothing behind). The folder is created if missing.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let what = "pre-compiled constraint system";
    if let Some(d) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)
            .map_err(|e| Error::io(format!("creating the folder {}", d.display()), e))?;
    }
    crate::groth16::output::OutputFile::prepare(path, what)?.commit_bytes(bytes)
}
