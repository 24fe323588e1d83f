//! `bellows-cuda-msm`: checks the device Pippenger MSM against blst's and times it over resident
//! bases, the way `shared/peers/sppark-msm` times sppark's (bases uploaded once, scalars in host
//! memory, wall clock around one blocking call, result on the host).
//!
//! ```text
//! bellows-cuda-msm [--log-n 20,22,24,26] [--check 10,16,20] [--iters 5] [--g2-log-n 20,24]
//!                  [--scalars host|device] [--precompute C] [--pool-release trim|sync]
//!                  [--bits-pct P] [--sweep NAME=V1,V2,..] [--overlap L,..]
//! ```
//!
//! `--sweep NAME=V1,V2,..` times every G1 size once per value with the environment variable
//! NAME set to it (the MSM's tuning overrides, `bellows_cuda::msm::KNOBS`, e.g.
//! `BELLOWS_MSM_SCATTER_PASSES=1,4,8`), in one process over the same bases and scalars; each
//! RESULT line names the value.
//!
//! `--pool-release sync` returns freed device memory to the driver at every synchronisation
//! (the driver's default) instead of keeping it in the pool for the next call (the backend's
//! default, `trim`), for timing one against the other.
//!
//! `--precompute C` builds precomputed tables of window multiples (windows of C bits) over the
//! G1 bases (and the G2 bases) first, times that, and runs every check and timing over them
//! (`BELLOWS_MSM_TABLE=always` makes the small checks use the table too; `never` ignores it).
//!
//! `--bits-pct P` times the G1 MSMs over scalars of which P % are 0 or 1 (drawn at random,
//! half each) and the rest random, as in a witness with P % boolean constraints: such an MSM
//! has few non-trivial scalars for its size, so its best window can differ from a random
//! one's (the checks keep their own scalars).
//!
//! `--overlap L,..` measures what two lanes of one GPU (`CudaDevice::lane`) gain when two
//! MSMs run at once instead of one after the other, as the two halves of a proof's G1 phase
//! could: at each size 2^L, a dense MSM (random scalars, as the H MSM's) beside a mostly-0/1 one
//! (90 % of the scalars 0 or 1, or `--bits-pct`, as the L, A and B MSMs'), and two mostly-0/1
//! ones beside each other; scalars on the device, the same results checked both ways. Each
//! RESULT line gives the median of both orders' wall times.
//!
//! `--scalars device` times the G1 MSMs with the scalars uploaded beforehand (as in a proof,
//! where the assignments are uploaded once for several MSMs); the default times the upload too.
//!
//! Checks (each against blst's CPU Pippenger): random scalars; scalars that are all 0 or 1 (a
//! Filecoin-like witness); a density bitmap with every third scalar dropped; r − 1; a window
//! boundary; repeated and identity bases. Exit status 1 on any mismatch.

use std::{process::ExitCode, time::Instant};

use bellows_core::{
    groth16::host_msm,
    layout::{fr_slice, g1_affine_slice, g2_affine_slice, G1Jacobian, G2Jacobian},
};
use bellows_cuda::{
    msm::{BaseSource, MsmConfig, ScalarSource, G1, G2},
    CudaDevice, DeviceVec,
};
use bellows_cuda_tools::Gpu;
use blstrs::{G1Affine, G1Projective, G2Projective, Scalar};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

fn list(v: &str) -> Vec<u32> {
    v.split(',').filter_map(|x| x.trim().parse().ok()).collect()
}

/// Points start + j·step in chunks of `chunk` with a fresh start and step per chunk (cheap to
/// make in bulk, and as good as random for an MSM).
fn points<P>(n: usize, seed: u64, chunk: usize) -> Vec<P::AffineRepr>
where
    P: Group + Curve + Send + Sync,
    P::AffineRepr: PrimeCurveAffine + Send + Sync,
{
    let mut out = vec![P::AffineRepr::identity(); n];
    out.par_chunks_mut(chunk).enumerate().for_each(|(k, c)| {
        let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (k as u64).wrapping_mul(0x9e37));
        let step = P::random(&mut rng);
        let mut p = P::random(&mut rng);
        let proj: Vec<P> = (0..c.len())
            .map(|_| {
                p += step;
                p
            })
            .collect();
        P::batch_normalize(&proj, c);
    });
    out
}

