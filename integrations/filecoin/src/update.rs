//! SnapDeals (EmptySectorUpdate) proofs on Bellows, from vanilla partition proofs.
//!
//! The input is what filecoin-proofs-api's `generate_empty_sector_update_proof_with_vanilla`
//! takes: the update proof type, one vanilla proof per partition (as `generate_partition_proofs`
//! returns them: bincode of storage-proofs-update's `PartitionProof`), and the commitments
//! comm_r_old, comm_r_new, comm_d_new. One `EmptySectorUpdateCircuit` per partition is built by
//! storage-proofs-update's compound proof and proved by Bellows ([`crate::prove`]); the bytes
//! are the partition proofs concatenated, as filecoin-proofs writes them.

use std::path::Path;

use bellows_core::{Error, Result};
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, SectorUpdateConfig};
use filecoin_proofs::TreeRHasher;
use filecoin_proofs_api::RegisteredUpdateProof;
use storage_proofs_core::compound_proof::{self, CompoundProof};
use storage_proofs_core::parameter_cache::CacheableParameters;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_update::{
    EmptySectorUpdate, EmptySectorUpdateCircuit, EmptySectorUpdateCompound, PartitionProof,
    PublicInputs, PublicParams, SetupParams,
};

use crate::kind::{self, ProofKind};
use crate::prove::{Instance, ProofOutput, ProveConfig};
use crate::shape::{proofs_error, Shape};

/// A sector update proof to make, from vanilla partition proofs.
#[derive(Clone, Debug)]
pub struct UpdateInput {
    /// The update proof type.
    pub proof: RegisteredUpdateProof,
    /// One vanilla proof per partition (bincode of `PartitionProof`).
    pub vanilla_proofs: Vec<Vec<u8>>,
    /// The replica commitment before the update.
    pub comm_r_old: [u8; 32],
    /// The replica commitment after the update.
    pub comm_r_new: [u8; 32],
    /// The new data commitment.
    pub comm_d_new: [u8; 32],
}

/// The partition circuits of one update proof, with their public inputs.
pub type UpdateInstance<Tree> = Instance<EmptySectorUpdateCircuit<Tree>>;

/// SnapDeals as a proof kind: the empty-sector-update circuits of vanilla partition proofs.
pub(crate) struct Update;

impl ProofKind for Update {
    type Proof = RegisteredUpdateProof;
    type Input = UpdateInput;
    type Circuit<Tree: Shape> = EmptySectorUpdateCircuit<Tree>;
    type Blank<Tree: Shape> = EmptySectorUpdateCircuit<Tree>;

    fn proof(input: &UpdateInput) -> RegisteredUpdateProof {
        input.proof
    }

    fn cache_id<Tree: Shape>(proof: RegisteredUpdateProof) -> Result<String> {
        Ok(id_of::<Tree>(&public_params(proof)))
    }

    fn blank<Tree: Shape>(proof: RegisteredUpdateProof) -> Result<EmptySectorUpdateCircuit<Tree>> {
        Ok(<EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
        >>::blank_circuit(&public_params(proof)))
    }

    fn instance<Tree: Shape>(input: &UpdateInput) -> Result<UpdateInstance<Tree>> {
        instance::<Tree>(input)
    }
}

/// The circuit's public parameters for `proof`'s sector size.
fn public_params(proof: RegisteredUpdateProof) -> PublicParams {
    PublicParams::from_sector_size(u64::from(proof.sector_size()))
}

fn id_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(pp: &PublicParams) -> String {
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(pp)
}

kind::kind_api!(Update, RegisteredUpdateProof);

/// Builds the partition circuits of `input` for the sector shape `Tree`.
pub fn instance<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
) -> Result<UpdateInstance<Tree>> {
    crate::shape::no_panic("update vanilla proofs", || instance_checked::<Tree>(input))
}

fn instance_checked<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
    input: &UpdateInput,
) -> Result<UpdateInstance<Tree>> {
    let config = SectorUpdateConfig::from_porep_config(&input.proof.as_v1_config());
    let partitions = usize::from(config.update_partitions);
    if input.vanilla_proofs.len() != partitions {
        return Err(Error::invalid(format!(
            "{:?} has {partitions} partitions, but {} vanilla proofs were given",
            input.proof,
            input.vanilla_proofs.len()
        )));
    }
    let vanilla: Vec<PartitionProof<Tree>> = kind::decode_vanilla(
        &input.vanilla_proofs,
        "vanilla partition proof",
        input.proof,
    )?;
    let domain = |b: &[u8; 32], what: &str| {
        <TreeRHasher as Hasher>::Domain::try_from_bytes(b)
            .map_err(|e| proofs_error(&format!("{what} is not a field element"), e))
    };
    let pub_inputs = PublicInputs {
        k: partitions,
        comm_r_old: domain(&input.comm_r_old, "comm_r_old")?,
        comm_d_new: <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&input.comm_d_new)
            .map_err(|e| proofs_error("comm_d_new is not a field element", e))?,
        comm_r_new: domain(&input.comm_r_new, "comm_r_new")?,
        h: config.h,
    };
    let pp = <EmptySectorUpdateCompound<Tree> as CompoundProof<
        EmptySectorUpdate<Tree>,
        EmptySectorUpdateCircuit<Tree>,
    >>::setup(&compound_proof::SetupParams {
        vanilla_params: SetupParams {
            sector_bytes: u64::from(config.sector_size),
        },
        partitions: Some(partitions),
        priority: false,
    })
    .map_err(|e| proofs_error("update public parameters", e))?;
    let valid =
        EmptySectorUpdate::<Tree>::verify_all_partitions(&pp.vanilla_params, &pub_inputs, &vanilla)
            .map_err(|e| proofs_error("checking the vanilla proofs", e))?;
    if !valid {
        return Err(Error::malformed(
            "update vanilla proofs",
            format!(
                "they do not verify as {:?} proofs for these commitments",
                input.proof
            ),
        ));
    }
    let (circuits, public_inputs) =
        kind::partition_circuits::<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
            EmptySectorUpdateCompound<Tree>,
        >(&pub_inputs, &pub_inputs, &vanilla, &pp.vanilla_params, "")?;
    Ok(Instance {
        circuits,
        public_inputs,
        cache_id: id_of::<Tree>(&pp.vanilla_params),
    })
}

/// Proves the update `input` with the parameters in the cache folder `params_dir`.
pub fn prove_update(
    input: &UpdateInput,
    params_dir: &Path,
    cfg: &ProveConfig,
) -> Result<ProofOutput> {
    kind::prove::<Update>(input, params_dir, cfg)
}
