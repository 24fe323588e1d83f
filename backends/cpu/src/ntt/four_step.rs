//! The four-step transform for large sizes (Bailey, "FFTs in external or hierarchical memory",
//! J. Supercomputing 1990), in place, with the orderings of the radix-2 kernels.
//!
//! View `x` (n = R·C elements) as R rows of C columns, row-major; `x[r·C + c]`.
//!
//! [`dif`] (natural → bit-reversed):
//! 1. every column: a size-R DIF (so row `rr` of column c holds the column DFT at `bitrev(rr)`);
//! 2. multiply `(rr, c)` by `ω_n^(c·bitrev_R(rr))` (and an optional constant);
//! 3. every row: a size-C DIF.
//!
//! With `i = c + C·r` and `k = k1 + R·k2`, `ω_n^(ik) = ω_n^(c·k1)·ω_C^(c·k2)·ω_R^(r·k1)`, so this is
//! the DFT; the result of `k` lands at `bitrev_C(k2) + C·bitrev_R(k1) = bitrev_n(k)`, i.e. the
//! whole output is bit-reversed exactly as for a radix-2 DIF.
//!
//! [`dit`] (bit-reversed → natural) is the transpose of that: rows (DIT), the same diagonal,
//! columns (DIT).
//!
//! The split is balanced (log R = ⌊log n / 2⌋), so for n ≤ 2^32 every sub-transform has at most
//! 2^16 elements and runs in the L2 cache. Columns are
//! gathered a few at a time into a contiguous buffer, so no pass walks memory with a large
//! power-of-two stride (which would thrash the cache's sets). Rows and column groups are
//! independent rayon tasks.

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::field;

use super::{
    radix2::{self, Plain, Shifted},
    twiddle::{Dir, Plan},
};

/// A raw pointer that rayon tasks may share; every user writes a disjoint set of elements.
#[derive(Clone, Copy)]
struct SharedMut(*mut Scalar);
// SAFETY: only used to give column-group tasks access to disjoint columns of one exclusively
// borrowed slice; no two tasks touch the same element.
unsafe impl Send for SharedMut {}
// SAFETY: as above.
unsafe impl Sync for SharedMut {}

impl SharedMut {
    /// The pointer (a method, so closures capture the whole `Sync` wrapper, not its field).
    fn ptr(self) -> *mut Scalar {
        self.0
    }
}

/// Buffer budget for one column group (elements): 512 KiB, half the L2 cache.
const GROUP_ELEMS: usize = 1 << 14;

fn group_width(rows: usize, cols: usize) -> usize {
    (GROUP_ELEMS / rows).clamp(4, 16).min(cols)
}

/// Runs `f` on every column (length R, natural row order) of the R×C matrix `x`.
fn for_each_column(x: &mut [Scalar], lr: u32, lc: u32, f: impl Fn(&mut [Scalar]) + Sync) {
    let (rows, cols) = (1usize << lr, 1usize << lc);
    debug_assert_eq!(x.len(), rows * cols);
    let g = group_width(rows, cols);
    let base = SharedMut(x.as_mut_ptr());
    (0..cols / g).into_par_iter().for_each_init(
        || vec![Scalar::ZERO; g * rows],
        |buf, grp| {
            let c0 = grp * g;
            for r in 0..rows {
                // SAFETY: r·C + c0 + g ≤ R·C = x.len(); columns c0..c0+g belong to this task
                // alone, and `x` is exclusively borrowed for the whole call.
                let src = unsafe { std::slice::from_raw_parts(base.ptr().add(r * cols + c0), g) };
                for (k, v) in src.iter().enumerate() {
                    buf[k * rows + r] = *v;
                }
            }
            for col in buf.chunks_exact_mut(rows) {
                f(col);
            }
            for r in 0..rows {
                // SAFETY: as for the gather above.
                let dst =
                    unsafe { std::slice::from_raw_parts_mut(base.ptr().add(r * cols + c0), g) };
                for (k, v) in dst.iter_mut().enumerate() {
                    *v = buf[k * rows + r];
                }
            }
        },
    );
}

/// Multiplies `row[c]` by `scale·t^c`.
fn twiddle_row(row: &mut [Scalar], t: Scalar, scale: Option<Scalar>) {
    if t == Scalar::ONE {
        if let Some(s) = scale {
            row.iter_mut().for_each(|v| field::mul_assign(v, &s));
        }
        return;
    }
    let mut w = scale.unwrap_or(Scalar::ONE);
    for v in row.iter_mut() {
        field::mul_assign(v, &w);
        field::mul_assign(&mut w, &t);
    }
}

