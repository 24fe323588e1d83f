//! The fused Groth16 quotient, 2^12 … 2^20 (three vectors in, h out).
//!
//! `cargo bench -p bellows-cpu --bench h_poly`

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

mod common;

use std::time::Duration;

use bellows_cpu::CpuBackend;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};

fn h_poly(c: &mut Criterion) {
    let backend = CpuBackend::new();
    let mut group = common::group(c, "h_poly", Duration::from_secs(3));
    for log_n in (12..=20u32).step_by(2) {
        let input = common::h_poly_input(log_n);
        let id = BenchmarkId::from_parameter(log_n);
        common::bench_h_poly(&mut group, id, &backend, log_n, &input);
    }
    group.finish();
}

criterion_group!(benches, h_poly);
criterion_main!(benches);
