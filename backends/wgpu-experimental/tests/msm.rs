//! G1 and G2 MSMs on the adapter against the CPU reference (exactly, on affine encodings), at
//! sizes around window boundaries and with the inputs that stress the bucket sort: equal
//! scalars (one huge bucket per window), zeros, ones, r − 1, identity and repeated points,
//! density jobs, sub-ranges of one handle; and misuse answered with invalid-input errors.

mod common;

use std::sync::Arc;

use bellows_core::{
    backend::{Msm, MsmJob, SharedPoints},
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error,
};
use bellows_cpu::CpuBackend;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn scalars(n: usize, seed: u64) -> Vec<Fr> {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| blstrs::Scalar::random(&mut r).into())
        .collect()
}

fn g1_points(n: usize) -> Vec<G1Affine> {
    let mut r = ChaCha20Rng::seed_from_u64(77);
    let p: Vec<blstrs::G1Projective> = (0..n)
        .map(|_| blstrs::G1Projective::random(&mut r))
        .collect();
    let mut a = vec![blstrs::G1Affine::default(); n];
    blstrs::G1Projective::batch_normalize(&p, &mut a);
    a.into_iter().map(G1Affine::from).collect()
}

fn g2_points(n: usize) -> Vec<G2Affine> {
    let mut r = ChaCha20Rng::seed_from_u64(78);
    let p: Vec<blstrs::G2Projective> = (0..n)
        .map(|_| blstrs::G2Projective::random(&mut r))
        .collect();
    let mut a = vec![blstrs::G2Affine::default(); n];
    blstrs::G2Projective::batch_normalize(&p, &mut a);
    a.into_iter().map(G2Affine::from).collect()
}

fn same_g1(a: &[G1Jacobian], b: &[G1Jacobian]) -> bool {
    a.iter().zip(b).all(|(x, y)| {
        blstrs::G1Projective::from(*x).to_affine() == blstrs::G1Projective::from(*y).to_affine()
    })
}

