//! `bellows bench`: per-phase proving times with benchmark-only parameters.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bellows_core::{
    circuits::witness_seed,
    groth16::{limits, prover::ProvingKey, setup},
    rng::ProofRng,
};

use crate::cli::BenchArgs;
use crate::cmd::prove::prove_batch;
use crate::common::{
    circuit_plan, fmt_duration, fmt_secs, open_backend, progress, spinner, Globals, Stat,
};
use crate::error::Result;
use crate::outln;

/// The machine-readable result (`--json`).
#[derive(Debug, serde::Serialize)]
pub struct BenchReport {
    /// Circuit name.
    pub circuit: String,
    /// One-line description of the instance.
    pub description: String,
    /// log2 of the domain.
    pub log_size: u32,
    /// Constraints, input constraints included.
    pub constraints: usize,
    /// `--bits-pct` (synthetic), else null.
    pub bits_pct: Option<u8>,
    /// Proofs per repetition.
    pub count: u32,
    /// Timed repetitions.
    pub reps: u32,
    /// Backend name.
    pub backend: String,
    /// Backend version.
    pub backend_version: String,
    /// Rayon threads.
    pub threads: usize,
    /// Always `"benchmark-only"`.
    pub params_kind: &'static str,
    /// Seconds to generate the parameters.
    pub params_generation_s: f64,
    /// Seconds to load them on the backend.
    pub params_load_s: f64,
    /// Per phase: median and minimum over the repetitions (seconds, for the whole batch).
    pub phases: Phases,
    /// `count / median total`.
    pub proofs_per_sec: f64,
}

/// Statistics of each phase.
#[derive(Debug, Default, serde::Serialize)]
pub struct Phases {
    /// Circuit synthesis (all circuits of the batch).
    pub synthesis: Stat,
    /// Quotient polynomial on the backend.
    pub h_poly: Stat,
    /// The four G1 MSMs on the backend.
    pub msm_g1: Stat,
    /// The G2 MSM on CPU threads (overlaps h_poly and msm_g1).
    pub msm_g2: Stat,
    /// Waiting for the G2 MSM plus assembly.
    pub finalize: Stat,
    /// Synthesis to finished proofs.
    pub total: Stat,
}

/// Runs the command.
pub fn run(args: &BenchArgs, g: &Globals) -> Result<()> {
    let (spec, shape) = circuit_plan(&args.circuit)?;
    limits::check_memory(
        &format!(
            "benchmarking {} proof(s) of {} (domain 2^{}) as one batch",
            args.count,
            args.circuit.circuit,
            shape.domain.trailing_zeros()
        ),
        shape.fast_setup_bytes().max(limits::proving_bytes(
            &shape,
            shape.params_bytes(),
            args.count.into(),
            args.count.into(),
            2,
        )),
    )?;
    let backend = open_backend(&args.backend.backend, g)?;
    let info = backend.info();
    if !args.json {
        outln!("circuit: {}", spec.description());
        outln!(
            "backend: {} {}, {} threads",
            info.name,
            info.version,
            rayon::current_num_threads()
        );
        outln!("parameters: benchmark-only (fast generator; these proofs do not verify)");
    }
    let t = Instant::now();
    let pb = spinner("generating benchmark-only parameters");
    let params = setup::generate_benchmark_parameters(spec.blank(), args.seed);
    pb.finish_and_clear();
    let params = Arc::new(params?);
    let gen_time = t.elapsed();
    let t = Instant::now();
    let key = ProvingKey::new(params, backend)?;
    let load_time = t.elapsed();

    let mut rng = ProofRng::seeded(args.seed);
    let seeds: Vec<u64> = (0..u64::from(args.count))
        .map(|i| witness_seed(args.seed, i))
        .collect();
    let mut samples: [Vec<Duration>; 6] = Default::default();
    let pb = progress(u64::from(args.warmup + args.reps), "bench");
    for rep in 0..args.warmup + args.reps {
        let t = Instant::now();
        let out = prove_batch(&key, &spec, &seeds, &mut rng, &|_| {});
        let total = t.elapsed();
        let out = match out {
            Ok(o) => o,
            Err(e) => {
                pb.abandon();
                return Err(e.into());
            }
        };
        pb.inc(1);
        if rep < args.warmup {
            continue;
        }
        let tm = out.timings;
        for (v, d) in samples.iter_mut().zip([
            out.synthesis,
            tm.h_poly,
            tm.msm_g1,
            tm.msm_g2,
            tm.finalize,
            total,
        ]) {
            v.push(d);
        }
    }
    pb.finish_and_clear();

    let [syn, h, g1, g2, fin, total] = samples.map(|v| Stat::of(&v));
    let report = BenchReport {
        circuit: spec.name().to_string(),
        description: spec.description(),
        log_size: spec.log_domain(),
        constraints: spec.num_constraints(),
        bits_pct: args
            .circuit
            .bits_pct
            .or((spec.name() == "synthetic").then_some(0)),
        count: args.count,
        reps: args.reps,
        backend: info.name,
        backend_version: info.version,
        threads: rayon::current_num_threads(),
        params_kind: "benchmark-only",
        params_generation_s: gen_time.as_secs_f64(),
        params_load_s: load_time.as_secs_f64(),
        phases: Phases {
            synthesis: syn,
            h_poly: h,
            msm_g1: g1,
            msm_g2: g2,
            finalize: fin,
            total,
        },
        proofs_per_sec: f64::from(args.count) / total.median_s,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| bellows_core::Error::invalid(format!("serialising the report: {e}")))?;
        outln!("{text}");
        return Ok(());
    }
    outln!(
        "params: generated in {}, loaded in {}",
        fmt_duration(gen_time),
        fmt_duration(load_time)
    );
    outln!(
        "{} rep(s) of {} proof(s){}:",
        args.reps,
        args.count,
        if args.warmup > 0 {
            format!(" after {} warm-up", args.warmup)
        } else {
            String::new()
        }
    );
    outln!("  {:<28} {:>10} {:>10}", "phase", "median", "min");
    let p = &report.phases;
    for (name, s) in [
        ("synthesis", p.synthesis),
        ("h_poly (NTTs)", p.h_poly),
        ("G1 MSMs (H, L, A, B)", p.msm_g1),
        ("G2 MSM (CPU, overlapped)", p.msm_g2),
        ("finalize", p.finalize),
        ("total", p.total),
    ] {
        outln!(
            "  {:<28} {:>10} {:>10}",
            name,
            fmt_secs(s.median_s),
            fmt_secs(s.min_s)
        );
    }
    outln!("proofs/s: {:.3}", report.proofs_per_sec);
    Ok(())
}
