//! `bellows-wgpu-bench`: NTT and G1 MSM timings of several backends side by side, in one process
//! and on the same inputs, each result checked against the CPU reference before it is timed.
//!
//! ```text
//! bellows-wgpu-bench --backends cpu,cuda,wgpu --ntt 20,24 --msm 20,22 [--reps 5] [--opt KEY=VALUE]
//! ```
//! A size list of `0` skips that operation (`--ntt 24 --msm 0`).
//! Backends are resolved as `--backend` everywhere (built-in `cpu`, plugins by name along the
//! plugin search path, or paths). Each line printed is
//! `RESULT backend=B op=ntt|msm-g1 log=K median_ms=M min_ms=M` (or `SKIP …` with the reason); a
//! result that differs from the CPU backend's is `MISMATCH …` and the exit status is 1.
//! An NTT call is forward, natural order, one vector, host data in and out (what a prover's
//! call costs); an MSM call is one G1 job over bases made resident first (their upload is not
//! timed), scalars from the host.
//!
//!
//! Sweeps: `--set KEY=VALUE[,KEY=VALUE…]` (repeatable) adds a variant of the backend options to
//! the common `--opt`s; every backend is created afresh for each variant (options are read when
//! a backend is made), checked against the CPU reference, then timed, and its lines carry
//! `opts=…` (`--set default` is the common options alone). E.g. the wgpu MSM's tunables:
//! ```text
//! bellows-wgpu-bench --backends wgpu --ntt 0 --msm 20 --reps 3 --set default \
//!     --set msm-segment=8 --set msm-segment=16 --set msm-window=15 --set msm-wg=128
//! ```
//!
//! Built in the tools crate (`cargo build --release -p bellows-wgpu-tools --bin bellows-wgpu-bench`):
//! it links the CPU backend and rayon, which the plugin does not.

use std::{sync::Arc, time::Instant};

use bellows_core::{
    backend::{MsmJob, NttConfig, SharedPoints},
    layout::{Fr, G1Affine, G1Jacobian},
    registry::resolve,
    Backend, BackendConfig,
};
use bellows_cpu as _;
use blstrs::{G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

struct Args {
    backends: Vec<String>,
    ntt: Vec<u32>,
    msm: Vec<u32>,
    reps: usize,
    opts: Vec<(String, String)>,
    /// Variants (`--set`): extra options each; empty: one variant, the common options.
    sets: Vec<Vec<(String, String)>>,
}

/// `KEY=VALUE,KEY=VALUE…` (`default`: none).
fn option_set(s: &str) -> Vec<(String, String)> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty() && *x != "default")
        .filter_map(|x| x.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',')
        .filter(|x| !x.is_empty())
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

/// A list of log sizes; `0` means "none of this operation" (`--msm 0` times NTTs only).
fn sizes(s: &str) -> Vec<u32> {
    list::<u32>(s).into_iter().filter(|&k| k > 0).collect()
}

