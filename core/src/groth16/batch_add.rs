//! Accumulating many points into buckets in affine coordinates, with one field inversion per
//! batch of additions (Montgomery's simultaneous inversion: "Speeding the Pollard and elliptic
//! curve methods of factorization", Math. Comp. 1987, §10.3.1).
//!
//! An affine addition P + B costs one inversion and three multiplications (λ = (y_P − y_B) /
//! (x_P − x_B), x = λ² − x_P − x_B, y = λ·(x_B − x) − y_B). Inverting the denominators of a
//! whole batch at once costs three multiplications each plus one inversion per batch, so an
//! addition costs about six multiplications — against the dozen or more of a mixed
//! Jacobian–affine addition, and the roughly seventeen of blst's constant-time add-or-double,
//! which computes both formulas. Every case is handled exactly: an empty bucket takes the point
//! as it is, P = B doubles (λ = 3x² / 2y; y ≠ 0 on these curves, whose groups have odd order),
//! P = −B empties the bucket. A bucket takes at most one addition per batch: a point whose
//! bucket is already busy closes the batch (with M buckets, a batch holds about √(πM/2)
//! additions before that happens, about 110 for M = 2^13).

#![allow(unsafe_code)]

use blstrs::{G1Affine, G2Affine};
use group::prime::PrimeCurveAffine;

use crate::layout;

/// Additions per batch (one field inversion each).
const BATCH: usize = 256;

/// The field arithmetic the affine sums need, on blst's own types (blstrs keeps its `Fp` and
/// `Fp2` private).
pub trait Coord: Copy + PartialEq + Send + Sync {
    /// Zero.
    const ZERO: Self;
    /// One (Montgomery form).
    const ONE: Self;
    /// `a · b`.
    fn mul(&self, b: &Self) -> Self;
    /// `a²`.
    fn square(&self) -> Self;
    /// `a + b`.
    fn add(&self, b: &Self) -> Self;
    /// `a − b`.
    fn sub(&self, b: &Self) -> Self;
    /// `−a`.
    fn neg(&self) -> Self;
    /// `1 / a` (`a` ≠ 0).
    fn invert(&self) -> Self;
}

macro_rules! coord_impl {
    ($t:ty, $one:expr, $mul:ident, $sqr:ident, $add:ident, $sub:ident, $cneg:ident, $inv:ident) => {
        impl Coord for $t {
            const ZERO: Self = $one(false);
            const ONE: Self = $one(true);
            fn mul(&self, b: &Self) -> Self {
                let mut r = Self::ZERO;
                // SAFETY: blst reads two valid field elements and writes one; `r` is a
                // distinct, writable local.
                unsafe { blst::$mul(&mut r, self, b) };
                r
            }
            fn square(&self) -> Self {
                let mut r = Self::ZERO;
                // SAFETY: as for `mul`.
                unsafe { blst::$sqr(&mut r, self) };
                r
            }
            fn add(&self, b: &Self) -> Self {
                let mut r = Self::ZERO;
                // SAFETY: as for `mul`.
                unsafe { blst::$add(&mut r, self, b) };
                r
            }
            fn sub(&self, b: &Self) -> Self {
                let mut r = Self::ZERO;
                // SAFETY: as for `mul`.
                unsafe { blst::$sub(&mut r, self, b) };
                r
            }
            fn neg(&self) -> Self {
                let mut r = Self::ZERO;
                // SAFETY: as for `mul`.
                unsafe { blst::$cneg(&mut r, self, true) };
                r
            }
            fn invert(&self) -> Self {
                let mut r = Self::ZERO;
                // SAFETY: as for `mul` (blst returns 0 for 0; callers never pass 0).
                unsafe { blst::$inv(&mut r, self) };
                r
            }
        }
    };
}

/// 0 or 1 in blst's Montgomery form.
const fn fp_const(one: bool) -> blst::blst_fp {
    blst::blst_fp {
        l: if one { layout::Fp::ONE.0 } else { [0; 6] },
    }
}

const fn fp2_const(one: bool) -> blst::blst_fp2 {
    blst::blst_fp2 {
        fp: [fp_const(one), fp_const(false)],
    }
}

coord_impl!(
    blst::blst_fp,
    fp_const,
    blst_fp_mul,
    blst_fp_sqr,
    blst_fp_add,
    blst_fp_sub,
    blst_fp_cneg,
    blst_fp_eucl_inverse
);
coord_impl!(
    blst::blst_fp2,
    fp2_const,
    blst_fp2_mul,
    blst_fp2_sqr,
    blst_fp2_add,
    blst_fp2_sub,
    blst_fp2_cneg,
    blst_fp2_eucl_inverse
);

