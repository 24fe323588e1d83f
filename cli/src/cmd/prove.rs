//! `bellows prove`: proofs of built-in circuit instances with a parameters file.

use clap::Args;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use bellows_core::{
    circuits::{witness_seed, CircuitSpec},
    groth16::{
        io::{self, PointCheck},
        limits::{self, Shape},
        prover::{self, ProverTimings, ProvingKey},
        verifier::prepare_verifying_key,
        ParamsKind, Proof,
    },
    pce::Pce,
    pipeline::{Job, Pipeline, PipelineConfig},
    rng::ProofRng,
    Result,
};
use bellows_serve::verify::verify_all;
use blstrs::Scalar;
use rand_core::RngCore;

use crate::backend_opts::{g2_policy, open as open_backend, residence};
use crate::circuit::circuit_plan;
use crate::cli::Globals;
use crate::output::{self, Content};
use crate::params::{check_params_fit, warn_benchmark_only};
use crate::progress::{progress, spinner};
use crate::stats::fmt_duration;
use crate::{errln, outln};

/// `bellows prove --help`.
pub const PROVE_ABOUT: &str = "Prove N instances of a built-in circuit with a bellperson-format \
parameters file. Each instance gets a random witness (from `--seed` when given, else from the OS), \
and r, s are drawn the same way. The proofs are written concatenated (192 bytes each: compressed \
A ‖ B ‖ C, bellperson's encoding) and the public inputs as JSON: for one proof an array of \
decimal strings, for several proofs an array of such arrays.\n\n\
The circuit options must be the ones the parameters were made for; a mismatch is reported before \
any work, as are bad output paths, an output that is an input, an existing output without \
--force, and a job larger than the available memory. Every proof is verified against the \
parameters' verifying key before anything is written (a few pairings for all of them): proofs of \
parameters made for another circuit of the same shape are refused, not written. Without \
--inputs-out the public inputs are \
printed alone on stdout (status lines go to stderr). Parameters are read with full point checks (on the curve and in the subgroup) unless \
`--skip-subgroup-checks` (for files you wrote yourself). Benchmark-only parameters are accepted \
with a warning: their proofs do not verify.\n\n\
By default the N proofs are synthesised and proved in batches (`--batch-size`, default all N). \
`--pipeline` streams them instead through the pipeline scheduler: synthesis workers (half the \
cores) feed two device workers, and synthesised proofs waiting for the device never hold more \
than `--memory-budget` bytes. With `--seed`, each proof's r and s then come from its own stream, \
so the output is deterministic but differs from the batch mode's.\n\n\
`--daemon ADDR` proves on a `bellows serve` daemon instead (one job of --count partitions; \
--params is a path on the daemon's host) and writes the same files; with --seed they equal \
`--pipeline`'s byte for byte (docs/serve.md).\n\n\
Examples:\n  bellows prove --params s14.params --circuit synthetic --log-size 14 --out s14.proof \
--inputs-out s14.json\n  bellows prove --params s14.params --circuit synthetic --log-size 14 --count 8 \
--seed 1 --out batch.proof --inputs-out batch.json\n  bellows prove --params s14.params --circuit \
synthetic --log-size 14 --count 100 --pipeline --out many.proof --inputs-out many.json";

