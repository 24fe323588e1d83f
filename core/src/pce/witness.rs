//! Witness-only synthesis: the circuit's allocation closures run, `enforce` builds nothing.
//! Values go straight into the assignment buffers the products read ([`Sink`]), published as
//! they grow ([`Progress`]).
//!
//! One constraint per row block (the first of each, 1 in [`format::BLOCK_ROWS`]) is built anyway
//! and compared term by term with the recording, and the counts are compared at the end, so a
//! recording of another circuit is refused instead of producing wrong products.

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
    /// The next constraint to compare (the first of the next block).
    next_sample: usize,
    mismatch: Option<String>,
}

impl WitnessCs<'_> {
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
            self.progress
                .publish(self.inputs.published(), self.aux.published());
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
        self.progress
            .publish(self.inputs.published(), self.aux.published());
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
    };
    cs.alloc_input(|| "one", || Ok(Scalar::ONE))
        .map_err(synthesis_error)?;
    circuit.synthesize(&mut cs).map_err(synthesis_error)?;
    progress.publish(cs.inputs.published(), cs.aux.published());
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
    if (cs.constraints, cs.inputs.len(), cs.aux.len())
        != (pce.num_constraints(), pce.num_inputs(), pce.num_aux())
    {
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
