//! G1 and G2 MSMs on the adapter against the CPU reference (exactly, on affine encodings), at
//! sizes around window boundaries and with the inputs that stress the bucket sort: equal
//! scalars (one huge bucket per window), zeros, ones, r − 1, identity and repeated points,
//! density jobs, sub-ranges of one handle; and misuse answered with invalid-input errors.

mod common;

use std::sync::Arc;

use bellows_core::{
    backend::{BasesHandle, Msm, MsmJob, SharedPoints},
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error,
};
use bellows_cpu::CpuBackend;
use bellows_wgpu::WgpuBackend;
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// `n` random points of the group of `P` from `seed`, in the layout's affine type `A`.
fn points<P, A>(n: usize, seed: u64) -> Vec<A>
where
    P: Curve + Group,
    P::AffineRepr: Copy + Default,
    A: From<P::AffineRepr>,
{
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    let p: Vec<P> = (0..n).map(|_| P::random(&mut r)).collect();
    let mut a = vec![P::AffineRepr::default(); n];
    P::batch_normalize(&p, &mut a);
    a.into_iter().map(A::from).collect()
}

fn g1_points(n: usize) -> Vec<G1Affine> {
    points::<blstrs::G1Projective, _>(n, 77)
}

fn g2_points(n: usize) -> Vec<G2Affine> {
    points::<blstrs::G2Projective, _>(n, 78)
}

/// `points` loaded on the adapter's backend `b` and on the CPU: (adapter's, CPU's) handles.
fn load_g1(b: &WgpuBackend, cpu: &CpuBackend, points: Vec<G1Affine>) -> (BasesHandle, BasesHandle) {
    let shared: SharedPoints<G1Affine> = Arc::new(points);
    let hc = cpu.load_bases_g1(shared.clone()).unwrap();
    (b.load_bases_g1(shared).unwrap(), hc)
}

/// The CPU reference for backends made in the test: `n` points loaded on the CPU backend (the
/// points, and the CPU's handle) and `n` random scalars from `seed`.
fn cpu_reference(
    n: usize,
    seed: u64,
) -> (CpuBackend, SharedPoints<G1Affine>, BasesHandle, Vec<Fr>) {
    let cpu = CpuBackend::new();
    let shared: SharedPoints<G1Affine> = Arc::new(g1_points(n));
    let hc = cpu.load_bases_g1(shared.clone()).unwrap();
    (cpu, shared, hc, common::scalars(n, seed))
}

/// Asserts that the G1 MSMs of `jobs` on the adapter (handle `hb`) and on the CPU (handle `hc`)
/// are the same points, job by job.
fn assert_g1_matches(
    (b, hb): (&WgpuBackend, BasesHandle),
    (cpu, hc): (&CpuBackend, BasesHandle),
    jobs: &[MsmJob<'_>],
    what: &str,
) {
    let mut want = vec![G1Jacobian::default(); jobs.len()];
    let mut got = want.clone();
    cpu.msm_g1(hc, jobs, &mut want).unwrap();
    b.msm_g1(hb, jobs, &mut got).unwrap();
    for k in 0..jobs.len() {
        assert!(same_g1(&want[k..=k], &got[k..=k]), "{what}: job {k}");
    }
}

/// Whether a software adapter skips what `what` names unless `var`=1 (each kernel variant costs
/// minutes of compiling there); says so when it does.
fn skipped_on_software(b: &WgpuBackend, var: &str, what: &str) -> bool {
    let skip =
        b.gpu().device_type == wgpu::DeviceType::Cpu && !std::env::var(var).is_ok_and(|v| v == "1");
    if skip {
        eprintln!("SKIPPED: {what} on a software adapter ({var}=1 runs them)");
    }
    skip
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
    let (hb, hc) = load_g1(&b, &cpu, pts);
    let r = common::scalars(n, 1);
    let eq = vec![r[0]; n];
    let mut mixed = common::scalars(n, 2);
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
    assert_g1_matches((&b, hb), (&cpu, hc), &jobs, "mixed jobs");
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
    let (hb, hc) = load_g1(&b, &cpu, g1_points(n));
    let eq = vec![common::scalars(1, 9)[0]; n];
    let r = common::scalars(n, 10);
    for (what, sc) in [("all equal", &eq), ("random", &r)] {
        assert_g1_matches((&b, hb), (&cpu, hc), &[MsmJob::new(0, sc)], what);
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
    let r = common::scalars(n, 3);
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
/// `BELLOWS_WGPU_INT64_MSM=1`: on lavapipe a second variant of the MSM kernels costs minutes of
/// LLVM compiling on a machine whose Mesa shader cache is cold (as CI's is); the field and
/// curve code they share is checked by the tools crate's tests/arith.rs either way, and the GPU
/// runs them.
#[test]
fn g1_with_the_other_products_matches_the_cpu() {
    let Some(b) = common::other_products() else {
        return;
    };
    if b.gpu().int64 && skipped_on_software(&b, "BELLOWS_WGPU_INT64_MSM", "64-bit MSM kernels") {
        return;
    }
    let cpu = CpuBackend::new();
    let n = 700;
    let (hb, hc) = load_g1(&b, &cpu, g1_points(n));
    let r = common::scalars(n, 9);
    for len in [n, 40, 1, 300, n] {
        let job = [MsmJob::new(n - len, &r[..len])];
        assert_g1_matches((&b, hb), (&cpu, hc), &job, &format!("{len} scalars"));
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
    let (cpu, shared, hc, r) = cpu_reference(1100, 21);
    let eq = vec![r[5]; r.len()];
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
            assert_g1_matches((&b, hb), (&cpu, hc), &jobs, &format!("{opts:?}: {what}"));
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
/// compilation of every MSM kernel, so on a software adapter (minutes each with a cold Mesa
/// cache, more for the straight-line code) only with `BELLOWS_WGPU_MSM_VARIANTS=1`.
#[test]
fn g1_with_other_kernel_variants_matches_the_cpu() {
    let Some(first) = common::backend() else {
        return;
    };
    let variants = "other MSM kernel variants";
    if skipped_on_software(&first, "BELLOWS_WGPU_MSM_VARIANTS", variants) {
        return;
    }
    drop(first);
    let (cpu, shared, hc, r) = cpu_reference(600, 22);
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
        assert_g1_matches(
            (&b, hb),
            (&cpu, hc),
            &[MsmJob::new(0, &r)],
            &format!("{k}={v}"),
        );
        eprintln!(
            "{k}={v}: {:.1} s (compiling included)",
            t.elapsed().as_secs_f64()
        );
    }
}
