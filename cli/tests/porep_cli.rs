//! `bellows porep` (feature `filecoin`): the commands on a real 2 KiB C1 output, every error a
//! clear message before any proving, and parameter loads with each check. The full C2 (a 2^22
//! circuit) runs only when BELLOWS_FILECOIN_E2E is set (minutes; see docs/filecoin.md).

#![cfg(feature = "filecoin")]

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::testing::{c1_json, init_filecoin_env, lotus_bench_json, seal_sector};
use common::{check, cmd, dir, s};
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

fn run(args: &[&str], code: i32) -> (String, String) {
    check(&cmd(args).output().unwrap(), args, code)
}

#[test]
fn info_names_the_sector_and_the_parameter_files() {
    let (lotus, _) = c1_files();
    let params = dir("porep", "info-params");
    let (out, _) = run(
        &[
            "porep",
            "info",
            "--c1",
            s(lotus),
            "--params-dir",
            s(&params),
        ],
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
    let d = dir("porep", "c2-errors");
    let params = d.join("params");
    std::fs::create_dir_all(&params).unwrap();
    let out = d.join("s.proof");
    // Parameters missing: named by filecoin-proofs' file name.
    let (_, err) = run(
        &[
            "porep",
            "c2",
            "--c1",
            s(lotus),
            "--params-dir",
            s(&params),
            "--out",
            s(&out),
        ],
        1,
    );
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
    let (_, err) = run(
        &[
            "porep",
            "c2",
            "--c1",
            s(&cut),
            "--params-dir",
            s(&params),
            "--out",
            s(&out),
        ],
        1,
    );
    assert!(err.contains("truncated"), "{err}");
    // The output is an input.
    let (_, err) = run(
        &[
            "porep",
            "c2",
            "--c1",
            s(bare),
            "--params-dir",
            s(&params),
            "--out",
            s(bare),
        ],
        2,
    );
    assert!(err.contains("refusing to overwrite an input"), "{err}");
    // An existing output without --force.
    std::fs::write(&out, b"old").unwrap();
    let (_, err) = run(
        &[
            "porep",
            "c2",
            "--c1",
            s(bare),
            "--params-dir",
            s(&params),
            "--out",
            s(&out),
        ],
        1,
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), b"old");
    // An unknown check.
    let (_, err) = run(
        &[
            "porep",
            "c2",
            "--c1",
            s(bare),
            "--params-dir",
            s(&params),
            "--out",
            s(&out),
            "--check",
            "none",
        ],
        2,
    );
    assert!(err.contains("--check"), "{err}");
}

#[test]
fn verify_and_setup_usage_errors() {
    let (lotus, bare) = c1_files();
    let d = dir("porep", "usage");
    let proof = d.join("p");
    std::fs::write(&proof, [0u8; 192]).unwrap();
    // Neither --prover-id nor --miner.
    run(
        &[
            "porep",
            "verify",
            "--c1",
            s(lotus),
            "--proof",
            s(&proof),
            "--params-dir",
            s(&d),
        ],
        2,
    );
    // The bare form has no SectorNum: --sector-id is needed.
    let (_, err) = run(
        &[
            "porep",
            "verify",
            "--c1",
            s(bare),
            "--proof",
            s(&proof),
            "--params-dir",
            s(&d),
            "--miner",
            "1000",
        ],
        2,
    );
    assert!(err.contains("--sector-id"), "{err}");
    // A prover id that is not 32 bytes of hex.
    let (_, err) = run(
        &[
            "porep",
            "verify",
            "--c1",
            s(lotus),
            "--proof",
            s(&proof),
            "--params-dir",
            s(&d),
            "--prover-id",
            "12zz",
        ],
        2,
    );
    assert!(err.contains("--prover-id"), "{err}");
    // No verifying key in the folder.
    let (_, err) = run(
        &[
            "porep",
            "verify",
            "--c1",
            s(lotus),
            "--proof",
            s(&proof),
            "--params-dir",
            s(&d),
            "--miner",
            "1000",
        ],
        1,
    );
    assert!(
        err.contains("no verifying key for StackedDrg2KiBV1_1"),
        "{err}"
    );
    // Setup: unknown and unsupported proof types.
    let (_, err) = run(
        &["porep", "setup", "--proof", "Bogus", "--params-dir", s(&d)],
        2,
    );
    assert!(err.contains("not a seal proof type"), "{err}");
    let (_, err) = run(
        &[
            "porep",
            "setup",
            "--proof",
            "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep",
            "--params-dir",
            s(&d),
        ],
        1,
    );
    assert!(err.contains("non-interactive"), "{err}");
}

