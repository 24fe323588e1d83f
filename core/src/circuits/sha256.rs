//! A real-world circuit: knowledge of a SHA-256 preimage (FIPS 180-4), with bellpepper's gadgets.
//!
//! The preimage of `len` bytes is private: 8·len bits allocated with a boolean constraint each,
//! most significant bit of each byte first (the gadget's order). `bellpepper::gadgets::sha256`
//! pads and compresses it (⌈(8·len + 65)/512⌉ blocks). The 256 digest bits (in the digest's byte
//! order, MSB first) are packed into public inputs as bellpepper's multipacking does: chunks of
//! `Scalar::CAPACITY` = 254 bits, bit i of a chunk weighted 2^i, so the digest becomes **two**
//! public inputs (254 + 2 bits), each tied to its bits by one constraint.
//!
//! Witness generators (`ConstraintSystem::is_witness_generator`, e.g. the PCE's witness-only
//! synthesis) get the same assignment faster: the compressions of all blocks are computed in
//! parallel (the private module `circuits::sha256_blocks`) and handed over with `extend_aux`.
//! Recording and direct synthesis run the gadget as written.
//!
//! Constraint count: 8·len for the preimage bits, about 27 000 per block for the compression, 2
//! for the packing and 3 input constraints added by synthesis. The compression of a block that
//! is partly made of padding constants costs fewer constraints (the gadget folds constants), so
//! the exact count is measured by counting the blank circuit
//! ([`crate::groth16::constraints::CircuitShape::count`]), not by a formula.

use bellpepper::gadgets::{multipack, sha256::sha256};
use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    Circuit, ConstraintSystem, LinearCombination, SynthesisError,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::groth16::constraints::CircuitShape;
use crate::{Error, Result};

/// Largest supported preimage (64 MiB); far beyond what a Groth16 domain of 2^32 holds anyway.
pub const MAX_BYTES: usize = 1 << 26;

/// Knowledge of a preimage of a public SHA-256 digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sha256Circuit {
    len: usize,
    preimage: Option<Vec<u8>>,
    claimed_digest: Option<[u8; 32]>,
}

impl Sha256Circuit {
    /// A circuit for preimages of `len` bytes, without a witness (for setup).
    pub fn new(len: usize) -> Result<Self> {
        if len > MAX_BYTES {
            return Err(Error::invalid(format!(
                "sha256 preimage of {len} bytes exceeds the maximum of {MAX_BYTES}"
            )));
        }
        Ok(Self {
            len,
            preimage: None,
            claimed_digest: None,
        })
    }

    /// A circuit proving knowledge of `preimage`.
    pub fn with_preimage(preimage: Vec<u8>) -> Result<Self> {
        let mut c = Self::new(preimage.len())?;
        c.preimage = Some(preimage);
        Ok(c)
    }

    /// The same circuit with a random preimage drawn from a ChaCha20 stream keyed by `seed`.
    pub fn with_witness(mut self, seed: u64) -> Self {
        let mut bytes = vec![0u8; self.len];
        ChaCha20Rng::seed_from_u64(seed).fill_bytes(&mut bytes);
        self.preimage = Some(bytes);
        self
    }

    /// Claims `digest` as the public digest instead of the preimage's true one. Proving a wrong
    /// claim fails with [`Error::Unsatisfied`].
    pub fn with_claimed_digest(mut self, digest: [u8; 32]) -> Self {
        self.claimed_digest = Some(digest);
        self
    }

    /// Preimage length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the preimage is empty (a valid, one-block instance).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The preimage, if a witness is attached.
    pub fn preimage(&self) -> Option<&[u8]> {
        self.preimage.as_deref()
    }

    /// Number of SHA-256 blocks after padding: ⌈(8·len + 65)/512⌉.
    pub fn num_blocks(&self) -> usize {
        blocks_for(self.len)
    }

    /// Constraints the prover sees (input constraints included), counted on the blank circuit.
    pub fn num_constraints(&self) -> usize {
        constraints_for(self.len)
    }

    /// Number of public inputs, the constant one excluded: 2.
    pub fn num_public_inputs(&self) -> usize {
        2
    }

