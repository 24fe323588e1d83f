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
use filecoin_proofs::types::{FallbackPoStSectorProof, MerkleTreeTrait, PoStConfig, PoStType};
use filecoin_proofs_api::RegisteredPoStProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_post::fallback::{
    self, FallbackPoSt, FallbackPoStCircuit, FallbackPoStCompound, PublicSector,
};

use crate::kind::{self, ProofKind};
pub use crate::post_witness::PostPartition;
use crate::prove::{Instance, ProofOutput, ProveConfig};
use crate::shape::{proofs_error, Shape};

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
pub type PostInstance<Tree> = Instance<PostPartition<Tree>>;

/// PoSt as a proof kind: the fallback PoSt circuits of vanilla sector proofs.
pub(crate) struct Post;

impl ProofKind for Post {
    type Proof = RegisteredPoStProof;
    type Input = PostInput;
    type Circuit<Tree: Shape> = PostPartition<Tree>;
    type Blank<Tree: Shape> = FallbackPoStCircuit<Tree>;

    fn proof(input: &PostInput) -> RegisteredPoStProof {
        input.proof
    }

    fn cache_id<Tree: Shape>(proof: RegisteredPoStProof) -> Result<String> {
        config_cache_id::<Tree>(&proof.as_v1_config())
    }

    fn blank<Tree: Shape>(proof: RegisteredPoStProof) -> Result<FallbackPoStCircuit<Tree>> {
        blank_circuit::<Tree>(proof)
    }

    fn instance<Tree: Shape>(input: &PostInput) -> Result<PostInstance<Tree>> {
        instance::<Tree>(input)
    }
}

fn config_cache_id<Tree: 'static + MerkleTreeTrait>(config: &PoStConfig) -> Result<String> {
    config
        .get_cache_identifier::<Tree>()
        .map_err(|e| proofs_error("cache identifier", e))
}

kind::kind_api!(Post, RegisteredPoStProof);

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

/// The vanilla sector proofs of `input`, decoded (bincode of `FallbackPoStSectorProof`), its
/// randomness and prover id as tree-domain values.
type Decoded<Tree> = (
    Vec<FallbackPoStSectorProof<Tree>>,
    <<Tree as MerkleTreeTrait>::Hasher as filecoin_hashers::Hasher>::Domain,
    <<Tree as MerkleTreeTrait>::Hasher as filecoin_hashers::Hasher>::Domain,
);

fn decode<Tree: 'static + MerkleTreeTrait>(input: &PostInput) -> Result<Decoded<Tree>> {
    if input.vanilla_proofs.is_empty() {
        return Err(Error::invalid("a PoSt needs at least one vanilla proof"));
    }
    let vanilla: Vec<FallbackPoStSectorProof<Tree>> =
        kind::decode_vanilla(&input.vanilla_proofs, "vanilla proof", input.proof)?;
    let randomness = filecoin_proofs::as_safe_commitment(&input.randomness, "randomness")
        .map_err(|e| proofs_error("PoSt randomness", e))?;
    let prover_id = filecoin_proofs::as_safe_commitment(&input.prover_id, "prover_id")
        .map_err(|e| proofs_error("prover id", e))?;
    Ok((vanilla, randomness, prover_id))
}

/// The public sectors of `vanilla` (what the verifier knows of each: its id and comm_r).
fn public_sectors<Tree: MerkleTreeTrait>(
    vanilla: &[FallbackPoStSectorProof<Tree>],
) -> Vec<PublicSector<<Tree::Hasher as filecoin_hashers::Hasher>::Domain>> {
    vanilla
        .iter()
        .map(|p| PublicSector {
            id: p.sector_id,
            comm_r: p.comm_r,
        })
        .collect()
}

fn instance_checked<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
) -> Result<PostInstance<Tree>> {
    let config = input.proof.as_v1_config();
    let (vanilla, randomness, prover_id) = decode::<Tree>(input)?;
    let (pub_params, partitions) = public_params::<Tree>(&config, vanilla.len())?;
    let pub_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: public_sectors(&vanilla),
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
    let (circuits, public_inputs) = kind::partition_circuits::<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
        FallbackPoStCompound<Tree>,
    >(
        &pub_inputs,
        &verifier_inputs,
        &partitioned,
        &pub_params.vanilla_params,
        "",
    )?;
    Ok(Instance {
        circuits: circuits.into_iter().map(PostPartition).collect(),
        public_inputs,
        cache_id: config_cache_id::<Tree>(&config)?,
    })
}

