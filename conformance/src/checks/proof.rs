//! Whole-proof checks: Groth16 proofs of the synthetic circuit with parameters from a seeded setup
//! and seeded randomness r, s; the candidate's proofs must be byte-identical to the reference's
//! and must verify.

use std::sync::Arc;

use bellows_core::{
    circuits::SyntheticCircuit,
    groth16::{
        prover::{prove, ProvingKey},
        verifier::{prepare_verifying_key, verify_proof},
        Parameters, Proof,
    },
    rng::ProofRng,
    Backend,
};

use super::{cand, needs, refr, Check, CheckResult, Ctx, Fail};
use crate::compare;

fn circuits(
    log_size: u32,
    bits_pct: u8,
    batch: usize,
    seed: u64,
) -> bellows_core::Result<Vec<SyntheticCircuit>> {
    (0..batch as u64)
        .map(|i| {
            Ok(SyntheticCircuit::new(log_size, bits_pct)?
                .with_witness(bellows_core::circuits::witness_seed(seed, i)))
        })
        .collect()
}

fn prove_on(
    b: Arc<dyn Backend>,
    params: &Arc<Parameters>,
    c: Vec<SyntheticCircuit>,
    seed: u64,
) -> bellows_core::Result<Vec<Proof>> {
    let key = ProvingKey::new(params.clone(), b)?;
    prove(&key, c, &mut ProofRng::seeded(seed))
}

/// Proves a batch on both backends, compares the encodings, and verifies the candidate's proofs.
pub fn run(ctx: &Ctx, log_size: u32, bits_pct: u8, batch: usize) -> CheckResult {
    let params = refr(ctx.params.synthetic(log_size, bits_pct), "setup")?;
    let label = format!("synthetic 2^{log_size}");
    let want = refr(
        prove_on(
            ctx.refb.clone(),
            &params,
            circuits(log_size, bits_pct, batch, ctx.seed)
                .map_err(|e| Fail::Error(e.to_string()))?,
            ctx.seed,
        ),
        "prove",
    )?;
    let c =
        circuits(log_size, bits_pct, batch, ctx.seed).map_err(|e| Fail::Error(e.to_string()))?;
    let inputs: Vec<_> = c.iter().map(|c| c.output()).collect();
    let got = cand(
        prove_on(ctx.cand.clone(), &params, c, ctx.seed),
        &format!("prove {label}"),
    )?;
    if got.len() != want.len() {
        return Err(Fail::Error(format!(
            "{} proofs for {} circuits",
            got.len(),
            want.len()
        )));
    }
    let pvk = prepare_verifying_key(&params.vk);
    for (i, (w, g)) in want.iter().zip(&got).enumerate() {
        compare::bytes(
            &w.to_bytes(),
            &g.to_bytes(),
            &format!("{label}, proof {i} of {batch}"),
        )?;
        let x = inputs[i].ok_or_else(|| Fail::Error("circuit without a witness".into()))?;
        match verify_proof(&pvk, g, &[x]) {
            Ok(true) => {}
            Ok(false) => return Err(Fail::Error(format!("{label}, proof {i}: does not verify"))),
            Err(e) => {
                return Err(Fail::Error(format!(
                    "{label}, proof {i}: verification failed: {e}"
                )))
            }
        }
    }
    Ok(())
}

/// The proof checks: (log2 size, % boolean constraints, batch size) by level.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let cap = ctx
        .k
        .clamp(bellows_core::circuits::synthetic::MIN_LOG_SIZE, 20);
    let sizes: Vec<(u32, u8, usize)> = ctx.by_level(
        vec![(6, 20, 2), (8, 50, 1)],
        vec![(8, 20, 2), (12, 50, 2)],
        vec![(10, 20, 3), (16, 50, 2)],
    );
    sizes
        .into_iter()
        .map(|(l, b, n)| (l.min(cap), b, n))
        .map(|(l, b, n)| {
            Check::new(
                format!("proof synthetic 2^{l}"),
                format!("batch of {n}, {b}% boolean constraints, seeded"),
                needs::prover,
                move |ctx| run(ctx, l, b, n),
            )
        })
        .collect()
}
