//! `bellows demo`: setup, prove and verify a built-in circuit end to end, with timings.

use std::sync::Arc;
use std::time::Instant;

use bellows_core::{
    circuits::{witness_seed, CircuitOptions, CircuitSpec},
    groth16::limits::{self, Shape},
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
use crate::cli::DemoArgs;
use crate::cmd::prove::prove_batch;
use crate::common::{fmt_duration, spinner, warn, Globals};
use crate::error::{invalid_value, Result};
use crate::outln;

fn step(n: u32, what: &str, d: std::time::Duration) {
    outln!("{n}. {what:<40} {:>10}", fmt_duration(d));
}

/// Runs the command.
pub fn run(args: &DemoArgs, g: &Globals) -> Result<()> {
    let mut o = CircuitOptions::default();
    o.bits_pct = args.bits_pct;
    o.log_size = match (args.circuit.as_str(), args.log_size) {
        ("synthetic", None) => Some(12),
        (_, k) => k,
    };
    if let (Some(k), "synthetic") = (o.log_size, args.circuit.as_str()) {
        if k < bellows_core::circuits::synthetic::MIN_LOG_SIZE {
            return Err(invalid_value(
                "--log-size <K>",
                k,
                "the synthetic circuit needs 3..=32",
            ));
        }
    }
    if let Some(k) = o.log_size {
        let shape = Shape {
            domain: 1 << k,
            vars: 1 << k,
        };
        limits::check_memory(
            &format!("the demo's trusted setup at 2^{k}"),
            shape.setup_bytes().saturating_add(shape.proof_bytes()),
        )?;
    }
    let spec = CircuitSpec::new(&args.circuit, &o)?;
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
