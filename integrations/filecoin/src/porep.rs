//! PoRep commit phase 2 (C2) on Bellows: the partition circuits of a C1 output, their
//! parameters, proving through the pipeline, and verification through filecoin-proofs.
//!
//! What filecoin-proofs' `seal_commit_phase2` does, step for step, with the proving done by
//! Bellows:
//! 1. the public inputs of the stacked-DRG proof (replica id, comm_d, comm_r, seed) and one
//!    `StackedCircuit` per partition from the C1 output's vanilla proofs, built by
//!    storage-proofs-porep's `StackedCompound::circuit` (the same code, so the same circuits),
//!    after the vanilla proofs are verified (milliseconds; filecoin-proofs leaves that to C1,
//!    and a C1 output changed since, or relabelled, would otherwise cost a whole C2 to notice);
//! 2. the Groth16 parameters of the circuit from the parameter cache
//!    ([`crate::params`], file names from the circuit's cache identifier);
//! 3. one Groth16 proof per partition — here through Bellows' pipeline on any backend, several
//!    partitions in flight;
//! 4. the proof bytes: the partition proofs concatenated, 192 bytes each (compressed A ‖ B ‖ C),
//!    which is what `MultiProof::write` produces.
//!
//! filecoin-proofs then verifies the result before returning it; [`prove_c2`] does the same
//! with Bellows' verifier when the verifying key is in the cache (partition by partition, with
//! the public inputs storage-proofs-porep generates), and [`verify_seal`] runs filecoin-proofs'
//! own `verify_seal`.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use bellows_core::groth16::Parameters;
use bellows_core::pce::Pce;
use bellows_core::{Error, Result};
use blstrs::Scalar as Fr;
use filecoin_hashers::{Domain, Hasher};
use filecoin_proofs::constants::DefaultPieceHasher;
use filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof};
use filecoin_proofs_api::seal::SealCommitPhase1Output;
use filecoin_proofs_api::{RegisteredSealProof, SectorId};
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::proof::ProofScheme;
use storage_proofs_porep::stacked::{self, StackedCircuit, StackedCompound, StackedDrg};

use crate::c1::C1Output;
use crate::kind::{self, ProofKind};
use crate::params::{CachePaths, Check, LoadReport};
use crate::partition::StackedPartition;
use crate::prove::{self, Instance, ProveConfig, SetupReport};

/// What [`prove_c2`] returns.
pub use crate::prove::ProofOutput as C2Output;
use crate::shape::{proofs_error, Shape};
use crate::with_sector_shape;

/// The partition circuits of one C1 output, with their public inputs. A partition is
/// storage-proofs-porep's `StackedCircuit` (a [`StackedPartition`] is that circuit, with its
/// witness made challenge by challenge in parallel when a witness generator asks).
pub type PorepInstance<Tree> = Instance<StackedPartition<Tree>>;

/// PoRep C2 as a proof kind: a C1 output's stacked-DRG partition circuits.
pub(crate) struct Porep;

impl ProofKind for Porep {
    type Proof = RegisteredSealProof;
    type Input = C1Output;
    type Circuit<Tree: Shape> = StackedPartition<Tree>;
    type Blank<Tree: Shape> = StackedCircuit<Tree, DefaultPieceHasher>;

    fn proof(c1: &C1Output) -> RegisteredSealProof {
        c1.registered_proof()
    }

    fn cache_id<Tree: Shape>(proof: RegisteredSealProof) -> Result<String> {
        config_cache_id::<Tree>(proof)
    }

    fn blank<Tree: Shape>(proof: RegisteredSealProof) -> Result<Self::Blank<Tree>> {
        blank_circuit::<Tree>(proof)
    }

    fn recording<Tree: Shape>(proof: RegisteredSealProof, id: &str) -> Result<Pce> {
        recording::<Tree>(proof, id)
    }

