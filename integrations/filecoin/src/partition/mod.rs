//! A PoRep partition whose witness is made challenge by challenge, natively, on every core.
//!
//! storage-proofs-porep's `StackedCircuit` is a short prefix (the replica id and its bits, the
//! commitments, comm_r = H(comm_c, comm_r_last)) followed by one sub-circuit per challenge, each
//! in a namespace `challenge_{i}`, that reads only the prefix's values and its own challenge's
//! vanilla proof. The challenges are therefore independent: a 32 GiB partition has 18 of them,
//! each millions of constraints (labels over 37 parent blocks of SHA-256, column and Merkle
//! Poseidon hashes).
//!
//! [`StackedPartition`] is the same circuit. Asked by a constraint system that records or checks
//! constraints (a recording, direct synthesis, a setup), it is the library's `StackedCircuit` of
//! all its challenges, unchanged. Asked by a witness generator (Bellows' pre-compiled
//! synthesis), it hands over the values in allocation order — the prefix once, then each
//! challenge's values — computed thus:
//! - the prefix by the library's own code (`StackedCircuit::synthesize` without challenges);
//! - each challenge in parallel, by [`native`]: the values the challenge's sub-circuit
//!   allocates, computed without its gadgets (SHA-256 and Poseidon natively, in the gadgets'
//!   allocation order), many times faster than the gadgets' own witness code
//!   (docs/benchmarks.md, "32 GiB PoRep C2");
//! - or, where the native code is not trusted ([`WitnessPath`]), by the library: one
//!   single-challenge `StackedCircuit` per challenge (`StackedCompound::circuit` over that
//!   challenge's vanilla proof) in a value-only constraint system; the prefix such a circuit
//!   allocates first is the whole circuit's prefix and is checked equal to it.
//!
//! The native code is trusted for a sector shape once one challenge of that shape gave the
//! library's values exactly, once per process ([`net`]); a native challenge that fails its own
//! checks (its roots, labels, encoding) is computed by the library instead. The witness
//! generator then checks the counts against the recording and A·B = C on every row, so a witness
//! that did not fit would be refused, not proved; the tests compare the native values with the
//! library's at every sector size and the whole partition's with the sequential witness.

mod native;
mod net;
mod values;

use std::marker::PhantomData;
use std::sync::Arc;

use bellows_core::groth16::constraint_system::Cs;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use filecoin_hashers::Hasher;
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::drgraph::Graph;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

pub use net::{WitnessPath, WITNESS_ENV};
pub use values::Values;
use values::{buffers, Part};

/// The public inputs of a stacked-DRG proof for the sector shape `Tree`.
pub type StackedPublicInputs<Tree> = stacked::PublicInputs<
    <<Tree as MerkleTreeTrait>::Hasher as Hasher>::Domain,
    <DefaultPieceHasher as Hasher>::Domain,
>;

/// One partition of a PoRep C2 proof (see the module documentation).
pub struct StackedPartition<Tree: 'static + MerkleTreeTrait> {
    k: usize,
    pub_in: Arc<StackedPublicInputs<Tree>>,
    pub_params: Arc<stacked::PublicParams<Tree>>,
    vanilla: Vec<VanillaSealProof<Tree>>,
    /// `None`: [`WitnessPath::from_env`].
    path: Option<WitnessPath>,
    /// Test hook: the native values come out with one value changed.
    corrupt_native: bool,
    _tree: PhantomData<Tree>,
}

impl<Tree: 'static + MerkleTreeTrait> Clone for StackedPartition<Tree> {
    fn clone(&self) -> Self {
        StackedPartition {
            k: self.k,
            pub_in: self.pub_in.clone(),
            pub_params: self.pub_params.clone(),
            vanilla: self.vanilla.clone(),
            path: self.path,
            corrupt_native: self.corrupt_native,
            _tree: PhantomData,
        }
    }
}

/// A synthesis error carrying `msg`.
fn error(msg: String) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::other(msg))
}

