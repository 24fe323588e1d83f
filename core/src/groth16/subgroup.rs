//! Subgroup membership of many points at once: a randomised bucket test over blst's
//! endomorphism-based check.
//!
//! ## Per point
//! blst (0.3.11 and later) already tests membership of the prime-order subgroup with the
//! endomorphism tests of Scott, "A note on group membership tests for G1, G2 and GT on BLS
//! pairing-friendly curves" (IACR ePrint 2021/1130): in G1, σ(P) = −z²·P for the GLV
//! endomorphism σ; in G2, ψ(P) = z·P for the untwist-Frobenius-twist ψ — about 128 doublings in
//! G1 and 64 in G2 instead of a 255-bit multiplication by r (and in place of Bowe's earlier test,
//! "Faster subgroup checks for BLS12-381", ePrint 2019/814). blstrs calls it in
//! `is_torsion_free`; bellperson's reader calls it once per point, on one thread. That per-point
//! cost (tens of microseconds) is what makes a fully checked load of a 47 GB Filecoin parameter
//! file take hours on one core, so no faster single-point test is written here: the speed comes
//! from testing far fewer points.
//!
//! ## The bucket test
//! Bellare, Garay and Rabin's bucket test ("Fast batch verification for modular exponentiation
//! and digital signatures", EUROCRYPT 1998, §3.3), applied to subgroup membership. The curve
//! group E is the direct product G × T of the prime-order subgroup G (order r) and a torsion part
//! T of order h (the cofactor; gcd(h, r) = 1), so every point P on the curve splits as
//! P = g + t, and the projection P ↦ t is a homomorphism. A round throws every point into one of
//! M buckets, uniformly and independently at random, sums each bucket, and checks each sum with
//! the endomorphism test. A bucket sum is in G exactly when the t-parts of its points add to 0.
//! Each point also gets a random sign (added or subtracted), which costs nothing and halves the
//! chance of a miss.
//!
//! **Soundness.** Let some point P_j have t_j ≠ 0. Fix the buckets and signs of all the other
//! points, and let U_b be the signed sum of their t-parts in bucket b. The round passes only if
//! every bucket sum is in G, which needs U_b = 0 for every bucket b except P_j's, and
//! U_b = ∓t_j ≠ 0 for P_j's (∓ against P_j's sign). If no bucket has U_b ≠ 0, or two do, no
//! placement of P_j passes; if exactly one does, only placing P_j in that bucket with one of the
//! two signs passes (t_j ≠ −t_j, as h is odd): probability 1/(2M). So a round misses a bad point
//! with probability at most 1/(2M), whatever the points are, and R independent rounds with at
//! most (2M)^{−R}. We run ⌈λ / (1 + log2 M)⌉ rounds for λ = [`SECURITY_BITS`] = 128. A file whose points are
//! all in G always passes (no false alarm). The bucket choices come from the operating system's
//! random generator, so whoever made the file cannot predict them.
//!
//! **Cost.** One affine addition per point per round, batched so that it costs about six field
//! multiplications ([`super::batch_add`]), against a full endomorphism test per point; plus M
//! tests per round. The bucket count is chosen to minimise
//! the total, and small sets are simply tested point by point. When a round fails, the points
//! are tested one by one (in parallel) to name the first bad one, so the error is the same as a
//! point-by-point check gives.

#![allow(unsafe_code)]

use std::ops::{AddAssign, SubAssign};

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective};

use super::batch_add::{AffineBuckets, AffineCoords};
use group::{Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::{OsRng, RngCore, SeedableRng};
use rayon::prelude::*;

/// Statistical security of the bucket test: a set with a point outside the subgroup passes
/// with probability at most 2^−128.
pub const SECURITY_BITS: u32 = 128;

/// Points per parallel task within a round.
const CHUNK: usize = 1 << 16;

/// Smallest and largest log2 of the bucket count.
const MIN_LOG_BUCKETS: u32 = 4;
const MAX_LOG_BUCKETS: u32 = 16;

/// A point type the bucket test handles: its coordinates, its Jacobian form and blst's
/// subgroup tests.
pub trait SubgroupPoint: AffineCoords + Copy + Send + Sync + 'static {
    /// The Jacobian (projective) form bucket sums are kept in.
    type Jacobian: Group
        + Curve<AffineRepr = Self>
        + Send
        + Sync
        + for<'a> AddAssign<&'a Self>
        + for<'a> SubAssign<&'a Self>;
    /// Rough cost of one endomorphism test in mixed additions (for choosing the bucket count).
    const TEST_COST: u64;
    /// Whether `p` is in the prime-order subgroup (blst's endomorphism test).
    fn in_subgroup(p: &Self) -> bool;
    /// Whether the Jacobian point `p` is in the prime-order subgroup (same test, no inversion).
    fn jacobian_in_subgroup(p: &Self::Jacobian) -> bool;
}

