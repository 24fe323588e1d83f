//! Synthetic C1 outputs (`bellows_filecoin::synth_c1`): accepted by Bellows' C1 check and by
//! storage-proofs' vanilla-proof verification at every sector size, deterministic per seed,
//! refused when tampered with, and — at 2 KiB — proved by Bellows and accepted by
//! filecoin-proofs' `verify_seal`.
//!
//! The vanilla verification does not check that a labelling proof's parents are the labels in
//! the parents' column proofs (the C2 circuit does); [`labels_follow_the_columns`] checks that
//! here with storage-proofs-porep's own labelling proof, and at the sizes too large for a C2 in a
//! test (32 GiB, 64 GiB) storage-proofs-porep's circuit of single challenges is synthesised and
//! checked constraint by constraint ([`challenge_circuits_are_satisfied`]).

mod common;

use std::time::Instant;

use bellows_filecoin::filecoin_proofs::constants::{
    SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use bellows_filecoin::filecoin_proofs::types::{MerkleTreeTrait, VanillaSealProof};
use bellows_filecoin::filecoin_proofs_api::seal::SealCommitPhase1Output;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::synth_c1::{proof_for_sector_size, SYNTH_PROOFS};
use bellows_filecoin::testing::{c1_json, lotus_bench_json};
use bellows_filecoin::{
    parse_c1, porep, prove_c2, prover_id_from_actor, synth_c1, verify_seal, C1Output, Check,
    ProveConfig, SynthOptions,
};
use filecoin_hashers::Hasher;
use storage_proofs_core::merkle::MerkleProofTrait;
use storage_proofs_porep::stacked::LabelingProof;

#[path = "synth_c1/checking_cs.rs"]
mod checking_cs;

const MINER: u64 = 1234;
const SECTOR: u64 = 42;

fn opts(seed: u64) -> SynthOptions {
    // filecoin-proofs reads its settings once per process: the shared folder, before anything.
    common::shared_params_dir();
    let mut o = SynthOptions::default();
    o.seed = seed;
    o.prover_id = prover_id_from_actor(MINER);
    o.sector_id = SECTOR;
    o
}

/// Makes a synthetic output and reads it back through Bellows' C1 parser (the lotus-bench form),
/// printing how long each took.
fn make(proof: RegisteredSealProof, seed: u64) -> (SealCommitPhase1Output, C1Output) {
    let t = Instant::now();
    let out = synth_c1(proof, &opts(seed)).unwrap();
    let made = t.elapsed();
    let c1 = parse_c1(&lotus_bench_json(&out, SECTOR), "synthetic C1").unwrap();
    eprintln!(
        "[timing] {proof:?}: made in {:.2} s, serialised and read back in {:.2} s",
        made.as_secs_f64(),
        (t.elapsed() - made).as_secs_f64()
    );
    (out, c1)
}

/// storage-proofs-porep's `verify_all_partitions` on the C1 output, through Bellows' own check
/// (`porep::instance` verifies the vanilla proofs before building the partition circuits).
fn vanilla_verifies<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) {
    let t = Instant::now();
    let inst = porep::instance::<Tree>(c1).unwrap();
    assert_eq!(inst.circuits.len(), c1.partitions());
    eprintln!(
        "[timing] checked and built {} partition circuit(s) in {:.2} s",
        inst.circuits.len(),
        t.elapsed().as_secs_f64()
    );
}