/// `bellows prove`.
#[derive(Debug, Args)]
pub struct ProveArgs {
    /// Parameters file (bellperson format), e.g. from `bellows setup`.
    #[arg(long, value_name = "FILE")]
    pub params: PathBuf,
    /// The circuit (must match the parameters).
    #[command(flatten)]
    pub circuit: crate::circuit::CircuitArgs,
    /// Number of proofs (instances with different random witnesses).
    #[arg(long, short = 'n', value_name = "N", default_value_t = 1,
          value_parser = crate::values::proof_count)]
    pub count: u32,
    /// Proofs synthesised and proved together per batch [default: all of --count].
    #[arg(long = "batch-size", value_name = "B", value_parser = crate::values::proof_count,
          conflicts_with = "pipeline")]
    pub batch_size: Option<u32>,
    /// Stream the proofs through the pipeline scheduler: synthesis workers feed device workers,
    /// with a memory budget, instead of proving batch after batch.
    #[arg(long)]
    pub pipeline: bool,
    /// Pipeline: bytes of synthesised proofs that may wait for the device, units allowed
    /// (`8GiB`) [default: half the free host memory].
    #[arg(long = "memory-budget", value_name = "BYTES", requires = "pipeline",
          value_parser = bellows_core::units::parse_bytes)]
    pub memory_budget: Option<u64>,
    /// The backend.
    #[command(flatten)]
    pub backend: crate::backend_opts::BackendArg,
    /// Seed for the witnesses and for r, s (deterministic, byte-identical proofs) [default: OS RNG].
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// Read the parameters checking only that points are on the curve (faster; for files you
    /// made yourself).
    #[arg(long = "skip-subgroup-checks")]
    pub skip_subgroup_checks: bool,
    /// Proof file to write (N × 192 bytes).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Public inputs file to write (JSON) [default: print them, alone, on stdout].
    #[arg(long = "inputs-out", value_name = "FILE.json")]
    pub inputs_out: Option<PathBuf>,
    /// Pre-compiled constraint system options.
    #[command(flatten)]
    pub pce: crate::cmd::pce::PceOpts,
    /// Replace output files that already exist.
    #[arg(long, short = 'f')]
    pub force: bool,
    /// Prove on a `bellows serve` daemon at ADDR (HOST:PORT) instead of in this process.
    #[command(flatten)]
    pub daemon: crate::cmd::client::DaemonArgs,
    /// On a daemon (`--daemon`, `submit`): the job's priority; higher runs first, overtaking
    /// queued partitions of lower.
    #[arg(
        long,
        value_name = "P",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub priority: i32,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

/// Proofs of one batch with their public inputs and where the time went.
pub struct BatchOutcome {
    /// The proofs, in instance order.
    pub proofs: Vec<Proof>,
    /// Public inputs of each proof (constant one excluded).
    pub inputs: Vec<Vec<Scalar>>,
    /// Synthesis wall time.
    pub synthesis: std::time::Duration,
    /// Prover phases.
    pub timings: ProverTimings,
}

/// Synthesises the instances with witness seeds `seeds` (with the pre-compiled constraint
/// system `pce` when given, else directly) and proves them as one batch, telling `phase` when
/// each phase starts (`"synthesis"`, `"proving"`).
pub fn prove_batch(
    key: &ProvingKey,
    spec: &CircuitSpec,
    seeds: &[u64],
    rng: &mut (impl RngCore + ?Sized),
    pce: Option<&Pce>,
    phase: &dyn Fn(&str),
) -> Result<BatchOutcome> {
    let t = Instant::now();
    phase("synthesis");
    let synthesized = {
        let _s = tracing::debug_span!("synthesis", proofs = seeds.len()).entered();
        let circuits = seeds.iter().map(|&s| spec.with_witness(s)).collect();
        crate::cmd::pce::synthesize_with(pce, circuits, Some(key.backend()))?
    };
    let synthesis = t.elapsed();
    let inputs = synthesized
        .iter()
        .map(|s| s.public_inputs().to_vec())
        .collect();
    phase("proving (h_poly, MSMs)");
    let (proofs, timings) = {
        let _s = tracing::debug_span!("prove", proofs = seeds.len()).entered();
        prover::start(key, synthesized, rng)?.finalize_timed()?
    };
    tracing::debug!(
        "prover phases: {}, finalize {}",
        crate::cmd::bench::device_phases(&timings),
        fmt_duration(timings.finalize)
    );
    Ok(BatchOutcome {
        proofs,
        inputs,
        synthesis,
        timings,
    })
}

/// Proves the instances batch after batch (`batch` instances each); returns the proofs and public
/// inputs in seed order.
fn prove_batches(
    key: &ProvingKey,
    spec: &CircuitSpec,
    seeds: &[u64],
    batch: usize,
    rng: &mut (impl RngCore + ?Sized),
    pb: &indicatif::ProgressBar,
    pce: Option<&Pce>,
) -> Result<(Vec<Proof>, Vec<Vec<Scalar>>)> {
    let mut proofs = Vec::with_capacity(seeds.len());
    let mut inputs = Vec::with_capacity(seeds.len());
    let batches = seeds.len().div_ceil(batch);
    if batches > 1 && pce.is_some() {
        // Batch after batch of one shape: their host memory made ready once, up front.
        bellows_core::groth16::reserve_batch(key, batch)?;
    }
    for (b, chunk) in seeds.chunks(batch).enumerate() {
        let phase = |p: &str| {
            pb.set_message(if batches == 1 {
                p.to_string()
            } else {
                format!("batch {}/{batches}: {p}", b + 1)
            })
        };
        let out = prove_batch(key, spec, chunk, rng, pce, &phase)?;
        let tm = out.timings;
        tracing::info!(
            "batch of {}: synthesis {}, {}, finalize {}",
            chunk.len(),
            fmt_duration(out.synthesis),
            crate::cmd::bench::device_phases(&tm),
            fmt_duration(tm.finalize)
        );
        proofs.extend(out.proofs);
        inputs.extend(out.inputs);
        pb.inc(chunk.len() as u64);
    }
    Ok((proofs, inputs))
}