impl SubgroupPoint for G1Affine {
    type Jacobian = G1Projective;
    // About 128 Jacobian doublings and a few additions (~1000 field multiplications), against
    // about 7 for a batched affine addition.
    const TEST_COST: u64 = 140;
    fn in_subgroup(p: &Self) -> bool {
        bool::from(p.is_torsion_free())
    }
    fn jacobian_in_subgroup(p: &G1Projective) -> bool {
        // SAFETY: blstrs' G1Projective is `#[repr(transparent)]` over `blst_p1` (asserted in
        // `crate::layout`); blst only reads the point.
        unsafe { blst::blst_p1_in_g1((p as *const G1Projective).cast::<blst::blst_p1>()) }
    }
}

impl SubgroupPoint for G2Affine {
    type Jacobian = G2Projective;
    // About 64 doublings and a Frobenius map, in Fp2.
    const TEST_COST: u64 = 70;
    fn in_subgroup(p: &Self) -> bool {
        bool::from(p.is_torsion_free())
    }
    fn jacobian_in_subgroup(p: &G2Projective) -> bool {
        // SAFETY: blstrs' G2Projective is `#[repr(transparent)]` over `blst_p2` (asserted in
        // `crate::layout`); blst only reads the point.
        unsafe { blst::blst_p2_in_g2((p as *const G2Projective).cast::<blst::blst_p2>()) }
    }
}

/// How a set of `n` points is best checked: point by point, or in rounds of buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    /// One endomorphism test per point.
    PerPoint,
    /// `rounds` rounds of 2^`log_buckets` buckets.
    Buckets {
        /// log2 of the bucket count M.
        log_buckets: u32,
        /// Number of rounds R ((2M)^R ≥ 2^λ).
        rounds: u32,
    },
}

/// The cheaper way to check `n` points with tests costing `test_cost` additions each.
pub fn plan(n: usize, test_cost: u64) -> Plan {
    let per_point = n as u128 * test_cost as u128;
    let best = (MIN_LOG_BUCKETS..=MAX_LOG_BUCKETS)
        .map(|m| {
            let rounds = SECURITY_BITS.div_ceil(m + 1);
            let cost = rounds as u128 * (n as u128 + ((1u128 << m) * test_cost as u128));
            (cost, m, rounds)
        })
        .min();
    match best {
        Some((cost, log_buckets, rounds)) if cost < per_point => Plan::Buckets {
            log_buckets,
            rounds,
        },
        _ => Plan::PerPoint,
    }
}

/// Whether every point of every section is in the prime-order subgroup, with bucket randomness
/// from the operating system. The points must be on the curve (decoding checked that); points
/// at infinity are in the subgroup. Returns the first point outside it, as (section, index), or
/// `None` when all are in (up to the error probability 2^−[`SECURITY_BITS`] of a miss).
pub fn first_outside<P: SubgroupPoint>(sections: &[&[P]]) -> Option<(usize, usize)> {
    let mut key = [0u8; 32];
    OsRng.fill_bytes(&mut key);
    first_outside_with_key(sections, key)
}

/// As [`first_outside`], with the bucket randomness keyed by `key` (for tests; a key the file's
/// maker knows lets them pass a bad file).
pub fn first_outside_with_key<P: SubgroupPoint>(
    sections: &[&[P]],
    key: [u8; 32],
) -> Option<(usize, usize)> {
    let n: usize = sections.iter().map(|s| s.len()).sum();
    let passed = match plan(n, P::TEST_COST) {
        Plan::PerPoint => false,
        Plan::Buckets {
            log_buckets,
            rounds,
        } => (0..rounds).all(|round| bucket_round(sections, log_buckets, round, key)),
    };
    if passed {
        return None;
    }
    // Point by point (also the way to name the culprit after a failed round).
    sections.iter().enumerate().find_map(|(k, s)| {
        s.par_iter()
            .position_first(|p| !P::in_subgroup(p))
            .map(|i| (k, i))
    })
}

