//! Filecoin's parameter cache: file names, layout, loading (with a choice of checks) and
//! writing parameters Bellows generated.
//!
//! filecoin-proofs keeps each circuit's Groth16 parameters in one folder
//! (`FIL_PROOFS_PARAMETER_CACHE`, by default `/var/tmp/filecoin-proof-parameters`) as three
//! files named after the circuit's cache identifier, `v28-<id>` with
//! - `.params`: the parameters in bellperson's format (what the prover reads),
//! - `.vk`: the verifying key alone (what the verifier reads),
//! - `.meta`: `{"sector_size":N}`.
//!
//! The published files are listed, with a blake2b digest of each, in the `parameters.json`
//! that storage-proofs-core carries (the digest is the first 128 bits of blake2b-512, in hex).
//!
//! Loading reads the file with core's [`ParamsFile`] (positional reads, never a memory map: a
//! file truncated or rewritten while it is read is an error, not a SIGBUS) and decodes it with
//! one of the [`Check`]s; the trusted-digest mode hashes the file while decoding it with curve
//! checks only, and refuses the file unless the digest matches `parameters.json`; with a
//! [`DigestMemo`], a file version that matched before is not hashed again.

mod memo;

pub use memo::DigestMemo;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bellows_core::groth16::io::{self, ParamsFile, ParamsShape, PointCheck};
use bellows_core::groth16::prover::{G2Policy, ProvingKey};
use bellows_core::groth16::Parameters;
use bellows_core::{Error, Result};
use storage_proofs_core::parameter_cache::{
    get_parameter_data_from_id, get_verifying_key_data, metadata_id, parameter_id, verifying_key_id,
};

/// How thoroughly a parameters file is checked when loaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Check {
    /// `TrustedDigest` when the manifest (the one given, else `parameters.json`) lists the
    /// file's name — a published file, checked against its published digest — else `Batched`.
    /// Test parameters written under Filecoin's names go to `Batched`: at once when the `.vk`
    /// beside them is not the published one, else after their digest differs (loaded again). The default: the published files load in the time of a hash
    /// instead of the subgroup test's (docs/benchmarks.md, "Filecoin"), any other file gets the
    /// subgroup test.
    #[default]
    Auto,
    /// Every point on the curve; the subgroup checked for each section at once by the
    /// randomised bucket test ([`bellows_core::groth16::subgroup`]; a bad file passes with
    /// probability ≤ 2^−128): full assurance at a fraction of `Full`'s cost.
    Batched,
    /// Every point on the curve and in the subgroup, tested one by one (blst's endomorphism
    /// test, on every core).
    Full,
    /// The file's blake2b digest must match `parameters.json` (so it is the published file,
    /// byte for byte); points are then only checked to be on the curve.
    TrustedDigest,
    /// On the curve only: for files made on this machine.
    CurveOnly,
}

impl std::str::FromStr for Check {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Check::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown parameter check {s:?}: expected auto, batched, full, digest or \
                     curve-only"
                ))
            })
    }
}

impl Check {
    /// Every check.
    pub const ALL: [Check; 5] = [
        Check::Auto,
        Check::Batched,
        Check::Full,
        Check::TrustedDigest,
        Check::CurveOnly,
    ];

    /// The name `--check` takes.
    pub fn name(self) -> &'static str {
        match self {
            Check::Auto => "auto",
            Check::Batched => "batched",
            Check::Full => "full",
            Check::TrustedDigest => "digest",
            Check::CurveOnly => "curve-only",
        }
    }
}

/// The three cache files of one circuit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachePaths {
    /// The circuit's cache identifier (without the `v28-` prefix).
    pub id: String,
    /// `<dir>/v28-<id>.params`.
    pub params: PathBuf,
    /// `<dir>/v28-<id>.vk`.
    pub vk: PathBuf,
    /// `<dir>/v28-<id>.meta`.
    pub meta: PathBuf,
}

impl CachePaths {
    /// The file names filecoin-proofs uses for circuit `id`, in `dir`.
    pub fn new(dir: &Path, id: &str) -> Self {
        CachePaths {
            id: id.to_string(),
            params: dir.join(parameter_id(id)),
            vk: dir.join(verifying_key_id(id)),
            meta: dir.join(metadata_id(id)),
        }
    }

    /// Whether `parameters.json` lists this circuit's parameter file (a published circuit).
    pub fn is_published(&self) -> bool {
        get_parameter_data_from_id(&parameter_id(&self.id)).is_some()
    }

