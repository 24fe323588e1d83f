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
//! reported instead of yielding a proof that does not verify.
//!
//! The fast pass ([`synthesize`], [`synthesize_batch`]: what [`crate::groth16::prover::prove`],
//! [`crate::groth16::prover::start`] and the pipeline use) ignores bellpepper's names: they are
//! closures, and evaluating them costs a string per namespace. An unsatisfied circuit is then
//! reported by constraint index. The named pass ([`synthesize_named`], [`synthesize_batch_named`],
//! [`find_unsatisfied`]; the one-call shortcuts [`crate::groth16::prover::prove_one`] and
//! [`crate::groth16::prover::prove_with_randomness`] use it) evaluates them and reports the
//! first unsatisfied constraint by its namespace path and annotation, as bellpepper's
//! `TestConstraintSystem` writes it (`"outer/inner/annotation"`). Its cost is one string per
//! namespace opened, which on bellpepper's SHA-256 gadgets leaves the two passes about equally
//! fast.
//! A circuit is consumed by synthesis, so the fast pass cannot name a failure after the fact:
//! run [`find_unsatisfied`] on a second copy of the circuit for that.
//!
//! For circuits proven many times, [`crate::pce`] records the constraint system once and then
//! produces the same [`Synthesized`], bit for bit, from witness-only synthesis and parallel
//! sparse products.

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use ff::Field;
use rayon::prelude::*;

use super::constraint_system::{next_index, BuildLc, Cs, Lc, Name, Record, Value};
use crate::{host_buffer::HostVec, Error, Result};

/// Which variables of one kind (inputs or aux) occur in a query, as a bitmap of `u64` words in
/// the layout of [`crate::backend::MsmJob`]'s density: bit `i % 64` of word `i / 64` is variable
/// `i`, so [`Density::bits`] goes to the backend as it is, without a copy.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Density {
    words: Vec<u64>,
    len: usize,
    total: usize,
}

impl Density {
    /// A density over `used.len()` variables, those marked `true` occurring (how a
    /// pre-compiled constraint system hands over the densities it recorded).
    pub(crate) fn from_used(used: Vec<bool>) -> Self {
        let mut d = Self::default();
        for (i, u) in used.into_iter().enumerate() {
            d.push();
            if u {
                d.mark(i);
            }
        }
        d
    }
    fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }
    fn mark(&mut self, i: usize) {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        if self.words[w] & b == 0 {
            self.words[w] |= b;
            self.total += 1;
        }
    }
    /// Number of variables that occur.
    pub fn total(&self) -> usize {
        self.total
    }
    /// Number of variables tracked.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether no variable is tracked.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Whether variable `i` occurs.
    pub fn is_used(&self, i: usize) -> bool {
        assert!(i < self.len, "variable {i} of {} tracked", self.len);
        crate::backend::density_bit(&self.words, i)
    }
    /// The bitmap: `len().div_ceil(64)` words, no bit set at or past `len()`.
    pub fn bits(&self) -> &[u64] {
        &self.words
    }
    /// The assignment values of the variables that occur, in order (the scalars an MSM over the
    /// density-filtered query needs, for a consumer that cannot take the bitmap).
    pub fn filter(&self, values: &[Scalar]) -> Vec<Scalar> {
        debug_assert_eq!(values.len(), self.len);
        values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| crate::backend::density_bit(&self.words, i).then_some(*v))
            .collect()
    }
}

/// The result of synthesising one circuit for proving.
#[derive(Clone, Debug, Default)]
pub struct Synthesized {
    /// ⟨A_j, w⟩ for every constraint j (input constraints included). In a backend's host
    /// memory when synthesis was given one ([`HostVec`]), else on the heap.
    pub a: HostVec<Scalar>,
    /// ⟨B_j, w⟩.
    pub b: HostVec<Scalar>,
    /// ⟨C_j, w⟩.
    pub c: HostVec<Scalar>,
    /// Public inputs; index 0 is the constant one.
    pub input_assignment: Vec<Scalar>,
    /// Private (auxiliary) variables.
    pub aux_assignment: HostVec<Scalar>,
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
            Some(j) => Err(unsatisfied_at(j, self.a.len())),
        }
    }
}

/// The first constraint of a circuit that its witness does not satisfy, named as bellpepper
/// names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsatisfiedConstraint {
    /// Position among the circuit's constraints, in the order they were enforced (from 0).
    pub index: usize,
    /// The namespace path and the constraint's annotation joined by `/`, as bellpepper's
    /// `TestConstraintSystem` writes it: `"sha256/compression/new_a/xor 3"`. An empty
    /// annotation or namespace name leaves an empty segment.
    pub path: String,
}