/// One round: every point, with a random sign, into one of 2^log_buckets buckets; true when
/// every bucket sum is in the subgroup.
fn bucket_round<P: SubgroupPoint>(
    sections: &[&[P]],
    log_buckets: u32,
    round: u32,
    key: [u8; 32],
) -> bool {
    let m = 1usize << log_buckets;
    // (section, chunk) tasks, each with its own random stream.
    let tasks: Vec<&[P]> = sections.iter().flat_map(|s| s.chunks(CHUNK)).collect();
    let sums = tasks
        .par_iter()
        .enumerate()
        .fold(
            || AffineBuckets::<P::F>::new(m),
            |mut buckets, (t, chunk)| {
                let mut rng = ChaCha20Rng::from_seed(key);
                rng.set_stream((u64::from(round) << 40) | t as u64);
                // log_buckets bits of bucket and one of sign per point, from 64-bit words.
                let per_point = log_buckets + 1;
                let mask = (1u64 << per_point) - 1;
                let mut bits = 0u64;
                let mut left = 0u32;
                for p in chunk.iter() {
                    if left < per_point {
                        bits = rng.next_u64();
                        left = 64;
                    }
                    let draw = bits & mask;
                    bits >>= per_point;
                    left -= per_point;
                    if let Some((x, y)) = p.xy() {
                        buckets.add((draw >> 1) as usize, x, y, draw & 1 == 1);
                    }
                }
                buckets
            },
        )
        .map(|mut buckets| {
            buckets.finish();
            buckets.points::<P>().collect::<Vec<P>>()
        })
        .fold(
            || vec![P::Jacobian::identity(); m],
            |mut acc, pts| {
                for (a, p) in acc.iter_mut().zip(&pts) {
                    *a += p;
                }
                acc
            },
        )
        .reduce(
            || vec![P::Jacobian::identity(); m],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(&b) {
                    *x += *y;
                }
                a
            },
        );
    sums.par_iter().all(P::jacobian_in_subgroup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::prime::PrimeCurveAffine;

    /// A point on the curve with a torsion part: a curve point from x-coordinates tried in
    /// turn, not multiplied by the cofactor (so almost surely outside the subgroup).
    fn off_subgroup_g1() -> G1Affine {
        for x in 1u64.. {
            // y² = x³ + 4 over Fp, decoded from an uncompressed encoding: find x with a root.
            let xf = blstrs::Fp::from(x);
            let rhs = xf.square() * xf + blstrs::Fp::from(4u64);
            if let Some(y) = Option::<blstrs::Fp>::from(rhs.sqrt()) {
                let mut bytes = [0u8; 96];
                bytes[..48].copy_from_slice(&xf.to_bytes_be());
                bytes[48..].copy_from_slice(&y.to_bytes_be());
                let p = Option::<G1Affine>::from(G1Affine::from_uncompressed_unchecked(&bytes))
                    .expect("valid encoding");
                assert!(bool::from(p.is_on_curve()));
                if !bool::from(p.is_torsion_free()) {
                    return p;
                }
            }
        }
        unreachable!()
    }

    fn subgroup_points(n: usize, seed: u64) -> Vec<G1Affine> {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let g = G1Projective::random(&mut rng);
        let step = G1Projective::random(&mut rng).to_affine();
        let mut acc = g;
        (0..n)
            .map(|_| {
                acc += &step;
                acc.to_affine()
            })
            .collect()
    }

    #[test]
    fn plans_switch_from_per_point_to_buckets() {
        assert_eq!(plan(10, 140), Plan::PerPoint);
        match plan(10_000_000, 140) {
            Plan::Buckets {
                log_buckets,
                rounds,
            } => {
                assert!((log_buckets + 1) * rounds >= SECURITY_BITS);
                assert!(rounds <= 16);
            }
            p => panic!("{p:?}"),
        }
    }

    #[test]
    fn good_sets_pass_and_a_bad_point_is_named() {
        let good = subgroup_points(40_000, 1);
        let more = subgroup_points(1000, 2);
        assert!(matches!(plan(41_000, 140), Plan::Buckets { .. }));
        assert_eq!(first_outside(&[&good[..], &more[..]]), None);
        let bad = off_subgroup_g1();
        for (sec, idx) in [(0usize, 0usize), (0, 39_999), (1, 500)] {
            let mut a = good.clone();
            let mut b = more.clone();
            if sec == 0 {
                a[idx] = bad;
            } else {
                b[idx] = bad;
            }
            assert_eq!(first_outside(&[&a[..], &b[..]]), Some((sec, idx)));
        }
        // Identity points are in the subgroup.
        let mut c = good.clone();
        c[3] = G1Affine::identity();
        assert_eq!(first_outside(&[&c[..]]), None);
    }

    /// Bad points placed to cancel each other (t and −t, and three copies of an order-3
    /// part) are still caught: the cancellation needs them in one bucket in every round.
    #[test]
    fn cancelling_bad_points_are_caught() {
        let mut pts = subgroup_points(30_000, 3);
        let bad = off_subgroup_g1();
        pts[10] = bad;
        pts[20] = -bad;
        assert_eq!(first_outside(&[&pts[..]]), Some((0, 10)));
        // t-part of order dividing h: P + P + P … each the same bad point, many copies.
        let mut pts = subgroup_points(30_000, 4);
        for p in pts.iter_mut().step_by(97) {
            *p = bad;
        }
        assert_eq!(first_outside(&[&pts[..]]), Some((0, 0)));
    }

    #[test]
    fn g2_sets() {
        let mut rng = ChaCha20Rng::seed_from_u64(5);
        let step = G2Projective::random(&mut rng).to_affine();
        let mut acc = G2Projective::random(&mut rng);
        let pts: Vec<G2Affine> = (0..20_000)
            .map(|_| {
                acc += &step;
                acc.to_affine()
            })
            .collect();
        assert!(matches!(plan(pts.len(), 70), Plan::Buckets { .. }));
        assert_eq!(first_outside(&[&pts[..]]), None);
        let _ = blstrs::Scalar::ONE;
    }
}
