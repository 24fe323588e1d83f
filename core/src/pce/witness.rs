//! Witness-only synthesis: the circuit's allocation closures run, `enforce` builds nothing.
//! Values go straight into the assignment buffers the products read ([`Sink`]), published as
//! they grow ([`Progress`]).
//!
//! One constraint per row block (the first of each, 1 in [`format::BLOCK_ROWS`]) is built anyway
//! and compared term by term with the recording, and the counts are compared at the end, so a
//! recording of another circuit is refused instead of producing wrong products.
//!
//! ## Witness generators
//! [`WitnessCs`] answers `is_witness_generator() = true` and implements bellpepper's bulk
//! methods (`extend_aux`, `extend_inputs`, `allocate_empty*`, `aux_slice`, `inputs_slice`): a
//! circuit or gadget that knows its values without running its constraint code (the built-in
//! [`crate::circuits::Sha256Circuit`] computes its blocks in parallel; neptune's Poseidon has
//! such a path) hands them over in bulk, in the allocation order of its constraint code. Such a
//! circuit enforces fewer constraints here than the recording holds and does not say how many it
//! stood for (the trait has no way to), so once values arrive in bulk:
//! - the sampled-row comparison stops (the constraint indices that follow no longer match the
//!   recording's rows);
//! - the counts checked at the end are the input and aux counts, exactly, and the constraints
//!   actually enforced, at most the recording's.
//!
//! The product pass that follows checks A·B = C on every row with these values, so a witness
//! that does not fit the recording is still refused (as unsatisfied) rather than proved.
//! Recording ([`super::record`]) and direct synthesis keep answering `false`, so they run every
//! circuit's constraint code as it is written.

use bellpepper_core::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;

use super::{
    format,
    stream::{Progress, Sink},
    Pce,
};
use crate::{groth16::synthesis::synthesis_error, Error, Result};

struct WitnessCs<'p> {
    pce: &'p Pce,
    inputs: Sink,
    aux: Sink,
    progress: &'p Progress,
    constraints: usize,
    block_rows: usize,
    /// The next constraint to compare (the first of the next block); `usize::MAX` once values
    /// arrived in bulk.
    next_sample: usize,
    mismatch: Option<String>,
    /// Whether values arrived in bulk (see the module documentation).
    bulk: bool,
    /// Where `allocate_empty*` lets the circuit write values that do not fit the recording's
    /// counts (they are counted, not stored; the count check refuses the run).
    aux_scratch: Vec<Scalar>,
    inputs_scratch: Vec<Scalar>,
}

impl WitnessCs<'_> {
    /// Values arrive in bulk from now on: stop sampling rows (see the module documentation).
    fn mark_bulk(&mut self) {
        self.bulk = true;
        self.next_sample = usize::MAX;
    }

    fn publish(&self) {
        self.progress
            .publish(self.inputs.published(), self.aux.published());
    }

    /// Compares the linear combinations of constraint `j` (the first of a block) with the
    /// recorded rows.
    fn compare(&mut self, j: usize, lcs: [&LinearCombination<Scalar>; 3]) {
        let pce = self.pce;
        let n_in = pce.num_inputs() as u64;
        let block = j / self.block_rows;
        for (m, lc) in lcs.into_iter().enumerate() {
            let recorded = recorded_row(pce, m, block);
            let actual = lc
                .iter_inputs()
                .map(|(&i, c)| (i as u64, c))
                .chain(lc.iter_aux().map(|(&i, c)| (n_in + i as u64, c)))
                .filter(|(_, c)| !bool::from(c.is_zero()));
            let same = recorded
                .iter()
                .map(|&(col, id)| (col, &pce.coeffs[id]))
                .eq(actual);
            if !same {
                self.mismatch = Some(format!(
                    "constraint {j}: its {} combination differs from the recorded one",
                    b"ABC"[m] as char
                ));
                return;
            }
        }
    }
}

/// The (column, coefficient id) terms of the first row of `block` in matrix `m`.
fn recorded_row(pce: &Pce, m: usize, block: usize) -> Vec<(u64, usize)> {
    let (lens, blocks) = pce.lens_and_blocks(m);
    let (e0, mut pos) = (blocks[2 * block] as usize, blocks[2 * block + 1] as usize);
    let len = format::read_varint(lens, &mut pos).unwrap_or(0) as usize;
    let col_bits = pce.header.col_bits;
    let split = |e: u64| (e & ((1u64 << col_bits) - 1), (e >> col_bits) as usize);
    super::with_entries!(pce, E => pce.entries::<E>(m)[e0..e0 + len]
        .iter()
        .map(|&e| split(super::Word::widen(e)))
        .collect())
}

