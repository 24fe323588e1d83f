//! MSM over resident bases: G1 2^10 … 2^18, G2 2^10 … 2^16, random scalars.
//!
//! `cargo bench -p bellows-cpu --bench msm`

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::{sync::Arc, time::Duration};

use bellows_core::{
    backend::{Msm, MsmJob, SharedPoints},
    layout::{fr_slice, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
};
use bellows_cpu::CpuBackend;
use blstrs::{G1Projective, G2Projective, Scalar};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::SeedableRng;

type Rng = rand_chacha::ChaCha8Rng;

/// Points `R + i·S`: valid, distinct, and cheap to make.
fn points<P: Group + Curve>(n: usize, rng: &mut Rng) -> Vec<P::AffineRepr>
where
    P::AffineRepr: PrimeCurveAffine + Copy,
{
    let (mut p, s) = (P::random(&mut *rng), P::random(&mut *rng));
    let proj: Vec<P> = (0..n)
        .map(|_| {
            p += s;
            p
        })
        .collect();
    let mut out = vec![P::AffineRepr::identity(); n];
    P::batch_normalize(&proj, &mut out);
    out
}

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
    let mut group = c.benchmark_group("msm_g1");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for log_n in (10..=max_g1).step_by(2) {
        let job = [MsmJob {
            start: 0,
            scalars: fr_slice(&s[..1 << log_n]),
        }];
        let mut out = [G1Jacobian::default()];
        group.bench_with_input(BenchmarkId::from_parameter(log_n), &log_n, |b, _| {
            b.iter(|| backend.msm_g1(h1, &job, &mut out).unwrap())
        });
    }
    group.finish();

    let max_g2 = 16;
    let g2: SharedPoints<G2Affine> = Arc::new(points::<G2Projective>(1 << max_g2, &mut rng));
    let h2 = backend.load_bases_g2(g2).unwrap();
    let mut group = c.benchmark_group("msm_g2");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for log_n in (10..=max_g2).step_by(2) {
        let job = [MsmJob {
            start: 0,
            scalars: fr_slice(&s[..1 << log_n]),
        }];
        let mut out = [G2Jacobian::default()];
        group.bench_with_input(BenchmarkId::from_parameter(log_n), &log_n, |b, _| {
            b.iter(|| backend.msm_g2(h2, &job, &mut out).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, msm);
criterion_main!(benches);
