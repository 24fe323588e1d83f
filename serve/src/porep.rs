//! PoRep C2 jobs (cargo feature `filecoin`): a Filecoin sector's commit phase 2 proved by the
//! engine, partition by partition, through the same queue, budgets, retries and cancellation
//! as built-in circuits (docs/serve.md, "PoRep C2 jobs").
//!
//! Everything Filecoin-specific is bellows-filecoin's, reused: the C1 output is parsed and
//! checked by [`bellows_filecoin::parse_c1`] (either form: lotus-bench's JSON or
//! `SealCommitPhase1Output`), its vanilla proofs verified and every partition's
//! `StackedCircuit` built by [`bellows_filecoin::porep::instance`] (storage-proofs-porep's own
//! code), the parameters named as filecoin-proofs names them
//! ([`bellows_filecoin::porep::cache_paths`]), each circuit wrapped in
//! [`bellows_filecoin::prove::Guarded`] so that a panic in a gadget fails the job instead of a
//! worker, and the finished proofs checked with [`bellows_filecoin::prove::check_partition`]
//! against the verifying key before the job is reported done — the self-check
//! `bellows porep c2` (and filecoin-proofs) make.
//!
//! The job is rebuilt from its journaled request (the C1 bytes travel in it), so a restart
//! re-builds the partitions from the stored C1 output.

use std::path::{Path, PathBuf};

use std::sync::{Arc, OnceLock};

use bellows_core::groth16::{
    io::ParamsShape,
    synthesis::{synthesize, Synthesized},
    verifier::{prepare_verifying_key, PreparedVerifyingKey},
    Proof, VerifyingKey,
};
use bellows_core::pce::Pce;
use bellows_core::Backend;
// The sector-shape macro names filecoin_proofs' constants.
use bellows_filecoin::filecoin_proofs;
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::prove::{self, Guarded};
use bellows_filecoin::{porep, C1Output, CachePaths};
use bellpepper_core::Circuit;
use blstrs::Scalar;
use sha2::{Digest, Sha256};

use crate::{
    error::{Result, ServeError},
    job::decode_inputs,
    store::PartitionRecord,
};

/// The partition circuits of one C1 output, behind the sector shape they are generic over.
trait Circuits: Send + Sync {
    /// Synthesises partition `k` (a fresh copy of its circuit, so a retry can synthesise it
    /// again), directly or with the recording `pce`.
    fn synthesize(
        &self,
        k: usize,
        pce: Option<&Pce>,
        host: Option<&Arc<dyn Backend>>,
    ) -> bellows_core::Result<Synthesized>;

    /// The recording of the partition circuit `cache_id` in the folder `pce_dir`, made from
    /// the first partition (all have the same constraint system) when there is none.
    fn record(&self, pce_dir: &Path, cache_id: &str) -> bellows_core::Result<Arc<Pce>>;
}

struct Shaped<C>(Vec<C>);

impl<C: Circuit<Scalar> + Clone + Send + Sync> Circuits for Shaped<C> {
    fn synthesize(
        &self,
        k: usize,
        pce: Option<&Pce>,
        host: Option<&Arc<dyn Backend>>,
    ) -> bellows_core::Result<Synthesized> {
        let c = self.0.get(k).ok_or_else(|| {
            bellows_core::Error::invalid(format!(
                "partition {k} of a job of {} partitions",
                self.0.len()
            ))
        })?;
        match pce {
            Some(p) => p.synthesize_for(Guarded(c.clone()), host),
            None => synthesize(Guarded(c.clone())),
        }
    }

    fn record(&self, pce_dir: &Path, cache_id: &str) -> bellows_core::Result<Arc<Pce>> {
        let first = self.0.first().ok_or_else(|| {
            bellows_core::Error::invalid("a PoRep job without partitions has nothing to record")
        })?;
        prove::pce_for(pce_dir, cache_id, first.clone())
    }
}

/// A PoRep C2 job: the C1 output, its partition circuits, their public inputs and the files
/// of the proof type's parameters.
pub struct PorepJob {
    c1: C1Output,
    /// SHA-256 of the C1 bytes as submitted (two jobs are equal when these are).
    c1_digest: [u8; 32],
    paths: CachePaths,
    /// filecoin-proofs' identifier of the partition circuit (its parameters' file name).
    cache_id: String,
    circuits: Box<dyn Circuits>,
    public_inputs: Vec<Vec<Scalar>>,
    /// The prepared verifying key, read once (every partition of a fleet job is checked).
    pvk: OnceLock<PreparedVerifyingKey>,
}

impl std::fmt::Debug for PorepJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PorepJob")
            .field("proof", &self.c1.registered_proof())
            .field("partitions", &self.public_inputs.len())
            .field("params", &self.paths.params)
            .finish()
    }
}

impl PartialEq for PorepJob {
    fn eq(&self, other: &Self) -> bool {
        self.c1_digest == other.c1_digest && self.paths.params == other.paths.params
    }
}

impl Eq for PorepJob {}

