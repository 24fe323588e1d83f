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
use blstrs::Scalar as Fr;
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

use crate::params::CachePaths;
use crate::prove::{self, ProofOutput, ProveConfig, SetupReport};
use crate::shape::proofs_error;
use crate::with_sector_shape;

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
pub struct UpdateInstance<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>> {
    /// One circuit per partition.
    pub circuits: Vec<EmptySectorUpdateCircuit<Tree>>,
    /// Each partition's public inputs (the constant one not included).
    pub public_inputs: Vec<Vec<Fr>>,
    /// The circuit's parameter-cache identifier.
    pub cache_id: String,
}

fn id_of<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(pp: &PublicParams) -> String {
    <EmptySectorUpdateCompound<Tree> as CacheableParameters<
        EmptySectorUpdateCircuit<Tree>,
        PublicParams,
    >>::cache_identifier(pp)
}

/// The parameter-cache identifier of `proof`'s circuit.
pub fn cache_id(proof: RegisteredUpdateProof) -> Result<String> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        proof: RegisteredUpdateProof,
    ) -> Result<String> {
        Ok(id_of::<Tree>(&PublicParams::from_sector_size(u64::from(
            proof.sector_size(),
        ))))
    }
    with_sector_shape!(u64::from(proof.sector_size()), inner, proof)
}

/// The cache files of `proof`'s circuit in `dir`.
pub fn cache_paths(proof: RegisteredUpdateProof, dir: &Path) -> Result<CachePaths> {
    Ok(CachePaths::new(dir, &cache_id(proof)?))
}

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
    let vanilla: Vec<PartitionProof<Tree>> = input
        .vanilla_proofs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).map_err(|e| {
                Error::malformed(
                    format!("vanilla partition proof {i}"),
                    format!("not a {:?} partition proof: {e}", input.proof),
                )
            })
        })
        .collect::<Result<_>>()?;
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
    let mut circuits = Vec::with_capacity(partitions);
    let mut public_inputs = Vec::with_capacity(partitions);
    for (k, p) in vanilla.iter().enumerate() {
        circuits.push(
            <EmptySectorUpdateCompound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::circuit(&pub_inputs, (), p, &pp.vanilla_params, Some(k))
            .map_err(|e| proofs_error(&format!("partition {k}"), e))?,
        );
        public_inputs.push(
            <EmptySectorUpdateCompound<Tree> as CompoundProof<
                EmptySectorUpdate<Tree>,
                EmptySectorUpdateCircuit<Tree>,
            >>::generate_public_inputs(&pub_inputs, &pp.vanilla_params, Some(k))
            .map_err(|e| proofs_error(&format!("public inputs of partition {k}"), e))?,
        );
    }
    Ok(UpdateInstance {
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
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        input: &UpdateInput,
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

/// TEST parameters for `proof`'s circuit, written into `dir` under filecoin-proofs' names (see
/// [`prove::setup_circuit`]).
pub fn setup<R: rand_core::RngCore>(
    proof: RegisteredUpdateProof,
    dir: &Path,
    rng: &mut R,
    force: bool,
) -> Result<(CachePaths, SetupReport)> {
    fn inner<Tree: 'static + MerkleTreeTrait<Hasher = TreeRHasher>>(
        proof: RegisteredUpdateProof,
        dir: &Path,
        rng: &mut dyn rand_core::RngCore,
        force: bool,
    ) -> Result<(CachePaths, SetupReport)> {
        let pp = PublicParams::from_sector_size(u64::from(proof.sector_size()));
        let id = id_of::<Tree>(&pp);
        let blank = <EmptySectorUpdateCompound<Tree> as CompoundProof<
            EmptySectorUpdate<Tree>,
            EmptySectorUpdateCircuit<Tree>,
        >>::blank_circuit(&pp);
        prove::setup_circuit(blank, &id, dir, u64::from(proof.sector_size()), rng, force)
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
