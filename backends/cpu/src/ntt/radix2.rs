//! Radix-2 in-place kernels for transforms of at most `2^LEAF_MAX_LOG` elements.
//!
//! - [`dif`]: Gentleman–Sande decimation in frequency (Gentleman & Sande, "Fast Fourier
//!   transforms — for fun and profit", AFIPS 1966): natural-order input, bit-reversed output.
//!   Stage of half-size h: `(u, v) → (u + v, (u − v)·t_h[j])`, from `h = n/2` down to 1.
//! - [`dit`]: Cooley–Tukey decimation in time (Cooley & Tukey, "An algorithm for the machine
//!   calculation of complex Fourier series", Math. Comp. 1965): bit-reversed input, natural-order
//!   output. Stage of half-size h: `(u, v) → (u + t_h[j]·v, u − t_h[j]·v)`, from `h = 1` up.
//!
//! The twiddles `t_h` come from a [`Stages`] source: the plain powers `ω_{2h}^j` ([`Plain`]), whose
//! first entry is 1 and costs no multiplication (nor does the whole h = 1 stage), or coset-shifted
//! ones ([`Shifted`], see [`super::twiddle::Plan::coset`]).
//!
//! Both kernels recurse on halves (depth first, so the later stages run in cache), split the top
//! stages of a large vector across rayon threads, and run blocks of `2^ITER_MAX_LOG` elements
//! iteratively.

use blstrs::Scalar;

use super::twiddle::{Dir, Levels};
use crate::field;

/// Blocks of at most this size (32 KiB, the L1 cache) run the iterative loops.
const ITER_MAX_LOG: u32 = 10;
/// Vectors at least this long split a stage, and their halves, across threads.
const PAR_MIN: usize = 1 << 12;
/// Elements per parallel task within one stage.
const PAR_CHUNK: usize = 1 << 10;

/// Where the twiddles of each stage come from.
pub(crate) trait Stages: Sync {
    /// Whether `t_h[0] = 1` for every stage (then it is not multiplied).
    const UNIT_FIRST: bool;
    /// The twiddles `t_h[j]`, `j < h`, of the stage of half-size `h`.
    fn stage(&self, h: usize) -> &[Scalar];
}

/// The powers of ω (or ω⁻¹) from the shared level tables.
pub(crate) struct Plain(pub Dir);

impl Stages for Plain {
    const UNIT_FIRST: bool = true;
    #[inline]
    fn stage(&self, h: usize) -> &[Scalar] {
        Levels::get().stage(self.0, h)
    }
}

/// Coset-shifted twiddles laid out as `[h + j]` (see [`super::twiddle::CosetStages`]).
pub(crate) struct Shifted<'a>(pub &'a [Scalar]);

impl Stages for Shifted<'_> {
    const UNIT_FIRST: bool = false;
    #[inline]
    fn stage(&self, h: usize) -> &[Scalar] {
        &self.0[h..2 * h]
    }
}

/// A radix-2 butterfly on `(u, v)` with twiddle `t`, in place: [`field::dif`] or [`field::dit`].
/// The kernels take it as a generic (a function item, never a pointer), so each is compiled for
/// one butterfly with the call inlined, as if written out.
trait Butterfly: Fn(&mut Scalar, &mut Scalar, &Scalar) + Copy + Sync {}
impl<B: Fn(&mut Scalar, &mut Scalar, &Scalar) + Copy + Sync> Butterfly for B {}

/// One stage over `lo`/`hi` (the two halves of a block), twiddles `t[j]`.
#[inline]
fn stage(lo: &mut [Scalar], hi: &mut [Scalar], t: &[Scalar], unit_first: bool, bf: impl Butterfly) {
    let start = if unit_first {
        field::unit(&mut lo[0], &mut hi[0]);
        1
    } else {
        0
    };
    for ((a, b), w) in lo[start..]
        .iter_mut()
        .zip(&mut hi[start..])
        .zip(&t[start..])
    {
        bf(a, b, w);
    }
}

