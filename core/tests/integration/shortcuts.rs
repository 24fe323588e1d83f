//! The one-call shortcuts (prove one circuit, prove with explicit r and s, a proving key from
//! parameters by value, `BackendConfig`'s builder) give exactly what the split API gives.

use crate::common;

use std::sync::Arc;

use bellows_core::{
    groth16::{
        prepare_verifying_key,
        prover::{self, ProvingKey},
        setup::generate_random_parameters,
        synthesis::synthesize,
        verify_proof, Parameters,
    },
    registry,
    rng::ProofRng,
    Backend, BackendConfig, Error,
};
use blstrs::Scalar;
use common::ChainCircuit;
use ff::Field;

const ROUNDS: usize = 12;

fn params() -> Parameters {
    generate_random_parameters(ChainCircuit::blank(ROUNDS), &mut ProofRng::seeded(5)).unwrap()
}

fn cpu() -> Arc<dyn Backend> {
    Arc::new(bellows_cpu::CpuBackend::new())
}

#[test]
fn one_circuit_in_one_call() {
    let key = ProvingKey::from_parameters(params(), cpu()).unwrap();
    let c = ChainCircuit::new(4, ROUNDS);
    let one = prover::prove_one(&key, c.clone(), &mut ProofRng::seeded(3)).unwrap();
    let batch = prover::prove(&key, vec![c.clone()], &mut ProofRng::seeded(3)).unwrap();
    assert_eq!(batch, vec![one]);
    let pvk = prepare_verifying_key(&key.params().vk);
    assert!(verify_proof(&pvk, &one, &c.public_inputs()).unwrap());
    // Another seed, another proof of the same statement.
    let other = prover::prove_one(&key, c, &mut ProofRng::seeded(4)).unwrap();
    assert_ne!(other, one);
}

#[test]
fn explicit_r_and_s_in_one_call() {
    let key = ProvingKey::from_parameters(params(), cpu()).unwrap();
    let cs: Vec<_> = [2u64, 9].map(|x| ChainCircuit::new(x, ROUNDS)).to_vec();
    let (r, s) = prover::draw_randomness(2, &mut ProofRng::seeded(8));
    let split = prover::start_with_randomness(
        &key,
        cs.iter().map(|c| synthesize(c.clone()).unwrap()).collect(),
        r.clone(),
        s.clone(),
    )
    .unwrap()
    .finalize()
    .unwrap();
    let batch = prover::prove_with_randomness(&key, cs.clone(), r.clone(), s.clone()).unwrap();
    assert_eq!(batch, split);
    let one = prover::prove_one_with_randomness(&key, cs[1].clone(), r[1], s[1]).unwrap();
    assert_eq!(one, split[1]);
    // r and s do change the proof.
    let moved = prover::prove_one_with_randomness(&key, cs[1].clone(), r[1] + Scalar::ONE, s[1]);
    assert_ne!(moved.unwrap(), one);
}

#[test]
fn counts_are_checked_before_synthesis_and_failures_are_named() {
    let key = ProvingKey::from_parameters(params(), cpu()).unwrap();
    // Blank circuits would fail synthesis: the count error comes first.
    let err = prover::prove_with_randomness(
        &key,
        vec![ChainCircuit::blank(ROUNDS), ChainCircuit::blank(ROUNDS)],
        vec![Scalar::ONE],
        vec![Scalar::ONE, Scalar::ONE],
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(
        err.to_string().contains("2 circuits but 1 r and 2 s"),
        "{err}"
    );

    let mut bad = ChainCircuit::new(5, ROUNDS);
    bad.corrupt = true;
    for err in [
        prover::prove_one(&key, bad.clone(), &mut ProofRng::seeded(1)).unwrap_err(),
        prover::prove_one_with_randomness(&key, bad.clone(), Scalar::ONE, Scalar::ONE).unwrap_err(),
    ] {
        let msg = err.to_string();
        assert!(matches!(err, Error::Unsatisfied(_)), "{msg}");
        assert!(msg.contains("\"add6\""), "{msg}");
    }
    let err = prover::prove_with_randomness(
        &key,
        vec![ChainCircuit::new(5, ROUNDS), bad],
        vec![Scalar::ONE; 2],
        vec![Scalar::ONE; 2],
    )
    .unwrap_err();
    assert!(err.to_string().contains("circuit 1 of the batch"), "{err}");
    assert!(err.to_string().contains("\"add6\""), "{err}");
}

#[test]
fn proving_key_by_value_checks_like_new() {
    let mut p = params();
    p.vk.delta_g1 = blstrs::G1Affine::default();
    // blstrs' default affine point is the identity: subverted parameters.
    assert!(matches!(
        ProvingKey::from_parameters(p, cpu()),
        Err(Error::InvalidPoint { .. })
    ));
}

#[test]
fn backend_config_builder() {
    assert_eq!(BackendConfig::new(), BackendConfig::default());
    let cfg = BackendConfig::new()
        .with_device(2)
        .with_threads(3)
        .with_memory_budget(5 << 20);
    assert_eq!(
        (cfg.device, cfg.threads, cfg.memory_budget),
        (2, Some(3), Some(5 << 20))
    );
    let b = registry::create_builtin("cpu", &BackendConfig::new().with_threads(2)).unwrap();
    assert_eq!(b.info().name, "cpu");
    assert!(matches!(
        registry::create_builtin("cpu", &BackendConfig::new().with_threads(0)),
        Err(Error::InvalidInput(_))
    ));
}
