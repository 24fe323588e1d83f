//! Proofs: 192 bytes each (compressed A ‖ B ‖ C), one or several to a file.

use std::io::{Read, Write};
use std::path::Path;

use super::files::open_input;
use crate::groth16::limits::MAX_PROOFS_PER_FILE;
use crate::groth16::output::OutputFile;
use crate::groth16::proof::PROOF_BYTES;
use crate::groth16::Proof;
use crate::{Error, Result};

/// Decodes one or more concatenated 192-byte proofs (at most
/// [`MAX_PROOFS_PER_FILE`](crate::groth16::limits::MAX_PROOFS_PER_FILE)).
pub fn proofs_from_bytes(bytes: &[u8]) -> Result<Vec<Proof>> {
    decode_proofs(bytes, bytes.len() as u64, "proof data")
}

fn wrong_proof_size(label: &str, len: u64) -> Error {
    Error::malformed(
        label,
        format!(
            "wrong size: {len} bytes is not a positive multiple of {PROOF_BYTES} (one proof is \
             compressed A ‖ B ‖ C = 48 + 96 + 48 bytes)"
        ),
    )
}

fn too_many_proofs(label: &str, what: String) -> Error {
    Error::invalid(format!(
        "{label} holds {what}: more than the {MAX_PROOFS_PER_FILE} proofs a proof file may hold"
    ))
}

/// Decodes the proofs read from `r`, 192 bytes at a time, so that a stream of garbage fails at
/// its first proof and a long one at the limit. `total` is the size when known (for messages).
fn decode_proofs_from(mut r: impl Read, total: Option<u64>, label: &str) -> Result<Vec<Proof>> {
    if let Some(len) = total {
        if len == 0 || len % PROOF_BYTES as u64 != 0 {
            return Err(wrong_proof_size(label, len));
        }
        if len / PROOF_BYTES as u64 > MAX_PROOFS_PER_FILE as u64 {
            return Err(too_many_proofs(
                label,
                format!("{} proofs", len / PROOF_BYTES as u64),
            ));
        }
    }
    let many = total.is_none_or(|t| t > PROOF_BYTES as u64);
    let mut proofs = Vec::new();
    let mut buf = [0u8; PROOF_BYTES];
    let mut read_total = 0u64;
    loop {
        let mut filled = 0;
        while filled < PROOF_BYTES {
            match r.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("reading {label}"), e)),
            }
        }
        read_total += filled as u64;
        if filled == 0 {
            break;
        }
        if filled < PROOF_BYTES {
            return Err(wrong_proof_size(label, read_total));
        }
        let i = proofs.len();
        if i == MAX_PROOFS_PER_FILE {
            return Err(too_many_proofs(label, "more proofs".into()));
        }
        proofs.push(Proof::from_bytes(&buf).map_err(|e| {
            let prefix = if many {
                format!("{label}, proof {i}")
            } else {
                label.to_string()
            };
            match e {
                Error::InvalidPoint { what, reason } => Error::InvalidPoint {
                    what: format!("{prefix}: {what}"),
                    reason,
                },
                other => Error::malformed(prefix, other.to_string()),
            }
        })?);
    }
    if proofs.is_empty() {
        return Err(wrong_proof_size(label, 0));
    }
    Ok(proofs)
}

fn decode_proofs(bytes: &[u8], len: u64, label: &str) -> Result<Vec<Proof>> {
    decode_proofs_from(bytes, Some(len), label)
}

/// Reads a file (or a pipe or device) holding exactly one 192-byte proof.
pub fn read_proof(path: impl AsRef<Path>) -> Result<Proof> {
    let path = path.as_ref();
    let label = format!("proof file {}", path.display());
    let (file, meta) = open_input(path, &label)?;
    let mut bytes = Vec::with_capacity(PROOF_BYTES + 1);
    file.take(PROOF_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(format!("reading {label}"), e))?;
    let size = if meta.is_file() {
        meta.len().to_string()
    } else if bytes.len() > PROOF_BYTES {
        format!("more than {PROOF_BYTES}")
    } else {
        bytes.len().to_string()
    };
    if bytes.len() != PROOF_BYTES || (meta.is_file() && meta.len() != PROOF_BYTES as u64) {
        let several = meta.is_file()
            && meta.len() > PROOF_BYTES as u64
            && meta.len() % PROOF_BYTES as u64 == 0;
        return Err(Error::malformed(
            label,
            format!(
                "wrong size: expected {PROOF_BYTES} bytes (compressed A ‖ B ‖ C), got {size}{}",
                if several {
                    " (several proofs? read them with read_proofs)"
                } else {
                    ""
                }
            ),
        ));
    }
    Ok(decode_proofs(&bytes, PROOF_BYTES as u64, &label)?.remove(0))
}

/// Reads a file (or a pipe or device) of one or more concatenated 192-byte proofs, at most
/// [`MAX_PROOFS_PER_FILE`](crate::groth16::limits::MAX_PROOFS_PER_FILE).
pub fn read_proofs(path: impl AsRef<Path>) -> Result<Vec<Proof>> {
    let path = path.as_ref();
    let label = format!("proof file {}", path.display());
    let (file, meta) = open_input(path, &label)?;
    let total = meta.is_file().then_some(meta.len());
    decode_proofs_from(std::io::BufReader::new(file), total, &label)
}

/// Writes one proof (192 bytes).
pub fn write_proof<W: Write>(proof: &Proof, mut w: W) -> Result<()> {
    w.write_all(&proof.to_bytes())
        .map_err(|e| Error::io("writing a proof", e))
}

/// Writes proofs, concatenated, to a file safely (see
/// [`write_parameters_file`](super::write::write_parameters_file)).
pub fn write_proofs_file(proofs: &[Proof], path: impl AsRef<Path>) -> Result<()> {
    OutputFile::prepare(path, "proof file")?
        .commit(|w| proofs.iter().try_for_each(|p| write_proof(p, &mut *w)))
}
