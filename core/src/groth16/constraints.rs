//! What a setup needs to know about a circuit: its constraint matrices, or only their shape.
//!
//! Both constraint systems here follow the Groth16 assembly of bellman/bellperson (Groth 2016,
//! §3.2, in the R1CS-to-QAP form of Gennaro, Gentry, Parno, Raykova 2013):
//! 1. the constant-one public input is allocated first (index 0);
//! 2. the circuit is synthesised;
//! 3. one constraint `input_i · 0 = 0` is appended for every public input i, so that every input
//!    appears in A and the IC query is fully dense.
//!
//! The evaluation domain has n = the next power of two ≥ the number of constraints (the input
//! constraints included).
//!
//! [`ConstraintMatrices`] keeps every non-zero matrix entry, column by column (one column per
//! variable), for a real setup. [`CircuitShape`] keeps only counts and which variables occur in A
//! and B: that is all the benchmark-only generator needs, and it costs one bit per variable.
//! [`CircuitShape::count`] keeps the counts alone, for measuring a circuit (a built-in circuit's
//! size, a test's expectations) without building its A and B combinations.
//!
//! Both are records of the one constraint system, [`super::constraint_system::Cs`].

use bellpepper_core::{Circuit, Index, SynthesisError, Variable};
use blstrs::Scalar;
use ff::Field;

use super::constraint_system::{next_index, BuildLc, Cs, Lc, Name, Record, Value};
use crate::{Error, Result};

/// One matrix column: `(coefficient, constraint index)` for each non-zero entry.
pub type Column = Vec<(Scalar, usize)>;

/// The A, B, C matrices of a circuit, stored by column (variable), inputs and aux separately.
#[derive(Clone, Debug, Default)]
pub struct ConstraintMatrices {
    /// Number of public inputs, the constant one included.
    pub num_inputs: usize,
    /// Number of auxiliary (private) variables.
    pub num_aux: usize,
    /// Number of constraints, the per-input constraints included.
    pub num_constraints: usize,
    /// Number of constraints the circuit itself enforced (without the per-input constraints).
    pub num_circuit_constraints: usize,
    /// A columns of the inputs.
    pub at_inputs: Vec<Column>,
    /// B columns of the inputs.
    pub bt_inputs: Vec<Column>,
    /// C columns of the inputs.
    pub ct_inputs: Vec<Column>,
    /// A columns of the aux variables.
    pub at_aux: Vec<Column>,
    /// B columns of the aux variables.
    pub bt_aux: Vec<Column>,
    /// C columns of the aux variables.
    pub ct_aux: Vec<Column>,
    /// First variable that referred to an index never allocated, if any.
    bad_variable: Option<Variable>,
}

/// Which variables occur in A and B, and the counts: the shape of a circuit's parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CircuitShape {
    /// Number of public inputs, the constant one included.
    pub num_inputs: usize,
    /// Number of auxiliary (private) variables.
    pub num_aux: usize,
    /// Number of constraints, the per-input constraints included.
    pub num_constraints: usize,
    /// Number of constraints the circuit itself enforced.
    pub num_circuit_constraints: usize,
    /// Constraints the circuit itself enforced whose C combination is empty (boolean
    /// constraints `b·(1−b) = 0`, say).
    pub num_empty_c: usize,
    /// `a_aux[j]`: aux variable j has a non-zero coefficient in some A combination (empty when
    /// only counted).
    pub a_aux: Vec<bool>,
    /// `b_inputs[i]`: input i has a non-zero coefficient in some B combination (empty when only
    /// counted).
    pub b_inputs: Vec<bool>,
    /// `b_aux[j]`: aux variable j has a non-zero coefficient in some B combination (empty when
    /// only counted).
    pub b_aux: Vec<bool>,
    bad_variable: Option<Variable>,
    /// Whether A and B are built and the densities kept ([`CircuitShape::of`]).
    densities: bool,
}

