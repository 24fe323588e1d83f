//! `bellows prove`: proofs of built-in circuit instances with a parameters file.

use std::sync::Arc;
use std::time::Instant;

use bellows_core::{
    circuits::{witness_seed, CircuitSpec},
    groth16::{
        io::{self, PointCheck},
        prover::{self, ProverTimings, ProvingKey},
        ParamsKind, Proof,
    },
    pce::Pce,
    pipeline::{Job, Pipeline, PipelineConfig},
    rng::ProofRng,
    Result,
};
use blstrs::Scalar;
use rand_core::RngCore;

use crate::backend_opts::{g2_policy, open as open_backend};
use crate::cli::ProveArgs;
use crate::common::{
    check_params_fit, circuit_spec, fmt_duration, progress, spinner, warn_benchmark_only,
    write_text_atomically, Globals,
};

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
/// system `pce` when given, else directly) and proves them as one batch.
pub fn prove_batch(
    key: &ProvingKey,
    spec: &CircuitSpec,
    seeds: &[u64],
    rng: &mut (impl RngCore + ?Sized),
    pce: Option<&Pce>,
) -> Result<BatchOutcome> {
    let t = Instant::now();
    let circuits = seeds.iter().map(|&s| spec.with_witness(s)).collect();
    let synthesized = crate::cmd::pce::synthesize_with(pce, circuits)?;
    let synthesis = t.elapsed();
    let inputs = synthesized
        .iter()
        .map(|s| s.public_inputs().to_vec())
        .collect();
    let (proofs, timings) = prover::start(key, synthesized, rng)?.finalize_timed()?;
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
    for chunk in seeds.chunks(batch) {
        let out = prove_batch(key, spec, chunk, rng, pce)?;
        let tm = out.timings;
        tracing::info!(
            "batch of {}: synthesis {}, G1 phase {}, G2 MSM {} ({}), finalize {}",
            chunk.len(),
            fmt_duration(out.synthesis),
            fmt_duration(tm.g1_phase),
            fmt_duration(tm.msm_g2),
            crate::cmd::bench::g2_where(tm.g2_on_backend),
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
pub fn run(args: &ProveArgs, g: &Globals) -> Result<()> {
    let spec = circuit_spec(&args.circuit)?;
    let check = if args.skip_subgroup_checks {
        PointCheck::CurveOnly
    } else {
        PointCheck::Full
    };
    let t = Instant::now();
    let pb = spinner("reading parameters");
    let params = io::read_parameters(&args.params, check);
    pb.finish_and_clear();
    let params = Arc::new(params?);
    let read_time = t.elapsed();
    if params.kind() == ParamsKind::BenchmarkOnly {
        warn_benchmark_only(&format!("{}", args.params.display()));
    }
    check_params_fit(&params, &spec)?;
    let backend = open_backend(&args.backend, g)?;
    let t = Instant::now();
    let key = Arc::new(ProvingKey::with_g2_policy(
        params,
        backend,
        g2_policy(&args.backend)?,
    )?);
    let load_time = t.elapsed();
    println!("circuit: {}", spec.description());
    println!(
        "parameters: read {} ({}), loaded on {} in {}",
        fmt_duration(read_time),
        crate::common::kind_name(key.params().kind()),
        args.backend.backend,
        fmt_duration(load_time)
    );

    let pce = crate::cmd::pce::for_prove(&args.pce, &spec)?;

    let count = args.count as usize;
    let batch = args.batch_size.map_or(count, |b| b as usize).min(count);
    let mut rng = ProofRng::from_option(args.seed);
    let base_seed = args.seed.unwrap_or_else(|| ProofRng::os().next_u64());
    let seeds: Vec<u64> = (0..count as u64)
        .map(|i| witness_seed(base_seed, i))
        .collect();

    let pb = progress(count as u64, "proving");
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
            return Err(e);
        }
    };
    pb.finish_and_clear();
    let prove_time = t.elapsed();

    io::write_proofs_file(&proofs, &args.out)?;
    let json = inputs_json(&inputs);
    match &args.inputs_out {
        Some(path) => write_text_atomically(path, &format!("{json}\n"), "public inputs file")?,
        None => println!("public inputs: {json}"),
    }
    println!(
        "proved {count} in {} ({:.2} proofs/s)",
        fmt_duration(prove_time),
        count as f64 / prove_time.as_secs_f64()
    );
    println!(
        "wrote {} ({} bytes)",
        args.out.display(),
        proofs.len() * 192
    );
    if let Some(path) = &args.inputs_out {
        println!("wrote {}", path.display());
    }
    Ok(())
}