/// Proves one single-partition job per witness seed through the pipeline scheduler; returns the
/// proofs and public inputs in seed order.
fn prove_pipelined(
    key: Arc<ProvingKey>,
    spec: &CircuitSpec,
    seeds: &[u64],
    args: &ProveArgs,
    pb: &indicatif::ProgressBar,
    pce: Option<Arc<Pce>>,
) -> Result<(Vec<Proof>, Vec<Vec<Scalar>>)> {
    let mut cfg = PipelineConfig::default();
    cfg.seed = args.seed;
    cfg.memory_budget = args.memory_budget;
    let mut pipeline = Pipeline::new(vec![key], cfg)?;
    if let Some(p) = pce {
        pipeline = pipeline.with_pce(p);
    }
    let mut inputs = Vec::with_capacity(seeds.len());
    let mut jobs = Vec::with_capacity(seeds.len());
    for (i, &s) in seeds.iter().enumerate() {
        let (circuit, public) = spec.instance(s)?;
        inputs.push(public);
        jobs.push(Job {
            id: i as u64,
            partitions: vec![circuit],
        });
    }
    let mut proofs: Vec<Option<Proof>> = vec![None; seeds.len()];
    let mut first_error = None;
    let stats = pipeline.run(jobs, |r| {
        pb.inc(1);
        match r.proofs {
            Ok(mut p) => proofs[r.id as usize] = p.pop(),
            Err(e) => {
                first_error.get_or_insert((r.id, e));
            }
        }
    })?;
    if let Some((id, e)) = first_error {
        return Err(bellows_core::Error::Pipeline(format!("proof {id}: {e}")));
    }
    tracing::info!(
        "pipeline: {} proofs in {}, peak {} of {} budget bytes in flight",
        stats.partitions,
        fmt_duration(stats.wall),
        stats.peak_reserved_bytes,
        stats.budget_bytes
    );
    let proofs = proofs
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            p.ok_or_else(|| bellows_core::Error::Pipeline(format!("proof {i} was not delivered")))
        })
        .collect::<Result<_>>()?;
    Ok((proofs, inputs))
}

/// Formats public inputs for a file: one proof → a flat array; several → an array of arrays.
pub fn inputs_json(inputs: &[Vec<Scalar>]) -> String {
    if inputs.len() == 1 {
        io::format_public_inputs_json(&inputs[0])
    } else {
        let parts: Vec<String> = inputs
            .iter()
            .map(|i| io::format_public_inputs_json(i))
            .collect();
        format!("[{}]", parts.join(","))
    }
}

