//! Parameters kept resident across jobs, keyed by the SHA-256 digest of their file.
//!
//! A file is read only inside the configured directories ([`dirs`]), with core's reader
//! ([`ParamsFile`]: positional reads, never a memory map, so a file truncated or rewritten
//! underneath fails the job that reads it, it cannot kill the daemon with SIGBUS). Its length
//! fields and the first point of each section are checked, and the caller's shape check made,
//! before the file is hashed, so a wrong or sparse file costs a few small reads. The digest is computed once (later requests for the same unchanged file — same
//! device, inode, length, modification and change time — reuse it, and with
//! [`ParamsCache::with_known_digests`] so does the next run: [`known`]), and the points are decoded the
//! first time a partition needs them. Each device that proves with the parameters gets its own
//! [`ProvingKey`] (the bases made resident there), created on first use and kept. A device
//! backend (an accelerator: the CUDA backend) gets its key loaded from the file straight onto
//! it, one section at a time ([`ProvingKey::load_file`]), with no decoded copy kept in host
//! memory: a 32 GiB PoRep's 47 GB of points then take the GPU's memory, not the host's. Host
//! copies are made for the devices that compute in host memory (the CPU backend) and, when one
//! exists, serve the other devices' keys too. Decoded host copies count against the parameters
//! budget: when a load would exceed it, the least recently used others are evicted (their
//! memory is freed as soon as no partition in flight holds them), and a client can evict a
//! file explicitly.

pub mod dirs;
pub mod known;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex, OnceLock,
    },
};

use bellows_core::{
    groth16::{
        io::{FileVersion, ParamsFile, ParamsShape, PointCheck},
        prover::{G2Policy, ProvingKey},
        verifier::{prepare_verifying_key, PreparedVerifyingKey},
        Parameters, VerifyingKey,
    },
    Backend,
};

use crate::error::{Result, ServeError};
pub use dirs::ParamsDirs;
pub use known::KnownDigests;
use sha2::{Digest, Sha256};

/// A parameters file's SHA-256.
pub type ParamsDigest = [u8; 32];

/// The SHA-256 of the whole parameters file `file` (after its first points are checked, so a
/// file of zeros costs a few small reads, not a hash of its length).
pub fn file_digest(file: &ParamsFile) -> Result<ParamsDigest> {
    hash_file(file, None).map(|h| h.sha256)
}

/// What hashing a file gave: its SHA-256 and, when it was asked for, its digest in the form
/// [`Published`] lists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hashed {
    /// The SHA-256 (the daemon's key of the file).
    pub sha256: ParamsDigest,
    /// The published-form digest, if computed.
    pub published: Option<String>,
}

/// Digests some parameters files are published with (Filecoin's `parameters.json` lists a
/// blake2b digest for each published file): a file whose name is listed is hashed that way too,
/// in the same pass as its SHA-256, and one whose digest matches is the published file, byte
/// for byte, so its points are checked on the curve only (the subgroup test, minutes at 32 GiB,
/// is for files of unknown origin).
pub trait Published: Send + Sync + std::fmt::Debug {
    /// The digest published for the file named `name`, if it is listed.
    fn listed(&self, name: &str) -> Option<String>;
    /// A hasher of the listed form.
    fn hasher(&self) -> Box<dyn PieceHasher>;
}

/// A digest computed piece by piece.
pub trait PieceHasher: Send {
    /// Adds the next bytes.
    fn update(&mut self, bytes: &[u8]);
    /// The digest in the listed form.
    fn finish(&self) -> String;
}

/// The SHA-256 of `file` and, with `also`, its digest by that hasher, in one pass (the two
/// hashes of each piece side by side on two threads).
fn hash_file(file: &ParamsFile, also: Option<Box<dyn PieceHasher>>) -> Result<Hashed> {
    file.check_first_points()?;
    let mut sha = Sha256::new();
    let mut also = also;
    file.for_each_piece(&mut |piece| match also.as_mut() {
        Some(h) => {
            rayon::join(|| sha.update(piece), || h.update(piece));
        }
        None => sha.update(piece),
    })?;
    Ok(Hashed {
        sha256: sha.finalize().into(),
        published: also.map(|h| h.finish()),
    })
}

