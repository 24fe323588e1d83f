//! Fixed-base scalar multiplication with precomputed window tables, for the setup.
//!
//! A setup multiplies one generator by millions of secret scalars. With the generator fixed, the
//! doublings of a double-and-add ladder can be precomputed once: split a scalar into signed
//! digits of w bits, d_0 + d_1·2^w + … (each |d_i| ≤ 2^{w−1}), and keep for every window i the
//! multiples k·2^{wi}·G for k = 1..2^{w−1}, in affine form. A product is then one mixed addition
//! (or subtraction) per non-zero digit, about 255/w of them, and no doubling at all. This is the
//! fixed-base windowing method ("fixed-base windowing", Menezes, van Oorschot and Vanstone,
//! *Handbook of Applied Cryptography*, §14.6.3, Algorithm 14.109, here with the signed digits of
//! Koyama and Tsuruoka's signed-window recoding so the tables hold half as many points).
//!
//! With w = 16 a G1 product is 16 additions where the wNAF ladder bellperson uses costs about
//! 255 doublings and 50 additions: an order of magnitude fewer field operations. Many products
//! are summed at once in affine coordinates, window by window, with one field inversion per
//! batch of additions ([`super::batch_add`]), so an addition costs about six field
//! multiplications and no product needs a conversion to affine at the end. The window width
//! grows with the number of products (w = 19 for the 12 million G1 products of the 2 KiB PoRep
//! circuit: 14 windows of 2^18 points, 350 MB). The tables are built in parallel, each window
//! at the cost of one addition per entry plus a batch normalisation.
//!
//! The results are the same group elements as any other method gives (`k·G` is unique), so
//! parameters written with these tables are byte-identical to those written before.

#![allow(unsafe_code)]

use group::Curve;
use rayon::prelude::*;

use blstrs::Scalar;

use super::batch_add::{AffineBuckets, AffineCoords};

/// Scalars per parallel task (their Jacobian products are normalised together).
const CHUNK: usize = 1 << 12;

/// Largest table a [`FixedBaseTable`] chooses, in points (2^22: 400 MB of G1, 800 MB of G2
/// affine points at the most; the sizing below stays well under it for any real circuit).
const MAX_TABLE_POINTS: usize = 1 << 22;

/// Window tables of one base point (see the module documentation).
pub struct FixedBaseTable<G: Curve> {
    /// Window width in bits.
    w: u32,
    /// `table[i * half + (k − 1)]` = k · 2^{w·i} · base, for k in 1..=half (half = 2^{w−1}).
    table: Vec<G::AffineRepr>,
    /// Number of windows.
    windows: usize,
}