    /// Refuses to replace this circuit's files when any exists, unless `force`; then creates the
    /// cache folder `dir` they go in.
    pub fn make_room(&self, dir: &Path, force: bool) -> Result<()> {
        if !force {
            for p in [&self.params, &self.vk, &self.meta] {
                if p.exists() {
                    return Err(Error::invalid(format!(
                        "{} exists already; remove it or ask for it to be replaced (--force)",
                        p.display()
                    )));
                }
            }
        }
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::io(
                format!("creating the parameter folder {}", dir.display()),
                e,
            )
        })
    }

    /// The digest `parameters.json` gives for the verifying key, if it lists it.
    pub fn published_vk_digest(&self) -> Option<String> {
        get_verifying_key_data(&self.id).map(|d| d.digest.clone())
    }
}

/// What a load did.
#[derive(Clone, Debug)]
pub struct LoadReport {
    /// The file's shape (from its length fields).
    pub shape: ParamsShape,
    /// The check applied.
    pub check: Check,
    /// Points decoded.
    pub points: u64,
    /// Wall time of the whole load.
    pub elapsed: Duration,
    /// The blake2b digest (first 128 bits, hex) when the check computed it, or found it
    /// recorded for this version of the file ([`LoadReport::digest_recorded`]).
    pub digest: Option<String>,
    /// The digest was not computed: an earlier load recorded it for this version of the file
    /// ([`DigestMemo`]).
    pub digest_recorded: bool,
}

/// The first 128 bits of the blake2b-512 digest of `bytes`, in hex: the digest
/// `parameters.json` records (storage-proofs-core hashes the whole file with blake2b-512 and
/// keeps 32 hex digits).
pub fn filecoin_digest(bytes: &[u8]) -> String {
    let mut state = FilecoinDigest::new();
    state.update(bytes);
    state.finish()
}

/// [`filecoin_digest`] computed piece by piece, for a caller that reads the file itself (the
/// daemon hashes it with its own SHA-256 in the same pass).
#[derive(Clone, Debug, Default)]
pub struct FilecoinDigest(blake2b_simd::State);

impl FilecoinDigest {
    /// A digest of nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest in `parameters.json`'s form.
    pub fn finish(&self) -> String {
        digest_hex(&self.0)
    }
}

/// [`filecoin_digest`] of a whole parameters file, read in blocks (an error if it is truncated
/// or changes while it is read).
fn file_digest(file: &ParamsFile) -> Result<String> {
    let mut state = FilecoinDigest::new();
    file.for_each_piece(&mut |piece| state.update(piece))?;
    Ok(state.finish())
}

fn digest_hex(state: &blake2b_simd::State) -> String {
    state.finalize().to_hex()[..32].to_string()
}

/// The digest a `parameters.json` manifest records for the file named `name`: from `manifest`
/// (a file in that format: `{"<file name>": {"cid", "digest", "sector_size"}, …}`), or from the
/// copy storage-proofs-core carries when `manifest` is `None`.
pub fn manifest_digest(name: &str, manifest: Option<&Path>) -> Result<Option<String>> {
    let Some(path) = manifest else {
        return Ok(get_parameter_data_from_id(name).map(|d| d.digest.clone()));
    };
    let label = format!("parameter manifest {}", path.display());
    let bytes = io::read_bounded(path, &label, 16 << 20)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::malformed(&label, format!("invalid JSON: {e}")))?;
    match v.get(name) {
        None => Ok(None),
        Some(entry) => entry
            .get("digest")
            .and_then(|d| d.as_str())
            .map(|d| Some(d.to_string()))
            .ok_or_else(|| {
                Error::malformed(
                    &label,
                    format!("the entry for {name} has no \"digest\" string"),
                )
            }),
    }
}

/// Opens (memory-maps) the parameters file at `path`, checks its shape with `expect` (called
/// with the shape from the length fields, before anything is decoded), then decodes it with
/// `check` (the digest check against the `parameters.json` storage-proofs-core carries).
pub fn load(
    path: &Path,
    check: Check,
    expect: impl FnOnce(&ParamsShape) -> Result<()>,
) -> Result<(Parameters, LoadReport)> {
    load_with_manifest(path, check, None, expect)
}

/// As [`load`], with the digest check against `manifest` (a file in `parameters.json`'s
/// format) when given.
pub fn load_with_manifest(
    path: &Path,
    check: Check,
    manifest: Option<&Path>,
    expect: impl FnOnce(&ParamsShape) -> Result<()>,
) -> Result<(Parameters, LoadReport)> {
    load_checked(path, check, manifest, None, expect, |file, c| {
        file.decode(c)
    })
}