impl<Tree: 'static + MerkleTreeTrait> StackedPartition<Tree> {
    /// Partition `k` of the proof with public inputs `pub_in`, from its challenges' vanilla
    /// proofs (already verified by the caller).
    pub fn new(
        k: usize,
        pub_in: Arc<StackedPublicInputs<Tree>>,
        pub_params: Arc<stacked::PublicParams<Tree>>,
        vanilla: Vec<VanillaSealProof<Tree>>,
    ) -> Self {
        StackedPartition {
            k,
            pub_in,
            pub_params,
            vanilla,
            path: None,
            corrupt_native: false,
            _tree: PhantomData,
        }
    }

    /// The same partition, its challenges computed by `path` for a witness generator (instead
    /// of what [`WITNESS_ENV`] says).
    pub fn with_witness_path(mut self, path: WitnessPath) -> Self {
        self.path = Some(path);
        self
    }

    /// Test hook: the native witness of this partition comes out with one value changed (the
    /// safety net must refuse it); its shape's verdict is kept apart from the real one's.
    #[doc(hidden)]
    pub fn corrupt_native_for_tests(mut self) -> Self {
        self.corrupt_native = true;
        self
    }

    /// The number of challenges (independent sub-circuits).
    pub fn challenges(&self) -> usize {
        self.vanilla.len()
    }

    /// The library's circuit over the challenges `range` of this partition.
    fn circuit(
        &self,
        range: std::ops::Range<usize>,
    ) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, SynthesisError> {
        let proofs = self.vanilla[range].to_vec();
        <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
            StackedDrg<'_, Tree, DefaultPieceHasher>,
            _,
        >>::circuit(&self.pub_in, (), &proofs, &self.pub_params, Some(self.k))
        .map_err(|e| error(format!("partition {}: building its circuit: {e:#}", self.k)))
    }

    /// The whole partition's circuit (every challenge, in order).
    pub fn whole(&self) -> Result<StackedCircuit<Tree, DefaultPieceHasher>, SynthesisError> {
        self.circuit(0..self.vanilla.len())
    }

    /// The prefix's values, by the library's code: the circuit without challenges.
    fn prefix(&self) -> Result<Part, SynthesisError> {
        let first = self
            .vanilla
            .first()
            .ok_or_else(|| error("no challenges".into()))?;
        let tau = self.pub_in.tau.as_ref();
        let mut cs = Cs(Values::default());
        StackedCircuit::<Tree, DefaultPieceHasher>::synthesize(
            &mut cs,
            Some(self.pub_in.replica_id),
            tau.map(|t| t.comm_d),
            tau.map(|t| t.comm_r),
            Some(first.comm_r_last()),
            Some(first.comm_c()),
            Vec::new(),
        )?;
        cs.0.into_part(false)
    }

    /// Challenge `i`'s values by the library: its single-challenge circuit, prefix included.
    fn library_challenge(&self, i: usize) -> Result<Part, SynthesisError> {
        let c = self.circuit(i..i + 1)?;
        let mut cs = Cs(Values::with_aux(buffers::take()));
        c.synthesize(&mut cs)?;
        cs.0.into_part(true)
    }

    /// Challenge `i`'s values by the native code (see [`native`]), appended to `out` (which
    /// holds what it held and maybe part of them on an error).
    fn native_values(&self, i: usize, out: &mut native::Out) -> Result<(), String> {
        let (Some(tau), Some(first)) = (self.pub_in.tau.as_ref(), self.vanilla.first()) else {
            return Err("a partition without comm_d or challenges".into());
        };
        let prefix = native::Prefix {
            replica_id: self.pub_in.replica_id.into(),
            comm_d: tau.comm_d.into(),
            comm_c: first.comm_c().into(),
            comm_r_last: first.comm_r_last().into(),
        };
        let shape = native::Shape {
            arities: native::arities::<Tree>(),
            layers: self.pub_params.num_layers,
        };
        let challenge = native::Challenge::read(&self.vanilla[i], shape.layers)?;
        native::challenge(out, shape, &prefix, &challenge)?;
        if self.corrupt_native {
            if let Some(v) = out.aux.last_mut() {
                *v += Fr::from(1u64);
            }
        }
        Ok(())
    }

    /// Challenge `i`'s own values (inputs, aux) as `path` computes them; with
    /// [`WitnessPath::Checked`], the native values once found equal to the library's (an error
    /// naming the first difference otherwise).
    pub fn challenge_values(
        &self,
        i: usize,
        path: WitnessPath,
    ) -> bellows_core::Result<(Vec<Fr>, Vec<Fr>)> {
        let (mut inputs, mut aux) = (Vec::new(), Vec::new());
        self.challenge_values_into(i, path, &mut inputs, &mut aux)?;
        Ok((inputs, aux))
    }

    /// [`Self::challenge_values`], appended to `inputs` and `aux` (whose capacity a caller that
    /// repeats it keeps).
    pub fn challenge_values_into(
        &self,
        i: usize,
        path: WitnessPath,
        inputs: &mut Vec<Fr>,
        aux: &mut Vec<Fr>,
    ) -> bellows_core::Result<()> {
        let fail = |e: String| bellows_core::Error::Synthesis(format!("challenge {i}: {e}"));
        if i >= self.vanilla.len() {
            return Err(fail(format!("out of {} challenges", self.vanilla.len())));
        }
        let library = |inputs: &mut Vec<Fr>, aux: &mut Vec<Fr>| {
            let p = self.library_challenge(i).map_err(|e| fail(e.to_string()))?;
            let (pi, pa) = p.challenge();
            inputs.extend_from_slice(pi);
            aux.extend_from_slice(pa);
            buffers::give_back(p.aux);
            Ok(())
        };
        let native = |inputs: &mut Vec<Fr>, aux: &mut Vec<Fr>| {
            let (i0, a0) = (inputs.len(), aux.len());
            let mut out = native::Out {
                inputs: std::mem::take(inputs),
                aux: std::mem::take(aux),
            };
            let r = self.native_values(i, &mut out);
            (*inputs, *aux) = (out.inputs, out.aux);
            r.map_err(|e| {
                inputs.truncate(i0);
                aux.truncate(a0);
                fail(e)
            })
        };
        match path {
            WitnessPath::Library => library(inputs, aux),
            WitnessPath::Native => native(inputs, aux),
            _ => {
                let (i0, a0) = (inputs.len(), aux.len());
                native(inputs, aux)?;
                let (mut li, mut la) = (Vec::new(), Vec::new());
                library(&mut li, &mut la)?;
                match first_difference((&inputs[i0..], &aux[a0..]), (&li, &la)) {
                    None => Ok(()),
                    Some(d) => {
                        inputs.truncate(i0);
                        aux.truncate(a0);
                        Err(fail(d))
                    }
                }
            }
        }
    }

    /// The key of this partition's sector shape among the verdicts of [`net`].
    fn shape_key(&self) -> String {
        format!(
            "{} nodes {} layers {}{}",
            std::any::type_name::<Tree>(),
            self.pub_params.graph.size(),
            self.pub_params.num_layers,
            if self.corrupt_native {
                " (corrupted)"
            } else {
                ""
            }
        )
    }

    /// Whether this partition's shape was found to give the library's values natively in this
    /// process (`None`: not checked yet).
    #[doc(hidden)]
    pub fn native_verdict(&self) -> Option<bool> {
        net::verdict(&self.shape_key())
    }

    /// Whether the challenges run natively: per the path, and for [`WitnessPath::Checked`] the
    /// shape's verdict (made now, on challenge 0, the first time).
    fn runs_native(&self) -> bool {
        match self.path.unwrap_or_else(WitnessPath::from_env) {
            WitnessPath::Library => false,
            WitnessPath::Native => true,
            _ => net::trusted(&self.shape_key(), || {
                match self.challenge_values(0, WitnessPath::Checked) {
                    Ok(_) => true,
                    Err(e) => {
                        tracing::warn!(
                            "PoRep partition witness: the native code does not give the \
                             library's values for {} ({e}); the library's circuit computes \
                             this shape's challenges from now on",
                            self.shape_key()
                        );
                        false
                    }
                }
            }),
        }
    }

    /// Challenge `i`'s values: natively if `native` and the native code succeeds, else by the
    /// library.
    fn part(&self, i: usize, native: bool) -> Result<Part, SynthesisError> {
        if native {
            let mut out = native::Out {
                inputs: Vec::new(),
                aux: buffers::take(),
            };
            match self.native_values(i, &mut out) {
                Ok(()) => {
                    return Ok(Part {
                        inputs: out.inputs,
                        aux: out.aux,
                        start: (0, 0),
                    })
                }
                Err(e) => {
                    buffers::give_back(out.aux);
                    tracing::warn!(
                        "PoRep partition {}, challenge {i}: native witness refused ({e}); the \
                         library's circuit computes it",
                        self.k
                    )
                }
            }
        }
        self.library_challenge(i)
    }
}

