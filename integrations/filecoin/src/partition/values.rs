//! A challenge's values as they travel to the hand-over: the value-only constraint system the
//! library's circuits run in (public: a caller's witness generator that keeps every value), and
//! the buffers kept between challenges.

use bellows_core::groth16::constraint_system::{Name, Record, Value};
use bellpepper_core::SynthesisError;
use blstrs::Scalar as Fr;
use ff::Field;

/// The namespace storage-proofs-porep gives challenge `i`'s sub-circuit: `challenge_{i}`.
const CHALLENGE_NAMESPACE: &str = "challenge_";

/// One challenge's values in allocation order, with where its own values start (after the
/// prefix a library circuit allocates first; `(0, 0)` for the native witness).
pub(super) struct Part {
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
    pub start: (usize, usize),
}

impl Part {
    /// The values before the challenge's own.
    pub fn prefix(&self) -> (&[Fr], &[Fr]) {
        (&self.inputs[..self.start.0], &self.aux[..self.start.1])
    }

    /// The challenge's own values.
    pub fn challenge(&self) -> (&[Fr], &[Fr]) {
        (&self.inputs[self.start.0..], &self.aux[self.start.1..])
    }
}

/// What a value-only constraint system keeps (`Cs<Values>` is a witness generator): the inputs
/// and aux values in allocation order, and where the first `challenge_` namespace opened (the
/// end of a PoRep partition circuit's prefix).
#[derive(Default)]
pub struct Values {
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    /// Namespaces open now (the root's pushes minus its pops).
    depth: usize,
    /// Inputs and aux values allocated before the challenge's namespace opened.
    mark: Option<(usize, usize)>,
}

impl Values {
    /// Values to be kept in `aux` (emptied, its capacity kept).
    pub(super) fn with_aux(mut aux: Vec<Fr>) -> Self {
        aux.clear();
        Values {
            aux,
            ..Default::default()
        }
    }

    /// The public inputs allocated (the constant one excluded).
    pub fn input_values(&self) -> &[Fr] {
        &self.inputs
    }

    /// The aux values allocated.
    pub fn aux_values(&self) -> &[Fr] {
        &self.aux
    }

    /// Forgets every value and namespace (the buffers' capacity kept).
    pub fn clear(&mut self) {
        self.inputs.clear();
        self.aux.clear();
        self.depth = 0;
        self.mark = None;
    }

    /// The values, split where the challenge's namespace opened: a circuit that opened none
    /// (the prefix alone) is all prefix; `want_challenge` makes that an error instead.
    pub(super) fn into_part(self, want_challenge: bool) -> Result<Part, SynthesisError> {
        let start = match self.mark {
            Some(m) => m,
            None if want_challenge => {
                return Err(SynthesisError::IoError(std::io::Error::other(
                    "the partition circuit opened no `challenge_` namespace: not the circuit of \
                     storage-proofs-porep this code was written for",
                )))
            }
            None => (self.inputs.len(), self.aux.len()),
        };
        Ok(Part {
            inputs: self.inputs,
            aux: self.aux,
            start,
        })
    }
}

impl Record for Values {
    fn aux(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        self.aux.push(value()?);
        Ok(self.aux.len() - 1)
    }

    fn input(&mut self, value: impl Value) -> Result<usize, SynthesisError> {
        self.inputs.push(value()?);
        // Index 0 is the constant one of the whole circuit, which this part does not hold.
        Ok(self.inputs.len())
    }

    fn push_namespace(&mut self, name: impl Name) {
        // Only the top level's names are read (a handful per circuit): the first
        // `challenge_` namespace ends the prefix.
        if self.depth == 0 && self.mark.is_none() && name().starts_with(CHALLENGE_NAMESPACE) {
            self.mark = Some((self.inputs.len(), self.aux.len()));
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, values: &[Fr]) {
        self.inputs.extend_from_slice(values);
    }

    fn extend_aux(&mut self, values: &[Fr]) {
        self.aux.extend_from_slice(values);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Fr], &mut [Fr]) {
        let (a0, i0) = (self.aux.len(), self.inputs.len());
        self.aux.resize(a0 + aux_n, Fr::ZERO);
        self.inputs.resize(i0 + inputs_n, Fr::ZERO);
        (&mut self.aux[a0..], &mut self.inputs[i0..])
    }

    fn inputs_slice(&self) -> &[Fr] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Fr] {
        &self.aux
    }
}

/// Aux buffers of challenges whose values were handed over, kept for the next challenges: a
/// 32 GiB challenge keeps about 7 million values (230 MB), and a fresh buffer each time cost
/// its growth copies and a page fault per page, about a third of the library's witness time
/// (perf, docs/filecoin.md). At most one buffer per thread of the pool is kept (with two spare).
pub(super) mod buffers {
    use std::sync::Mutex;

    use blstrs::Scalar as Fr;

    static IDLE: Mutex<Vec<Vec<Fr>>> = Mutex::new(Vec::new());

    /// An empty buffer, with the capacity of the largest one kept (or none).
    pub fn take() -> Vec<Fr> {
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        idle.pop().unwrap_or_default()
    }

    /// Keeps `buf` for a later challenge, emptied, unless enough are kept already.
    pub fn give_back(mut buf: Vec<Fr>) {
        buf.clear();
        let mut idle = IDLE.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < rayon::current_num_threads() + 2 {
            idle.push(buf);
            // The largest last, so that `take` hands out the roomiest first.
            idle.sort_by_key(Vec::capacity);
        }
    }
}