    fn instance<Tree: Shape>(c1: &C1Output) -> Result<PorepInstance<Tree>> {
        instance::<Tree>(c1)
    }
}

fn config_cache_id<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof) -> Result<String> {
    proof
        .as_v1_config()
        .get_cache_identifier::<Tree>()
        .map_err(|e| proofs_error("cache identifier", e))
}

kind::kind_api!(Porep, RegisteredSealProof);

/// Builds the partition circuits of `c1` for the sector shape `Tree` (which must be the one of
/// the C1 output's proof type).
pub fn instance<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> Result<PorepInstance<Tree>> {
    crate::shape::no_panic("C1 output", || instance_checked::<Tree>(c1))
}

fn instance_checked<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> Result<PorepInstance<Tree>> {
    let p: &SealCommitPhase1Output = &c1.phase1;
    let proof = p.registered_proof;
    crate::c1::supported(proof)?;
    let vanilla: Vec<Vec<VanillaSealProof<Tree>>> = p
        .vanilla_proofs
        .clone()
        .try_into()
        .map_err(|e| proofs_error("C1 output: vanilla proofs", e))?;
    let replica_id: Fr = p.replica_id.into();
    let comm_r = <Tree::Hasher as Hasher>::Domain::try_from_bytes(&p.comm_r)
        .map_err(|e| proofs_error("C1 output: comm_r is not a field element", e))?;
    let comm_d = <DefaultPieceHasher as Hasher>::Domain::try_from_bytes(&p.comm_d)
        .map_err(|e| proofs_error("C1 output: comm_d is not a field element", e))?;
    let pub_in = stacked::PublicInputs {
        replica_id: replica_id.into(),
        tau: Some(stacked::Tau { comm_d, comm_r }),
        k: None,
        seed: Some(p.seed),
    };
    let pub_params = public_params::<Tree>(proof)?;
    // The vanilla proofs must verify for the proof type the C1 output claims (milliseconds):
    // a C1 output of another sector, version or seed is refused here, before any proving,
    // rather than yielding a proof that does not verify.
    let valid = StackedDrg::<Tree, DefaultPieceHasher>::verify_all_partitions(
        &pub_params,
        &pub_in,
        &vanilla,
    )
    .map_err(|e| proofs_error("C1 output: checking the vanilla proofs", e))?;
    if !valid {
        return Err(Error::malformed(
            "C1 output",
            format!(
                "its vanilla proofs do not verify as {proof:?} proofs for its comm_r, comm_d, \
                 replica id and seed: the output was changed, or it was made for another proof \
                 type or version"
            ),
        ));
    }
    labels_follow_columns::<Tree>(&vanilla, &pub_in.replica_id)?;
    let mut circuits = Vec::with_capacity(vanilla.len());
    let mut public_inputs = Vec::with_capacity(vanilla.len());
    let (pub_in, pub_params) = (Arc::new(pub_in), Arc::new(pub_params));
    for (k, v) in vanilla.into_iter().enumerate() {
        let partition = StackedPartition::new(k, pub_in.clone(), pub_params.clone(), v);
        // The library's consistency checks (challenges present, one comm_c and comm_r_last)
        // now, rather than when the partition is synthesised.
        partition
            .whole()
            .map_err(|e| proofs_error(&format!("C1 output: partition {k}"), e))?;
        circuits.push(partition);
        public_inputs.push(
            <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::generate_public_inputs(&pub_in, &pub_params, Some(k))
            .map_err(|e| proofs_error(&format!("public inputs of partition {k}"), e))?,
        );
    }
    Ok(Instance {
        circuits,
        public_inputs,
        cache_id: config_cache_id::<Tree>(proof)?,
    })
}

