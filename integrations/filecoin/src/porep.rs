//! PoRep commit phase 2 (C2) on Bellows: the partition circuits of a C1 output, their
//! parameters, proving through the pipeline, and verification through filecoin-proofs.
//!
//! What filecoin-proofs' `seal_commit_phase2` does, step for step, with the proving done by
//! Bellows:
//! 1. the public inputs of the stacked-DRG proof (replica id, comm_d, comm_r, seed) and one
//!    `StackedCircuit` per partition from the C1 output's vanilla proofs, built by
//!    storage-proofs-porep's `StackedCompound::circuit` (the same code, so the same circuits),
//!    after the vanilla proofs are verified (milliseconds; filecoin-proofs leaves that to C1,
//!    and a C1 output changed since, or relabelled, would otherwise cost a whole C2 to notice);
//! 2. the Groth16 parameters of the circuit from the parameter cache
//!    ([`crate::params`], file names from the circuit's cache identifier);
//! 3. one Groth16 proof per partition — here through Bellows' pipeline on any backend, several
//!    partitions in flight;
//! 4. the proof bytes: the partition proofs concatenated, 192 bytes each (compressed A ‖ B ‖ C),
//!    which is what `MultiProof::write` produces.
//!
//! filecoin-proofs then verifies the result before returning it; [`prove_c2`] does the same
//! with Bellows' verifier when the verifying key is in the cache (partition by partition, with
//! the public inputs storage-proofs-porep generates), and [`verify_seal`] runs filecoin-proofs'
//! own `verify_seal`.

use std::path::Path;
use std::time::Instant;

use bellows_core::groth16::Parameters;
use bellows_core::{Error, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use crate::c1::C1Output;
use crate::params::{CachePaths, Check, LoadReport};
use crate::prove::{self, ProveConfig, SetupReport};

/// What [`prove_c2`] returns.
pub use crate::prove::ProofOutput as C2Output;
use crate::shape::proofs_error;
use crate::with_sector_shape;

/// The partition circuits of one C1 output, with their public inputs.
pub struct PorepInstance<Tree: 'static + MerkleTreeTrait> {
    /// The proof type.
    pub proof: RegisteredSealProof,
    /// One circuit per partition, in partition order.
    pub circuits: Vec<StackedCircuit<Tree, DefaultPieceHasher>>,
    /// The public inputs of each partition (without the constant one), as storage-proofs-porep
    /// generates them for verification.
    pub public_inputs: Vec<Vec<Fr>>,
    /// The circuit's parameter-cache identifier.
    pub cache_id: String,
}

/// The parameter-cache identifier of `proof`'s circuit (the part between `v28-` and `.params`).
pub fn cache_id(proof: RegisteredSealProof) -> Result<String> {
    fn inner<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) -> Result<String> {
        proof
            .as_v1_config()
            .get_cache_identifier::<Tree>()
            .map_err(|e| proofs_error("cache identifier", e))
    }
    with_sector_shape!(u64::from(proof.sector_size()), inner, proof)
}

/// The cache files of `proof`'s circuit in `dir`.
pub fn cache_paths(proof: RegisteredSealProof, dir: &Path) -> Result<CachePaths> {
    Ok(CachePaths::new(dir, &cache_id(proof)?))
}

/// Builds the partition circuits of `c1` for the sector shape `Tree` (which must be the one of
/// the C1 output's proof type).
pub fn instance<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> Result<PorepInstance<Tree>> {
    crate::shape::no_panic("C1 output", || instance_checked::<Tree>(c1))
}

