//! What the CPU benches share: seeded random vectors and points, the group settings (10
//! samples, a short warm-up) and the measurement of our `h_poly`, which `h_poly` and
//! `vs_bellperson` both report. The MSM tests (`tests/msm.rs`) make their points here too.

// Each bench uses part of this module.
#![allow(dead_code)]

use std::time::Duration;

use bellows_backend_api::{backend::Ntt, layout::fr_slice_mut};
use bellows_cpu::CpuBackend;
use blstrs::Scalar;
use criterion::{measurement::WallTime, BatchSize, BenchmarkGroup, BenchmarkId, Criterion};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::SeedableRng;

/// The random stream of the MSM benches and tests.
pub type Rng = rand_chacha::ChaCha8Rng;

/// `n` random scalars from a ChaCha8 stream seeded with `seed`.
pub fn random(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

/// `n` points `R + i·S` of group `P`: valid, distinct, and cheap to make (additions only).
pub fn points<P: Group + Curve>(n: usize, rng: &mut Rng) -> Vec<P::AffineRepr>
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

/// A benchmark group of 10 samples after half a second of warm-up, each measured for `measure`.
pub fn group<'a>(
    c: &'a mut Criterion,
    name: &str,
    measure: Duration,
) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(measure);
    group
}

/// The three h_poly inputs of 2^`log_n` elements, always the same.
pub fn h_poly_input(log_n: u32) -> (Vec<Scalar>, Vec<Scalar>, Vec<Scalar>) {
    let n = 1usize << log_n;
    (random(n, 1), random(n, 2), random(n, 3))
}

/// Our `h_poly` of 2^`log_n` on copies of `input` (the copies outside the measurement).
pub fn bench_h_poly(
    group: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    backend: &CpuBackend,
    log_n: u32,
    input: &(Vec<Scalar>, Vec<Scalar>, Vec<Scalar>),
) {
    group.bench_with_input(id, &log_n, |bch, &log_n| {
        bch.iter_batched_ref(
            || input.clone(),
            |(a, b, c)| {
                backend
                    .h_poly(fr_slice_mut(a), fr_slice_mut(b), fr_slice_mut(c), log_n)
                    .unwrap()
            },
            BatchSize::LargeInput,
        )
    });
}