/// The file of `entry`, opened, unless it changed since it was accepted (another version:
/// other points than the digest the jobs name).
fn open_accepted(entry: &ParamsEntry) -> Result<ParamsFile> {
    let file = ParamsFile::open(&entry.path)?;
    if file.version() != entry.version {
        return Err(ServeError::invalid(format!(
            "parameters file {} changed since it was accepted (digest {})",
            entry.path.display(),
            hex(&entry.digest)
        )));
    }
    Ok(file)
}

/// The [`ParamsEntry::resident_on`] bits of these devices.
fn device_bits<'a>(devices: impl Iterator<Item = &'a usize>) -> u64 {
    devices
        .filter(|&&d| d < 64)
        .fold(0, |bits, &d| bits | (1u64 << d))
}

/// Lower-case hex of a digest.
pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// The decoded parameters and the point check they were read with.
struct Loaded {
    params: Arc<Parameters>,
    full_check: bool,
}

/// A proving key on one device, and how it was made.
struct DeviceKey {
    key: Arc<ProvingKey>,
    /// Whether its points had more than the curve checks.
    full_check: bool,
    /// The host copy it was made from; `None`: loaded from the file straight onto the device.
    from: Option<Arc<Parameters>>,
}

impl DeviceKey {
    /// Whether it serves a load that asks for `curve_only` checks, when the host copy is `host`
    /// (a key made from another host copy holds stale point vectors).
    fn serves(&self, curve_only: bool, host: Option<&Arc<Parameters>>) -> bool {
        let current = match (&self.from, host) {
            (Some(from), Some(host)) => Arc::ptr_eq(from, host),
            (Some(_), None) => false,
            (None, _) => true,
        };
        current && (self.full_check || curve_only)
    }
}

/// Puts `key` in `keys` as the key of device `device` of `entry`, and marks it resident there.
fn place(
    entry: &ParamsEntry,
    keys: &mut HashMap<usize, DeviceKey>,
    device: usize,
    key: DeviceKey,
) -> Arc<ProvingKey> {
    let k = key.key.clone();
    keys.insert(device, key);
    if device < 64 {
        entry.resident_on.fetch_or(1u64 << device, Ordering::SeqCst);
    }
    k
}

/// One parameters file known to the daemon.
pub struct ParamsEntry {
    /// SHA-256 of the file.
    pub digest: ParamsDigest,
    /// The file (canonical path).
    pub path: PathBuf,
    /// Its length fields.
    pub shape: ParamsShape,
    version: FileVersion,
    loaded: Mutex<Option<Loaded>>,
    /// The verifying key, prepared once for the checks made before a job is done (kept when
    /// the points are evicted).
    pvk: OnceLock<Arc<PreparedVerifyingKey>>,
    keys: Mutex<HashMap<usize, DeviceKey>>,
    /// Held while a key is loaded from the file or made from the host copy ([`ParamsCache::key`]):
    /// one load of a file at a time, without holding `keys` (which status reads) for the minutes
    /// a large one takes.
    loading: Mutex<()>,
    /// Bit d: a proving key for device d exists (its bases are resident there). Read without a
    /// lock by the per-device memory accounting ([`crate::engine`]).
    resident_on: AtomicU64,
    last_used: AtomicU64,
    decodes: AtomicU64,
    /// The file's digest is the one [`Published`] lists for its name: points are checked on
    /// the curve only.
    published: bool,
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
    /// Whether the file is a published one, byte for byte ([`Published`]).
    pub fn is_published(&self) -> bool {
        self.published
    }

