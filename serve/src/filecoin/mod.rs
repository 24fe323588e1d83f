//! Filecoin proof jobs (cargo feature `filecoin`): PoRep C2, a WindowPoSt partition, a
//! WinningPoSt and a SnapDeals update, proved by the engine partition by partition through the
//! same queue, budgets, retries and cancellation as built-in circuits (docs/serve.md, "PoRep C2
//! jobs", and docs/curio.md).
//!
//! Everything Filecoin-specific is bellows-filecoin's, reused: inputs parsed and checked (C1
//! outputs by [`bellows_filecoin::parse_c1`], vanilla PoSt and update proofs by bincode), their
//! vanilla proofs verified and every partition's circuit built by storage-proofs' own code
//! ([`circuits`]), the parameters named as filecoin-proofs names them, each circuit wrapped so
//! that a panic in a gadget fails the job instead of a worker, and the finished partitions
//! checked against the verifying key with the public inputs storage-proofs generates before the
//! job is reported done — the self-check filecoin-proofs makes. The proof bytes are the
//! partition proofs concatenated, which is what filecoin-proofs returns for each kind.
//!
//! A job is rebuilt from its journaled request (the inputs travel in it), so a restart builds
//! the partitions again from the stored bytes ([`request`] reads both request forms).

mod circuits;
mod request;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use bellows_core::groth16::{
    io::{read_verifying_key, ParamsShape, PointCheck},
    synthesis::Synthesized,
    verifier::{prepare_verifying_key, PreparedVerifyingKey},
    Proof, VerifyingKey,
};
use bellows_core::pce::Pce;
use bellows_core::Backend;
use bellows_filecoin::filecoin_proofs_api::{
    RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};
use bellows_filecoin::prove;
use bellows_filecoin::{porep, post, update, CachePaths};
use blstrs::Scalar;

use crate::{
    error::{Result, ServeError},
    job::decode_inputs,
    params::ParamsDirs,
    store::PartitionRecord,
};

use circuits::{Built, Circuits};

/// Which Filecoin proof a job makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilecoinKind {
    /// PoRep commit phase 2, from a C1 output.
    Porep,
    /// One partition of a WindowPoSt, from its sectors' vanilla proofs.
    WindowPost,
    /// A WinningPoSt, from the challenged sectors' vanilla proofs.
    WinningPost,
    /// A SnapDeals (empty sector update) proof, from its vanilla partition proofs.
    SnapDeals,
}

impl FilecoinKind {
    /// Every kind.
    pub const ALL: [FilecoinKind; 4] = [
        FilecoinKind::Porep,
        FilecoinKind::WindowPost,
        FilecoinKind::WinningPost,
        FilecoinKind::SnapDeals,
    ];

    /// The kind's name in the journal and in the cuzk API's queues (`porep-c2`, `window-post`,
    /// `winning-post`, `snap-update`): a fleet node's `kinds` list them.
    pub fn name(self) -> &'static str {
        match self {
            FilecoinKind::Porep => "porep-c2",
            FilecoinKind::WindowPost => "window-post",
            FilecoinKind::WinningPost => "winning-post",
            FilecoinKind::SnapDeals => "snap-update",
        }
    }

    /// The prefix of its circuits' ids in the cuzk API (`porep-32g`, `wpost-32g`, ...).
    pub fn circuit_prefix(self) -> &'static str {
        match self {
            FilecoinKind::Porep => "porep",
            FilecoinKind::WindowPost => "wpost",
            FilecoinKind::WinningPost => "winning",
            FilecoinKind::SnapDeals => "snap",
        }
    }

    /// In words, for listings.
    pub fn describe(self) -> &'static str {
        match self {
            FilecoinKind::Porep => "PoRep C2",
            FilecoinKind::WindowPost => "WindowPoSt partition",
            FilecoinKind::WinningPost => "WinningPoSt",
            FilecoinKind::SnapDeals => "SnapDeals update",
        }
    }
}

/// A proof type of filecoin-proofs-api.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProofType {
    /// PoRep.
    Seal(RegisteredSealProof),
    /// WinningPoSt or WindowPoSt.
    Post(RegisteredPoStProof),
    /// SnapDeals.
    Update(RegisteredUpdateProof),
}

