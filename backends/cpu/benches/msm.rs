//! MSM over resident bases: G1 2^10 … 2^18, G2 2^10 … 2^16, random scalars.
//!
//! `cargo bench -p bellows-cpu --bench msm`
//!
//! Also `msm_g1_split` (`cargo bench -p bellows-cpu --bench msm -- msm_g1_split`): ways of
//! spreading blst's Pippenger over threads, for a proposed change to the SDK's host MSM —
//! `bellows_backend_api::host_msm` as it is (one chunk per thread, at least 2^12 points a chunk), one chunk per
//! thread with no minimum, and blst's own tiled parallel Pippenger (`MultiPoint::mult`, on blst's
//! thread pool).

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod common;

use std::{sync::Arc, time::Duration};

use bellows_backend_api::{
    backend::{Msm, MsmJob, SharedPoints},
    layout::{fr_slice, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
};
use bellows_cpu::CpuBackend;
use blstrs::{G1Projective, G2Projective, Scalar};
use common::{points, Rng};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ff::Field;
use group::Group;
use rand::SeedableRng;

fn scalars(n: usize, rng: &mut Rng) -> Vec<Scalar> {
    (0..n).map(|_| Scalar::random(&mut *rng)).collect()
}

fn msm(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let mut rng = Rng::seed_from_u64(1);

    let max_g1 = 18;
    let g1: SharedPoints<G1Affine> = Arc::new(points::<G1Projective>(1 << max_g1, &mut rng));
    let h1 = backend.load_bases_g1(g1).unwrap();
    let s = scalars(1 << max_g1, &mut rng);
    let mut group = common::group(c, "msm_g1", Duration::from_secs(3));
    for log_n in (10..=max_g1).step_by(2) {
        let job = [MsmJob::new(0, fr_slice(&s[..1 << log_n]))];
        let mut out = [G1Jacobian::default()];
        group.bench_with_input(BenchmarkId::from_parameter(log_n), &log_n, |b, _| {
            b.iter(|| backend.msm_g1(h1, &job, &mut out).unwrap())
        });
    }
    group.finish();

    let max_g2 = 16;
    let g2: SharedPoints<G2Affine> = Arc::new(points::<G2Projective>(1 << max_g2, &mut rng));
    let h2 = backend.load_bases_g2(g2).unwrap();
    let mut group = common::group(c, "msm_g2", Duration::from_secs(3));
    for log_n in (10..=max_g2).step_by(2) {
        let job = [MsmJob::new(0, fr_slice(&s[..1 << log_n]))];
        let mut out = [G2Jacobian::default()];
        group.bench_with_input(BenchmarkId::from_parameter(log_n), &log_n, |b, _| {
            b.iter(|| backend.msm_g2(h2, &job, &mut out).unwrap())
        });
    }
    group.finish();
}

/// Σ s_i·P_i with one blst Pippenger per thread and no minimum chunk size.
fn split_per_thread(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    use rayon::prelude::*;
    let canon = bellows_backend_api::host_msm::canonical_scalars(fr_slice(scalars));
    let chunk = bases.len().div_ceil(rayon::current_num_threads()).max(1);
    bases
        .par_chunks(chunk)
        .zip(canon.par_chunks(chunk))
        .map(|(b, s)| {
            // blst reads a contiguous array when the second pointer is null.
            let pts: [*const blst::blst_p1_affine; 2] = [b.as_ptr().cast(), std::ptr::null()];
            let scs: [*const u8; 2] = [s.as_ptr().cast(), std::ptr::null()];
            let mut scratch =
                // SAFETY: a pure size query.
                vec![0u64; unsafe { blst::blst_p1s_mult_pippenger_scratch_sizeof(b.len()) } / 8 + 1];
            let mut ret = blst::blst_p1::default();
            // SAFETY: `b` (G1Affine has blst_p1_affine's layout) and `s` (32-byte canonical
            // scalars) hold b.len() entries each and outlive the call; scratch has the size blst
            // asked for.
            unsafe {
                blst::blst_p1s_mult_pippenger(
                    &mut ret,
                    pts.as_ptr(),
                    b.len(),
                    scs.as_ptr(),
                    255,
                    scratch.as_mut_ptr(),
                )
            };
            // SAFETY: blst_p1 and G1Jacobian have the same layout (asserted in the SDK's layout).
            G1Projective::from(unsafe { std::mem::transmute::<blst::blst_p1, G1Jacobian>(ret) })
        })
        .reduce(G1Projective::identity, |a, b| a + b)
}

/// Σ s_i·P_i with blst's tiled parallel Pippenger.
fn blst_tiles(bases: &[G1Affine], scalars: &[Scalar]) -> G1Projective {
    use blst::MultiPoint;
    let canon = bellows_backend_api::host_msm::canonical_scalars(fr_slice(scalars));
    // SAFETY: G1Affine has blst_p1_affine's layout; blst_scalar is 32 plain bytes.
    let (pts, bytes) = unsafe {
        (
            std::slice::from_raw_parts(bases.as_ptr().cast::<blst::blst_p1_affine>(), bases.len()),
            std::slice::from_raw_parts(canon.as_ptr().cast::<u8>(), 32 * canon.len()),
        )
    };
    let r = pts.mult(bytes, 255);
    // SAFETY: as above.
    G1Projective::from(unsafe { std::mem::transmute::<blst::blst_p1, G1Jacobian>(r) })
}

fn split(c: &mut Criterion) {
    let mut rng = Rng::seed_from_u64(2);
    let max = 14;
    let pts: Vec<blstrs::G1Affine> = points::<G1Projective>(1 << max, &mut rng);
    let bases = bellows_backend_api::layout::g1_affine_slice(&pts);
    let s = scalars(1 << max, &mut rng);
    let mut group = common::group(c, "msm_g1_split", Duration::from_secs(2));
    for log_n in (8..=max).step_by(2) {
        let n = 1usize << log_n;
        let (b, k) = (&bases[..n], &s[..n]);
        let want: G1Projective = bellows_backend_api::host_msm::msm_g1(b, fr_slice(k)).into();
        assert_eq!(split_per_thread(b, k), want);
        assert_eq!(blst_tiles(b, k), want);
        group.bench_with_input(BenchmarkId::new("host_msm", log_n), &n, |bch, _| {
            bch.iter(|| bellows_backend_api::host_msm::msm_g1(b, fr_slice(k)))
        });
        group.bench_with_input(BenchmarkId::new("per_thread", log_n), &n, |bch, _| {
            bch.iter(|| split_per_thread(b, k))
        });
        group.bench_with_input(BenchmarkId::new("blst_tiles", log_n), &n, |bch, _| {
            bch.iter(|| blst_tiles(b, k))
        });
    }
    group.finish();
}

criterion_group!(benches, msm, split);
criterion_main!(benches);
