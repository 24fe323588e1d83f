//! `bellows porep` (feature `filecoin`): the commands on a real 2 KiB C1 output, every error a
//! clear message before any proving, and parameter loads with each check. The full C2 (a 2^22
//! circuit) runs only when BELLOWS_FILECOIN_E2E is set (minutes; see docs/filecoin.md).

#![cfg(feature = "filecoin")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::testing::{c1_json, init_filecoin_env, lotus_bench_json, seal_sector};
use common::daemon::Daemon;
use common::{argv, dir, refused, run, s};
use rand_core::SeedableRng;

const PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;

/// (lotus-bench C1 file, bare C1 file), from one 2 KiB sector sealed per process.
fn c1_files() -> &'static (PathBuf, PathBuf) {
    static FILES: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    FILES.get_or_init(|| {
        let d = dir("porep", "sector");
        init_filecoin_env(&d.join("params"), &d);
        let sealed = seal_sector(
            PROOF,
            &d,
            bellows_filecoin::prover_id_from_actor(1000),
            7,
            [3; 32],
            [5; 32],
            &mut rand_chacha::ChaCha20Rng::seed_from_u64(1),
        )
        .unwrap();
        let lotus = d.join("c1-lotus.json");
        let bare = d.join("c1.json");
        std::fs::write(&lotus, lotus_bench_json(&sealed.c1, 7)).unwrap();
        std::fs::write(&bare, c1_json(&sealed.c1)).unwrap();
        (lotus, bare)
    })
}

/// A fresh folder `porep/NAME` for a C2 that fails: the folder, an empty parameter folder in
/// it, and where the proof would go.
fn c2_folders(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let d = dir("porep", name);
    let params = d.join("params");
    std::fs::create_dir_all(&params).unwrap();
    let out = d.join("s.proof");
    (d, params, out)
}

#[test]
fn info_names_the_sector_and_the_parameter_files() {
    let (lotus, _) = c1_files();
    let params = dir("porep", "info-params");
    let (out, _) = run(
        &argv(
            "porep info --c1 {} --params-dir {}",
            &[s(lotus), s(&params)],
        ),
        0,
    );
    for want in [
        "StackedDrg2KiBV1_1",
        "2048 bytes",
        "sector number   7",
        "partitions      1",
        "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-",
        "(missing)",
        "parameters.json",
    ] {
        assert!(out.contains(want), "{want:?} in\n{out}");
    }
}

#[test]
fn c2_errors_come_before_any_proving() {
    let (lotus, bare) = c1_files();
    let (d, params, out) = c2_folders("c2-errors");
    let c2 = "porep c2 --c1 {} --params-dir {} --out {}";
    // Parameters missing: named by filecoin-proofs' file name.
    let (_, err) = run(&argv(c2, &[s(lotus), s(&params), s(&out)]), 1);
    assert!(
        err.contains("no parameters for StackedDrg2KiBV1_1"),
        "{err}"
    );
    assert!(err.contains(".params"), "{err}");
    assert!(!out.exists(), "nothing written on failure");
    // A truncated C1 file.
    let bytes = std::fs::read(bare).unwrap();
    let cut = d.join("cut.json");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    refused(c2, &[s(&cut), s(&params), s(&out)], 1, "truncated");
    // The output is an input.
    let c2_bare = |out: &Path, code: i32, want: &str| {
        refused(c2, &[s(bare), s(&params), s(out)], code, want);
    };
    c2_bare(bare, 2, "refusing to overwrite an input");
    // An existing output without --force.
    std::fs::write(&out, b"old").unwrap();
    c2_bare(&out, 1, "--force");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    // An unknown check.
    let line = format!("{c2} --check none");
    refused(&line, &[s(bare), s(&params), s(&out)], 2, "--check");
}

#[test]
fn verify_and_setup_usage_errors() {
    let (lotus, bare) = c1_files();
    let d = dir("porep", "usage");
    let proof = d.join("p");
    std::fs::write(&proof, [0u8; 192]).unwrap();
    let verify = |c1: &Path, rest: &str, code: i32, want: &str| {
        let line = format!("porep verify --c1 {{}} --proof {{}} --params-dir {{}} {rest}");
        refused(&line, &[s(c1), s(&proof), s(&d)], code, want);
    };
    // Neither --prover-id nor --miner.
    verify(lotus, "", 2, "");
    // The bare form has no SectorNum: --sector-id is needed.
    verify(bare, "--miner 1000", 2, "--sector-id");
    // A prover id that is not 32 bytes of hex.
    verify(lotus, "--prover-id 12zz", 2, "--prover-id");
    // No verifying key in the folder.
    let want = "no verifying key for StackedDrg2KiBV1_1";
    verify(lotus, "--miner 1000", 1, want);
    // Setup: unknown and unsupported proof types.
    let setup = "porep setup --proof {} --params-dir {}";
    refused(setup, &["Bogus", s(&d)], 2, "not a seal proof type");
    let ni = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep";
    refused(setup, &[ni, s(&d)], 1, "non-interactive");
}