impl ProofType {
    /// The sector size, in bytes.
    pub fn sector_size(self) -> u64 {
        u64::from(match self {
            ProofType::Seal(p) => p.sector_size(),
            ProofType::Post(p) => p.sector_size(),
            ProofType::Update(p) => p.sector_size(),
        })
    }

    /// Its name (`StackedDrg32GiBV1_1`, `StackedDrgWinning32GiBV1`, ...).
    pub fn name(self) -> String {
        match self {
            ProofType::Seal(p) => format!("{p:?}"),
            ProofType::Post(p) => format!("{p:?}"),
            ProofType::Update(p) => format!("{p:?}"),
        }
    }

    /// The parameter-cache identifier of its circuit (the file name without `v28-` and
    /// `.params`).
    pub fn cache_id(self) -> Result<String> {
        Ok(match self {
            ProofType::Seal(p) => porep::cache_id(p)?,
            ProofType::Post(p) => post::cache_id(p)?,
            ProofType::Update(p) => update::cache_id(p)?,
        })
    }

    /// The recording of its partition circuit in `pce_dir`, made from the blank circuit when
    /// there is none (the setup's key).
    fn pce(self, pce_dir: &Path) -> Result<Arc<Pce>> {
        Ok(match self {
            ProofType::Seal(p) => porep::pce(p, pce_dir)?,
            ProofType::Post(p) => post::pce(p, pce_dir)?,
            ProofType::Update(p) => update::pce(p, pce_dir)?,
        })
    }
}

/// The sector sizes Filecoin has, with the suffix the cuzk API's circuit ids give them.
const SIZES: [(u64, &str); 5] = [
    (2 << 10, "2k"),
    (8 << 20, "8m"),
    (512 << 20, "512m"),
    (32 << 30, "32g"),
    (64 << 30, "64g"),
];

/// The cuzk API's id of the circuit of `kind` for sectors of `sector_size` bytes:
/// `porep-32g`, `wpost-32g`, `winning-2k`, `snap-512m`.
pub fn circuit_id(kind: FilecoinKind, sector_size: u64) -> String {
    let size = SIZES
        .iter()
        .find(|(b, _)| *b == sector_size)
        .map_or_else(|| format!("{sector_size}b"), |(_, s)| (*s).to_string());
    format!("{}-{size}", kind.circuit_prefix())
}

/// The kind and proof type a cuzk circuit id names (the proof version the network uses now:
/// PoRep `…V1_1`, WindowPoSt `…V1_2`), or an error listing the ids there are.
pub fn circuit(id: &str) -> Result<(FilecoinKind, ProofType)> {
    let unknown = || {
        let all: Vec<String> = FilecoinKind::ALL
            .iter()
            .map(|k| format!("{}-{{2k,8m,512m,32g,64g}}", k.circuit_prefix()))
            .collect();
        ServeError::invalid(format!(
            "unknown circuit id {id:?}: the ids are {}",
            all.join(", ")
        ))
    };
    let (prefix, size) = id.trim().split_once('-').ok_or_else(unknown)?;
    let kind = FilecoinKind::ALL
        .into_iter()
        .find(|k| k.circuit_prefix() == prefix)
        .ok_or_else(unknown)?;
    let i = SIZES
        .iter()
        .position(|(_, s)| s.eq_ignore_ascii_case(size))
        .ok_or_else(unknown)? as u64;
    use bellows_filecoin::registered as r;
    let proof = match kind {
        FilecoinKind::Porep => ProofType::Seal(r::seal_proof(5 + i)?),
        FilecoinKind::WindowPost => ProofType::Post(r::post_proof(10 + i)?),
        FilecoinKind::WinningPost => ProofType::Post(r::post_proof(i)?),
        FilecoinKind::SnapDeals => ProofType::Update(r::update_proof(i)?),
    };
    Ok((kind, proof))
}