/// The constant of row `rr` in the twiddle pass: `scale` times, with a coset, the row's part of
/// the coset power.
fn row_constant(
    plan: &Plan,
    dir: Dir,
    rr: usize,
    scale: Option<Scalar>,
    coset: bool,
) -> Option<Scalar> {
    let c = coset.then(|| plan.coset(dir).rows[rr]);
    match (scale, c) {
        (Some(s), Some(c)) => Some(s * c),
        (s, c) => s.or(c),
    }
}

/// Four-step DIF (natural → bit-reversed) of one vector of `2^plan.log_n` elements, every
/// element also multiplied by `scale` when given, and output k by `g^(−k)` when `coset` (for
/// `dir = Inv`; see [`Plan::coset`]).
pub(crate) fn dif(x: &mut [Scalar], plan: &Plan, dir: Dir, scale: Option<Scalar>, coset: bool) {
    let (lr, lc) = plan.split.expect("four-step plan");
    let cols = 1usize << lc;
    for_each_column(x, lr, lc, |col| radix2::dif(col, &Plain(dir)));
    let bases = &plan.row_bases[dir as usize];
    let shifted = coset.then(|| Shifted(&plan.coset(dir).stages));
    x.par_chunks_mut(cols).enumerate().for_each(|(rr, row)| {
        twiddle_row(row, bases[rr], row_constant(plan, dir, rr, scale, coset));
        match &shifted {
            Some(s) => radix2::dif(row, s),
            None => radix2::dif(row, &Plain(dir)),
        }
    });
}

/// Four-step DIT (bit-reversed → natural), with the input element of natural index i multiplied
/// by `g^i` when `coset` (for `dir = Fwd`); see [`dif`].
pub(crate) fn dit(x: &mut [Scalar], plan: &Plan, dir: Dir, scale: Option<Scalar>, coset: bool) {
    let (lr, lc) = plan.split.expect("four-step plan");
    let cols = 1usize << lc;
    let bases = &plan.row_bases[dir as usize];
    let shifted = coset.then(|| Shifted(&plan.coset(dir).stages));
    x.par_chunks_mut(cols).enumerate().for_each(|(rr, row)| {
        match &shifted {
            Some(s) => radix2::dit(row, s),
            None => radix2::dit(row, &Plain(dir)),
        }
        twiddle_row(row, bases[rr], row_constant(plan, dir, rr, scale, coset));
    });
    for_each_column(x, lr, lc, |col| radix2::dit(col, &Plain(dir)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    fn random(n: usize, seed: u64) -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| Scalar::random(&mut rng)).collect()
    }

    /// The four-step passes equal the radix-2 kernels (checked against a naive DFT elsewhere)
    /// for every split of small sizes, both directions, with and without a folded scale.
    #[test]
    fn equals_radix2_for_every_split() {
        let s = Scalar::from(12345u64);
        for log_n in 2..=11u32 {
            for lr in 1..log_n {
                let plan = Plan::with_split(log_n, Some((lr, log_n - lr)));
                for dir in [Dir::Fwd, Dir::Inv] {
                    let x = random(1 << log_n, u64::from(log_n * 100 + lr));
                    let mut want = x.clone();
                    radix2::dif(&mut want, &Plain(dir));
                    let mut got = x.clone();
                    dif(&mut got, &plan, dir, None, false);
                    assert_eq!(got, want, "dif log_n={log_n} lr={lr} {dir:?}");
                    let mut got = x.clone();
                    dif(&mut got, &plan, dir, Some(s), false);
                    let scaled: Vec<Scalar> = want.iter().map(|v| *v * s).collect();
                    assert_eq!(got, scaled, "scaled dif log_n={log_n} lr={lr} {dir:?}");

                    let mut want = x.clone();
                    radix2::dit(&mut want, &Plain(dir));
                    let mut got = x.clone();
                    dit(&mut got, &plan, dir, Some(s), false);
                    let scaled: Vec<Scalar> = want.iter().map(|v| *v * s).collect();
                    assert_eq!(got, scaled, "dit log_n={log_n} lr={lr} {dir:?}");
                }
            }
        }
    }
}
