//! End to end on a real 2 KiB sector: seal with filecoin-proofs on the CPU, make the circuit's
//! parameters with Bellows' setup under filecoin-proofs' names, prove C2 with Bellows, verify
//! with filecoin-proofs' verify_seal; the error cases; and partition 0 byte for byte against
//! bellperson's create_proof with the same r and s.
//!
//! OPT-IN (not in CI): the 2 KiB PoRep circuit is a 2^22 domain with 2.69 M variables, and this
//! test runs a setup, two C2 proofs and one bellperson proof on it. Measured on the 2-core CI
//! machine: see docs/filecoin.md ("Tests"). Run it with
//! `BELLOWS_FILECOIN_E2E=1 cargo test --release -p bellows-filecoin --test porep_e2e -- --nocapture`.

mod common;

use std::sync::Arc;
use std::time::Instant;

use bellows_core::groth16::prover::{prove_one_with_randomness, ProvingKey};
use bellows_core::groth16::Parameters;
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::testing::{c1_json, lotus_bench_json};
use bellows_filecoin::{parse_c1, porep, prove_c2, prover_id_from_actor, verify_seal, ProveConfig};
use blstrs::{Bls12, Scalar};
use common::{params_dir, sealed, MINER, PROOF, SECTOR};
use ff::Field;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn enabled() -> bool {
    if std::env::var_os("BELLOWS_FILECOIN_E2E").is_some() {
        return true;
    }
    eprintln!(
        "skipped: the 2 KiB PoRep end-to-end test is opt-in (BELLOWS_FILECOIN_E2E=1; minutes \
         on 2 cores, see docs/filecoin.md)"
    );
    false
}

#[test]
fn porep_2kib_end_to_end() {
    if !enabled() {
        return;
    }
    let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
    let s = sealed();
    let dir = params_dir();
    let t = Instant::now();
    let (paths, report) =
        porep::setup(PROOF, &dir, &mut ChaCha20Rng::seed_from_u64(11), true).unwrap();
    eprintln!(
        "setup: {:.1} s (+ write {:.1} s), 2^{} domain, {} inputs, {} aux; files {}",
        report.setup_time.as_secs_f64(),
        report.write_time.as_secs_f64(),
        report.domain_size.trailing_zeros(),
        report.num_inputs,
        report.num_aux,
        paths.params.display()
    );
    assert!(paths.params.exists() && paths.vk.exists() && paths.meta.exists());
    eprintln!("setup total {:.1} s", t.elapsed().as_secs_f64());

    // C2 from the lotus-bench form, verified by filecoin-proofs.
    let c1 = parse_c1(&lotus_bench_json(&s.c1, SECTOR), "c1").unwrap();
    let mut cfg = ProveConfig::new(cpu.clone());
    cfg.pipeline.seed = Some(1);
    let out = prove_c2(&c1, &dir, &cfg).unwrap();
    eprintln!(
        "c2: load {:.1} s, prove {:.1} s, self-check {:?}",
        out.load.elapsed.as_secs_f64(),
        out.prove_time.as_secs_f64(),
        out.verify_time
    );
    assert_eq!(out.proof.len(), 192);
    let prover = prover_id_from_actor(MINER);
    assert!(verify_seal(&c1, prover, SECTOR, &out.proof).unwrap());

    // Deterministic with a seed (the second load checks curves only: same file, made here).
    cfg.check = bellows_filecoin::Check::CurveOnly;
    let again = prove_c2(&c1, &dir, &cfg).unwrap();
    assert_eq!(again.proof, out.proof);

    // Wrong sector, wrong prover, a flipped byte, a short proof.
    assert!(!verify_seal(&c1, prover, SECTOR + 1, &out.proof).unwrap());
    assert!(!verify_seal(&c1, prover_id_from_actor(MINER + 1), SECTOR, &out.proof).unwrap());
    for at in [0usize, 50, 150, 191] {
        let mut bad = out.proof.clone();
        bad[at] ^= 0x01;
        // A changed byte either fails to decode (filecoin-proofs' error) or does not verify.
        match verify_seal(&c1, prover, SECTOR, &bad) {
            Ok(valid) => assert!(!valid, "flipped byte {at} verified"),
            Err(e) => assert!(e.to_string().contains("verify_seal"), "{e}"),
        }
    }
    let e = verify_seal(&c1, prover, SECTOR, &out.proof[..191]).unwrap_err();
    assert!(e.to_string().contains("191 bytes"), "{e}");

    // A parameters file that does not belong to the circuit, under the right name.
    let wrong_dir = common::work_dir().join("wrong-params");
    std::fs::create_dir_all(&wrong_dir).unwrap();
    let small = bellows_core::groth16::setup::generate_random_parameters(
        bellows_core::circuits::synthetic::SyntheticCircuit::new(10, 50).unwrap(),
        &mut ChaCha20Rng::seed_from_u64(3),
    )
    .unwrap();
    let wrong = porep::cache_paths(PROOF, &wrong_dir).unwrap();
    bellows_core::groth16::io::write_parameters_file(&small, &wrong.params).unwrap();
    let e = prove_c2(&c1, &wrong_dir, &cfg).unwrap_err().to_string();
    assert!(e.contains("does not belong to this proof type"), "{e}");

    // Partition 0 byte for byte against bellperson's create_proof, same parameters, r and s.
    let inst =
        porep::instance::<SectorShape2KiB>(&parse_c1(&c1_json(&s.c1), "c1").unwrap()).unwrap();
    let (params, _) =
        porep::load_params(PROOF, &dir, bellows_filecoin::Check::CurveOnly, 39).unwrap();
    let params = Arc::new(params);
    let key = ProvingKey::new(params.clone(), cpu).unwrap();
    let (r, s_) = (
        Scalar::random(&mut ChaCha20Rng::seed_from_u64(5)),
        Scalar::from(77u64),
    );
    let t = Instant::now();
    let ours = prove_one_with_randomness(&key, inst.circuits[0].clone(), r, s_).unwrap();
    eprintln!(
        "bellows partition proof: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let bp: bellperson::groth16::Parameters<Bls12> = Parameters::clone(&params).into();
    let t = Instant::now();
    let theirs = bellperson::groth16::create_proof(inst.circuits[0].clone(), &bp, r, s_).unwrap();
    eprintln!(
        "bellperson create_proof: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(ours.to_bytes().to_vec(), theirs_bytes);
    // And that proof verifies through filecoin-proofs too.
    assert!(verify_seal(&c1, prover, SECTOR, &theirs_bytes).unwrap());
}