/// As [`load_with_manifest`], straight onto `backend` as a proving key: sections are decoded,
/// checked and handed to the backend one at a time ([`ProvingKey::load_file`]), so the host
/// never holds the whole file's points, and none that the backend keeps (the G2 query stays on
/// the host when `g2` runs the G2 MSM on CPU threads). For the digest check the file is hashed
/// beside the loading, and the key is dropped (its device memory freed) if the digest differs.
///
/// With `memo`, a digest that matches is recorded for this version of the file, and a later
/// load of the same unchanged file takes it from there instead of hashing it again.
pub fn load_key(
    path: &Path,
    check: Check,
    manifest: Option<&Path>,
    memo: Option<&DigestMemo>,
    expect: impl FnOnce(&ParamsShape) -> Result<()>,
    backend: std::sync::Arc<dyn bellows_core::Backend>,
    g2: G2Policy,
) -> Result<(ProvingKey, LoadReport)> {
    load_checked(path, check, manifest, memo, expect, |file, c| {
        ProvingKey::load_file(file, c, backend.clone(), g2, &|_| {})
    })
}

/// What [`Check::Auto`] tries first for the file at `path` with `manifest`: `TrustedDigest`, with
/// the file's name and listed digest, for a file the manifest lists, unless the verifying key
/// beside it, listed too, is not the published one; else `Batched`.
fn auto_check(path: &Path, manifest: Option<&Path>) -> Result<(Check, Option<(String, String)>)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let Some(expected) = manifest_digest(&name, manifest)? else {
        return Ok((Check::Batched, None));
    };
    // The verifying key tells in a few kilobytes whether these are the published parameters:
    // test parameters written under Filecoin's names have their own, and go to the subgroup
    // test without first paying for a hash of the whole file.
    let vk = path.with_extension("vk");
    let vk_name = vk.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    if let (Some(want), Ok(bytes)) = (
        manifest_digest(vk_name, manifest)?,
        io::read_bounded(&vk, "verifying key", 1 << 20),
    ) {
        if filecoin_digest(&bytes) != want {
            return Ok((Check::Batched, None));
        }
    }
    Ok((Check::TrustedDigest, Some((name, expected))))
}

/// Opens the file at `path`, checks its shape with `expect`, and decodes it with `decode` under
/// the point check `check` asks for. For the digest check the file is hashed on one thread while
/// the others decode, and what was decoded is dropped if the digest does not match.
fn load_checked<T: Send>(
    path: &Path,
    check: Check,
    manifest: Option<&Path>,
    memo: Option<&DigestMemo>,
    expect: impl FnOnce(&ParamsShape) -> Result<()>,
    decode: impl Fn(&ParamsFile, PointCheck) -> Result<T> + Sync,
) -> Result<(T, LoadReport)> {
    let t0 = Instant::now();
    let requested = check;
    let (check, listed) = match check {
        Check::Auto => auto_check(path, manifest)?,
        other => (other, None),
    };
    let file = ParamsFile::open(path)?;
    let shape = file.shape();
    expect(&shape)?;
    let points =
        (shape.domain_size - 1 + shape.num_inputs + shape.num_aux + shape.a_len + 2 * shape.b_len)
            as u64;
    let mut digest_recorded = false;
    let (value, digest, check) = match check {
        Check::Auto | Check::Batched => (decode(&file, PointCheck::Batched)?, None, check),
        Check::Full => (decode(&file, PointCheck::Full)?, None, check),
        Check::CurveOnly => (decode(&file, PointCheck::CurveOnly)?, None, check),
        Check::TrustedDigest => 'digest: {
            let (name, expected) = match listed {
                Some(l) => l,
                None => manifest_entry(path, &file, manifest)?,
            };
            if memo.is_some_and(|m| m.matches(path, &file.version(), &expected)) {
                // This version of the file matched the digest before: not hashed again.
                let value = decode(&file, PointCheck::CurveOnly)?;
                file.check_unchanged()?;
                digest_recorded = true;
                break 'digest (value, Some(expected), check);
            }
            let (digest, value) = rayon::join(
                || file_digest(&file),
                || decode(&file, PointCheck::CurveOnly),
            );
            let digest = digest?;
            match check_digest(&file, &name, &digest, &expected) {
                Ok(()) => {
                    let value = value?;
                    if let Some(m) = memo {
                        m.record(path, &file.version(), &digest);
                    }
                    (value, Some(digest), check)
                }
                Err(e) if requested == Check::Auto => {
                    // Listed by name but not the published bytes (test parameters written
                    // under Filecoin's names): what was loaded had curve checks only, so it is
                    // dropped (a device key frees its memory) and loaded again, checked.
                    drop(value);
                    tracing::warn!("{e}; loading it again with the batched subgroup check");
                    (decode(&file, PointCheck::Batched)?, None, Check::Batched)
                }
                Err(e) => return Err(e),
            }
        }
    };
    Ok((
        value,
        LoadReport {
            shape,
            check,
            points,
            elapsed: t0.elapsed(),
            digest,
            digest_recorded,
        },
    ))
}