    /// Whether the points are decoded (resident in host memory).
    pub fn is_loaded(&self) -> bool {
        self.loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// How many times the file was decoded: into host memory, or straight onto a device (once
    /// per device that loads it so, unless evicted and needed again).
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

/// One file version's digests, once hashed ([`ParamsCache::by_file`]).
type Slot = Arc<Mutex<Option<Hashed>>>;

/// The daemon's parameters (see the module docs).
#[derive(Debug)]
pub struct ParamsCache {
    entries: Mutex<HashMap<ParamsDigest, Arc<ParamsEntry>>>,
    /// Each file's digests by canonical path and version, a slot each. A request that names a
    /// version being hashed waits on its slot for that one hash instead of reading and hashing
    /// the file again beside it (submissions queued while a daemon was down arrive together and
    /// name the same file).
    by_file: Mutex<HashMap<(PathBuf, FileVersion), Slot>>,
    budget: u64,
    dirs: ParamsDirs,
    tick: AtomicU64,
    /// The check of loads that ask for more than curve checks.
    check: PointCheck,
    /// Digests kept across restarts ([`known`]), if any.
    known: Option<KnownDigests>,
    /// Files hashed by this cache.
    hashes: AtomicU64,
    /// Digests files are published with, if any.
    published: Option<Arc<dyn Published>>,
}

impl ParamsCache {
    /// A cache whose decoded parameters may hold `budget` bytes, of files inside `dirs` only.
    pub fn new(budget: u64, dirs: ParamsDirs) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            by_file: Mutex::new(HashMap::new()),
            budget,
            dirs,
            tick: AtomicU64::new(0),
            check: PointCheck::Batched,
            known: None,
            hashes: AtomicU64::new(0),
            published: None,
        }
    }

    /// The same cache, where a file `published` lists, whose digest matches, has its points
    /// checked on the curve only ([`Published`]); other files get the cache's check.
    pub fn with_published(mut self, published: Arc<dyn Published>) -> Self {
        self.published = Some(published);
        self
    }

    /// The same cache, keeping the files' digests in `path` across restarts ([`known`]): a
    /// restarted daemon reads an unchanged file's digest there instead of hashing the file.
    pub fn with_known_digests(mut self, path: &Path) -> Self {
        self.known = Some(KnownDigests::new(path, known::WHAT));
        self
    }

    /// How many files this cache has hashed.
    pub fn hashes(&self) -> u64 {
        self.hashes.load(Ordering::Relaxed)
    }

    /// The slot of the file at `canon` at `version` in [`ParamsCache::by_file`] (empty the
    /// first time).
    fn slot(&self, canon: &Path, version: FileVersion) -> Slot {
        let mut slots = self.by_file.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .entry((canon.to_path_buf(), version))
            .or_default()
            .clone()
    }

    /// The same cache, whose loads that ask for more than curve checks check points with
    /// `check` (default [`PointCheck::Batched`]: every point in the subgroup, except with
    /// probability at most 2^−128, at a fraction of [`PointCheck::Full`]'s cost).
    pub fn with_check(mut self, check: PointCheck) -> Self {
        self.check = check;
        self
    }

    /// The budget of decoded parameters, in bytes.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// The directories parameters are read from.
    pub fn dirs(&self) -> &ParamsDirs {
        &self.dirs
    }

