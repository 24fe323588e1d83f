//! The values neptune's legacy Poseidon circuit allocates, computed natively.
//!
//! storage-proofs hashes its Merkle nodes (`PoseidonFunction::hash_multi_leaf_circuit`,
//! filecoin-hashers 14.1) and its columns (`hash_single_column`, storage-proofs-porep 19.1) with
//! `neptune::circuit::poseidon_hash` (neptune 11), the *legacy* circuit. Its layout is not that
//! of neptune's `circuit2` / `circuit2_witness` (the "optimal" circuit and its native witness):
//! the legacy circuit computes the first round's s-box of the domain tag as a constant, and every
//! later s-box first allocates its input (the state element, a linear combination until then),
//! so it allocates 3 values per s-box in the first round (but none for the tag), 4 in every other
//! round, and one for the result; `circuit2_witness` allocates 3 per s-box everywhere, the tag's
//! included. So this module computes the legacy layout itself, with neptune's own constants
//! (the compressed round constants, the pre-sparse and sparse matrices, which make the
//! intermediate states those of the circuit's linear combinations):
//!
//! - first full round: element i ≥ 1 allocates (x + pre_i)², its square, and
//!   (x + pre_i)⁴·(x + pre_i) + post_i; the tag's s-box is a constant;
//! - each later full round, and the first element of each partial round: x, x², x⁴, and
//!   x⁴·x + key (no key in the terminal round);
//! - after each round the state is multiplied by the round's matrix: the pre-sparse matrix after
//!   the last initial full round, the sparse matrices after the partial rounds, the MDS matrix
//!   otherwise;
//! - the result: the state's element 1, allocated.

use std::sync::OnceLock;

use blstrs::Scalar as Fr;
use ff::Field;
use filecoin_hashers::PoseidonArity;
use generic_array::typenum::{U11, U16, U2, U4, U8};

/// One arity's constants, as neptune's `PoseidonConstants` holds them (copied once).
pub(crate) struct Poseidon {
    width: usize,
    half_full_rounds: usize,
    partial_rounds: usize,
    domain_tag: Fr,
    round_constants: Vec<Fr>,
    mds: Vec<Vec<Fr>>,
    pre_sparse: Vec<Vec<Fr>>,
    /// Per partial round: the sparse matrix's first column and the rest of its first row.
    sparse: Vec<(Vec<Fr>, Vec<Fr>)>,
}

/// The constants of Poseidon over `arity` elements (filecoin-hashers' `POSEIDON_CONSTANTS_*`,
/// the ones storage-proofs' circuits use), or `None` for an arity it does not have.
pub(crate) fn for_arity(arity: usize) -> Option<&'static Poseidon> {
    static TABLES: [OnceLock<Poseidon>; 5] = [const { OnceLock::new() }; 5];
    let (slot, build): (usize, fn() -> Poseidon) = match arity {
        2 => (0, Poseidon::of::<U2>),
        4 => (1, Poseidon::of::<U4>),
        8 => (2, Poseidon::of::<U8>),
        11 => (3, Poseidon::of::<U11>),
        16 => (4, Poseidon::of::<U16>),
        _ => return None,
    };
    Some(TABLES[slot].get_or_init(build))
}

impl Poseidon {
    fn of<A: PoseidonArity>() -> Self {
        let c = A::PARAMETERS();
        Poseidon {
            width: A::to_usize() + 1,
            half_full_rounds: c.half_full_rounds,
            partial_rounds: c.partial_rounds,
            domain_tag: c.domain_tag,
            round_constants: c.compressed_round_constants.clone(),
            mds: c.mds_matrices.m.clone(),
            pre_sparse: c.pre_sparse_matrix.clone(),
            sparse: c
                .sparse_matrixes
                .iter()
                .map(|s| (s.w_hat.clone(), s.v_rest.clone()))
                .collect(),
        }
    }

    /// The number of elements hashed.
    pub(crate) fn arity(&self) -> usize {
        self.width - 1
    }

