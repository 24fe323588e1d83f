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

mod common;

use std::time::Duration;

use bellows_backend_api::{
    backend::{Ntt, NttConfig},
    layout::fr_slice_mut,
};
use bellows_cpu::CpuBackend;
use bellperson::{domain::EvaluationDomain, gpu::LockedFftKernel};
use blstrs::Scalar;
use common::random;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use ec_gpu_gen::threadpool::Worker;

fn domain(v: Vec<Scalar>) -> EvaluationDomain<Scalar> {
    EvaluationDomain::from_coeffs(v).expect("power-of-two size within the two-adicity")
}

fn fft(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let worker = Worker::new();
    let mut group = common::group(c, "fft", Duration::from_secs(2));
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
    let mut group = common::group(c, "h", Duration::from_secs(3));
    for log_n in (12..=20u32).step_by(2) {
        let input = common::h_poly_input(log_n);
        let id = BenchmarkId::new("bellows", log_n);
        common::bench_h_poly(&mut group, id, &backend, log_n, &input);
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
