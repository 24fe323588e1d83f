//! The synthetic benchmark circuit: a squaring chain with a chosen share of boolean constraints.
//!
//! ## Shape
//! For `log_size` K the proving system sees exactly **n = 2^K − 2 constraints**, so the evaluation
//! domain is exactly 2^K (the shape used by the reference figures of other provers). Synthesis
//! (ours and bellperson's) appends one constraint per public input, the constant one included;
//! this circuit has one public input besides the constant, so it enforces
//! **m = n − 2 = 2^K − 4** constraints itself:
//!
//! - a private x₀ drawn from the witness seed;
//! - for j in 0..m−1, constraint j is either a chain step `x · (x + 1) = x'` (x' a fresh private
//!   variable that becomes the new x) or, for P of every 100 values of j, a boolean constraint
//!   `b · (1 − b) = 0` on a fresh private bit b drawn from the seed;
//! - constraint m−1 is always the last chain step, whose result is the one public input.
//!
//! The P bit positions are spread evenly (Bresenham): j is a bit constraint iff
//! ⌊(j+1)·P/100⌋ > ⌊j·P/100⌋, so every block of 100 consecutive j (from 0) holds exactly P of them
//! and the total is ⌊(m−1)·P/100⌋.
//!
//! Without a witness seed (for setup) every value is `None` and only the allocation closures
//! would fail, which setup never calls.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};

use crate::{Error, Result};

/// Smallest supported `log_size`: 2^3 − 4 = 4 circuit constraints.
pub const MIN_LOG_SIZE: u32 = 3;

/// The synthetic circuit of [`crate::circuits::synthetic`] (module docs give the exact shape).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticCircuit {
    log_size: u32,
    bits_pct: u8,
    witness_seed: Option<u64>,
    claimed_output: Option<Scalar>,
}

impl SyntheticCircuit {
    /// A circuit with 2^`log_size` − 2 constraints (input constraints included), `bits_pct` of
    /// every 100 of them boolean, and no witness (for setup).
    pub fn new(log_size: u32, bits_pct: u8) -> Result<Self> {
        if !(MIN_LOG_SIZE..=crate::MAX_LOG_NTT).contains(&log_size) {
            return Err(Error::invalid(format!(
                "synthetic circuit log size must be in {MIN_LOG_SIZE}..={}, got {log_size}",
                crate::MAX_LOG_NTT
            )));
        }
        if bits_pct > 100 {
            return Err(Error::invalid(format!(
                "bits percentage must be in 0..=100, got {bits_pct}"
            )));
        }
        Ok(Self {
            log_size,
            bits_pct,
            witness_seed: None,
            claimed_output: None,
        })
    }

    /// The same circuit with a witness: x₀ and the bits are drawn from a ChaCha20 stream keyed by
    /// `seed`.
    pub fn with_witness(mut self, seed: u64) -> Self {
        self.witness_seed = Some(seed);
        self
    }

    /// Claims `y` as the public output instead of the chain's true end value. Proving a wrong
    /// claim fails with [`Error::Unsatisfied`]; this is how a wrong witness is exercised.
    pub fn with_claimed_output(mut self, y: Scalar) -> Self {
        self.claimed_output = Some(y);
        self
    }

    /// log2 of the evaluation domain.
    pub fn log_size(&self) -> u32 {
        self.log_size
    }

    /// Percentage of boolean constraints.
    pub fn bits_pct(&self) -> u8 {
        self.bits_pct
    }

    /// Whether a witness is attached.
    pub fn has_witness(&self) -> bool {
        self.witness_seed.is_some()
    }

    /// Constraints the prover sees: 2^K − 2 (input constraints included).
    pub fn num_constraints(&self) -> usize {
        (1usize << self.log_size) - 2
    }

    /// Constraints the circuit enforces itself: 2^K − 4.
    pub fn num_circuit_constraints(&self) -> usize {
        (1usize << self.log_size) - 4
    }