/// Each challenge's labels, layer by layer, are the labelling of the labels its parents' column
/// proofs hold (base parents in the same layer, expander parents in the layer below), by
/// storage-proofs-porep's `LabelingProof`; and the labelling proofs in the output list exactly
/// those parents. Returns the number of labels checked.
fn labels_follow_the_columns<Tree: 'static + MerkleTreeTrait>(c1: &C1Output) -> usize {
    let vanilla: Vec<Vec<VanillaSealProof<Tree>>> =
        c1.phase1.vanilla_proofs.clone().try_into().unwrap();
    let replica_fr: blstrs::Scalar = c1.phase1.replica_id.into();
    let replica_id: <Tree::Hasher as Hasher>::Domain = replica_fr.into();
    let mut checked = 0;
    for p in vanilla.iter().flatten() {
        let challenge = p.comm_d_proofs.path_index() as u64;
        let cols = &p.replica_column_proofs;
        let layers = p.labeling_proofs.len();
        for layer in 1..=layers {
            let mut parents: Vec<_> = cols
                .drg_parents
                .iter()
                .map(|c| *c.get_node_at_layer(layer).unwrap())
                .collect();
            if layer > 1 {
                parents.extend(
                    cols.exp_parents
                        .iter()
                        .map(|c| *c.get_node_at_layer(layer - 1).unwrap()),
                );
            }
            let parents: Vec<_> = parents.iter().copied().cycle().take(37).collect();
            let own = cols.c_x.get_node_at_layer(layer).unwrap();
            let from_columns = LabelingProof::<Tree::Hasher>::new(layer as u32, challenge, parents);
            assert!(
                from_columns.verify(&replica_id, own),
                "challenge {challenge}, layer {layer}: the label is not the labelling of the \
                 parents' columns"
            );
            // The output's own labelling proof hashes the same parents for the same node.
            let listed = serde_json::to_value(&p.labeling_proofs[layer - 1]).unwrap();
            let expected = serde_json::to_value(&from_columns).unwrap();
            assert_eq!(listed, expected, "challenge {challenge}, layer {layer}");
            checked += 1;
        }
    }
    checked
}

/// A challenge whose circuit is not satisfied: partition, challenge, first bad constraint.
type Unsatisfied = (usize, usize, usize);

/// storage-proofs-porep's partition circuit (`StackedCompound::circuit`) for each challenge
/// `(partition, index)` of `picks` alone, synthesised and checked constraint by constraint (on
/// every core): the commitments, the replica id, and the challenge's data, columns, labels,
/// encoding and paths in the sector's tree shapes. Returns the constraints checked, and the
/// first challenge whose circuit is not satisfied with the number of its first bad constraint.
fn challenge_circuits<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
    picks: &[(usize, usize)],
) -> (usize, Option<Unsatisfied>) {
    use bellows_filecoin::filecoin_proofs::constants::DefaultPieceHasher;
    use bellpepper_core::Circuit;
    use rayon::prelude::*;
    use storage_proofs_core::compound_proof::CompoundProof;
    use storage_proofs_porep::stacked::{PublicInputs, StackedCompound, StackedDrg, Tau};
    let t = Instant::now();
    let p = &c1.phase1;
    let vanilla: Vec<Vec<VanillaSealProof<Tree>>> = p.vanilla_proofs.clone().try_into().unwrap();
    let pub_params = bellows_filecoin::filecoin_proofs::parameters::public_params::<Tree>(
        &p.registered_proof.as_v1_config(),
    )
    .unwrap();
    let replica_fr: blstrs::Scalar = p.replica_id.into();
    let pub_in = PublicInputs {
        replica_id: replica_fr.into(),
        seed: Some(p.seed),
        tau: Some(Tau {
            comm_d: filecoin_hashers::Domain::try_from_bytes(&p.comm_d).unwrap(),
            comm_r: filecoin_hashers::Domain::try_from_bytes(&p.comm_r).unwrap(),
        }),
        k: None,
    };
    let results: Vec<(usize, Option<Unsatisfied>)> = picks
        .par_iter()
        .map(|&(k, i)| {
            let circuit = <StackedCompound<Tree, DefaultPieceHasher> as CompoundProof<
                StackedDrg<'_, Tree, DefaultPieceHasher>,
                _,
            >>::circuit(
                &pub_in,
                (),
                &vec![vanilla[k][i].clone()],
                &pub_params,
                Some(k),
            )
            .unwrap();
            let mut cs = checking_cs::new();
            circuit.synthesize(&mut cs).unwrap();
            (cs.constraints(), cs.first_unsatisfied().map(|n| (k, i, n)))
        })
        .collect();
    let total = results.iter().map(|r| r.0).sum();
    eprintln!(
        "[timing] {} challenge circuit(s), {total} constraints checked: {:.1} s",
        picks.len(),
        t.elapsed().as_secs_f64()
    );
    (total, results.into_iter().find_map(|r| r.1))
}