/// Points in the parameters file at `path`, from its length fields.
fn points(path: &std::path::Path) -> u64 {
    let sh = bellows_core::groth16::io::ParamsFile::open(path)
        .unwrap()
        .shape();
    (sh.domain_size - 1 + sh.num_inputs + sh.num_aux + sh.a_len + 2 * sh.b_len) as u64
}

/// `porep load` with each check on a small parameters file; the digest check against a
/// manifest that lists the file, one that lists another digest, and none.
#[test]
fn load_with_each_check() {
    let d = dir("porep", "load");
    let name = "v28-test-circuit.params";
    let params = d.join(name);
    let setup = "setup --circuit synthetic --log-size 12 --seed 1 --out {}";
    run(&argv(setup, &[s(&params)]), 0);
    let load = "porep load --params {} --check";
    for c in ["batched", "full", "curve-only"] {
        let (out, _) = run(&argv(&format!("{load} {c}"), &[s(&params)]), 0);
        assert!(
            out.contains(&format!("check {c}")) && out.contains("points/s"),
            "{out}"
        );
    }
    // Onto a backend, as a resident key: the same points; an unknown backend is refused.
    let (out, _) = run(
        &argv(
            "porep load --params {} --check curve-only --onto cpu --json",
            &[s(&params)],
        ),
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["onto"].as_str(), Some("cpu"));
    assert_eq!(v["points"].as_u64(), Some(points(&params)));
    refused(
        "porep load --params {} --onto nosuch",
        &[s(&params)],
        1,
        "nosuch",
    );
    let load = "porep load --params {} --check digest";
    let digest = bellows_filecoin::params::filecoin_digest(&std::fs::read(&params).unwrap());
    let manifest = write_manifest(&d, "good.json", name, &digest);
    let line = format!("{load} --manifest {{}} --json");
    let (out, _) = run(&argv(&line, &[s(&params), s(&manifest)]), 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["digest"], digest.as_str());
    // The default, auto: the digest check for a file the manifest lists, batched for others.
    let auto = "porep load --params {} --manifest {} --json";
    let (out, _) = run(&argv(auto, &[s(&params), s(&manifest)]), 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["check"].as_str(), v["digest"].as_str()),
        (Some("digest"), Some(digest.as_str()))
    );
    let (out, _) = run(&argv("porep load --params {} --json", &[s(&params)]), 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["check"].as_str(), v["digest"].as_str()),
        (Some("batched"), None)
    );
    let bad = write_manifest(&d, "bad.json", name, &"0".repeat(32));
    // A listed file whose digest differs (test parameters under Filecoin's names) is loaded
    // again with the subgroup check under the default; refused under `digest` (below).
    let (out, err) = run(&argv(auto, &[s(&params), s(&bad)]), 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["check"].as_str(), v["digest"].as_str()),
        (Some("batched"), None)
    );
    assert!(err.contains("loading it again"), "{err}");
    // With a verifying key beside it that the manifest lists with another digest, the file is
    // known not to be the published one before any hashing: batched at once.
    std::fs::write(d.join("v28-test-circuit.vk"), b"not the published key").unwrap();
    let both = d.join("both.json");
    let entry =
        |digest: &str| serde_json::json!({ "cid": "Qm", "digest": digest, "sector_size": 2048 });
    let v = serde_json::json!({ name: entry(&"0".repeat(32)), "v28-test-circuit.vk": entry(&"1".repeat(32)) });
    std::fs::write(&both, v.to_string()).unwrap();
    let (out, err) = run(&argv(auto, &[s(&params), s(&both)]), 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["check"].as_str(), Some("batched"));
    assert!(!err.contains("loading it again"), "{err}");
    let line = format!("{load} --manifest {{}}");
    refused(&line, &[s(&params), s(&bad)], 1, "does not match");
    refused(load, &[s(&params)], 1, "lists no file named");
}

fn write_manifest(d: &Path, file: &str, name: &str, digest: &str) -> PathBuf {
    let p = d.join(file);
    let v = serde_json::json!({ name: { "cid": "Qm", "digest": digest, "sector_size": 2048 } });
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

/// The whole route through the command line: setup, c2, verify (and a wrong sector refused).
/// OPT-IN: BELLOWS_FILECOIN_E2E=1 (a 2^22 circuit: minutes).
#[test]
fn setup_c2_verify_end_to_end() {
    if std::env::var_os("BELLOWS_FILECOIN_E2E").is_none() {
        eprintln!("skipped: set BELLOWS_FILECOIN_E2E=1 for the 2 KiB C2 end to end");
        return;
    }
    let (lotus, _) = c1_files();
    let d = dir("porep", "e2e");
    let params = d.join("params");
    let setup = "porep setup --proof StackedDrg2KiBV1_1 --params-dir {}";
    run(&argv(setup, &[s(&params)]), 0);
    let out = d.join("s.proof");
    // Pre-compiled synthesis (the default), its recording kept in the test's folder.
    let pce = d.join("pce");
    let c2 = "porep c2 --c1 {} --params-dir {} --pce-dir {} --out {}";
    run(&argv(c2, &[s(lotus), s(&params), s(&pce), s(&out)]), 0);
    assert!(std::fs::read_dir(&pce).unwrap().count() > 0, "recorded");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 192);
    let verify = "porep verify --c1 {} --proof {} --params-dir {} --miner 1000";
    let values = [s(lotus), s(&out), s(&params)];
    let (stdout, _) = run(&argv(verify, &values), 0);
    assert_eq!(stdout.trim(), "valid");
    refused(&format!("{verify} --sector-id 8"), &values, 1, "rejects");
}

