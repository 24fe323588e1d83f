//! Circuit synthesis: a `bellpepper_core::Circuit` becomes the evaluations of the A, B, C
//! polynomials on the domain (one value per constraint) plus the variable assignments.
//!
//! This is the witness side of a Groth16 R1CS (Groth 2016, §3): for constraint j the prover
//! records ⟨A_j, w⟩, ⟨B_j, w⟩, ⟨C_j, w⟩ where w = (inputs, aux). Like bellperson, after the circuit
//! runs, one constraint `input_i · 0 = 0` is added per public input (the constant one included) so
//! that the IC query has full density; and density is tracked, i.e. which variables occur with a
//! non-zero coefficient in some A (aux only: inputs always occur) and some B, because the
//! parameters' a, b_g1 and b_g2 queries omit the points of variables that never occur.
//!
//! Synthesis of a batch runs one circuit per rayon task. A satisfied-constraints check
//! (⟨A_j,w⟩·⟨B_j,w⟩ = ⟨C_j,w⟩ for every j) runs afterwards so that an unsatisfied circuit is
//! reported by constraint index instead of yielding a proof that does not verify.
//!
//! For circuits proven many times, [`crate::pce`] records the constraint system once and then
//! produces the same [`Synthesized`], bit for bit, from witness-only synthesis and parallel
//! sparse products.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use crate::{Error, Result};

/// Which variables of one kind (inputs or aux) occur in a query.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    used: Vec<bool>,
    total: usize,
}

impl Density {
    /// A density over `used.len()` variables, those marked `true` occurring (how a
    /// pre-compiled constraint system hands over the densities it recorded).
    pub(crate) fn from_used(used: Vec<bool>) -> Self {
        let total = used.iter().filter(|&&u| u).count();
        Self { used, total }
    }
    fn push(&mut self) {
        self.used.push(false);
    }
    fn mark(&mut self, i: usize) {
        if !self.used[i] {
            self.used[i] = true;
            self.total += 1;
        }
    }
    /// Number of variables that occur.
    pub fn total(&self) -> usize {
        self.total
    }
    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.used.len()
    }
    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.used.is_empty()
    }
    /// Whether variable `i` occurs.
    pub fn is_used(&self, i: usize) -> bool {
        self.used[i]
    }
    /// The assignment values of the variables that occur, in order (the scalars an MSM over the
    /// density-filtered query needs).
    pub fn filter(&self, values: &[Scalar]) -> Vec<Scalar> {
        debug_assert_eq!(values.len(), self.used.len());
        values
            .iter()
            .zip(&self.used)
            .filter_map(|(v, &u)| u.then_some(*v))
            .collect()
    }
}

/// The result of synthesising one circuit for proving.
#[derive(Clone, Debug, Default)]
pub struct Synthesized {
    /// ⟨A_j, w⟩ for every constraint j (input constraints included).
    pub a: Vec<Scalar>,
    /// ⟨B_j, w⟩.
    pub b: Vec<Scalar>,
    /// ⟨C_j, w⟩.
    pub c: Vec<Scalar>,
    /// Public inputs; index 0 is the constant one.
    pub input_assignment: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux_assignment: Vec<Scalar>,
    /// Aux variables occurring in some A.
    pub a_aux_density: Density,
    /// Inputs occurring in some B.
    pub b_input_density: Density,
    /// Aux variables occurring in some B.
    pub b_aux_density: Density,
}

impl Synthesized {
    /// Number of constraints, input constraints included.
    pub fn num_constraints(&self) -> usize {
        self.a.len()
    }

    /// log2 of the evaluation domain: the smallest power of two ≥ the number of constraints.
    pub fn log_domain(&self) -> u32 {
        self.a.len().max(1).next_power_of_two().trailing_zeros()
    }

    /// Public inputs without the constant one (what a verifier is given).
    pub fn public_inputs(&self) -> &[Scalar] {
        &self.input_assignment[1..]
    }

    /// Checks ⟨A_j,w⟩·⟨B_j,w⟩ = ⟨C_j,w⟩ for every constraint; names the first that fails.
    pub fn check_satisfied(&self) -> Result<()> {
        let bad = (0..self.a.len())
            .into_par_iter()
            .find_first(|&j| self.a[j] * self.b[j] != self.c[j]);
        match bad {
            None => Ok(()),
            Some(j) => Err(Error::Unsatisfied(format!(
                "constraint {j} of {} does not hold (A·B ≠ C); check the witness",
                self.a.len()
            ))),
        }
    }
}

