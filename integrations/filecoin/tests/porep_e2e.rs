//! End to end on a real 2 KiB sector, in CI: seal with filecoin-proofs on the CPU, make the
//! circuit's parameters with Bellows' setup under filecoin-proofs' names, prove C2 with Bellows
//! through the pipeline, verify with filecoin-proofs' verify_seal; the proof equals bellperson's
//! create_proof byte for byte (same circuit, parameters, r and s); and the error cases.
//!
//! The 2 KiB PoRep circuit is a 2^22 domain with 2.69 M variables, so the expensive steps are
//! done once per test binary and shared ([`fixture`]): one C2 proof, then bellperson's proof of
//! the same partition. The setup is made once per target folder and shared with bellows-serve's
//! PoRep tests (`common::shared_porep_params`, under a file lock, in `CARGO_TARGET_TMPDIR`). The
//! parameters are loaded without subgroup checks (they were written by a test a moment earlier;
//! the checked loads are tested on small files in tests/post.rs and the CLI's tests). What it
//! costs on 2 cores is in docs/filecoin.md ("Tests"). Set `BELLOWS_FILECOIN_SKIP_E2E=1` to skip it locally; with `CI=true` it always
//! runs. The C1 error cases (truncated, another sector size or version) are in tests/c1.rs.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

use bellows_core::groth16::prover::draw_randomness;
use bellows_core::groth16::Parameters;
use bellows_core::pipeline::partition_rng;
use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
use bellows_filecoin::testing::{c1_json, lotus_bench_json};
use bellows_filecoin::{
    parse_c1, porep, prove_c2, prover_id_from_actor, verify_seal, C1Output, C2Output, Check,
    ProveConfig,
};
use blstrs::Bls12;
use common::{sealed, shared_params_dir, shared_porep_params, Phase, MINER, PROOF, SECTOR};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The pipeline's seed for the C2 proof (so r and s are known: see [`partition_rng`]).
const SEED: u64 = 1;

fn enabled() -> bool {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    if ci || std::env::var_os("BELLOWS_FILECOIN_SKIP_E2E").is_none() {
        return true;
    }
    eprintln!("skipped: BELLOWS_FILECOIN_SKIP_E2E is set (and CI is not)");
    false
}

/// What the tests share: the parameter folder (Bellows' setup), the C1 output (from the
/// lotus-bench form) and Bellows' C2 proof of it.
struct Fixture {
    dir: PathBuf,
    c1: C1Output,
    out: C2Output,
}

static FIXTURE: OnceLock<Fixture> = OnceLock::new();

/// Set when making the fixture failed, so that the tests waiting for it fail at once instead of
/// each running the setup again.
static FIXTURE_FAILED: AtomicBool = AtomicBool::new(false);

struct FailOnUnwind;

impl Drop for FailOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            FIXTURE_FAILED.store(true, Ordering::SeqCst);
        }
    }
}

/// Seals, sets up and proves once per test binary (the other tests wait for it).
fn fixture() -> &'static Fixture {
    FIXTURE.get_or_init(|| {
        assert!(
            !FIXTURE_FAILED.load(Ordering::SeqCst),
            "the shared setup and C2 failed in another test (see its panic)"
        );
        let _fail = FailOnUnwind;
        let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
        let p = Phase::start();
        // filecoin-proofs' parameter folder in this process: the shared one (set before
        // sealing, which would otherwise set a folder of this process's own).
        let dir = shared_params_dir();
        let s = sealed();
        p.lap("seal (add piece, PC1, PC2, C1)");
        assert_eq!(shared_porep_params(), dir);
        let paths = porep::cache_paths(PROOF, &dir).unwrap();
        p.lap("setup (or the shared parameters another test process made)");
        assert!(paths.params.exists() && paths.vk.exists() && paths.meta.exists());

        // C2 from the lotus-bench form, through the pipeline, with its self-check against the
        // .vk. The file was written by this process: curve checks only.
        let c1 = parse_c1(&lotus_bench_json(&s.c1, SECTOR), "c1").unwrap();
        let mut cfg = ProveConfig::new(cpu);
        cfg.pipeline.seed = Some(SEED);
        cfg.check = Check::CurveOnly;
        // Pre-compiled synthesis (as `bellows porep c2` by default): the proof must still equal
        // bellperson's byte for byte (partition_proof_equals_bellpersons) and verify.
        let pce_dir = std::env::temp_dir().join(format!("bellows-e2e-pce-{}", std::process::id()));
        cfg.pce_dir = Some(pce_dir.clone());
        let out = prove_c2(&c1, &dir, &cfg).unwrap();
        assert!(
            std::fs::read_dir(&pce_dir).unwrap().count() > 0,
            "the partition circuit's recording was saved"
        );
        let _ = std::fs::remove_dir_all(&pce_dir);
        p.lap(&format!(
            "C2 (circuits {:.1} s, load {:.1} s, key {:.1} s, prove {:.1} s, self-check {:.2} s)",
            out.circuits_time.as_secs_f64(),
            out.load.elapsed.as_secs_f64(),
            out.key_time.as_secs_f64(),
            out.prove_time.as_secs_f64(),
            out.verify_time.unwrap_or_default().as_secs_f64()
        ));
        Fixture { dir, c1, out }
    })
}

