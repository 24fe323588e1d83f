//! Multiplying a vector by a constant (the `1/n` of inverse transforms where it cannot be folded
//! into a four-step twiddle pass). Coset powers never need a pass of their own: they are folded
//! into the twiddles (see [`super::twiddle::Plan::coset`]).

use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

/// Elements per rayon task.
const CHUNK: usize = 1 << 12;

/// Multiplies every element of `x` by `s`.
pub(crate) fn scale(x: &mut [Scalar], s: Scalar) {
    if s != Scalar::ONE {
        x.par_chunks_mut(CHUNK)
            .for_each(|c| c.iter_mut().for_each(|v| crate::field::mul_assign(v, &s)));
    }
}