/// The cuzk circuit id of a parameters file, from its file name (`v28-<cache id>.params`), for
/// every circuit [`circuit`] names; `None` for a file of another circuit.
pub fn circuit_of_file(path: &Path) -> Option<String> {
    static NAMES: OnceLock<Vec<(std::ffi::OsString, String)>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let mut v = Vec::new();
        for kind in FilecoinKind::ALL {
            for (size, _) in SIZES {
                let id = circuit_id(kind, size);
                if let Ok(file) = circuit(&id).and_then(|(_, p)| p.cache_id()) {
                    let name = CachePaths::new(Path::new(""), &file).params;
                    v.push((name.into_os_string(), id));
                }
            }
        }
        v
    });
    let file = path.file_name()?;
    names
        .iter()
        .find(|(n, _)| n == file)
        .map(|(_, id)| id.clone())
}

/// A Filecoin proof job: its kind and proof type, its partition circuits with their public
/// inputs, and the files of the proof type's parameters.
pub struct FilecoinJob {
    kind: FilecoinKind,
    proof: ProofType,
    /// SHA-256 of the input as submitted (two jobs are equal when these are).
    digest: [u8; 32],
    paths: CachePaths,
    /// filecoin-proofs' identifier of the partition circuit (its parameters' file name).
    cache_id: String,
    circuits: Box<dyn Circuits>,
    public_inputs: Vec<Vec<Scalar>>,
    /// The prepared verifying key, read once (every partition of a fleet job is checked).
    pvk: OnceLock<PreparedVerifyingKey>,
}

impl std::fmt::Debug for FilecoinJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilecoinJob")
            .field("kind", &self.kind)
            .field("proof", &self.proof)
            .field("partitions", &self.public_inputs.len())
            .field("params", &self.paths.params)
            .finish()
    }
}

impl PartialEq for FilecoinJob {
    fn eq(&self, other: &Self) -> bool {
        self.digest == other.digest && self.paths.params == other.paths.params
    }
}

impl Eq for FilecoinJob {}

/// The parameters' own verifying key, read when the parameter folder has no `.vk`.
pub type OwnKey<'a> = dyn Fn() -> Result<VerifyingKey> + 'a;

/// Where a job's parameters are looked for.
pub(crate) enum ParamsIn<'a> {
    /// This folder (a PoRep C2 request names it).
    Folder(&'a Path),
    /// The daemon's parameter folders, in order (a cuzk request names none).
    Configured,
}

impl FilecoinJob {
    /// A job of `kind` and `proof` from what [`circuits`] built, its parameters found `where_`
    /// inside `dirs` under filecoin-proofs' names: a missing file, or one outside the folders,
    /// is refused here (naming the file), before anything is read.
    fn new(
        kind: FilecoinKind,
        proof: ProofType,
        digest: [u8; 32],
        built: Built,
        where_: ParamsIn<'_>,
        dirs: &ParamsDirs,
    ) -> Result<Self> {
        let (circuits, public_inputs, cache_id) = built;
        let paths = find_params(&proof, &cache_id, where_, dirs)?;
        Ok(Self {
            kind,
            proof,
            digest,
            paths,
            cache_id,
            circuits,
            public_inputs,
            pvk: OnceLock::new(),
        })
    }

    /// The kind.
    pub fn kind(&self) -> FilecoinKind {
        self.kind
    }

    /// The proof type.
    pub fn proof(&self) -> ProofType {
        self.proof
    }

    /// Number of partitions.
    pub fn partitions(&self) -> u32 {
        self.public_inputs.len() as u32
    }

    /// The proof type's name, e.g. `StackedDrg2KiBV1_1`.
    pub fn proof_name(&self) -> String {
        self.proof.name()
    }

    /// The parameters file (`v28-….params` in a parameter folder).
    pub fn params_path(&self) -> &Path {
        &self.paths.params
    }

    /// The verifying key file (`v28-….vk`), which may be missing.
    pub fn vk_path(&self) -> PathBuf {
        self.paths.vk.clone()
    }

    /// Whether a partition's witness runs on every core (pre-compiled synthesis of a PoRep
    /// partition, whose challenges are computed in parallel): then two partitions per device
    /// are enough in flight.
    pub fn witness_on_every_core(&self) -> bool {
        self.kind == FilecoinKind::Porep
    }