impl<G> FixedBaseTable<G>
where
    G: Curve<Scalar = Scalar> + Send + Sync,
    G::AffineRepr: Copy + Send + Sync,
    for<'a> G: std::ops::AddAssign<&'a G::AffineRepr> + std::ops::SubAssign<&'a G::AffineRepr>,
{
    /// The window width that minimises the work for `count` products: `count · windows(w)` mixed
    /// additions plus about two additions' worth per table entry.
    pub fn window_for(count: usize) -> u32 {
        (2u32..=20)
            .filter(|&w| windows(w) << (w - 1) <= MAX_TABLE_POINTS)
            .min_by_key(|&w| {
                let nw = windows(w) as u128;
                count as u128 * nw + 2 * (nw << (w - 1))
            })
            .unwrap_or(2)
    }

    /// Builds the tables of `base` for `count` products (the window width follows
    /// [`FixedBaseTable::window_for`]). `normalize_into` converts a slice of Jacobian points to
    /// affine in one batch (one field inversion for the slice).
    pub fn new(base: G, count: usize, normalize_into: fn(&[G], &mut [G::AffineRepr])) -> Self {
        Self::with_window(base, Self::window_for(count), normalize_into)
    }

    /// Builds the tables of `base` with windows of `w` bits (2 ≤ w ≤ 20).
    pub fn with_window(base: G, w: u32, normalize_into: fn(&[G], &mut [G::AffineRepr])) -> Self {
        assert!((2..=20).contains(&w), "window width {w} out of range");
        let nw = windows(w);
        let half = 1usize << (w - 1);
        // 2^{w·i} · base for every window, by w doublings each (cheap: nw·w doublings in all).
        let mut bases = Vec::with_capacity(nw);
        let mut b = base;
        for _ in 0..nw {
            bases.push(b);
            for _ in 0..w {
                b = b.double();
            }
        }
        let mut table = vec![G::identity().to_affine(); nw * half];
        table
            .par_chunks_mut(half)
            .zip(bases.par_iter())
            .for_each(|(dst, b)| {
                // k·b for k = 1..=half, in runs normalised together.
                let mut acc = *b;
                for run in dst.chunks_mut(CHUNK) {
                    let mut jac = Vec::with_capacity(run.len());
                    for _ in 0..run.len() {
                        jac.push(acc);
                        acc += b;
                    }
                    normalize_into(&jac, run);
                }
            });
        FixedBaseTable {
            w,
            table,
            windows: nw,
        }
    }

    /// The window width in bits.
    pub fn window_bits(&self) -> u32 {
        self.w
    }

    /// The signed digits of `s`, one per window, each in (−2^{w−1}, 2^{w−1}], into `out`
    /// (`out.len() == windows`).
    fn digits_into(&self, s: &Scalar, out: &mut [i32]) {
        let mut bytes = s.to_bytes_le();
        let half = 1u64 << (self.w - 1);
        let mut carry = 0u64;
        for (i, o) in out.iter_mut().enumerate() {
            let d = window_value(&bytes, i * self.w as usize, self.w) + carry;
            // d > half borrows 2^w from the next window.
            if d > half {
                carry = 1;
                *o = -(((1u64 << self.w) - d) as i32);
            } else {
                carry = 0;
                *o = d as i32;
            }
        }
        debug_assert_eq!(carry, 0, "the last window absorbs every carry");
        super::setup::wipe_bytes(&mut bytes);
    }

    /// The table entry for digit `d` ≠ 0 of window `i`, without its sign.
    fn entry(&self, i: usize, d: i32) -> &G::AffineRepr {
        let half = 1usize << (self.w - 1);
        &self.table[i * half + d.unsigned_abs() as usize - 1]
    }

    /// `base · s`, as a Jacobian point.
    pub fn mul(&self, s: &Scalar) -> G {
        let mut digits = vec![0i32; self.windows];
        self.digits_into(s, &mut digits);
        let mut acc = G::identity();
        for (i, &d) in digits.iter().enumerate() {
            if d > 0 {
                acc += self.entry(i, d);
            } else if d < 0 {
                acc -= self.entry(i, d);
            }
        }
        wipe_digits(&mut digits);
        acc
    }

    /// `base · s` for every scalar, in parallel, written as affine points into `out`
    /// (`out.len() == scalars.len()`).
    ///
    /// Each run of scalars is summed in affine coordinates, window by window, with one field
    /// inversion per batch of additions ([`super::batch_add`]): about six field multiplications
    /// per table point added, against the dozen or more of a Jacobian addition, and no final
    /// conversion to affine.
    pub fn mul_many_into(&self, scalars: &[Scalar], out: &mut [G::AffineRepr])
    where
        G::AffineRepr: AffineCoords,
    {
        assert_eq!(scalars.len(), out.len(), "fixed-base: length mismatch");
        let nw = self.windows;
        out.par_chunks_mut(CHUNK)
            .zip(scalars.par_chunks(CHUNK))
            .for_each(|(dst, src)| {
                let mut digits = vec![0i32; src.len() * nw];
                for (s, d) in src.iter().zip(digits.chunks_mut(nw)) {
                    self.digits_into(s, d);
                }
                let mut sums = AffineBuckets::new(src.len());
                for i in 0..nw {
                    for (j, d) in digits.iter().skip(i).step_by(nw).enumerate() {
                        if *d != 0 {
                            // k·2^{w·i}·G: never the identity (r, an odd prime above k, cannot divide k·2^{w·i}).
                            let (x, y) = self.entry(i, *d).xy_finite();
                            sums.add(j, x, y, *d < 0);
                        }
                    }
                }
                wipe_digits(&mut digits);
                sums.finish();
                for (o, p) in dst.iter_mut().zip(sums.points()) {
                    *o = p;
                }
            });
    }

    /// `base · s` for every scalar, in parallel, as affine points (see
    /// [`FixedBaseTable::mul_many_into`]).
    pub fn mul_many(&self, scalars: &[Scalar]) -> Vec<G::AffineRepr>
    where
        G::AffineRepr: AffineCoords,
    {
        let mut out = vec![G::identity().to_affine(); scalars.len()];
        self.mul_many_into(scalars, &mut out);
        out
    }
}

/// Overwrites secret-derived digits with zero (volatile writes; see `setup::wipe`).
fn wipe_digits(digits: &mut [i32]) {
    for d in digits.iter_mut() {
        // SAFETY: `d` is a valid, aligned, exclusive reference to an initialised i32.
        unsafe { std::ptr::write_volatile(d, 0) };
    }
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
}