fn args() -> Args {
    let mut a = Args {
        backends: vec!["cpu".into(), "wgpu".into()],
        ntt: vec![16],
        msm: vec![16],
        reps: 5,
        opts: Vec::new(),
        sets: Vec::new(),
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i + 1 < v.len() {
        match v[i].as_str() {
            "--backends" => a.backends = list(&v[i + 1]),
            "--ntt" => a.ntt = sizes(&v[i + 1]),
            "--msm" => a.msm = sizes(&v[i + 1]),
            "--reps" => a.reps = v[i + 1].parse().unwrap_or(5),
            "--set" => a.sets.push(option_set(&v[i + 1])),
            "--opt" => {
                if let Some((k, val)) = v[i + 1].split_once('=') {
                    a.opts.push((k.into(), val.into()));
                }
            }
            other => {
                eprintln!("unknown argument {other}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    a
}

fn scalars(n: usize, seed: u64) -> Vec<Fr> {
    (0..n)
        .into_par_iter()
        .chunks(1 << 14)
        .flat_map_iter(|c| {
            let mut r = ChaCha20Rng::seed_from_u64(seed ^ (c[0] as u64) << 8);
            c.into_iter().map(move |_| Fr::from(Scalar::random(&mut r)))
        })
        .collect()
}

/// n distinct points R + i·G (a chunk's first by one scalar multiplication, the rest by
/// additions), normalised to affine in batches.
fn points(n: usize) -> Vec<G1Affine> {
    let r = G1Projective::generator() * Scalar::from(0x5eed_u64);
    let g = G1Projective::generator();
    let chunk = 1 << 14;
    (0..n.div_ceil(chunk))
        .into_par_iter()
        .flat_map_iter(|c| {
            let len = chunk.min(n - c * chunk);
            let mut p = r + g * Scalar::from((c * chunk) as u64);
            let mut proj = Vec::with_capacity(len);
            for _ in 0..len {
                proj.push(p);
                p += g;
            }
            let mut aff = vec![blstrs::G1Affine::default(); len];
            G1Projective::batch_normalize(&proj, &mut aff);
            aff.into_iter().map(G1Affine::from)
        })
        .collect()
}

/// A progress line on stderr with the seconds since the start, so that a run that stops (a
/// timeout in a device script) shows where.
fn progress(start: Instant, what: std::fmt::Arguments<'_>) {
    eprintln!("[{:8.2} s] {what}", start.elapsed().as_secs_f64());
}

/// Median and minimum in milliseconds of `reps` runs, each timing itself.
fn timed(reps: usize, mut run: impl FnMut() -> std::time::Duration) -> (f64, f64) {
    let mut t: Vec<f64> = (0..reps).map(|_| run().as_secs_f64() * 1e3).collect();
    t.sort_by(|a, b| a.total_cmp(b));
    (t[t.len() / 2], t[0])
}

/// Calls `each(name, backend, tag)` for every backend of every variant that could be made.
fn each_backend(
    single: &Option<Backends>,
    a: &Args,
    sets: &[Vec<(String, String)>],
    mut each: impl FnMut(&str, &Arc<dyn Backend>, &str),
) {
    for set in sets {
        let mut made = None;
        let tag = tag(set);
        for (name, b) in backends_for(single, &mut made, a, set) {
            if let Some(b) = b {
                each(name, b, &tag);
            }
        }
    }
}

/// The backends of one variant, each created with the common options and the variant's.
fn make_backends(
    names: &[String],
    opts: &[(String, String)],
    set: &[(String, String)],
) -> Backends {
    let mut cfg = BackendConfig::new();
    for (k, v) in opts.iter().chain(set) {
        cfg = cfg.option(k.clone(), v.clone());
    }
    names
        .iter()
        .map(|name| match resolve(name, &cfg) {
            Ok(b) => {
                eprintln!("{name}: {}", b.info().description);
                (name.clone(), Some(b))
            }
            Err(e) => {
                println!("SKIP backend={name}{}: {e}", tag(set));
                (name.clone(), None)
            }
        })
        .collect()
}

/// ` opts=K=V,K=V` for a variant's lines (`opts=default` for none); nothing without `--set`.
/// Backends by name (`None`: could not be made; the reason was printed).
type Backends = Vec<(String, Option<Arc<dyn Backend>>)>;

/// The backends of variant `set`: those made once for every variant (`single`), or fresh ones,
/// kept in `made` for as long as the caller uses them.
fn backends_for<'a>(
    single: &'a Option<Backends>,
    made: &'a mut Option<Backends>,
    a: &Args,
    set: &[(String, String)],
) -> &'a Backends {
    match single {
        Some(b) => b,
        None => made.insert(make_backends(&a.backends, &a.opts, set)),
    }
}

fn tag(set: &[(String, String)]) -> String {
    if SWEEP.load(std::sync::atomic::Ordering::Relaxed) {
        let s: Vec<String> = set.iter().map(|(k, v)| format!("{k}={v}")).collect();
        if s.is_empty() {
            " opts=default".into()
        } else {
            format!(" opts={}", s.join(","))
        }
    } else {
        String::new()
    }
}

/// Whether `--set` was given (lines then carry `opts=`).
static SWEEP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn main() {
    let a = args();
    let t0 = Instant::now();
    SWEEP.store(!a.sets.is_empty(), std::sync::atomic::Ordering::Relaxed);
    let sets = if a.sets.is_empty() {
        vec![Vec::new()]
    } else {
        a.sets.clone()
    };
    let reference: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    let mut failed = false;
    // Without variants the backends are made once, as before; with them, per variant and size.
    let single = (sets.len() == 1).then(|| make_backends(&a.backends, &a.opts, &sets[0]));
    for &k in &a.ntt {
        progress(t0, format_args!("ntt 2^{k}: inputs and the CPU reference"));
        let input = scalars(1 << k, k as u64);
        let mut want = input.clone();
        reference
            .ntt(&mut want, k, &NttConfig::forward())
            .expect("reference NTT");
        each_backend(&single, &a, &sets, |name, b, tag| {
            progress(
                t0,
                format_args!(
                    "ntt 2^{k} on {name}{tag}: checking, then {} timed calls",
                    a.reps
                ),
            );
            let mut got = input.clone();
            if let Err(e) = b.ntt(&mut got, k, &NttConfig::forward()) {
                println!("SKIP backend={name} op=ntt log={k}{tag}: {e}");
                return;
            }
            if got != want {
                println!("MISMATCH backend={name} op=ntt log={k}{tag}");
                failed = true;
                return;
            }
            let (med, min) = timed(a.reps, || {
                let mut d = input.clone();
                let t = Instant::now();
                b.ntt(&mut d, k, &NttConfig::forward()).expect("NTT");
                t.elapsed()
            });
            println!(
                "RESULT backend={name} op=ntt log={k} median_ms={med:.2} min_ms={min:.2}{tag}"
            );
        });
    }
    for &k in &a.msm {
        progress(t0, format_args!("msm 2^{k}: inputs and the CPU reference"));
        let n = 1usize << k;
        let pts: SharedPoints<G1Affine> = Arc::new(points(n));
        let sc = scalars(n, 1000 + k as u64);
        let job = [MsmJob::new(0, &sc)];
        let want = {
            let h = reference
                .load_bases_g1(pts.clone())
                .expect("reference bases");
            let mut out = [G1Jacobian::default()];
            reference.msm_g1(h, &job, &mut out).expect("reference MSM");
            reference.free_bases(h).ok();
            G1Projective::from(out[0]).to_affine()
        };
        each_backend(&single, &a, &sets, |name, b, tag| {
            progress(
                t0,
                format_args!(
                    "msm 2^{k} on {name}{tag}: bases, checking, then {} timed calls",
                    a.reps
                ),
            );
            let h = match b.load_bases_g1(pts.clone()) {
                Ok(h) => h,
                Err(e) => {
                    println!("SKIP backend={name} op=msm-g1 log={k}{tag}: {e}");
                    return;
                }
            };
            let mut out = [G1Jacobian::default()];
            match b.msm_g1(h, &job, &mut out) {
                Ok(()) if G1Projective::from(out[0]).to_affine() == want => {}
                Ok(()) => {
                    println!("MISMATCH backend={name} op=msm-g1 log={k}{tag}");
                    failed = true;
                    b.free_bases(h).ok();
                    return;
                }
                Err(e) => {
                    println!("SKIP backend={name} op=msm-g1 log={k}{tag}: {e}");
                    b.free_bases(h).ok();
                    return;
                }
            }
            let (med, min) = timed(a.reps, || {
                let t = Instant::now();
                b.msm_g1(h, &job, &mut out).expect("MSM");
                t.elapsed()
            });
            b.free_bases(h).ok();
            println!(
                "RESULT backend={name} op=msm-g1 log={k} median_ms={med:.2} min_ms={min:.2}{tag}"
            );
        });
    }
    progress(t0, format_args!("done"));
    std::process::exit(i32::from(failed));
}
