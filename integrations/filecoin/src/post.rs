//! Proofs of spacetime (WinningPoSt and WindowPoSt) on Bellows, from vanilla proofs.
//!
//! The input is what lotus (or curio) hands a SNARK prover for a PoSt "with vanilla": the proof
//! type, the challenge randomness, the prover id, and one vanilla proof per challenged sector
//! as filecoin-proofs-api's `generate_single_vanilla_proof` returns them (bincode of
//! `FallbackPoStSectorProof`). As filecoin-proofs' `generate_{winning,window}_post_with_vanilla`
//! do, the vanilla proofs are grouped into partitions (and checked: `partition_vanilla_proofs`
//! verifies them all), one `FallbackPoStCircuit` per partition is built by storage-proofs-post,
//! and the partitions are proved — here by Bellows ([`crate::prove`]). The proof bytes are the
//! partition proofs concatenated, as filecoin-proofs writes them.

use std::path::Path;

use bellows_core::{Error, Result};
use blstrs::Scalar as Fr;
use filecoin_proofs::types::{FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use crate::params::CachePaths;
use crate::prove::{self, ProofOutput, ProveConfig, SetupReport};
use crate::shape::proofs_error;
use crate::with_sector_shape;

/// A PoSt to prove, from vanilla proofs.
#[derive(Clone, Debug)]
pub struct PostInput {
    /// The PoSt proof type (winning or window, and the sector size).
    pub proof: RegisteredPoStProof,
    /// The challenge randomness (32 bytes; a field element).
    pub randomness: [u8; 32],
    /// The prover id.
    pub prover_id: [u8; 32],
    /// One vanilla proof per challenged sector, as filecoin-proofs-api's
    /// `generate_single_vanilla_proof` returns them.
    pub vanilla_proofs: Vec<Vec<u8>>,
}

/// The partition circuits of one PoSt, with their public inputs.
pub struct PostInstance<Tree: 'static + MerkleTreeTrait> {
    /// One circuit per partition.
    pub circuits: Vec<FallbackPoStCircuit<Tree>>,
    /// Each partition's public inputs (the constant one not included).
    pub public_inputs: Vec<Vec<Fr>>,
    /// The circuit's parameter-cache identifier.
    pub cache_id: String,
}

/// The parameter-cache identifier of `proof`'s circuit.
pub fn cache_id(proof: RegisteredPoStProof) -> Result<String> {
    fn inner<Tree: 'static + MerkleTreeTrait>(proof: RegisteredPoStProof) -> Result<String> {
        proof
            .as_v1_config()
            .get_cache_identifier::<Tree>()
            .map_err(|e| proofs_error("cache identifier", e))
    }
    with_sector_shape!(u64::from(proof.sector_size()), inner, proof)
}

/// The cache files of `proof`'s circuit in `dir`.
pub fn cache_paths(proof: RegisteredPoStProof, dir: &Path) -> Result<CachePaths> {
    Ok(CachePaths::new(dir, &cache_id(proof)?))
}

/// Partitions of a WindowPoSt over `sectors` sectors: as filecoin-proofs counts them.
fn window_partitions(sectors: usize, config: &PoStConfig) -> Option<usize> {
    let p = sectors.div_ceil(config.sector_count);
    (p > 1).then_some(p)
}

/// The vanilla setup parameters and partition count of a PoSt over `sectors` sectors.
fn vanilla_setup(
    config: &PoStConfig,
    sectors: usize,
) -> Result<(fallback::SetupParams, Option<usize>)> {
    let (vanilla_params, partitions) = match config.typ {
        PoStType::Winning => (
            filecoin_proofs::parameters::winning_post_setup_params(config)
                .map_err(|e| proofs_error("WinningPoSt parameters", e))?,
            None,
        ),
        PoStType::Window => (
            filecoin_proofs::parameters::window_post_setup_params(config),
            window_partitions(sectors, config),
        ),
    };
    Ok((vanilla_params, partitions))
}

fn public_params<'a, Tree: 'static + MerkleTreeTrait>(
    config: &PoStConfig,
    sectors: usize,
) -> Result<(
    compound_proof::PublicParams<'a, FallbackPoSt<'a, Tree>>,
    usize,
)> {
    let (vanilla_params, partitions) = vanilla_setup(config, sectors)?;
    let pp = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'a, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::setup(&compound_proof::SetupParams {
        vanilla_params,
        partitions,
        priority: false,
    })
    .map_err(|e| proofs_error("PoSt public parameters", e))?;
    Ok((pp, partitions.unwrap_or(1)))
}

/// Builds the partition circuits of `input` for the sector shape `Tree`.
pub fn instance<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<PostInstance<Tree>> {
    crate::shape::no_panic("PoSt vanilla proofs", || instance_checked::<Tree>(input))
}

