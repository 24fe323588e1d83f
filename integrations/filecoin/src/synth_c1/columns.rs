//! The columns of a synthetic C1 output: every layer's label of each challenged node and of each
//! of its parents.
//!
//! A challenged node's labels follow the stacked-DRG labelling (SDR: Fisch, "Tight Proofs of
//! Space and Replication", EUROCRYPT 2019; Filecoin's spec, "Stacked DRG"): the label of node v
//! in layer l is SHA-256 over the replica id, l, v and the labels of v's parents — its base
//! (DRG) parents in layer l and, from layer 2 on, its expander parents in layer l − 1 — taken in
//! order and repeated to 37 values, with the top two bits cleared so that it is a field element.
//! The parents are the real graph's, from storage-proofs-porep's `StackedBucketGraph` for the
//! proof type (computed on demand; no parent cache file). Nodes that are only parents get
//! random labels: the proofs never show how they were made.
//!
//! Every label computed here is checked by storage-proofs-porep's own `LabelingProof::verify`
//! (its hash is not public), so the rule is the library's, not a copy that could drift.

use std::collections::{BTreeMap, BTreeSet};

use bellows_core::{Error, Result};
use filecoin_hashers::{Domain, Hasher};
use rand_core::RngCore;
use sha2::{Digest, Sha256};
use storage_proofs_core::drgraph::Graph;
use storage_proofs_porep::stacked::{LabelingProof, StackedBucketGraph, TOTAL_PARENTS};

/// The base (DRG) parents of a node: the first six of its parents.
pub(super) const BASE_PARENTS: usize = storage_proofs_core::drgraph::BASE_DEGREE;

/// Each node's parents: base parents, then expander parents, as the graph lists them.
pub(super) type Parents = Vec<u32>;

/// The labels of the nodes the proofs open.
pub(super) struct Columns<H: Hasher> {
    /// Node → its labels, layer 1 first.
    pub labels: BTreeMap<u32, Vec<H::Domain>>,
    /// Challenged node → its parents.
    pub parents: BTreeMap<u32, Parents>,
}

impl<H: Hasher> Columns<H> {
    /// Derives the columns of `challenges` (and random ones for their parents) over `layers`
    /// layers of `graph`, for `replica_id`; random labels come from `rng` in node order.
    pub(super) fn derive(
        graph: &StackedBucketGraph<H>,
        replica_id: &H::Domain,
        layers: usize,
        challenges: &BTreeSet<u32>,
        rng: &mut impl RngCore,
    ) -> Result<Self> {
        let mut parents = BTreeMap::new();
        for &c in challenges {
            let mut p = vec![0u32; graph.degree()];
            graph
                .parents(c as usize, &mut p)
                .map_err(|e| crate::shape::proofs_error(&format!("parents of node {c}"), e))?;
            parents.insert(c, p);
        }
        let only_parents: BTreeSet<u32> = parents
            .values()
            .flatten()
            .copied()
            .filter(|p| !challenges.contains(p))
            .collect();
        let mut labels: BTreeMap<u32, Vec<H::Domain>> = only_parents
            .into_iter()
            .map(|p| (p, (0..layers).map(|_| H::Domain::random(rng)).collect()))
            .collect();
        for &c in challenges {
            labels.insert(c, vec![H::Domain::default(); layers]);
        }
        let mut cols = Columns { labels, parents };
        // Layer by layer, nodes in increasing order: a base parent is a lower node of the same
        // layer and an expander parent a node of the layer below, so each is there in time.
        for layer in 1..=layers {
            for &c in challenges {
                let ps = cols.label_parents(c, layer);
                let label = label::<H>(replica_id, layer, c, &ps);
                if !LabelingProof::<H>::new(layer as u32, c.into(), ps).verify(replica_id, &label) {
                    return Err(Error::invalid(format!(
                        "the label of node {c} in layer {layer} is not the one \
                         storage-proofs-porep computes"
                    )));
                }
                cols.labels.get_mut(&c).expect("a challenge's column")[layer - 1] = label;
            }
        }
        Ok(cols)
    }

    /// The labels the labelling of challenged node `c` in `layer` (from 1) hashes: its base
    /// parents' labels in `layer`, then (above layer 1) its expander parents' in `layer − 1`,
    /// repeated in order to 37 values, as storage-proofs-porep's labelling proofs list them.
    pub(super) fn label_parents(&self, c: u32, layer: usize) -> Vec<H::Domain> {
        let parents = &self.parents[&c];
        let row = |p: &u32, l: usize| self.labels[p][l - 1];
        let base = parents[..BASE_PARENTS].iter().map(|p| row(p, layer));
        let once: Vec<H::Domain> = if layer == 1 {
            base.collect()
        } else {
            base.chain(parents[BASE_PARENTS..].iter().map(|p| row(p, layer - 1)))
                .collect()
        };
        once.iter().copied().cycle().take(TOTAL_PARENTS).collect()
    }
}

/// The label of `node` in `layer` from its parents' labels `parents` (module documentation).
fn label<H: Hasher>(
    replica_id: &H::Domain,
    layer: usize,
    node: u32,
    parents: &[H::Domain],
) -> H::Domain {
    let mut head = [0u8; 64];
    head[..32].copy_from_slice(AsRef::<[u8]>::as_ref(replica_id));
    head[32..36].copy_from_slice(&(layer as u32).to_be_bytes());
    head[36..44].copy_from_slice(&u64::from(node).to_be_bytes());
    let mut h = Sha256::new();
    h.update(head);
    for p in parents {
        h.update(AsRef::<[u8]>::as_ref(p));
    }
    let mut out: [u8; 32] = h.finalize().into();
    out[31] &= 0b0011_1111;
    H::Domain::from(out)
}