/// [`challenge_circuits`], which must all be satisfied; returns the constraints checked.
fn challenge_circuits_are_satisfied<Tree: 'static + MerkleTreeTrait>(
    c1: &C1Output,
    picks: &[(usize, usize)],
) -> usize {
    let (total, bad) = challenge_circuits::<Tree>(c1, picks);
    assert_eq!(
        bad, None,
        "(partition, challenge, first unsatisfied constraint)"
    );
    total
}

#[test]
fn two_kib_and_eight_mib_pass_bellows_c1_check() {
    let (_, c1) = make(RegisteredSealProof::StackedDrg2KiBV1_1, 1);
    assert_eq!(c1.sector_num, Some(SECTOR));
    assert_eq!(c1.partitions(), 1);
    vanilla_verifies::<SectorShape2KiB>(&c1);
    assert!(labels_follow_the_columns::<SectorShape2KiB>(&c1) > 0);
    assert!(challenge_circuits_are_satisfied::<SectorShape2KiB>(&c1, &[(0, 0), (0, 1)]) > 0);
    let (_, c1) = make(RegisteredSealProof::StackedDrg8MiBV1_1, 1);
    vanilla_verifies::<SectorShape8MiB>(&c1);
    assert!(labels_follow_the_columns::<SectorShape8MiB>(&c1) > 0);
    assert!(challenge_circuits_are_satisfied::<SectorShape8MiB>(&c1, &[(0, 1)]) > 0);
}

#[test]
fn five_hundred_twelve_mib_is_accepted() {
    let (_, c1) = make(RegisteredSealProof::StackedDrg512MiBV1_1, 2);
    vanilla_verifies::<SectorShape512MiB>(&c1);
    assert!(labels_follow_the_columns::<SectorShape512MiB>(&c1) > 0);
    assert!(challenge_circuits_are_satisfied::<SectorShape512MiB>(&c1, &[(0, 0)]) > 0);
}

#[test]
fn one_seed_one_output_and_other_seeds_differ() {
    let proof = RegisteredSealProof::StackedDrg2KiBV1_1;
    let a = c1_json(&synth_c1(proof, &opts(5)).unwrap());
    let b = c1_json(&synth_c1(proof, &opts(5)).unwrap());
    assert_eq!(a, b, "the same seed gives the same bytes");
    let x = synth_c1(proof, &opts(5)).unwrap();
    let y = synth_c1(proof, &opts(6)).unwrap();
    assert_ne!(x.comm_d, y.comm_d);
    assert_ne!(x.comm_r, y.comm_r);
    assert_ne!(x.ticket, y.ticket);
    assert_ne!(x.seed, y.seed);
    assert_ne!(x.replica_id, y.replica_id);
    // Another sector of the same seed: another replica id, so other challenges.
    let mut o = opts(5);
    o.sector_id = SECTOR + 1;
    let z = synth_c1(proof, &o).unwrap();
    assert_eq!(z.comm_d, x.comm_d);
    assert_ne!(z.replica_id, x.replica_id);
}

#[test]
fn thirty_two_gib_is_accepted() {
    let (out, c1) = make(RegisteredSealProof::StackedDrg32GiBV1_1, 3);
    assert_eq!(c1.partitions(), 10);
    assert_eq!(
        out.registered_proof,
        RegisteredSealProof::StackedDrg32GiBV1_1
    );
    vanilla_verifies::<SectorShape32GiB>(&c1);
    // 10 partitions of 18 challenges, 11 layers.
    assert_eq!(
        labels_follow_the_columns::<SectorShape32GiB>(&c1),
        10 * 18 * 11
    );
    assert!(challenge_circuits_are_satisfied::<SectorShape32GiB>(&c1, &[(9, 17)]) > 0);
}

/// The 64 GiB shape (U8, U8, U2: a top tree of two).
#[test]
fn sixty_four_gib_is_accepted() {
    let (_, c1) = make(RegisteredSealProof::StackedDrg64GiBV1_1, 4);
    assert_eq!(c1.partitions(), 10);
    vanilla_verifies::<SectorShape64GiB>(&c1);
    assert_eq!(
        labels_follow_the_columns::<SectorShape64GiB>(&c1),
        10 * 18 * 11
    );
    assert!(challenge_circuits_are_satisfied::<SectorShape64GiB>(&c1, &[(0, 0)]) > 0);
}

