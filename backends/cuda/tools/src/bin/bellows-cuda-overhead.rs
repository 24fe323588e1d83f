//! `bellows-cuda-overhead`: the cost of the plugin boundary for the CUDA backend. The same
//! backend proves the same synthetic circuit built into this program ([`CudaBackend`] linked in)
//! and through `libbellows_backend_cuda.so` (loaded as `bellows --backend cuda` loads it),
//! alternating proof by proof so that drift of the machine cannot favour one side; it prints both
//! medians and their ratio (issue 7 §6: within 2 %).
//!
//! ```text
//! bellows-cuda-overhead [--log 22] [--bits-pct 0] [--rounds 15] [--plugin PATH]
//! ```
//!
//! `--plugin` defaults to `libbellows_backend_cuda.so` beside this executable. Both sides use
//! GPU 0 with the default G2 policy (on the GPU), each with its own resident copy of the
//! parameters. The parameters are benchmark-only (no trusted setup stands behind them, so no
//! proof made with them verifies); instead, both sides prove every seed with the same
//! randomness, and their proofs must be equal byte for byte (a difference is exit status 1).
//! Bit-exactness against the CPU reference is `bellows conformance --backend cuda`'s job.

use std::{
    path::PathBuf,
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use bellows_core::{
    circuits::SyntheticCircuit,
    groth16::{
        prover::{prove, ProvingKey},
        setup::generate_benchmark_parameters,
    },
    plugin::load_backend,
    rng::ProofRng,
    Backend, BackendConfig,
};
use bellows_cuda::CudaBackend;

fn usage() -> ExitCode {
    eprintln!("usage: bellows-cuda-overhead [--log K] [--bits-pct P] [--rounds N] [--plugin PATH]");
    ExitCode::from(2)
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> ExitCode {
    let (mut log, mut bits, mut rounds) = (22u32, 0u8, 15usize);
    let mut plugin: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let Some(v) = args.next() else {
            return usage();
        };
        let ok = match a.as_str() {
            "--log" => v.parse().map(|x| log = x).is_ok(),
            "--bits-pct" => v.parse().map(|x| bits = x).is_ok(),
            "--rounds" => v.parse().map(|x| rounds = x).is_ok(),
            "--plugin" => {
                plugin = Some(v.into());
                true
            }
            _ => false,
        };
        if !ok || rounds == 0 {
            return usage();
        }
    }
    let plugin = plugin.unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|p| p.parent().map(|d| d.join("libbellows_backend_cuda.so")))
            .unwrap_or_else(|| "libbellows_backend_cuda.so".into())
    });
    match run(log, bits, rounds, &plugin) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(log: u32, bits: u8, rounds: usize, plugin: &std::path::Path) -> bellows_core::Result<bool> {
    let cfg = BackendConfig::default();
    let builtin: Arc<dyn Backend> = Arc::new(CudaBackend::with_config(&cfg)?);
    let loaded: Arc<dyn Backend> = load_backend(plugin, &cfg)?;
    let circuit = |seed: u64| {
        SyntheticCircuit::new(log, bits)
            .map(|c| c.with_witness(seed))
            .expect("synthetic circuit sizes are checked by SyntheticCircuit::new")
    };
    let t = Instant::now();
    let params = Arc::new(generate_benchmark_parameters(
        SyntheticCircuit::new(log, bits)?,
        1,
    )?);
    eprintln!("parameters 2^{log}: {:.1} s", t.elapsed().as_secs_f64());
    let keys = [
        ProvingKey::new(params.clone(), builtin)?,
        ProvingKey::new(params.clone(), loaded)?,
    ];
    let mut ok = true;
    let once = |k: usize, seed: u64| -> bellows_core::Result<(Duration, Vec<u8>)> {
        let c = circuit(seed);
        let t = Instant::now();
        let proofs = prove(&keys[k], vec![c], &mut ProofRng::seeded(seed))?;
        Ok((t.elapsed(), proofs[0].to_bytes().to_vec()))
    };
    let mut same = |seed: u64, a: &[u8], b: &[u8]| {
        if a != b {
            eprintln!("proof {seed}: built-in and plugin proofs differ");
            ok = false;
        }
    };
    // Warm-up (kernels, tables, pinned buffers), checked like the rest.
    let (w0, w1) = (once(0, 1)?, once(1, 1)?);
    same(1, &w0.1, &w1.1);
    let (mut tb, mut tp) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        let seed = 100 + r as u64;
        let order = if r % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut bytes: [Vec<u8>; 2] = Default::default();
        for k in order {
            let (dt, b) = once(k, seed)?;
            if k == 0 { &mut tb } else { &mut tp }.push(dt);
            bytes[k] = b;
        }
        same(seed, &bytes[0], &bytes[1]);
    }
    let (mb, mp) = (median(&mut tb), median(&mut tp));
    let ratio = mp.as_secs_f64() / mb.as_secs_f64();
    println!(
        "RESULT overhead cuda K={log} bits={bits} rounds={rounds}: built-in median {:.2} ms, \
         plugin median {:.2} ms, plugin/built-in = {ratio:.4} ({:+.2}%)",
        mb.as_secs_f64() * 1e3,
        mp.as_secs_f64() * 1e3,
        (ratio - 1.0) * 100.0
    );
    Ok(ok)
}