/// The name of `path` and the digest `manifest` (or `parameters.json`) lists for it.
fn manifest_entry(
    path: &Path,
    file: &ParamsFile,
    manifest: Option<&Path>,
) -> Result<(String, String)> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let expected = manifest_digest(&name, manifest)?.ok_or_else(|| {
        Error::invalid(format!(
            "{}: the digest check needs a file the manifest lists, and {} lists no \
             file named {name:?} (use the batched or full checks for parameters made \
             elsewhere)",
            file.label(),
            manifest.map_or("parameters.json".to_string(), |m| m.display().to_string())
        ))
    })?;
    Ok((name, expected))
}

/// An error unless `digest` is the manifest's `expected` digest of `name`.
fn check_digest(file: &ParamsFile, name: &str, digest: &str, expected: &str) -> Result<()> {
    if digest == expected {
        return Ok(());
    }
    Err(Error::malformed(
        file.label(),
        format!(
            "blake2b digest {digest} does not match the manifest's {expected} for \
             {name}: not the published file (corrupted, truncated or replaced)"
        ),
    ))
}

/// Writes `params` into the cache folder `dir` under circuit `id`: the `.params` and `.vk`
/// files (each atomically: a temporary file renamed into place) and the `.meta` file with
/// `sector_size`. Existing files are replaced only with `force`.
pub fn write_cache(
    dir: &Path,
    id: &str,
    params: &Parameters,
    sector_size: u64,
    force: bool,
) -> Result<CachePaths> {
    let paths = CachePaths::new(dir, id);
    paths.make_room(dir, force)?;
    io::write_parameters_file(params, &paths.params)?;
    write_vk_and_meta(dir, id, &params.vk, sector_size)
}

/// Writes the `.vk` and `.meta` files of circuit `id` in the cache folder `dir` (after its
/// `.params`, which the caller wrote).
pub fn write_vk_and_meta(
    dir: &Path,
    id: &str,
    vk: &bellows_core::groth16::VerifyingKey,
    sector_size: u64,
) -> Result<CachePaths> {
    let paths = CachePaths::new(dir, id);
    io::write_verifying_key_file(vk, &paths.vk)?;
    let meta = serde_json::json!({ "sector_size": sector_size }).to_string();
    bellows_core::groth16::output::OutputFile::prepare(&paths.meta, "parameter metadata file")?
        .commit_bytes(meta.as_bytes())?;
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bellows_core::{
        circuits::{CircuitOptions, CircuitSpec},
        groth16::setup::generate_random_parameters,
        rng::ProofRng,
    };

    use super::*;

    /// A digest that matched is recorded; the unchanged file is then loaded without hashing,
    /// a rewritten one (another version) is hashed again, and a manifest that asks for another
    /// digest is never answered from the record.
    #[test]
    fn a_matched_digest_is_recorded_and_the_unchanged_file_not_hashed_again() {
        let dir = std::env::temp_dir().join(format!("bellows-digest-memo-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(6)).unwrap();
        let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(5)).unwrap();
        let name = "v28-memo-test.params";
        let path = dir.join(name);
        io::write_parameters_file(&params, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let digest = filecoin_digest(&bytes);
        let manifest = |d: &str| {
            let m = dir.join(format!("manifest-{d}.json"));
            let v = serde_json::json!({ name: { "cid": "Qm", "digest": d, "sector_size": 2048 } });
            std::fs::write(&m, v.to_string()).unwrap();
            m
        };
        let listed = manifest(&digest);
        let memo = DigestMemo::new(dir.join("params-digests"));
        let cpu: Arc<dyn bellows_core::Backend> = Arc::new(bellows_cpu::CpuBackend::new());
        let load = |manifest: &Path, memo: Option<&DigestMemo>| {
            load_key(
                &path,
                Check::TrustedDigest,
                Some(manifest),
                memo,
                |_| Ok(()),
                cpu.clone(),
                G2Policy::Auto,
            )
            .map(|(_, r)| (r.digest, r.digest_recorded))
        };
        let hashed = (Some(digest.clone()), false);
        let recorded = (Some(digest.clone()), true);
        assert_eq!(load(&listed, Some(&memo)).unwrap(), hashed);
        assert_eq!(load(&listed, Some(&memo)).unwrap(), recorded);
        assert_eq!(load(&listed, None).unwrap(), hashed);
        // The same bytes written again: another version of the file, hashed again.
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(load(&listed, Some(&memo)).unwrap(), hashed);
        assert_eq!(load(&listed, Some(&memo)).unwrap(), recorded);
        // Another digest asked for: hashed, and refused.
        let other = manifest(&"0".repeat(32));
        let e = load(&other, Some(&memo)).unwrap_err().to_string();
        assert!(e.contains("does not match"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
