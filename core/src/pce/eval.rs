//! The three sparse products, in parallel by row blocks, with the satisfaction check in the same
//! pass.
//!
//! Each rayon task takes one block of rows (the block index gives where its entries and row
//! lengths start in each matrix), computes ⟨A_j,w⟩, ⟨B_j,w⟩, ⟨C_j,w⟩ for its rows, writes them
//! into its chunk of the output buffers, and compares A·B with C; the first unsatisfied row of
//! the whole system is the minimum over the blocks. Coefficient ids 0 and 1 (1 and −1, most
//! terms) cost an addition or a subtraction, other coefficients a multiplication unless the
//! value is 0 or 1: most of those terms are bits packed into words (SHA-256's, with powers of
//! two), and most rows' check has a bit on one side (boolean constraints, bit selections), so
//! both are decided by comparisons. Branching on witness values is what the MSMs' 0-and-1 path
//! does too: the prover's timing is not meant to hide its witness.

use std::mem::MaybeUninit;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{format, Pce, Word};

/// One matrix's slices, shared by every block.
pub(super) struct Mat<'a, E> {
    entries: &'a [E],
    lens: &'a [u8],
    blocks: &'a [u64],
}

impl<'a, E: Word> Mat<'a, E> {
    pub(super) fn new(pce: &'a Pce, m: usize) -> Self {
        let (lens, blocks) = pce.lens_and_blocks(m);
        Self {
            entries: pce.entries::<E>(m),
            lens,
            blocks,
        }
    }
}

/// A cursor over one matrix inside one block.
pub(super) struct Cursor<'a, E> {
    entries: &'a [E],
    lens: &'a [u8],
    pos: usize,
}

impl<'a, E: Word> Cursor<'a, E> {
    pub(super) fn at(m: &Mat<'a, E>, block: usize) -> Self {
        let (e0, e1) = (
            m.blocks[2 * block] as usize,
            m.blocks[2 * block + 2] as usize,
        );
        let (l0, l1) = (
            m.blocks[2 * block + 1] as usize,
            m.blocks[2 * block + 3] as usize,
        );
        Self {
            entries: &m.entries[e0..e1],
            lens: &m.lens[l0..l1],
            pos: 0,
        }
    }

    /// The next row's entries (lengths were validated at load).
    #[inline]
    pub(super) fn next_row(&mut self) -> &'a [E] {
        let len = format::read_varint(self.lens, &mut self.pos).unwrap_or(0) as usize;
        let (row, rest) = self.entries.split_at(len.min(self.entries.len()));
        self.entries = rest;
        row
    }
}

struct Ctx<'a> {
    /// The input assignment (a published prefix of it while the witness still runs).
    inputs: &'a [Scalar],
    /// Columns below this are inputs: the recording's input count.
    n_in: usize,
    aux: &'a [Scalar],
    coeffs: &'a [Scalar],
    col_bits: u32,
    col_mask: u64,
}

impl Ctx<'_> {
    #[inline(always)]
    fn value<E: Word>(&self, e: E) -> (&Scalar, u64) {
        let e: u64 = e.into();
        let col = (e & self.col_mask) as usize;
        let v = if col < self.n_in {
            &self.inputs[col]
        } else {
            &self.aux[col - self.n_in]
        };
        (v, e >> self.col_bits)
    }

    /// ⟨row, w⟩: the first term initialises the sum (most rows have one or two terms).
    #[inline(always)]
    fn dot<E: Word>(&self, row: &[E]) -> Scalar {
        let Some((&first, rest)) = row.split_first() else {
            return Scalar::ZERO;
        };
        let (v, id) = self.value(first);
        let mut acc = match id {
            0 => *v,
            1 => -v,
            id => times(v, &self.coeffs[id as usize]),
        };
        for &e in rest {
            let (v, id) = self.value(e);
            match id {
                0 => acc += v,
                1 => acc -= v,
                id => acc += times(v, &self.coeffs[id as usize]),
            }
        }
        acc
    }
}

/// v·c, without a multiplication when v is 0 or 1 (field elements are kept reduced, so the
/// comparisons are exact).
#[inline(always)]
fn times(v: &Scalar, c: &Scalar) -> Scalar {
    if *v == Scalar::ZERO {
        Scalar::ZERO
    } else if *v == Scalar::ONE {
        *c
    } else {
        *v * c
    }
}

/// Whether a·b = c, without a multiplication when a or b is 0 or 1.
#[inline(always)]
fn holds(a: &Scalar, b: &Scalar, c: &Scalar) -> bool {
    if *a == Scalar::ZERO || *b == Scalar::ZERO {
        *c == Scalar::ZERO
    } else if *a == Scalar::ONE {
        b == c
    } else if *b == Scalar::ONE {
        a == c
    } else {
        *a * b == *c
    }
}

