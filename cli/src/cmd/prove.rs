//! `bellows prove`: proofs of built-in circuit instances with a parameters file.

use std::sync::Arc;
use std::time::Instant;

use bellows_core::{
    circuits::{witness_seed, CircuitSpec},
    groth16::{
        io::{self, ParamsFile, PointCheck},
        limits::{self, Shape},
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

use crate::backend_opts::{g2_policy, open as open_backend, residence};
use crate::cli::ProveArgs;
use crate::common::{
    check_params_fit, circuit_plan, fmt_duration, progress, spinner, warn_benchmark_only, Globals,
};
use crate::output::{self, Out};
use crate::{errln, outln};

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
    let mut outs = vec![Out {
        opt: "--out",
        path: &args.out,
        what: "proof file",
    }];
    if let Some(p) = &args.inputs_out {
        outs.push(Out {
            opt: "--inputs-out",
            path: p,
            what: "public inputs file",
        });
    }
    let mut files = output::prepare(&[("--params", &args.params)], &outs, args.force)?.into_iter();
    let (proof_out, inputs_out) = (files.next().expect("--out"), files.next());

    // The file's shape (its length fields) against the circuit and the memory, before decoding.
    let t = Instant::now();
    let file = {
        let _s = tracing::debug_span!("open_params").entered();
        ParamsFile::open(&args.params)?
    };
    let shape = file.shape();
    check_params_fit(&shape, &spec, file.label())?;
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
        crate::common::kind_name(key.params().kind()),
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

    let json = inputs_json(&inputs);
    {
        let _s = tracing::debug_span!("write").entered();
        proof_out.commit(|w| proofs.iter().try_for_each(|p| io::write_proof(p, &mut *w)))?;
        if let Some(f) = inputs_out {
            f.commit_bytes(format!("{json}\n").as_bytes())?;
        }
    }
    if args.inputs_out.is_none() {
        outln!("{json}");
    }
    errln!(
        "proved {count} in {} ({:.2} proofs/s)",
        fmt_duration(prove_time),
        count as f64 / prove_time.as_secs_f64()
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
