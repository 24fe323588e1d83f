//! Randomness for proofs: from the operating system by default, from a seed when asked.
//!
//! A seeded [`ProofRng`] is a ChaCha20 stream keyed by the seed, so the same seed gives the same
//! r and s on every machine and every backend, which is what makes proofs byte-identical and
//! conformance checks exact.

use rand_chacha::ChaCha20Rng;
use rand_core::{CryptoRng, OsRng, RngCore, SeedableRng};

/// Source of the blinding factors r and s.
pub enum ProofRng {
    /// The operating system's CSPRNG (production).
    Os(OsRng),
    /// A deterministic ChaCha20 stream from a seed (tests, conformance, benchmarks).
    Seeded(Box<ChaCha20Rng>),
}

impl ProofRng {
    /// OS randomness.
    pub fn os() -> Self {
        ProofRng::Os(OsRng)
    }
    /// Deterministic randomness from `seed`.
    pub fn seeded(seed: u64) -> Self {
        ProofRng::Seeded(Box::new(ChaCha20Rng::seed_from_u64(seed)))
    }
    /// `seeded(s)` when a seed is given, else `os()`.
    pub fn from_option(seed: Option<u64>) -> Self {
        seed.map_or_else(Self::os, Self::seeded)
    }
}

impl RngCore for ProofRng {
    fn next_u32(&mut self) -> u32 {
        match self {
            ProofRng::Os(r) => r.next_u32(),
            ProofRng::Seeded(r) => r.next_u32(),
        }
    }
    fn next_u64(&mut self) -> u64 {
        match self {
            ProofRng::Os(r) => r.next_u64(),
            ProofRng::Seeded(r) => r.next_u64(),
        }
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        match self {
            ProofRng::Os(r) => r.fill_bytes(dest),
            ProofRng::Seeded(r) => r.fill_bytes(dest),
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_core::Error> {
        match self {
            ProofRng::Os(r) => r.try_fill_bytes(dest),
            ProofRng::Seeded(r) => r.try_fill_bytes(dest),
        }
    }
}

impl CryptoRng for ProofRng {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_is_deterministic_and_seed_dependent() {
        let a: Vec<u64> = (0..4)
            .map({
                let mut r = ProofRng::seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..4)
            .map({
                let mut r = ProofRng::seeded(7);
                move |_| r.next_u64()
            })
            .collect();
        let c: Vec<u64> = (0..4)
            .map({
                let mut r = ProofRng::seeded(8);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