/// An affine point type with its coordinates exposed.
pub trait AffineCoords: PrimeCurveAffine {
    /// The coordinate field.
    type F: Coord;
    /// (x, y), or `None` for the point at infinity.
    fn xy(&self) -> Option<(Self::F, Self::F)>;
    /// (x, y) of a point the caller knows is not the point at infinity (a multiple k·G with k
    /// not a multiple of r): [`AffineCoords::xy`] without its identity test, for the setup's
    /// table lookups, where that test took about a tenth of the time.
    fn xy_finite(&self) -> (Self::F, Self::F);
    /// The point with these coordinates (on the curve: the caller's sums of curve points are).
    fn from_xy(x: Self::F, y: Self::F) -> Self;
}

fn fp(f: layout::Fp) -> blst::blst_fp {
    blst::blst_fp { l: f.0 }
}

fn fp2(f: layout::Fp2) -> blst::blst_fp2 {
    blst::blst_fp2 {
        fp: [fp(f.c0), fp(f.c1)],
    }
}

fn lfp2(f: blst::blst_fp2) -> layout::Fp2 {
    layout::Fp2 {
        c0: layout::Fp(f.fp[0].l),
        c1: layout::Fp(f.fp[1].l),
    }
}

impl AffineCoords for G1Affine {
    type F = blst::blst_fp;
    fn xy(&self) -> Option<(blst::blst_fp, blst::blst_fp)> {
        let p = layout::G1Affine::from(*self);
        (!bool::from(self.is_identity())).then(|| (fp(p.x), fp(p.y)))
    }
    fn xy_finite(&self) -> (blst::blst_fp, blst::blst_fp) {
        debug_assert!(!bool::from(self.is_identity()));
        let p = layout::G1Affine::from(*self);
        (fp(p.x), fp(p.y))
    }
    fn from_xy(x: blst::blst_fp, y: blst::blst_fp) -> Self {
        layout::G1Affine {
            x: layout::Fp(x.l),
            y: layout::Fp(y.l),
        }
        .into()
    }
}

impl AffineCoords for G2Affine {
    type F = blst::blst_fp2;
    fn xy(&self) -> Option<(blst::blst_fp2, blst::blst_fp2)> {
        let p = layout::G2Affine::from(*self);
        (!bool::from(self.is_identity())).then(|| (fp2(p.x), fp2(p.y)))
    }
    fn xy_finite(&self) -> (blst::blst_fp2, blst::blst_fp2) {
        debug_assert!(!bool::from(self.is_identity()));
        let p = layout::G2Affine::from(*self);
        (fp2(p.x), fp2(p.y))
    }
    fn from_xy(x: blst::blst_fp2, y: blst::blst_fp2) -> Self {
        layout::G2Affine {
            x: lfp2(x),
            y: lfp2(y),
        }
        .into()
    }
}

/// Buckets of affine points (see the module documentation).
pub struct AffineBuckets<F: Coord> {
    x: Vec<F>,
    y: Vec<F>,
    full: Vec<bool>,
    /// `busy[b] == epoch`: bucket b has an addition in the current batch.
    busy: Vec<u32>,
    epoch: u32,
    /// The current batch: (bucket, x, y) of the point to add.
    batch: Vec<(u32, F, F)>,
    num: Vec<F>,
    den: Vec<F>,
}

impl<F: Coord> AffineBuckets<F> {
    /// `m` empty buckets.
    pub fn new(m: usize) -> Self {
        AffineBuckets {
            x: vec![F::ZERO; m],
            y: vec![F::ZERO; m],
            full: vec![false; m],
            busy: vec![0; m],
            epoch: 1,
            batch: Vec::with_capacity(BATCH),
            num: Vec::with_capacity(BATCH),
            den: Vec::with_capacity(BATCH),
        }
    }

    /// Adds the point (x, y) (or its negation) to bucket `b`.
    pub fn add(&mut self, b: usize, x: F, y: F, negate: bool) {
        let y = if negate { y.neg() } else { y };
        self.push(b as u32, x, y);
    }

    fn push(&mut self, b: u32, x: F, y: F) {
        let i = b as usize;
        if self.busy[i] == self.epoch {
            self.flush();
        }
        if !self.full[i] {
            self.x[i] = x;
            self.y[i] = y;
            self.full[i] = true;
            return;
        }
        if self.x[i] == x && self.y[i] != y {
            // P = −B (y ≠ 0, so y ≠ −y): the sum is the point at infinity.
            self.full[i] = false;
            return;
        }
        self.busy[i] = self.epoch;
        self.batch.push((b, x, y));
        if self.batch.len() == BATCH {
            self.flush();
        }
    }

