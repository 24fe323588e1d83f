//! The merkle trees of a synthetic C1 output, built only where its proofs look.
//!
//! - [`SparseTree`] (tree_c, tree_r_last): the leaves the proofs open are given; every node on
//!   their paths to the root is computed from its children exactly as storage-proofs-core's
//!   `InclusionPath::root` hashes them, and every child off those paths (an untouched subtree)
//!   is a random filler value. Memory and work grow with the number of opened leaves times the
//!   height, not with the sector.
//! - [`PeriodicTree`] (tree_d): the sector's data is one random block repeated, so that comm_d
//!   is fixed before the challenges are known (the replica id, and from it the challenges,
//!   depend on comm_d) while any leaf's path is still known: every subtree above the block is
//!   the same.

use std::collections::{BTreeMap, BTreeSet};

use bellows_core::{Error, Result};
use filecoin_hashers::{Domain, Hasher};
use generic_array::typenum::Unsigned;
use merkletree::hash::Algorithm;
use rand_core::RngCore;
use storage_proofs_core::merkle::MerkleTreeTrait;

/// One merkle path as storage-proofs-core's `MerkleProof::from_parts` takes it: per level from
/// the leaf up, the siblings in order and the position among them.
pub(super) type Path<D> = Vec<(Vec<D>, usize)>;

/// The hash of one node from its children, as `InclusionPath::root` computes it (a fresh hash
/// function, `multi_node` over the children; `height` counts from 0 within each part of a
/// compound path, and neither Filecoin hasher uses it).
fn hash_children<H: Hasher>(children: &[H::Domain], height: usize) -> H::Domain {
    let mut f = H::Function::default();
    f.reset();
    f.multi_node(children, height)
}

/// The levels of a tree of `Tree`'s shape over `leaves` leaves, from the leaves up: the arity
/// of each level and its height within its part (base tree, sub-tree level, top-tree level).
pub(super) fn tree_levels<Tree: MerkleTreeTrait>(leaves: u64) -> Result<Vec<(usize, usize)>> {
    let base = Tree::Arity::to_usize() as u64;
    let sub = Tree::SubTreeArity::to_usize() as u64;
    let top = Tree::TopTreeArity::to_usize() as u64;
    let base_leaves = leaves / sub.max(1) / top.max(1);
    let mut levels = Vec::new();
    let mut n = 1u64;
    while n < base_leaves {
        levels.push((base as usize, levels.len()));
        n *= base;
    }
    if n != base_leaves || base_leaves * sub.max(1) * top.max(1) != leaves {
        return Err(Error::invalid(format!(
            "{leaves} leaves do not fill a tree of arities {base}/{sub}/{top}"
        )));
    }
    for part in [sub, top] {
        if part > 0 {
            levels.push((part as usize, 0));
        }
    }
    Ok(levels)
}

/// A merkle tree of which only the opened leaves' paths are real (module documentation).
pub(super) struct SparseTree<H: Hasher> {
    /// Arity and in-part height of each level, from the leaves up.
    levels: Vec<(usize, usize)>,
    /// The known nodes of each level by index: `nodes[0]` the leaves (opened and filler), the
    /// last one the root alone.
    nodes: Vec<BTreeMap<u64, H::Domain>>,
}

impl<H: Hasher> SparseTree<H> {
    /// Builds the tree over `opened` (leaf index → value) with the level shape `levels`
    /// ([`tree_levels`]); fillers come from `rng`, in index order, so the tree is a function
    /// of `opened` and the generator's state.
    pub(super) fn build(
        opened: BTreeMap<u64, H::Domain>,
        levels: &[(usize, usize)],
        rng: &mut impl RngCore,
    ) -> Result<Self> {
        let leaves: u64 = levels.iter().map(|&(a, _)| a as u64).product();
        if let Some((&i, _)) = opened.range(leaves..).next() {
            return Err(Error::invalid(format!(
                "leaf {i} is outside a tree of {leaves} leaves"
            )));
        }
        let mut nodes = vec![opened];
        for &(arity, height) in levels {
            let level = nodes.last_mut().expect("the leaf level is there");
            let groups: BTreeSet<u64> = level.keys().map(|i| i / arity as u64).collect();
            let mut up = BTreeMap::new();
            for g in groups {
                let children: Vec<H::Domain> = (0..arity as u64)
                    .map(|j| {
                        *level
                            .entry(g * arity as u64 + j)
                            .or_insert_with(|| H::Domain::random(rng))
                    })
                    .collect();
                up.insert(g, hash_children::<H>(&children, height));
            }
            nodes.push(up);
        }
        Ok(SparseTree {
            levels: levels.to_vec(),
            nodes,
        })
    }

