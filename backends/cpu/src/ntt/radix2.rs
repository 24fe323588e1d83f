//! Radix-2 in-place kernels for transforms of at most `2^LEAF_MAX_LOG` elements.
//!
//! - [`dif`]: Gentleman–Sande decimation in frequency (Gentleman & Sande, "Fast Fourier
//!   transforms — for fun and profit", AFIPS 1966): natural-order input, bit-reversed output.
//!   Stage of half-size h: `(u, v) → (u + v, (u − v)·ω_{2h}^j)`, from `h = n/2` down to 1.
//! - [`dit`]: Cooley–Tukey decimation in time (Cooley & Tukey, "An algorithm for the machine
//!   calculation of complex Fourier series", Math. Comp. 1965): bit-reversed input, natural-order
//!   output. Stage of half-size h: `(u, v) → (u + ω_{2h}^j·v, u − ω_{2h}^j·v)`, from `h = 1` up.
//!
//! Both recurse on halves (depth first, so the later stages run in cache), split the top stages
//! of a large vector across rayon threads, and run the last `2^ITER_MAX_LOG`-element blocks
//! iteratively. Twiddles come from the shared stage tables; a factor of 1 (j = 0, and the whole
//! h = 1 stage) costs no multiplication.

use blstrs::Scalar;

use super::twiddle::{Dir, Levels};

/// Blocks of at most this size (32 KiB, the L1 cache) run the iterative loops.
const ITER_MAX_LOG: u32 = 10;
/// Vectors at least this long split a stage, and their halves, across threads.
const PAR_MIN: usize = 1 << 12;
/// Elements per parallel task within one stage.
const PAR_CHUNK: usize = 1 << 10;

/// One DIF stage over `lo`/`hi` (the two halves of a block), twiddles `t[j]`.
#[inline]
fn dif_stage(lo: &mut [Scalar], hi: &mut [Scalar], t: &[Scalar], skip_first: bool) {
    let start = if skip_first {
        let (u, v) = (lo[0], hi[0]);
        lo[0] = u + v;
        hi[0] = u - v;
        1
    } else {
        0
    };
    for ((a, b), w) in lo[start..]
        .iter_mut()
        .zip(&mut hi[start..])
        .zip(&t[start..])
    {
        let (u, v) = (*a, *b);
        *a = u + v;
        *b = (u - v) * w;
    }
}

/// One DIT stage over `lo`/`hi`, twiddles `t[j]`.
#[inline]
fn dit_stage(lo: &mut [Scalar], hi: &mut [Scalar], t: &[Scalar], skip_first: bool) {
    let start = if skip_first {
        let (u, v) = (lo[0], hi[0]);
        lo[0] = u + v;
        hi[0] = u - v;
        1
    } else {
        0
    };
    for ((a, b), w) in lo[start..]
        .iter_mut()
        .zip(&mut hi[start..])
        .zip(&t[start..])
    {
        let u = *a;
        let v = *b * w;
        *a = u + v;
        *b = u - v;
    }
}

/// Top stage of a block of size `2 h`, split across threads when large.
fn stage_par(x: &mut [Scalar], t: &[Scalar], dif: bool) {
    use rayon::prelude::*;
    let n = x.len();
    let (lo, hi) = x.split_at_mut(n / 2);
    if n < PAR_MIN {
        if dif {
            dif_stage(lo, hi, t, true)
        } else {
            dit_stage(lo, hi, t, true)
        }
        return;
    }
    lo.par_chunks_mut(PAR_CHUNK)
        .zip(hi.par_chunks_mut(PAR_CHUNK))
        .zip(t.par_chunks(PAR_CHUNK))
        .enumerate()
        .for_each(|(i, ((l, h), t))| {
            if dif {
                dif_stage(l, h, t, i == 0)
            } else {
                dit_stage(l, h, t, i == 0)
            }
        });
}

fn dif_iter(x: &mut [Scalar], lv: &Levels, dir: Dir) {
    let n = x.len();
    let mut h = n / 2;
    while h >= 2 {
        let t = lv.stage(dir, h);
        for blk in x.chunks_exact_mut(2 * h) {
            let (lo, hi) = blk.split_at_mut(h);
            dif_stage(lo, hi, t, true);
        }
        h /= 2;
    }
    if n >= 2 {
        for p in x.chunks_exact_mut(2) {
            let (u, v) = (p[0], p[1]);
            p[0] = u + v;
            p[1] = u - v;
        }
    }
}

fn dit_iter(x: &mut [Scalar], lv: &Levels, dir: Dir) {
    let n = x.len();
    if n >= 2 {
        for p in x.chunks_exact_mut(2) {
            let (u, v) = (p[0], p[1]);
            p[0] = u + v;
            p[1] = u - v;
        }
    }
    let mut h = 2;
    while h < n {
        let t = lv.stage(dir, h);
        for blk in x.chunks_exact_mut(2 * h) {
            let (lo, hi) = blk.split_at_mut(h);
            dit_stage(lo, hi, t, true);
        }
        h *= 2;
    }
}

/// In-place DIF transform of `x` (length a power of two, at most `2^LEAF_MAX_LOG`): natural
/// order in, bit-reversed order out, with the powers of ω (`Fwd`) or ω⁻¹ (`Inv`), unscaled.
pub(crate) fn dif(x: &mut [Scalar], dir: Dir) {
    dif_rec(x, Levels::get(), dir)
}

/// In-place DIT transform: bit-reversed order in, natural order out; see [`dif`].
pub(crate) fn dit(x: &mut [Scalar], dir: Dir) {
    dit_rec(x, Levels::get(), dir)
}

fn dif_rec(x: &mut [Scalar], lv: &Levels, dir: Dir) {
    let n = x.len();
    debug_assert!(n.is_power_of_two() || n == 0);
    if n <= 1 << ITER_MAX_LOG {
        return dif_iter(x, lv, dir);
    }
    stage_par(x, lv.stage(dir, n / 2), true);
    let (lo, hi) = x.split_at_mut(n / 2);
    if n >= PAR_MIN {
        rayon::join(|| dif_rec(lo, lv, dir), || dif_rec(hi, lv, dir));
    } else {
        dif_rec(lo, lv, dir);
        dif_rec(hi, lv, dir);
    }
}

fn dit_rec(x: &mut [Scalar], lv: &Levels, dir: Dir) {
    let n = x.len();
    debug_assert!(n.is_power_of_two() || n == 0);
    if n <= 1 << ITER_MAX_LOG {
        return dit_iter(x, lv, dir);
    }
    {
        let (lo, hi) = x.split_at_mut(n / 2);
        if n >= PAR_MIN {
            rayon::join(|| dit_rec(lo, lv, dir), || dit_rec(hi, lv, dir));
        } else {
            dit_rec(lo, lv, dir);
            dit_rec(hi, lv, dir);
        }
    }
    stage_par(x, lv.stage(dir, n / 2), false);
}
