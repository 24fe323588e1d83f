//! WinningPoSt, WindowPoSt and SnapDeals on a sector sealed here with filecoin-proofs on the
//! CPU: their synthesis, pre-compiled against direct; the PoSt request files the cuzk API bench
//! sends (bench/curio-api.sh); filecoin-proofs' own PoSt prover on such a request.
//!
//! ```text
//! cargo run --release -p bellows-filecoin --example kinds_bench -- synthesis \
//!     [--sector 2KiB] [--sector 8MiB] [--reps 5] [--work DIR]
//! kinds_bench post-requests --out POST_DIR [--sector 2KiB|8MiB] [--miner 1000] [--work DIR]
//! kinds_bench post-peer --request POST_DIR/winning.json [--reps 3] [--check PROOF_FILE]
//! ```
//!
//! `synthesis`: for each sector size (2 KiB when none is given), seals a sector, makes its
//! WinningPoSt and WindowPoSt vanilla proofs (`generate_single_vanilla_proof`) and a SnapDeals
//! update of it (`generate_partition_proofs`), records each circuit (the one-time cost, into a
//! fresh PCE folder under WORK), then synthesises one partition of each kind `--reps` times,
//! directly (`bellows_core::groth16::synthesis::synthesize`: the storage-proofs circuit run
//! into the constraint system, as bellperson's prover runs it inside filecoin-proofs) and from
//! the recording, alternating, the two checked equal value for value once. Prints per kind the
//! constraints, the recording's time, the medians (wall and process CPU) and their ratio, and
//! the pre-compiled synthesis's witness phase, then one JSON line per kind.
//!
//! `post-requests`: seals a sector, writes `winning.json` and `window.json` (partition 0) in
//! POST_DIR, request files of serve/examples/cuzk_client.rs with the vanilla proofs beside them,
//! and makes the two PoSt circuits' parameters with Bellows' setup under filecoin-proofs' names
//! in POST_DIR/params where they are missing (toxic waste from the OS: test parameters).
//!
//! `post-peer`: filecoin-proofs-api's `generate_winning_post_with_vanilla` or
//! `generate_single_window_post_with_vanilla` (bellperson on the CPU, with the parameters in
//! `FIL_PROOFS_PARAMETER_CACHE`, else in `params/` beside the request) on a request file's
//! inputs, `--reps` times, one `RESULT … prove_s=S` line each; then its last proof and, with
//! `--check`, another prover's proof of the same request (Bellows' through the cuzk API),
//! checked by filecoin-proofs' `verify_{winning,window}_post`.

mod post;
mod synthesis;

use std::path::{Path, PathBuf};
use std::time::Instant;

use bellows_core::{Error, Result};
use bellows_filecoin::filecoin_proofs_api::{RegisteredPoStProof, RegisteredUpdateProof};
use bellows_filecoin::testing::{cpu_seconds, seal_sector, SealedSector};
use bellows_filecoin::{prover_id_from_actor, registered, synth_c1};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The command line: the subcommand, then flags.
struct Args {
    command: String,
    sectors: Vec<String>,
    reps: usize,
    work: PathBuf,
    out: Option<PathBuf>,
    miner: u64,
    request: Option<PathBuf>,
    check: Option<PathBuf>,
}

fn args() -> Args {
    let mut it = std::env::args().skip(1);
    let command = it.next().unwrap_or_default();
    let mut a = Args {
        command,
        sectors: Vec::new(),
        reps: 0,
        work: std::env::temp_dir().join("bellows-kinds-bench"),
        out: None,
        miner: 1000,
        request: None,
        check: None,
    };
    while let Some(k) = it.next() {
        let mut v = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{k} needs a value")))
        };
        match k.as_str() {
            "--sector" => a.sectors.push(v()),
            "--reps" => a.reps = v().parse().unwrap_or_else(|_| usage("--reps N")),
            "--work" => a.work = PathBuf::from(v()),
            "--out" => a.out = Some(PathBuf::from(v())),
            "--miner" => a.miner = v().parse().unwrap_or_else(|_| usage("--miner ACTOR_ID")),
            "--request" => a.request = Some(PathBuf::from(v())),
            "--check" => a.check = Some(PathBuf::from(v())),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if a.sectors.is_empty() {
        a.sectors.push("2KiB".into());
    }
    a
}

fn usage(what: &str) -> ! {
    eprintln!(
        "kinds_bench: {what}\nusage: kinds_bench synthesis [--sector SIZE]... [--reps N] \
         [--work DIR] | post-requests --out DIR [--sector SIZE] [--miner ID] [--work DIR] | \
         post-peer --request FILE [--reps N] [--check PROOF]"
    );
    std::process::exit(2)
}

fn main() {
    let a = args();
    let r = match a.command.as_str() {
        "synthesis" => synthesis::run(&a),
        "post-requests" => post::requests(&a),
        "post-peer" => post::peer(&a),
        other => usage(&format!("unknown command {other:?}")),
    };
    if let Err(e) = r {
        eprintln!("kinds_bench: {e}");
        std::process::exit(1);
    }
}

/// The proof types of one sector size, by the network's numbers (registered.rs): WinningPoSt
/// `i`, WindowPoSt `10 + i` (the current version), update `i`, for the size's place `i`.
struct Types {
    label: String,
    bytes: u64,
    winning: (u64, RegisteredPoStProof),
    window: (u64, RegisteredPoStProof),
    update: RegisteredUpdateProof,
}

fn types(label: &str) -> Result<Types> {
    let bytes = bellows_core::units::parse_bytes(label).map_err(Error::invalid)?;
    let i = (0..5u64)
        .find(|&i| registered::update_proof(i).is_ok_and(|p| u64::from(p.sector_size()) == bytes))
        .ok_or_else(|| Error::invalid(format!("{label} is not a Filecoin sector size")))?;
    Ok(Types {
        label: label.to_string(),
        bytes,
        winning: (i, registered::post_proof(i)?),
        window: (10 + i, registered::post_proof(10 + i)?),
        update: registered::update_proof(i)?,
    })
}

/// Seals a sector of `t`'s size for `miner` in a fresh folder under `work` (sector number 1,
/// fixed ticket, seed and data).
fn seal(t: &Types, work: &Path, miner: u64) -> Result<SealedSector> {
    let proof = synth_c1::proof_for_sector_size(t.bytes)?;
    let dir = work.join(format!("sector-{}", t.label));
    let _ = std::fs::remove_dir_all(&dir);
    let started = Instant::now();
    let s = seal_sector(
        proof,
        &dir,
        prover_id_from_actor(miner),
        1,
        [7; 32],
        [9; 32],
        &mut ChaCha20Rng::seed_from_u64(t.bytes),
    )?;
    eprintln!(
        "sealed {} in {:.1} s (process CPU so far {:.1} s)",
        t.label,
        started.elapsed().as_secs_f64(),
        cpu_seconds()
    );
    Ok(s)
}

/// The PoSt challenge randomness: fixed bytes with the top bits cleared, as lotus draws it (a
/// field element).
fn randomness() -> [u8; 32] {
    let mut r = [0x5a; 32];
    r[31] &= 0x3f;
    r
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}