    /// Number of boolean constraints: ⌊(m − 1)·P/100⌋.
    pub fn num_bit_constraints(&self) -> usize {
        bits_before(self.num_circuit_constraints() - 1, self.bits_pct)
    }

    /// Number of public inputs, the constant one excluded: 1.
    pub fn num_public_inputs(&self) -> usize {
        1
    }

    /// Whether circuit constraint `j` (0-based, of [`Self::num_circuit_constraints`]) is a
    /// boolean constraint.
    pub fn is_bit_constraint(&self, j: usize) -> bool {
        j + 1 < self.num_circuit_constraints()
            && bits_before(j + 1, self.bits_pct) > bits_before(j, self.bits_pct)
    }

    /// The chain's end value computed natively (no constraint system), or `None` without a
    /// witness. Equals the public input of a satisfied instance.
    pub fn output(&self) -> Option<Scalar> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.witness_seed?);
        let mut x = Scalar::random(&mut rng);
        for j in 0..self.num_circuit_constraints() {
            if self.is_bit_constraint(j) {
                rng.next_u32();
            } else {
                x = x.square() + x;
            }
        }
        Some(x)
    }
}

/// ⌊j·P/100⌋: bit constraints among the first j.
fn bits_before(j: usize, pct: u8) -> usize {
    // j < 2^32, P ≤ 100: no overflow in u64/usize on 64-bit targets.
    j * pct as usize / 100
}

fn value<T>(v: Option<T>) -> Result<T, SynthesisError> {
    v.ok_or(SynthesisError::AssignmentMissing)
}