impl ConstraintSystem<Scalar> for WitnessCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let i = self.aux.push(f()?);
        if self.aux.len().is_multiple_of(PUBLISH_EVERY) {
            self.publish();
        }
        Ok(Variable(Index::Aux(i)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        let i = self.inputs.push(f()?);
        self.publish();
        Ok(Variable(Index::Input(i)))
    }

    #[inline]
    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let j = self.constraints;
        self.constraints += 1;
        if j == self.next_sample {
            self.next_sample += self.block_rows;
            if j >= self.pce.num_constraints() || self.mismatch.is_some() {
                return;
            }
            let (la, lb, lc) = (
                a(LinearCombination::zero()),
                b(LinearCombination::zero()),
                c(LinearCombination::zero()),
            );
            self.compare(j, [&la, &lb, &lc]);
        }
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.mark_bulk();
        self.inputs.extend(new_inputs);
        self.publish();
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.mark_bulk();
        self.aux.extend(new_aux);
        self.publish();
    }

    /// Zeros for the caller to overwrite, published by the next publication (the borrow of the
    /// returned slices ends before any later call on this constraint system).
    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.mark_bulk();
        let aux = match self.aux.reserve(aux_n) {
            Some(s) => s,
            None => scratch(&mut self.aux_scratch, aux_n),
        };
        let inputs = match self.inputs.reserve(inputs_n) {
            Some(s) => s,
            None => scratch(&mut self.inputs_scratch, inputs_n),
        };
        (aux, inputs)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(0, n).1
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.allocate_empty(n, 0).0
    }

    fn inputs_slice(&self) -> &[Scalar] {
        self.inputs.stored()
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.aux.stored()
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

/// `n` zeros in `buf` (reused), for values that do not fit the sinks.
fn scratch(buf: &mut Vec<Scalar>, n: usize) -> &mut [Scalar] {
    buf.clear();
    buf.resize(n, Scalar::ZERO);
    buf
}

/// Aux values between two publications: one row block's worth, so the products follow the
/// witness closely; a publication is an uncontended lock and a notification (well under a
/// microsecond), against the hundreds of microseconds the witness takes for 4096 values.
const PUBLISH_EVERY: usize = 4096;

/// What a witness run produced (the values are in the sinks).
pub(super) struct Produced {
    pub inputs: usize,
    pub aux: usize,
}

/// Runs `circuit` witness-only against `pce`, writing the input and aux assignments into the
/// sinks and publishing them as they grow. Checks the counts and the sampled rows at the end:
/// on success the sinks hold exactly the recording's numbers of inputs and aux values.
pub(super) fn run<C: Circuit<Scalar>>(
    pce: &Pce,
    circuit: C,
    inputs: Sink,
    aux: Sink,
    progress: &Progress,
) -> Result<Produced> {
    let mut cs = WitnessCs {
        pce,
        inputs,
        aux,
        progress,
        constraints: 0,
        block_rows: pce.header.block_rows as usize,
        next_sample: 0,
        mismatch: None,
        bulk: false,
        aux_scratch: Vec::new(),
        inputs_scratch: Vec::new(),
    };
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .map_err(synthesis_error)?;
    circuit.synthesize(&mut cs).map_err(synthesis_error)?;
    cs.publish();
    for i in 0..cs.inputs.len() {
        cs.enforce(|| "", |lc| lc + Variable(Index::Input(i)), |lc| lc, |lc| lc);
    }
    let mismatch = |reason: String| {
        Error::invalid(format!(
            "the pre-compiled constraint system {:?} (shape {}) does not match this circuit: \
             {reason}; record it again (`bellows pce build`) or prove with --no-pce",
            pce.id(),
            &pce.digest_hex()[..16]
        ))
    };
    // After bulk values, the constraints enforced are at most the recording's (see the module
    // documentation); otherwise exactly.
    let constraints_fit = if cs.bulk {
        cs.constraints <= pce.num_constraints()
    } else {
        cs.constraints == pce.num_constraints()
    };
    if !constraints_fit || (cs.inputs.len(), cs.aux.len()) != (pce.num_inputs(), pce.num_aux()) {
        return Err(mismatch(format!(
            "the circuit has {} constraints, {} inputs, {} aux variables; the recording {}, {}, {}",
            cs.constraints,
            cs.inputs.len(),
            cs.aux.len(),
            pce.num_constraints(),
            pce.num_inputs(),
            pce.num_aux()
        )));
    }
    if let Some(reason) = cs.mismatch {
        return Err(mismatch(reason));
    }
    Ok(Produced {
        inputs: cs.inputs.len(),
        aux: cs.aux.len(),
    })
}