/// What storage-proofs' vanilla verification leaves to the circuit: that each challenge's label
/// at every layer is the labelling of the labels its parents' column proofs hold (the base
/// parents in the same layer, the expander parents in the layer below, repeated to 37 as the
/// labelling does). A C1 output whose labelling proofs hash other parents passes the vanilla
/// check and fails only in C2's circuit, after a partition's synthesis; here it is refused before
/// any work, naming the partition, challenge and layer. Milliseconds: one SHA-256 of 37 labels
/// per challenge and layer.
fn labels_follow_columns<Tree: 'static + MerkleTreeTrait>(
    vanilla: &[Vec<VanillaSealProof<Tree>>],
    replica_id: &<Tree::Hasher as Hasher>::Domain,
) -> Result<()> {
    use storage_proofs_core::merkle::MerkleProofTrait;
    use storage_proofs_porep::stacked::LabelingProof;
    for (k, partition) in vanilla.iter().enumerate() {
        for (i, p) in partition.iter().enumerate() {
            let node = p.comm_d_proofs.path_index() as u64;
            let cols = &p.replica_column_proofs;
            let bad = |layer: usize, why: &str| {
                Error::malformed(
                    "C1 output",
                    format!(
                        "partition {k}, challenge {i} (node {node}), layer {layer}: {why}; the \
                         output was changed, or made by a faulty commit phase 1"
                    ),
                )
            };
            for layer in 1..=p.labeling_proofs.len() {
                let label = |c: &storage_proofs_porep::stacked::ColumnProof<_>, l: usize| {
                    c.get_node_at_layer(l).ok().copied()
                };
                let mut parents = Vec::with_capacity(14);
                for c in &cols.drg_parents {
                    parents.push(
                        label(c, layer)
                            .ok_or_else(|| bad(layer, "a base parent's column is short"))?,
                    );
                }
                if layer > 1 {
                    for c in &cols.exp_parents {
                        parents.push(
                            label(c, layer - 1).ok_or_else(|| {
                                bad(layer, "an expander parent's column is short")
                            })?,
                        );
                    }
                }
                let own = label(&cols.c_x, layer)
                    .ok_or_else(|| bad(layer, "the challenged node's column is short"))?;
                let repeated: Vec<_> = parents.iter().copied().cycle().take(37).collect();
                let from_columns = LabelingProof::<Tree::Hasher>::new(layer as u32, node, repeated);
                if !from_columns.verify(replica_id, &own) {
                    return Err(bad(
                        layer,
                        "its label is not the labelling of its parents' column labels",
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The blank (witness-free) circuit of `proof`, as the setup needs it.
pub fn blank_circuit<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
) -> Result<StackedCircuit<Tree, DefaultPieceHasher>> {
    let pub_params = public_params::<Tree>(proof)?;
    let challenges = pub_params.challenges.num_challenges_per_partition();
    Ok(blank_with(&pub_params, challenges))
}

/// storage-proofs' public parameters of `proof`'s partition circuit.
fn public_params<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
) -> Result<stacked::PublicParams<Tree>> {
    filecoin_proofs::parameters::public_params::<Tree>(&proof.as_v1_config())
        .map_err(|e| proofs_error("PoRep public parameters", e))
}

/// The blank partition circuit of `pub_params` with `challenges` challenges.
fn blank_with<Tree: 'static + MerkleTreeTrait>(
    pub_params: &stacked::PublicParams<Tree>,
    challenges: usize,
) -> StackedCircuit<Tree, DefaultPieceHasher> {
    use storage_proofs_porep::stacked::Challenges;
    let mut p = pub_params.clone();
    p.challenges = match p.challenges {
        Challenges::Interactive(_) => Challenges::new_interactive(challenges),
        Challenges::Synth(_) => Challenges::new_synthetic(challenges),
        Challenges::Ni(_) => Challenges::new_non_interactive(challenges),
    };
    <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
        StackedDrg<'_, Tree, DefaultPieceHasher>,
        _,
    >>::blank_circuit(&p)
}

/// The recording of `proof`'s partition circuit under `id`. The circuit is a short prefix and
/// then one sub-circuit per challenge, all of one structure (storage-proofs'
/// `StackedCircuit::synthesize`; the blank circuit's challenges are alike), so it is recorded
/// from its prefix and two challenges and the other challenges' rows are copies
/// ([`Pce::record_repeated`]): at 32 GiB 2 of the 18 challenges are recorded, not 18. The
/// image is the whole blank circuit's, byte for byte (tests); should the two recorded
/// challenges ever differ, the whole circuit is recorded instead.
pub(crate) fn recording<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
    id: &str,
) -> Result<Pce> {
    let pub_params = public_params::<Tree>(proof)?;
    let copies = pub_params.challenges.num_challenges_per_partition();
    if copies > 2 {
        let (prefix, two) = (blank_with(&pub_params, 0), blank_with(&pub_params, 2));
        match Pce::record_repeated(prove::Guarded(prefix), prove::Guarded(two), copies, id) {
            Ok(p) => return Ok(p),
            Err(e) => tracing::warn!("{id}: recording every challenge ({e})"),
        }
    }
    Pce::record(prove::Guarded(blank_with(&pub_params, copies)), id)
}

/// Loads the parameters of `proof` from the cache folder `dir`, checking them with `check` and
/// their shape against a partition circuit with `num_inputs` public inputs.
pub fn load_params(
    proof: RegisteredSealProof,
    dir: &Path,
    check: Check,
    num_inputs: usize,
) -> Result<(Parameters, LoadReport)> {
    prove::load_cached(
        &format!("{proof:?}"),
        &cache_id(proof)?,
        dir,
        check,
        None,
        num_inputs,
    )
}

/// Proves C2 for `c1` with the parameters in the cache folder `params_dir` (see the module
/// documentation).
pub fn prove_c2(c1: &C1Output, params_dir: &Path, cfg: &ProveConfig) -> Result<C2Output> {
    let batch = prove_c2_batch(std::slice::from_ref(c1), params_dir, cfg)?;
    let mut out = batch
        .proofs
        .into_iter()
        .next()
        .ok_or_else(|| Error::Pipeline("the proof job never completed".into()))?;
    out.prove_time = batch.prove_time;
    Ok(out)
}

/// Proves C2 for several C1 outputs of one proof type in a row (see
/// [`prove::prove_instances`]): the parameters loaded once, every partition of every sector
/// through one pipeline, each proof verified. With pre-compiled synthesis, a partition's
/// witness runs on every core ([`crate::partition`]), so unless `cfg.pipeline` says otherwise
/// two partitions per device are held at once: one on the device, the next being synthesised.
pub fn prove_c2_batch(
    c1s: &[C1Output],
    params_dir: &Path,
    cfg: &ProveConfig,
) -> Result<prove::ProofBatch> {
    let first = c1s
        .first()
        .ok_or_else(|| Error::invalid("no C1 output to prove"))?;
    let proof = first.registered_proof();
    if let Some(other) = c1s.iter().find(|c| c.registered_proof() != proof) {
        return Err(Error::invalid(format!(
            "one batch proves one proof type: {proof:?} and {:?}",
            other.registered_proof()
        )));
    }
    with_sector_shape!(
        u64::from(proof.sector_size()),
        prove_c2_batch_inner,
        c1s,
        params_dir,
        cfg
    )
}

fn prove_c2_batch_inner<Tree: 'static + MerkleTreeTrait>(
    c1s: &[C1Output],
    params_dir: &Path,
    cfg: &ProveConfig,
) -> Result<prove::ProofBatch> {
    let what = format!("{:?}", c1s[0].phase1.registered_proof);
    let t = Instant::now();
    let mut proofs = Vec::with_capacity(c1s.len());
    let mut cache_id = String::new();
    for c1 in c1s {
        let inst = instance::<Tree>(c1)?;
        cache_id = inst.cache_id;
        proofs.push((inst.circuits, inst.public_inputs));
    }
    let circuits_time = t.elapsed();
    let mut cfg = cfg.clone();
    // Pre-compiled synthesis: the recording made from the first partition's circuit (every
    // partition has the same constraint system), loaded or recorded before the parameters.
    let pce = match &cfg.pce_dir {
        Some(pce_dir) => {
            let first = proofs
                .first()
                .and_then(|(c, _)| c.first())
                .cloned()
                .ok_or_else(|| {
                    Error::invalid(format!("{what}: the C1 output yields no partition"))
                })?;
            if first.challenges() > 1 && cfg.pipeline.partitions_in_flight.is_none() {
                // Two per device: one on it, the next being synthesised.
                let devices = cfg.backend.info().devices.len().max(1);
                cfg.pipeline.partitions_in_flight = Some(2 * devices);
            }
            Some(pce(c1s[0].registered_proof(), pce_dir)?)
        }
        None => None,
    };
    let mut batch = prove::prove_instances(&what, &cache_id, proofs, params_dir, &cfg, pce)?;
    for p in &mut batch.proofs {
        p.circuits_time = circuits_time;
    }
    Ok(batch)
}

/// Checks that `c1` is the commit-phase-1 output of sector `sector` of the prover `prover_id`:
/// its replica id must be the one filecoin-proofs derives from them, the output's ticket and
/// comm_d and its proof type's PoRep id. `verify_seal` binds the proof to that sector, so a C1
/// output of another sector or miner would make a proof its verifier refuses; here it is
/// refused before any work.
pub fn check_sector(c1: &C1Output, prover_id: [u8; 32], sector: u64) -> Result<()> {
    let p = &c1.phase1;
    let porep_id = p.registered_proof.as_v1_config().porep_id;
    let want = stacked::generate_replica_id::<filecoin_proofs::constants::DefaultTreeHasher, _>(
        &prover_id, sector, &p.ticket, p.comm_d, &porep_id,
    );
    if AsRef::<[u8]>::as_ref(&want) != AsRef::<[u8]>::as_ref(&p.replica_id) {
        return Err(Error::malformed(
            "C1 output",
            format!(
                "its replica id is not the one of sector {sector} of this prover (with its \
                 ticket and comm_d): the output belongs to another sector or miner"
            ),
        ));
    }
    Ok(())
}

/// The prover id of miner actor `actor` (as in `f01234`): the actor id as an unsigned LEB128
/// varint (the payload of its ID address), padded with zeros to 32 bytes, as lotus derives it.
pub fn prover_id_from_actor(actor: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    let mut v = actor;
    let mut i = 0;
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out[i] = byte;
            break;
        }
        out[i] = byte | 0x80;
        i += 1;
    }
    out
}

