//! NTT throughput: forward natural-order and forward coset transforms, 2^10 … 2^20.
//!
//! `cargo bench -p bellows-cpu --bench ntt`

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod common;

use std::time::Duration;

use bellows_backend_api::{
    backend::{Ntt, NttConfig},
    layout::fr_slice_mut,
};
use bellows_cpu::CpuBackend;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn ntt(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let mut group = common::group(c, "ntt", Duration::from_secs(2));
    for log_n in (10..=20u32).step_by(2) {
        let mut data = common::random(1 << log_n, 1 << log_n);
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
