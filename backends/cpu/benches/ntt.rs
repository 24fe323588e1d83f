//! NTT throughput: forward natural-order and forward coset transforms, 2^10 … 2^20.
//!
//! `cargo bench -p bellows-cpu --bench ntt`

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::time::Duration;

use bellows_core::{
    backend::{Ntt, NttConfig},
    layout::fr_slice_mut,
};
use bellows_cpu::CpuBackend;
use blstrs::Scalar;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ff::Field;
use rand::SeedableRng;

fn random(n: usize) -> Vec<Scalar> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

fn ntt(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let mut group = c.benchmark_group("ntt");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for log_n in (10..=20u32).step_by(2) {
        let mut data = random(1 << log_n);
        for (name, cfg) in [
            ("forward", NttConfig::forward()),
            ("coset", NttConfig::forward().with_coset(true)),
        ] {
            group.bench_with_input(BenchmarkId::new(name, log_n), &log_n, |b, &log_n| {
                b.iter(|| backend.ntt(fr_slice_mut(&mut data), log_n, &cfg).unwrap())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, ntt);
criterion_main!(benches);
