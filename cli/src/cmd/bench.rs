//! `bellows bench`: per-phase proving times with benchmark-only parameters.

use clap::Args;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellows_core::{
    circuits::witness_seed,
    groth16::{limits, prover::ProvingKey, setup},
    rng::ProofRng,
};

use crate::backend_opts::{g2_policy, open as open_backend, residence};
use crate::circuit::circuit_plan;
use crate::cli::Globals;
use crate::cmd::prove::prove_batch;
use crate::error::Result;
use crate::outln;
use crate::progress::{progress, spinner};
use crate::stats::{fmt_duration, fmt_secs, Stat};

/// `bellows bench --help`.
pub const BENCH_ABOUT: &str = "Benchmark proving. Generates benchmark-only parameters for the circuit \
(fast, no trusted setup; the proofs do not verify, which a benchmark does not need), loads them on \
the backend, then R times: synthesises N circuits and proves them as one batch. Reports the \
median, the minimum and the first repetition of each phase (the first pays for fresh host memory \
that later ones reuse; `--warmup` excludes it): synthesis, batch buffers (each circuit's a, b, c \
laid into the batch's buffers), the G1 phase (h_poly, the quotient's NTTs, and the G1 MSMs H, L, \
A, B, in one backend call), G2 MSM (on CPU threads overlapping the G1 phase; with `--g2` putting \
it on the backend it runs in the G1 phase's call, and one row times both), release (freeing the synthesised circuits), finalize \
(waiting for G2 plus assembly) and total (synthesis to proofs), and proofs per second from the \
median total. With RUST_LOG=info each repetition is also logged.\n\n\
`--json` prints one machine-readable JSON object on stdout instead of the table.\n\n\
Throughput mode: `--daemon ADDR --count N --concurrency J` submits N jobs (of `--partitions P`) \
to a `bellows serve` daemon, J at a time, and reports proofs per second, per-phase medians per \
partition and each device's busy fraction; `--concurrency J` without --daemon runs the same \
scheduler in this process (docs/serve.md).\n\n\
Examples:\n  bellows bench --circuit synthetic --log-size 16\n  \
bellows bench --circuit synthetic --log-size 20 --bits-pct 80 --count 2 --reps 3 --json\n  \
bellows bench --circuit sha256 --log-size 17 --backend cpu";

/// `bellows bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The circuit.
    #[command(flatten)]
    pub circuit: crate::circuit::CircuitArgs,
    /// Proofs per repetition (proved as one batch).
    #[arg(long, short = 'n', value_name = "N", default_value_t = 1,
          value_parser = crate::values::proof_count)]
    pub count: u32,
    /// Timed repetitions.
    #[arg(long, short = 'r', value_name = "R", default_value_t = 3,
          value_parser = crate::values::positive_u32)]
    pub reps: u32,
    /// Untimed repetitions first (warm caches and allocator).
    #[arg(long, value_name = "W", default_value_t = 0, value_parser = crate::values::u32_any)]
    pub warmup: u32,
    /// The backend.
    #[command(flatten)]
    pub backend: crate::backend_opts::BackendArg,
    /// Seed for parameters, witnesses and r, s [default: 0, so runs are comparable].
    #[arg(long, value_name = "S", default_value_t = 0, value_parser = crate::values::seed)]
    pub seed: u64,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Synthesise directly instead of with a pre-compiled constraint system (recorded in memory
    /// before the timed reps).
    #[arg(long = "no-pce")]
    pub no_pce: bool,
    /// Time synthesis only, direct against pre-compiled, on the same circuits and witnesses;
    /// the last line is `ratio pce/direct: X.XX`. With `--backend cuda`, pre-compiled synthesis
    /// writes into the pinned host memory that backend provides, as proving does.
    #[arg(long = "compare-synthesis", conflicts_with_all = ["json", "no_pce"])]
    pub compare_synthesis: bool,
    /// Tuning aid: set environment variable NAME to V1, V2, … in turn before each rep (rep i,
    /// warm-ups included, gets value i mod k), and report the phases per value. Backend knobs
    /// read at every call (the CUDA backend's `BELLOWS_*` variables, docs/cuda.md) are then
    /// compared side by side in one process, over the same parameters and witnesses.
    #[arg(long = "alternate-env", value_name = "NAME=V1,V2,..",
          value_parser = crate::values::env_alternation, conflicts_with = "compare_synthesis")]
    pub alternate_env: Option<(String, Vec<String>)>,
    /// Throughput mode (`--count` jobs, `--concurrency` at once) on a daemon or in process.
    #[command(flatten)]
    pub serve: crate::cmd::serve_bench::BenchServeArgs,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

