//! MSM on host threads over affine points, with blst's Pippenger.
//!
//! Pippenger, "On the evaluation of powers and related problems" (FOCS 1976), in blst's bucket
//! implementation (`blst_p1s_mult_pippenger`, `blst_p2s_mult_pippenger`). The points are split into
//! one contiguous chunk per worker thread, each chunk runs blst's single-threaded Pippenger, and the
//! partial sums are added. This serves the CPU backend and the prover's G2 MSM, which runs on CPU
//! threads while a device does the G1 work.

#![allow(unsafe_code)]

use rayon::prelude::*;

use crate::layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian};

/// Canonical (non-Montgomery) little-endian 32-byte encoding of scalars, as blst's MSM wants.
pub fn canonical_scalars(s: &[Fr]) -> Vec<blst::blst_scalar> {
    let mut out = vec![blst::blst_scalar::default(); s.len()];
    out.par_chunks_mut(8192)
        .zip(s.par_chunks(8192))
        .for_each(|(o, s)| {
            for (o, s) in o.iter_mut().zip(s) {
                let fr = blst::blst_fr { l: s.0 };
                // SAFETY: both pointers are valid, aligned and non-overlapping locals/elements.
                unsafe { blst::blst_scalar_from_fr(o, &fr) };
            }
        });
    out
}

/// Below this many points a chunk is not worth a thread of its own.
const MIN_CHUNK: usize = 256;

fn is_zero(s: &blst::blst_scalar) -> bool {
    s.b.iter().all(|&b| b == 0)
}

fn is_one(s: &blst::blst_scalar) -> bool {
    s.b[0] == 1 && s.b[1..].iter().all(|&b| b == 0)
}

macro_rules! host_msm_impl {
    ($name:ident, $affine:ty, $jac:ty, $blst_aff:ty, $blst_p:ty, $scratch:path, $pip:path, $sum:path, $add:path) => {
        /// `Σ scalars[i]·bases[i]` on host threads (`bases.len() == scalars.len()`).
        ///
        /// One contiguous chunk per worker thread. Within a chunk, zero scalars are skipped,
        /// scalars equal to one are summed directly (blst's batch-affine addition), and the rest
        /// go through blst's Pippenger: witnesses of bit-heavy circuits (Filecoin's are mostly
        /// bits) are mostly zeros and ones.
        pub fn $name(bases: &[$affine], scalars: &[Fr]) -> $jac {
            assert_eq!(bases.len(), scalars.len(), "host MSM: length mismatch");
            if bases.is_empty() {
                return <$jac>::default();
            }
            let canon = canonical_scalars(scalars);
            let threads = rayon::current_num_threads().max(1);
            let chunk = bases.len().div_ceil(threads).max(MIN_CHUNK);
            let partials: Vec<$blst_p> = bases
                .par_chunks(chunk)
                .zip(canon.par_chunks(chunk))
                .map(|(b, s)| {
                    let mut pts: Vec<*const $blst_aff> = Vec::with_capacity(b.len());
                    let mut scs: Vec<*const u8> = Vec::with_capacity(b.len());
                    let mut ones: Vec<*const $blst_aff> = Vec::new();
                    for (p, k) in b.iter().zip(s) {
                        let ptr = (p as *const $affine).cast::<$blst_aff>();
                        if is_zero(k) {
                            continue;
                        } else if is_one(k) {
                            if *p != <$affine>::default() {
                                ones.push(ptr);
                            }
                        } else {
                            pts.push(ptr);
                            scs.push(k.b.as_ptr());
                        }
                    }
                    let mut ret = <$blst_p>::default();
                    if !pts.is_empty() {
                        // SAFETY: scratch size is asked of blst for this many points; blst writes
                        // within it. Point pointers refer to `b`, whose layout equals blst's
                        // affine type (asserted in `layout`), scalar pointers to 32-byte canonical
                        // scalars; all outlive the call.
                        unsafe {
                            let mut scratch = vec![0u64; $scratch(pts.len()) / 8 + 1];
                            $pip(
                                &mut ret,
                                pts.as_ptr(),
                                pts.len(),
                                scs.as_ptr(),
                                255,
                                scratch.as_mut_ptr(),
                            );
                        }
                    }
                    if !ones.is_empty() {
                        let mut sum = <$blst_p>::default();
                        let acc = ret;
                        // SAFETY: `ones` holds `ones.len()` valid pointers to non-identity affine
                        // points in `b` (blst reads exactly that many); outputs are locals.
                        unsafe {
                            $sum(&mut sum, ones.as_ptr(), ones.len());
                            $add(&mut ret, &acc, &sum);
                        }
                    }
                    ret
                })
                .collect();
            let mut acc = <$blst_p>::default();
            for p in &partials {
                let a = acc;
                // SAFETY: valid, aligned blst points; blst allows output aliasing but we avoid it.
                unsafe { $add(&mut acc, &a, p) };
            }
            // SAFETY: identical layout of the blst Jacobian type and ours (asserted in `layout`).
            unsafe { std::mem::transmute::<$blst_p, $jac>(acc) }
        }
    };
}

