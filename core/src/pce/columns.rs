//! The transposed products of a recording, Aᵀ·x, Bᵀ·x and Cᵀ·x: what a Groth16 setup needs from
//! a circuit, u_k(τ) = Σ_j A_jk·L_j(τ) (and v, w), with x the Lagrange basis at τ.
//!
//! A recording is stored by rows, so a column's sum gathers from every row that names it. The
//! columns are cut into [`RANGES`] ranges, one rayon task each; a task walks only the row blocks
//! that reference its range (a bit mask per block, found in one pass over the entries) and adds
//! the terms that fall in it into its own slice of the output. Circuits reference variables
//! near where they were allocated, plus a few shared ones (the public inputs, a replica id's
//! bits), so a block touches two or three ranges and the entries are read about as often. The
//! setup of a circuit of 2^27 constraints thus needs the recording (bytes per non-zero) and three
//! vectors of field elements, not the column lists of a constraint assembly (tens of bytes per
//! non-zero and a heap block per variable).

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{eval::Cursor, eval::Mat, Pce, Word};
use crate::{Error, Result};

/// Column ranges (bits of a block's mask).
const RANGES: usize = 64;

impl Pce {
    /// Aᵀ·x, Bᵀ·x and Cᵀ·x: for every column k (the inputs, the constant one first, then the
    /// aux variables), Σ_j M_jk·x_j over the rows j of the recording, input constraints
    /// included. `x` holds one value per row.
    pub fn transposed_products(&self, x: &[Scalar]) -> Result<[Vec<Scalar>; 3]> {
        if x.len() != self.num_constraints() {
            return Err(Error::invalid(format!(
                "{} row values for a recording of {} constraints",
                x.len(),
                self.num_constraints()
            )));
        }
        Ok(super::with_entries!(self, E => [0, 1, 2].map(|m| transposed::<E>(self, m, x))))
    }
}

fn transposed<E: Word>(pce: &Pce, m: usize, x: &[Scalar]) -> Vec<Scalar> {
    let vars = pce.num_inputs() + pce.num_aux();
    let width = vars.div_ceil(RANGES).max(1);
    let col_bits = pce.header.col_bits;
    let col_mask = (1u64 << col_bits) - 1;
    let block_rows = pce.header.block_rows as usize;
    let blocks = pce.header.num_blocks() as usize;
    let mat = Mat::<E>::new(pce, m);
    let rows_of = |k: usize| block_rows.min(x.len() - k * block_rows);
    // Which ranges each block references.
    let masks: Vec<u64> = (0..blocks)
        .into_par_iter()
        .map(|k| {
            let mut cur = Cursor::at(&mat, k);
            let mut mask = 0u64;
            for _ in 0..rows_of(k) {
                for &e in cur.next_row() {
                    let col = (e.widen() & col_mask) as usize;
                    mask |= 1 << (col / width);
                }
            }
            mask
        })
        .collect();
    let mut out = vec![Scalar::ZERO; vars];
    out.par_chunks_mut(width)
        .enumerate()
        .for_each(|(r, slice)| {
            let lo = r * width;
            for (k, _) in masks.iter().enumerate().filter(|(_, m)| *m >> r & 1 == 1) {
                let mut cur = Cursor::at(&mat, k);
                for xj in &x[k * block_rows..k * block_rows + rows_of(k)] {
                    for &e in cur.next_row() {
                        let e = e.widen();
                        let col = (e & col_mask) as usize;
                        let Some(acc) = col.checked_sub(lo).and_then(|i| slice.get_mut(i)) else {
                            continue;
                        };
                        match e >> col_bits {
                            0 => *acc += xj,
                            1 => *acc -= xj,
                            id => *acc += *xj * pce.coeffs[id as usize],
                        }
                    }
                }
            }
        });
    out
}

#[cfg(test)]
mod tests {
    use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
    use ff::Field;

    use super::*;
    use crate::groth16::constraints::ConstraintMatrices;

    /// Variables referenced far from where they were made, coefficients of every kind.
    struct Mixed(usize);

    impl Circuit<Scalar> for Mixed {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            let shared = cs.alloc_input(|| "x", || Ok(Scalar::from(3)))?;
            let mut prev = cs.alloc(|| "v0", || Ok(Scalar::from(3)))?;
            for i in 0..self.0 {
                let v = cs.alloc(|| "v", || Ok(Scalar::from(3)))?;
                let c = Scalar::from(i as u64 + 2);
                cs.enforce(
                    || "c",
                    |lc| lc + (c, prev) + shared - v,
                    |lc| lc + CS::one(),
                    |lc| lc + (c, prev) + (Scalar::from(7), v) - (Scalar::from(7), v) + shared - v,
                );
                prev = v;
            }
            Ok(())
        }
    }

    #[test]
    fn transposed_products_are_the_column_sums() {
        let n = 9000; // more than one row block
        let pce = Pce::record(Mixed(n), "mixed").unwrap();
        let m = ConstraintMatrices::of(Mixed(n)).unwrap();
        let x: Vec<Scalar> = (0..pce.num_constraints())
            .map(|j| Scalar::from(j as u64 * 31 + 5).square())
            .collect();
        let [u, v, w] = pce.transposed_products(&x).unwrap();
        let col = |c: &[(Scalar, usize)]| -> Scalar { c.iter().map(|(k, j)| *k * x[*j]).sum() };
        let expect = |ins: &[Vec<(Scalar, usize)>], aux: &[Vec<(Scalar, usize)>]| -> Vec<Scalar> {
            ins.iter().chain(aux).map(|c| col(c)).collect()
        };
        assert_eq!(u, expect(&m.at_inputs, &m.at_aux));
        assert_eq!(v, expect(&m.bt_inputs, &m.bt_aux));
        assert_eq!(w, expect(&m.ct_inputs, &m.ct_aux));
        assert!(pce.transposed_products(&x[1..]).is_err());
    }
}
