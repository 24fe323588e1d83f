//! Witness-only synthesis: the circuit's allocation closures run, `enforce` builds nothing.
//! Values go straight into the assignment buffers the products read ([`Sink`]), published as
//! they grow ([`Progress`]).
//!
//! Eight constraints per row block (evenly spaced from its first: 1 in 512 rows) are built
//! anyway and compared term by term with the recording, and the counts are compared at the end,
//! so a recording of another circuit is refused instead of producing wrong products.
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

use bellpepper_core::{Circuit, SynthesisError};
use blstrs::Scalar;
use ff::Field;

use super::{
    format,
    stream::{Progress, Sink},
    Pce,
};
use crate::groth16::constraint_system::{BuildLc, Cs, Lc, Name, Record, Value};
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
    fn compare(&mut self, j: usize, lcs: [&Lc; 3]) {
        let pce = self.pce;
        let n_in = pce.num_inputs() as u64;
        for (m, lc) in lcs.into_iter().enumerate() {
            let recorded = recorded_row(pce, pce.samples(), m, j);
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

/// Where each sampled row starts in the three matrices: for sample `k` (row `k · stride`),
/// per matrix, the index of its first entry and the offset of its length in the lengths
/// section. Built once per recording on every core, so that the witness thread (the
/// synthesis's critical path) reads a sampled row directly instead of stepping over the
/// lengths of the rows before it in its block.
pub(super) struct SampleIndex {
    stride: usize,
    starts: [Vec<(u64, u64)>; 3],
}

/// Rows between two sampled rows in a recording of `block_rows` rows a block.
fn sample_stride(block_rows: usize) -> usize {
    (block_rows / SAMPLES_PER_BLOCK).max(1)
}

/// The [`SampleIndex`] of `pce` (one pass over the lengths sections, blocks in parallel).
pub(super) fn sample_index(pce: &Pce) -> SampleIndex {
    use rayon::prelude::*;
    let block_rows = pce.header.block_rows as usize;
    let stride = sample_stride(block_rows);
    let rows = pce.num_constraints();
    let starts = [0, 1, 2].map(|m| {
        let (lens, blocks) = pce.lens_and_blocks(m);
        let nblocks = rows.div_ceil(block_rows.max(1));
        (0..nblocks)
            .into_par_iter()
            .flat_map_iter(|block| {
                let first = block * block_rows;
                let end = (first + block_rows).min(rows);
                let (mut e0, mut pos) = (blocks[2 * block], blocks[2 * block + 1] as usize);
                let mut out = Vec::new();
                for j in first..end {
                    if j % stride == 0 {
                        out.push((e0, pos as u64));
                    }
                    e0 += format::read_varint(lens, &mut pos).unwrap_or(0);
                }
                out
            })
            .collect()
    });
    SampleIndex { stride, starts }
}

/// The (column, coefficient id) terms of sampled row `j` in matrix `m`.
fn recorded_row(pce: &Pce, index: &SampleIndex, m: usize, j: usize) -> Vec<(u64, usize)> {
    let (lens, _) = pce.lens_and_blocks(m);
    let (e0, pos) = index.starts[m][j / index.stride];
    let (e0, mut pos) = (e0 as usize, pos as usize);
    let len = format::read_varint(lens, &mut pos).unwrap_or(0) as usize;
    let col_bits = pce.header.col_bits;
    let split = |e: u64| (e & ((1u64 << col_bits) - 1), (e >> col_bits) as usize);
    super::with_entries!(pce, E => pce.entries::<E>(m)[e0..e0 + len]
        .iter()
        .map(|&e| split(super::Word::widen(e)))
        .collect())
}

impl Record for WitnessCs<'_> {
    #[inline]
    fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        let i = self.aux.push(value()?);
        if self.aux.len().is_multiple_of(PUBLISH_EVERY) {
            self.publish();
        }
        Ok(i)
    }

    fn input(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        let i = self.inputs.push(value()?);
        self.publish();
        Ok(i)
    }

    #[inline]
    fn constraint(&mut self, _: impl Name, a: impl BuildLc, b: impl BuildLc, c: impl BuildLc) {
        let j = self.constraints;
        self.constraints += 1;
        if j == self.next_sample {
            self.next_sample += sample_stride(self.block_rows);
            if j >= self.pce.num_constraints() || self.mismatch.is_some() {
                return;
            }
            let (la, lb, lc) = (a(Lc::zero()), b(Lc::zero()), c(Lc::zero()));
            self.compare(j, [&la, &lb, &lc]);
        }
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, values: &[Scalar]) {
        self.mark_bulk();
        self.inputs.extend(values);
        self.publish();
    }

    fn extend_aux(&mut self, values: &[Scalar]) {
        self.mark_bulk();
        self.aux.extend(values);
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

    fn inputs_slice(&self) -> &[Scalar] {
        self.inputs.stored()
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.aux.stored()
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

/// Rows of each row block built and compared with the recording while values arrive one by
/// one: evenly spaced, the first of the block among them. The products check A·B = C on every
/// row anyway; the comparison names a recording of another circuit early and precisely.
const SAMPLES_PER_BLOCK: usize = 8;

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
    let record = WitnessCs {
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
    let mut cs = Cs::assemble(record, circuit).map_err(synthesis_error)?;
    cs.publish();
    cs.enforce_inputs(cs.inputs.len());
    let Cs(cs) = cs;
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