/// Every challenge's circuit at 32 GiB and 64 GiB (180 each, about 7 M constraints a
/// challenge): minutes on 2 cores, so run by hand (`-- --ignored`); CI checks one of each.
#[test]
#[ignore]
fn every_challenge_circuit_at_32gib_and_64gib_is_satisfied() {
    let all: Vec<(usize, usize)> = (0..10).flat_map(|k| (0..18).map(move |i| (k, i))).collect();
    let (_, c1) = make(RegisteredSealProof::StackedDrg32GiBV1_1, 13);
    challenge_circuits_are_satisfied::<SectorShape32GiB>(&c1, &all);
    let (_, c1) = make(RegisteredSealProof::StackedDrg64GiBV1_1, 14);
    challenge_circuits_are_satisfied::<SectorShape64GiB>(&c1, &all);
}

#[test]
fn sizes_map_to_the_current_proof_version() {
    for (bytes, proof) in SYNTH_PROOFS {
        assert_eq!(proof_for_sector_size(bytes).unwrap(), proof);
        assert_eq!(u64::from(proof.sector_size()), bytes);
        assert_eq!(format!("{proof:?}").rsplit("V1_1").next(), Some(""));
    }
    // The older interactive version (API 1.0, its own graph) is made and accepted too.
    let (_, c1) = make(RegisteredSealProof::StackedDrg2KiBV1, 1);
    vanilla_verifies::<SectorShape2KiB>(&c1);
    let e = proof_for_sector_size(4 << 10).unwrap_err().to_string();
    assert!(e.contains("2KiB, 8MiB, 512MiB, 32GiB and 64GiB"), "{e}");
    // Synthetic and non-interactive PoRep derive challenges from comm_r: refused.
    for p in [
        RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
    ] {
        let e = synth_c1(p, &opts(1)).unwrap_err().to_string();
        assert!(e.contains("interactive PoRep"), "{e}");
    }
}

/// The bare JSON of a synthetic 2 KiB output, as a value to edit.
fn tamperable() -> serde_json::Value {
    let out = synth_c1(RegisteredSealProof::StackedDrg2KiBV1_1, &opts(9)).unwrap();
    serde_json::from_slice(&c1_json(&out)).unwrap()
}

