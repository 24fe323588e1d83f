//! Side by side with bellperson 0.27's CPU FFT (ec-gpu-gen's `fft_cpu`, driven by
//! `bellperson::domain::EvaluationDomain`) at the same sizes, on the same data:
//! - `fft/{bellows,bellperson}/log_n`: one forward transform, natural order;
//! - `h/{bellows,bellperson}/log_n`: the Groth16 quotient, i.e. our `h_poly` against the exact
//!   sequence of bellperson's prover (`ifft_many`, `coset_fft_many`, `mul_assign`, `sub_assign`,
//!   `divide_by_z_on_coset`, `icoset_fft`).
//!
//! `cargo bench -p bellows-cpu --bench vs_bellperson`

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::time::Duration;

use bellows_core::{
    backend::{Ntt, NttConfig},
    layout::fr_slice_mut,
};
use bellows_cpu::CpuBackend;
use bellperson::{domain::EvaluationDomain, gpu::LockedFftKernel};
use blstrs::Scalar;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use ec_gpu_gen::threadpool::Worker;
use ff::Field;
use rand::SeedableRng;

fn random(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

fn domain(v: Vec<Scalar>) -> EvaluationDomain<Scalar> {
    EvaluationDomain::from_coeffs(v).expect("power-of-two size within the two-adicity")
}

fn fft(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let worker = Worker::new();
    let mut group = c.benchmark_group("fft");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for log_n in (10..=20u32).step_by(2) {
        let x = random(1 << log_n, 1);
        let mut ours = x.clone();
        group.bench_with_input(BenchmarkId::new("bellows", log_n), &log_n, |b, &log_n| {
            b.iter(|| {
                backend
                    .ntt(fr_slice_mut(&mut ours), log_n, &NttConfig::forward())
                    .unwrap()
            })
        });
        let mut theirs = domain(x);
        group.bench_with_input(BenchmarkId::new("bellperson", log_n), &log_n, |b, _| {
            b.iter(|| {
                let mut kern: Option<LockedFftKernel<Scalar>> = None;
                theirs.fft(&worker, &mut kern).unwrap()
            })
        });
    }
    group.finish();
}

fn h(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let worker = Worker::new();
    let mut group = c.benchmark_group("h");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for log_n in (12..=20u32).step_by(2) {
        let n = 1usize << log_n;
        let input = (random(n, 1), random(n, 2), random(n, 3));
        group.bench_with_input(BenchmarkId::new("bellows", log_n), &log_n, |bch, &log_n| {
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
        group.bench_with_input(BenchmarkId::new("bellperson", log_n), &log_n, |bch, _| {
            bch.iter_batched(
                || {
                    (
                        domain(input.0.clone()),
                        domain(input.1.clone()),
                        domain(input.2.clone()),
                    )
                },
                |(mut a, mut b, mut c)| {
                    let mut kern: Option<LockedFftKernel<Scalar>> = None;
                    EvaluationDomain::ifft_many(&mut [&mut a, &mut b, &mut c], &worker, &mut kern)
                        .unwrap();
                    EvaluationDomain::coset_fft_many(
                        &mut [&mut a, &mut b, &mut c],
                        &worker,
                        &mut kern,
                    )
                    .unwrap();
                    a.mul_assign(&worker, &b);
                    drop(b);
                    a.sub_assign(&worker, &c);
                    drop(c);
                    a.divide_by_z_on_coset(&worker);
                    a.icoset_fft(&worker, &mut kern).unwrap();
                    a
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, fft, h);
criterion_main!(benches);
