//! A PoRep partition's witness made challenge by challenge, natively and in parallel
//! (`bellows_filecoin::partition`): each challenge's native values are the library circuit's,
//! value for value, at every sector size, and the whole partition's witness is the sequential
//! one; a native witness that differs is refused and the library's used.

mod common;

use bellows_core::pce::Pce;
use bellows_filecoin::filecoin_proofs::constants::{
    SectorShape2KiB, SectorShape32GiB, SectorShape512MiB, SectorShape64GiB, SectorShape8MiB,
};
use bellows_filecoin::filecoin_proofs::types::MerkleTreeTrait;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::partition::{StackedPartition, WitnessPath};
use bellows_filecoin::testing::c1_json;
use bellows_filecoin::{parse_c1, porep, synth_c1, SynthOptions};
use common::sealed;

/// Partition 0 of a synthetic C1 output of `proof`.
fn synthetic<Tree: 'static + MerkleTreeTrait>(
    proof: RegisteredSealProof,
) -> StackedPartition<Tree> {
    let out = synth_c1(proof, &SynthOptions::default()).unwrap();
    let c1 = parse_c1(&c1_json(&out), "C1").unwrap();
    let mut inst = porep::instance::<Tree>(&c1).unwrap();
    inst.circuits.swap_remove(0)
}

/// Partition 0 of the sealed 2 KiB sector.
fn sealed_partition() -> StackedPartition<SectorShape2KiB> {
    let c1 = parse_c1(&c1_json(&sealed().c1), "C1").unwrap();
    let mut inst = porep::instance::<SectorShape2KiB>(&c1).unwrap();
    inst.circuits.swap_remove(0)
}

/// Challenges `which` of `part`: the native values equal the library's (the comparison names
/// the first difference).
fn native_is_library<Tree: 'static + MerkleTreeTrait>(
    part: &StackedPartition<Tree>,
    which: impl IntoIterator<Item = usize>,
) {
    for i in which {
        let (inputs, aux) = part.challenge_values(i, WitnessPath::Checked).unwrap();
        assert!(
            !inputs.is_empty() && aux.len() > 1000,
            "challenge {i}: its values"
        );
    }
}

#[test]
fn native_challenges_are_the_library_s_on_a_sealed_sector() {
    let part = sealed_partition();
    native_is_library(&part, 0..part.challenges());
}

#[test]
fn native_challenges_are_the_library_s_at_8_mib_and_512_mib() {
    let part = synthetic::<SectorShape8MiB>(RegisteredSealProof::StackedDrg8MiBV1_1);
    native_is_library(&part, [0, part.challenges() - 1]);
    let part = synthetic::<SectorShape512MiB>(RegisteredSealProof::StackedDrg512MiBV1_1);
    native_is_library(&part, [part.challenges() - 1]);
}

/// 11 layers and trees with sub trees (8/8/0): one challenge, about 7 million values.
#[test]
fn a_native_challenge_is_the_library_s_at_32_gib() {
    let part = synthetic::<SectorShape32GiB>(RegisteredSealProof::StackedDrg32GiBV1_1);
    native_is_library(&part, [1]);
}

/// Trees with top trees too (8/8/2).
#[test]
fn a_native_challenge_is_the_library_s_at_64_gib() {
    let part = synthetic::<SectorShape64GiB>(RegisteredSealProof::StackedDrg64GiBV1_1);
    native_is_library(&part, [2]);
}

/// A sealed 2 KiB sector's partition: the parallel native witness equals the sequential one.
#[test]
fn the_parallel_witness_is_the_sequential_one() {
    let part = sealed_partition().with_witness_path(WitnessPath::Checked);
    same_witness(&part);
    assert_eq!(
        part.native_verdict(),
        Some(true),
        "the native code was checked and used"
    );
}

/// A synthetic 8 MiB sector's partition (larger trees, more layers): the same.
#[test]
fn the_parallel_witness_is_the_sequential_one_at_8_mib() {
    let part = synthetic::<SectorShape8MiB>(RegisteredSealProof::StackedDrg8MiBV1_1)
        .with_witness_path(WitnessPath::Checked);
    same_witness(&part);
    assert_eq!(part.native_verdict(), Some(true));
    // The library's challenges, in parallel, give the same witness too.
    same_witness(&part.with_witness_path(WitnessPath::Library));
}

/// A native witness that differs from the library's (a value changed by a test hook) is
/// refused by the first comparison, and the partition's witness is the library's.
#[test]
fn a_native_witness_that_differs_is_refused_and_the_library_used() {
    let part = sealed_partition()
        .with_witness_path(WitnessPath::Checked)
        .corrupt_native_for_tests();
    let e = part
        .challenge_values(0, WitnessPath::Checked)
        .unwrap_err()
        .to_string();
    assert!(e.contains("differs"), "{e}");
    same_witness(&part);
    assert_eq!(
        part.native_verdict(),
        Some(false),
        "the shape fell back to the library"
    );
    // Forced native, the changed value reaches the witness generator, whose check on every
    // row refuses it.
    let forced = part.clone().with_witness_path(WitnessPath::Native);
    let pce = Pce::record(part.whole().unwrap(), "partition-test").unwrap();
    let e = pce.synthesize(forced).unwrap_err().to_string();
    assert!(e.contains("does not hold"), "{e}");
}

fn same_witness<Tree: 'static + MerkleTreeTrait>(part: &StackedPartition<Tree>) {
    assert!(part.challenges() >= 2, "a partition of several challenges");
    let pce = Pce::record(part.whole().unwrap(), "partition-test").unwrap();
    // The recording's own witness run: the library's circuit, challenge after challenge.
    let seq = pce.synthesize(part.whole().unwrap()).unwrap();
    // The partition as a witness generator sees it: challenges in parallel, stitched.
    let par = pce.synthesize(part.clone()).unwrap();
    assert_eq!(seq.input_assignment, par.input_assignment);
    assert!(
        seq.aux_assignment[..] == par.aux_assignment[..],
        "aux values differ"
    );
    assert!(seq.a[..] == par.a[..] && seq.b[..] == par.b[..] && seq.c[..] == par.c[..]);
    assert_eq!(seq.input_assignment.len(), pce.num_inputs());
}

#[test]
fn a_partition_of_another_shape_is_refused() {
    let c1 = parse_c1(&c1_json(&sealed().c1), "C1").unwrap();
    let inst = porep::instance::<SectorShape2KiB>(&c1).unwrap();
    // A recording of a different circuit: the parallel witness must not pass its checks.
    let other = bellows_core::circuits::synthetic::SyntheticCircuit::new(10, 50).unwrap();
    let pce = Pce::record(other, "other").unwrap();
    let e = pce
        .synthesize(inst.circuits[0].clone())
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not match"), "{e}");
}