/// The device phases of a prover run in one line: the G1 phase and the G2 MSM beside it, or,
/// with the G2 MSM on the backend, the one call that did both.
pub fn device_phases(tm: &bellows_core::groth16::prover::ProverTimings) -> String {
    if tm.g2_on_backend {
        format!(
            "G1 phase and G2 MSM (h_poly + G1 MSMs, then G2, one backend call) {}",
            fmt_duration(tm.g1_phase)
        )
    } else {
        format!(
            "G1 phase (h_poly + G1 MSMs) {}, G2 MSM {} (CPU threads, overlapped)",
            fmt_duration(tm.g1_phase),
            fmt_duration(tm.msm_g2)
        )
    }
}

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
    /// Seconds to make the batch's host memory ready before the reps (pinned on a device
    /// backend; 0 where the backend lends none).
    pub host_reserve_s: f64,
    /// Where the G2 MSM ran: `"backend"` or `"cpu"` (`--g2`).
    pub g2_on: &'static str,
    /// Per phase: median, minimum and first of the repetitions (seconds, for the whole batch).
    pub phases: Phases,
    /// `count / median total`.
    pub proofs_per_sec: f64,
    /// `"pce"` (pre-compiled constraint system, recorded before the timed reps) or `"direct"`.
    pub synthesis_mode: &'static str,
    /// Seconds to record the constraint system (null with `--no-pce`).
    pub pce_recording_s: Option<f64>,
    /// Size of the recording in bytes (null with `--no-pce`).
    pub pce_bytes: Option<u64>,
    /// With `--alternate-env`: the variable and, per value, its reps' phases.
    pub alternate: Option<Alternation>,
}

/// `--alternate-env`'s results: the variable set before each rep, and per value the timed
/// reps that ran with it.
#[derive(Debug, serde::Serialize)]
pub struct Alternation {
    /// The environment variable.
    pub name: String,
    /// One entry per value, in the order given.
    pub values: Vec<AlternateValue>,
}

/// The timed reps of one `--alternate-env` value.
#[derive(Debug, serde::Serialize)]
pub struct AlternateValue {
    /// The value.
    pub value: String,
    /// Timed reps that ran with it.
    pub reps: usize,
    /// Their G1 phase (with the G2 MSM on the backend, the one call of both).
    pub g1_phase: Stat,
    /// Their total.
    pub total: Stat,
}

/// Statistics of each phase.
#[derive(Debug, Default, serde::Serialize)]
pub struct Phases {
    /// Circuit synthesis (all circuits of the batch).
    pub synthesis: Stat,
    /// The G1 phase on the backend: the quotient polynomial and the four G1 MSMs, one composite
    /// call.
    pub g1_phase: Stat,
    /// The G2 MSM: on CPU threads (overlapping the G1 phase) or on the backend (after it).
    pub msm_g2: Stat,
    /// Waiting for the G2 MSM plus assembly.
    pub finalize: Stat,
    /// Host work before the G1 phase: each circuit's a, b, c laid into the batch's buffers.
    pub batch_buffers: Stat,
    /// Host work after the device work: freeing the synthesised circuits.
    pub release: Stat,
    /// Synthesis to finished proofs.
    pub total: Stat,
}