fn scalars(n: usize, seed: u64) -> Vec<Scalar> {
    (0..n)
        .into_par_iter()
        .chunks(1 << 12)
        .flat_map_iter(|c| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ c[0] as u64);
            c.into_iter()
                .map(|_| Scalar::random(&mut rng))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `sc` with `pct` % of its entries (drawn at random) replaced by 0 or 1, half each.
fn with_bits(sc: &[Scalar], pct: u32, seed: u64) -> Vec<Scalar> {
    sc.par_chunks(1 << 12)
        .enumerate()
        .flat_map_iter(|(k, c)| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (k as u64).wrapping_mul(0x9e37));
            c.iter()
                .map(|x| {
                    if rng.gen_range(0..100) < pct {
                        Scalar::from(rng.gen_range(0..2u64))
                    } else {
                        *x
                    }
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Prints one check's line; 1 when it failed.
fn report(what: &str, n: usize, ok: bool) -> usize {
    println!(
        "check {what:<28} n={n:<8} {}",
        if ok { "ok" } else { "MISMATCH" }
    );
    usize::from(!ok)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let mut log_ns = vec![20, 22, 24, 26];
    let mut g2_log_ns: Vec<u32> = vec![];
    let mut check_ns = vec![0, 1, 10, 16, 20];
    let mut iters = 5usize;
    let mut device_scalars = false;
    let mut tier_log: Option<u32> = None;
    let mut precompute = 0u32;
    let mut release_at_sync = false;
    let mut sweep: Option<(String, Vec<String>)> = None;
    let mut bits_pct = 0u32;
    let mut overlap: Vec<u32> = vec![];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().unwrap_or_default();
        match a.as_str() {
            "--log-n" => log_ns = list(&v),
            "--g2-log-n" => g2_log_ns = list(&v),
            "--check" => check_ns = list(&v),
            "--iters" => iters = v.parse().unwrap_or(5).max(1),
            "--scalars" if v == "host" || v == "device" => device_scalars = v == "device",
            "--tiers" => tier_log = v.parse().ok(),
            "--precompute" => precompute = v.parse().unwrap_or(0),
            "--bits-pct" if v.parse::<u32>().is_ok_and(|p| p <= 100) => {
                bits_pct = v.parse().unwrap_or(0)
            }
            "--overlap" => overlap = list(&v),
            "--pool-release" if v == "trim" || v == "sync" => release_at_sync = v == "sync",
            "--sweep" if v.contains('=') => {
                let (name, vals) = v.split_once('=').unwrap_or_default();
                sweep = Some((
                    name.to_string(),
                    vals.split(',').map(str::to_string).collect(),
                ));
            }
            _ => {
                eprintln!("usage: bellows-cuda-msm [--log-n L,..] [--g2-log-n L,..] [--check L,..] [--iters N] [--scalars host|device] [--precompute C] [--pool-release trim|sync] [--bits-pct P] [--sweep NAME=V1,V2,..] [--overlap L,..]");
                return ExitCode::from(2);
            }
        }
    }
    let gpu = match Gpu::open(0, MsmConfig::default()) {
        Ok(g) => g,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let (dev, msm) = (&gpu.dev, &gpu.msm);
    if let Err(e) = dev.set_pool_release(release_at_sync) {
        eprintln!("error: {e}");
        return ExitCode::from(1);
    }
    println!(
        "device: {} ({}), freed memory {}",
        dev.name(),
        dev.label(),
        if release_at_sync {
            "returned at every synchronisation"
        } else {
            "kept in the pool"
        }
    );
    let max_log = log_ns
        .iter()
        .chain(&check_ns)
        .chain(&g2_log_ns)
        .chain(tier_log.as_ref())
        .chain(&overlap)
        .copied()
        .max()
        .unwrap_or(16)
        .max(10);
    let t = Instant::now();
    let pts = points::<G1Projective>(1 << max_log, 1, 1 << 12);
    let sc = scalars(1 << max_log, 2);
    println!(
        "generated 2^{max_log} points and scalars in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let bases = match dev.upload(g1_affine_slice(&pts)) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: uploading bases: {e}");
            return ExitCode::from(1);
        }
    };
    let table = if precompute > 0 {
        match build_table::<G1>(&gpu, &bases, precompute) {
            Ok(t) => Some(t),
            Err(code) => return code,
        }
    } else {
        None
    };
    let g1_source = || match &table {
        Some(t) => BaseSource::Table(t),
        None => BaseSource::Device(&bases),
    };
    let mut failures = 0;
    let mut check = |name: &str, start: usize, s: &[Scalar], density: Option<&[u64]>| {
        // Reference: filter by density on the host, then blst.
        let (ref_sc, used): (Vec<Scalar>, usize) = match density {
            None => (s.to_vec(), s.len()),
            Some(d) => {
                let v: Vec<Scalar> = s
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| d[i / 64] >> (i % 64) & 1 == 1)
                    .map(|(_, x)| *x)
                    .collect();
                let u = v.len();
                (v, u)
            }
        };
        let want = G1Projective::from(host_msm::msm_g1(
            g1_affine_slice(&pts[start..start + used]),
            fr_slice(&ref_sc),
        ));
        let got = msm.run::<G1>(
            dev,
            g1_source(),
            start,
            ScalarSource::Host(fr_slice(s)),
            density,
            None,
            usize::MAX,
            u64::MAX,
        );
        let ok = match &got {
            Ok(g) => G1Projective::from(*g).to_affine() == want.to_affine(),
            Err(_) => false,
        };
        println!(
            "check {name:<28} n={:<8} {}",
            s.len(),
            match (&got, ok) {
                (_, true) => "ok".to_string(),
                (Err(e), _) => format!("ERROR {e}"),
                _ => "MISMATCH".to_string(),
            }
        );
        if !ok {
            failures += 1;
        }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for &l in &check_ns {
        let n = if l == 0 { 1 } else { 1usize << l };
        check(&format!("random 2^{l}"), 0, &sc[..n], None);
        if l >= 10 {
            check(&format!("random 2^{l} at offset 3"), 3, &sc[..n - 3], None);
            let bits: Vec<Scalar> = (0..n)
                .map(|_| {
                    if rng.gen_bool(0.5) {
                        Scalar::ONE
                    } else {
                        Scalar::ZERO
                    }
                })
                .collect();
            check(&format!("bits 2^{l}"), 0, &bits, None);
            let mixed: Vec<Scalar> = (0..n)
                .map(|i| match i % 10 {
                    0 => sc[i],
                    1..=4 => Scalar::ONE,
                    _ => Scalar::ZERO,
                })
                .collect();
            check(&format!("90% bits 2^{l}"), 0, &mixed, None);
            let dens: Vec<u64> = (0..n.div_ceil(64))
                .map(|w| {
                    (0..64)
                        .filter(|b| (w * 64 + b) % 3 != 0)
                        .fold(0u64, |a, b| a | 1 << b)
                })
                .collect();
            check(&format!("density 2/3 2^{l}"), 0, &sc[..n], Some(&dens));
            let edge: Vec<Scalar> = (0..n)
                .map(|i| match i % 4 {
                    0 => -Scalar::ONE,
                    1 => Scalar::from(1u64 << 20),
                    2 => Scalar::from((1u64 << 19) + 1),
                    _ => Scalar::from(2u64),
                })
                .collect();
            check(&format!("r-1, boundaries 2^{l}"), 0, &edge, None);
        }
    }
    // Repeated and identity bases (a separate small base set).
    {
        let mut few = vec![pts[0]; 1000];
        few[10] = G1Affine::identity();
        few[11] = -pts[0];
        let b2 = dev.upload(g1_affine_slice(&few)).expect("upload");
        let t2 = (precompute > 0).then(|| {
            msm.precompute_table::<G1>(dev, &b2, precompute)
                .expect("table of the small base set")
        });
        let want = host_msm::msm_g1(g1_affine_slice(&few), fr_slice(&sc[..1000]));
        let got = msm.run::<G1>(
            dev,
            match &t2 {
                Some(t) => BaseSource::Table(t),
                None => BaseSource::Device(&b2),
            },
            0,
            ScalarSource::Host(fr_slice(&sc[..1000])),
            None,
            None,
            usize::MAX,
            u64::MAX,
        );
        let ok = got.as_ref().is_ok_and(|g| {
            G1Projective::from(*g).to_affine() == G1Projective::from(want).to_affine()
        });
        failures += report("repeated/identity/negated", 1000, ok);
    }
    // The timed G1 scalars: the random ones, or with bits_pct % of them 0 or 1.
    let timed = if bits_pct > 0 {
        with_bits(&sc, bits_pct, 5)
    } else {
        Vec::new()
    };
    for &l in &log_ns {
        let n = 1usize << l;
        let s = fr_slice(if bits_pct > 0 { &timed[..n] } else { &sc[..n] });
        let on_device = if device_scalars {
            match dev.upload(s) {
                Ok(d) => Some(d),
                Err(e) => {
                    println!("G1 2^{l}: ERROR {e}");
                    failures += 1;
                    continue;
                }
            }
        } else {
            None
        };
        let source = match &on_device {
            Some(d) => ScalarSource::Device(d, 0, n),
            None => ScalarSource::Host(s),
        };
        let settings: Vec<Option<&str>> = match &sweep {
            Some((_, vals)) => vals.iter().map(|v| Some(v.as_str())).collect(),
            None => vec![None],
        };
        for setting in settings {
            if let (Some((name, _)), Some(v)) = (&sweep, setting) {
                // The process's own knob, set between timed calls (no other thread reads it then).
                std::env::set_var(name, v);
            }
            let mut times = Vec::new();
            let mut first: Option<G1Jacobian> = None;
            let mut same = true;
            for i in 0..=iters {
                let t = Instant::now();
                let r = match msm.run::<G1>(
                    dev,
                    g1_source(),
                    0,
                    source,
                    None,
                    None,
                    usize::MAX,
                    u64::MAX,
                ) {
                    Ok(r) => r,
                    Err(e) => {
                        println!("G1 2^{l}: ERROR {e}");
                        failures += 1;
                        break;
                    }
                };
                let ms = t.elapsed().as_secs_f64() * 1e3;
                if i > 0 {
                    times.push(ms);
                }
                match first {
                    None => first = Some(r),
                    Some(f) => same &= G1Projective::from(f) == G1Projective::from(r),
                }
            }
            if !times.is_empty() {
                let min = times.iter().cloned().fold(f64::MAX, f64::min);
                println!(
                "RESULT msm=G1 log_n={l} bits_pct={bits_pct} median_ms={:.2} min_ms={:.2} same_result={same} window={} scalars={} table={}{}",
                median(&mut times),
                min,
                bellows_cuda::msm::window_bits(n, &msm.tuning()),
                if device_scalars { "device" } else { "host" },
                table_env(precompute),
                match (&sweep, setting) {
                    (Some((name, _)), Some(v)) => format!(" {name}={v}"),
                    _ => String::new(),
                },
            );
            }
        }
        drop(on_device);
        let _ = dev.trim_pool();
    }
    for &l in &overlap {
        let pct = if bits_pct > 0 { bits_pct } else { 90 };
        failures += overlapped(&gpu, &bases, &sc[..1 << l], pct, iters);
        let _ = dev.trim_pool();
    }
    drop(table);
    drop(bases);
    if !g2_log_ns.is_empty() {
        let max2 = *g2_log_ns.iter().max().unwrap();
        let t = Instant::now();
        let pts2 = points::<G2Projective>(1 << max2, 3, 1 << 10);
        println!(
            "generated 2^{max2} G2 points in {:.1} s",
            t.elapsed().as_secs_f64()
        );
        let b2 = dev.upload(g2_affine_slice(&pts2)).expect("upload G2 bases");
        let t2 = if precompute > 0 {
            match build_table::<G2>(&gpu, &b2, precompute) {
                Ok(t) => Some(t),
                Err(code) => return code,
            }
        } else {
            None
        };
        let g2_source = || match &t2 {
            Some(t) => BaseSource::Table(t),
            None => BaseSource::Device(&b2),
        };
        // Checks at 2^12 against blst: random scalars, and a Filecoin-like mix (mostly 0 and
        // 1, which runs the sum of the bases whose scalar is 1, and some random ones).
        let n = 1 << 12.min(max2);
        let mixed: Vec<Scalar> = sc[..n]
            .iter()
            .enumerate()
            .map(|(i, x)| match i % 10 {
                0..=4 => Scalar::ONE,
                5..=7 => Scalar::ZERO,
                _ => *x,
            })
            .collect();
        for (what, s) in [("random", &sc[..n]), ("0/1 mostly", &mixed[..])] {
            let want = host_msm::msm_g2(g2_affine_slice(&pts2[..n]), fr_slice(s));
            let got = msm.run::<G2>(
                dev,
                g2_source(),
                0,
                ScalarSource::Host(fr_slice(s)),
                None,
                None,
                usize::MAX,
                u64::MAX,
            );
            let ok = got.as_ref().is_ok_and(|g| {
                G2Projective::from(*g).to_affine() == G2Projective::from(want).to_affine()
            });
            failures += report(&format!("G2 {what}"), n, ok);
        }
        for &l in &g2_log_ns {
            let n = 1usize << l;
            let mut times = Vec::new();
            for i in 0..=iters.min(3) {
                let t = Instant::now();
                let r: Result<G2Jacobian, _> = msm.run::<G2>(
                    dev,
                    g2_source(),
                    0,
                    ScalarSource::Host(fr_slice(&sc[..n])),
                    None,
                    None,
                    usize::MAX,
                    u64::MAX,
                );
                if let Err(e) = r {
                    println!("G2 2^{l}: ERROR {e}");
                    failures += 1;
                    break;
                }
                if i > 0 {
                    times.push(t.elapsed().as_secs_f64() * 1e3);
                }
            }
            if !times.is_empty() {
                println!(
                    "RESULT msm=G2 log_n={l} median_ms={:.2} window={} table={}",
                    median(&mut times),
                    bellows_cuda::msm::window_bits(n, &msm.tuning()),
                    table_env(precompute),
                );
            }
        }
    }
    if let Some(l) = tier_log {
        failures += tiers(&pts, &sc, l, iters);
    }
    if failures > 0 {
        println!("{failures} check(s) FAILED");
        ExitCode::from(1)
    } else {
        println!("all checks passed");
        ExitCode::SUCCESS
    }
}

/// Builds a precomputed table over `bases` and prints how long it took (exit status 1 on error).
fn build_table<G: bellows_cuda::msm::MsmGroup>(
    gpu: &Gpu,
    bases: &DeviceVec<G::Affine>,
    c: u32,
) -> Result<bellows_cuda::msm::PrecomputedTable<G::Affine>, ExitCode> {
    let t = Instant::now();
    match gpu.msm.precompute_table::<G>(&gpu.dev, bases, c) {
        Ok(table) => {
            println!(
                "RESULT table={} n={} c={c} windows={} bytes={} build_ms={:.1}",
                G::NAME,
                bases.len(),
                table.windows(),
                table.bytes(),
                t.elapsed().as_secs_f64() * 1e3
            );
            Ok(table)
        }
        Err(e) => {
            eprintln!("error: building the {} table: {e}", G::NAME);
            Err(ExitCode::from(1))
        }
    }
}

/// The table column of a RESULT line: its window width, and `BELLOWS_MSM_TABLE` when set.
fn table_env(c: u32) -> String {
    match (c, std::env::var("BELLOWS_MSM_TABLE")) {
        (0, _) => "none".into(),
        (c, Ok(v)) => format!("c{c}-{v}"),
        (c, Err(_)) => format!("c{c}"),
    }
}

/// Forces each memory tier with a device budget (full residency, a resident prefix with the rest
/// streamed, everything streamed), checks the MSM through the `Backend` interface against blst
/// and times it. Returns the number of failures.
fn tiers(pts: &[G1Affine], sc: &[Scalar], log_n: u32, iters: usize) -> usize {
    use bellows_core::backend::{BackendConfig, Msm, MsmJob, SharedPoints};
    use std::sync::Arc;
    let n = 1usize << log_n;
    let full = (n * 96) as u64;
    let points: SharedPoints<bellows_core::layout::G1Affine> = Arc::new(pts[..n].to_vec());
    let want = G1Projective::from(host_msm::msm_g1(
        g1_affine_slice(&pts[..n]),
        fr_slice(&sc[..n]),
    ))
    .to_affine();
    let mut failures = 0;
    for (name, budget) in [
        ("full", None),
        ("partial", Some(full * 3 / 2)),
        ("streaming", Some(full * 3 / 5)),
    ] {
        let mut cfg = BackendConfig::default();
        cfg.memory_budget = budget;
        let b = match bellows_cuda::CudaBackend::with_config(&cfg) {
            Ok(b) => b,
            Err(e) => {
                println!("tier {name}: ERROR {e}");
                failures += 1;
                continue;
            }
        };
        let h = match b.load_bases_g1(points.clone()) {
            Ok(h) => h,
            Err(e) => {
                println!("tier {name}: load ERROR {e}");
                failures += 1;
                continue;
            }
        };
        let tier = b.tier_of(h).map(|t| format!("{t:?}")).unwrap_or_default();
        let mut times = Vec::new();
        let mut ok = true;
        for i in 0..=iters.min(3) {
            let mut out = [G1Jacobian::default()];
            let t = Instant::now();
            let r = b.msm_g1(h, &[MsmJob::new(0, fr_slice(&sc[..n]))], &mut out);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            match r {
                Ok(()) => ok &= G1Projective::from(out[0]).to_affine() == want,
                Err(e) => {
                    println!("tier {name}: msm ERROR {e}");
                    ok = false;
                }
            }
            if i > 0 {
                times.push(ms);
            }
        }
        println!(
            "RESULT tier={name} ({tier}) log_n={log_n} median_ms={:.2} check={}",
            median(&mut times),
            if ok { "ok" } else { "MISMATCH" }
        );
        if !ok {
            failures += 1;
        }
    }
    failures
}

/// `--overlap`: a dense and a mostly-0/1 MSM (then two mostly-0/1 ones) over the same 2^L bases,
/// one after the other on one lane against side by side on two lanes of the GPU; prints the
/// median wall time of each and returns the number of failures (errors, or results that differ
/// between the two ways).
fn overlapped(
    gpu: &Gpu,
    bases: &DeviceVec<bellows_core::layout::G1Affine>,
    sc: &[Scalar],
    pct: u32,
    iters: usize,
) -> usize {
    let dev = &gpu.dev;
    let n = sc.len();
    let sparse = with_bits(sc, pct, 7);
    let sparse2 = with_bits(sc, pct, 9);
    let lane = match dev.lane() {
        Ok(l) => l,
        Err(e) => {
            println!("overlap: ERROR opening a second lane: {e}");
            return 1;
        }
    };
    let up = |s: &[Scalar]| dev.upload(fr_slice(s));
    let (d_dense, d_sparse, d_sparse2) = match (up(sc), up(&sparse), up(&sparse2)) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        _ => {
            println!(
                "overlap 2^{}: ERROR uploading the scalars",
                n.trailing_zeros()
            );
            return 1;
        }
    };
    let msm = |d: &CudaDevice, s: &DeviceVec<bellows_core::layout::Fr>| {
        gpu.msm
            .run::<G1>(
                d,
                BaseSource::Device(bases),
                0,
                ScalarSource::Device(s, 0, n),
                None,
                None,
                usize::MAX,
                u64::MAX,
            )
            .map(G1Projective::from)
    };
    let mut failures = 0;
    for (what, x, y) in [
        ("dense+sparse", &d_dense, &d_sparse),
        ("sparse+sparse", &d_sparse, &d_sparse2),
    ] {
        let (mut seq, mut par) = (Vec::new(), Vec::new());
        let mut ok = true;
        for i in 0..=iters {
            let t = Instant::now();
            let one = (msm(dev, x), msm(dev, y));
            let t_seq = t.elapsed().as_secs_f64() * 1e3;
            let t = Instant::now();
            let two = std::thread::scope(|s| {
                let h = s.spawn(|| msm(&lane, y));
                let a = msm(dev, x);
                let b = h.join().unwrap_or_else(|_| {
                    Err(bellows_core::Error::invalid(
                        "the second lane's thread panicked",
                    ))
                });
                (a, b)
            });
            let t_par = t.elapsed().as_secs_f64() * 1e3;
            match (one, two) {
                ((Ok(a), Ok(b)), (Ok(c), Ok(d))) => ok &= a == c && b == d,
                _ => ok = false,
            }
            if i > 0 {
                seq.push(t_seq);
                par.push(t_par);
            }
        }
        let (s, p) = (median(&mut seq), median(&mut par));
        println!(
            "RESULT overlap={what} log_n={} bits_pct={pct} one_lane_ms={s:.2} two_lanes_ms={p:.2} ratio={:.3} same_result={ok}",
            n.trailing_zeros(),
            p / s
        );
        failures += usize::from(!ok);
    }
    failures
}
