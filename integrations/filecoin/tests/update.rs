//! SnapDeals (EmptySectorUpdate) on a 2 KiB sector: the sealed sector is updated with new data by
//! filecoin-proofs (encode_into, then its vanilla partition proofs), Bellows proves the update
//! from those vanilla proofs with parameters from its own setup, and filecoin-proofs'
//! verify_empty_sector_update_proof accepts the proof; partition 0 is byte for byte
//! bellperson's create_proof with the same r and s.
//!
//! OPT-IN (not in CI): the 2 KiB update circuit is a 2^21 domain; setup and three proofs take
//! minutes on 2 cores (docs/filecoin.md, "Tests"). Run it with
//! `BELLOWS_FILECOIN_E2E=1 cargo test --release -p bellows-filecoin --test update -- --nocapture`.

mod common;

use std::sync::Arc;

use bellows_core::groth16::prover::{prove_one_with_randomness, ProvingKey};
use bellows_core::groth16::Parameters;
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::filecoin_proofs_api::update;
use bellows_filecoin::update::{instance, prove_update, setup};
use bellows_filecoin::{params, Check, ProveConfig};
use blstrs::{Bls12, Scalar};
use common::{params_dir, updated_sector, UPDATE};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

#[test]
fn snapdeals_update_2kib() {
    if std::env::var_os("BELLOWS_FILECOIN_E2E").is_none() {
        eprintln!("skipped: the SnapDeals 2 KiB test is opt-in (BELLOWS_FILECOIN_E2E=1)");
        return;
    }
    let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
    let dir = params_dir();
    let input = updated_sector();
    let (paths, report) = setup(UPDATE, &dir, &mut ChaCha20Rng::seed_from_u64(31), true).unwrap();
    eprintln!(
        "{UPDATE:?}: 2^{} domain, {} inputs, {} partitions, setup {:?}",
        report.domain_size.trailing_zeros(),
        report.num_inputs,
        input.vanilla_proofs.len(),
        report.setup_time
    );
    let mut cfg = ProveConfig::new(cpu.clone());
    cfg.pipeline.seed = Some(8);
    let out = prove_update(&input, &dir, &cfg).unwrap();
    let verify = |bytes: &[u8]| {
        update::verify_empty_sector_update_proof(
            UPDATE,
            bytes,
            input.comm_r_old,
            input.comm_r_new,
            input.comm_d_new,
        )
    };
    assert!(
        verify(&out.proof).unwrap(),
        "filecoin-proofs verifies Bellows' update proof"
    );
    let mut bad = out.proof.clone();
    bad[10] ^= 1;
    assert!(!verify(&bad).unwrap_or(false));

    // Partition 0 byte for byte against bellperson (the circuit is not Clone: built twice).
    let circuit = || {
        instance::<SectorShape2KiB>(&input)
            .unwrap()
            .circuits
            .remove(0)
    };
    let (params, _) = params::load(&paths.params, Check::CurveOnly, |_| Ok(())).unwrap();
    let params = Arc::new(params);
    let key = ProvingKey::new(params.clone(), cpu).unwrap();
    let (r, s) = (Scalar::from(5u64), Scalar::from(6u64));
    let ours = prove_one_with_randomness(&key, circuit(), r, s).unwrap();
    let bp: bellperson::groth16::Parameters<Bls12> = Parameters::clone(&params).into();
    let theirs = bellperson::groth16::create_proof(circuit(), &bp, r, s).unwrap();
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(ours.to_bytes().to_vec(), theirs_bytes);

    // Vanilla proofs that do not fit the commitments are refused before proving.
    let mut wrong = input.clone();
    wrong.comm_d_new = input.comm_r_new;
    let e = instance::<SectorShape2KiB>(&wrong)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("vanilla"), "{e}");
    let mut short = input;
    short.vanilla_proofs.clear();
    let e = instance::<SectorShape2KiB>(&short)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("partitions"), "{e}");
}