#[test]
fn g1_matches_the_cpu() {
    let Some(b) = common::backend() else { return };
    let cpu = CpuBackend::new();
    let n = 1100;
    let mut pts = g1_points(n);
    pts[7] = G1Affine::default(); // an identity point
    pts[9] = pts[8]; // a repeated point
    let shared: SharedPoints<G1Affine> = Arc::new(pts);
    let (hb, hc) = (
        b.load_bases_g1(shared.clone()).unwrap(),
        cpu.load_bases_g1(shared).unwrap(),
    );
    let r = scalars(n, 1);
    let eq = vec![r[0]; n];
    let mut mixed = scalars(n, 2);
    for (i, s) in mixed.iter_mut().enumerate() {
        match i % 5 {
            0 => *s = Fr::default(),
            1 => *s = Fr::ONE,
            2 => *s = Fr::from(-blstrs::Scalar::ONE),
            _ => {}
        }
    }
    let density: Vec<u64> = (0..n.div_ceil(64) as u64)
        .map(|w| 0x9e37_79b9_7f4a_7c15u64.rotate_left(w as u32))
        .collect();
    let mut density = density;
    if n % 64 != 0 {
        *density.last_mut().unwrap() &= (1u64 << (n % 64)) - 1;
    }
    let used = density
        .iter()
        .map(|w| w.count_ones() as usize)
        .sum::<usize>();
    let jobs = [
        MsmJob::new(0, &r[..1]),
        MsmJob::new(0, &r[..2]),
        MsmJob::new(3, &r[..33]),
        MsmJob::new(0, &r),
        MsmJob::new(0, &eq),
        MsmJob::new(0, &mixed),
        MsmJob::new(n - used, &r).with_density(&density),
        MsmJob::new(n, &[]),
    ];
    let (mut want, mut got) = (
        vec![G1Jacobian::default(); jobs.len()],
        vec![G1Jacobian::default(); jobs.len()],
    );
    cpu.msm_g1(hc, &jobs, &mut want).unwrap();
    b.msm_g1(hb, &jobs, &mut got).unwrap();
    for k in 0..jobs.len() {
        assert!(same_g1(&want[k..=k], &got[k..=k]), "job {k}");
    }
    // Misuse: out of range, wrong group, freed handle.
    let mut one = [G1Jacobian::default()];
    assert!(matches!(
        b.msm_g1(hb, &[MsmJob::new(n, &r[..1])], &mut one),
        Err(Error::InvalidInput(_))
    ));
    let mut two = [G2Jacobian::default()];
    assert!(matches!(
        b.msm_g2(hb, &[MsmJob::new(0, &r[..1])], &mut two),
        Err(Error::InvalidInput(_) | Error::Unsupported { .. })
    ));
    b.free_bases(hb).unwrap();
    assert!(matches!(
        b.msm_g1(hb, &[MsmJob::new(0, &r[..1])], &mut one),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(b.free_bases(hb), Err(Error::InvalidInput(_))));
}

/// Buckets that span thousands of accumulation chunks: every scalar equal (one bucket of n
/// entries per window), and scalars whose top window holds only carries (c = 15: bit 255 and the
/// carry, about n/2 entries in one bucket).
#[test]
fn huge_buckets_match_the_cpu() {
    let Some(b) = common::backend() else { return };
    let cpu = CpuBackend::new();
    let n = 1 << 13;
    let shared: SharedPoints<G1Affine> = Arc::new(g1_points(n));
    let (hb, hc) = (
        b.load_bases_g1(shared.clone()).unwrap(),
        cpu.load_bases_g1(shared).unwrap(),
    );
    let eq = vec![scalars(1, 9)[0]; n];
    let r = scalars(n, 10);
    for (what, sc) in [("all equal", &eq), ("random", &r)] {
        let jobs = [MsmJob::new(0, sc)];
        let (mut want, mut got) = ([G1Jacobian::default()], [G1Jacobian::default()]);
        cpu.msm_g1(hc, &jobs, &mut want).unwrap();
        b.msm_g1(hb, &jobs, &mut got).unwrap();
        assert!(same_g1(&want, &got), "{what}");
    }
}

#[test]
fn g2_matches_the_cpu() {
    let Some(b) = common::g2_backend() else {
        return;
    };
    let cpu = CpuBackend::new();
    let n = 70;
    let mut pts = g2_points(n);
    pts[3] = G2Affine::default();
    let shared: SharedPoints<G2Affine> = Arc::new(pts);
    let (hb, hc) = (
        b.load_bases_g2(shared.clone()).unwrap(),
        cpu.load_bases_g2(shared).unwrap(),
    );
    let r = scalars(n, 3);
    let eq = vec![r[1]; n];
    let jobs = [
        MsmJob::new(0, &r),
        MsmJob::new(5, &r[..17]),
        MsmJob::new(0, &eq),
    ];
    let (mut want, mut got) = (
        vec![G2Jacobian::default(); 3],
        vec![G2Jacobian::default(); 3],
    );
    cpu.msm_g2(hc, &jobs, &mut want).unwrap();
    b.msm_g2(hb, &jobs, &mut got).unwrap();
    for k in 0..3 {
        assert_eq!(
            blstrs::G2Projective::from(want[k]).to_affine(),
            blstrs::G2Projective::from(got[k]).to_affine(),
            "job {k}"
        );
    }
}

/// The MSM with the other limb products than the default's (see `common::other_products`), and
/// calls of falling and rising sizes on one backend (its scratch buffers are kept across calls).
/// Where the other products are the 64-bit ones on a software adapter only with
/// `BELLOWS_WGPU_INT64_MSM=1`: on lavapipe a second variant of the MSM kernels costs about 110 s
/// of LLVM compiling on a machine whose Mesa shader cache is cold (as CI's is); the field and
/// curve code they share is checked in tests/arith.rs either way, and the GPU runs them.
#[test]
fn g1_with_the_other_products_matches_the_cpu() {
    let Some(b) = common::other_products() else {
        return;
    };
    if b.gpu().int64
        && b.gpu().device_type == wgpu::DeviceType::Cpu
        && !std::env::var("BELLOWS_WGPU_INT64_MSM").is_ok_and(|v| v == "1")
    {
        eprintln!("SKIPPED: 64-bit MSM kernels on a software adapter (BELLOWS_WGPU_INT64_MSM=1 runs them)");
        return;
    }
    let cpu = CpuBackend::new();
    let n = 700;
    let shared: SharedPoints<G1Affine> = Arc::new(g1_points(n));
    let (hb, hc) = (
        b.load_bases_g1(shared.clone()).unwrap(),
        cpu.load_bases_g1(shared).unwrap(),
    );
    let r = scalars(n, 9);
    for len in [n, 40, 1, 300, n] {
        let job = [MsmJob::new(n - len, &r[..len])];
        let (mut want, mut got) = ([G1Jacobian::default()], [G1Jacobian::default()]);
        cpu.msm_g1(hc, &job, &mut want).unwrap();
        b.msm_g1(hb, &job, &mut got).unwrap();
        assert!(same_g1(&want, &got), "{len} scalars");
    }
}