fn instance_checked<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> Result<PorepInstance<Tree>> {
    let p: &SealCommitPhase1Output = &c1.phase1;
    let proof = p.registered_proof;
    crate::c1::supported(proof)?;
    let config = proof.as_v1_config();
    let vanilla: Vec<Vec<VanillaSealProof<Tree>>> = p
        .vanilla_proofs
        .clone()
        .try_into()
        .map_err(|e| proofs_error("C1 output: vanilla proofs", e))?;
    let replica_id: Fr = p.replica_id.into();
    let comm_r = <Tree::Hasher as Hasher>::Domain::try_from_bytes(&p.comm_r)
        .map_err(|e| proofs_error("C1 output: comm_r is not a field element", e))?;
    let comm_d = <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&p.comm_d)
        .map_err(|e| proofs_error("C1 output: comm_d is not a field element", e))?;
    let pub_in = stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(p.seed),
    };
    let pub_params = filecoin_proofs::parameters::public_params::<Tree>(&config)
        .map_err(|e| proofs_error("PoRep public parameters", e))?;
    // The vanilla proofs must verify for the proof type the C1 output claims (milliseconds):
    // a C1 output of another sector, version or seed is refused here, before any proving,
    // rather than yielding a proof that does not verify.
    let valid = StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
        &pub_params,
        &pub_in,
        &vanilla,
    )
    .map_err(|e| proofs_error("C1 output: checking the vanilla proofs", e))?;
    if !valid {
        return Err(Error::malformed(
            "C1 output",
            format!(
                "its vanilla proofs do not verify as {proof:?} proofs for its comm_r, comm_d,                  replica id and seed: the output was changed, or it was made for another proof                  type or version"
            ),
        ));
    }
    let mut circuits = Vec::with_capacity(vanilla.len());
    let mut public_inputs = Vec::with_capacity(vanilla.len());
    for (k, v) in vanilla.iter().enumerate() {
        circuits.push(
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::circuit(&pub_in, (), v, &pub_params, Some(k))
            .map_err(|e| proofs_error(&format!("C1 output: partition {k}"), e))?,
        );
        public_inputs.push(
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::generate_public_inputs(&pub_in, &pub_params, Some(k))
            .map_err(|e| proofs_error(&format!("public inputs of partition {k}"), e))?,
        );
    }
    let cache_id = config
        .get_cache_identifier::<Tree>()
        .map_err(|e| proofs_error("cache identifier", e))?;
    Ok(PorepInstance {
        proof,
        circuits,
        public_inputs,
        cache_id,
    })
}

/// The blank (witness-free) circuit of `proof`, as the setup needs it.
pub fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
    let config = proof.as_v1_config();
    let pub_params = filecoin_proofs::parameters::public_params::<Tree>(&config)
        .map_err(|e| proofs_error("PoRep public parameters", e))?;
    Ok(
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::blank_circuit(&pub_params),
    )
}

/// Loads the parameters of `proof` from the cache folder `dir`, checking them with `check` and
/// their shape against a partition circuit with `num_inputs` public inputs.
pub fn load_params(
    proof: RegisteredSealProof,
    dir: &Path,
    check: Check,
    num_inputs: usize,
) -> Result<(Parameters, LoadReport)> {
    prove::load_cached(
        &format!("{proof:?}"),
        &cache_id(proof)?,
        dir,
        check,
        None,
        num_inputs,
    )
}

/// Proves C2 for `c1` with the parameters in the cache folder `params_dir` (see the module
/// documentation).
pub fn prove_c2(c1: &C1Output, params_dir: &Path, cfg: &ProveConfig) -> Result<C2Output> {
    with_sector_shape!(
        u64::from(c1.registered_proof().sector_size()),
        prove_c2_inner,
        c1,
        params_dir,
        cfg
    )
}

