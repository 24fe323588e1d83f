//! WinningPoSt and WindowPoSt on the sealed 2 KiB sector: parameters from Bellows' setup under
//! filecoin-proofs' names, a partition proof byte for byte equal to bellperson's create_proof
//! (same circuit, parameters, r and s), Bellows' proofs verified by filecoin-proofs'
//! verify_{winning,window}_post, and filecoin-proofs' own prover working from the same files.
//! These circuits are small (a few thousand constraints), so this runs in CI.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use bellows_core::groth16::prover::{prove_one_with_randomness, ProvingKey};
use bellows_core::groth16::Parameters;
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::filecoin_proofs_api::{
    post, PublicReplicaInfo, RegisteredPoStProof, SectorId,
};
use bellows_filecoin::post::{instance, partition_instance, prove_post, setup};
use bellows_filecoin::prove::prove_instance;
use bellows_filecoin::{params, Check, ProveConfig};
use blstrs::{Bls12, Scalar};
use common::{params_dir, post_input, sealed, RANDOMNESS};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn replicas(proof: RegisteredPoStProof) -> BTreeMap<SectorId, PublicReplicaInfo> {
    let s = sealed();
    BTreeMap::from([(
        SectorId::from(s.sector_id),
        PublicReplicaInfo::new(proof, s.c1.comm_r),
    )])
}

/// filecoin-proofs' verdict (an error for bytes it cannot even decode).
fn check(proof: RegisteredPoStProof, bytes: &[u8]) -> Result<bool, String> {
    let s = sealed();
    match proof {
        RegisteredPoStProof::StackedDrgWinning2KiBV1 => {
            post::verify_winning_post(&RANDOMNESS, bytes, &replicas(proof), s.prover_id)
        }
        _ => post::verify_window_post(
            &RANDOMNESS,
            &[(proof, bytes)],
            &replicas(proof),
            s.prover_id,
        ),
    }
    .map_err(|e| e.to_string())
}

fn verify(proof: RegisteredPoStProof, bytes: &[u8]) -> bool {
    check(proof, bytes).unwrap()
}

/// Both kinds in one test: they share the process's parameter folder.
#[test]
fn winning_and_window_post_2kib() {
    let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
    let dir = params_dir();
    for proof in [
        RegisteredPoStProof::StackedDrgWinning2KiBV1,
        RegisteredPoStProof::StackedDrgWindow2KiBV1_2,
    ] {
        let (paths, report) =
            setup(proof, &dir, &mut ChaCha20Rng::seed_from_u64(21), true).unwrap();
        eprintln!(
            "{proof:?}: 2^{} domain, {} inputs, setup {:?}",
            report.domain_size.trailing_zeros(),
            report.num_inputs,
            report.setup_time
        );
        let input = post_input(proof);

        // Bellows' proof through the pipeline, verified by filecoin-proofs.
        let mut cfg = ProveConfig::new(cpu.clone());
        cfg.pipeline.seed = Some(4);
        let out = prove_post(&input, &dir, &cfg).unwrap();
        assert_eq!(out.proof.len(), 192 * out.partitions.len());
        assert!(verify(proof, &out.proof), "{proof:?}: ours verifies");
        let mut bad = out.proof.clone();
        bad[100] ^= 4;
        assert!(
            !check(proof, &bad).unwrap_or(false),
            "a changed proof does not verify"
        );

        // Partition 0 byte for byte against bellperson, same circuit, parameters, r and s.
        let inst = instance::<SectorShape2KiB>(&input).unwrap();
        let (params, _) = params::load(&paths.params, Check::Batched, |_| Ok(())).unwrap();
        let params = Arc::new(params);
        let key = ProvingKey::new(params.clone(), cpu.clone()).unwrap();
        let (r, s) = (Scalar::from(123_456u64), -Scalar::from(99u64));
        let ours = prove_one_with_randomness(&key, inst.circuits[0].clone(), r, s).unwrap();
        let bp: bellperson::groth16::Parameters<Bls12> = Parameters::clone(&params).into();
        let theirs =
            bellperson::groth16::create_proof(inst.circuits[0].clone(), &bp, r, s).unwrap();
        let mut theirs_bytes = Vec::new();
        theirs.write(&mut theirs_bytes).unwrap();
        assert_eq!(ours.to_bytes().to_vec(), theirs_bytes, "{proof:?}");

        // filecoin-proofs' own prover reads the files Bellows wrote (WindowPoSt: the smaller
        // circuit, to keep CI short).
        if proof == RegisteredPoStProof::StackedDrgWindow2KiBV1_2 {
            let fp = post::generate_window_post_with_vanilla(
                proof,
                &RANDOMNESS,
                input.prover_id,
                &input.vanilla_proofs,
            )
            .unwrap();
            assert!(verify(proof, &fp[0].1));

            // One partition as Curio asks for it (generate_single_window_post_with_vanilla):
            // the same statement as partition 0 of the whole PoSt, and its proof is the
            // deadline's proof when the deadline has one partition.
            let part = partition_instance::<SectorShape2KiB>(&input, 0).unwrap();
            assert_eq!(part.public_inputs, inst.public_inputs);
            let single = prove_instance(
                "partition",
                &part.cache_id,
                part.circuits,
                &part.public_inputs,
                &dir,
                &cfg,
                None,
            )
            .unwrap();
            assert!(verify(proof, &single.proof), "a single partition verifies");
            // WindowPoSt V1_2 challenges do not depend on where the sector sits in the
            // deadline: partition 3's statement over the same sector is the same.
            let third = partition_instance::<SectorShape2KiB>(&input, 3).unwrap();
            assert_eq!(third.public_inputs, inst.public_inputs);
            let winning = post_input(RegisteredPoStProof::StackedDrgWinning2KiBV1);
            let e = partition_instance::<SectorShape2KiB>(&winning, 0)
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains("not a WindowPoSt"), "{e}");
        }
    }
}

/// Damaged vanilla proofs are refused before proving.
#[test]
fn bad_vanilla_proofs_are_named() {
    let proof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let mut input = post_input(proof);
    input.vanilla_proofs[0].truncate(100);
    let e = instance::<SectorShape2KiB>(&input)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("vanilla proof 0"), "{e}");
    let mut input = post_input(proof);
    input.randomness = [8u8; 32];
    let e = instance::<SectorShape2KiB>(&input)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("vanilla proofs"), "{e}");
    input.vanilla_proofs.clear();
    let e = instance::<SectorShape2KiB>(&input)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("at least one"), "{e}");
}