/// Top stage of a block of size `2h`, split across threads when large.
fn stage_par(x: &mut [Scalar], t: &[Scalar], unit_first: bool, bf: impl Butterfly) {
    use rayon::prelude::*;
    let n = x.len();
    let (lo, hi) = x.split_at_mut(n / 2);
    if n < PAR_MIN {
        stage(lo, hi, t, unit_first, bf);
        return;
    }
    lo.par_chunks_mut(PAR_CHUNK)
        .zip(hi.par_chunks_mut(PAR_CHUNK))
        .zip(t.par_chunks(PAR_CHUNK))
        .enumerate()
        .for_each(|(i, ((l, h), t))| stage(l, h, t, unit_first && i == 0, bf));
}

/// The h = 1 stage: `(u, v) → (u + v, u − v)` (times `t` on the difference or on v).
fn pairs<S: Stages>(x: &mut [Scalar], tw: &S, bf: impl Butterfly) {
    if S::UNIT_FIRST {
        for p in x.chunks_exact_mut(2) {
            let [u, v] = p else { unreachable!() };
            field::unit(u, v);
        }
    } else {
        let t = &tw.stage(1)[0];
        for p in x.chunks_exact_mut(2) {
            let [u, v] = p else { unreachable!() };
            bf(u, v, t);
        }
    }
}

fn dif_iter<S: Stages>(x: &mut [Scalar], tw: &S) {
    let n = x.len();
    let mut h = n / 2;
    while h >= 2 {
        let t = tw.stage(h);
        for blk in x.chunks_exact_mut(2 * h) {
            let (lo, hi) = blk.split_at_mut(h);
            stage(lo, hi, t, S::UNIT_FIRST, field::dif);
        }
        h /= 2;
    }
    if n >= 2 {
        pairs(x, tw, field::dif);
    }
}

fn dit_iter<S: Stages>(x: &mut [Scalar], tw: &S) {
    let n = x.len();
    if n >= 2 {
        pairs(x, tw, field::dit);
    }
    let mut h = 2;
    while h < n {
        let t = tw.stage(h);
        for blk in x.chunks_exact_mut(2 * h) {
            let (lo, hi) = blk.split_at_mut(h);
            stage(lo, hi, t, S::UNIT_FIRST, field::dit);
        }
        h *= 2;
    }
}

/// In-place DIF transform of `x` (length a power of two, at most `2^LEAF_MAX_LOG`): natural
/// order in, bit-reversed order out, unscaled.
pub(crate) fn dif<S: Stages>(x: &mut [Scalar], tw: &S) {
    let n = x.len();
    debug_assert!(n.is_power_of_two() || n == 0);
    if n <= 1 << ITER_MAX_LOG {
        return dif_iter(x, tw);
    }
    stage_par(x, tw.stage(n / 2), S::UNIT_FIRST, field::dif);
    let (lo, hi) = x.split_at_mut(n / 2);
    if n >= PAR_MIN {
        rayon::join(|| dif(lo, tw), || dif(hi, tw));
    } else {
        dif(lo, tw);
        dif(hi, tw);
    }
}

/// In-place DIT transform: bit-reversed order in, natural order out; see [`dif`].
pub(crate) fn dit<S: Stages>(x: &mut [Scalar], tw: &S) {
    let n = x.len();
    debug_assert!(n.is_power_of_two() || n == 0);
    if n <= 1 << ITER_MAX_LOG {
        return dit_iter(x, tw);
    }
    {
        let (lo, hi) = x.split_at_mut(n / 2);
        if n >= PAR_MIN {
            rayon::join(|| dit(lo, tw), || dit(hi, tw));
        } else {
            dit(lo, tw);
            dit(hi, tw);
        }
    }
    stage_par(x, tw.stage(n / 2), S::UNIT_FIRST, field::dit);
}