/// Where `a` and `b` (native and library: inputs, aux) first differ, if they do.
fn first_difference(a: (&[Fr], &[Fr]), b: (&[Fr], &[Fr])) -> Option<String> {
    for (what, x, y) in [("input", a.0, b.0), ("aux value", a.1, b.1)] {
        if x.len() != y.len() {
            return Some(format!(
                "{} {what}s natively, {} by the library",
                x.len(),
                y.len()
            ));
        }
        if let Some(j) = x.iter().zip(y).position(|(u, v)| u != v) {
            return Some(format!("{what} {j} of {} differs", x.len()));
        }
    }
    None
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Fr> for StackedPartition<Tree> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let n = self.vanilla.len();
        if !cs.is_witness_generator() || n == 0 {
            return self.whole()?.synthesize(cs);
        }
        let native = self.runs_native();
        let prefix = self.prefix()?;
        cs.extend_inputs(&prefix.inputs);
        cs.extend_aux(&prefix.aux);
        // The challenges run on the rayon pool; this thread hands each one's values over as
        // soon as it and every earlier challenge are done, so that a witness generator which
        // works on the values as they arrive (the PCE's products) overlaps the last challenges.
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Part, SynthesisError>)>();
        rayon::in_place_scope(|scope| {
            for i in 0..n {
                let tx = tx.clone();
                let this = &self;
                scope.spawn(move |_| {
                    let _ = tx.send((i, this.part(i, native)));
                });
            }
            drop(tx);
            self.hand_over(cs, &prefix, rx)
        })
    }
}