impl CircuitShape {
    /// Runs `circuit` in a constraint system that only counts and marks densities, as a setup
    /// would (see the module documentation for the steps). No value is evaluated.
    pub fn of<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        Self::measure(circuit, true)
    }

    /// The counts of [`CircuitShape::of`] alone: A and B are not built and the density fields
    /// stay empty (so [`CircuitShape::a_query_len`] and [`CircuitShape::b_query_len`] do not
    /// apply). Works on circuits without a witness.
    pub fn count<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        Self::measure(circuit, false)
    }

    fn measure<C: Circuit<Scalar>>(circuit: C, densities: bool) -> Result<Self> {
        let record = CircuitShape {
            densities,
            ..Default::default()
        };
        let Cs(mut shape) = Cs::assemble(record, circuit).map_err(synthesis_error)?;
        check_variable(shape.bad_variable)?;
        shape.num_circuit_constraints = shape.num_constraints;
        // The per-input constraints `input_i · 0 = 0` put every input into A (always counted as
        // dense, see `a_query_len`) and nothing into B.
        shape.num_constraints += shape.num_inputs;
        Ok(shape)
    }

    /// Points in the A query: every input, plus the aux variables that occur in A.
    pub fn a_query_len(&self) -> usize {
        self.num_inputs + count(&self.a_aux)
    }

    /// Points in each B query (G1 and G2): the variables that occur in B.
    pub fn b_query_len(&self) -> usize {
        count(&self.b_inputs) + count(&self.b_aux)
    }

    /// Evaluation domain size n and its log2 (see [`domain_size`]).
    pub fn domain(&self) -> Result<(usize, u32)> {
        domain_size(self.num_constraints, self.num_circuit_constraints)
    }

    /// Records an A combination: aux density; input indices only validated (inputs are dense).
    fn mark_a(&mut self, lc: &Lc) {
        for (&i, _) in lc.iter_inputs() {
            if i >= self.num_inputs {
                note_bad(&mut self.bad_variable, Variable(Index::Input(i)));
            }
        }
        mark_nonzero(
            &mut self.a_aux,
            lc.iter_aux(),
            Index::Aux,
            &mut self.bad_variable,
        );
    }

    /// Records a B combination: input and aux density.
    fn mark_b(&mut self, lc: &Lc) {
        mark_nonzero(
            &mut self.b_inputs,
            lc.iter_inputs(),
            Index::Input,
            &mut self.bad_variable,
        );
        mark_nonzero(
            &mut self.b_aux,
            lc.iter_aux(),
            Index::Aux,
            &mut self.bad_variable,
        );
    }
}

fn mark_nonzero<'a>(
    bits: &mut [bool],
    entries: impl Iterator<Item = (&'a usize, &'a Scalar)>,
    index: fn(usize) -> Index,
    bad: &mut Option<Variable>,
) {
    for (&k, c) in entries {
        if bool::from(c.is_zero()) {
            continue;
        }
        match bits.get_mut(k) {
            Some(slot) => *slot = true,
            None => note_bad(bad, Variable(index(k))),
        }
    }
}

fn count(bits: &[bool]) -> usize {
    bits.iter().filter(|&&b| b).count()
}

fn note_bad(slot: &mut Option<Variable>, v: Variable) {
    if slot.is_none() {
        *slot = Some(v);
    }
}

fn check_variable(bad: Option<Variable>) -> Result<()> {
    match bad {
        None => Ok(()),
        Some(v) => Err(Error::Synthesis(format!(
            "the circuit refers to variable {:?}, which it never allocated",
            v.get_unchecked()
        ))),
    }
}

fn synthesis_error(e: SynthesisError) -> Error {
    Error::Synthesis(e.to_string())
}

/// Evaluation domain for `num_constraints` constraints (input constraints included): the smallest
/// power of two n ≥ `num_constraints`, with log2(n) ≤ [`crate::MAX_LOG_NTT`] (Fr's two-adicity).
///
/// `num_circuit_constraints` is the number the circuit itself enforced; a circuit without any
/// constraint of its own is rejected (its parameters would prove nothing).
pub fn domain_size(num_constraints: usize, num_circuit_constraints: usize) -> Result<(usize, u32)> {
    if num_circuit_constraints == 0 {
        return Err(Error::invalid(
            "the circuit enforces no constraints: there is nothing to set up",
        ));
    }
    let n = num_constraints
        .checked_next_power_of_two()
        .filter(|n| n.trailing_zeros() <= crate::MAX_LOG_NTT)
        .ok_or_else(|| {
            Error::invalid(format!(
                "the circuit has {num_constraints} constraints (public-input constraints \
                 included): the evaluation domain would exceed 2^{}, the largest BLS12-381 \
                 supports",
                crate::MAX_LOG_NTT
            ))
        })?;
    Ok((n, n.trailing_zeros()))
}

