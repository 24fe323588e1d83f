//! The check every proof passes before it leaves: verification against the verifying key.
//!
//! The daemon verifies each partition's proof before it is stored and every stored proof of a
//! job before the job is reported done; `bellows prove` verifies its proofs before it writes
//! them. A proof that does not verify means the parameters are for another circuit of the same
//! shape, a pre-compiled constraint system was damaged, or something failed silently: returning
//! it would hand out a wrong answer as a right one. All of a set is checked at once (a random
//! linear combination: a few pairings for the whole set); only when that fails are the proofs
//! checked one by one, to name the first bad one.

use bellows_core::groth16::{
    verifier::{verify_proof, verify_proofs_batch, PreparedVerifyingKey},
    Proof,
};
use blstrs::Scalar;

use crate::{job::decode_inputs, store::PartitionRecord};

/// Checks `proofs[i]` with `inputs[i]` for every i; the error names the first that fails by
/// `names(i)`.
pub fn verify_all(
    pvk: &PreparedVerifyingKey,
    proofs: &[Proof],
    inputs: &[Vec<Scalar>],
    names: &dyn Fn(usize) -> String,
) -> Result<(), String> {
    let mut rng = bellows_core::rng::ProofRng::os();
    if verify_proofs_batch(pvk, proofs, inputs, &mut rng).map_err(|e| e.to_string())? {
        return Ok(());
    }
    for (i, (p, x)) in proofs.iter().zip(inputs).enumerate() {
        if !verify_proof(pvk, p, x).map_err(|e| format!("{}: {e}", names(i)))? {
            return Err(format!(
                "{} does not verify against the parameters' verifying key",
                names(i)
            ));
        }
    }
    // The batch failed but no proof alone does: only a failure of the randomness could say so.
    Err("the proofs do not verify together against the parameters' verifying key".into())
}

/// [`verify_all`] over stored partitions (their proof bytes and public inputs as journaled).
pub fn verify_records(pvk: &PreparedVerifyingKey, parts: &[PartitionRecord]) -> Result<(), String> {
    let name = |i: usize| format!("partition {}", parts[i].index);
    let mut proofs = Vec::with_capacity(parts.len());
    let mut inputs = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        proofs.push(Proof::from_bytes(&p.proof).map_err(|e| format!("{}: {e}", name(i)))?);
        inputs.push(decode_inputs(&p.inputs).map_err(|e| format!("{}: {e}", name(i)))?);
    }
    verify_all(pvk, &proofs, &inputs, &name)
}
