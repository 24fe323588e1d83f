//! Reading the output of PoRep commit phase 1 (C1), as the Filecoin tools write it.
//!
//! Two forms are accepted, told apart by their keys:
//! - **lotus-bench's JSON** (`lotus-bench prove` and the tools built on it):
//!   `{"SectorNum": N, "SectorSize": BYTES, "Phase1Out": "<base64>"}`, where `Phase1Out` is the
//!   standard base64 (with padding) of the JSON below;
//! - **filecoin-proofs-api's `SealCommitPhase1Output` JSON** on its own (what filecoin-ffi
//!   passes around): `registered_proof` (e.g. `"StackedDrg32GiBV1_1"`), `vanilla_proofs` (an
//!   object with one key naming the sector shape, e.g. `"StackedDrg32GiBV1"`, whose value holds
//!   one list of challenge proofs per partition), and `comm_r`, `comm_d`, `replica_id`, `seed`,
//!   `ticket` as arrays of 32 bytes.
//!
//! Everything is checked before any proving starts: the JSON's completeness (a truncated file
//! is reported as such), the proof type (supported or not, and why), the sector size the
//! lotus-bench wrapper states against the proof type's, the vanilla proofs' shape against the
//! proof type (one list per partition, none empty), and all-zero commitments or seed.

use std::path::Path;

use base64::Engine;
use bellows_core::{Error, Result};
use filecoin_proofs_api::seal::{SealCommitPhase1Output, VanillaSealProof};
use filecoin_proofs_api::{ApiFeature, RegisteredSealProof};
use serde::Deserialize;

/// Largest C1 file read (a 64 GiB sector's C1 output is about 100 MB as lotus-bench JSON).
pub const MAX_C1_BYTES: u64 = 1 << 30;

/// A parsed, checked C1 output.
#[derive(Clone, Debug)]
pub struct C1Output {
    /// The output itself, in filecoin-proofs-api's form.
    pub phase1: SealCommitPhase1Output,
    /// The sector number lotus-bench recorded (`SectorNum`), when the file is its wrapper.
    pub sector_num: Option<u64>,
}

/// lotus-bench's wrapper (Go field names; other keys are ignored).
#[derive(Deserialize)]
struct LotusBench {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: String,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

impl C1Output {
    /// The registered proof type the C1 output was made for.
    pub fn registered_proof(&self) -> RegisteredSealProof {
        self.phase1.registered_proof
    }

    /// Number of partitions (circuits) the C2 proof has.
    pub fn partitions(&self) -> usize {
        vanilla_partitions(&self.phase1.vanilla_proofs).len()
    }
}

/// Reads and checks a C1 file (either form; see the module documentation).
pub fn read_c1(path: impl AsRef<Path>) -> Result<C1Output> {
    let path = path.as_ref();
    let label = format!("C1 output {}", path.display());
    let bytes = bellows_core::groth16::io::read_bounded(path, &label, MAX_C1_BYTES)?;
    parse_c1(&bytes, &label)
}

/// Parses and checks C1 output held in memory; `label` names it in errors.
pub fn parse_c1(bytes: &[u8], label: &str) -> Result<C1Output> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::malformed(label, format!("not UTF-8 text (JSON expected): {e}")))?;
    let text = bellows_core::groth16::io::strip_bom(text);
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| json_error(label, "the file", &e))?;
    let obj = value.as_object().ok_or_else(|| {
        Error::malformed(
            label,
            "not a JSON object: expected lotus-bench's {\"SectorNum\", \"SectorSize\", \
             \"Phase1Out\"} or filecoin-proofs-api's SealCommitPhase1Output",
        )
    })?;
    if obj.contains_key("Phase1Out") {
        let w: LotusBench = serde_json::from_value(value)
            .map_err(|e| json_error(label, "the lotus-bench wrapper", &e))?;
        let inner = base64::engine::general_purpose::STANDARD
            .decode(w.phase1_out.trim())
            .map_err(|e| {
                Error::malformed(
                    format!("{label}: Phase1Out"),
                    format!("not standard base64: {e}"),
                )
            })?;
        let inner_label = format!("{label}: Phase1Out");
        let phase1 = parse_phase1(&inner, &inner_label)?;
        let stated = w.sector_size;
        let actual = u64::from(phase1.registered_proof.sector_size());
        if stated != actual {
            return Err(Error::malformed(
                label,
                format!(
                    "SectorSize says {stated} bytes but Phase1Out is a {:?} output ({actual}-byte \
                     sectors): the wrapper and its content disagree",
                    phase1.registered_proof
                ),
            ));
        }
        let out = C1Output {
            phase1,
            sector_num: Some(w.sector_num),
        };
        check(&out, label)?;
        Ok(out)
    } else if obj.contains_key("registered_proof") {
        let out = C1Output {
            phase1: parse_phase1(text.as_bytes(), label)?,
            sector_num: None,
        };
        check(&out, label)?;
        Ok(out)
    } else {
        let keys: Vec<&str> = obj.keys().map(String::as_str).take(8).collect();
        Err(Error::malformed(
            label,
            format!(
                "not a C1 output: it has neither Phase1Out (lotus-bench) nor registered_proof \
                 (SealCommitPhase1Output); its keys are {keys:?}"
            ),
        ))
    }
}

