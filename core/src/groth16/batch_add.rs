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

use ff::Field;

use blstrs::{Fp, Fp2, G1Affine, G1Projective, G2Affine, G2Projective};
use group::{prime::PrimeCurveAffine, Curve};

/// Additions per batch (one field inversion each).
const BATCH: usize = 256;

/// An affine point type with its coordinates exposed.
pub trait AffineCoords: PrimeCurveAffine {
    /// The coordinate field.
    type F: Field;
    /// (x, y), or `None` for the point at infinity.
    fn xy(&self) -> Option<(Self::F, Self::F)>;
    /// The point with these coordinates (on the curve: the caller's sums of curve points are).
    fn from_xy(x: Self::F, y: Self::F) -> Self;
}

impl AffineCoords for G1Affine {
    type F = Fp;
    fn xy(&self) -> Option<(Fp, Fp)> {
        (!bool::from(self.is_identity())).then(|| (self.x(), self.y()))
    }
    fn from_xy(x: Fp, y: Fp) -> Self {
        G1Affine::from_raw_unchecked(x, y, false)
    }
}

impl AffineCoords for G2Affine {
    type F = Fp2;
    fn xy(&self) -> Option<(Fp2, Fp2)> {
        (!bool::from(self.is_identity())).then(|| (self.x(), self.y()))
    }
    fn from_xy(x: Fp2, y: Fp2) -> Self {
        G2Affine::from_raw_unchecked(x, y, false)
    }
}

/// Buckets of affine points (see the module documentation).
pub struct AffineBuckets<F: Field> {
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

impl<F: Field> AffineBuckets<F> {
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
        let y = if negate { -y } else { y };
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
                self.num.push(x2.double() + x2);
                self.den.push(y.double());
            } else {
                self.num.push(y - by);
                self.den.push(x - bx);
            }
        }
        batch_invert(&mut self.den);
        for (k, &(b, x, _)) in self.batch.iter().enumerate() {
            let i = b as usize;
            let (bx, by) = (self.x[i], self.y[i]);
            let l = self.num[k] * self.den[k];
            let x3 = l.square() - x - bx;
            self.y[i] = l * (bx - x3) - by;
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
fn batch_invert<F: Field>(v: &mut [F]) {
    let mut prefix = Vec::with_capacity(v.len());
    let mut acc = F::ONE;
    for x in v.iter() {
        prefix.push(acc);
        acc *= x;
    }
    let mut inv = acc.invert().expect("batch denominators are non-zero");
    for (x, p) in v.iter_mut().zip(prefix).rev() {
        let next = inv * *x;
        *x = inv * p;
        inv = next;
    }
}

/// The Jacobian form of an affine point, for summing buckets across threads.
pub trait ToJacobian: AffineCoords {
    /// The Jacobian type.
    type J: Curve<AffineRepr = Self>;
}

impl ToJacobian for G1Affine {
    type J = G1Projective;
}

impl ToJacobian for G2Affine {
    type J = G2Projective;
}

#[cfg(test)]
mod tests {
    use super::*;
    use group::Group;
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
        let mut aff = AffineBuckets::<Fp>::new(m);
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
        let mut e = AffineBuckets::<Fp>::new(1);
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
        let mut aff = AffineBuckets::<Fp2>::new(7);
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
