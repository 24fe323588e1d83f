//! Proof interop with bellperson 0.27: the same parameters and r, s give byte-identical proofs;
//! each side verifies the other's proofs; plus seeded determinism, batch verification and the
//! unsatisfied-circuit and wrong-shape errors.

use crate::common;

use std::sync::Arc;

use bellows_core::{
    groth16::{
        prover::{self, ProvingKey},
        synthesis::{synthesize, synthesize_batch},
        verifier::{prepare_verifying_key, verify_proof, verify_proofs_batch},
        Parameters, Proof,
    },
    rng::ProofRng,
    Backend, Error,
};
use blstrs::{Bls12, Scalar};
use common::ChainCircuit;
use ff::Field;
use rand::SeedableRng;

type BpParams = bellperson::groth16::Parameters<Bls12>;

fn bellperson_params(rounds: usize, seed: u64) -> BpParams {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    bellperson::groth16::generate_random_parameters::<Bls12, _, _>(
        ChainCircuit::blank(rounds),
        &mut rng,
    )
    .expect("bellperson setup")
}

/// Our parameters from bellperson's, through the crate's own conversion
/// (`groth16::bellperson_compat`, feature `bellperson`).
fn ours_from(bp: &BpParams) -> Arc<Parameters> {
    Arc::new(Parameters::from(bp))
}

fn cpu() -> Arc<dyn Backend> {
    Arc::new(bellows_cpu::CpuBackend::new())
}

fn bp_proof_bytes(p: &bellperson::groth16::Proof<Bls12>) -> Vec<u8> {
    let mut v = Vec::new();
    p.write(&mut v).unwrap();
    v
}

#[test]
fn same_r_s_gives_bellperson_bytes_and_both_verify() {
    let rounds = 40;
    let bp = bellperson_params(rounds, 1);
    let key = ProvingKey::new(ours_from(&bp), cpu()).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
    for x0 in [3u64, 11] {
        let circuit = ChainCircuit::new(x0, rounds);
        let inputs = circuit.public_inputs();
        let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
        let ours = common::prove_with(&key, circuit.clone(), r, s);
        let theirs = bellperson::groth16::create_proof(circuit, &bp, r, s).unwrap();
        assert_eq!(
            ours.to_bytes().to_vec(),
            bp_proof_bytes(&theirs),
            "x0 = {x0}"
        );

        // bellperson verifies ours, we verify bellperson's.
        let bp_pvk = bellperson::groth16::prepare_verifying_key(&bp.vk);
        let ours_as_bp = bellperson::groth16::Proof::<Bls12>::read(&ours.to_bytes()[..]).unwrap();
        assert!(bellperson::groth16::verify_proof(&bp_pvk, &ours_as_bp, &inputs).unwrap());
        let pvk = prepare_verifying_key(&key.params().vk);
        let theirs_as_ours = Proof::from_bytes(&bp_proof_bytes(&theirs)).unwrap();
        assert!(verify_proof(&pvk, &theirs_as_ours, &inputs).unwrap());
        // A wrong public input is rejected by both.
        let mut wrong = inputs.clone();
        wrong[0] += Scalar::ONE;
        assert!(!verify_proof(&pvk, &ours, &wrong).unwrap());
        assert!(!bellperson::groth16::verify_proof(&bp_pvk, &ours_as_bp, &wrong).unwrap());
    }
}

#[test]
fn seeded_proofs_are_byte_identical_and_batches_verify() {
    let rounds = 20;
    let bp = bellperson_params(rounds, 3);
    let key = ProvingKey::new(ours_from(&bp), cpu()).unwrap();
    let circuits: Vec<_> = (1..=3u64).map(|x| ChainCircuit::new(x, rounds)).collect();
    let inputs: Vec<Vec<Scalar>> = circuits.iter().map(|c| c.public_inputs()).collect();
    let p1 = prover::prove(&key, circuits.clone(), &mut ProofRng::seeded(9)).unwrap();
    let p2 = prover::prove(&key, circuits.clone(), &mut ProofRng::seeded(9)).unwrap();
    let p3 = prover::prove(&key, circuits.clone(), &mut ProofRng::seeded(10)).unwrap();
    assert_eq!(p1, p2);
    assert_ne!(p1, p3);
    let pvk = prepare_verifying_key(&key.params().vk);
    let mut rng = ProofRng::seeded(1);
    assert!(verify_proofs_batch(&pvk, &p1, &inputs, &mut rng).unwrap());
    assert!(verify_proofs_batch(&pvk, &p3, &inputs, &mut rng).unwrap());
    // One bad proof spoils the batch.
    let mut bad = p1.clone();
    bad[1].c = bad[0].c;
    assert!(!verify_proofs_batch(&pvk, &bad, &inputs, &mut rng).unwrap());
    // Mismatched counts are an error, not a verdict.
    assert!(verify_proofs_batch(&pvk, &p1, &inputs[..2], &mut rng).is_err());
    // A batch of one proof through start/finalize equals the same proof alone, given the same r, s.
    let syn = synthesize_batch(circuits.clone()).unwrap();
    let (r, s) = prover::draw_randomness(3, &mut ProofRng::seeded(9));
    let split = prover::start_with_randomness(&key, syn, r.clone(), s.clone())
        .unwrap()
        .finalize()
        .unwrap();
    assert_eq!(split, p1);
    let single = common::prove_with(&key, circuits[1].clone(), r[1], s[1]);
    assert_eq!(single, p1[1]);
}

#[test]
fn unsatisfied_circuit_is_a_clear_error() {
    let mut c = ChainCircuit::new(5, 10);
    c.corrupt = true;
    match synthesize(c) {
        Err(Error::Unsatisfied(msg)) => assert!(msg.contains("constraint"), "{msg}"),
        other => panic!("expected Unsatisfied, got {other:?}"),
    }
    // A circuit built without a witness cannot be proved.
    match synthesize(ChainCircuit::blank(3)) {
        Err(Error::Synthesis(msg)) => assert!(msg.contains("assignment is missing"), "{msg}"),
        other => panic!("expected Synthesis error, got {other:?}"),
    }
}

#[test]
fn wrong_shape_and_wrong_inputs_are_errors() {
    let bp = bellperson_params(10, 4);
    let key = ProvingKey::new(ours_from(&bp), cpu()).unwrap();
    let other = synthesize(ChainCircuit::new(2, 30)).unwrap();
    let err = prover::start(&key, vec![other], &mut ProofRng::seeded(1)).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(
        err.to_string().contains("does not match the parameters"),
        "{err}"
    );

    let c = ChainCircuit::new(2, 10);
    let proof = prover::prove(&key, vec![c.clone()], &mut ProofRng::seeded(1))
        .unwrap()
        .remove(0);
    let pvk = prepare_verifying_key(&key.params().vk);
    let err = verify_proof(&pvk, &proof, &c.public_inputs()[..1]).unwrap_err();
    assert!(
        err.to_string()
            .contains("expects 2 public inputs, 1 were given"),
        "{err}"
    );
    assert!(verify_proof(&pvk, &proof, &c.public_inputs()).unwrap());
}