    /// Hashes `preimage` (of [`Self::arity`] elements), pushing onto `aux` what the legacy circuit
    /// allocates, in its order; returns the hash.
    pub(crate) fn hash(&self, aux: &mut Vec<Fr>, preimage: &[Fr]) -> Fr {
        assert_eq!(
            preimage.len(),
            self.arity(),
            "a preimage of the hash's arity"
        );
        let t = self.width;
        let rc = &self.round_constants;
        let mut state = Vec::with_capacity(t);
        state.push(self.domain_tag);
        state.extend_from_slice(preimage);
        let mut next = vec![Fr::ZERO; t];
        let mut round = 0;

        // First full round: keys added before and after the s-box.
        let (pre, post) = (&rc[..t], &rc[t..2 * t]);
        let mut offset = 2 * t;
        for (i, x) in state.iter_mut().enumerate() {
            let y = *x + pre[i];
            let y2 = y.square();
            let y4 = y2.square();
            *x = y4 * y + post[i];
            if i > 0 {
                aux.extend_from_slice(&[y2, y4, *x]);
            }
        }
        self.mix(&mut state, &mut next, &mut round);

        // Initial full rounds, then partial ones, then final full ones; the terminal round has
        // no key.
        let full_after = self.half_full_rounds;
        for _ in 1..self.half_full_rounds {
            let keys = &rc[offset..offset + t];
            offset += t;
            for (x, k) in state.iter_mut().zip(keys) {
                *x = s_box(aux, *x, Some(*k));
            }
            self.mix(&mut state, &mut next, &mut round);
        }
        for _ in 0..self.partial_rounds {
            let k = rc[offset];
            offset += 1;
            state[0] = s_box(aux, state[0], Some(k));
            self.mix(&mut state, &mut next, &mut round);
        }
        for r in 0..full_after {
            let last = r + 1 == full_after;
            let keys = if last {
                None
            } else {
                let k = &rc[offset..offset + t];
                offset += t;
                Some(k)
            };
            for (j, x) in state.iter_mut().enumerate() {
                *x = s_box(aux, *x, keys.map(|k| k[j]));
            }
            self.mix(&mut state, &mut next, &mut round);
        }
        aux.push(state[1]);
        state[1]
    }

    /// The linear layer after round `round` (then counted): the state times the pre-sparse
    /// matrix, a sparse one, or the MDS matrix (`PoseidonCircuit::product_mds`'s choice).
    fn mix(&self, state: &mut [Fr], next: &mut [Fr], round: &mut usize) {
        let sparse_from = self.half_full_rounds - 1;
        let r = *round;
        *round += 1;
        let dense = |m: &[Vec<Fr>], state: &mut [Fr], next: &mut [Fr]| {
            for (j, out) in next.iter_mut().enumerate() {
                *out = state.iter().zip(m).map(|(x, row)| *x * row[j]).sum();
            }
            state.copy_from_slice(next);
        };
        if r == sparse_from {
            dense(&self.pre_sparse, state, next);
        } else if r > sparse_from && r < self.half_full_rounds + self.partial_rounds {
            let (w_hat, v_rest) = &self.sparse[r - sparse_from - 1];
            let first: Fr = state.iter().zip(w_hat).map(|(x, w)| *x * w).sum();
            let s0 = state[0];
            for (x, v) in state[1..].iter_mut().zip(v_rest) {
                *x += s0 * v;
            }
            state[0] = first;
        } else {
            dense(&self.mds, state, next);
        }
    }
}

/// An s-box after the first round: allocates its input x, x², x⁴ and x⁵ (+ the key).
fn s_box(aux: &mut Vec<Fr>, x: Fr, key: Option<Fr>) -> Fr {
    let x2 = x.square();
    let x4 = x2.square();
    let mut x5 = x4 * x;
    if let Some(k) = key {
        x5 += k;
    }
    aux.extend_from_slice(&[x, x2, x4, x5]);
    x5
}

#[cfg(test)]
mod tests {
    use bellows_core::groth16::constraint_system::{Cs, Record, Value};
    use bellpepper_core::{num::AllocatedNum, ConstraintSystem, SynthesisError};
    use filecoin_hashers::poseidon::PoseidonFunction;
    use filecoin_hashers::HashFunction;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    use super::*;

    #[derive(Default)]
    struct Values(Vec<Fr>);

    impl Record for Values {
        fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
            self.0.push(value()?);
            Ok(self.0.len() - 1)
        }
        fn input(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
            Err(SynthesisError::Unsatisfiable)
        }
    }

    fn legacy<A: PoseidonArity>(preimage: &[Fr]) -> (Vec<Fr>, Fr) {
        let mut cs = Cs(Values::default());
        let nums: Vec<_> = preimage
            .iter()
            .map(|&x| AllocatedNum::alloc(&mut cs, || Ok(x)).unwrap())
            .collect();
        let h = PoseidonFunction::hash_multi_leaf_circuit::<A, _>(cs.namespace(|| "h"), &nums, 0)
            .unwrap();
        (cs.0 .0[preimage.len()..].to_vec(), h.get_value().unwrap())
    }

    fn same<A: PoseidonArity>(rng: &mut ChaCha20Rng) {
        let preimage: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut *rng)).collect();
        let (expected, h) = legacy::<A>(&preimage);
        let mut aux = Vec::new();
        let got = for_arity(A::to_usize()).unwrap().hash(&mut aux, &preimage);
        assert_eq!(got, h, "arity {}", A::to_usize());
        assert_eq!(aux.len(), expected.len(), "arity {}", A::to_usize());
        assert!(aux == expected, "arity {}: values", A::to_usize());
    }

    /// Every value equals the one neptune's legacy circuit allocates, at the arities
    /// storage-proofs uses (its Merkle nodes and columns).
    #[test]
    fn the_legacy_circuit_allocates_these_values() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        same::<U2>(&mut rng);
        same::<U4>(&mut rng);
        same::<U8>(&mut rng);
        same::<U11>(&mut rng);
        same::<U16>(&mut rng);
    }
}