/// `porep load` with each check on a small parameters file; the digest check against a
/// manifest that lists the file, one that lists another digest, and none.
#[test]
fn load_with_each_check() {
    let d = dir("porep", "load");
    let name = "v28-test-circuit.params";
    let params = d.join(name);
    run(
        &[
            "setup",
            "--circuit",
            "synthetic",
            "--log-size",
            "12",
            "--seed",
            "1",
            "--out",
            s(&params),
        ],
        0,
    );
    for c in ["batched", "full", "curve-only"] {
        let (out, _) = run(&["porep", "load", "--params", s(&params), "--check", c], 0);
        assert!(
            out.contains(&format!("check {c}")) && out.contains("points/s"),
            "{out}"
        );
    }
    let digest = bellows_filecoin::params::filecoin_digest(&std::fs::read(&params).unwrap());
    let manifest = write_manifest(&d, "good.json", name, &digest);
    let (out, _) = run(
        &[
            "porep",
            "load",
            "--params",
            s(&params),
            "--check",
            "digest",
            "--manifest",
            s(&manifest),
            "--json",
        ],
        0,
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["digest"], digest.as_str());
    let bad = write_manifest(&d, "bad.json", name, &"0".repeat(32));
    let (_, err) = run(
        &[
            "porep",
            "load",
            "--params",
            s(&params),
            "--check",
            "digest",
            "--manifest",
            s(&bad),
        ],
        1,
    );
    assert!(err.contains("does not match"), "{err}");
    let (_, err) = run(
        &["porep", "load", "--params", s(&params), "--check", "digest"],
        1,
    );
    assert!(err.contains("lists no file named"), "{err}");
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
    run(
        &[
            "porep",
            "setup",
            "--proof",
            "StackedDrg2KiBV1_1",
            "--params-dir",
            s(&params),
        ],
        0,
    );
    let out = d.join("s.proof");
    // Pre-compiled synthesis (the default), its recording kept in the test's folder.
    let pce = d.join("pce");
    run(
        &[
            "porep",
            "c2",
            "--c1",
            s(lotus),
            "--params-dir",
            s(&params),
            "--pce-dir",
            s(&pce),
            "--out",
            s(&out),
        ],
        0,
    );
    assert!(std::fs::read_dir(&pce).unwrap().count() > 0, "recorded");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), 192);
    let (stdout, _) = run(
        &[
            "porep",
            "verify",
            "--c1",
            s(lotus),
            "--proof",
            s(&out),
            "--params-dir",
            s(&params),
            "--miner",
            "1000",
        ],
        0,
    );
    assert_eq!(stdout.trim(), "valid");
    let (_, err) = run(
        &[
            "porep",
            "verify",
            "--c1",
            s(lotus),
            "--proof",
            s(&out),
            "--params-dir",
            s(&params),
            "--miner",
            "1000",
            "--sector-id",
            "8",
        ],
        1,
    );
    assert!(err.contains("rejects"), "{err}");
}

/// `porep c2 --daemon`: the C1 file is checked before anything is sent; the daemon (built with
/// the feature, as this binary is) refuses a job whose parameters are missing, naming the file,
/// and writes nothing; `--submit` needs `--daemon`. (The proof through a daemon is
/// bellows-serve's tests/porep.rs.)
#[test]
fn c2_on_a_daemon_errors_are_clear_and_nothing_is_written() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};

    let (lotus, bare) = c1_files();
    let d = dir("porep", "c2-daemon");
    let params = d.join("params");
    std::fs::create_dir_all(&params).unwrap();
    let out = d.join("s.proof");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bellows"))
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(d.join("state"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("daemon did not start: {line:?}"))
        .to_string();
    let c2 = |c1: &Path, extra: &[&str], code: i32| {
        let mut args = vec![
            "porep",
            "c2",
            "--daemon",
            &addr,
            "--c1",
            s(c1),
            "--params-dir",
            s(&params),
            "--out",
            s(&out),
        ];
        args.extend_from_slice(extra);
        run(&args, code)
    };
    // The daemon refuses it: no parameters in its folder, named.
    let (_, err) = c2(lotus, &[], 1);
    assert!(
        err.contains("no parameters for StackedDrg2KiBV1_1"),
        "{err}"
    );
    let (_, err) = c2(bare, &["--submit"], 1);
    assert!(err.contains(".params"), "{err}");
    // A truncated C1 file is named before anything is sent.
    let bytes = std::fs::read(bare).unwrap();
    let cut = d.join("cut.json");
    std::fs::write(&cut, &bytes[..bytes.len() / 3]).unwrap();
    let (_, err) = c2(&cut, &[], 1);
    assert!(err.contains("truncated"), "{err}");
    assert!(!out.exists(), "nothing written on failure");
    // --submit needs --daemon.
    let (_, err) = run(
        &[
            "porep",
            "c2",
            "--submit",
            "--c1",
            s(bare),
            "--params-dir",
            s(&params),
            "--out",
            s(&out),
        ],
        2,
    );
    assert!(err.contains("--daemon"), "{err}");
    let _ = child.kill();
    let _ = child.wait();
}