impl Record for CircuitShape {
    fn aux(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        if self.densities {
            self.a_aux.push(false);
            self.b_aux.push(false);
        }
        next_index(&mut self.num_aux)
    }

    fn input(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        if self.densities {
            self.b_inputs.push(false);
        }
        next_index(&mut self.num_inputs)
    }

    fn constraint(&mut self, _: impl Name, a: impl BuildLc, b: impl BuildLc, c: impl BuildLc) {
        if self.densities {
            self.mark_a(&a(Lc::zero()));
            self.mark_b(&b(Lc::zero()));
        }
        let c = c(Lc::zero());
        let mut empty = true;
        for (v, coeff) in c.iter() {
            empty &= bool::from(coeff.is_zero());
            let ok = match v.get_unchecked() {
                Index::Input(i) => i < self.num_inputs,
                Index::Aux(j) => j < self.num_aux,
            };
            if !ok {
                note_bad(&mut self.bad_variable, v);
            }
        }
        self.num_empty_c += usize::from(empty);
        self.num_constraints += 1;
    }
}

impl ConstraintMatrices {
    /// Synthesises `circuit` into its matrices, as a setup does (see the module documentation).
    pub fn of<C: Circuit<Scalar>>(circuit: C) -> Result<Self> {
        let mut cs =
            Cs::assemble(ConstraintMatrices::default(), circuit).map_err(synthesis_error)?;
        check_variable(cs.bad_variable)?;
        cs.num_circuit_constraints = cs.num_constraints;
        cs.enforce_inputs(cs.num_inputs);
        Ok(cs.0)
    }

    /// Evaluation domain size n and its log2 (see [`domain_size`]).
    pub fn domain(&self) -> Result<(usize, u32)> {
        domain_size(self.num_constraints, self.num_circuit_constraints)
    }

    fn record(&mut self, lc: &Lc, which: usize, row: usize) {
        for (v, c) in lc.iter() {
            if bool::from(c.is_zero()) {
                continue;
            }
            let (inputs, aux) = match which {
                0 => (&mut self.at_inputs, &mut self.at_aux),
                1 => (&mut self.bt_inputs, &mut self.bt_aux),
                _ => (&mut self.ct_inputs, &mut self.ct_aux),
            };
            let col = match v.get_unchecked() {
                Index::Input(i) => inputs.get_mut(i),
                Index::Aux(j) => aux.get_mut(j),
            };
            match col {
                Some(col) => col.push((*c, row)),
                None => note_bad(&mut self.bad_variable, v),
            }
        }
    }
}

impl Record for ConstraintMatrices {
    fn aux(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        self.at_aux.push(Vec::new());
        self.bt_aux.push(Vec::new());
        self.ct_aux.push(Vec::new());
        next_index(&mut self.num_aux)
    }

    fn input(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
        self.at_inputs.push(Vec::new());
        self.bt_inputs.push(Vec::new());
        self.ct_inputs.push(Vec::new());
        next_index(&mut self.num_inputs)
    }

    fn constraint(&mut self, _: impl Name, a: impl BuildLc, b: impl BuildLc, c: impl BuildLc) {
        let row = self.num_constraints;
        self.record(&a(Lc::zero()), 0, row);
        self.record(&b(Lc::zero()), 1, row);
        self.record(&c(Lc::zero()), 2, row);
        self.num_constraints += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_is_the_next_power_of_two_up_to_2_32() {
        assert_eq!(domain_size(1, 1).unwrap(), (1, 0));
        assert_eq!(domain_size(16, 13).unwrap(), (16, 4));
        assert_eq!(domain_size(17, 13).unwrap(), (32, 5));
        assert_eq!(domain_size(1 << 32, 1).unwrap(), (1 << 32, 32));
        let e = domain_size((1 << 32) + 1, 1).unwrap_err().to_string();
        assert!(e.contains("exceed 2^32"), "{e}");
        let e = domain_size(3, 0).unwrap_err().to_string();
        assert!(e.contains("no constraints"), "{e}");
    }
}