impl std::fmt::Display for UnsatisfiedConstraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "constraint {} (\"{}\")", self.index, self.path)
    }
}

/// Names kept by a named pass: the open namespaces and the first constraint that fails.
#[derive(Default)]
struct Names {
    namespaces: Vec<String>,
    first_unsatisfied: Option<UnsatisfiedConstraint>,
}

/// The constraint system that records a proving assignment; with `names`, it also evaluates
/// bellpepper's names and checks each constraint as it is enforced.
struct Assignment {
    s: Synthesized,
    names: Option<Names>,
}

fn eval(
    lc: &Lc,
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

impl Record for Assignment {
    #[inline]
    fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        let s = &mut self.s;
        s.aux_assignment.push(value()?);
        s.a_aux_density.push();
        s.b_aux_density.push();
        Ok(s.aux_assignment.len() - 1)
    }

    #[inline]
    fn input(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        let s = &mut self.s;
        s.input_assignment.push(value()?);
        s.b_input_density.push();
        Ok(s.input_assignment.len() - 1)
    }

    #[inline]
    fn constraint(
        &mut self,
        annotation: impl Name,
        a: impl BuildLc,
        b: impl BuildLc,
        c: impl BuildLc,
    ) {
        let s = &mut self.s;
        let (la, lb, lc) = (a(Lc::zero()), b(Lc::zero()), c(Lc::zero()));
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
        if let Some(names) = &mut self.names {
            if names.first_unsatisfied.is_none() && va * vb != vc {
                let mut path = names.namespaces.join("/");
                if !names.namespaces.is_empty() {
                    path.push('/');
                }
                path.push_str(&annotation());
                names.first_unsatisfied = Some(UnsatisfiedConstraint {
                    index: s.a.len(),
                    path,
                });
            }
        }
        s.a.push(va);
        s.b.push(vb);
        s.c.push(vc);
    }

    fn push_namespace(&mut self, name: impl Name) {
        if let Some(names) = &mut self.names {
            names.namespaces.push(name());
        }
    }

    fn pop_namespace(&mut self) {
        if let Some(names) = &mut self.names {
            names.namespaces.pop();
        }
    }
}