/// Runs the command.
pub fn run(args: &BenchArgs, g: &Globals) -> Result<()> {
    if args.compare_synthesis {
        return Ok(crate::cmd::pce::compare_synthesis(args, g)?);
    }
    let (spec, shape) = circuit_plan(&args.circuit)?;
    let backend = open_backend(&args.backend, g)?;
    let g2 = g2_policy(&args.backend)?;
    let info = backend.info();
    limits::check_memory(
        &format!(
            "benchmarking {} proof(s) of {} (domain 2^{}) as one batch on {}",
            args.count,
            args.circuit.circuit,
            shape.domain.trailing_zeros(),
            info.name
        ),
        shape.fast_setup_bytes().max(limits::proving_bytes_on(
            residence(&info),
            &shape,
            shape.params_bytes(),
            args.count.into(),
            args.count.into(),
            2,
        )),
    )?;
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
    let key = ProvingKey::with_g2_policy(params, backend, g2)?;
    let g2_on_backend = key.g2_on_backend();
    let load_time = t.elapsed();
    let recording = if args.no_pce {
        None
    } else {
        Some(crate::cmd::pce::record_for_bench(&spec)?)
    };
    let pce = recording.as_ref().map(|r| &r.pce);
    // Every rep proves a batch of the same shape: the host memory they take is made ready now
    // (pinned on a device backend), not on the first rep's critical path.
    let t = Instant::now();
    if pce.is_some() {
        bellows_core::groth16::reserve_batch(&key, args.count as usize)?;
    }
    let reserve_time = t.elapsed();

    let mut rng = ProofRng::seeded(args.seed);
    let seeds: Vec<u64> = (0..u64::from(args.count))
        .map(|i| witness_seed(args.seed, i))
        .collect();
    let mut samples: [Vec<Duration>; 7] = Default::default();
    // Per `--alternate-env` value: its timed reps' G1 phase and total.
    let alternate = args.alternate_env.as_ref();
    let mut per_value: Vec<(Vec<Duration>, Vec<Duration>)> =
        alternate.map_or(Vec::new(), |(_, v)| vec![Default::default(); v.len()]);
    let pb = progress(u64::from(args.warmup + args.reps), "bench");
    for rep in 0..args.warmup + args.reps {
        let setting = alternate.map(|(name, vals)| {
            let k = rep as usize % vals.len();
            // Set between reps, while the proving threads are idle: Rust's readers take the
            // environment's lock, and no C library thread is reading it then (the reason
            // edition 2024 makes set_var unsafe).
            std::env::set_var(name, &vals[k]);
            (k, format!(" ({name}={})", vals[k]))
        });
        let t = Instant::now();
        let out = prove_batch(&key, &spec, &seeds, &mut rng, pce, &|_| {});
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
        let row = [
            out.synthesis,
            tm.g1_phase,
            tm.msm_g2,
            tm.finalize,
            tm.batch_buffers,
            tm.release,
            total,
        ];
        for (v, d) in samples.iter_mut().zip(row) {
            v.push(d);
        }
        if let Some((k, _)) = &setting {
            per_value[*k].0.push(tm.g1_phase);
            per_value[*k].1.push(total);
        }
        tracing::info!(
            "rep {}/{}: total {}, synthesis {}, batch buffers {}, G1 phase {}, G2 MSM {}, \
             release {}, finalize {}{}",
            rep - args.warmup + 1,
            args.reps,
            fmt_duration(total),
            fmt_duration(out.synthesis),
            fmt_duration(tm.batch_buffers),
            fmt_duration(tm.g1_phase),
            fmt_duration(tm.msm_g2),
            fmt_duration(tm.release),
            fmt_duration(tm.finalize),
            setting.as_ref().map_or("", |(_, s)| s.as_str())
        );
    }
    pb.finish_and_clear();
    let alternate = alternate.map(|(name, vals)| Alternation {
        name: name.clone(),
        values: vals
            .iter()
            .zip(&per_value)
            .map(|(v, (g1, total))| AlternateValue {
                value: v.clone(),
                reps: g1.len(),
                g1_phase: Stat::of(g1),
                total: Stat::of(total),
            })
            .collect(),
    });

    let [syn, g1, g2s, fin, buffers, release, total] = samples.map(|v| Stat::of(&v));
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
        host_reserve_s: reserve_time.as_secs_f64(),
        g2_on: if g2_on_backend { "backend" } else { "cpu" },
        phases: Phases {
            synthesis: syn,
            g1_phase: g1,
            msm_g2: g2s,
            finalize: fin,
            batch_buffers: buffers,
            release,
            total,
        },
        proofs_per_sec: f64::from(args.count) / total.median_s,
        synthesis_mode: if pce.is_some() { "pce" } else { "direct" },
        pce_recording_s: recording.as_ref().map(|r| r.took.as_secs_f64()),
        pce_bytes: pce.map(|p| p.size_bytes()),
        alternate,
    };
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| bellows_core::Error::invalid(format!("serialising the report: {e}")))?;
        outln!("{text}");
        return Ok(());
    }
    outln!(
        "params: generated in {}, loaded in {}; the batch's host memory made ready in {}",
        fmt_duration(gen_time),
        fmt_duration(load_time),
        fmt_duration(reserve_time)
    );
    match &recording {
        Some(r) => outln!(
            "synthesis: pre-compiled constraint system, recorded in {} ({:.1} MB, {:.2} bytes \
             per non-zero); --no-pce to synthesise directly",
            fmt_duration(r.took),
            r.pce.size_bytes() as f64 / 1e6,
            r.pce.bytes_per_nonzero()
        ),
        None => outln!("synthesis: direct (--no-pce)"),
    }
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
    outln!(
        "  {:<44} {:>10} {:>10} {:>10}",
        "phase",
        "median",
        "min",
        "first"
    );
    let p = &report.phases;
    // With the G2 MSM on the backend it runs in the G1 phase's call (timed there).
    let (g1_row, g2_row) = if g2_on_backend {
        ("G1 phase + G2 MSM (one backend call)", None)
    } else {
        (
            "G1 phase (h_poly + G1 MSMs H, L, A, B)",
            Some(("G2 MSM (CPU threads, overlapped)", p.msm_g2)),
        )
    };
    let rows = [
        Some(("synthesis", p.synthesis)),
        Some(("batch buffers (a, b, c laid into one)", p.batch_buffers)),
        Some((g1_row, p.g1_phase)),
        g2_row,
        Some(("release (freeing the synthesised circuits)", p.release)),
        Some(("finalize", p.finalize)),
        Some(("total", p.total)),
    ];
    for (name, s) in rows.into_iter().flatten() {
        outln!(
            "  {:<44} {:>10} {:>10} {:>10}",
            name,
            fmt_secs(s.median_s),
            fmt_secs(s.min_s),
            fmt_secs(s.first_s)
        );
    }
    outln!("proofs/s: {:.3}", report.proofs_per_sec);
    if let Some(alt) = &report.alternate {
        outln!("per value of {} (timed reps only):", alt.name);
        for v in &alt.values {
            outln!(
                "  {}={:<20} reps {:>3}  {} median {:>10} min {:>10}  total median {:>10}",
                alt.name,
                v.value,
                v.reps,
                g1_row,
                fmt_secs(v.g1_phase.median_s),
                fmt_secs(v.g1_phase.min_s),
                fmt_secs(v.total.median_s)
            );
        }
    }
    Ok(())
}