fn prove_c2_inner<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
    params_dir: &Path,
    cfg: &ProveConfig,
) -> Result<C2Output> {
    let what = format!("{:?}", c1.phase1.registered_proof);
    let Some(pce_dir) = &cfg.pce_dir else {
        return prove::build_and_prove(
            &what,
            || {
                let inst = instance::<Tree>(c1)?;
                Ok(prove::Built {
                    circuits: inst.circuits,
                    public_inputs: inst.public_inputs,
                    cache_id: inst.cache_id,
                })
            },
            params_dir,
            cfg,
        );
    };
    // Pre-compiled synthesis: the recording made from the first partition's circuit (every
    // partition has the same constraint system), loaded or recorded before the parameters.
    let t = Instant::now();
    let inst = instance::<Tree>(c1)?;
    let circuits_time = t.elapsed();
    let first = inst
        .circuits
        .first()
        .cloned()
        .ok_or_else(|| Error::invalid(format!("{what}: the C1 output yields no partition")))?;
    let pce = prove::pce_for(pce_dir, &inst.cache_id, first)?;
    let mut out = prove::prove_instance(
        &what,
        &inst.cache_id,
        inst.circuits,
        &inst.public_inputs,
        params_dir,
        cfg,
        Some(pce),
    )?;
    out.circuits_time = circuits_time;
    Ok(out)
}

/// The prover id of miner actor `actor` (as in `f01234`): the actor id as an unsigned LEB128
/// varint (the payload of its ID address), padded with zeros to 32 bytes, as lotus derives it.
pub fn prover_id_from_actor(actor: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = actor;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Verifies a C2 proof with filecoin-proofs' own `verify_seal`, for the sector `sector_id` of
/// prover `prover_id`, with the commitments, ticket and seed of `c1`.
///
/// filecoin-proofs reads the verifying key from its parameter cache folder,
/// `FIL_PROOFS_PARAMETER_CACHE`, which it reads once per process: set it before the first call
/// (the `bellows porep verify` command does). Returns `Ok(false)` for a proof that does not
/// verify.
pub fn verify_seal(
    c1: &C1Output,
    prover_id: [u8; 32],
    sector_id: u64,
    proof: &[u8],
) -> Result<bool> {
    let p = &c1.phase1;
    let want = usize::from(p.registered_proof.partitions()) * 192;
    if proof.len() != want {
        return Err(Error::malformed(
            "C2 proof",
            format!(
                "{} bytes, but a {:?} proof is {want} bytes ({} partitions of 192)",
                proof.len(),
                p.registered_proof,
                p.registered_proof.partitions()
            ),
        ));
    }
    crate::shape::no_panic("C2 proof", || {
        filecoin_proofs_api::seal::verify_seal(
            p.registered_proof,
            p.comm_r,
            p.comm_d,
            prover_id,
            SectorId::from(sector_id),
            p.ticket,
            p.seed,
            proof,
        )
        .map_err(|e| proofs_error("filecoin-proofs verify_seal", e))
    })
}

/// The folder filecoin-proofs reads parameters and verifying keys from in this process.
pub fn filecoin_parameter_cache() -> std::path::PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_dir()
}

/// Generates parameters for `proof`'s circuit with Bellows' setup and fresh toxic waste from
/// `rng`, and writes them into the cache folder `dir` under filecoin-proofs' names
/// (`.params`, `.vk`, `.meta`). TEST parameters only: see [`prove::setup_circuit`].
pub fn setup<R: rand_core::RngCore>(
    proof: RegisteredSealProof,
    dir: &Path,
    rng: &mut R,
    force: bool,
) -> Result<(CachePaths, SetupReport)> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        proof: RegisteredSealProof,
        dir: &Path,
        rng: &mut dyn rand_core::RngCore,
        force: bool,
    ) -> Result<(CachePaths, SetupReport)> {
        let id = proof
            .as_v1_config()
            .get_cache_identifier::<Tree>()
            .map_err(|e| proofs_error("cache identifier", e))?;
        prove::setup_circuit(
            blank_circuit::<Tree>(proof)?,
            &id,
            dir,
            u64::from(proof.sector_size()),
            rng,
            force,
        )
    }
    with_sector_shape!(
        u64::from(proof.sector_size()),
        inner,
        proof,
        dir,
        rng as &mut dyn rand_core::RngCore,
        force
    )
}