/// A proof's partition circuits, each partition's public inputs, the parameter-cache id.
type Built = (Box<dyn Circuits>, Vec<Vec<Scalar>>, String);

/// The partition circuits of `c1`, for its sector shape `Tree`.
fn build<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> bellows_core::Result<Built> {
    let inst = porep::instance::<Tree>(c1)?;
    Ok((
        Box::new(Shaped(inst.circuits)),
        inst.public_inputs,
        inst.cache_id,
    ))
}

impl PorepJob {
    /// Parses and checks the C1 output `c1` (either form), verifies its vanilla proofs, builds
    /// every partition's circuit, and names the proof type's parameters in `params_dir`.
    pub fn new(c1: &[u8], params_dir: &Path) -> Result<Self> {
        if c1.is_empty() {
            return Err(ServeError::invalid(
                "the PoRep C2 request carries no C1 output (c1 is empty)",
            ));
        }
        let c1_digest: [u8; 32] = Sha256::digest(c1).into();
        let parsed = bellows_filecoin::parse_c1(c1, "C1 output")?;
        let (circuits, public_inputs, cache_id) = bellows_filecoin::with_sector_shape!(
            u64::from(parsed.registered_proof().sector_size()),
            build,
            &parsed
        )?;
        let paths = CachePaths::new(params_dir, &cache_id);
        Ok(Self {
            c1: parsed,
            c1_digest,
            paths,
            cache_id,
            circuits,
            public_inputs,
            pvk: OnceLock::new(),
        })
    }

    /// Checks that the parameter folder holds the proof type's parameters (at Submit; a fleet
    /// node that lacks them gives the job back instead).
    pub fn check_params_present(&self) -> Result<()> {
        if !self.paths.params.exists() {
            return Err(ServeError::invalid(format!(
                "no parameters for {} in {}: expected {} (filecoin-proofs' name for this \
                 circuit; fetch the published file with `lotus fetch-params`, or make test \
                 parameters with `bellows porep setup`)",
                self.proof_name(),
                self.paths
                    .params
                    .parent()
                    .unwrap_or(Path::new(""))
                    .display(),
                self.paths.params.display()
            )));
        }
        Ok(())
    }

    /// Number of partitions (the proof type's).
    pub fn partitions(&self) -> u32 {
        self.public_inputs.len() as u32
    }

    /// The proof type's name, e.g. `StackedDrg2KiBV1_1`.
    pub fn proof_name(&self) -> String {
        format!("{:?}", self.c1.registered_proof())
    }

    /// The parsed C1 output.
    pub fn c1(&self) -> &C1Output {
        &self.c1
    }

    /// The parameters file (`v28-….params` in the parameter folder).
    pub fn params_path(&self) -> &Path {
        &self.paths.params
    }

    /// The verifying key file (`v28-….vk`), which may be missing.
    pub fn vk_path(&self) -> PathBuf {
        self.paths.vk.clone()
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
    /// circuit ([`PorepJob::record`]; the same result, its constraint code not run), into
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
    /// c2` uses).
    pub fn pce_id(&self) -> String {
        prove::pce_id(&self.cache_id)
    }

    /// The partition circuit's recording in the folder `pce_dir`, recorded from the first
    /// partition and saved when there is none.
    pub fn record(&self, pce_dir: &Path) -> bellows_core::Result<Arc<Pce>> {
        self.circuits.record(pce_dir, &self.cache_id)
    }

    /// Checks a finished job's partitions (all of them, in index order): each one's public
    /// inputs are the ones storage-proofs-porep generates for it, and each proof verifies with
    /// the verifying key in the parameter folder (the parameters' own, `fallback`, when the
    /// folder has no `.vk`). Returns the seal proof bytes (the partition proofs concatenated,
    /// as filecoin-proofs' `seal_commit_phase2` returns them).
    pub fn verify(&self, parts: &[PartitionRecord], fallback: &VerifyingKey) -> Result<Vec<u8>> {
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

    /// Checks one finished partition as [`PorepJob::verify`] checks each: a fleet's store
    /// finishes a job in the transaction that commits its last partition, so there every
    /// partition is checked on its own before it is committed.
    pub fn verify_partition(&self, part: &PartitionRecord, fallback: &VerifyingKey) -> Result<()> {
        self.check(std::slice::from_ref(part), fallback)
    }

    /// Each of `parts` (any subset, by index) against the public inputs storage-proofs-porep
    /// generates for it and the verifying key (the folder's `.vk`, else `fallback`).
    fn check(&self, parts: &[PartitionRecord], fallback: &VerifyingKey) -> Result<()> {
        let pvk = match self.pvk.get() {
            Some(k) => k,
            None => {
                let vk = prove::cached_vk(&self.paths.vk, fallback)?;
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
                    "partition {}: its public inputs are not the ones storage-proofs-porep \
                     generates for it",
                    p.index
                )));
            }
            prove::check_partition(pvk, p.index as usize, &Proof::from_bytes(&p.proof)?, want)?;
        }
        Ok(())
    }
}
