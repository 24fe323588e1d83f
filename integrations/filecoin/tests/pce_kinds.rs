//! Pre-compiled synthesis of the PoSt and SnapDeals circuits equals direct synthesis, value for
//! value: the recording (made from the blank circuit, as the setup makes it) replays each
//! partition's witness into the same evaluations, assignments and densities as running the
//! circuit; a PoSt partition's sector-by-sector parallel witness (post_witness) equals the
//! library's sequential one. Real vanilla proofs of the sealed 2 KiB sector; no parameters
//! needed.

mod common;

use bellows_core::groth16::constraint_system::Cs;
use bellows_core::groth16::synthesis::{synthesize, Synthesized};
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::filecoin_proofs_api::RegisteredPoStProof;
use bellows_filecoin::partition::Values;
use bellows_filecoin::{post, update};
use bellpepper_core::Circuit;
use common::{post_input, updated_sector, work_dir};

fn assert_same(direct: &Synthesized, replayed: &Synthesized, what: &str) {
    assert_eq!(
        direct.num_constraints(),
        replayed.num_constraints(),
        "{what}: constraints"
    );
    assert!(direct.a[..] == replayed.a[..], "{what}: A");
    assert!(direct.b[..] == replayed.b[..], "{what}: B");
    assert!(direct.c[..] == replayed.c[..], "{what}: C");
    assert_eq!(
        direct.input_assignment, replayed.input_assignment,
        "{what}: inputs"
    );
    assert!(
        direct.aux_assignment[..] == replayed.aux_assignment[..],
        "{what}: aux"
    );
    assert_eq!(
        direct.a_aux_density, replayed.a_aux_density,
        "{what}: A density"
    );
    assert_eq!(
        direct.b_input_density, replayed.b_input_density,
        "{what}: B input density"
    );
    assert_eq!(
        direct.b_aux_density, replayed.b_aux_density,
        "{what}: B aux density"
    );
}

#[test]
fn post_pce_equals_direct_synthesis() {
    let pce_dir = work_dir().join("pce-post");
    for proof in [
        RegisteredPoStProof::StackedDrgWinning2KiBV1,
        RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
    ] {
        let input = post_input(proof);
        let pce = post::pce(proof, &pce_dir).unwrap();
        let inst = post::instance::<SectorShape2KiB>(&input).unwrap();
        for (k, c) in inst.circuits.into_iter().enumerate() {
            // A witness generator gets the values sector by sector, in parallel (WinningPoSt:
            // 66 sectors): exactly the library's sequential values.
            let (mut parallel, mut library) = (Cs(Values::default()), Cs(Values::default()));
            c.clone().synthesize(&mut parallel).unwrap();
            c.0.clone().synthesize(&mut library).unwrap();
            assert_eq!(parallel.0.input_values(), library.0.input_values());
            assert_eq!(parallel.0.aux_values(), library.0.aux_values());
            assert!(!library.0.aux_values().is_empty());
            let direct = synthesize(c.clone()).unwrap();
            let replayed = pce.synthesize(c).unwrap();
            assert_same(&direct, &replayed, &format!("{proof:?} partition {k}"));
            // The public inputs the proof is checked with are the ones synthesis assigns.
            assert_eq!(direct.input_assignment[1..], inst.public_inputs[k][..]);
        }
        if proof == RegisteredPoStProof::StackedDrgWindow2KiBV1_2 {
            let part = post::partition_instance::<SectorShape2KiB>(&input, 0).unwrap();
            let c = part.circuits.into_iter().next().unwrap();
            assert_same(
                &synthesize(c.clone()).unwrap(),
                &pce.synthesize(c).unwrap(),
                "one WindowPoSt partition",
            );
        }
        // A second call finds the recording on disk (the same constraint system).
        let again = post::pce(proof, &pce_dir).unwrap();
        assert_eq!(again.digest(), pce.digest());
    }
}

#[test]
fn snapdeals_pce_equals_direct_synthesis() {
    let input = updated_sector();
    let pce = update::pce(input.proof, &work_dir().join("pce-update")).unwrap();
    // The update circuit is not Clone: built once for each synthesis.
    let circuits = || {
        update::instance::<SectorShape2KiB>(&input)
            .unwrap()
            .circuits
    };
    for (k, (direct, replayed)) in circuits().into_iter().zip(circuits()).enumerate() {
        assert_same(
            &synthesize(direct).unwrap(),
            &pce.synthesize(replayed).unwrap(),
            &format!("SnapDeals partition {k}"),
        );
    }
}