/// Most sectors listed before a WindowPoSt partition when its public inputs are generated
/// (see [`partition_instance`]): partition indices of old proof versions past this are refused.
const MAX_SECTORS_BEFORE: usize = 1 << 20;

/// One partition of a WindowPoSt: `input` holds that partition's sectors' vanilla proofs (at
/// most the proof type's sectors per partition) and `partition_index` says which partition of
/// the deadline it is. The circuit is built as filecoin-proofs'
/// `generate_single_window_post_with_vanilla` builds it (the vanilla proofs checked, a short
/// partition padded with its last sector), and its public inputs are the ones the verifier
/// generates for that partition index, so the proof bytes are the `PartitionSnarkProof` Curio
/// merges into the deadline's proof.
pub fn partition_instance<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    partition_index: usize,
) -> Result<PostInstance<Tree>> {
    crate::shape::no_panic("PoSt vanilla proofs", || {
        partition_checked::<Tree>(input, partition_index)
    })
}

fn partition_checked<Tree: 'static + MerkleTreeTrait>(
    input: &PostInput,
    partition_index: usize,
) -> Result<PostInstance<Tree>> {
    let config = input.proof.as_v1_config();
    if config.typ != PoStType::Window {
        return Err(Error::invalid(format!(
            "{:?} is not a WindowPoSt proof type: only a WindowPoSt is proved by partition",
            input.proof
        )));
    }
    let (vanilla, randomness, prover_id) = decode::<Tree>(input)?;
    if vanilla.len() > config.sector_count {
        return Err(Error::invalid(format!(
            "{} vanilla proofs for one partition of {:?}, which holds at most {} sectors",
            vanilla.len(),
            input.proof,
            config.sector_count
        )));
    }
    let (pub_params, _) = public_params::<Tree>(&config, vanilla.len())?;
    let params = &pub_params.vanilla_params;
    let sectors = public_sectors(&vanilla);
    let pub_inputs = fallback::PublicInputs {
        randomness,
        prover_id,
        sectors: sectors.clone(),
        k: Some(partition_index),
    };
    // Pads a short partition and checks every vanilla proof against its partition's challenges.
    let proof =
        filecoin_proofs::single_partition_vanilla_proofs(&config, params, &pub_inputs, &vanilla)
            .map_err(|e| proofs_error("vanilla proofs", e))?;
    // The circuit reads its sectors from the first chunk of the list it is given, as
    // filecoin-proofs builds it; the challenged leaves come from the vanilla proofs' paths.
    let circuit = FallbackPoStCompound::<Tree>::circuit(
        &pub_inputs,
        Default::default(),
        &proof,
        params,
        Some(0),
    )
    .map_err(|e| proofs_error("partition circuit", e))?;
    // The verifier generates partition k's inputs from the k-th chunk of the deadline's sector
    // list (older proof versions number the challenges by the sector's place in it): the
    // partition's sectors are put in that place.
    let before = partition_index
        .checked_mul(config.sector_count)
        .filter(|&n| n <= MAX_SECTORS_BEFORE)
        .ok_or_else(|| {
            Error::invalid(format!(
                "partition index {partition_index} is beyond what this daemon takes for \
                 {:?}",
                input.proof
            ))
        })?;
    let verifier_inputs = fallback::PublicInputs {
        sectors: std::iter::repeat_n(sectors[0].clone(), before)
            .chain(sectors)
            .collect(),
        k: Some(partition_index),
        ..pub_inputs
    };
    let inputs = <FallbackPoStCompound<Tree> as CompoundProof<
        FallbackPoSt<'_, Tree>,
        FallbackPoStCircuit<Tree>,
    >>::generate_public_inputs(&verifier_inputs, params, Some(partition_index))
    .map_err(|e| proofs_error("public inputs of the partition", e))?;
    Ok(Instance {
        circuits: vec![PostPartition(circuit)],
        public_inputs: vec![inputs],
        cache_id: config_cache_id::<Tree>(&config)?,
    })
}

/// Proves the PoSt `input` with the parameters in the cache folder `params_dir`.
pub fn prove_post(input: &PostInput, params_dir: &Path, cfg: &ProveConfig) -> Result<ProofOutput> {
    kind::prove::<Post>(input, params_dir, cfg)
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
