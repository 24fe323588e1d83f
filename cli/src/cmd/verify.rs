//! `bellows verify`: verification from files alone, no circuit.

use std::path::Path;

use bellows_core::{
    groth16::{
        io::{self, PointCheck},
        verifier::{prepare_verifying_key, verify_proof},
        ParamsKind,
    },
    Error, Result,
};
use blstrs::Scalar;
use rayon::prelude::*;

use crate::cli::VerifyArgs;

/// Reads public inputs: a flat JSON array (one proof) or an array of arrays (one per proof).
pub fn read_inputs(path: &Path) -> Result<Vec<Vec<Scalar>>> {
    let label = format!("public inputs file {}", path.display());
    let text =
        std::fs::read_to_string(path).map_err(|e| Error::io(format!("reading {label}"), e))?;
    let value: serde_json::Value = serde_json::from_str(&text)
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
        Ok(vec![io::parse_public_inputs_json(&text).map_err(in_file)?])
    }
}

/// Runs the command. `Ok` means every proof verified.
pub fn run(args: &VerifyArgs) -> Result<()> {
    let vk = io::read_verifying_key_or_params(&args.vk, PointCheck::Full)?;
    let pvk = prepare_verifying_key(&vk);
    let proofs = io::read_proofs(&args.proof)?;
    let inputs = read_inputs(&args.inputs)?;
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
        )));
    }
    let results: Vec<bool> = proofs
        .par_iter()
        .zip(&inputs)
        .map(|(p, x)| verify_proof(&pvk, p, x))
        .collect::<Result<_>>()?;
    let bad: Vec<usize> = results
        .iter()
        .enumerate()
        .filter(|(_, ok)| !**ok)
        .map(|(i, _)| i)
        .collect();
    if bad.is_empty() {
        println!("valid");
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
    Err(Error::VerificationFailed(format!("{which}{bench_note}")))
}
