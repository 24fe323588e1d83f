//! MSM of the CPU backend against a naive sum of scalar multiplications, with edge cases, and
//! the life cycle of resident-bases handles.

use std::sync::Arc;

use bellows_backend_api::{
    backend::{BasesHandle, Group, Msm, MsmJob, SharedPoints},
    layout::{fr_slice, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error,
};
use bellows_cpu::CpuBackend;
use blstrs::{G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Group as _};
use rand::SeedableRng;

// The benches' points (R + i·S) and random stream.
#[path = "../benches/common/mod.rs"]
mod common;
use common::{points, Rng};

fn g1_points(n: usize, rng: &mut Rng) -> Vec<blstrs::G1Affine> {
    points::<G1Projective>(n, rng)
}

fn g2_points(n: usize, rng: &mut Rng) -> Vec<blstrs::G2Affine> {
    points::<G2Projective>(n, rng)
}

fn naive_g1(b: &[blstrs::G1Affine], s: &[Scalar]) -> G1Projective {
    b.iter()
        .zip(s)
        .fold(G1Projective::identity(), |acc, (p, k)| acc + *p * k)
}

fn naive_g2(b: &[blstrs::G2Affine], s: &[Scalar]) -> G2Projective {
    b.iter()
        .zip(s)
        .fold(G2Projective::identity(), |acc, (p, k)| acc + *p * k)
}

fn shared_g1(v: Vec<blstrs::G1Affine>) -> SharedPoints<G1Affine> {
    Arc::new(v)
}

fn shared_g2(v: Vec<blstrs::G2Affine>) -> SharedPoints<G2Affine> {
    Arc::new(v)
}

/// Scalar patterns that stress Pippenger's windows and edge cases.
fn scalar_cases(n: usize, rng: &mut Rng) -> Vec<(&'static str, Vec<Scalar>)> {
    let random: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    let mut mixed = random.clone();
    for (i, s) in mixed.iter_mut().enumerate() {
        match i % 5 {
            0 => *s = Scalar::ZERO,
            1 => *s = -Scalar::ONE, // r − 1
            2 => *s = Scalar::ONE,
            _ => {}
        }
    }
    vec![
        ("random", random),
        ("zeros", vec![Scalar::ZERO; n]),
        ("r-1", vec![-Scalar::ONE; n]),
        ("all equal", vec![Scalar::from(0xdead_beef_u64); n]),
        ("mixed", mixed),
    ]
}

/// Asserts `msm(s) == naive(s)` for every scalar case of every size in `sizes`.
fn each_case<T: PartialEq + std::fmt::Debug>(
    sizes: &[usize],
    rng: &mut Rng,
    msm: impl Fn(&[Scalar]) -> T,
    naive: impl Fn(&[Scalar]) -> T,
) {
    for &n in sizes {
        for (name, s) in scalar_cases(n, rng) {
            assert_eq!(msm(&s), naive(&s), "n={n} {name}");
        }
    }
}

fn run_g1(backend: &CpuBackend, h: BasesHandle, start: usize, s: &[Scalar]) -> G1Projective {
    let (job, mut out) = ([MsmJob::new(start, fr_slice(s))], [G1Jacobian::default()]);
    backend.msm_g1(h, &job, &mut out).unwrap();
    out[0].into()
}

fn run_g2(backend: &CpuBackend, h: BasesHandle, start: usize, s: &[Scalar]) -> G2Projective {
    let (job, mut out) = ([MsmJob::new(start, fr_slice(s))], [G2Jacobian::default()]);
    backend.msm_g2(h, &job, &mut out).unwrap();
    out[0].into()
}

#[test]
fn g1_matches_naive_around_power_of_two_sizes() {
    let backend = CpuBackend::new();
    let mut rng = Rng::seed_from_u64(1);
    let max = 4097;
    let mut bases = g1_points(max, &mut rng);
    bases[3] = blstrs::G1Affine::identity(); // identity points
    bases[100] = blstrs::G1Affine::identity();
    bases[7] = bases[5]; // repeated points
    bases[8] = bases[5];
    bases[4000] = bases[6];
    let h = backend.load_bases_g1(shared_g1(bases.clone())).unwrap();
    assert_eq!(h.len, max as u64);
    assert_eq!(h.group, Group::G1);
    let msm = |s: &[Scalar]| run_g1(&backend, h, 0, s);
    let naive = |s: &[Scalar]| naive_g1(&bases[..s.len()], s);
    each_case(
        &[0, 1, 2, 3, 31, 32, 33, 255, 256, 257],
        &mut rng,
        msm,
        naive,
    );
    // Around host_msm's per-thread chunk boundary (2^12).
    for n in [4095usize, 4096, 4097] {
        let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut rng)).collect();
        assert_eq!(
            run_g1(&backend, h, 0, &s),
            naive_g1(&bases[..n], &s),
            "n={n}"
        );
    }
    // An offset range.
    let s: Vec<Scalar> = (0..40).map(|_| Scalar::random(&mut rng)).collect();
    assert_eq!(run_g1(&backend, h, 4057, &s), naive_g1(&bases[4057..], &s));
}

