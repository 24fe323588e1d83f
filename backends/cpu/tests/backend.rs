//! Construction, registration, identity, memory reporting and concurrent use of the backend.

use std::sync::Arc;

use bellows_backend_api::{
    backend::{MemoryPool, Msm, MsmJob, Ntt, NttConfig},
    builtin,
    layout::{fr_slice, fr_slice_mut, G1Jacobian},
    Backend, BackendConfig, Error,
};
use bellows_cpu::CpuBackend;
use blstrs::Scalar;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;

fn config(threads: Option<usize>, budget: Option<u64>) -> BackendConfig {
    let mut cfg = BackendConfig::default();
    cfg.threads = threads;
    cfg.memory_budget = budget;
    cfg
}

#[test]
fn registered_as_builtin_cpu() {
    let names: Vec<&str> = builtin::builtin_backends().iter().map(|b| b.name).collect();
    assert!(names.contains(&"cpu"), "built-in backends: {names:?}");
    let b = builtin::create_builtin("cpu", &config(Some(2), None)).unwrap();
    let info = b.info();
    assert_eq!(info.name, "cpu");
    assert_eq!(info.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(info.devices.len(), 1);
    assert_eq!(info.devices[0].name, "host (2 threads)");
    let caps = &info.capabilities;
    assert!(caps.ntt && caps.coset_ntt && caps.fused_h_poly && caps.msm_g1 && caps.msm_g2);
    assert!(caps.resident_bases && caps.concurrent);
    assert_eq!(caps.max_log_ntt, 32);
}

#[test]
fn thread_configuration() {
    let one = CpuBackend::with_config(&config(Some(1), None)).unwrap();
    assert_eq!(one.threads(), 1);
    let three = CpuBackend::with_config(&config(Some(3), None)).unwrap();
    assert_eq!(three.threads(), 3);
    assert_eq!(CpuBackend::new().threads(), rayon::current_num_threads());
    match CpuBackend::with_config(&config(Some(0), None)) {
        Err(Error::InvalidInput(_)) => {}
        other => panic!("threads = 0: expected InvalidInput, got {other:?}"),
    }
    // Same results whatever the pool.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let x: Vec<Scalar> = (0..3 << 15).map(|_| Scalar::random(&mut rng)).collect();
    let cfg = NttConfig::forward().with_coset(true);
    let mut r1 = x.clone();
    one.ntt(fr_slice_mut(&mut r1), 15, &cfg).unwrap();
    let mut r3 = x.clone();
    three.ntt(fr_slice_mut(&mut r3), 15, &cfg).unwrap();
    assert_eq!(r1, r3);
    assert_ne!(r1, x);
}

#[test]
fn memory_info_and_budget() {
    let b = CpuBackend::with_config(&config(None, Some(1 << 30))).unwrap();
    let m = b.memory_info().unwrap();
    assert_eq!(m.budget, Some(1 << 30));
    if std::path::Path::new("/proc/meminfo").exists() {
        assert!(m.total > 0 && m.free <= m.total);
        assert_eq!(b.info().devices[0].memory_total, m.total);
    }
    b.set_memory_budget(Some(12345)).unwrap();
    assert_eq!(b.memory_info().unwrap().budget, Some(12345));
    b.set_memory_budget(None).unwrap();
    assert_eq!(b.memory_info().unwrap().budget, None);
    b.trim().unwrap();
    let x = [0u8; 16];
    // SAFETY: the buffer outlives the pin/unpin pair; pinning is a no-op on the host.
    unsafe {
        assert!(!b.pin_host(x.as_ptr(), x.len()).unwrap());
        b.unpin_host(x.as_ptr()).unwrap();
    }
}

#[test]
fn concurrent_calls_agree() {
    let b = Arc::new(CpuBackend::new());
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    let bases: Vec<blstrs::G1Affine> = (0..200)
        .map(|_| blstrs::G1Projective::random(&mut rng).to_affine())
        .collect();
    let scalars: Vec<Scalar> = (0..200).map(|_| Scalar::random(&mut rng)).collect();
    let want_msm = bases
        .iter()
        .zip(&scalars)
        .fold(blstrs::G1Projective::identity(), |acc, (p, k)| acc + *p * k);
    let h = b.load_bases_g1(Arc::new(bases)).unwrap();
    let x: Vec<Scalar> = (0..1 << 12).map(|_| Scalar::random(&mut rng)).collect();
    let mut want_ntt = x.clone();
    b.ntt(fr_slice_mut(&mut want_ntt), 12, &NttConfig::forward())
        .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..3 {
                    let mut v = x.clone();
                    b.ntt(fr_slice_mut(&mut v), 12, &NttConfig::forward())
                        .unwrap();
                    assert_eq!(v, want_ntt);
                    let mut out = [G1Jacobian::default()];
                    b.msm_g1(h, &[MsmJob::new(0, fr_slice(&scalars))], &mut out)
                        .unwrap();
                    assert_eq!(blstrs::G1Projective::from(out[0]), want_msm);
                }
            });
        }
    });
}
