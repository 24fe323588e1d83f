//! Parameters kept resident across jobs, keyed by the SHA-256 digest of their file.
//!
//! A file is hashed once (the first time a job or a preload names it; later requests for the same
//! unchanged file — same device, inode, length and modification time — reuse the digest), its
//! shape (length fields) read without decoding, and its points decoded the first time a partition
//! needs them. Each device that proves with the parameters gets its own [`ProvingKey`] (the bases
//! made resident there), created on first use and kept. Decoded parameters count against the
//! parameters budget: when a load would exceed it, the least recently used others are evicted
//! (their memory is freed as soon as no partition in flight holds them), and a client can evict
//! a file explicitly.

use std::{
    collections::HashMap,
    io::Read,
    os::unix::fs::MetadataExt,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
};

use bellows_core::{
    groth16::{
        io::{ParamsFile, ParamsShape, PointCheck},
        prover::{G2Policy, ProvingKey},
        Parameters,
    },
    Backend,
};
use sha2::{Digest, Sha256};

use crate::error::{Result, ServeError};

/// A parameters file's SHA-256.
pub type ParamsDigest = [u8; 32];

/// Lower-case hex of a digest.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// What identifies one version of a file without reading it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
}

fn file_id(path: &Path) -> Result<FileId> {
    let m = std::fs::metadata(path)
        .map_err(|e| ServeError::io(format!("parameters file {}", path.display()), e))?;
    if !m.is_file() {
        return Err(ServeError::invalid(format!(
            "parameters {} is not a regular file",
            path.display()
        )));
    }
    Ok(FileId {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
    })
}

fn hash_file(path: &Path) -> Result<ParamsDigest> {
    let ctx = || format!("hashing parameters file {}", path.display());
    let mut f = std::fs::File::open(path).map_err(|e| ServeError::io(ctx(), e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| ServeError::io(ctx(), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().into())
}

/// The decoded parameters and the point check they were read with.
struct Loaded {
    params: Arc<Parameters>,
    full_check: bool,
}

/// One parameters file known to the daemon.
pub struct ParamsEntry {
    /// SHA-256 of the file.
    pub digest: ParamsDigest,
    /// The file (canonical path).
    pub path: PathBuf,
    /// Its length fields.
    pub shape: ParamsShape,
    id: FileId,
    loaded: Mutex<Option<Loaded>>,
    keys: Mutex<HashMap<usize, Arc<ProvingKey>>>,
    /// Bit d: a proving key for device d exists (its bases are resident there). Read without a
    /// lock by the per-device memory accounting ([`crate::engine`]).
    resident_on: AtomicU64,
    last_used: AtomicU64,
    decodes: AtomicU64,
}

impl std::fmt::Debug for ParamsEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsEntry")
            .field("digest", &hex(&self.digest))
            .field("path", &self.path)
            .finish()
    }
}

