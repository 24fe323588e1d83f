//! A constraint system that checks each constraint as it is enforced and keeps only the
//! variables' values: a circuit of millions of constraints (a 32 GiB challenge) is checked in
//! the memory of its witness.

use bellows_core::groth16::constraint_system::{BuildLc, Cs, Lc, Name, Record, Value};
use bellpepper_core::{Index, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;

/// What the checking system keeps (see the module documentation).
pub struct Checked {
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    constraints: usize,
    first_unsatisfied: Option<usize>,
}

/// An empty checking system: the constant one as input 0.
pub fn new() -> Cs<Checked> {
    Cs(Checked {
        inputs: vec![Fr::ONE],
        aux: Vec::new(),
        constraints: 0,
        first_unsatisfied: None,
    })
}

impl Checked {
    /// The constraints enforced.
    pub fn constraints(&self) -> usize {
        self.constraints
    }

    /// The number (from 0) of the first constraint that did not hold, if any.
    pub fn first_unsatisfied(&self) -> Option<usize> {
        self.first_unsatisfied
    }

    fn eval(&self, lc: &Lc) -> Fr {
        lc.iter().fold(Fr::ZERO, |acc, (v, coeff)| {
            let x = match v.get_unchecked() {
                Index::Input(i) => self.inputs[i],
                Index::Aux(i) => self.aux[i],
            };
            acc + x * coeff
        })
    }
}

impl Record for Checked {
    fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        self.aux.push(value()?);
        Ok(self.aux.len() - 1)
    }

    fn input(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        self.inputs.push(value()?);
        Ok(self.inputs.len() - 1)
    }

    fn constraint(&mut self, _: impl Name, a: impl BuildLc, b: impl BuildLc, c: impl BuildLc) {
        let (a, b, c) = (a(Lc::zero()), b(Lc::zero()), c(Lc::zero()));
        if self.first_unsatisfied.is_none() && self.eval(&a) * self.eval(&b) != self.eval(&c) {
            self.first_unsatisfied = Some(self.constraints);
        }
        self.constraints += 1;
    }
}
