//! Synthetic C1 outputs: a `SealCommitPhase1Output` that filecoin-proofs and storage-proofs
//! accept, made without sealing, at every production sector size in seconds.
//!
//! FOR BENCHMARKS AND TESTS ONLY. Such an output is consistent — every challenge's vanilla proof
//! checks against its commitments, and a C2 proof of it verifies with `verify_seal` — but it
//! proves nothing about stored data: no sector was ever replicated, and the commitments open
//! only where the challenges look.
//!
//! How each part is made (seeded ChaCha20 randomness, so one seed gives one output):
//! - **comm_d** (SHA-256 binary tree, filecoin-proofs' piece hasher): the data is one random
//!   block of Fr32 nodes repeated through the sector ([`trees::PeriodicTree`]). The replica id,
//!   and from it the challenges, depend on comm_d, so comm_d must be fixed before anyone knows
//!   which leaves will be opened; a repeated block fixes it while keeping every leaf's path
//!   known without a sector's worth of hashing.
//! - **replica id**: storage-proofs-porep's `generate_replica_id` (what filecoin-proofs calls)
//!   from the prover id, sector number, ticket, comm_d and the proof type's porep id.
//! - **challenges**: storage-proofs-porep's own derivation (`PublicInputs::challenges`) from the
//!   replica id, the interactive seed and the partition number.
//! - **labels** of the challenged nodes, layer by layer, from random labels of their parents
//!   ([`columns`], the real graph's parents, every label checked by the library's labelling
//!   proof); the key is the last layer's label and the replica node is data + key in the field.
//! - **comm_c** and **comm_r_last** (Poseidon, the sector's tree shape): sparse trees
//!   ([`trees::SparseTree`]) over the column hashes (storage-proofs-porep's `Column::hash`) of the
//!   challenged nodes and their parents, and over the challenged replica nodes; the paths are
//!   exact and every untouched subtree a random value.
//! - **comm_r** = Poseidon `hash2(comm_c, comm_r_last)`, as the vanilla verifier computes it.
//!
//! The vanilla proofs are storage-proofs-porep's own structures, built from
//! `MerkleProof::from_parts`, `Column`, `ColumnProof`, `LabelingProof` and `EncodingProof`; the
//! output is verified with `StackedDrg::verify_all_partitions` before it is returned, as
//! filecoin-proofs' `seal_commit_phase1` does. Memory and time grow with the number of
//! challenges (180 at 32 GiB), not with the sector.

mod columns;
mod trees;

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};

use bellows_core::{Error, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, HashFunction, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof as RawVanillaSealProof};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::RegisteredSealProof;
use generic_array::typenum::U2;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use storage_proofs_core::merkle::MerkleProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{
    self, generate_replica_id, Challenges, Column, ColumnProof, EncodingProof, LabelingProof,
    ReplicaColumnProof, StackedDrg,
};

use crate::shape::proofs_error;
use crate::with_sector_shape;
use columns::{Columns, BASE_PARENTS};
use trees::{PeriodicTree, SparseTree};

/// The sector sizes synthetic outputs are made for, with the proof type (the current version,
/// interactive PoRep 1.1) each maps to.
pub const SYNTH_PROOFS: [(u64, RegisteredSealProof); 5] = [
    (2 << 10, RegisteredSealProof::StackedDrg2KiBV1_1),
    (8 << 20, RegisteredSealProof::StackedDrg8MiBV1_1),
    (512 << 20, RegisteredSealProof::StackedDrg512MiBV1_1),
    (32 << 30, RegisteredSealProof::StackedDrg32GiBV1_1),
    (64 << 30, RegisteredSealProof::StackedDrg64GiBV1_1),
];

/// The most data nodes in the repeated block of a synthetic sector (2 MiB of data).
const DATA_BLOCK_NODES: u64 = 1 << 16;

/// What a synthetic C1 output is made for.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SynthOptions {
    /// All randomness (ticket, interactive seed, data, labels, tree fillers) comes from this
    /// seed. Default 0.
    pub seed: u64,
    /// The prover id. Default: miner f01000's (lotus-bench's t01000), as
    /// [`crate::prover_id_from_actor`] derives it.
    pub prover_id: [u8; 32],
    /// The sector number. Default 1.
    pub sector_id: u64,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            seed: 0,
            prover_id: crate::prover_id_from_actor(1000),
            sector_id: 1,
        }
    }
}

/// The proof type of a synthetic output for sectors of `bytes` bytes ([`SYNTH_PROOFS`]).
pub fn proof_for_sector_size(bytes: u64) -> Result<RegisteredSealProof> {
    SYNTH_PROOFS
        .iter()
        .find(|&&(s, _)| s == bytes)
        .map(|&(_, p)| p)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{} is not a Filecoin sector size: synthetic C1 outputs are made for 2KiB, 8MiB, \
                 512MiB, 32GiB and 64GiB sectors",
                bellows_core::units::format_bytes(bytes)
            ))
        })
}