impl ParamsEntry {
    /// Whether the points are decoded (resident in host memory).
    pub fn is_loaded(&self) -> bool {
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// How many times the file was decoded (once, unless evicted and needed again).
    pub fn decodes(&self) -> u64 {
        self.decodes.load(Ordering::Relaxed)
    }

    /// Whether its bases are resident on device `device` (a proving key exists there).
    pub fn is_resident_on(&self, device: usize) -> bool {
        device < 64 && self.resident_on.load(Ordering::SeqCst) & (1u64 << device) != 0
    }

    /// The devices (indices) it is resident on.
    pub fn devices(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .copied()
            .collect();
        v.sort_unstable();
        v
    }
}

/// The daemon's parameters (see the module docs).
#[derive(Debug)]
pub struct ParamsCache {
    entries: Mutex<HashMap<ParamsDigest, Arc<ParamsEntry>>>,
    by_file: Mutex<HashMap<(PathBuf, FileId), ParamsDigest>>,
    budget: u64,
    allowed_dirs: Vec<PathBuf>,
    tick: AtomicU64,
}

impl ParamsCache {
    /// A cache whose decoded parameters may hold `budget` bytes; when `allowed_dirs` is not empty,
    /// only files under these directories are accepted.
    pub fn new(budget: u64, allowed_dirs: Vec<PathBuf>) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            by_file: Mutex::new(HashMap::new()),
            budget,
            allowed_dirs,
            tick: AtomicU64::new(0),
        }
    }

    /// The budget of decoded parameters, in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The entry of the file at `path`: hashed and its shape read the first time (or after the
    /// file changed). `expect` is a digest the file must have.
    pub fn resolve(&self, path: &Path, expect: Option<&ParamsDigest>) -> Result<Arc<ParamsEntry>> {
        let canon = std::fs::canonicalize(path)
            .map_err(|e| ServeError::io(format!("parameters file {}", path.display()), e))?;
        if !self.allowed_dirs.is_empty() && !self.allowed_dirs.iter().any(|d| canon.starts_with(d))
        {
            return Err(ServeError::invalid(format!(
                "parameters file {} is outside the directories this daemon serves parameters \
                 from ({})",
                canon.display(),
                self.allowed_dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let id = file_id(&canon)?;
        let known = self
            .by_file
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(canon.clone(), id))
            .copied();
        let digest = match known {
            Some(d) => d,
            None => {
                let d = hash_file(&canon)?;
                if file_id(&canon)? != id {
                    return Err(ServeError::invalid(format!(
                        "parameters file {} changed while it was being hashed",
                        canon.display()
                    )));
                }
                self.by_file
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((canon.clone(), id), d);
                d
            }
        };
        if let Some(want) = expect {
            if want != &digest {
                return Err(ServeError::invalid(format!(
                    "parameters file {} has digest {}, the request expects {}",
                    canon.display(),
                    hex(&digest),
                    hex(want)
                )));
            }
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries.get(&digest) {
            return Ok(e.clone());
        }
        let shape = ParamsFile::open(&canon)?.shape();
        let e = Arc::new(ParamsEntry {
            digest,
            path: canon,
            shape,
            id,
            loaded: Mutex::new(None),
            keys: Mutex::new(HashMap::new()),
            resident_on: AtomicU64::new(0),
            last_used: AtomicU64::new(self.tick.fetch_add(1, Ordering::Relaxed)),
            decodes: AtomicU64::new(0),
        });
        entries.insert(digest, e.clone());
        Ok(e)
    }

    /// The decoded parameters of `entry`, decoding them now if needed (with full point checks
    /// unless `curve_only`; parameters read with curve checks only are read again when full
    /// checks are asked for). May evict others to stay within the budget.
    pub fn params(&self, entry: &Arc<ParamsEntry>, curve_only: bool) -> Result<Arc<Parameters>> {
        entry
            .last_used
            .store(self.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
        let mut loaded = entry.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = loaded.as_ref() {
            if l.full_check || curve_only {
                return Ok(l.params.clone());
            }
        }
        if file_id(&entry.path)? != entry.id {
            return Err(ServeError::invalid(format!(
                "parameters file {} changed since it was accepted (digest {})",
                entry.path.display(),
                hex(&entry.digest)
            )));
        }
        let check = if curve_only {
            PointCheck::CurveOnly
        } else {
            PointCheck::Full
        };
        let t = std::time::Instant::now();
        let params = Arc::new(ParamsFile::open(&entry.path)?.decode(check)?);
        entry.decodes.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "parameters {} ({}) decoded in {:.2?}",
            entry.path.display(),
            &hex(&entry.digest)[..16],
            t.elapsed()
        );
        *loaded = Some(Loaded {
            params: params.clone(),
            full_check: !curve_only,
        });
        // Keys made from the previous decoding (if any) hold other point vectors.
        entry.keys.lock().unwrap_or_else(|e| e.into_inner()).clear();
        entry.resident_on.store(0, Ordering::SeqCst);
        drop(loaded);
        self.enforce_budget(&entry.digest);
        Ok(params)
    }

    /// The proving key of `entry` on device `device` (its bases made resident there on first
    /// use), with the parameters decoded if needed.
    pub fn key(
        &self,
        entry: &Arc<ParamsEntry>,
        curve_only: bool,
        device: usize,
        backend: &Arc<dyn Backend>,
        g2: G2Policy,
    ) -> Result<Arc<ProvingKey>> {
        let params = self.params(entry, curve_only)?;
        let mut keys = entry.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = keys.get(&device) {
            if Arc::ptr_eq(k.params(), &params) {
                return Ok(k.clone());
            }
        }
        let k = Arc::new(ProvingKey::with_g2_policy(params, backend.clone(), g2)?);
        keys.insert(device, k.clone());
        if device < 64 {
            entry.resident_on.fetch_or(1u64 << device, Ordering::SeqCst);
        }
        Ok(k)
    }

    /// Drops the proving key of `entry` on device `device` only (its bases there are freed once
    /// no partition in flight holds the key); the decoded parameters stay.
    pub fn evict_device(&self, entry: &ParamsEntry, device: usize) {
        let removed = entry
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&device)
            .is_some();
        if device < 64 {
            entry
                .resident_on
                .fetch_and(!(1u64 << device), Ordering::SeqCst);
        }
        if removed {
            tracing::info!(
                "parameters {} evicted from device {device} (its memory budget)",
                entry.path.display()
            );
        }
    }

    /// Bytes of decoded parameters held now.
    pub fn resident_bytes(&self) -> u64 {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .filter(|e| e.is_loaded())
            .map(|e| e.shape.decoded_bytes)
            .sum()
    }

    /// Every known entry.
    pub fn entries(&self) -> Vec<Arc<ParamsEntry>> {
        let mut v: Vec<_> = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        v.sort_by(|a, b| a.path.cmp(&b.path));
        v
    }

    /// Drops the decoded parameters and device keys of the entry with `digest` (memory is freed
    /// once no partition in flight holds them). Returns whether there was such an entry.
    pub fn evict(&self, digest: &ParamsDigest) -> bool {
        let e = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(digest)
            .cloned();
        match e {
            Some(e) => {
                Self::unload(&e);
                true
            }
            None => false,
        }
    }

    /// The digest of a known file by path (as given, or canonical).
    pub fn digest_of_path(&self, path: &Path) -> Option<ParamsDigest> {
        let canon = std::fs::canonicalize(path).ok()?;
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|e| e.path == canon)
            .map(|e| e.digest)
    }

    fn unload(e: &ParamsEntry) {
        e.keys.lock().unwrap_or_else(|e| e.into_inner()).clear();
        e.resident_on.store(0, Ordering::SeqCst);
        *e.loaded.lock().unwrap_or_else(|e| e.into_inner()) = None;
        tracing::info!("parameters {} evicted", e.path.display());
    }

    /// Evicts least recently used entries other than `keep` while over the budget.
    fn enforce_budget(&self, keep: &ParamsDigest) {
        loop {
            if self.resident_bytes() <= self.budget {
                return;
            }
            let victim = self
                .entries
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .filter(|e| &e.digest != keep && e.is_loaded())
                .min_by_key(|e| e.last_used.load(Ordering::Relaxed))
                .cloned();
            match victim {
                Some(v) => Self::unload(&v),
                None => return, // only `keep` is loaded: it is allowed alone
            }
        }
    }
}