    /// The root (comm_c, comm_r_last).
    pub(super) fn root(&self) -> H::Domain {
        let top = self.nodes.last().expect("a tree has a root level");
        *top.get(&0).expect("the root is computed")
    }

    /// The value of opened leaf `i`.
    pub(super) fn leaf(&self, i: u64) -> H::Domain {
        *self.nodes[0].get(&i).expect("an opened leaf")
    }

    /// The path of opened leaf `i`.
    pub(super) fn path(&self, i: u64) -> Path<H::Domain> {
        let mut idx = i;
        self.levels
            .iter()
            .zip(&self.nodes)
            .map(|(&(arity, _), level)| {
                let a = arity as u64;
                let (group, pos) = (idx / a, idx % a);
                let siblings = (0..a)
                    .filter(|&j| j != pos)
                    .map(|j| *level.get(&(group * a + j)).expect("siblings are filled"))
                    .collect();
                idx = group;
                (siblings, pos as usize)
            })
            .collect()
    }
}

/// A binary tree over a sector whose data is one block repeated (module documentation).
pub(super) struct PeriodicTree<H: Hasher> {
    /// The block's leaves (a power of two of them).
    block: Vec<H::Domain>,
    /// The block's tree, level by level from the leaves; the last level is the block's root.
    block_levels: Vec<Vec<H::Domain>>,
    /// From the block's root up: the one value every node of that level has.
    above: Vec<H::Domain>,
}

impl<H: Hasher> PeriodicTree<H> {
    /// The tree over `leaves` leaves (a power of two) repeating `block` (a power of two that
    /// divides `leaves`).
    pub(super) fn new(block: Vec<H::Domain>, leaves: u64) -> Result<Self> {
        let b = block.len() as u64;
        if !b.is_power_of_two() || !leaves.is_power_of_two() || b > leaves {
            return Err(Error::invalid(format!(
                "a block of {b} leaves does not tile a binary tree of {leaves} leaves"
            )));
        }
        let mut block_levels = vec![block.clone()];
        while block_levels.last().expect("one level").len() > 1 {
            let h = block_levels.len() - 1;
            let up = block_levels[h]
                .chunks(2)
                .map(|pair| hash_children::<H>(pair, h))
                .collect();
            block_levels.push(up);
        }
        let mut above = vec![block_levels.last().expect("one level")[0]];
        for h in b.trailing_zeros()..leaves.trailing_zeros() {
            let v = *above.last().expect("one value");
            above.push(hash_children::<H>(&[v, v], h as usize));
        }
        Ok(PeriodicTree {
            block,
            block_levels,
            above,
        })
    }

    /// The root (comm_d).
    pub(super) fn root(&self) -> H::Domain {
        *self.above.last().expect("a root")
    }

    /// The value of leaf `i`.
    pub(super) fn leaf(&self, i: u64) -> H::Domain {
        self.block[(i % self.block.len() as u64) as usize]
    }