/// Verifies a C2 proof with filecoin-proofs' own `verify_seal`, for the sector `sector_id` of
/// prover `prover_id`, with the commitments, ticket and seed of `c1`.
///
/// filecoin-proofs reads the verifying key from its parameter cache folder,
/// `FIL_PROOFS_PARAMETER_CACHE`, which it reads once per process: set it before the first call
/// (the `bellows porep verify` command does). Returns `Ok(false)` for a proof that does not
/// verify.
pub fn verify_seal(
    c1: &C1Output,
    prover_id: [u8; 32],
    sector_id: u64,
    proof: &[u8],
) -> Result<bool> {
    let p = &c1.phase1;
    let want = usize::from(p.registered_proof.partitions()) * 192;
    if proof.len() != want {
        return Err(Error::malformed(
            "C2 proof",
            format!(
                "{} bytes, but a {:?} proof is {want} bytes ({} partitions of 192)",
                proof.len(),
                p.registered_proof,
                p.registered_proof.partitions()
            ),
        ));
    }
    crate::shape::no_panic("C2 proof", || {
        filecoin_proofs_api::seal::verify_seal(
            p.registered_proof,
            p.comm_r,
            p.comm_d,
            prover_id,
            SectorId::from(sector_id),
            p.ticket,
            p.seed,
            proof,
        )
        .map_err(|e| proofs_error("filecoin-proofs verify_seal", e))
    })
}