fn parse_phase1(bytes: &[u8], label: &str) -> Result<SealCommitPhase1Output> {
    // The proof type first, so that an unknown or unsupported one is named as such rather than
    // as a mismatch deep inside the vanilla proofs.
    #[derive(Deserialize)]
    struct Head {
        registered_proof: serde_json::Value,
    }
    let head: Head = serde_json::from_slice(bytes).map_err(|e| json_error(label, "", &e))?;
    let proof: RegisteredSealProof = serde_json::from_value(head.registered_proof.clone())
        .map_err(|_| {
            Error::malformed(
                label,
                format!(
                    "registered_proof {} is not a seal proof type filecoin-proofs-api 19 knows \
                     (StackedDrg{{2KiB,8MiB,512MiB,32GiB,64GiB}}V1, …V1_1, \
                     …V1_1_Feat_SyntheticPoRep, …V1_2_Feat_NonInteractivePoRep)",
                    head.registered_proof
                ),
            )
        })?;
    supported(proof)?;
    serde_json::from_slice(bytes).map_err(|e| json_error(label, "", &e))
}

/// Whether Bellows proves C2 for this proof type.
pub fn supported(proof: RegisteredSealProof) -> Result<()> {
    if proof.feature_enabled(ApiFeature::NonInteractivePoRep) {
        return Err(Error::invalid(format!(
            "{proof:?} is a non-interactive PoRep: its C2 output is a SnarkPack aggregate of the \
             partition proofs, which Bellows does not make; interactive proof types \
             (…V1, …V1_1, …V1_1_Feat_SyntheticPoRep) are supported"
        )));
    }
    if proof.major_version() != 1 {
        return Err(Error::invalid(format!(
            "{proof:?}: proof API version {} is not supported (1.x is)",
            proof.major_version()
        )));
    }
    Ok(())
}

/// The vanilla proofs by partition, as slice lengths (shape only).
fn vanilla_partitions(v: &VanillaSealProof) -> Vec<usize> {
    match v {
        VanillaSealProof::StackedDrg2KiBV1(p) => p.iter().map(Vec::len).collect(),
        VanillaSealProof::StackedDrg8MiBV1(p) => p.iter().map(Vec::len).collect(),
        VanillaSealProof::StackedDrg512MiBV1(p) => p.iter().map(Vec::len).collect(),
        VanillaSealProof::StackedDrg32GiBV1(p) => p.iter().map(Vec::len).collect(),
        VanillaSealProof::StackedDrg64GiBV1(p) => p.iter().map(Vec::len).collect(),
    }
}

/// The sector size the vanilla proofs' shape key names.
fn vanilla_sector_size(v: &VanillaSealProof) -> u64 {
    use filecoin_proofs::constants as c;
    match v {
        VanillaSealProof::StackedDrg2KiBV1(_) => c::SECTOR_SIZE_2_KIB,
        VanillaSealProof::StackedDrg8MiBV1(_) => c::SECTOR_SIZE_8_MIB,
        VanillaSealProof::StackedDrg512MiBV1(_) => c::SECTOR_SIZE_512_MIB,
        VanillaSealProof::StackedDrg32GiBV1(_) => c::SECTOR_SIZE_32_GIB,
        VanillaSealProof::StackedDrg64GiBV1(_) => c::SECTOR_SIZE_64_GIB,
    }
}

/// Consistency checks that need no circuit.
fn check(out: &C1Output, label: &str) -> Result<()> {
    let p = &out.phase1;
    let proof = p.registered_proof;
    let size = u64::from(proof.sector_size());
    let vsize = vanilla_sector_size(&p.vanilla_proofs);
    if size != vsize {
        return Err(Error::malformed(
            label,
            format!(
                "registered_proof {proof:?} is for {size}-byte sectors but the vanilla proofs \
                 are for {vsize}-byte sectors"
            ),
        ));
    }
    let parts = vanilla_partitions(&p.vanilla_proofs);
    let want = usize::from(proof.partitions());
    if parts.len() != want {
        return Err(Error::malformed(
            label,
            format!(
                "{} partition{} of vanilla proofs, but {proof:?} has {want}",
                parts.len(),
                if parts.len() == 1 { "" } else { "s" }
            ),
        ));
    }
    if let Some(k) = parts.iter().position(|&n| n == 0) {
        return Err(Error::malformed(
            label,
            format!("partition {k} has no vanilla proofs"),
        ));
    }
    for (name, v) in [
        ("comm_r", &p.comm_r),
        ("comm_d", &p.comm_d),
        ("seed", &p.seed),
    ] {
        if v.iter().all(|&b| b == 0) {
            return Err(Error::malformed(
                label,
                format!("{name} is all zeros (C1 never outputs that)"),
            ));
        }
    }
    Ok(())
}

/// A JSON error, worded for truncation when serde says the input ended early.
fn json_error(label: &str, part: &str, e: &serde_json::Error) -> Error {
    let part = if part.is_empty() {
        String::new()
    } else {
        format!(" ({part})")
    };
    if e.is_eof() {
        Error::malformed(
            label,
            format!(
                "truncated: the JSON{part} ends early (line {}, column {}): the file is \
                 incomplete",
                e.line(),
                e.column()
            ),
        )
    } else {
        Error::malformed(label, format!("invalid JSON{part}: {e}"))
    }
}
