//! A constraint system that only counts (and optionally records public inputs): the shape of a
//! circuit without building its polynomials.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use crate::{Error, Result};

/// What running a circuit through [`Probe`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// Constraints the circuit enforces (synthesis adds one more per input).
    pub constraints: usize,
    /// Public inputs, the constant one included.
    pub inputs: usize,
    /// Private variables.
    pub aux: usize,
    /// Constraints whose C combination is empty (e.g. boolean constraints `b·(1−b) = 0`).
    pub empty_c: usize,
    /// Values of the public inputs after the constant one (only when recording).
    pub input_values: Vec<Scalar>,
    record: bool,
}

impl Probe {
    /// Counts the constraints and variables of `circuit` without evaluating any value (works on
    /// circuits without a witness).
    pub fn run<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        Self::go(circuit, false)
    }

    /// As [`Probe::run`], also evaluating and recording the public inputs (needs a witness;
    /// private values are not evaluated unless an input depends on them).
    pub fn record_inputs<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        Self::go(circuit, true)
    }

    fn go<C: Circuit<Scalar>>(circuit: C, record: bool) -> Result<Self> {
        let mut p = Probe {
            inputs: 1,
            record,
            ..Default::default()
        };
        circuit
            .synthesize(&mut p)
            .map_err(|e| Error::Synthesis(e.to_string()))?;
        Ok(p)
    }
}

impl ConstraintSystem<Scalar> for Probe {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.record {
            self.input_values.push(f()?);
        }
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        self.constraints += 1;
        let c = c(LinearCombination::zero());
        let empty = c.iter().all(|(_, coeff)| bool::from(coeff.is_zero()));
        if empty {
            self.empty_c += 1;
        }
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}