/// Makes a synthetic C1 output of `proof` (an interactive PoRep type) for `opts`: see the module
/// documentation, and what it does not prove.
pub fn synth_c1(proof: RegisteredSealProof, opts: &SynthOptions) -> Result<SealCommitPhase1Output> {
    crate::shape::no_panic("synthetic C1 output", || {
        with_sector_shape!(u64::from(proof.sector_size()), build, proof, opts)
    })
}

/// The independent random streams of one seed, one per use, so that changing how much one use
/// draws leaves the others alone.
fn stream(seed: u64, id: u64) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(id);
    rng
}

/// 32 random bytes below 2^254 (a field element's bytes, as chain randomness is used).
fn randomness(rng: &mut impl RngCore) -> [u8; 32] {
    let mut b = [0u8; 32];
    rng.fill_bytes(&mut b);
    b[31] &= 0b0011_1111;
    b
}

/// The data tree's hasher (SHA-256).
type TreeD = DefaultPieceHasher;
/// The labels' and trees' values of `T` (Poseidon's field elements).
type D<T> = <<T as MerkleTreeTrait>::Hasher as Hasher>::Domain;
/// A merkle proof in a tree of `T`'s shape (tree_c, tree_r_last).
type TreeProof<T> = MerkleProof<
    <T as MerkleTreeTrait>::Hasher,
    <T as MerkleTreeTrait>::Arity,
    <T as MerkleTreeTrait>::SubTreeArity,
    <T as MerkleTreeTrait>::TopTreeArity,
>;

fn build<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    opts: &SynthOptions,
) -> Result<SealCommitPhase1Output> {
    let config = proof.as_v1_config();
    let pub_params = filecoin_proofs::parameters::public_params::<Tree>(&config)
        .map_err(|e| proofs_error("PoRep public parameters", e))?;
    if !matches!(pub_params.challenges, Challenges::Interactive(_)) {
        return Err(Error::invalid(format!(
            "{proof:?} derives its challenges from comm_r (synthetic or non-interactive PoRep): \
             synthetic C1 outputs are made for interactive PoRep (…V1, …V1_1)"
        )));
    }
    let nodes = u64::from(proof.sector_size()) / 32;
    let layers = pub_params.num_layers;

    let mut rng = stream(opts.seed, 1);
    let ticket = randomness(&mut rng);
    let seed = randomness(&mut rng);

    // comm_d over a repeated block of random Fr32 data, then the replica id from it.
    let mut rng = stream(opts.seed, 2);
    let block = (0..nodes.min(DATA_BLOCK_NODES))
        .map(|_| <TreeD as Hasher>::Domain::from(randomness(&mut rng)))
        .collect();
    let tree_d = PeriodicTree::<TreeD>::new(block, nodes)?;
    let comm_d = tree_d.root();
    let replica_id: D<Tree> = generate_replica_id::<Tree::Hasher, _>(
        &opts.prover_id,
        opts.sector_id,
        &ticket,
        comm_d,
        &config.porep_id,
    );

    // The challenges of every partition, then the columns they open.
    let mut pub_in = stacked::PublicInputs::<D<Tree>, <TreeD as Hasher>::Domain> {
        replica_id,
        seed: Some(seed),
        tau: None,
        k: None,
    };
    let partitions = usize::from(proof.partitions());
    let challenges: Vec<Vec<u32>> = (0..partitions)
        .map(|k| {
            pub_in
                .challenges(&pub_params.challenges, nodes as usize, Some(k))
                .into_iter()
                .map(|c| c as u32)
                .collect()
        })
        .collect();
    let challenged: BTreeSet<u32> = challenges.iter().flatten().copied().collect();
    let cols = Columns::<Tree::Hasher>::derive(
        &pub_params.graph,
        &replica_id,
        layers,
        &challenged,
        &mut stream(opts.seed, 3),
    )?;

    // tree_c over the column hashes, tree_r_last over the replica nodes (data + key).
    let levels = trees::tree_levels::<Tree>(nodes)?;
    let column = |n: u32| Column::<Tree::Hasher>::new(n, cols.labels[&n].clone());
    let mut leaves_c = BTreeMap::new();
    for &n in cols.labels.keys() {
        let col = column(n).map_err(|e| proofs_error("a column", e))?;
        leaves_c.insert(u64::from(n), col.hash().into());
    }
    let tree_c = SparseTree::<Tree::Hasher>::build(leaves_c, &levels, &mut stream(opts.seed, 4))?;
    let leaves_r = challenged
        .iter()
        .map(|&c| {
            let key: Fr = cols.labels[&c][layers - 1].into();
            let data: Fr = tree_d.leaf(c.into()).into();
            (u64::from(c), (key + data).into())
        })
        .collect();
    let tree_r = SparseTree::<Tree::Hasher>::build(leaves_r, &levels, &mut stream(opts.seed, 5))?;
    let (comm_c, comm_r_last) = (tree_c.root(), tree_r.root());
    let comm_r = <Tree::Hasher as Hasher>::Function::hash2(&comm_c, &comm_r_last);

    // The vanilla proofs, in storage-proofs-porep's structures.
    let column_proof = |n: u32| -> Result<ColumnProof<TreeProof<Tree>>> {
        let path =
            TreeProof::<Tree>::from_parts(tree_c.leaf(n.into()), comm_c, tree_c.path(n.into()));
        ColumnProof::from_column(column(n).map_err(|e| proofs_error("a column", e))?, path)
            .map_err(|e| proofs_error("a column proof", e))
    };
    let mut vanilla: Vec<Vec<RawVanillaSealProof<Tree>>> = Vec::with_capacity(partitions);
    for part in &challenges {
        let mut proofs = Vec::with_capacity(part.len());
        for &c in part {
            let parents = &cols.parents[&c];
            let labeling_proofs = (1..=layers)
                .map(|l| LabelingProof::new(l as u32, c.into(), cols.label_parents(c, l)))
                .collect();
            proofs.push(stacked::Proof {
                comm_d_proofs: MerkleProof::<TreeD, U2>::from_parts(
                    tree_d.leaf(c.into()),
                    comm_d,
                    tree_d.path(c.into()),
                ),
                comm_r_last_proof: TreeProof::<Tree>::from_parts(
                    tree_r.leaf(c.into()),
                    comm_r_last,
                    tree_r.path(c.into()),
                ),
                replica_column_proofs: ReplicaColumnProof {
                    c_x: column_proof(c)?,
                    drg_parents: parents[..BASE_PARENTS]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<_>>()?,
                    exp_parents: parents[BASE_PARENTS..]
                        .iter()
                        .map(|&p| column_proof(p))
                        .collect::<Result<_>>()?,
                },
                labeling_proofs,
                encoding_proof: EncodingProof::new(
                    layers as u32,
                    c.into(),
                    cols.label_parents(c, layers),
                ),
            });
        }
        vanilla.push(proofs);
    }

    // The same check filecoin-proofs' C1 makes of its own output.
    pub_in.tau = Some(stacked::Tau { comm_d, comm_r });
    let valid = StackedDrg::<Tree, TreeD>::verify_all_partitions(&pub_params, &pub_in, &vanilla)
        .map_err(|e| proofs_error("checking the synthetic vanilla proofs", e))?;
    if !valid {
        return Err(Error::invalid(format!(
            "the synthetic {proof:?} vanilla proofs do not verify (a bug in synth_c1)"
        )));
    }
    let replica_fr: Fr = replica_id.into();
    Ok(SealCommitPhase1Output {
        registered_proof: proof,
        vanilla_proofs: wrap::<Tree>(proof, vanilla)?,
        comm_r: commitment(&comm_r),
        comm_d: commitment(&comm_d),
        replica_id: replica_fr.into(),
        seed,
        ticket,
    })
}

