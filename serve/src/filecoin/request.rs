//! A Filecoin job from either request form: the `porep_c2` arm of `bellows.v1` (a C1 output and
//! the folder of its parameters) or the `filecoin` arm, the cuzk API's `SubmitProofRequest`
//! (docs/curio.md): its proof kind, Filecoin's numeric proof type, its vanilla proofs as Curio
//! sends them, and the parameters found in the daemon's own folders.
//!
//! Every check runs here, before anything is journaled: the kind and the numeric proof type
//! (an unknown one named), the sector size against the proof type, the input's form and sizes,
//! the vanilla proofs themselves (storage-proofs verifies them), that a C1 output belongs to
//! the sector and miner named, and the parameters file's presence.

use std::path::Path;

use bellows_filecoin::post::PostInput;
use bellows_filecoin::update::UpdateInput;
use bellows_filecoin::{parse_c1, porep, registered, with_sector_shape};
use sha2::{Digest, Sha256};

use crate::cuzk::content_digest;

use super::circuits::{porep_circuits, snap_circuits, window_circuits, winning_circuits};
use super::{FilecoinJob, FilecoinKind, ParamsIn, ProofType};
use crate::{
    error::{Result, ServeError},
    params::ParamsDirs,
    proto::cuzk::v1 as cuzk,
};

/// Most vanilla proofs one request may carry (a 32 GiB WindowPoSt partition has 2349 sectors;
/// a SnapDeals update 16 partitions).
const MAX_VANILLA_PROOFS: usize = 10_000;

impl FilecoinJob {
    /// A PoRep C2 job from the C1 output `c1` (either form): parsed and checked, its vanilla
    /// proofs verified, every partition's circuit built, the proof type's parameters named in
    /// `params_dir` (inside `dirs`).
    pub fn from_c1(c1: &[u8], params_dir: &Path, dirs: &ParamsDirs) -> Result<Self> {
        if c1.is_empty() {
            return Err(ServeError::invalid(
                "the PoRep C2 request carries no C1 output (c1 is empty)",
            ));
        }
        let parsed = parse_c1(c1, "C1 output")?;
        let proof = parsed.registered_proof();
        let built = with_sector_shape!(u64::from(proof.sector_size()), porep_circuits, &parsed)?;
        Self::new(
            FilecoinKind::Porep,
            ProofType::Seal(proof),
            Sha256::digest(c1).into(),
            built,
            ParamsIn::Folder(params_dir),
            dirs,
        )
    }

    /// A job from the cuzk API's request `req` (see the module docs); its parameters are looked
    /// for in the daemon's parameter folders `dirs`, in order.
    pub fn from_cuzk(req: &cuzk::SubmitProofRequest, dirs: &ParamsDirs) -> Result<Self> {
        let kind = kind_of(req.proof_kind)?;
        let proof = proof_type(kind, req.registered_proof)?;
        let size = proof.sector_size();
        if req.sector_size != 0 && req.sector_size != size {
            return Err(ServeError::invalid(format!(
                "sector_size {} does not match registered_proof {} ({}, a sector of {size} bytes)",
                req.sector_size,
                req.registered_proof,
                proof.name()
            )));
        }
        if req.vanilla_proofs.len() > MAX_VANILLA_PROOFS {
            return Err(ServeError::invalid(format!(
                "{} vanilla proofs in one request, more than the {MAX_VANILLA_PROOFS} allowed",
                req.vanilla_proofs.len()
            )));
        }
        let prover_id = porep::prover_id_from_actor(req.miner_id);
        let built = match proof {
            ProofType::Seal(p) => {
                if req.vanilla_proof.is_empty() {
                    return Err(ServeError::invalid(
                        "a POREP_SEAL_COMMIT request carries its C1 output in vanilla_proof, \
                         which is empty",
                    ));
                }
                let c1 = parse_c1(&req.vanilla_proof, "vanilla_proof (the C1 output)")?;
                if c1.registered_proof() != p {
                    return Err(ServeError::invalid(format!(
                        "registered_proof {} is {p:?}, but the C1 output is {:?}",
                        req.registered_proof,
                        c1.registered_proof()
                    )));
                }
                porep::check_sector(&c1, prover_id, req.sector_number).map_err(|e| {
                    ServeError::invalid(format!(
                        "sector {} of miner {}: {e}",
                        req.sector_number, req.miner_id
                    ))
                })?;
                with_sector_shape!(size, porep_circuits, &c1)?
            }
            ProofType::Post(p) => {
                let input = PostInput {
                    proof: p,
                    randomness: bytes32(&req.randomness, "randomness")?,
                    prover_id,
                    vanilla_proofs: req.vanilla_proofs.clone(),
                };
                match kind {
                    FilecoinKind::WindowPost => {
                        let index = req.partition_index as usize;
                        with_sector_shape!(size, window_circuits, &input, index)?
                    }
                    _ => with_sector_shape!(size, winning_circuits, &input)?,
                }
            }
            ProofType::Update(p) => {
                let input = UpdateInput {
                    proof: p,
                    vanilla_proofs: req.vanilla_proofs.clone(),
                    comm_r_old: bytes32(&req.comm_r_old, "comm_r_old")?,
                    comm_r_new: bytes32(&req.comm_r_new, "comm_r_new")?,
                    comm_d_new: bytes32(&req.comm_d_new, "comm_d_new")?,
                };
                with_sector_shape!(size, snap_circuits, &input)?
            }
        };
        Self::new(
            kind,
            proof,
            content_digest(req),
            built,
            ParamsIn::Configured,
            dirs,
        )
    }
}

/// The kind a cuzk `proof_kind` names.
pub(crate) fn kind_of(proof_kind: i32) -> Result<FilecoinKind> {
    match cuzk::ProofKind::try_from(proof_kind) {
        Ok(cuzk::ProofKind::PorepSealCommit) => Ok(FilecoinKind::Porep),
        Ok(cuzk::ProofKind::SnapDealsUpdate) => Ok(FilecoinKind::SnapDeals),
        Ok(cuzk::ProofKind::WindowPostPartition) => Ok(FilecoinKind::WindowPost),
        Ok(cuzk::ProofKind::WinningPost) => Ok(FilecoinKind::WinningPost),
        _ => Err(ServeError::invalid(format!(
            "proof_kind {proof_kind} is not one of POREP_SEAL_COMMIT (1), SNAP_DEALS_UPDATE \
             (2), WINDOW_POST_PARTITION (3), WINNING_POST (4)"
        ))),
    }
}

/// Filecoin's proof type numbered `n` for `kind` (a PoSt kind must name a PoSt of its own
/// sort: winning or window).
fn proof_type(kind: FilecoinKind, n: u64) -> Result<ProofType> {
    Ok(match kind {
        FilecoinKind::Porep => ProofType::Seal(registered::seal_proof(n)?),
        FilecoinKind::SnapDeals => ProofType::Update(registered::update_proof(n)?),
        FilecoinKind::WindowPost | FilecoinKind::WinningPost => {
            let p = registered::post_proof(n)?;
            let winning = format!("{p:?}").contains("Winning");
            if winning != (kind == FilecoinKind::WinningPost) {
                return Err(ServeError::invalid(format!(
                    "registered_proof {n} is {p:?}, not a proof type of a {}",
                    kind.describe()
                )));
            }
            ProofType::Post(p)
        }
    })
}

/// `b` as 32 bytes, or an error naming `what`.
fn bytes32(b: &[u8], what: &str) -> Result<[u8; 32]> {
    b.try_into().map_err(|_| {
        ServeError::invalid(format!("{what} has {} bytes; it is 32 bytes long", b.len()))
    })
}
