//! Shared test circuit: a small chain with every density case (an input used in B, an aux
//! variable used only in C, aux variables in A and B); and the comparisons of syntheses and
//! parameter sets the tests share.

#![allow(dead_code)]

pub mod lending;
pub mod points;

use bellows_core::groth16::{
    prover::{self, ProvingKey},
    synthesis::{synthesize, Synthesized},
    Parameters, Proof,
};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// x_{i+1} = x_i² + x_i for `rounds` rounds; public inputs: the last value and 7·x_0.
#[derive(Clone, Debug)]
pub struct ChainCircuit {
    /// Private start value (None for setup).
    pub x0: Option<Scalar>,
    /// Number of rounds.
    pub rounds: usize,
    /// Deliberately break the witness (for unsatisfied-circuit tests).
    pub corrupt: bool,
}

impl ChainCircuit {
    pub fn new(x0: u64, rounds: usize) -> Self {
        Self {
            x0: Some(Scalar::from(x0)),
            rounds,
            corrupt: false,
        }
    }
    pub fn blank(rounds: usize) -> Self {
        Self {
            x0: None,
            rounds,
            corrupt: false,
        }
    }
    /// The public inputs a correct witness yields.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let x0 = self.x0.unwrap();
        let mut x = x0;
        for _ in 0..self.rounds {
            x = x * x + x;
        }
        vec![x, x0 * Scalar::from(7u64)]
    }
}

impl Circuit<Scalar> for ChainCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let x0_val = self.x0;
        let x0 = cs.alloc(|| "x0", || x0_val.ok_or(SynthesisError::AssignmentMissing))?;
        let (mut x, mut xv) = (x0, x0_val);
        for i in 0..self.rounds {
            let sq_val = xv.map(|v| v * v);
            let sq = cs.alloc(
                || format!("sq{i}"),
                || sq_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("square{i}"),
                |lc| lc + x,
                |lc| lc + x,
                |lc| lc + sq,
            );
            let mut next_val = sq_val.zip(xv).map(|(a, b)| a + b);
            if self.corrupt && i == self.rounds / 2 {
                next_val = next_val.map(|v| v + Scalar::ONE);
            }
            let next = cs.alloc(
                || format!("x{}", i + 1),
                || next_val.ok_or(SynthesisError::AssignmentMissing),
            )?;
            cs.enforce(
                || format!("add{i}"),
                |lc| lc + sq + x,
                |lc| lc + CS::one(),
                |lc| lc + next,
            );
            x = next;
            xv = next_val;
        }
        let out = cs.alloc_input(|| "out", || xv.ok_or(SynthesisError::AssignmentMissing))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        // Public 7·x0, used in B (input density in B).
        let times_x0 = |k: u64| {
            x0_val
                .map(|v| v * Scalar::from(k))
                .ok_or(SynthesisError::AssignmentMissing)
        };
        let seven = cs.alloc_input(|| "7x0", || times_x0(7))?;
        cs.enforce(
            || "seven",
            |lc| lc + CS::one(),
            |lc| lc + seven,
            |lc| lc + (Scalar::from(7u64), x0),
        );
        // An aux variable that occurs only in C: t = 3·x0.
        let t = cs.alloc(|| "t", || times_x0(3))?;
        cs.enforce(
            || "t",
            |lc| lc + (Scalar::from(3u64), CS::one()),
            |lc| lc + x0,
            |lc| lc + t,
        );
        Ok(())
    }
}

/// One proof of `circuit` with the given r and s, synthesised directly: the fixed-randomness
/// route that the byte-for-byte comparisons with bellperson's `create_proof` take.
pub fn prove_with<C: Circuit<Scalar>>(key: &ProvingKey, circuit: C, r: Scalar, s: Scalar) -> Proof {
    prover::start_with_randomness(key, vec![synthesize(circuit).unwrap()], vec![r], vec![s])
        .unwrap()
        .finalize()
        .unwrap()
        .remove(0)
}

/// x ← x² for `rounds` rounds, then x = 1·k for a public input k (in B): every section of the
/// parameters is non-empty. For setup only: its witness (x = 2, every later value 0) does not
/// satisfy it.
pub struct Squarings(pub usize);

impl Circuit<Scalar> for Squarings {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x = cs.alloc(|| "x", || Ok(Scalar::from(2u64)))?;
        for i in 0..self.0 {
            let y = cs.alloc(|| format!("y{i}"), || Ok(Scalar::ZERO))?;
            cs.enforce(|| format!("sq{i}"), |lc| lc + x, |lc| lc + x, |lc| lc + y);
            x = y;
        }
        let k = cs.alloc_input(|| "k", || Ok(Scalar::ZERO))?;
        cs.enforce(|| "k", |lc| lc + CS::one(), |lc| lc + k, |lc| lc + x);
        Ok(())
    }
}

/// Asserts two syntheses are identical, field by field, in canonical bytes.
pub fn assert_identical(direct: &Synthesized, pce: &Synthesized, what: &str) {
    let bytes = |v: &[Scalar]| -> Vec<[u8; 32]> { v.iter().map(|s| s.to_repr()).collect() };
    let vectors = |s: &Synthesized| {
        let [a, b, c, aux] = [&s.a, &s.b, &s.c, &s.aux_assignment].map(|v| bytes(v));
        [
            ("a", a),
            ("b", b),
            ("c", c),
            ("inputs", bytes(&s.input_assignment)),
            ("aux", aux),
        ]
    };
    for ((name, d), (_, p)) in vectors(direct).into_iter().zip(vectors(pce)) {
        assert_eq!(d, p, "{what}: {name}");
    }
    let (d, p) = (direct, pce);
    let densities = [
        ("A density", &d.a_aux_density, &p.a_aux_density),
        ("B input density", &d.b_input_density, &p.b_input_density),
        ("B aux density", &d.b_aux_density, &p.b_aux_density),
    ];
    for (name, d, p) in densities {
        assert_eq!(d, p, "{what}: {name}");
    }
}

/// Asserts two parameter sets hold the same keys and points.
pub fn assert_same_params(a: &Parameters, b: &Parameters) {
    assert_eq!(a.vk, b.vk);
    assert_eq!(*a.h, *b.h);
    assert_eq!(*a.l, *b.l);
    assert_eq!(*a.a, *b.a);
    assert_eq!(*a.b_g1, *b.b_g1);
    assert_eq!(*a.b_g2, *b.b_g2);
}