/// Runs the command.
pub fn run(args: &ProveArgs, g: &Globals) -> crate::error::Result<()> {
    let (spec, _) = circuit_plan(&args.circuit)?;
    let check = if args.skip_subgroup_checks {
        PointCheck::CurveOnly
    } else {
        PointCheck::Full
    };
    // Outputs first: a bad path, an output that is an input, an existing file without --force
    // are refused before anything is read or proved.
    let outputs = output::prepare(
        &[("--params", &args.params)],
        &output::proof_outputs(&args.out, args.inputs_out.as_deref()),
        args.force,
    )?;

    // The file's shape (its length fields) against the circuit and the memory, before decoding.
    // Read with checked reads, never mapped: a file truncated or rewritten while it is read is
    // an error, not a SIGBUS.
    let t = Instant::now();
    let file = {
        let _s = tracing::debug_span!("open_params").entered();
        io::ParamsFile::open(&args.params)?
    };
    let shape = file.shape();
    check_params_fit(
        &shape,
        &spec,
        &format!("parameters file {}", args.params.display()),
    )?;
    let count = args.count as usize;
    let batch = if args.pipeline {
        // Two device workers and a few synthesised proofs waiting (bounded by the budget).
        count.min(4)
    } else {
        args.batch_size.map_or(count, |b| b as usize).min(count)
    };
    // The backend first: where it keeps its copies decides how much host memory the proofs
    // need (an accelerator's are in device memory).
    let backend = open_backend(&args.backend, g)?;
    let need = limits::proving_bytes_on(
        residence(&backend.info()),
        &Shape {
            domain: shape.domain_size as u64,
            vars: (shape.num_inputs + shape.num_aux) as u64,
        },
        shape.decoded_bytes,
        count as u64,
        batch as u64,
        spec.num_public_inputs() as u64,
    );
    limits::check_memory(
        &format!(
            "proving {count} proof(s) in batches of {batch} (lower --batch-size or --count, or \
             use --pipeline)"
        ),
        need,
    )?;
    let params = {
        let _s = tracing::debug_span!("decode_params").entered();
        let points = shape.num_inputs + shape.domain_size - 1
            + shape.num_aux
            + shape.a_len
            + 2 * shape.b_len;
        let pb = progress(points as u64, "reading");
        pb.set_message(format!("points of {}", args.params.display()));
        let p = file.decode_with_progress(check, &|n| pb.inc(n));
        pb.finish_and_clear();
        p?
    };
    drop(file);
    let params = Arc::new(params);
    let read_time = t.elapsed();
    if params.kind() == ParamsKind::BenchmarkOnly {
        warn_benchmark_only(&format!("{}", args.params.display()));
    }
    let t = Instant::now();
    let key = {
        let _s = tracing::debug_span!("load_params_on_backend").entered();
        Arc::new(ProvingKey::with_g2_policy(
            params,
            backend,
            g2_policy(&args.backend)?,
        )?)
    };
    let load_time = t.elapsed();
    // Status lines go to stderr: stdout carries only the public inputs (without --inputs-out),
    // so that `prove … > inputs.json` gives a file `verify` reads.
    errln!("circuit: {}", spec.description());
    errln!(
        "parameters: read {} ({}), loaded on {} in {}",
        fmt_duration(read_time),
        crate::params::kind_name(key.params().kind()),
        args.backend.backend,
        fmt_duration(load_time)
    );

    let pce = crate::cmd::pce::for_prove(&args.pce, &spec)?;

    let mut rng = ProofRng::from_option(args.seed);
    let base_seed = args.seed.unwrap_or_else(|| ProofRng::os().next_u64());
    let seeds: Vec<u64> = (0..count as u64)
        .map(|i| witness_seed(base_seed, i))
        .collect();

    let pb = if count == 1 || batch == count && !args.pipeline {
        spinner("proving")
    } else {
        progress(count as u64, "proving")
    };
    let t = Instant::now();
    let result = if args.pipeline {
        prove_pipelined(key.clone(), &spec, &seeds, args, &pb, pce)
    } else {
        prove_batches(&key, &spec, &seeds, batch, &mut rng, &pb, pce.as_deref())
    };
    let (proofs, inputs) = match result {
        Ok(o) => o,
        Err(e) => {
            pb.abandon();
            return Err(e.into());
        }
    };
    pb.finish_and_clear();
    let prove_time = t.elapsed();

    // Nothing is written that does not verify (parameters of another circuit with the same
    // shape, a damaged pre-compiled constraint system).
    let verify_time = {
        let _s = tracing::debug_span!("verify").entered();
        let t = Instant::now();
        if key.params().kind() == ParamsKind::Trusted {
            let pvk = prepare_verifying_key(&key.params().vk);
            verify_all(&pvk, &proofs, &inputs, &|i| format!("proof {i}")).map_err(|e| {
                bellows_core::Error::VerificationFailed(format!(
                    "{e}: nothing was written. The circuit options must be the ones the \
                     parameters were made for (the same --bits-pct too), and a pre-compiled \
                     constraint system may be damaged (prove with --no-pce, or rebuild it with \
                     `bellows pce build`)"
                ))
            })?;
        }
        t.elapsed()
    };
    let json = inputs_json(&inputs);
    {
        let _s = tracing::debug_span!("write").entered();
        let line = format!("{json}\n");
        let mut contents: Vec<Content<'_>> = vec![Box::new(|w| {
            proofs.iter().try_for_each(|p| io::write_proof(p, &mut *w))
        })];
        if args.inputs_out.is_some() {
            contents.push(output::bytes(line.as_bytes()));
        }
        outputs.commit(contents)?;
    }
    if args.inputs_out.is_none() {
        outln!("{json}");
    }
    errln!(
        "proved {count} in {} ({:.2} proofs/s), verified in {}",
        fmt_duration(prove_time),
        count as f64 / prove_time.as_secs_f64(),
        fmt_duration(verify_time)
    );
    errln!(
        "wrote {} ({} bytes)",
        args.out.display(),
        proofs.len() * 192
    );
    if let Some(path) = &args.inputs_out {
        errln!("wrote {}", path.display());
    }
    Ok(())
}