    /// The entry of the file at `path` (inside the directories): its layout walked and checked
    /// with `check_shape`, then hashed, the first time (or after the file changed). `expect`
    /// is a digest the file must have.
    pub fn resolve(
        &self,
        path: &Path,
        expect: Option<&ParamsDigest>,
        check_shape: &dyn Fn(&ParamsShape) -> Result<()>,
    ) -> Result<Arc<ParamsEntry>> {
        let canon = self.dirs.resolve(path)?;
        let version = FileVersion::of_path(&canon)?;
        let cell = self.slot(&canon, version);
        // Held until this version's digests are in the slot.
        let mut slot = cell.lock().unwrap_or_else(|e| e.into_inner());
        let known = slot.clone();
        let known_entry = known.as_ref().and_then(|h| {
            self.entries
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&h.sha256)
                .cloned()
        });
        let (digest, shape, published) = match known_entry {
            Some(e) => {
                check_shape(&e.shape)?;
                (e.digest, e.shape, e.published)
            }
            None => {
                let file = ParamsFile::open(&canon)?;
                let shape = file.shape();
                check_shape(&shape)?;
                // The name asked for (a link's, when the file is reached through one) picks
                // the published digest; the digest, not the name, decides.
                let listed = self.published.as_ref().and_then(|p| {
                    let name = |q: &Path| p.listed(q.file_name()?.to_str()?);
                    Some((p, name(path).or_else(|| name(&canon))?))
                });
                // A digest from earlier serves unless the file is listed and the earlier
                // hashing did not compute the listed form.
                let earlier = known
                    .or_else(|| self.known.as_ref()?.get(&canon, &version))
                    .filter(|h| listed.is_none() || h.published.is_some());
                let hashed = match &earlier {
                    Some(h) => {
                        file.check_first_points()?;
                        h.clone()
                    }
                    None => {
                        self.hashes.fetch_add(1, Ordering::Relaxed);
                        tracing::info!(
                            "parameters file {}: hashing its {:.1} GB before its first job \
                             (once per file and version)",
                            path.display(),
                            version.bytes() as f64 / 1e9
                        );
                        hash_file(&file, listed.as_ref().map(|(p, _)| p.hasher()))?
                    }
                };
                if file.version() != version {
                    return Err(ServeError::invalid(format!(
                        "parameters file {} changed while it was being read",
                        path.display()
                    )));
                }
                if let (Some(k), None) = (&self.known, &earlier) {
                    k.record(&canon, &version, hashed.clone());
                }
                let published = match (&listed, &hashed.published) {
                    (Some((_, want)), Some(got)) if want == got => true,
                    (Some((_, want)), got) => {
                        tracing::info!(
                            "parameters file {}: digest {} is not the published {want} (not \
                             the published file): its points get the {:?} check",
                            path.display(),
                            got.as_deref().unwrap_or("-"),
                            self.check
                        );
                        false
                    }
                    (None, _) => false,
                };
                *slot = Some(hashed.clone());
                (hashed.sha256, shape, published)
            }
        };
        drop(slot);
        if let Some(want) = expect {
            if want != &digest {
                // The file's own digest is not sent back: only that it is not the one asked for.
                return Err(ServeError::invalid(format!(
                    "parameters file {} does not have the digest the request names (it changed \
                     since, or it is another file)",
                    path.display()
                )));
            }
        }
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = entries.get(&digest) {
            return Ok(e.clone());
        }
        let e = Arc::new(ParamsEntry {
            digest,
            path: canon,
            shape,
            version,
            loaded: Mutex::new(None),
            pvk: OnceLock::new(),
            keys: Mutex::new(HashMap::new()),
            loading: Mutex::new(()),
            resident_on: AtomicU64::new(0),
            last_used: AtomicU64::new(self.tick.fetch_add(1, Ordering::Relaxed)),
            decodes: AtomicU64::new(0),
            published,
        });
        entries.insert(digest, e.clone());
        Ok(e)
    }

    /// The prepared verifying key of `entry` (read alone from the file when its parameters are
    /// not decoded).
    pub fn verifying_key(
        &self,
        entry: &Arc<ParamsEntry>,
        curve_only: bool,
    ) -> Result<Arc<PreparedVerifyingKey>> {
        if let Some(k) = entry.pvk.get() {
            return Ok(k.clone());
        }
        let vk = self.vk(entry, curve_only)?;
        Ok(entry
            .pvk
            .get_or_init(|| Arc::new(prepare_verifying_key(&vk)))
            .clone())
    }

    /// The verifying key of `entry`: the decoded parameters' when they are, else read alone
    /// from the file (a few kilobytes, of the version that was accepted).
    pub fn vk(&self, entry: &Arc<ParamsEntry>, curve_only: bool) -> Result<VerifyingKey> {
        let loaded = entry
            .loaded
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|l| l.params.clone());
        if let Some(p) = loaded {
            return Ok(p.vk.clone());
        }
        let file = open_accepted(entry)?;
        let check = if curve_only {
            PointCheck::CurveOnly
        } else {
            PointCheck::Full
        };
        Ok(file.decode_verifying_key(check)?)
    }

    /// The decoded parameters of `entry`, decoding them now if needed (with full point checks
    /// unless `curve_only`; parameters read with curve checks only are read again when full
    /// checks are asked for). May evict others to stay within the budget.
    pub fn params(&self, entry: &Arc<ParamsEntry>, curve_only: bool) -> Result<Arc<Parameters>> {
        self.params_checked(entry, curve_only).map(|(p, _)| p)
    }

    /// As [`ParamsCache::params`], with whether the points had more than the curve checks.
    fn params_checked(
        &self,
        entry: &Arc<ParamsEntry>,
        curve_only: bool,
    ) -> Result<(Arc<Parameters>, bool)> {
        self.touch(entry);
        let mut loaded = entry.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = loaded.as_ref() {
            if l.full_check || curve_only {
                return Ok((l.params.clone(), l.full_check));
            }
        }
        let file = open_accepted(entry)?;
        let check = self.check_for(entry, curve_only);
        let t = std::time::Instant::now();
        let params = Arc::new(file.decode(check)?);
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
        // Keys made from the previous host copy (if any) hold other point vectors; keys loaded
        // straight from the file stay.
        {
            let mut keys = entry.keys.lock().unwrap_or_else(|e| e.into_inner());
            keys.retain(|_, k| k.from.is_none());
            entry
                .resident_on
                .store(device_bits(keys.keys()), Ordering::SeqCst);
        }
        drop(loaded);
        self.enforce_budget(&entry.digest);
        Ok((params, !curve_only))
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
        let accelerator = backend.info().capabilities.accelerator;
        if accelerator && !entry.is_loaded() {
            return self.key_from_file(entry, curve_only, device, backend, g2);
        }
        let (params, full_check) = self.params_checked(entry, curve_only)?;
        let existing = || {
            entry
                .keys
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&device)
                .filter(|k| k.serves(curve_only, Some(&params)))
                .map(|k| k.key.clone())
        };
        if let Some(k) = existing() {
            return Ok(k);
        }
        // The upload (seconds for a large key) holds the file's load lock, not the device keys'
        // lock, which status and the memory accounting read.
        let _one_load = entry.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = existing() {
            return Ok(k);
        }
        let key = Arc::new(ProvingKey::with_g2_policy(
            params.clone(),
            backend.clone(),
            g2,
        )?);
        let made = DeviceKey {
            key,
            full_check,
            from: Some(params),
        };
        let mut keys = entry.keys.lock().unwrap_or_else(|e| e.into_inner());
        Ok(place(entry, &mut keys, device, made))
    }

    /// Marks `entry` as used now (for the least-recently-used eviction).
    fn touch(&self, entry: &ParamsEntry) {
        entry
            .last_used
            .store(self.tick.fetch_add(1, Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The point check of a load: curve checks only (asked for, or a published file), else the
    /// daemon's check.
    fn check_for(&self, entry: &ParamsEntry, curve_only: bool) -> PointCheck {
        if curve_only || entry.published {
            PointCheck::CurveOnly
        } else {
            self.check
        }
    }

    /// The key of `entry` on the device backend `backend`, loaded from the file straight onto
    /// it (no host copy; see the module docs). One load at a time per file: a second device
    /// waits for the first's, then reads the file for its own; the devices' keys stay readable
    /// meanwhile.
    fn key_from_file(
        &self,
        entry: &Arc<ParamsEntry>,
        curve_only: bool,
        device: usize,
        backend: &Arc<dyn Backend>,
        g2: G2Policy,
    ) -> Result<Arc<ProvingKey>> {
        self.touch(entry);
        let _one_load = entry.loading.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = entry
            .keys
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&device)
            .filter(|k| k.serves(curve_only, None))
        {
            return Ok(k.key.clone());
        }
        let file = open_accepted(entry)?;
        let check = self.check_for(entry, curve_only);
        let t = std::time::Instant::now();
        let k = Arc::new(ProvingKey::load_file(
            &file,
            check,
            backend.clone(),
            g2,
            &|_| {},
        )?);
        entry.decodes.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "parameters {} ({}) loaded onto device {device} in {:.2?}, no host copy",
            entry.path.display(),
            &hex(&entry.digest)[..16],
            t.elapsed()
        );
        let made = DeviceKey {
            key: k,
            full_check: !curve_only,
            from: None,
        };
        Ok(place(
            entry,
            &mut entry.keys.lock().unwrap_or_else(|e| e.into_inner()),
            device,
            made,
        ))
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

    /// The digest of a known file by path (as given, or canonical; inside the directories).
    pub fn digest_of_path(&self, path: &Path) -> Option<ParamsDigest> {
        let canon = self.dirs.resolve(path).ok()?;
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

#[cfg(test)]
mod tests;
