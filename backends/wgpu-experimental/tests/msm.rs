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

/// The MSM's options (`msm-window`, `msm-segment`, `msm-chunk`, `msm-threads`, `msm-reduce`) at
/// values other than the defaults, which change the passes' layout but not the kernels (no
/// second compilation on lavapipe): windows of 5 and 9 bits, segments of 4 and 64 buckets, short
/// chunks (equal scalars then span more than 32 chunks: the workgroup fix-up), tree steps of 2
/// and 3 inputs. With the per-pass profile on, timed by device timestamps where the adapter
/// offers them and on the host: every phase named, in order, none negative.
#[test]
fn g1_with_tuned_options_matches_the_cpu() {
    let Some(first) = common::backend() else {
        return;
    };
    drop(first);
    let cpu = CpuBackend::new();
    let n = 1100;
    let shared: SharedPoints<G1Affine> = Arc::new(g1_points(n));
    let hc = cpu.load_bases_g1(shared.clone()).unwrap();
    let r = scalars(n, 21);
    let eq = vec![r[5]; n];
    let variants: [&[(&str, &str)]; 2] = [
        &[
            ("msm-window", "5"),
            ("msm-segment", "4"),
            ("msm-chunk", "16"),
            ("msm-reduce", "3"),
            ("msm-profile", "on"),
        ],
        &[
            ("msm-window", "9"),
            ("msm-segment", "64"),
            ("msm-threads", "1024"),
            ("msm-reduce", "2"),
            ("msm-profile", "host"),
        ],
    ];
    for opts in variants {
        let mut cfg = bellows_core::BackendConfig::new();
        for (k, v) in opts {
            cfg = cfg.option(*k, *v);
        }
        let b = bellows_wgpu::WgpuBackend::with_config(&cfg).unwrap();
        let hb = b.load_bases_g1(shared.clone()).unwrap();
        for (what, sc) in [("random", &r), ("all equal", &eq)] {
            let jobs = [MsmJob::new(0, sc), MsmJob::new(7, &sc[..300])];
            let (mut want, mut got) = (
                vec![G1Jacobian::default(); 2],
                vec![G1Jacobian::default(); 2],
            );
            cpu.msm_g1(hc, &jobs, &mut want).unwrap();
            b.msm_g1(hb, &jobs, &mut got).unwrap();
            assert!(same_g1(&want, &got), "{opts:?}: {what}");
        }
        let profile = b.msm_engine().last_profile();
        let names: Vec<&str> = profile.iter().map(|p| p.0).collect();
        assert_eq!(
            names,
            [
                "upload+clear",
                "histogram",
                "scan",
                "scatter",
                "accumulate",
                "fixup",
                "window",
                "reduce",
                "jacobian+copy",
                "device-sum",
                "host-prep",
                "host-upload",
                "host-record",
                "submit+wait+read",
                "horner",
                "total"
            ],
            "{opts:?}"
        );
        assert!(
            profile.iter().all(|p| p.1.is_finite() && p.1 >= 0.0),
            "{profile:?}"
        );
        let get = |k: &str| profile.iter().find(|p| p.0 == k).map_or(0.0, |p| p.1);
        assert!(get("total") >= get("submit+wait+read"), "{profile:?}");
        assert!(get("device-sum") > 0.0, "{profile:?}");
        if opts.contains(&("msm-profile", "host")) {
            // Timed on the host, the phases lie within the call.
            assert!(get("device-sum") <= get("total"), "{profile:?}");
        }
    }
}

/// The MSM options that change the kernels' text: `msm-wg` (threads per workgroup) at 128 and
/// 32, and `msm-arith=straight` (straight-line field multiplication). Each is another
/// compilation of every MSM kernel, so on a software adapter (about 110 s each with a cold Mesa
/// cache, more for the straight-line code) only with `BELLOWS_WGPU_MSM_VARIANTS=1`.
#[test]
fn g1_with_other_kernel_variants_matches_the_cpu() {
    let Some(first) = common::backend() else {
        return;
    };
    if first.gpu().device_type == wgpu::DeviceType::Cpu
        && !std::env::var("BELLOWS_WGPU_MSM_VARIANTS").is_ok_and(|v| v == "1")
    {
        eprintln!("SKIPPED: other MSM kernel variants on a software adapter (BELLOWS_WGPU_MSM_VARIANTS=1 runs them)");
        return;
    }
    drop(first);
    let cpu = CpuBackend::new();
    let n = 600;
    let shared: SharedPoints<G1Affine> = Arc::new(g1_points(n));
    let hc = cpu.load_bases_g1(shared.clone()).unwrap();
    let r = scalars(n, 22);
    let only = std::env::var("BELLOWS_WGPU_MSM_VARIANT").ok();
    for (k, v) in [
        ("msm-wg", "128"),
        ("msm-wg", "32"),
        ("msm-arith", "straight"),
    ] {
        if only.as_deref().is_some_and(|o| o != format!("{k}={v}")) {
            continue;
        }
        let t = std::time::Instant::now();
        let b = bellows_wgpu::WgpuBackend::with_config(
            &bellows_core::BackendConfig::new().option(k, v),
        )
        .unwrap();
        match k {
            "msm-wg" => assert_eq!(b.gpu().msm_wg.to_string(), v),
            _ => assert!(b.gpu().msm_straight),
        }
        let hb = b.load_bases_g1(shared.clone()).unwrap();
        let jobs = [MsmJob::new(0, &r)];
        let (mut want, mut got) = ([G1Jacobian::default()], [G1Jacobian::default()]);
        cpu.msm_g1(hc, &jobs, &mut want).unwrap();
        b.msm_g1(hb, &jobs, &mut got).unwrap();
        assert!(same_g1(&want, &got), "{k}={v}");
        eprintln!(
            "{k}={v}: {:.1} s (compiling included)",
            t.elapsed().as_secs_f64()
        );
    }
}