/// The constraint system that records a proving assignment.
struct Assignment(Synthesized);

fn eval(
    lc: &LinearCombination<Scalar>,
    inputs: &[Scalar],
    aux: &[Scalar],
    mut input_density: Option<&mut Density>,
    mut aux_density: Option<&mut Density>,
) -> Scalar {
    let mut acc = Scalar::ZERO;
    for (&i, coeff) in lc.iter_inputs() {
        if !bool::from(coeff.is_zero()) {
            acc += inputs[i] * coeff;
            if let Some(d) = input_density.as_deref_mut() {
                d.mark(i);
            }
        }
    }
    for (&i, coeff) in lc.iter_aux() {
        if !bool::from(coeff.is_zero()) {
            acc += aux[i] * coeff;
            if let Some(d) = aux_density.as_deref_mut() {
                d.mark(i);
            }
        }
    }
    acc
}

impl ConstraintSystem<Scalar> for Assignment {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let s = &mut self.0;
        s.aux_assignment.push(f()?);
        s.a_aux_density.push();
        s.b_aux_density.push();
        Ok(Variable(Index::Aux(s.aux_assignment.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let s = &mut self.0;
        s.input_assignment.push(f()?);
        s.b_input_density.push();
        Ok(Variable(Index::Input(s.input_assignment.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let s = &mut self.0;
        let (la, lb, lc) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        let (inp, aux) = (&s.input_assignment, &s.aux_assignment);
        let va = eval(&la, inp, aux, None, Some(&mut s.a_aux_density));
        let vb = eval(
            &lb,
            inp,
            aux,
            Some(&mut s.b_input_density),
            Some(&mut s.b_aux_density),
        );
        let vc = eval(&lc, inp, aux, None, None);
        s.a.push(va);
        s.b.push(vb);
        s.c.push(vc);
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

/// The error for a circuit's own synthesis failure (shared with the pre-compiled path).
pub(crate) fn synthesis_error(e: SynthesisError) -> Error {
    match e {
        SynthesisError::Unsatisfiable => {
            Error::Unsatisfied("the circuit reported its constraints unsatisfiable".into())
        }
        SynthesisError::AssignmentMissing => Error::Synthesis(
            "an assignment is missing: the circuit was built without its witness".into(),
        ),
        other => Error::Synthesis(other.to_string()),
    }
}

/// Synthesises one circuit: runs it, adds the input constraints, checks satisfaction.
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized> {
    let mut cs = Assignment(Synthesized::default());
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .map_err(|e| Error::Synthesis(e.to_string()))?;
    circuit.synthesize(&mut cs).map_err(synthesis_error)?;
    for i in 0..cs.0.input_assignment.len() {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    let s = cs.0;
    if s.a.len() > (1usize << crate::MAX_LOG_NTT) {
        return Err(Error::invalid(format!(
            "{} constraints exceed the largest domain 2^{}",
            s.a.len(),
            crate::MAX_LOG_NTT
        )));
    }
    s.check_satisfied()?;
    Ok(s)
}

/// Synthesises a batch of circuits in parallel (one rayon task per circuit). All circuits must
/// have the same shape (constraint and variable counts), as the circuits of one proof batch do.
pub fn synthesize_batch<C: Circuit<Scalar> + Send>(circuits: Vec<C>) -> Result<Vec<Synthesized>> {
    let out: Vec<Synthesized> = circuits
        .into_par_iter()
        .map(synthesize)
        .collect::<Result<_>>()?;
    if let Some(first) = out.first() {
        for (k, s) in out.iter().enumerate().skip(1) {
            if s.a.len() != first.a.len()
                || s.input_assignment.len() != first.input_assignment.len()
                || s.aux_assignment.len() != first.aux_assignment.len()
            {
                return Err(Error::invalid(format!(
                    "circuit {k} of the batch has a different shape than circuit 0 \
                     ({} vs {} constraints, {} vs {} inputs, {} vs {} aux)",
                    s.a.len(),
                    first.a.len(),
                    s.input_assignment.len(),
                    first.input_assignment.len(),
                    s.aux_assignment.len(),
                    first.aux_assignment.len()
                )));
            }
        }
    }
    Ok(out)
}
