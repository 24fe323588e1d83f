//! Cost of the plugin boundary: the same CPU backend proving through its plugin
//! (`libbellows_backend_cpu.so`) and built in, side by side in one run.
//!
//! `cargo bench -p bellows-conformance --bench plugin_overhead`
//!
//! - `prove/{builtin,plugin}`: one Groth16 proof of the synthetic circuit of 2^K constraints
//!   (K = `BELLOWS_OVERHEAD_LOG`, default 14) with benchmark-only parameters;
//! - `call/{builtin,plugin}`: per-call cost on trivial work (an NTT of 2 elements, an MSM of one
//!   point), i.e. the boundary itself;
//! - then an interleaved run (builtin and plugin proofs alternating, `BELLOWS_OVERHEAD_ROUNDS`
//!   rounds, default 15) that prints both medians and their ratio, so that drift of the machine
//!   cannot favour one side.

// criterion_group! generates an undocumented function.
#![allow(missing_docs)]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use bellows_conformance::plugin_build::build_plugins;
use bellows_core::{
    backend::{MsmJob, NttConfig, SharedPoints},
    circuits::SyntheticCircuit,
    groth16::{
        prover::{prove, ProvingKey},
        setup::generate_benchmark_parameters,
    },
    layout::{Fr, G1Jacobian},
    plugin::load_backend,
    rng::ProofRng,
    Backend, BackendConfig,
};
use bellows_cpu::CpuBackend;
use criterion::{criterion_group, Criterion};
use group::{prime::PrimeCurveAffine, Curve};

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Setup {
    log: u32,
    builtin: Arc<dyn Backend>,
    plugin: Arc<dyn Backend>,
    keys: [ProvingKey; 2],
}

fn setup() -> Setup {
    let log = env_u32("BELLOWS_OVERHEAD_LOG", 14);
    let path = build_plugins().expect("building the CPU plugin");
    let builtin: Arc<dyn Backend> = Arc::new(CpuBackend::new());
    let plugin: Arc<dyn Backend> =
        load_backend(&path.cpu, &BackendConfig::default()).expect("loading the CPU plugin");
    let params = Arc::new(
        generate_benchmark_parameters(SyntheticCircuit::new(log, 20).unwrap(), 1)
            .expect("parameters"),
    );
    let keys = [
        ProvingKey::new(params.clone(), builtin.clone()).unwrap(),
        ProvingKey::new(params, plugin.clone()).unwrap(),
    ];
    Setup {
        log,
        builtin,
        plugin,
        keys,
    }
}

fn prove_once(key: &ProvingKey, log: u32, seed: u64) {
    let c = SyntheticCircuit::new(log, 20).unwrap().with_witness(seed);
    let p = prove(key, vec![c], &mut ProofRng::seeded(seed)).unwrap();
    assert_eq!(p.len(), 1);
}

fn benches(c: &mut Criterion, s: &Setup) {
    let mut g = c.benchmark_group(format!("prove synthetic 2^{}", s.log));
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8));
    for (name, key) in [("builtin", &s.keys[0]), ("plugin", &s.keys[1])] {
        g.bench_function(name, |b| b.iter(|| prove_once(key, s.log, 7)));
    }
    g.finish();

    let mut g = c.benchmark_group("call");
    let one = [Fr::ONE, Fr::ONE];
    let pts = Arc::new(vec![blstrs::G1Affine::generator().to_curve().to_affine()]);
    for (name, b) in [("builtin", &s.builtin), ("plugin", &s.plugin)] {
        g.bench_function(format!("ntt 2^1/{name}"), |bch| {
            let mut d = one;
            bch.iter(|| b.ntt(&mut d, 1, &NttConfig::forward()).unwrap())
        });
        let h = b.load_bases_g1(pts.clone() as SharedPoints<_>).unwrap();
        g.bench_function(format!("msm_g1 1 point/{name}"), |bch| {
            let mut out = [G1Jacobian::default()];
            bch.iter(|| b.msm_g1(h, &[MsmJob::new(0, &one[..1])], &mut out).unwrap())
        });
        b.free_bases(h).unwrap();
    }
    g.finish();
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn interleaved(s: &Setup) {
    let rounds = env_u32("BELLOWS_OVERHEAD_ROUNDS", 15) as usize;
    let (mut tb, mut tp) = (Vec::new(), Vec::new());
    prove_once(&s.keys[0], s.log, 1);
    prove_once(&s.keys[1], s.log, 1);
    for r in 0..rounds {
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        for k in order {
            let t = Instant::now();
            prove_once(&s.keys[k], s.log, r as u64);
            if k == 0 {
                tb.push(t.elapsed())
            } else {
                tp.push(t.elapsed())
            }
        }
    }
    let (mb, mp) = (median(&mut tb), median(&mut tp));
    let ratio = mp.as_secs_f64() / mb.as_secs_f64();
    println!(
        "interleaved, {rounds} rounds of synthetic 2^{}: builtin median {:.2} ms, plugin median {:.2} ms, \
         plugin/builtin = {ratio:.4} ({:+.2}%)",
        s.log,
        mb.as_secs_f64() * 1e3,
        mp.as_secs_f64() * 1e3,
        (ratio - 1.0) * 100.0
    );
}

fn all(c: &mut Criterion) {
    let s = setup();
    benches(c, &s);
    interleaved(&s);
}

criterion_group!(group, all);

fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();
}
