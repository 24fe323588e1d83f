//! `bellows demo`: setup, prove and verify a built-in circuit end to end, with timings.

use clap::Args;
use std::sync::Arc;
use std::time::Instant;

use bellows_core::{
    circuits::witness_seed,
    groth16::limits,
    groth16::{
        prover::ProvingKey,
        setup,
        verifier::{prepare_verifying_key, verify_proof},
    },
    rng::ProofRng,
    Error,
};
use ff::Field;
use rand_core::RngCore;

use crate::backend_opts::{g2_policy, open as open_backend};
use crate::circuit::{circuit_plan, CircuitArgs};
use crate::cli::Globals;
use crate::cmd::prove::prove_batch;
use crate::error::Result;
use crate::outln;
use crate::progress::spinner;
use crate::stats::fmt_duration;
use crate::stdio::warn;

/// `bellows demo --help`.
pub const DEMO_ABOUT: &str = "Run the whole Groth16 flow on a built-in circuit, in memory, with \
timings: a real trusted setup (random toxic waste, discarded), synthesis, proving on the chosen \
backend, and verification of the proof; then a check that the same proof is rejected for a wrong \
public input. The default (synthetic, 2^12 constraints) finishes in seconds on two cores.\n\n\
Examples:\n  bellows demo\n  bellows demo --log-size 14 --seed 7\n  bellows demo --circuit sha256";

/// `bellows demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// The circuit [default: synthetic 2^12].
    #[command(flatten)]
    pub circuit: CircuitArgs,
    /// The backend.
    #[command(flatten)]
    pub backend: crate::backend_opts::BackendArg,
    /// Seed for the toxic waste, witness and r, s (INSECURE setup; reproducible run).
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

fn step(n: u32, what: &str, d: std::time::Duration) {
    outln!("{n}. {what:<40} {:>10}", fmt_duration(d));
}

/// Runs the command.
pub fn run(args: &DemoArgs, g: &Globals) -> Result<()> {
    let mut circuit = args.circuit.clone();
    if circuit.circuit == "synthetic" && circuit.log_size.is_none() {
        circuit.log_size = Some(12);
    }
    let (spec, shape) = circuit_plan(&circuit)?;
    limits::check_memory(
        &format!("the demo's trusted setup of {}", spec.description()),
        shape.setup_bytes().saturating_add(shape.proof_bytes()),
    )?;
    let backend = open_backend(&args.backend, g)?;
    let info = backend.info();
    outln!("circuit: {}", spec.description());
    outln!(
        "backend: {} {} ({} threads)",
        info.name,
        info.version,
        rayon::current_num_threads()
    );
    if args.seed.is_some() {
        warn("--seed makes the setup's toxic waste reproducible: fine for a demo, insecure otherwise");
    }
    let mut rng = ProofRng::from_option(args.seed);
    let total = Instant::now();

    let t = Instant::now();
    let pb = spinner("trusted setup");
    let params = setup::generate_random_parameters(spec.blank(), &mut rng);
    pb.finish_and_clear();
    let params = Arc::new(params?);
    step(1, "setup (real, toxic waste discarded)", t.elapsed());

    let t = Instant::now();
    let key = ProvingKey::with_g2_policy(params.clone(), backend, g2_policy(&args.backend)?)?;
    step(2, &format!("load parameters on {}", info.name), t.elapsed());

    let seed = witness_seed(args.seed.unwrap_or_else(|| rng.next_u64()), 0);
    let t = Instant::now();
    let pb = spinner("proving");
    let out = prove_batch(&key, &spec, &[seed], &mut rng, None, &|p| {
        pb.set_message(format!("proving: {p}"))
    });
    pb.finish_and_clear();
    let out = out?;
    let tm = out.timings;
    step(3, "prove", t.elapsed());
    outln!(
        "     synthesis {}, {}, finalize {}",
        fmt_duration(out.synthesis),
        crate::cmd::bench::device_phases(&tm),
        fmt_duration(tm.finalize)
    );

    let t = Instant::now();
    let pvk = prepare_verifying_key(&params.vk);
    let (proof, inputs) = (&out.proofs[0], &out.inputs[0]);
    let ok = verify_proof(&pvk, proof, inputs)?;
    step(4, "verify", t.elapsed());
    if !ok {
        return Err(Error::VerificationFailed(
            "the demo's own proof does not verify: this is a bug, please report it".into(),
        )
        .into());
    }
    let mut wrong = inputs.clone();
    wrong[0] += blstrs::Scalar::ONE;
    if verify_proof(&pvk, proof, &wrong)? {
        return Err(Error::VerificationFailed(
            "the proof verified for a wrong public input: this is a bug, please report it".into(),
        )
        .into());
    }
    outln!(
        "   proof ({} bytes): valid; with public input + 1: rejected",
        proof.to_bytes().len()
    );
    outln!("demo finished in {}", fmt_duration(total.elapsed()));
    Ok(())
}