host_msm_impl!(
    msm_g1,
    G1Affine,
    G1Jacobian,
    blst::blst_p1_affine,
    blst::blst_p1,
    blst::blst_p1s_mult_pippenger_scratch_sizeof,
    blst::blst_p1s_mult_pippenger,
    blst::blst_p1s_add,
    blst::blst_p1_add_or_double
);
host_msm_impl!(
    msm_g2,
    G2Affine,
    G2Jacobian,
    blst::blst_p2_affine,
    blst::blst_p2,
    blst::blst_p2s_mult_pippenger_scratch_sizeof,
    blst::blst_p2s_mult_pippenger,
    blst::blst_p2s_add,
    blst::blst_p2_add_or_double
);

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use group::{Curve, Group};
    use rand::SeedableRng;

    fn naive_g1(b: &[blstrs::G1Affine], s: &[blstrs::Scalar]) -> blstrs::G1Projective {
        b.iter()
            .zip(s)
            .fold(blstrs::G1Projective::identity(), |acc, (p, k)| acc + *p * k)
    }

    #[test]
    fn g1_matches_naive_with_edge_cases() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        for n in [0usize, 1, 2, 3, 31, 100, 5000] {
            let mut bases: Vec<blstrs::G1Affine> = (0..n)
                .map(|_| blstrs::G1Projective::random(&mut rng).to_affine())
                .collect();
            let mut sc: Vec<blstrs::Scalar> =
                (0..n).map(|_| blstrs::Scalar::random(&mut rng)).collect();
            if n > 3 {
                bases[1] = blstrs::G1Affine::default(); // identity
                bases[2] = bases[3]; // repeated point
                sc[0] = blstrs::Scalar::ZERO;
                sc[3] = -blstrs::Scalar::ONE; // r − 1
            }
            let got = msm_g1(
                crate::layout::g1_affine_slice(&bases),
                crate::layout::fr_slice(&sc),
            );
            let got: blstrs::G1Projective = got.into();
            assert_eq!(got, naive_g1(&bases, &sc), "n = {n}");
        }
    }

    #[test]
    fn zeros_ones_repeats_and_identities_match_naive() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for n in [1usize, 2, 7, 300, 3000] {
            let mut bases: Vec<blstrs::G1Affine> = (0..n)
                .map(|_| blstrs::G1Projective::random(&mut rng).to_affine())
                .collect();
            let sc: Vec<blstrs::Scalar> = (0..n)
                .map(|i| match i % 5 {
                    0 | 1 => blstrs::Scalar::ZERO,
                    2 | 3 => blstrs::Scalar::ONE,
                    _ => blstrs::Scalar::random(&mut rng),
                })
                .collect();
            // Repeated points and identities among the ones (P + P must double).
            for i in (2..n).step_by(5) {
                if i + 1 < n {
                    bases[i + 1] = bases[i];
                }
            }
            if n > 12 {
                bases[12] = blstrs::G1Affine::default();
            }
            let got: blstrs::G1Projective = msm_g1(
                crate::layout::g1_affine_slice(&bases),
                crate::layout::fr_slice(&sc),
            )
            .into();
            assert_eq!(got, naive_g1(&bases, &sc), "n = {n}");
            // All ones, all zeros.
            let ones = vec![blstrs::Scalar::ONE; n];
            let got: blstrs::G1Projective = msm_g1(
                crate::layout::g1_affine_slice(&bases),
                crate::layout::fr_slice(&ones),
            )
            .into();
            assert_eq!(got, naive_g1(&bases, &ones), "ones, n = {n}");
            let zeros = vec![blstrs::Scalar::ZERO; n];
            let got: blstrs::G1Projective = msm_g1(
                crate::layout::g1_affine_slice(&bases),
                crate::layout::fr_slice(&zeros),
            )
            .into();
            assert_eq!(got, blstrs::G1Projective::identity());
        }
        let g2: Vec<blstrs::G2Affine> = (0..40)
            .map(|_| blstrs::G2Projective::random(&mut rng).to_affine())
            .collect();
        let sc: Vec<blstrs::Scalar> = (0..40u64)
            .map(|i| {
                if i % 3 == 0 {
                    blstrs::Scalar::ONE
                } else {
                    blstrs::Scalar::from(i)
                }
            })
            .collect();
        let got: blstrs::G2Projective = msm_g2(
            crate::layout::g2_affine_slice(&g2),
            crate::layout::fr_slice(&sc),
        )
        .into();
        let want = g2
            .iter()
            .zip(&sc)
            .fold(blstrs::G2Projective::identity(), |a, (p, k)| a + *p * k);
        assert_eq!(got, want);
    }

    #[test]
    fn g2_matches_naive() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let bases: Vec<blstrs::G2Affine> = (0..50)
            .map(|_| blstrs::G2Projective::random(&mut rng).to_affine())
            .collect();
        let sc: Vec<blstrs::Scalar> = (0..50).map(|_| blstrs::Scalar::random(&mut rng)).collect();
        let got: blstrs::G2Projective = msm_g2(
            crate::layout::g2_affine_slice(&bases),
            crate::layout::fr_slice(&sc),
        )
        .into();
        let want = bases
            .iter()
            .zip(&sc)
            .fold(blstrs::G2Projective::identity(), |a, (p, k)| a + *p * k);
        assert_eq!(got, want);
    }
}
