//! NTTs and h_poly on the adapter against the CPU reference, exactly (the conformance suite
//! covers more; these are the quick ones that name the failing configuration), and the errors
//! of malformed shapes.

mod common;

use bellows_core::{
    backend::{Ntt, NttConfig},
    layout::Fr,
    Error,
};
use bellows_cpu::CpuBackend;

#[test]
fn every_configuration_matches_the_cpu() {
    let Some(b) = common::backend() else { return };
    let cpu = CpuBackend::new();
    for log_n in [0u32, 1, 2, 5, 9, 10, 13] {
        for cfg in NttConfig::all() {
            let batch = if log_n == 5 || log_n == 10 { 3 } else { 1 };
            let x = common::scalars(batch << log_n, log_n as u64 * 100 + batch as u64);
            let (mut want, mut got) = (x.clone(), x);
            cpu.ntt(&mut want, log_n, &cfg).unwrap();
            b.ntt(&mut got, log_n, &cfg).unwrap();
            assert!(want == got, "2^{log_n} × {batch}, {cfg:?}");
        }
    }
}

#[test]
fn h_poly_matches_the_cpu() {
    let Some(b) = common::backend() else { return };
    let cpu = CpuBackend::new();
    for (log_n, batch) in [(0u32, 1usize), (1, 1), (3, 2), (8, 1), (11, 2)] {
        let len = batch << log_n;
        let (a, bb, c) = (
            common::scalars(len, 1),
            common::scalars(len, 2),
            common::scalars(len, 3),
        );
        let (mut wa, mut wb, mut wc) = (a.clone(), bb.clone(), c.clone());
        cpu.h_poly(&mut wa, &mut wb, &mut wc, log_n).unwrap();
        let (mut ga, mut gb, mut gc) = (a, bb, c);
        b.h_poly(&mut ga, &mut gb, &mut gc, log_n).unwrap();
        assert!(wa == ga, "h_poly 2^{log_n} × {batch}");
    }
}

#[test]
fn malformed_shapes_are_invalid_input() {
    let Some(b) = common::backend() else { return };
    let mut three = vec![Fr::ONE; 3];
    assert!(matches!(
        b.ntt(&mut three, 1, &NttConfig::forward()),
        Err(Error::InvalidInput(_))
    ));
    let mut one = vec![Fr::ONE; 1];
    assert!(matches!(
        b.ntt(&mut one, 33, &NttConfig::forward()),
        Err(Error::InvalidInput(_))
    ));
    let (mut x, mut y, mut z) = (vec![Fr::ONE; 4], vec![Fr::ONE; 4], vec![Fr::ONE; 2]);
    assert!(matches!(
        b.h_poly(&mut x, &mut y, &mut z, 2),
        Err(Error::InvalidInput(_))
    ));
}

/// A transform larger than the adapter's largest storage binding is a clear error naming the
/// limit, before any device work; bases beyond the memory budget are `OutOfMemory`.
#[test]
fn jobs_too_large_for_the_adapter_are_clear_errors() {
    use bellows_core::{
        backend::{MemoryPool, Msm, SharedPoints},
        layout::G1Affine,
        Backend,
    };
    let Some(b) = common::backend() else { return };
    let max = b.info().capabilities.max_log_ntt;
    if max < 24 {
        let log_n = max + 1;
        let mut big = vec![Fr::default(); 1 << log_n];
        match b.ntt(&mut big, log_n, &NttConfig::forward()) {
            Err(Error::InvalidInput(m)) => assert!(m.contains("storage buffer"), "{m}"),
            other => panic!("2^{log_n} on an adapter of 2^{max}: {other:?}"),
        }
    }
    b.set_memory_budget(Some(1000)).unwrap();
    let pts: SharedPoints<G1Affine> = std::sync::Arc::new(vec![G1Affine::default(); 20]);
    assert!(matches!(
        b.load_bases_g1(pts),
        Err(Error::OutOfMemory { .. })
    ));
}

/// Buffers are kept across calls (device data, staging in and out): calls of falling and rising
/// sizes and batch counts on one backend, each against the CPU, with the default limb products
/// and the other ones (64-bit integers or 16-bit halves, see `common::other_products`).
#[test]
fn kept_buffers_serve_calls_of_every_size() {
    let Some(first) = common::backend() else {
        return;
    };
    for b in [Some(first), common::other_products()]
        .into_iter()
        .flatten()
    {
        let cpu = CpuBackend::new();
        for (log_n, batch) in [(12u32, 2usize), (4, 1), (10, 3), (12, 1), (0, 5), (11, 1)] {
            for cfg in [NttConfig::forward(), NttConfig::inverse().with_coset(true)] {
                let x = common::scalars(batch << log_n, 7000 + log_n as u64);
                let (mut want, mut got) = (x.clone(), x);
                cpu.ntt(&mut want, log_n, &cfg).unwrap();
                b.ntt(&mut got, log_n, &cfg).unwrap();
                assert!(
                    want == got,
                    "2^{log_n} × {batch}, {cfg:?}, int64 {}",
                    b.gpu().int64
                );
            }
        }
        // h_poly after the plain NTTs (it shares the data buffer).
        let log_n = 9;
        let (a, bb, c) = (
            common::scalars(1 << log_n, 1),
            common::scalars(1 << log_n, 2),
            common::scalars(1 << log_n, 3),
        );
        let (mut wa, mut wb, mut wc) = (a.clone(), bb.clone(), c.clone());
        let (mut ga, mut gb, mut gc) = (a, bb, c);
        cpu.h_poly(&mut wa, &mut wb, &mut wc, log_n).unwrap();
        b.h_poly(&mut ga, &mut gb, &mut gc, log_n).unwrap();
        assert!(wa == ga, "h_poly after NTTs, int64 {}", b.gpu().int64);
    }
}