fn instance_checked<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
) -> Result<PostInstance<Tree>> {
    let config = input.proof.as_v1_config();
    if input.vanilla_proofs.is_empty() {
        return Err(Error::invalid("a PoSt needs at least one vanilla proof"));
    }
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> = input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).map_err(|e| {
                Error::malformed(
                    format!("vanilla proof {i}"),
                    format!("not a {:?} vanilla proof: {e}", input.proof),
                )
            })
        })
        .collect::<Result<_>>()?;
    let randomness = filecoin_proofs::as_safe_commitment(&input.randomness, "randomness")
        .map_err(|e| proofs_error("PoSt randomness", e))?;
    let prover_id = filecoin_proofs::as_safe_commitment(&input.prover_id, "prover_id")
        .map_err(|e| proofs_error("prover id", e))?;
    let (pub_params, partitions) = public_params::<Tree>(&config, vanilla.len())?;
    let pub_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: vanilla
            .iter()
            .map(|p| PublicSector {
                id: p.sector_id,
                comm_r: p.comm_r,
            })
            .collect(),
        k: None,
    };
    // Groups the proofs into partitions and verifies every one of them.
    let partitioned = filecoin_proofs::partition_vanilla_proofs(
        &config,
        &pub_params.vanilla_params,
        &pub_inputs,
        partitions,
        &vanilla,
    )
    .map_err(|e| proofs_error("vanilla proofs", e))?;
    // The verifier's view of the statement. A WinningPoSt circuit has `sector_count` slots of
    // one challenge each, all for the one challenged sector, and filecoin-proofs'
    // verify_winning_post lists that sector once per slot (each slot's challenge depends on
    // its index), so the public inputs are generated from that list.
    let verifier_inputs = match config.typ {
        PoStType::Winning => fallback::PublicInputs {
            sectors: (0..pub_params.vanilla_params.sector_count)
                .flat_map(|_| pub_inputs.sectors.iter().cloned())
                .collect(),
            ..pub_inputs.clone()
        },
        PoStType::Window => pub_inputs.clone(),
    };
    let mut circuits = Vec::with_capacity(partitioned.len());
    let mut public_inputs = Vec::with_capacity(partitioned.len());
    for (k, p) in partitioned.iter().enumerate() {
        circuits.push(
            <FallbackPoStCompound<Tree> as CompoundProof<
                FallbackPoSt<'_, Tree>,
                FallbackPoStCircuit<Tree>,
            >>::circuit(
                &pub_inputs,
                Default::default(),
                p,
                &pub_params.vanilla_params,
                Some(k),
            )
            .map_err(|e| proofs_error(&format!("partition {k}"), e))?,
        );
        public_inputs.push(
            <FallbackPoStCompound<Tree> as CompoundProof<
                FallbackPoSt<'_, Tree>,
                FallbackPoStCircuit<Tree>,
            >>::generate_public_inputs(
                &verifier_inputs, &pub_params.vanilla_params, Some(k)
            )
            .map_err(|e| proofs_error(&format!("public inputs of partition {k}"), e))?,
        );
    }
    Ok(PostInstance {
        circuits,
        public_inputs,
        cache_id: config
            .get_cache_identifier::<Tree>()
            .map_err(|e| proofs_error("cache identifier", e))?,
    })
}

/// Proves the PoSt `input` with the parameters in the cache folder `params_dir`.
pub fn prove_post(input: &PostInput, params_dir: &Path, cfg: &ProveConfig) -> Result<ProofOutput> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        input: &PostInput,
        dir: &Path,
        cfg: &ProveConfig,
    ) -> Result<ProofOutput> {
        prove::build_and_prove(
            &format!("{:?}", input.proof),
            || {
                let inst = instance::<Tree>(input)?;
                Ok(prove::Built {
                    circuits: inst.circuits,
                    public_inputs: inst.public_inputs,
                    cache_id: inst.cache_id,
                })
            },
            dir,
            cfg,
        )
    }
    with_sector_shape!(
        u64::from(input.proof.sector_size()),
        inner,
        input,
        params_dir,
        cfg
    )
}

/// The blank (witness-free) circuit of `proof`.
pub fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredPoStProof,
) -> Result<FallbackPoStCircuit<Tree>> {
    let config = proof.as_v1_config();
    let (pub_params, _) = public_params::<Tree>(&config, config.sector_count)?;
    Ok(<FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::blank_circuit(&pub_params.vanilla_params))
}

/// TEST parameters for `proof`'s circuit, written into `dir` under filecoin-proofs' names (see
/// [`prove::setup_circuit`]).
pub fn setup<R: rand_core::RngCore>(
    proof: RegisteredPoStProof,
    dir: &Path,
    rng: &mut R,
    force: bool,
) -> Result<(CachePaths, SetupReport)> {
    fn inner<Tree: 'static + MerkleTreeTrait>(
        proof: RegisteredPoStProof,
        dir: &Path,
        rng: &mut dyn rand_core::RngCore,
        force: bool,
    ) -> Result<(CachePaths, SetupReport)> {
        prove::setup_circuit(
            blank_circuit::<Tree>(proof)?,
            &cache_id(proof)?,
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