#[test]
fn c2_proof_is_verified_by_filecoin_proofs() {
    if !enabled() {
        return;
    }
    let f = fixture();
    assert_eq!(f.out.proof.len(), 192);
    assert_eq!(f.out.partitions.len(), 1);
    assert!(f.out.verify_time.is_some(), "the self-check ran");
    let t = Instant::now();
    assert!(verify_seal(&f.c1, prover_id_from_actor(MINER), SECTOR, &f.out.proof).unwrap());
    eprintln!("verify_seal: {:.2} s", t.elapsed().as_secs_f64());
}

#[test]
fn another_sector_or_prover_and_damaged_proofs_are_refused() {
    if !enabled() {
        return;
    }
    let f = fixture();
    let (c1, proof) = (&f.c1, &f.out.proof);
    let prover = prover_id_from_actor(MINER);
    assert!(!verify_seal(c1, prover, SECTOR + 1, proof).unwrap());
    assert!(!verify_seal(c1, prover_id_from_actor(MINER + 1), SECTOR, proof).unwrap());
    for at in [0usize, 50, 150, 191] {
        let mut bad = proof.clone();
        bad[at] ^= 0x01;
        // A changed byte either fails to decode (filecoin-proofs' error) or does not verify.
        match verify_seal(c1, prover, SECTOR, &bad) {
            Ok(valid) => assert!(!valid, "flipped byte {at} verified"),
            Err(e) => assert!(e.to_string().contains("verify_seal"), "{e}"),
        }
    }
    let e = verify_seal(c1, prover, SECTOR, &proof[..191]).unwrap_err();
    assert!(e.to_string().contains("191 bytes"), "{e}");
    let mut long = proof.clone();
    long.push(0);
    let e = verify_seal(c1, prover, SECTOR, &long).unwrap_err();
    assert!(e.to_string().contains("193 bytes"), "{e}");
}

/// The pipeline's proof equals bellperson's `create_proof` on the same partition circuit and
/// parameters with the r and s the pipeline drew for it; filecoin-proofs verifies both.
#[test]
fn partition_proof_equals_bellpersons() {
    if !enabled() {
        return;
    }
    let f = fixture();
    let p = Phase::start();
    let inst = porep::instance::<SectorShape2KiB>(&parse_c1(&c1_json(&sealed().c1), "c1").unwrap())
        .unwrap();
    let (params, _) = porep::load_params(PROOF, &f.dir, Check::CurveOnly, 39).unwrap();
    let bp: bellperson::groth16::Parameters<Bls12> = Parameters::into(params);
    p.lap("bellperson's parameters (load, convert)");
    let (r, s) = draw_randomness(1, &mut partition_rng(Some(SEED), 0, 0));
    let theirs =
        bellperson::groth16::create_proof(inst.circuits[0].clone(), &bp, r[0], s[0]).unwrap();
    p.lap("bellperson create_proof");
    let mut theirs_bytes = Vec::new();
    theirs.write(&mut theirs_bytes).unwrap();
    assert_eq!(f.out.proof, theirs_bytes);
}

/// A parameters file of another circuit under the right name is refused before decoding.
#[test]
fn parameters_of_another_circuit_are_refused() {
    if !enabled() {
        return;
    }
    let cpu = bellows_core::registry::resolve("cpu", &Default::default()).unwrap();
    let s = sealed();
    let wrong_dir = common::work_dir().join("wrong-params");
    std::fs::create_dir_all(&wrong_dir).unwrap();
    let small = bellows_core::groth16::setup::generate_random_parameters(
        bellows_core::circuits::synthetic::SyntheticCircuit::new(10, 50).unwrap(),
        &mut ChaCha20Rng::seed_from_u64(3),
    )
    .unwrap();
    let wrong = porep::cache_paths(PROOF, &wrong_dir).unwrap();
    bellows_core::groth16::io::write_parameters_file(&small, &wrong.params).unwrap();
    let c1 = parse_c1(&c1_json(&s.c1), "c1").unwrap();
    let e = prove_c2(&c1, &wrong_dir, &ProveConfig::new(cpu))
        .unwrap_err()
        .to_string();
    assert!(e.contains("does not belong to this proof type"), "{e}");
    // No parameters at all: the missing file is named.
    let empty = common::work_dir().join("no-params");
    let e = prove_c2(
        &c1,
        &empty,
        &ProveConfig::new(bellows_core::registry::resolve("cpu", &Default::default()).unwrap()),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            &wrong
                .params
                .file_name()
                .unwrap()
                .to_string_lossy()
                .to_string()
        ),
        "{e}"
    );
}