impl Circuit<Scalar> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let m = self.num_circuit_constraints();
        let mut rng = self.witness_seed.map(ChaCha20Rng::seed_from_u64);
        let mut x_val = rng.as_mut().map(Scalar::random);
        let mut x = cs.alloc(|| "x0", || value(x_val))?;
        // Constraint j is a bit iff ⌊(j+1)·P/100⌋ > ⌊j·P/100⌋ (`is_bit_constraint`), that is
        // iff (j·P mod 100) + P ≥ 100: kept as a running remainder instead of two divisions
        // per constraint (this loop is the witness's sequential code).
        let pct = usize::from(self.bits_pct);
        let mut rem = 0usize; // j·P mod 100
        for j in 0..m - 1 {
            rem += pct; // < 200: rem < 100 and P ≤ 100
            let is_bit = rem >= 100;
            if is_bit {
                rem -= 100;
            }
            debug_assert_eq!(is_bit, self.is_bit_constraint(j));
            if is_bit {
                let bit = rng
                    .as_mut()
                    .map(|r| Scalar::from(u64::from(r.next_u32() & 1)));
                let b = cs.alloc(|| format!("bit {j}"), || value(bit))?;
                cs.enforce(
                    || format!("b(1-b)=0 {j}"),
                    |lc| lc + b,
                    |lc| lc + CS::one() - b,
                    |lc| lc,
                );
            } else {
                x_val = x_val.map(|v| v.square() + v);
                let next = cs.alloc(|| format!("x {j}"), || value(x_val))?;
                cs.enforce(
                    || format!("x(x+1)=x' {j}"),
                    |lc| lc + x,
                    |lc| lc + x + CS::one(),
                    |lc| lc + next,
                );
                x = next;
            }
        }
        let out_val = self.claimed_output.or(x_val.map(|v| v.square() + v));
        let out = cs.alloc_input(|| "output", || value(out_val))?;
        cs.enforce(
            || "x(x+1)=output",
            |lc| lc + x,
            |lc| lc + x + CS::one(),
            |lc| lc + out,
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groth16::constraints::CircuitShape;
    use crate::groth16::synthesis::synthesize;
    use bellpepper_core::test_cs::TestConstraintSystem;

    #[test]
    fn exactly_2k_minus_2_constraints_and_domain_2k() {
        for k in [3u32, 4, 7, 10] {
            for pct in [0u8, 37, 100] {
                let c = SyntheticCircuit::new(k, pct)
                    .unwrap()
                    .with_witness(u64::from(k));
                let s = synthesize(c.clone()).unwrap();
                assert_eq!(s.num_constraints(), (1 << k) - 2, "k={k} pct={pct}");
                assert_eq!(s.log_domain(), k);
                assert_eq!(s.public_inputs(), &[c.output().unwrap()]);
                // Blank circuit has the same shape.
                let blank = CircuitShape::count(SyntheticCircuit::new(k, pct).unwrap()).unwrap();
                assert_eq!(blank.num_constraints, (1 << k) - 2);
                assert_eq!(blank.num_inputs, 2);
            }
        }
    }

    #[test]
    fn satisfied_in_bellpepper_test_cs() {
        let c = SyntheticCircuit::new(8, 25).unwrap().with_witness(3);
        let y = c.output().unwrap();
        let mut cs = TestConstraintSystem::<Scalar>::new();
        c.synthesize(&mut cs).unwrap();
        assert!(cs.is_satisfied(), "{:?}", cs.which_is_unsatisfied());
        assert_eq!(cs.num_constraints(), (1 << 8) - 4);
        assert!(cs.verify(&[y]));
    }

    #[test]
    fn bits_pct_is_respected_per_block_of_100() {
        for pct in [0u8, 1, 30, 50, 99, 100] {
            let c = SyntheticCircuit::new(10, pct).unwrap().with_witness(1);
            let shape = CircuitShape::count(c.clone()).unwrap();
            // Bit constraints are the ones with an empty C.
            assert_eq!(shape.num_empty_c, c.num_bit_constraints(), "pct={pct}");
            assert_eq!(c.num_bit_constraints(), (1020 - 1) * pct as usize / 100);
            let m = c.num_circuit_constraints();
            for block in 0..(m - 1) / 100 {
                let n = (block * 100..block * 100 + 100)
                    .filter(|&j| c.is_bit_constraint(j))
                    .count();
                assert_eq!(n, pct as usize, "pct={pct} block={block}");
            }
            assert!(!c.is_bit_constraint(m - 1));
            // The satisfied instance's bits are really 0/1 and some of both occur.
            let s = synthesize(c).unwrap();
            if pct == 50 {
                let ones = s
                    .aux_assignment
                    .iter()
                    .filter(|v| **v == Scalar::ONE)
                    .count();
                let zeros = s
                    .aux_assignment
                    .iter()
                    .filter(|v| bool::from(v.is_zero()))
                    .count();
                assert!(ones > 100 && zeros > 100, "ones={ones} zeros={zeros}");
            }
        }
    }

    #[test]
    fn wrong_output_is_unsatisfied() {
        let c = SyntheticCircuit::new(6, 10).unwrap().with_witness(9);
        let wrong = c.output().unwrap() + Scalar::ONE;
        let err = synthesize(c.with_claimed_output(wrong)).unwrap_err();
        assert!(matches!(err, Error::Unsatisfied(_)), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("constraint {}", (1 << 6) - 5)),
            "{err}"
        );
    }

    #[test]
    fn witness_depends_on_seed_and_is_deterministic() {
        let c = |s| SyntheticCircuit::new(5, 50).unwrap().with_witness(s);
        assert_eq!(c(1).output(), c(1).output());
        assert_ne!(c(1).output(), c(2).output());
        assert_eq!(SyntheticCircuit::new(5, 50).unwrap().output(), None);
    }

    #[test]
    fn blank_circuit_fails_synthesis_with_missing_assignment() {
        let err = synthesize(SyntheticCircuit::new(4, 0).unwrap()).unwrap_err();
        assert!(matches!(err, Error::Synthesis(_)), "{err}");
    }

    #[test]
    fn bad_sizes_are_rejected() {
        assert!(matches!(
            SyntheticCircuit::new(2, 0),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            SyntheticCircuit::new(33, 0),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            SyntheticCircuit::new(10, 101),
            Err(Error::InvalidInput(_))
        ));
    }
}
