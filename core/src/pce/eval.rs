//! The three sparse products, in parallel by row blocks, with the satisfaction check in the same
//! pass.
//!
//! Each rayon task takes one block of rows (the block index gives where its entries and row
//! lengths start in each matrix), computes ⟨A_j,w⟩, ⟨B_j,w⟩, ⟨C_j,w⟩ for its rows, writes them
//! into its chunk of the output buffers, and compares A·B with C; the first unsatisfied row of
//! the whole system is the minimum over the blocks. Coefficient ids 0 and 1 (1 and −1, most
//! terms) cost an addition or a subtraction, other coefficients a multiplication.

use std::mem::MaybeUninit;

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::{format, Pce, Word};

/// One matrix's slices, shared by every block.
struct Mat<'a, E> {
    entries: &'a [E],
    lens: &'a [u8],
    blocks: &'a [u64],
}

impl<'a, E: Word> Mat<'a, E> {
    fn new(pce: &'a Pce, m: usize) -> Self {
        let (lens, blocks) = pce.lens_and_blocks(m);
        Self {
            entries: pce.entries::<E>(m),
            lens,
            blocks,
        }
    }
}

/// A cursor over one matrix inside one block.
struct Cursor<'a, E> {
    entries: &'a [E],
    lens: &'a [u8],
    pos: usize,
}

impl<'a, E: Word> Cursor<'a, E> {
    fn at(m: &Mat<'a, E>, block: usize) -> Self {
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
    fn next_row(&mut self) -> &'a [E] {
        let len = format::read_varint(self.lens, &mut self.pos).unwrap_or(0) as usize;
        let (row, rest) = self.entries.split_at(len.min(self.entries.len()));
        self.entries = rest;
        row
    }
}

struct Ctx<'a> {
    inputs: &'a [Scalar],
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
        let n_in = self.inputs.len();
        let v = if col < n_in {
            &self.inputs[col]
        } else {
            &self.aux[col - n_in]
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
            id => *v * self.coeffs[id as usize],
        };
        for &e in rest {
            let (v, id) = self.value(e);
            match id {
                0 => acc += v,
                1 => acc -= v,
                id => acc += *v * self.coeffs[id as usize],
            }
        }
        acc
    }
}

/// Evaluates every row into `a`, `b`, `c` (each `num_constraints` long); returns the first
/// unsatisfied row, if any. Every element is written either way.
pub(super) fn evaluate(
    pce: &Pce,
    inputs: &[Scalar],
    aux: &[Scalar],
    a: &mut [MaybeUninit<Scalar>],
    b: &mut [MaybeUninit<Scalar>],
    c: &mut [MaybeUninit<Scalar>],
) -> Option<usize> {
    if pce.entry_bytes() == 4 {
        evaluate_typed::<u32>(pce, inputs, aux, a, b, c)
    } else {
        evaluate_typed::<u64>(pce, inputs, aux, a, b, c)
    }
}

fn evaluate_typed<E: Word>(
    pce: &Pce,
    inputs: &[Scalar],
    aux: &[Scalar],
    a: &mut [MaybeUninit<Scalar>],
    b: &mut [MaybeUninit<Scalar>],
    c: &mut [MaybeUninit<Scalar>],
) -> Option<usize> {
    let col_bits = pce.header.col_bits;
    let ctx = Ctx {
        inputs,
        aux,
        coeffs: &pce.coeffs,
        col_bits,
        col_mask: (1u64 << col_bits) - 1,
    };
    let mats = [0, 1, 2].map(|m| Mat::<E>::new(pce, m));
    let block_rows = pce.header.block_rows as usize;
    a.par_chunks_mut(block_rows)
        .zip(b.par_chunks_mut(block_rows))
        .zip(c.par_chunks_mut(block_rows))
        .enumerate()
        .filter_map(|(k, ((a, b), c))| {
            let [mut ca, mut cb, mut cc] = [0, 1, 2].map(|m| Cursor::at(&mats[m], k));
            let mut bad = None;
            for (r, ((a, b), c)) in a.iter_mut().zip(b.iter_mut()).zip(c.iter_mut()).enumerate() {
                let va = ctx.dot(ca.next_row());
                let vb = ctx.dot(cb.next_row());
                let vc = ctx.dot(cc.next_row());
                if bad.is_none() && va * vb != vc {
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