fn refused(v: &serde_json::Value) -> String {
    let c1 = match parse_c1(v.to_string().as_bytes(), "tampered C1") {
        Ok(c1) => c1,
        Err(e) => return e.to_string(),
    };
    match porep::instance::<SectorShape2KiB>(&c1) {
        Ok(_) => panic!("a tampered synthetic C1 was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tampered_outputs_are_refused() {
    let v = tamperable();
    let proofs = "/vanilla_proofs/StackedDrg2KiBV1/0";
    assert!(v.pointer(proofs).is_some(), "the layout this test edits");
    // A label of the challenged node's column (layer 1), one byte changed.
    let mut t = v.clone();
    let label = format!("{proofs}/0/replica_column_proofs/c_x/column/rows/0/0");
    let b = t.pointer_mut(&label).expect("a label's first byte");
    *b = serde_json::json!(b.as_u64().unwrap() ^ 1);
    let e = refused(&t);
    assert!(e.contains("vanilla proofs do not verify"), "{e}");
    // A label in a base parent's column: refused, and the circuit of that challenge is not
    // satisfied either (the circuit check is not blind).
    let mut t = v.clone();
    let label = format!("{proofs}/0/replica_column_proofs/drg_parents/2/column/rows/1/5");
    let b = t.pointer_mut(&label).expect("a parent label's byte");
    *b = serde_json::json!(b.as_u64().unwrap() ^ 4);
    let e = refused(&t);
    assert!(e.contains("vanilla proofs do not verify"), "{e}");
    let phase1: SealCommitPhase1Output = serde_json::from_value(t.clone()).unwrap();
    let c1 = C1Output {
        phase1,
        sector_num: None,
    };
    let (_, bad) = challenge_circuits::<SectorShape2KiB>(&c1, &[(0, 0), (0, 1)]);
    assert!(matches!(bad, Some((0, 0, _))), "{bad:?}");
    // A label a labelling proof hashes (a parent's, in the last challenge's last layer).
    let mut t = v.clone();
    let n = t.pointer(proofs).unwrap().as_array().unwrap().len();
    let parent = format!("{proofs}/{}/labeling_proofs/1/parents/3/0", n - 1);
    let b = t.pointer_mut(&parent).expect("a parent label's first byte");
    *b = serde_json::json!(b.as_u64().unwrap() ^ 0x10);
    let e = refused(&t);
    assert!(e.contains("vanilla proofs do not verify"), "{e}");
    // Another comm_r.
    let mut t = v.clone();
    t["comm_r"][0] = serde_json::json!(t["comm_r"][0].as_u64().unwrap() ^ 1);
    let e = refused(&t);
    assert!(e.contains("vanilla proofs do not verify"), "{e}");
    // Another sector size: in the lotus-bench wrapper, and as the proof type.
    let out: SealCommitPhase1Output = serde_json::from_value(v.clone()).unwrap();
    let mut w: serde_json::Value = serde_json::from_slice(&lotus_bench_json(&out, SECTOR)).unwrap();
    w["SectorSize"] = serde_json::json!(8u64 << 20);
    let e = parse_c1(w.to_string().as_bytes(), "tampered C1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("SectorSize says 8388608 bytes"), "{e}");
    let mut t = v.clone();
    t["registered_proof"] = serde_json::json!("StackedDrg8MiBV1_1");
    let e = refused(&t);
    assert!(
        e.contains("vanilla proofs are for 2048-byte sectors"),
        "{e}"
    );
}

fn e2e_enabled() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if ci || std::env::var_os("BELLOWS_FILECOIN_SKIP_E2E").is_none() {
        return true;
    }
    eprintln!("skipped: BELLOWS_FILECOIN_SKIP_E2E is set (and CI is not)");
    false
}

/// synth-c1 → Bellows' C2 (the shared 2 KiB parameters of Bellows' setup) → filecoin-proofs'
/// `verify_seal` for the prover and sector the output was made for.
#[test]
fn synthetic_2kib_proves_and_verify_seal_accepts_it() {
    if !e2e_enabled() {
        return;
    }
    let dir = common::shared_porep_params();
    let (_, c1) = make(RegisteredSealProof::StackedDrg2KiBV1_1, 11);
    let t = Instant::now();
    let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
    let mut cfg = ProveConfig::new(cpu);
    // The parameters were written by a test process of this run: curve checks only.
    cfg.check = Check::CurveOnly;
    cfg.pipeline.seed = Some(1);
    let out = prove_c2(&c1, &dir, &cfg).unwrap();
    eprintln!(
        "[timing] C2 of the synthetic 2 KiB C1: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let prover = prover_id_from_actor(MINER);
    assert!(verify_seal(&c1, prover, SECTOR, &out.proof).unwrap());
    assert!(!verify_seal(&c1, prover, SECTOR + 1, &out.proof).unwrap());
    assert!(!verify_seal(&c1, prover_id_from_actor(MINER + 1), SECTOR, &out.proof).unwrap());
}

/// The same at 8 MiB, opt-in (`BELLOWS_FILECOIN_E2E=1`): its parameters' setup alone takes
/// minutes on 2 cores (docs/filecoin.md).
#[test]
fn synthetic_8mib_proves_and_verify_seal_accepts_it() {
    if std::env::var_os("BELLOWS_FILECOIN_E2E").is_none() {
        eprintln!("skipped: set BELLOWS_FILECOIN_E2E=1 (an 8 MiB setup and C2, minutes)");
        return;
    }
    use rand_core::SeedableRng;
    let proof = RegisteredSealProof::StackedDrg8MiBV1_1;
    let dir = common::shared_params_dir();
    bellows_filecoin::testing::shared_params(
        proof,
        &dir,
        &mut rand_chacha::ChaCha20Rng::seed_from_u64(12),
    )
    .unwrap();
    let (_, c1) = make(proof, 12);
    let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
    let mut cfg = ProveConfig::new(cpu);
    cfg.check = Check::CurveOnly;
    let out = prove_c2(&c1, &dir, &cfg).unwrap();
    assert!(verify_seal(&c1, prover_id_from_actor(MINER), SECTOR, &out.proof).unwrap());
}