impl<Tree: 'static + MerkleTreeTrait> StackedPartition<Tree> {
    /// Receives the challenges' values (in any order) and hands them to `cs` in challenge order,
    /// after checking that a library circuit's prefix is `prefix`'s. Stops at the first error,
    /// naming its challenge.
    fn hand_over<CS: ConstraintSystem<Fr>>(
        &self,
        cs: &mut CS,
        prefix: &Part,
        rx: std::sync::mpsc::Receiver<(usize, Result<Part, SynthesisError>)>,
    ) -> Result<(), SynthesisError> {
        let n = self.vanilla.len();
        let mut waiting: std::collections::BTreeMap<usize, Part> = Default::default();
        let mut next = 0;
        for (i, part) in rx {
            let part =
                part.map_err(|e| error(format!("partition {}, challenge {i}: {e}", self.k)))?;
            waiting.insert(i, part);
            while let Some(p) = waiting.remove(&next) {
                if p.start != (0, 0) && p.prefix() != (&prefix.inputs[..], &prefix.aux[..]) {
                    return Err(error(format!(
                        "partition {}: challenge {next}'s circuit allocated another prefix than \
                         the partition's",
                        self.k
                    )));
                }
                let (inputs, aux) = p.challenge();
                cs.extend_inputs(inputs);
                cs.extend_aux(aux);
                buffers::give_back(p.aux);
                next += 1;
            }
        }
        if next != n {
            return Err(error(format!(
                "partition {}: {next} of {n} challenges' witnesses came back",
                self.k
            )));
        }
        Ok(())
    }
}