#[test]
fn g1_one_point_and_identity_only() {
    let backend = CpuBackend::new();
    let gen = blstrs::G1Affine::generator();
    let h = backend.load_bases_g1(shared_g1(vec![gen])).unwrap();
    let k = Scalar::from(5u64);
    assert_eq!(run_g1(&backend, h, 0, &[k]), G1Projective::generator() * k);
    assert_eq!(
        run_g1(&backend, h, 0, &[-Scalar::ONE]),
        -G1Projective::generator()
    );
    let empty = run_g1(&backend, h, 1, &[]);
    assert!(
        bool::from(empty.is_identity()),
        "empty job gives the identity"
    );
    let hid = backend
        .load_bases_g1(shared_g1(vec![blstrs::G1Affine::identity(); 10]))
        .unwrap();
    let s = vec![Scalar::from(3u64); 10];
    assert!(bool::from(run_g1(&backend, hid, 0, &s).is_identity()));
}

#[test]
fn g2_matches_naive() {
    let backend = CpuBackend::new();
    let mut rng = Rng::seed_from_u64(2);
    let mut bases = g2_points(129, &mut rng);
    bases[2] = blstrs::G2Affine::identity();
    bases[9] = bases[4];
    let h = backend.load_bases_g2(shared_g2(bases.clone())).unwrap();
    assert_eq!(h.group, Group::G2);
    let msm = |s: &[Scalar]| run_g2(&backend, h, 0, s);
    let naive = |s: &[Scalar]| naive_g2(&bases[..s.len()], s);
    each_case(&[0, 1, 2, 7, 8, 9, 63, 64, 65, 129], &mut rng, msm, naive);
}

#[test]
fn batches_of_jobs_fill_each_output() {
    let backend = CpuBackend::new();
    let mut rng = Rng::seed_from_u64(3);
    let b1 = g1_points(300, &mut rng);
    let b2 = g2_points(40, &mut rng);
    let h1 = backend.load_bases_g1(shared_g1(b1.clone())).unwrap();
    let h2 = backend.load_bases_g2(shared_g2(b2.clone())).unwrap();
    let s: Vec<Scalar> = (0..300).map(|_| Scalar::random(&mut rng)).collect();
    let jobs = [
        MsmJob::new(0, fr_slice(&s[..300])),
        MsmJob::new(10, fr_slice(&s[..50])),
        MsmJob::new(299, fr_slice(&s[..1])),
        MsmJob::new(300, &[]),
    ];
    let mut out = vec![G1Jacobian::default(); 4];
    backend.msm_g1(h1, &jobs, &mut out).unwrap();
    let got: Vec<G1Projective> = out.iter().map(|&p| p.into()).collect();
    assert_eq!(got[0], naive_g1(&b1, &s));
    assert_eq!(got[1], naive_g1(&b1[10..60], &s[..50]));
    assert_eq!(got[2], naive_g1(&b1[299..], &s[..1]));
    assert!(bool::from(got[3].is_identity()));
    let jobs = [
        MsmJob::new(0, fr_slice(&s[..40])),
        MsmJob::new(20, fr_slice(&s[..20])),
    ];
    let mut out = vec![G2Jacobian::default(); 2];
    backend.msm_g2(h2, &jobs, &mut out).unwrap();
    assert_eq!(G2Projective::from(out[0]), naive_g2(&b2, &s[..40]));
    assert_eq!(G2Projective::from(out[1]), naive_g2(&b2[20..], &s[..20]));
    // No jobs, no outputs.
    backend.msm_g1(h1, &[], &mut []).unwrap();
}

fn assert_invalid<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    match r {
        Err(Error::InvalidInput(msg)) => assert!(!msg.is_empty()),
        other => panic!("{what}: expected InvalidInput, got {other:?}"),
    }
}

