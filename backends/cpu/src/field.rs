//! The few field operations of the hot loops, as direct calls of blst's `blst_fr_*` functions on
//! the memory of `blstrs::Scalar` values.
//!
//! blstrs' operators (`a + b`, `a * b`) call the very same functions, but through a by-value
//! temporary that is copied out after blst's assembly has stored it limb by limb; reading those
//! fresh narrow stores back with one wide load stalls store-to-load forwarding. Writing the result
//! straight into its destination measured 24 ns per radix-2 butterfly instead of 45 ns (2^9
//! butterflies in L1, one core). The arithmetic, and so every result, is identical.

use blst::{blst_fr, blst_fr_add, blst_fr_mul, blst_fr_sub};
use blstrs::Scalar;

// blstrs::Scalar is `#[repr(transparent)]` over `blst_fr`; `bellows_backend_api::layout` asserts
// the same size and alignment at compile time, repeated here for this module's casts.
const _: () = assert!(std::mem::size_of::<Scalar>() == std::mem::size_of::<blst_fr>());
const _: () = assert!(std::mem::align_of::<Scalar>() == std::mem::align_of::<blst_fr>());

#[inline(always)]
fn ptr(x: &Scalar) -> *const blst_fr {
    (x as *const Scalar).cast()
}

#[inline(always)]
fn ptr_mut(x: &mut Scalar) -> *mut blst_fr {
    (x as *mut Scalar).cast()
}

/// DIF butterfly: `(a, b) ← (a + b, (a − b)·w)`.
#[inline(always)]
pub(crate) fn dif(a: &mut Scalar, b: &mut Scalar, w: &Scalar) {
    let u = *a;
    let (pa, pb) = (ptr_mut(a), ptr_mut(b));
    // SAFETY: every pointer comes from a live reference to a Scalar, which has blst_fr's layout
    // (asserted above); blst's field functions allow the output to alias an input.
    unsafe {
        blst_fr_add(pa, ptr(&u), pb);
        blst_fr_sub(pb, ptr(&u), pb);
        blst_fr_mul(pb, pb, ptr(w));
    }
}

/// DIT butterfly: `(a, b) ← (a + w·b, a − w·b)`.
#[inline(always)]
pub(crate) fn dit(a: &mut Scalar, b: &mut Scalar, w: &Scalar) {
    let u = *a;
    let (pa, pb) = (ptr_mut(a), ptr_mut(b));
    // SAFETY: as in `dif`.
    unsafe {
        blst_fr_mul(pb, pb, ptr(w));
        blst_fr_add(pa, ptr(&u), pb);
        blst_fr_sub(pb, ptr(&u), pb);
    }
}

/// Butterfly with twiddle 1: `(a, b) ← (a + b, a − b)`.
#[inline(always)]
pub(crate) fn unit(a: &mut Scalar, b: &mut Scalar) {
    let u = *a;
    let (pa, pb) = (ptr_mut(a), ptr_mut(b));
    // SAFETY: as in `dif`.
    unsafe {
        blst_fr_add(pa, ptr(&u), pb);
        blst_fr_sub(pb, ptr(&u), pb);
    }
}

/// `x ← x·y`.
#[inline(always)]
pub(crate) fn mul_assign(x: &mut Scalar, y: &Scalar) {
    let px = ptr_mut(x);
    // SAFETY: as in `dif`.
    unsafe { blst_fr_mul(px, px, ptr(y)) }
}

/// `a ← (a − s·c)·k`.
#[inline(always)]
pub(crate) fn scaled_difference(a: &mut Scalar, c: &Scalar, s: &Scalar, k: &Scalar) {
    let mut t = Scalar::from(0u64);
    let (pa, pt) = (ptr_mut(a), ptr_mut(&mut t));
    // SAFETY: as in `dif`.
    unsafe {
        blst_fr_mul(pt, ptr(s), ptr(c));
        blst_fr_sub(pa, pa, pt);
        blst_fr_mul(pa, pa, ptr(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    #[test]
    fn equal_to_blstrs_operators() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for _ in 0..100 {
            let [x, y, w, s, k] = [(); 5].map(|_| Scalar::random(&mut rng));
            let (mut a, mut b) = (x, y);
            dif(&mut a, &mut b, &w);
            assert_eq!((a, b), (x + y, (x - y) * w));
            let (mut a, mut b) = (x, y);
            dit(&mut a, &mut b, &w);
            assert_eq!((a, b), (x + w * y, x - w * y));
            let (mut a, mut b) = (x, y);
            unit(&mut a, &mut b);
            assert_eq!((a, b), (x + y, x - y));
            let mut a = x;
            mul_assign(&mut a, &y);
            assert_eq!(a, x * y);
            let mut a = x;
            scaled_difference(&mut a, &w, &s, &k);
            assert_eq!(a, (x - s * w) * k);
        }
    }
}
