//! The on-disk cache of recordings: one file per circuit identifier, `<dir>/<id>.pce`, written
//! atomically and memory-mapped on load.
//!
//! The folder is `$BELLOWS_PCE_DIR`, else `$XDG_CACHE_HOME/bellows/pce`, else
//! `~/.cache/bellows/pce`. An entry is looked up by its circuit identifier; the file carries the
//! shape digest, which loading checks against the contents (and [`PceCache::load`] against an
//! expected digest when the caller knows one), and the witness-only pass checks counts and
//! sampled rows against the circuit, so a stale or foreign entry is refused, never used.
//!
//! **Authenticated entries.** The digests inside a file only show it is whole: whoever can write
//! the folder can edit an entry and compute them again. So every entry written here ends with a
//! tag: HMAC-SHA-256 (RFC 2104), under a key kept in the folder (`.key`, 32 random bytes,
//! readable by its owner only, made on first use), of the entry's identifier, its shape digest
//! and its header check, appended to the image in the same file (renamed into place at once, so
//! no reader sees an entry without its tag). Loading checks the digests against the contents and the
//! tag against the digests, so an entry edited with its digests recomputed is refused unless its
//! editor could also read the key. [`PceCache::load_or_record`] records again (with a warning) an
//! entry that has no tag (written before tags, or copied in from elsewhere) and refuses one whose
//! tag is wrong.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use bellpepper_core::Circuit;
use blstrs::Scalar;
use hmac::{Hmac, Mac};
use sha2::Sha256;

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

    /// Loads entry `id`, checked (see [`Pce::load`]) and authenticated by its tag (the module
    /// documentation); with `digest`, a recording of another shape is refused too.
    pub fn load(&self, id: &str, digest: Option<&[u8; 32]>) -> Result<Pce> {
        let path = self.path(id)?;
        let (pce, tag) = self.read(&path, id)?;
        match self.tag_matches(&pce, tag)? {
            Some(true) => {}
            Some(false) => {
                return Err(Error::malformed(
                    format!("pre-compiled constraint system {}", path.display()),
                    "its tag does not match this cache's key: the entry was edited, or written \
                     under another key; delete it and record it again (`bellows pce build`)",
                ))
            }
            None => {
                return Err(Error::malformed(
                    format!("pre-compiled constraint system {}", path.display()),
                    "it has no tag from this cache's key (written by an older Bellows, or \
                     copied in from elsewhere); record it again (`bellows pce build`)",
                ))
            }
        }
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
        self.save(&pce, &path)?;
        Ok((pce, took))
    }

    /// Writes `pce` into the cache as the entry of its identifier, with its tag (atomically).
    pub fn store(&self, pce: &Pce) -> Result<()> {
        self.save(pce, &self.path(pce.id())?)
    }

    /// Writes `pce` to `path` with its tag.
    fn save(&self, pce: &Pce, path: &Path) -> Result<()> {
        let key = self
            .key(true)?
            .ok_or_else(|| Error::invalid("internal error: no cache key after making one"))?;
        let image = pce.image();
        let mut bytes = Vec::with_capacity(image.len() + super::TAG_TRAILER);
        bytes.extend_from_slice(image);
        bytes.extend_from_slice(&self.tag(pce, &key));
        bytes.extend_from_slice(super::TAG_TRAILER_MAGIC);
        write_atomically(path, &bytes)
    }

    /// Reads entry `id` at `path` (checked) and the tag it ends with, if any.
    fn read(&self, path: &Path, id: &str) -> Result<(Pce, Option<[u8; 32]>)> {
        Pce::read_tagged(path, Some(id))
    }

    /// The cache's key, made (32 random bytes, mode 0600) when `create` and there is none yet.
    fn key(&self, create: bool) -> Result<Option<[u8; 32]>> {
        let path = self.dir.join(KEY_FILE);
        let io = |what: &str, e| Error::io(format!("{what} the cache key {}", path.display()), e);
        match std::fs::read(&path) {
            Ok(b) => {
                return b.try_into().map(Some).map_err(|b: Vec<u8>| {
                    Error::malformed(
                        format!("cache key {}", path.display()),
                        format!(
                            "{} bytes, expected 32; delete it (and the entries)",
                            b.len()
                        ),
                    )
                })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io("reading", e)),
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| Error::io(format!("creating the folder {}", self.dir.display()), e))?;
        let mut key = [0u8; 32];
        rand_core::RngCore::fill_bytes(&mut rand_core::OsRng, &mut key);
        // Written whole under a name of this call's own, then linked into place: a reader never
        // sees a key file still being written (it did, empty, under concurrent writers), and
        // the link fails where another writer published its key first.
        let tmp = self.dir.join(format!(
            "{KEY_FILE}.{}.{:016x}.tmp",
            std::process::id(),
            rand_core::RngCore::next_u64(&mut rand_core::OsRng)
        ));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let written = opts.open(&tmp).and_then(|mut f| {
            std::io::Write::write_all(&mut f, &key)?;
            f.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("writing", e));
        }
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(Some(key)),
            // Another process made it first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => self.key(false),
            Err(e) => Err(io("creating", e)),
        }
    }

    /// HMAC-SHA-256 under `key` of what identifies `pce`'s contents.
    fn tag(&self, pce: &Pce, key: &[u8; 32]) -> [u8; 32] {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes any key length");
        self.feed(&mut mac, pce);
        mac.finalize().into_bytes().into()
    }

    /// What a tag covers: the domain, the identifier, the shape digest and the header check
    /// (which loading checks against the image's every byte).
    fn feed(&self, mac: &mut Hmac<Sha256>, pce: &Pce) {
        mac.update(TAG_DOMAIN);
        mac.update(&(pce.header.id.len() as u64).to_le_bytes());
        mac.update(pce.header.id.as_bytes());
        mac.update(&pce.header.shape_digest);
        mac.update(&pce.header.header_check);
    }

    /// Whether `tag` (an entry's) is `pce`'s under this cache's key; `None` when there is no tag
    /// (or no key).
    fn tag_matches(&self, pce: &Pce, tag: Option<[u8; 32]>) -> Result<Option<bool>> {
        let (Some(tag), Some(key)) = (tag, self.key(false)?) else {
            return Ok(None);
        };
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&key).expect("HMAC takes any key length");
        self.feed(&mut mac, pce);
        Ok(Some(mac.verify_slice(&tag).is_ok()))
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
        self.load_or_record_with(id, || Pce::record(circuit, id))
    }

    /// As [`PceCache::load_or_record`], recording with `record` when the folder has no
    /// recording of `id` (for a circuit recorded in parts: [`Pce::record_repeated`]).
    pub fn load_or_record_with(
        &self,
        id: &str,
        record: impl FnOnce() -> Result<Pce>,
    ) -> Result<(Pce, Source)> {
        let path = self.path(id)?;
        if path.is_file() {
            let (found, tag) = self.read(&path, id)?;
            match self.tag_matches(&found, tag)? {
                Some(true) => return Ok((found, Source::Loaded)),
                Some(false) => return self.load(id, None).map(|p| (p, Source::Loaded)),
                None => tracing::warn!(
                    "{}: no tag from this cache's key (written by an older Bellows or elsewhere); \
                     recording it again",
                    path.display()
                ),
            }
        }
        let pce = record()?;
        match self.save(&pce, &path) {
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

/// The cache key's file in the folder (hidden: not listed as an entry).
const KEY_FILE: &str = ".key";

/// What a tag's MAC covers first, so that no other use of the key can produce one.
const TAG_DOMAIN: &[u8] = b"bellows pce entry tag v1\0";