/// `porep c2 --daemon`: the C1 file is checked before anything is sent; the daemon (built with
/// the feature, as this binary is) refuses a job whose parameters are missing, naming the file,
/// and writes nothing; `--submit` needs `--daemon`. (The proof through a daemon is
/// bellows-serve's tests/porep.rs.)
#[test]
fn c2_on_a_daemon_errors_are_clear_and_nothing_is_written() {
    let (lotus, bare) = c1_files();
    let (d, params, out) = c2_folders("c2-daemon");
    let daemon = Daemon::start("127.0.0.1:0", &d.join("state"), &params, &[]);
    let c2 = |c1: &Path, extra: &str, want: &str| {
        let line = format!("porep c2 --daemon {{}} --c1 {{}} --params-dir {{}} --out {{}} {extra}");
        refused(&line, &[&daemon.addr, s(c1), s(&params), s(&out)], 1, want);
    };
    // The daemon refuses it: no parameters in its folder, named.
    c2(lotus, "", "no parameters for StackedDrg2KiBV1_1");
    c2(bare, "--submit", ".params");
    // A truncated C1 file is named before anything is sent.
    let bytes = std::fs::read(bare).unwrap();
    let cut = d.join("cut.json");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    c2(&cut, "", "truncated");
    assert!(!out.exists(), "nothing written on failure");
    // --submit needs --daemon.
    let line = "porep c2 --submit --c1 {} --params-dir {} --out {}";
    refused(line, &[s(bare), s(&params), s(&out)], 2, "--daemon");
    drop(daemon);
}

/// `porep synth-c1`: a synthetic 2 KiB output that `porep info` reads, the same bytes for the
/// same seed, an existing file kept without --force, the bare form with --raw, and sizes that
/// are not Filecoin's refused with the allowed ones named.
#[test]
fn synth_c1_makes_a_c1_file_that_info_reads() {
    let d = dir("porep", "synth-c1");
    let out = d.join("synth.json");
    let synth = |out: &Path, extra: &str, code: i32| {
        let line =
            format!("porep synth-c1 --sector-size 2KiB --seed 3 --sector 9 --out {{}} {extra}");
        run(&argv(&line, &[s(out)]), code)
    };
    let info = |c1: &Path| {
        run(
            &argv("porep info --c1 {} --params-dir {}", &[s(c1), s(&d)]),
            0,
        )
        .0
    };
    let (_, err) = synth(&out, "", 0);
    assert!(
        err.contains("SYNTHETIC") && err.contains("nothing about stored data"),
        "{err}"
    );
    let info_out = info(&out);
    for want in [
        "StackedDrg2KiBV1_1",
        "2048 bytes",
        "sector number   9",
        "partitions      1",
    ] {
        assert!(info_out.contains(want), "{want:?} in\n{info_out}");
    }
    let first = std::fs::read(&out).unwrap();
    // An existing file is kept without --force; with it, the same seed gives the same bytes.
    let (_, err) = synth(&out, "", 1);
    assert!(err.contains("--force"), "{err}");
    synth(&out, "--force", 0);
    assert_eq!(std::fs::read(&out).unwrap(), first);
    // --raw: the bare SealCommitPhase1Output (no sector number in it).
    let raw = d.join("raw.json");
    synth(&raw, "--raw --miner 1234", 0);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&raw).unwrap()).unwrap();
    assert_eq!(v["registered_proof"], "StackedDrg2KiBV1_1");
    let raw_info = info(&raw);
    assert!(!raw_info.contains("sector number"), "{raw_info}");
    // Not a Filecoin sector size, or not a size at all: usage errors, nothing written.
    let bad = d.join("bad.json");
    for size in ["4KiB", "32GB", "lots"] {
        let line = "porep synth-c1 --sector-size {} --out {}";
        let (_, err) = run(&argv(line, &[size, s(&bad)]), 2);
        assert!(err.contains("--sector-size"), "{err}");
        if size != "lots" {
            assert!(err.contains("2KiB, 8MiB, 512MiB, 32GiB and 64GiB"), "{err}");
        }
        assert!(!bad.exists());
    }
}
