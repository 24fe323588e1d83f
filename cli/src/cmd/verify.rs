//! `bellows verify`: verification from files alone, no circuit.

use std::path::Path;

use bellows_core::{
    groth16::{
        io::{self, PointCheck},
        verifier::{try_prepare_verifying_key, verify_proof},
        ParamsKind,
    },
    Error, Result,
};
use blstrs::Scalar;
use rayon::prelude::*;

use crate::cli::VerifyArgs;
use crate::outln;

/// Bytes a public-inputs file may have for `sets` sets of `per_set` inputs: room for every
/// value at its longest (78 digits, quotes, a comma) with generous white space, plus 1 MiB.
pub fn inputs_limit(sets: usize, per_set: usize) -> u64 {
    (1u64 << 20).saturating_add((sets as u64).saturating_mul((per_set as u64 + 1) * 256))
}

/// Reads public inputs: a flat JSON array (one proof) or an array of arrays (one per proof), at
/// most `limit` bytes.
pub fn read_inputs(path: &Path, limit: u64) -> Result<Vec<Vec<Scalar>>> {
    let label = format!("public inputs file {}", path.display());
    let bytes = io::read_bounded(path, &label, limit)?;
    let text = io::strip_bom(io::inputs_text(&bytes, &label)?);
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| Error::malformed(&label, format!("not valid JSON: {e}")))?;
    let nested = matches!(&value, serde_json::Value::Array(items)
        if !items.is_empty() && items.iter().all(serde_json::Value::is_array));
    let in_file = |e: Error| match e {
        Error::Malformed { what, reason } => Error::malformed(format!("{what} in {label}"), reason),
        other => other,
    };
    if nested {
        let serde_json::Value::Array(items) = value else {
            unreachable!("checked above")
        };
        items
            .iter()
            .enumerate()
            .map(|(k, item)| {
                io::parse_public_inputs_json(&item.to_string()).map_err(|e| match e {
                    Error::Malformed { what, reason } => {
                        Error::malformed(format!("{what} of proof {k} in {label}"), reason)
                    }
                    other => other,
                })
            })
            .collect()
    } else {
        Ok(vec![io::parse_public_inputs_json(text).map_err(in_file)?])
    }
}

/// Runs the command. `Ok` means every proof verified.
pub fn run(args: &VerifyArgs) -> crate::error::Result<()> {
    let vk = {
        let _s = tracing::debug_span!("read_key").entered();
        io::read_verifying_key_or_params(&args.vk, PointCheck::Full)?
    };
    let pvk = try_prepare_verifying_key(&vk)?;
    let proofs = {
        let _s = tracing::debug_span!("read_proofs").entered();
        io::read_proofs(&args.proof)?
    };
    let inputs = read_inputs(&args.inputs, inputs_limit(proofs.len(), vk.ic.len()))?;
    let bench_note = if vk.kind() == ParamsKind::BenchmarkOnly {
        crate::common::warn(
            "the verifying key is from BENCHMARK-ONLY parameters: proofs made with them never verify",
        );
        " (the key is from benchmark-only parameters: their proofs never verify)"
    } else {
        ""
    };
    if proofs.len() != inputs.len() {
        return Err(Error::invalid(format!(
            "{} has {} proof(s) but {} has {} set(s) of public inputs (for several proofs, give \
             an array of arrays, one per proof)",
            args.proof.display(),
            proofs.len(),
            args.inputs.display(),
            inputs.len()
        ))
        .into());
    }
    let results: Vec<bool> = {
        let _s = tracing::debug_span!("verify", proofs = proofs.len()).entered();
        proofs
            .par_iter()
            .zip(&inputs)
            .map(|(p, x)| verify_proof(&pvk, p, x))
            .collect::<Result<_>>()?
    };
    let bad: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, ok)| !**ok)
        .map(|(i, _)| i)
        .collect();
    if bad.is_empty() {
        outln!("valid");
        return Ok(());
    }
    let which = if proofs.len() == 1 {
        "the proof does not verify against this key and these public inputs".to_string()
    } else {
        format!(
            "{} of {} proofs do not verify (proof {})",
            bad.len(),
            proofs.len(),
            bad.iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(Error::VerificationFailed(format!("{which}{bench_note}")).into())
}