    /// The path of leaf `i`.
    pub(super) fn path(&self, i: u64) -> Path<H::Domain> {
        let m = self.block_levels.len() - 1;
        let in_block = (i % self.block.len() as u64) as usize;
        (0..m + self.above.len() - 1)
            .map(|h| {
                let sibling = if h < m {
                    self.block_levels[h][(in_block >> h) ^ 1]
                } else {
                    self.above[h - m]
                };
                (vec![sibling], ((i >> h) & 1) as usize)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_hashers::poseidon::PoseidonHasher;
    use filecoin_hashers::sha256::Sha256Hasher;
    use filecoin_proofs::constants::{SectorShape2KiB, SectorShape32GiB, SectorShape64GiB};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;
    use storage_proofs_core::merkle::{compound_path_length, MerkleProof, MerkleProofTrait};

    type D = <PoseidonHasher as Hasher>::Domain;

    #[test]
    fn levels_match_storage_proofs_path_lengths() {
        fn len<T: MerkleTreeTrait>(leaves: u64) -> usize {
            compound_path_length::<T::Arity, T::SubTreeArity, T::TopTreeArity>(leaves as usize)
        }
        assert_eq!(tree_levels::<SectorShape2KiB>(64).unwrap().len(), 2);
        assert_eq!(len::<SectorShape2KiB>(64), 2);
        let l32 = tree_levels::<SectorShape32GiB>(1 << 30).unwrap();
        assert_eq!(l32.len(), len::<SectorShape32GiB>(1 << 30));
        assert_eq!(l32.last(), Some(&(8, 0)));
        let l64 = tree_levels::<SectorShape64GiB>(1 << 31).unwrap();
        assert_eq!(l64.len(), len::<SectorShape64GiB>(1 << 31));
        assert_eq!(&l64[l64.len() - 2..], &[(8, 0), (2, 0)]);
        assert!(tree_levels::<SectorShape32GiB>(1 << 29).is_err());
    }

    /// Two opened leaves of a 64 GiB-shaped tree: each path proves its leaf and index under the
    /// one root (storage-proofs-core's own check), and a filler change moves the root.
    #[test]
    fn sparse_paths_verify_under_one_root() {
        let levels = tree_levels::<SectorShape64GiB>(1 << 31).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(1);
        let opened: BTreeMap<u64, D> = [
            (5u64, D::random(&mut rng)),
            ((1 << 31) - 3, D::random(&mut rng)),
        ]
        .into_iter()
        .collect();
        let tree = SparseTree::<PoseidonHasher>::build(opened.clone(), &levels, &mut rng).unwrap();
        for &i in opened.keys() {
            let p = MerkleProof::<
                PoseidonHasher,
                <SectorShape64GiB as MerkleTreeTrait>::Arity,
                <SectorShape64GiB as MerkleTreeTrait>::SubTreeArity,
                <SectorShape64GiB as MerkleTreeTrait>::TopTreeArity,
            >::from_parts(tree.leaf(i), tree.root(), tree.path(i));
            assert!(p.validate(i as usize), "leaf {i}");
            assert!(p.validate_data(opened[&i]));
        }
        let other = SparseTree::<PoseidonHasher>::build(opened, &levels, &mut rng).unwrap();
        assert_ne!(other.root(), tree.root());
    }

    #[test]
    fn periodic_tree_paths_verify() {
        let mut rng = ChaCha20Rng::seed_from_u64(2);
        let block: Vec<_> = (0..8)
            .map(|_| <Sha256Hasher as Hasher>::Domain::random(&mut rng))
            .collect();
        let tree = PeriodicTree::<Sha256Hasher>::new(block.clone(), 64).unwrap();
        for i in [0u64, 1, 9, 63] {
            let p = MerkleProof::<Sha256Hasher, generic_array::typenum::U2>::from_parts(
                tree.leaf(i),
                tree.root(),
                tree.path(i),
            );
            assert!(p.validate(i as usize), "leaf {i}");
            assert_eq!(tree.leaf(i), block[(i % 8) as usize]);
        }
        // The whole block as the sector: the same root as a dense tree over it.
        let dense = PeriodicTree::<Sha256Hasher>::new(block.clone(), 8).unwrap();
        let p = MerkleProof::<Sha256Hasher, generic_array::typenum::U2>::from_parts(
            dense.leaf(3),
            dense.root(),
            dense.path(3),
        );
        assert!(p.validate(3));
        assert!(PeriodicTree::<Sha256Hasher>::new(block, 4).is_err());
    }
}