    /// Checks that parameters of `shape` are for this circuit (their public inputs).
    pub fn check_params(&self, shape: &ParamsShape) -> Result<()> {
        let want = self.public_inputs.first().map_or(0, Vec::len) + 1;
        if shape.num_inputs != want {
            return Err(ServeError::invalid(format!(
                "the parameters file {} is for a circuit with {} public inputs, but a {} \
                 partition has {}: the file does not belong to this proof type",
                self.paths.params.display(),
                shape.num_inputs.saturating_sub(1),
                self.proof_name(),
                want - 1
            )));
        }
        Ok(())
    }

    /// Synthesises partition `index`, directly or with the recording `pce` of the partition
    /// circuit ([`FilecoinJob::record`]; the same result, its constraint code not run), into
    /// `host`'s host memory (pinned on a device backend) when given.
    pub fn synthesize(
        &self,
        index: u32,
        pce: Option<&Pce>,
        host: Option<&Arc<dyn Backend>>,
    ) -> bellows_core::Result<Synthesized> {
        self.circuits.synthesize(index as usize, pce, host)
    }

    /// The key of the partition circuit's recording in a PCE folder (the one `bellows porep
    /// c2` and the setup use).
    pub fn pce_id(&self) -> String {
        prove::pce_id(&self.cache_id)
    }

    /// The partition circuit's recording in the folder `pce_dir`, recorded from the blank
    /// circuit and saved when there is none.
    pub fn record(&self, pce_dir: &Path) -> Result<Arc<Pce>> {
        self.proof.pce(pce_dir)
    }

    /// Checks a finished job's partitions (all of them, in index order): each one's public
    /// inputs are the ones storage-proofs generates for it, and each proof verifies with the
    /// verifying key in the parameter folder (the parameters' own, from `fallback`, when the
    /// folder has no `.vk`). Returns the proof bytes: the partition proofs concatenated, as
    /// filecoin-proofs returns them.
    pub fn verify(&self, parts: &[PartitionRecord], fallback: &OwnKey<'_>) -> Result<Vec<u8>> {
        if parts.len() != self.public_inputs.len()
            || parts.iter().enumerate().any(|(i, p)| p.index as usize != i)
        {
            return Err(ServeError::invalid(format!(
                "{} partition results stored for a proof of {} partitions",
                parts.len(),
                self.public_inputs.len()
            )));
        }
        self.check(parts, fallback)?;
        Ok(parts.iter().flat_map(|p| p.proof.iter().copied()).collect())
    }

    /// Checks one finished partition as [`FilecoinJob::verify`] checks each: a fleet's store
    /// finishes a job in the transaction that commits its last partition, so there every
    /// partition is checked on its own before it is committed.
    pub fn verify_partition(&self, part: &PartitionRecord, fallback: &OwnKey<'_>) -> Result<()> {
        self.check(std::slice::from_ref(part), fallback)
    }

    fn check(&self, parts: &[PartitionRecord], fallback: &OwnKey<'_>) -> Result<()> {
        let pvk = match self.pvk.get() {
            Some(k) => k,
            None => {
                let vk = if self.paths.vk.is_file() {
                    read_verifying_key(&self.paths.vk, PointCheck::Full)?
                } else {
                    fallback()?
                };
                self.pvk.get_or_init(|| prepare_verifying_key(&vk))
            }
        };
        for p in parts {
            let want = self.public_inputs.get(p.index as usize).ok_or_else(|| {
                ServeError::invalid(format!(
                    "partition {} of a proof of {} partitions",
                    p.index,
                    self.public_inputs.len()
                ))
            })?;
            if decode_inputs(&p.inputs)? != *want {
                return Err(ServeError::invalid(format!(
                    "partition {}: its public inputs are not the ones storage-proofs \
                     generates for it",
                    p.index
                )));
            }
            prove::check_partition(pvk, p.index as usize, &Proof::from_bytes(&p.proof)?, want)?;
        }
        Ok(())
    }
}