    /// Performs the additions of the current batch.
    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        self.num.clear();
        self.den.clear();
        for &(b, x, y) in &self.batch {
            let (bx, by) = (self.x[b as usize], self.y[b as usize]);
            if bx == x {
                // P = B (the P = −B case never enters a batch): doubling.
                let x2 = x.square();
                self.num.push(x2.add(&x2).add(&x2));
                self.den.push(y.add(&y));
            } else {
                self.num.push(y.sub(&by));
                self.den.push(x.sub(&bx));
            }
        }
        batch_invert(&mut self.den);
        for (k, &(b, x, _)) in self.batch.iter().enumerate() {
            let i = b as usize;
            let (bx, by) = (self.x[i], self.y[i]);
            let l = self.num[k].mul(&self.den[k]);
            let x3 = l.square().sub(&x).sub(&bx);
            self.y[i] = l.mul(&bx.sub(&x3)).sub(&by);
            self.x[i] = x3;
        }
        self.batch.clear();
        self.epoch = self.epoch.wrapping_add(1).max(1);
        if self.epoch == 1 {
            self.busy.iter_mut().for_each(|s| *s = 0);
        }
    }

    /// Completes every pending addition.
    pub fn finish(&mut self) {
        self.flush();
    }

    /// The bucket sums, as affine points (after [`AffineBuckets::finish`]).
    pub fn points<P: AffineCoords<F = F>>(&self) -> impl Iterator<Item = P> + '_ {
        (0..self.x.len()).map(|i| {
            if self.full[i] {
                P::from_xy(self.x[i], self.y[i])
            } else {
                P::identity()
            }
        })
    }
}

/// Replaces every element of `v` by its inverse, with one inversion in all (Montgomery's trick).
/// Every element must be non-zero.
fn batch_invert<F: Coord>(v: &mut [F]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = F::ONE;
    for x in v.iter() {
        prefix.push(acc);
        acc = acc.mul(x);
    }
    debug_assert!(acc != F::ZERO, "batch denominators are non-zero");
    let mut inv = acc.invert();
    for (x, p) in v.iter_mut().zip(prefix).rev() {
        let next = inv.mul(x);
        *x = inv.mul(&p);
        inv = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Projective, G2Projective};
    use group::{Curve, Group};
    use rand_chacha::ChaCha20Rng;
    use rand_core::{RngCore, SeedableRng};

    /// Random points into 37 buckets with random signs, repeated points, a point and its
    /// negation, and doublings, against Jacobian sums.
    #[test]
    fn buckets_equal_jacobian_sums() {
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let base: Vec<G1Affine> = (0..40)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let m = 37;
        let mut aff = AffineBuckets::<blst::blst_fp>::new(m);
        let mut jac = vec![G1Projective::identity(); m];
        for i in 0..3000 {
            // Few distinct points, so equal and opposite points meet in buckets often.
            let p = base[(rng.next_u32() % 40) as usize];
            let b = (rng.next_u32() as usize) % m;
            let neg = i % 3 == 0;
            let (x, y) = p.xy().unwrap();
            aff.add(b, x, y, neg);
            if neg {
                jac[b] -= p;
            } else {
                jac[b] += p;
            }
        }
        // A bucket that ends empty: P then −P.
        let (x, y) = base[0].xy().unwrap();
        let mut e = AffineBuckets::<blst::blst_fp>::new(1);
        e.add(0, x, y, false);
        e.add(0, x, y, true);
        e.add(0, x, y, false);
        e.add(0, x, y, false);
        e.finish();
        let got: Vec<G1Affine> = e.points().collect();
        assert_eq!(got[0], (G1Projective::from(base[0]).double()).to_affine());
        aff.finish();
        for (a, j) in aff.points::<G1Affine>().zip(&jac) {
            assert_eq!(a, j.to_affine());
        }
    }

    #[test]
    fn g2_buckets() {
        let mut rng = ChaCha20Rng::seed_from_u64(4);
        let pts: Vec<G2Affine> = (0..500)
            .map(|_| G2Projective::random(&mut rng).to_affine())
            .collect();
        let mut aff = AffineBuckets::<blst::blst_fp2>::new(7);
        let mut jac = vec![G2Projective::identity(); 7];
        for (i, p) in pts.iter().enumerate() {
            let (x, y) = p.xy().unwrap();
            aff.add(i % 7, x, y, i % 2 == 1);
            if i % 2 == 1 {
                jac[i % 7] -= p;
            } else {
                jac[i % 7] += p;
            }
        }
        aff.finish();
        for (a, j) in aff.points::<G2Affine>().zip(&jac) {
            assert_eq!(a, j.to_affine());
        }
    }
}
