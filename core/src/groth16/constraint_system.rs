//! The one bellpepper `ConstraintSystem` of Bellows: [`Cs`], generic over what it keeps.
//!
//! Every constraint system here — synthesis's assignment, the setup's matrices and shape, the
//! PCE's recording and witness run, the SHA-256 block workers — is its own root, ignores
//! bellpepper's names unless it asks for them, and differs from the others only in what an
//! allocation and a constraint keep. A [`Record`] states that; [`Cs`] turns it into bellpepper's
//! trait. Everything is generic and `#[inline]`: a record's methods are compiled into the
//! circuit's calls, with no dynamic dispatch and no allocation of the base's own (synthesis and
//! the PCE witness run through here once per variable and constraint). It is public so that an
//! integration's own value-only system states only what it keeps as well (bellows-filecoin's
//! per-challenge PoRep witness does).
//!
//! [`Cs::assemble`] and [`Cs::enforce_inputs`] are the Groth16 assembly of bellman/bellperson
//! (Groth 2016, §3.2): the constant one is input 0, the circuit runs, and one constraint
//! `input_i · 0 = 0` is appended per public input so that every input occurs in A.

use std::ops::{Deref, DerefMut};

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

/// A linear combination over Fr.
pub type Lc = LinearCombination<Scalar>;

/// A closure that builds one side of a constraint from the zero combination (bellpepper's
/// `enforce` arguments); a record calls only the ones whose combination it keeps.
pub trait BuildLc: FnOnce(Lc) -> Lc {}
impl<F: FnOnce(Lc) -> Lc> BuildLc for F {}

/// A closure that yields a constraint's or namespace's name (called only by a record that keeps
/// names).
pub trait Name: FnOnce() -> String {}
impl<F: FnOnce() -> String> Name for F {}

/// A closure that yields an allocation's value (a record calls it only to keep the value).
pub trait Value: FnOnce() -> Result<Scalar, SynthesisError> {}
impl<F: FnOnce() -> Result<Scalar, SynthesisError>> Value for F {}

/// What a constraint system keeps. Indices are returned by the record, so that one that takes
/// values in bulk (a witness generator) keeps counting them itself.
pub trait Record: Send {
    /// A private variable is allocated; returns its index among the aux variables.
    fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError>;

    /// A public input is allocated; returns its index among the inputs (the constant one is 0).
    fn input(&mut self, value: impl Value) -> Result<usize, SynthesisError>;

    /// The constraint A·B = C is enforced; `name` names it within the open namespaces. By
    /// default nothing is kept (a value-only record).
    #[inline]
    fn constraint(
        &mut self,
        _name: impl Name,
        _a: impl BuildLc,
        _b: impl BuildLc,
        _c: impl BuildLc,
    ) {
    }

    /// A namespace is entered (ignored unless the record keeps names).
    #[inline]
    fn push_namespace(&mut self, _name: impl Name) {}

    /// The innermost namespace is left.
    #[inline]
    fn pop_namespace(&mut self) {}

    /// Whether the record takes values in bulk (bellpepper's witness generators); the bulk
    /// methods below are called only when it says so.
    #[inline]
    fn is_witness_generator(&self) -> bool {
        false
    }

    /// Inputs in bulk (witness generators only).
    fn extend_inputs(&mut self, _values: &[Scalar]) {
        not_a_witness_generator()
    }

    /// Aux values in bulk (witness generators only).
    fn extend_aux(&mut self, _values: &[Scalar]) {
        not_a_witness_generator()
    }

    /// Room for `aux_n` aux values and `inputs_n` inputs, for the caller to fill (witness
    /// generators only).
    fn allocate_empty(
        &mut self,
        _aux_n: usize,
        _inputs_n: usize,
    ) -> (&mut [Scalar], &mut [Scalar]) {
        not_a_witness_generator()
    }

    /// The inputs so far (witness generators only).
    fn inputs_slice(&self) -> &[Scalar] {
        not_a_witness_generator()
    }

    /// The aux values so far (witness generators only).
    fn aux_slice(&self) -> &[Scalar] {
        not_a_witness_generator()
    }
}

/// The index of the next of the `n` variables a record counts (and counts it).
#[inline]
pub fn next_index(n: &mut usize) -> Result<usize, SynthesisError> {
    *n += 1;
    Ok(*n - 1)
}

/// bellpepper calls the bulk methods only on a system that says it is a witness generator.
fn not_a_witness_generator() -> ! {
    unreachable!("a bulk method was called on a constraint system that is not a witness generator")
}

/// bellpepper's `ConstraintSystem` over the record `R` (its own root).
pub struct Cs<R>(pub R);

impl<R> Deref for Cs<R> {
    type Target = R;
    #[inline]
    fn deref(&self) -> &R {
        &self.0
    }
}

impl<R> DerefMut for Cs<R> {
    #[inline]
    fn deref_mut(&mut self) -> &mut R {
        &mut self.0
    }
}

impl<R: Record> Cs<R> {
    /// The first steps of the Groth16 assembly: the constant one as input 0, then `circuit`.
    pub fn assemble<C: Circuit<Scalar>>(record: R, circuit: C) -> Result<Self, SynthesisError> {
        let mut cs = Cs(record);
        cs.alloc_input(|| "one", || Ok(Scalar::ONE))?;
        circuit.synthesize(&mut cs)?;
        Ok(cs)
    }

    /// The last step of the Groth16 assembly: `input_i · 0 = 0` for each of the `num_inputs`
    /// inputs (the constant one included).
    pub fn enforce_inputs(&mut self, num_inputs: usize) {
        for i in 0..num_inputs {
            self.0.constraint(
                String::new,
                |lc| lc + Variable(Index::Input(i)),
                |lc| lc,
                |lc| lc,
            );
        }
    }
}

impl<R: Record> ConstraintSystem<Scalar> for Cs<R> {
    type Root = Self;

    #[inline]
    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.aux(f).map(|i| Variable(Index::Aux(i)))
    }

    #[inline]
    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.0.input(f).map(|i| Variable(Index::Input(i)))
    }

    #[inline]
    fn enforce<A, AR, LA, LB, LC>(&mut self, annotation: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(Lc) -> Lc,
        LB: FnOnce(Lc) -> Lc,
        LC: FnOnce(Lc) -> Lc,
    {
        self.0.constraint(|| annotation().into(), a, b, c);
    }

    #[inline]
    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        self.0.push_namespace(|| name().into());
    }

    #[inline]
    fn pop_namespace(&mut self) {
        self.0.pop_namespace();
    }

    #[inline]
    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    #[inline]
    fn is_witness_generator(&self) -> bool {
        self.0.is_witness_generator()
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.0.extend_inputs(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.0.extend_aux(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.0.allocate_empty(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.0.allocate_empty(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.0.allocate_empty(n, 0).0
    }

    fn inputs_slice(&self) -> &[Scalar] {
        self.0.inputs_slice()
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.0.aux_slice()
    }
}