/// Filecoin's published parameters, as the `parameters.json` storage-proofs-core carries lists
/// them: a file of a listed name whose blake2b digest matches is the published file
/// ([`crate::params::Published`]; `--params-check auto`).
#[derive(Debug)]
pub struct ParametersJson;

impl crate::params::Published for ParametersJson {
    fn listed(&self, name: &str) -> Option<String> {
        bellows_filecoin::params::manifest_digest(name, None)
            .ok()
            .flatten()
    }

    fn hasher(&self) -> Box<dyn crate::params::PieceHasher> {
        Box::new(bellows_filecoin::params::FilecoinDigest::new())
    }
}

impl crate::params::PieceHasher for bellows_filecoin::params::FilecoinDigest {
    fn update(&mut self, bytes: &[u8]) {
        bellows_filecoin::params::FilecoinDigest::update(self, bytes);
    }

    fn finish(&self) -> String {
        bellows_filecoin::params::FilecoinDigest::finish(self)
    }
}

/// The parameters file of `proof`'s circuit: the first of the daemon's parameter folders
/// `dirs` that has it under filecoin-proofs' name (an error naming the file when none has).
pub fn params_file(proof: ProofType, dirs: &ParamsDirs) -> Result<PathBuf> {
    let id = proof.cache_id()?;
    Ok(find_params(&proof, &id, ParamsIn::Configured, dirs)?.params)
}

/// The cache files of circuit `cache_id` of `proof`: in the folder a PoRep C2 request names,
/// or the first of the daemon's parameter folders that has the `.params` file. The `.vk` is
/// used when it lies beside it (else the parameters' own key checks the proofs).
fn find_params(
    proof: &ProofType,
    cache_id: &str,
    where_: ParamsIn<'_>,
    dirs: &ParamsDirs,
) -> Result<CachePaths> {
    let folders: Vec<PathBuf> = match where_ {
        ParamsIn::Folder(d) => vec![d.to_path_buf()],
        ParamsIn::Configured => dirs.dirs().to_vec(),
    };
    let name = CachePaths::new(Path::new(""), cache_id).params;
    let mut last = None;
    for dir in &folders {
        let mut paths = CachePaths::new(dir, cache_id);
        match dirs.resolve(&paths.params) {
            Ok(p) => {
                paths.params = p;
                paths.vk = dirs.resolve(&paths.vk).unwrap_or_default();
                return Ok(paths);
            }
            Err(ServeError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                last = Some(source);
            }
            Err(other) => return Err(other),
        }
    }
    let searched: Vec<String> = folders.iter().map(|d| d.display().to_string()).collect();
    Err(ServeError::Io {
        context: format!(
            "no parameters for {} in {}: expected {} (filecoin-proofs' name for this circuit; \
             fetch the published file with `lotus fetch-params`, or make test parameters with \
             `bellows porep setup`)",
            proof.name(),
            if searched.is_empty() {
                "any parameter folder (none is configured: --params-dir)".to_string()
            } else {
                searched.join(", ")
            },
            name.display()
        ),
        source: last.unwrap_or_else(|| std::io::ErrorKind::NotFound.into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::Published;

    /// The 32 GiB PoRep's published file is listed under filecoin-proofs' name, and the hasher
    /// gives `parameters.json`'s form of the digest, whatever the pieces.
    #[test]
    fn parameters_json_lists_the_published_files_and_hashes_in_its_form() {
        let id = ProofType::Seal(RegisteredSealProof::StackedDrg32GiBV1_1)
            .cache_id()
            .unwrap();
        let listed = ParametersJson.listed(&format!("v28-{id}.params")).unwrap();
        assert_eq!(listed.len(), 32, "{listed}");
        assert!(ParametersJson.listed(&format!("v28-{id}.vk")).is_some());
        assert!(ParametersJson
            .listed("v28-no-such-circuit.params")
            .is_none());
        let mut h = ParametersJson.hasher();
        h.update(b"ab");
        h.update(b"c");
        assert_eq!(
            h.finish(),
            bellows_filecoin::params::filecoin_digest(b"abc")
        );
    }
}