/// The folder filecoin-proofs reads parameters and verifying keys from in this process.
pub fn filecoin_parameter_cache() -> std::path::PathBuf {
    storage_proofs_core::parameter_cache::parameter_cache_dir()
}

/// [`setup`], keeping the circuit's recording in the PCE folder `pce_dir` (or taking it from
/// there), where `porep c2` finds it: a 32 GiB partition is then recorded once, not again by
/// the first C2 (see [`prove::setup_circuit`]), handing `report` each step as it ends (its
/// recording, then the setup's: minutes at 32 GiB).
pub fn setup_with<R: rand_core::RngCore>(
    proof: RegisteredSealProof,
    dir: &Path,
    rng: &mut R,
    force: bool,
    pce_dir: Option<&Path>,
    report: &dyn Fn(&bellows_core::groth16::setup::SetupStep),
) -> Result<(CachePaths, SetupReport)> {
    kind::setup::<Porep>(proof, dir, rng, force, pce_dir, report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{synth_c1, SynthOptions};
    use filecoin_proofs::constants::SectorShape2KiB;

    /// The recording from the prefix and two challenges is the whole blank circuit's, byte for
    /// byte, for a 2 KiB partition given 5 challenges (the real sizes with more than two, 32
    /// and 64 GiB, take minutes to record whole).
    #[test]
    fn a_partition_recorded_from_two_challenges_is_the_whole_circuits_recording() {
        let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
        let pub_params = public_params::<SectorShape2KiB>(proof).unwrap();
        let whole = Pce::record(prove::Guarded(blank_with(&pub_params, 5)), "rec").unwrap();
        let rep = Pce::record_repeated(
            prove::Guarded(blank_with(&pub_params, 0)),
            prove::Guarded(blank_with(&pub_params, 2)),
            5,
            "rec",
        )
        .unwrap();
        assert_eq!(rep.num_constraints(), whole.num_constraints());
        assert_eq!(rep.num_inputs(), whole.num_inputs());
        assert!(rep.image() == whole.image());
        // The real 2 KiB circuit (two challenges) is recorded whole, as before.
        let real = recording::<SectorShape2KiB>(proof, "rec").unwrap();
        let blank = Pce::record(
            prove::Guarded(blank_circuit::<SectorShape2KiB>(proof).unwrap()),
            "rec",
        )
        .unwrap();
        assert!(real.image() == blank.image());
    }

    /// A parent column whose label differs from what the challenge's labelling hashed is
    /// refused with where it is, which storage-proofs' vanilla verification does not check.
    #[test]
    fn labels_must_follow_the_parents_columns() {
        let out = synth_c1(
            RegisteredSealProof::StackedDrg2KiBV1_1,
            &SynthOptions::default(),
        )
        .unwrap();
        let vanilla: Vec<Vec<VanillaSealProof<SectorShape2KiB>>> =
            out.vanilla_proofs.clone().try_into().unwrap();
        let replica_id: Fr = out.replica_id.into();
        let replica_id = replica_id.into();
        labels_follow_columns::<SectorShape2KiB>(&vanilla, &replica_id).unwrap();
        // One label of a base parent's column changed (the columns' tree is not rechecked here).
        let mut v = serde_json::to_value(&vanilla).unwrap();
        let row = v
            .pointer_mut("/0/1/replica_column_proofs/drg_parents/3/column/rows/0/0")
            .expect("a parent label's first byte");
        *row = serde_json::json!(row.as_u64().unwrap() ^ 1);
        let bad: Vec<Vec<VanillaSealProof<SectorShape2KiB>>> = serde_json::from_value(v).unwrap();
        let e = labels_follow_columns::<SectorShape2KiB>(&bad, &replica_id)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("partition 0, challenge 1") && e.contains("layer 1"),
            "{e}"
        );
    }
}