/// The error for constraint `j` of `n` not holding (shared with the pre-compiled path, so both
/// report an unsatisfied witness in the same words).
pub(crate) fn unsatisfied_at(j: usize, n: usize) -> Error {
    Error::Unsatisfied(format!(
        "constraint {j} of {n} does not hold (A·B ≠ C); check the witness \
         (synthesis::find_unsatisfied on the same circuit names the constraint)"
    ))
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

/// Runs `circuit` into an assignment and adds the input constraints; with `named`, also
/// evaluates names and finds the first unsatisfied constraint on the way.
fn run<C: Circuit<Scalar>>(
    circuit: C,
    named: bool,
) -> Result<(Synthesized, Option<UnsatisfiedConstraint>)> {
    let record = Assignment {
        s: Synthesized::default(),
        names: named.then(Names::default),
    };
    let mut cs = Cs::assemble(record, circuit).map_err(synthesis_error)?;
    cs.enforce_inputs(cs.s.input_assignment.len());
    check_domain(cs.s.a.len())?;
    let Cs(Assignment { s, names }) = cs;
    Ok((s, names.and_then(|n| n.first_unsatisfied)))
}

/// Refuses `num_constraints` constraints (input constraints included) that no evaluation domain
/// holds (shared with the pre-compiled path's recording).
pub(crate) fn check_domain(num_constraints: usize) -> Result<()> {
    if num_constraints > (1usize << crate::MAX_LOG_NTT) {
        return Err(Error::invalid(format!(
            "{num_constraints} constraints exceed the largest domain 2^{}",
            crate::MAX_LOG_NTT
        )));
    }
    Ok(())
}

/// The public inputs of `circuit` (the constant one not included), without synthesising it: only
/// the inputs' value closures run, no constraint is built (a circuit that computes an input from
/// private values evaluates those natively). What a verifier is given for a circuit instance.
pub fn public_inputs<C: Circuit<Scalar>>(circuit: C) -> Result<Vec<Scalar>> {
    /// Keeps the inputs' values; counts the aux variables.
    #[derive(Default)]
    struct Inputs {
        values: Vec<Scalar>,
        aux: usize,
    }
    impl Record for Inputs {
        fn aux(&mut self, _: impl Value) -> Result<usize, SynthesisError> {
            next_index(&mut self.aux)
        }
        fn input(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
            self.values.push(value()?);
            Ok(self.values.len() - 1)
        }
    }
    let Cs(mut inputs) = Cs::assemble(Inputs::default(), circuit).map_err(synthesis_error)?;
    inputs.values.remove(0);
    Ok(inputs.values)
}

fn unsatisfied_error(bad: &UnsatisfiedConstraint, total: usize) -> Error {
    Error::Unsatisfied(format!(
        "constraint {} of {}, \"{}\", does not hold (A·B ≠ C); check the witness",
        bad.index, total, bad.path
    ))
}

/// Synthesises one circuit: runs it, adds the input constraints, checks satisfaction.
///
/// This is the fast pass: names are not evaluated, so an unsatisfied circuit is reported by
/// constraint index only ([`synthesize_named`] names it).
pub fn synthesize<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized> {
    let (s, _) = run(circuit, false)?;
    s.check_satisfied()?;
    Ok(s)
}

/// As [`synthesize`], also evaluating bellpepper's names: an unsatisfied circuit is reported by
/// the namespace path and annotation of its first failing constraint (`Error::Unsatisfied`
/// with `constraint 7 of 12, "hash/round 2/and", does not hold`). Slower than [`synthesize`]
/// by the cost of the names; [`find_unsatisfied`] gives the same answer as a value.
pub fn synthesize_named<C: Circuit<Scalar>>(circuit: C) -> Result<Synthesized> {
    let (s, bad) = run(circuit, true)?;
    match bad {
        Some(bad) => Err(unsatisfied_error(&bad, s.num_constraints())),
        None => Ok(s),
    }
}

/// The first constraint `circuit` does not satisfy, with its namespace path and annotation, or
/// `None` when every constraint holds. Errors are those of synthesis itself (a missing
/// assignment, a circuit that gives up with its own error).
pub fn find_unsatisfied<C: Circuit<Scalar>>(circuit: C) -> Result<Option<UnsatisfiedConstraint>> {
    run(circuit, true).map(|(_, bad)| bad)
}

/// Synthesises a batch of circuits in parallel (one rayon task per circuit), with the fast pass
/// of [`synthesize`]. All circuits must have the same shape (constraint and variable counts), as
/// the circuits of one proof batch do.
pub fn synthesize_batch<C: Circuit<Scalar> + Send>(circuits: Vec<C>) -> Result<Vec<Synthesized>> {
    same_shape(each(circuits, synthesize)?)
}

/// As [`synthesize_batch`], with the named pass of [`synthesize_named`]: an unsatisfied circuit
/// is reported by the namespace path and annotation of its failing constraint.
pub fn synthesize_batch_named<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
) -> Result<Vec<Synthesized>> {
    same_shape(each(circuits, synthesize_named)?)
}

/// Runs `f` on every circuit in parallel; an unsatisfied circuit's error says which it was.
fn each<C: Circuit<Scalar> + Send>(
    circuits: Vec<C>,
    f: fn(C) -> Result<Synthesized>,
) -> Result<Vec<Synthesized>> {
    let n = circuits.len();
    circuits
        .into_par_iter()
        .enumerate()
        .map(|(k, c)| {
            f(c).map_err(|e| match e {
                Error::Unsatisfied(why) if n > 1 => {
                    Error::Unsatisfied(format!("circuit {k} of the batch: {why}"))
                }
                other => other,
            })
        })
        .collect()
}

fn same_shape(out: Vec<Synthesized>) -> Result<Vec<Synthesized>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn densities_are_word_bitmaps() {
        let mut d = Density::default();
        for _ in 0..130 {
            d.push();
        }
        for i in [0, 63, 64, 129, 64] {
            d.mark(i);
        }
        assert_eq!((d.len(), d.total()), (130, 4));
        assert_eq!(d.bits(), &[1 | 1 << 63, 1, 1 << 1]);
        assert_eq!(crate::backend::check_density(d.bits(), d.len()).unwrap(), 4);
        assert!(d.is_used(129) && !d.is_used(1));
        let values: Vec<Scalar> = (0..130u64).map(Scalar::from).collect();
        assert_eq!(
            d.filter(&values),
            [0u64, 63, 64, 129].map(Scalar::from).to_vec()
        );
        assert!(Density::default().bits().is_empty());
    }
}