/// Windows of `w` bits needed for a scalar below 2^255 with signed digits: ⌈255/w⌉ windows of
/// digits, plus one for the final carry when the top window can overflow half its range.
fn windows(w: u32) -> usize {
    let w = w as usize;
    let n = 255usize.div_ceil(w);
    // The top window holds bits [(n−1)·w, 255), so its value is < 2^{255−(n−1)·w}; with a carry
    // of 1 it stays ≤ 2^{w−1} (no further carry) when 255 − (n−1)·w ≤ w − 1.
    if 255 - (n - 1) * w < w {
        n
    } else {
        n + 1
    }
}

/// The `w` bits of the little-endian integer `bytes` starting at bit `start` (zero past the end).
fn window_value(bytes: &[u8; 32], start: usize, w: u32) -> u64 {
    let mut v = 0u64;
    let first = start / 8;
    // Up to 20 + 7 bits: five bytes are enough.
    for k in 0..5 {
        if let Some(b) = bytes.get(first + k) {
            v |= u64::from(*b) << (8 * k);
        }
    }
    (v >> (start % 8)) & ((1u64 << w) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};
    use ff::Field;
    use group::Group;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    fn norm1(src: &[G1Projective], dst: &mut [G1Affine]) {
        G1Projective::batch_normalize(src, dst);
    }

    fn norm2(src: &[G2Projective], dst: &mut [G2Affine]) {
        G2Projective::batch_normalize(src, dst);
    }

    /// Edge scalars and random ones, against blst's own multiplication, for window widths with
    /// and without the extra carry window (3, 5, 15 divide 255; 16 is the setup's usual width).
    #[test]
    fn products_equal_plain_multiplication() {
        let mut rng = ChaCha20Rng::seed_from_u64(7);
        let base = G1Projective::random(&mut rng);
        let mut scalars = vec![
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(u64::MAX),
            -Scalar::from(2u64),
        ];
        // Digits at exactly half and just above (0x80…, 0x7f…, 0xff…) in every byte.
        for b in [0x80u8, 0x7f, 0xff, 0x81] {
            let mut bytes = [b; 32];
            bytes[31] = 0x3f;
            scalars.push(Option::from(Scalar::from_bytes_le(&bytes)).unwrap());
        }
        scalars.extend((0..40).map(|_| Scalar::random(&mut rng)));
        for w in [2, 3, 4, 5, 8, 11, 15, 16] {
            let t = FixedBaseTable::with_window(base, w, norm1);
            for s in &scalars {
                assert_eq!(t.mul(s), base * s, "w = {w}, s = {s:?}");
            }
        }
        let base2 = G2Projective::random(&mut rng);
        for w in [3, 8, 13] {
            let t = FixedBaseTable::with_window(base2, w, norm2);
            for s in &scalars[..12] {
                assert_eq!(t.mul(s), base2 * s, "G2, w = {w}");
            }
            let many = t.mul_many(&scalars[..12]);
            for (s, p) in scalars[..12].iter().zip(&many) {
                assert_eq!(*p, (base2 * s).to_affine(), "G2 batch, w = {w}");
            }
        }
    }

    #[test]
    fn many_products_match_and_window_choice_grows_with_count() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let base = G1Projective::random(&mut rng);
        let scalars: Vec<Scalar> = (0..CHUNK + 17).map(|_| Scalar::random(&mut rng)).collect();
        let t = FixedBaseTable::new(base, scalars.len(), norm1);
        let mut scalars = scalars;
        // Repeated and opposite scalars: equal and opposite partial sums meet in the batches.
        scalars[5] = scalars[4];
        scalars[7] = -scalars[4];
        scalars[9] = Scalar::ZERO;
        let out = t.mul_many(&scalars);
        for (s, p) in scalars.iter().zip(&out) {
            assert_eq!(*p, (base * s).to_affine());
        }
        let w = |n| FixedBaseTable::<G1Projective>::window_for(n);
        assert!(
            w(10) < w(100_000) && w(100_000) < w(10_000_000),
            "{} {} {}",
            w(10),
            w(100_000),
            w(10_000_000)
        );
        assert!(windows(16) * (1 << 15) <= MAX_TABLE_POINTS);
    }

    #[test]
    fn window_counts_cover_255_bits_and_the_carry() {
        for w in 2..=20usize {
            let n = windows(w as u32);
            assert!(n * w >= 255, "w = {w}");
            // The top window's bits, plus a carry, fit in a signed digit of w bits.
            let top_bits = 255usize.saturating_sub((n - 1) * w);
            assert!(
                top_bits < w,
                "w = {w}: the top window holds {top_bits} bits"
            );
        }
        assert_eq!(windows(16), 16);
        assert_eq!(windows(15), 18);
    }
}
