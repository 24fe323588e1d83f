//! `bellows verify`: verification from files alone, no circuit.

use clap::Args;
use std::path::Path;
use std::path::PathBuf;

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

use crate::outln;

/// `bellows verify --help`.
pub const VERIFY_ABOUT: &str = "Verify Groth16 proofs. Needs no circuit: only a verifying key (a \
bellperson verifying-key file, or a whole parameters file), the proof file (one or more 192-byte \
proofs) and the public inputs (a JSON array of decimal strings without the constant one; for \
several proofs, an array of such arrays, one per proof).\n\n\
Prints `valid` and exits 0 when every proof verifies. Otherwise exits 1 with a message naming \
what is wrong: an invalid proof (and which one), the wrong number of public inputs, a value that \
is not a field element, a malformed or truncated file, a point off the curve or outside the \
subgroup. A key from benchmark-only parameters is reported as such: its proofs never verify.\n\n\
TRUST THE KEY, NOT THE CHECK: a verifying key must come from a trusted setup (one whose toxic \
waste nobody kept). Whoever made the key can make proofs of false statements that verify with \
it. The check for degenerate keys (γ or δ at infinity, γ = ±δ, γ = ±β) is a partial guard \
against keys made carelessly: it cannot find every relation a key's maker could have built in \
(δ = 2γ, γ = 2β, and infinitely many others), so a key that passes it is not thereby \
trustworthy.\n\n\
A valid proof is malleable: (−A, −B, C) and (k·A, B/k, C) for any k ≠ 0 are other valid proofs \
of the same statement, made without the witness. Verification says the statement is proved, \
not that these proof bytes are new or came from a given prover.\n\n\
Examples:\n  bellows verify --vk s14.vk --proof s14.proof --inputs s14.json\n  \
bellows verify --vk s14.params --proof batch.proof --inputs batch.json";

/// `bellows verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Verifying-key file, or a whole parameters file.
    #[arg(long, value_name = "FILE")]
    pub vk: PathBuf,
    /// Proof file: one or more concatenated 192-byte proofs.
    #[arg(long, value_name = "FILE")]
    pub proof: PathBuf,
    /// Public inputs: JSON array of decimal strings (array of arrays for several proofs).
    #[arg(long, value_name = "FILE.json")]
    pub inputs: PathBuf,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

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
        crate::stdio::warn(
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