    /// The largest preimage (in bytes) whose circuit fits a domain of 2^`log_size`, or `None`
    /// when not even a one-byte preimage fits.
    pub fn max_bytes_for_log_size(log_size: u32) -> Option<usize> {
        let n = 1usize.checked_shl(log_size)?;
        if log_size > crate::MAX_LOG_NTT || constraints_for(1) > n {
            return None;
        }
        // The count is monotone in len: gallop up from 1 (so that no probe is much larger than
        // the answer), then bisect.
        let mut lo = 1usize;
        let mut hi = loop {
            let next = (lo * 2).min(MAX_BYTES);
            if next == lo || constraints_for(next) > n {
                break next.max(lo);
            }
            lo = next;
        };
        if constraints_for(hi) <= n {
            return Some(hi);
        }
        hi -= 1;
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if constraints_for(mid) <= n {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        Some(lo)
    }

    /// The public inputs a verifier is given for `digest`: the digest's bits multipacked.
    pub fn public_inputs_for_digest(digest: &[u8; 32]) -> Vec<Scalar> {
        multipack::compute_multipacking(&multipack::bytes_to_bits(digest))
    }
}

fn blocks_for(len: usize) -> usize {
    (8 * len + 65).div_ceil(512)
}

/// Constraints of a `len`-byte instance, input constraints included.
fn constraints_for(len: usize) -> usize {
    CircuitShape::count(Sha256Circuit {
        len,
        preimage: None,
        claimed_digest: None,
    })
    .expect("counting never evaluates a value")
    .num_constraints
}

fn value<T>(v: Option<T>) -> Result<T, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

impl Circuit<Scalar> for Sha256Circuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut bits = Vec::with_capacity(8 * self.len);
        for i in 0..self.len {
            let byte = self.preimage.as_ref().map(|p| p[i]);
            for k in (0..8).rev() {
                let v = byte.map(|b| (b >> k) & 1 == 1);
                bits.push(Boolean::from(AllocatedBit::alloc(
                    cs.namespace(|| format!("preimage bit {}", 8 * i + 7 - k)),
                    v,
                )?));
            }
        }
        let digest = match self.preimage.as_deref() {
            // A witness generator (PCE's witness-only synthesis) needs the values only: the
            // blocks' compressions run in parallel and arrive through `extend_aux`, in the
            // gadget's allocation order (see `sha256_blocks`). The digest bits are constants
            // carrying the values; a witness generator builds no constraint from them.
            Some(preimage) if cs.is_witness_generator() => {
                let d = super::sha256_blocks::compress_all(cs, preimage)?;
                multipack::bytes_to_bits(&d)
                    .into_iter()
                    .map(Boolean::constant)
                    .collect()
            }
            _ => sha256(cs.namespace(|| "sha256"), &bits)?,
        };
        // Multipacking with an optional claimed value (bellpepper's pack_into_inputs, except that
        // the input's value may be a claim rather than what the bits say).
        let claimed = self
            .claimed_digest
            .map(|d| Self::public_inputs_for_digest(&d));
        for (i, chunk) in digest.chunks(Scalar::CAPACITY as usize).enumerate() {
            let mut lc = LinearCombination::zero();
            let mut coeff = Scalar::ONE;
            let mut computed = Some(Scalar::ZERO);
            for bit in chunk {
                lc = lc + &bit.lc(CS::one(), coeff);
                computed = match (computed, bit.get_value()) {
                    (Some(acc), Some(b)) => Some(if b { acc + coeff } else { acc }),
                    _ => None,
                };
                coeff = coeff.double();
            }
            let v = claimed.as_ref().map(|c| c[i]).or(computed);
            let input = cs.alloc_input(|| format!("digest {i}"), || value(v))?;
            cs.enforce(
                || format!("pack {i}"),
                |_| lc,
                |l| l + CS::one(),
                |l| l + input,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::synthesis::synthesize;

    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    /// FIPS 180-2 / NIST CSRC example vectors (known answers).
    #[test]
    fn public_inputs_match_known_digests() {
        let cases: [(&[u8], &str); 3] = [
            (
                b"",
                "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            ),
            (
                b"abc",
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            ),
            (
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
            ),
        ];
        for (msg, hex) in cases {
            let c = Sha256Circuit::with_preimage(msg.to_vec()).unwrap();
            let s = synthesize(c).unwrap();
            assert_eq!(
                s.public_inputs(),
                Sha256Circuit::public_inputs_for_digest(&hex32(hex))
            );
        }
    }

    #[test]
    fn constraint_count_matches_synthesis() {
        for len in [0usize, 1, 55, 56] {
            let c = Sha256Circuit::new(len).unwrap();
            let s = synthesize(c.clone().with_witness(2)).unwrap();
            assert_eq!(s.num_constraints(), c.num_constraints(), "len={len}");
            assert_eq!(s.input_assignment.len(), 3);
        }
        assert_eq!(blocks_for(55), 1);
        assert_eq!(blocks_for(56), 2);
    }

    #[test]
    fn log_size_mapping_fits_and_is_maximal() {
        assert_eq!(Sha256Circuit::max_bytes_for_log_size(14), None);
        for k in [15u32, 16, 17] {
            let b = Sha256Circuit::max_bytes_for_log_size(k).unwrap();
            assert!(constraints_for(b) <= 1 << k);
            assert!(constraints_for(b + 1) > 1 << k);
        }
    }

    #[test]
    fn wrong_digest_is_unsatisfied() {
        let c = Sha256Circuit::new(3)
            .unwrap()
            .with_witness(1)
            .with_claimed_digest([7; 32]);
        assert!(matches!(synthesize(c), Err(Error::Unsatisfied(_))));
    }

    #[test]
    fn too_long_is_rejected() {
        assert!(matches!(
            Sha256Circuit::new(MAX_BYTES + 1),
            Err(Error::InvalidInput(_))
        ));
    }
}
