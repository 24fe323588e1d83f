//! What one challenge's sub-circuit reads, taken from its vanilla proof as field elements.
//!
//! storage-proofs-porep converts a vanilla proof into its circuit's private inputs
//! (`stacked::circuit::params::Proof::from`, 19.1.0): the data leaf and the comm_d path, the
//! challenge (the first labelling proof's node), the comm_r_last path, and the column proofs of
//! the challenged node and its parents (each column's rows and its path in tree C). The same is
//! read here. Most of it is public (`MerkleProofTrait::path`, `ColumnProof::get_node_at_layer`);
//! a column proof's inclusion proof and a labelling proof's node are crate-private fields, read
//! through their serde form (bincode, field by field in declaration order) into the mirror types
//! below, and checked against what the public methods say (the roots, the rows, the node's
//! comm_d path), so that a change of those types is an error here, not a wrong value.

use std::marker::PhantomData;

use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof};
use generic_array::typenum::Unsigned;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use storage_proofs_core::merkle::{MerkleProof, MerkleProofTrait};
use storage_proofs_porep::stacked::{ColumnProof, LabelingProof};

/// One level of a Merkle path: the siblings in order and the node's index among them.
pub(crate) type Level = (Vec<Fr>, usize);

/// A column of tree C: its rows (one label per layer) and its path.
pub(crate) struct Column {
    pub rows: Vec<Fr>,
    pub path: Vec<Level>,
}

/// One challenge's private inputs, as the circuit reads them.
pub(crate) struct Challenge {
    pub node: u64,
    pub data_leaf: Fr,
    pub comm_d_path: Vec<Level>,
    pub drg_parents: Vec<Column>,
    pub exp_parents: Vec<Column>,
    /// The challenged node's column: its labels, one a layer, and its path in tree C.
    pub own: Column,
    /// The replica's leaf (the encoded node) and its path in tree R.
    pub replica_leaf: Fr,
    pub comm_r_last_path: Vec<Level>,
}

/// `ColumnProof`'s serde form: `column` (`Column`: index, rows, a marker) and `inclusion_proof`.
#[derive(Deserialize)]
struct ColumnProofFields<D, P> {
    column: ColumnFields<D>,
    inclusion_proof: P,
}

#[derive(Deserialize)]
struct ColumnFields<D> {
    _index: u32,
    rows: Vec<D>,
    _marker: PhantomData<()>,
}

/// `LabelingProof`'s serde form: parents, layer index, node (its marker is skipped by serde).
#[derive(Deserialize)]
struct LabelingFields<D> {
    _parents: Vec<D>,
    _layer_index: u32,
    node: u64,
}

type TreeProof<Tree> = MerkleProof<
    <Tree as MerkleTreeTrait>::Hasher,
    <Tree as MerkleTreeTrait>::Arity,
    <Tree as MerkleTreeTrait>::SubTreeArity,
    <Tree as MerkleTreeTrait>::TopTreeArity,
>;

type TreeDomain<Tree> = <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain;

/// The levels of `proof`'s path, as field elements.
fn levels<P: MerkleProofTrait>(proof: &P) -> Vec<Level> {
    proof
        .path()
        .into_iter()
        .map(|(hashes, index)| (hashes.into_iter().map(Into::into).collect(), index))
        .collect()
}

/// A column proof's rows and path (`layers` rows).
fn column<Tree: MerkleTreeTrait>(
    proof: &ColumnProof<TreeProof<Tree>>,
    layers: usize,
) -> Result<Column, String> {
    let bytes = bincode::serialize(proof).map_err(|e| format!("a column proof: {e}"))?;
    let fields: ColumnProofFields<TreeDomain<Tree>, TreeProof<Tree>> =
        bincode::deserialize(&bytes).map_err(|e| format!("a column proof's fields: {e}"))?;
    let public_rows = (1..=layers)
        .map(|l| proof.get_node_at_layer(l).ok().copied())
        .collect::<Option<Vec<_>>>();
    if public_rows.as_deref() != Some(&fields.column.rows[..])
        || fields.inclusion_proof.root() != proof.root()
    {
        return Err("a column proof's fields are not what its methods say".into());
    }
    Ok(Column {
        rows: fields.column.rows.into_iter().map(Into::into).collect(),
        path: levels(&fields.inclusion_proof),
    })
}

/// The labelling proof's node (the circuit's challenge).
fn node<H: Hasher>(proof: &LabelingProof<H>) -> Result<u64, String>
where
    H::Domain: DeserializeOwned,
{
    let bytes = bincode::serialize(proof).map_err(|e| format!("a labelling proof: {e}"))?;
    let fields: LabelingFields<H::Domain> =
        bincode::deserialize(&bytes).map_err(|e| format!("a labelling proof's fields: {e}"))?;
    Ok(fields.node)
}

impl Challenge {
    /// Reads `proof` (of a sector with `layers` layers).
    pub(crate) fn read<Tree: MerkleTreeTrait>(
        proof: &VanillaSealProof<Tree>,
        layers: usize,
    ) -> Result<Self, String> {
        let first = proof
            .labeling_proofs
            .first()
            .ok_or("a vanilla proof without labelling proofs")?;
        let node = node(first)?;
        if node != proof.comm_d_proofs.path_index() as u64 {
            return Err("the labelling proof's node is not the data path's".into());
        }
        let cols = &proof.replica_column_proofs;
        let columns = |v: &[ColumnProof<TreeProof<Tree>>]| {
            v.iter()
                .map(|c| column::<Tree>(c, layers))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Challenge {
            node,
            data_leaf: proof.comm_d_proofs.leaf().into(),
            comm_d_path: levels(&proof.comm_d_proofs),
            drg_parents: columns(&cols.drg_parents)?,
            exp_parents: columns(&cols.exp_parents)?,
            own: column::<Tree>(&cols.c_x, layers)?,
            replica_leaf: proof.comm_r_last_proof.leaf().into(),
            comm_r_last_path: levels(&proof.comm_r_last_proof),
        })
    }
}

/// The arities of `Tree`'s base, sub and top trees (0: none).
pub(crate) fn arities<Tree: MerkleTreeTrait>() -> [usize; 3] {
    [
        Tree::Arity::to_usize(),
        Tree::SubTreeArity::to_usize(),
        Tree::TopTreeArity::to_usize(),
    ]
}