fn commitment<D: Domain>(d: &D) -> [u8; 32] {
    let mut c = [0u8; 32];
    c.copy_from_slice(AsRef::<[u8]>::as_ref(d));
    c
}

/// The typed vanilla proofs as filecoin-proofs-api's enum, keyed by `proof`'s sector size (the
/// three small sizes share one tree type, so the type alone cannot pick the key).
fn wrap<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    proofs: Vec<Vec<RawVanillaSealProof<Tree>>>,
) -> Result<VanillaSealProof> {
    use filecoin_proofs::constants as c;
    fn cast<T: 'static>(b: Box<dyn Any>) -> Result<T> {
        b.downcast::<T>()
            .map(|b| *b)
            .map_err(|_| Error::invalid("synthetic vanilla proofs of another tree shape"))
    }
    let b: Box<dyn Any> = Box::new(proofs);
    Ok(match u64::from(proof.sector_size()) {
        c::SECTOR_SIZE_2_KIB => VanillaSealProof::StackedDrg2KiBV1(cast(b)?),
        c::SECTOR_SIZE_8_MIB => VanillaSealProof::StackedDrg8MiBV1(cast(b)?),
        c::SECTOR_SIZE_512_MIB => VanillaSealProof::StackedDrg512MiBV1(cast(b)?),
        c::SECTOR_SIZE_32_GIB => VanillaSealProof::StackedDrg32GiBV1(cast(b)?),
        c::SECTOR_SIZE_64_GIB => VanillaSealProof::StackedDrg64GiBV1(cast(b)?),
        s => {
            return Err(Error::invalid(format!(
                "no vanilla proof key for {s}-byte sectors"
            )))
        }
    })
}