#[test]
fn handles_are_reused_freed_and_checked() {
    let backend = CpuBackend::new();
    let mut rng = Rng::seed_from_u64(4);
    let bases = g1_points(64, &mut rng);
    let shared = shared_g1(bases.clone());
    let h = backend.load_bases_g1(shared.clone()).unwrap();
    // Zero-copy: the backend holds the caller's allocation.
    assert_eq!(Arc::strong_count(&shared), 2);
    let h_again = backend.load_bases_g1(shared.clone()).unwrap();
    assert_ne!(h.id, h_again.id);

    // Reuse: many calls on one handle, same answers.
    let s: Vec<Scalar> = (0..64).map(|_| Scalar::random(&mut rng)).collect();
    let want = naive_g1(&bases, &s);
    for _ in 0..3 {
        assert_eq!(run_g1(&backend, h, 0, &s), want);
    }

    let sc = fr_slice(&s);
    // Out of range, overflowing range.
    let mut out = [G1Jacobian::default()];
    assert_invalid(
        backend.msm_g1(h, &[MsmJob::new(1, sc)], &mut out),
        "range past the end",
    );
    assert_invalid(
        backend.msm_g1(h, &[MsmJob::new(usize::MAX, sc)], &mut out),
        "overflowing range",
    );
    // Output slots ≠ jobs.
    let mut two = [G1Jacobian::default(); 2];
    assert_invalid(
        backend.msm_g1(h, &[MsmJob::new(0, sc)], &mut two),
        "too many outputs",
    );
    assert_invalid(
        backend.msm_g1(h, &[MsmJob::new(0, sc)], &mut []),
        "too few outputs",
    );
    // Wrong group, and a forged length.
    let mut out2 = [G2Jacobian::default()];
    assert_invalid(backend.msm_g2(h, &[], &mut []), "G1 handle given to msm_g2");
    let forged_group = BasesHandle {
        group: Group::G2,
        ..h
    };
    assert_invalid(
        backend.msm_g2(forged_group, &[MsmJob::new(0, &sc[..1])], &mut out2),
        "forged group",
    );
    let forged_len = BasesHandle { len: 1000, ..h };
    assert_invalid(
        backend.msm_g1(forged_len, &[MsmJob::new(0, &sc[..1])], &mut out),
        "forged length",
    );
    let unknown = BasesHandle { id: 987_654, ..h };
    assert_invalid(backend.msm_g1(unknown, &[], &mut []), "unknown handle");

    // Free: the handle is gone, the other one still works, double free fails.
    backend.free_bases(h).unwrap();
    assert_invalid(
        backend.msm_g1(h, &[MsmJob::new(0, sc)], &mut out),
        "freed handle",
    );
    assert_invalid(backend.free_bases(h), "double free");
    assert_eq!(run_g1(&backend, h_again, 0, &s), want);
    backend.free_bases(h_again).unwrap();
    assert_eq!(
        Arc::strong_count(&shared),
        1,
        "freeing drops the backend's reference"
    );

    // G2 handles: freeing through a G1-claiming handle is refused.
    let g2 = backend
        .load_bases_g2(shared_g2(g2_points(3, &mut rng)))
        .unwrap();
    assert_invalid(
        backend.msm_g1(g2, &[], &mut []),
        "G2 handle given to msm_g1",
    );
    assert_invalid(
        backend.free_bases(BasesHandle {
            group: Group::G1,
            ..g2
        }),
        "free with wrong group",
    );
    backend.free_bases(g2).unwrap();
}

#[test]
fn density_jobs_use_the_set_bits_only() {
    let mut rng = Rng::seed_from_u64(77);
    let cpu = CpuBackend::new();
    let b1 = Arc::new(g1_points(150, &mut rng));
    let b2 = Arc::new(g2_points(40, &mut rng));
    let h1 = cpu
        .load_bases_g1(b1.clone() as SharedPoints<G1Affine>)
        .unwrap();
    let h2 = cpu
        .load_bases_g2(b2.clone() as SharedPoints<G2Affine>)
        .unwrap();
    let sc: Vec<Scalar> = (0..130).map(|_| Scalar::random(&mut rng)).collect();
    // Every third scalar, and scalar 129 (the last word's top used bit).
    let mut bits = vec![0u64; 3];
    for i in (0..130).step_by(3).chain([129]) {
        bits[i / 64] |= 1 << (i % 64);
    }
    let used: Vec<Scalar> = (0..130)
        .filter(|i| i % 3 == 0 || *i == 129)
        .map(|i| sc[i])
        .collect();
    let mut o = [G1Jacobian::default()];
    cpu.msm_g1(
        h1,
        &[MsmJob::new(5, fr_slice(&sc)).with_density(&bits)],
        &mut o,
    )
    .unwrap();
    assert_eq!(
        G1Projective::from(o[0]),
        naive_g1(&b1[5..5 + used.len()], &used)
    );
    // G2, fewer scalars: the first 30, through the same kind of bitmap.
    let bits2 = [bits[0] & ((1 << 30) - 1)];
    let used2: Vec<Scalar> = (0..30).step_by(3).map(|i| sc[i]).collect();
    let mut o2 = [G2Jacobian::default()];
    cpu.msm_g2(
        h2,
        &[MsmJob::new(0, fr_slice(&sc[..30])).with_density(&bits2)],
        &mut o2,
    )
    .unwrap();
    assert_eq!(
        G2Projective::from(o2[0]),
        naive_g2(&b2[..used2.len()], &used2)
    );
    // All clear is the identity; a bitmap of the wrong length, or one reaching past the bases, is
    // an invalid-input error.
    cpu.msm_g1(
        h1,
        &[MsmJob::new(150, fr_slice(&sc)).with_density(&[0; 3])],
        &mut o,
    )
    .unwrap();
    assert!(bool::from(G1Projective::from(o[0]).is_identity()));
    for bad in [
        MsmJob::new(0, fr_slice(&sc)).with_density(&bits[..2]),
        MsmJob::new(150 - used.len() + 1, fr_slice(&sc)).with_density(&bits),
    ] {
        assert!(matches!(
            cpu.msm_g1(h1, &[bad], &mut o),
            Err(Error::InvalidInput(_))
        ));
    }
}
