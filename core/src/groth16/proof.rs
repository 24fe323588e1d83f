//! Groth16 proofs and their 192-byte encoding (bellperson's: compressed A ‖ B ‖ C).

use crate::{Error, Result};
use blstrs::{G1Affine, G2Affine};

/// Size of an encoded proof.
pub const PROOF_BYTES: usize = 192;

/// A Groth16 proof.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proof {
    /// A in G1.
    pub a: G1Affine,
    /// B in G2.
    pub b: G2Affine,
    /// C in G1.
    pub c: G1Affine,
}

impl Proof {
    /// Encodes as compressed A (48 bytes) ‖ B (96) ‖ C (48), as bellperson does.
    pub fn to_bytes(&self) -> [u8; PROOF_BYTES] {
        let mut out = [0u8; PROOF_BYTES];
        out[..48].copy_from_slice(&self.a.to_compressed());
        out[48..144].copy_from_slice(&self.b.to_compressed());
        out[144..].copy_from_slice(&self.c.to_compressed());
        out
    }

    /// Decodes a 192-byte proof, checking that each point is on the curve and in the subgroup.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        if bytes.len() != PROOF_BYTES {
            return Err(Error::malformed(
                "proof",
                format!("expected {PROOF_BYTES} bytes, got {}", bytes.len()),
            ));
        }
        let a = decode_g1(&bytes[..48], "proof element A")?;
        let b_bytes: [u8; 96] = bytes[48..144].try_into().expect("96 bytes");
        let b = Option::<G2Affine>::from(G2Affine::from_compressed(&b_bytes)).ok_or_else(|| {
            Error::InvalidPoint {
                what: "proof element B".into(),
                reason: "not a valid compressed G2 point in the subgroup".into(),
            }
        })?;
        let c = decode_g1(&bytes[144..], "proof element C")?;
        Ok(Proof { a, b, c })
    }

    /// Writes the 192-byte encoding.
    pub fn write<W: std::io::Write>(&self, mut w: W) -> std::io::Result<()> {
        w.write_all(&self.to_bytes())
    }
}

fn decode_g1(bytes: &[u8], what: &str) -> Result<G1Affine> {
    let arr: [u8; 48] = bytes.try_into().expect("caller slices 48 bytes");
    Option::<G1Affine>::from(G1Affine::from_compressed(&arr)).ok_or_else(|| Error::InvalidPoint {
        what: what.into(),
        reason: "not a valid compressed G1 point in the subgroup".into(),
    })
}