/// Evaluates the rows of the blocks starting at block `first_block` into `a`, `b`, `c` (each as
/// long as those rows: whole blocks, the last block of the system possibly short); returns the
/// first unsatisfied row (an index into the whole system), if any. Every element is written either
/// way. `inputs` and `aux` may be prefixes of the assignments (as the witness runs): every
/// column the blocks reference must lie inside them.
pub(super) fn evaluate_blocks(
    pce: &Pce,
    inputs: &[Scalar],
    aux: &[Scalar],
    first_block: usize,
    a: &mut [MaybeUninit<Scalar>],
    b: &mut [MaybeUninit<Scalar>],
    c: &mut [MaybeUninit<Scalar>],
) -> Option<usize> {
    let col_bits = pce.header.col_bits;
    let ctx = Ctx {
        inputs,
        n_in: pce.num_inputs(),
        aux,
        coeffs: &pce.coeffs,
        col_bits,
        col_mask: (1u64 << col_bits) - 1,
    };
    super::with_entries!(pce, E => ctx.evaluate::<E>(pce, first_block, [a, b, c]))
}

impl Ctx<'_> {
    /// [`evaluate_blocks`] over a recording whose entries are `E`s.
    fn evaluate<E: Word>(
        &self,
        pce: &Pce,
        first_block: usize,
        [a, b, c]: [&mut [MaybeUninit<Scalar>]; 3],
    ) -> Option<usize> {
        let mats = [0, 1, 2].map(|m| Mat::<E>::new(pce, m));
        let block_rows = pce.header.block_rows as usize;
        a.par_chunks_mut(block_rows)
            .zip(b.par_chunks_mut(block_rows))
            .zip(c.par_chunks_mut(block_rows))
            .enumerate()
            .filter_map(|(i, ((a, b), c))| {
                let k = first_block + i;
                let [mut ca, mut cb, mut cc] = [0, 1, 2].map(|m| Cursor::at(&mats[m], k));
                let mut bad = None;
                for (r, ((a, b), c)) in a.iter_mut().zip(b.iter_mut()).zip(c.iter_mut()).enumerate()
                {
                    let va = self.dot(ca.next_row());
                    let vb = self.dot(cb.next_row());
                    let vc = self.dot(cc.next_row());
                    if bad.is_none() && !holds(&va, &vb, &vc) {
                        bad = Some(k * block_rows + r);
                    }
                    a.write(va);
                    b.write(vb);
                    c.write(vc);
                }
                bad
            })
            .min()
    }
}

/// What the rows of one block reference: every input column below `inputs` and every aux
/// variable below `aux` (one past the largest of each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Need {
    pub inputs: usize,
    pub aux: usize,
}

/// For each block k, the largest [`Need`] of blocks 0..=k (a running maximum, so that "blocks
/// 0..p are ready" is a prefix test): the witness has produced enough for the first p blocks once
/// it has published `needs[p − 1]`.
pub(super) fn prefix_needs(pce: &Pce) -> Vec<Need> {
    let blocks = pce.header.num_blocks() as usize;
    let n_in = pce.num_inputs() as u64;
    let col_mask = (1u64 << pce.header.col_bits) - 1;
    let per_block = |k: usize| -> Need {
        let mut need = Need::default();
        let mut see = |e: u64| {
            let col = e & col_mask;
            if col < n_in {
                need.inputs = need.inputs.max(col as usize + 1);
            } else {
                need.aux = need.aux.max((col - n_in) as usize + 1);
            }
        };
        for m in 0..3 {
            let (_, idx) = pce.lens_and_blocks(m);
            let (e0, e1) = (idx[2 * k] as usize, idx[2 * k + 2] as usize);
            super::with_entries!(pce, E => pce.entries::<E>(m)[e0..e1]
                .iter()
                .for_each(|&e| see(super::Word::widen(e))))
        }
        need
    };
    let mut needs: Vec<Need> = (0..blocks).into_par_iter().map(per_block).collect();
    let mut run = Need::default();
    for n in &mut needs {
        run.inputs = run.inputs.max(n.inputs);
        run.aux = run.aux.max(n.aux);
        *n = run;
    }
    needs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortcuts_agree_with_the_field() {
        let any = || Scalar::random(&mut rand_core::OsRng);
        let vals = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(2u64),
            any(),
            any(),
        ];
        let c = any();
        for v in &vals {
            assert_eq!(times(v, &c), *v * c);
            for w in &vals {
                let p = *v * w;
                assert!(holds(v, w, &p));
                // Any other c is refused, whichever shortcut decides.
                for other in [p + Scalar::ONE, Scalar::ZERO, Scalar::ONE, *v, *w] {
                    if other != p {
                        assert!(!holds(v, w, &other), "{v:?}·{w:?} = {other:?} accepted");
                    }
                }
            }
        }
    }
}
