//! Diagonal passes: multiplying a vector by a constant, or by the coset powers `g^(±i)` (times a
//! constant) in natural or bit-reversed order.
//!
//! Coset powers come from two-level tables (see [`super::twiddle::CosetTables`]): per row of
//! `2^k` positions one power for the row, then one multiplication per element with the row's
//! small table — two multiplications per element, no table of size n.

use bellows_core::backend::Ordering;
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::twiddle::{bitrev, Dir, Plan};

/// A diagonal to multiply a vector by.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Diag {
    /// Every element times the constant.
    Scale(Scalar),
    /// The element of index i (stored at `i` or `bitrev(i)` according to `order`) times
    /// `scale·g^i` (`dir = Fwd`) or `scale·g^(−i)` (`dir = Inv`).
    Coset {
        /// `g` or `g⁻¹`.
        dir: Dir,
        /// Constant factor.
        scale: Scalar,
        /// Storage order of the vector.
        order: Ordering,
    },
}

/// Chunk of elements per rayon task for a constant scale.
const SCALE_CHUNK: usize = 1 << 12;

/// Multiplies the vector `x` (`2^plan.log_n` elements) by `d`.
pub(crate) fn apply(x: &mut [Scalar], plan: &Plan, d: Diag) {
    match d {
        Diag::Scale(s) => {
            if s != Scalar::ONE {
                x.par_chunks_mut(SCALE_CHUNK)
                    .for_each(|c| c.iter_mut().for_each(|v| *v *= s));
            }
        }
        Diag::Coset { dir, scale, order } => {
            let t = plan.coset();
            let k = t.row_log;
            let high_bits = plan.log_n - k;
            let g = t.g[dir as usize];
            let (lo, row_exp): (&[Scalar], Box<dyn Fn(usize) -> u64 + Sync>) = match order {
                Ordering::Natural => (
                    &t.lo_nat[dir as usize],
                    Box::new(move |hi| (hi as u64) << k),
                ),
                Ordering::BitReversed => (
                    &t.lo_rev[dir as usize],
                    Box::new(move |hi| bitrev(hi, high_bits) as u64),
                ),
            };
            x.par_chunks_mut(1 << k).enumerate().for_each(|(hi, row)| {
                let f = scale * g.pow_vartime([row_exp(hi)]);
                for (v, l) in row.iter_mut().zip(lo) {
                    *v *= f * l;
                }
            });
        }
    }
}
