//! A PoSt partition whose witness is made sector by sector on every core.
//!
//! storage-proofs-post's `FallbackPoStCircuit` is one independent sub-circuit per sector (its
//! commitments, comm_r = H(comm_c, comm_r_last) and the challenged leaves' inclusion paths), in
//! sector order, with no variable shared between sectors. The library synthesises them one after
//! the other; a 32 GiB WindowPoSt partition has 2349 sectors of 10 challenges each, about as many
//! constraints as a PoRep partition.
//!
//! [`PostPartition`] is the same circuit. Asked by a constraint system that records or checks
//! constraints (a recording, direct synthesis, a setup, bellperson's prover), it is the library's
//! circuit, unchanged. Asked by a witness generator (Bellows' pre-compiled synthesis), it runs
//! each sector's sub-circuit, the library's own code, in a value-only constraint system on the
//! rayon pool and hands the values over in sector order: the values the library's sequential
//! synthesis would give, which the witness generator then checks against the recording (counts,
//! and A·B = C on every row).

use bellows_core::groth16::constraint_system::Cs;
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use filecoin_proofs::types::MerkleTreeTrait;
use rayon::prelude::*;
use storage_proofs_post::fallback::FallbackPoStCircuit;

use crate::partition::Values;

/// One partition of a PoSt proof (see the module documentation).
pub struct PostPartition<Tree: 'static + MerkleTreeTrait>(pub FallbackPoStCircuit<Tree>);

impl<Tree: 'static + MerkleTreeTrait> Clone for PostPartition<Tree> {
    fn clone(&self) -> Self {
        PostPartition(self.0.clone())
    }
}

impl<Tree: 'static + MerkleTreeTrait> Circuit<Fr> for PostPartition<Tree> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let sectors = &self.0.sectors;
        if !cs.is_witness_generator() || sectors.len() < 2 {
            return self.0.synthesize(cs);
        }
        // A few sectors per thread at a time: the values of a whole 32 GiB partition are
        // gigabytes, so they are handed over chunk by chunk rather than all at the end.
        let chunk = 4 * rayon::current_num_threads().max(1);
        for group in sectors.chunks(chunk) {
            let parts = group
                .par_iter()
                .map(|sector| {
                    let mut values = Cs(Values::default());
                    sector.synthesize(&mut values)?;
                    Ok(values.0)
                })
                .collect::<Result<Vec<Values>, SynthesisError>>()?;
            for p in &parts {
                cs.extend_inputs(p.input_values());
                cs.extend_aux(p.aux_values());
            }
        }
        Ok(())
    }
}
