//! The fused Groth16 quotient, 2^12 … 2^20 (three vectors in, h out).
//!
//! `cargo bench -p bellows-cpu --bench h_poly`

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::time::Duration;

use bellows_core::{backend::Ntt, layout::fr_slice_mut};
use bellows_cpu::CpuBackend;
use blstrs::Scalar;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion};
use ff::Field;
use rand::SeedableRng;

fn random(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

fn h_poly(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let mut group = c.benchmark_group("h_poly");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for log_n in (12..=20u32).step_by(2) {
        let n = 1usize << log_n;
        let input = (random(n, 1), random(n, 2), random(n, 3));
        group.bench_with_input(BenchmarkId::from_parameter(log_n), &log_n, |bch, &log_n| {
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
    group.finish();
}

criterion_group!(benches, h_poly);
criterion_main!(benches);
