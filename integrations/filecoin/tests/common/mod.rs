//! One sealed 2 KiB sector per test process, and the process's filecoin-proofs settings.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bellows_filecoin::filecoin_proofs_api::{
    RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
};
use bellows_filecoin::post::PostInput;
use bellows_filecoin::testing::cpu_seconds;
use bellows_filecoin::testing::{init_filecoin_env, seal_sector, SealedSector};
use bellows_filecoin::update::UpdateInput;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The proof type the tests seal.
pub const PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
/// The prover id (miner f01000) and sector number the tests seal with.
pub const MINER: u64 = 1000;
pub const SECTOR: u64 = 7;

/// The prefix of the work folders under the system temp folder.
const WORK_PREFIX: &str = "bellows-filecoin-test-";

/// The process's work folder (under the system temp folder). Nothing runs when a test process
/// ends, so the folders of processes that are gone (sectors, trees, parameters: up to hundreds
/// of MB each) are removed by the next test process that makes its own.
pub fn work_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        remove_folders_of_ended_processes();
        let d = std::env::temp_dir().join(format!(
            "{WORK_PREFIX}{}-{}",
            std::process::id(),
            std::thread::current()
                .name()
                .unwrap_or("t")
                .replace("::", "-")
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("work folder");
        d
    })
}

/// Removes the work folders of test processes that no longer run (Linux: /proc tells).
fn remove_folders_of_ended_processes() {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(WORK_PREFIX)
            .and_then(|rest| rest.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The parameter folder filecoin-proofs reads in this process.
pub fn params_dir() -> PathBuf {
    init_filecoin_env(&work_dir().join("params"), work_dir()).0
}

/// The parameter folder shared with other test processes (bellows-serve's PoRep tests among
/// them), under the target folder: the 2 KiB PoRep parameters are made there once
/// ([`shared_porep_params`]). Makes it filecoin-proofs' folder in this process when it is the
/// first to ask.
pub fn shared_params_dir() -> PathBuf {
    let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("filecoin-params");
    init_filecoin_env(&shared, work_dir()).0
}

/// The 2 KiB PoRep parameters in [`shared_params_dir`], made by the first process that needs
/// them (Bellows' setup, toxic waste from a fixed seed).
pub fn shared_porep_params() -> PathBuf {
    let dir = shared_params_dir();
    bellows_filecoin::testing::shared_params(PROOF, &dir, &mut ChaCha20Rng::seed_from_u64(11))
        .expect("the shared 2 KiB PoRep parameters");
    dir
}

/// A 2 KiB sector sealed once per process (seconds), with fixed randomness.
pub fn sealed() -> &'static SealedSector {
    static SEALED: OnceLock<SealedSector> = OnceLock::new();
    SEALED.get_or_init(|| {
        params_dir();
        let dir = work_dir().join("sector");
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = ChaCha20Rng::seed_from_u64(2048);
        seal_sector(
            PROOF,
            &dir,
            bellows_filecoin::prover_id_from_actor(MINER),
            SECTOR,
            [3u8; 32],
            [5u8; 32],
            &mut rng,
        )
        .expect("sealing a 2 KiB sector")
    })
}

/// The PoSt challenge randomness the tests use.
pub const RANDOMNESS: [u8; 32] = [9u8; 32];

/// A PoSt of `proof` over the sealed sector, from its vanilla proof as filecoin-proofs-api's
/// `generate_single_vanilla_proof` makes it (what lotus and Curio send a SNARK prover).
pub fn post_input(proof: RegisteredPoStProof) -> PostInput {
    bellows_filecoin::testing::post_vanilla(proof, sealed(), RANDOMNESS).unwrap()
}

/// The update proof type of the sealed sector.
pub const UPDATE: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;

/// The sealed sector updated with new data by filecoin-proofs (encode_into), and its vanilla
/// partition proofs (generate_partition_proofs): a SnapDeals proof to make.
pub fn updated_sector() -> UpdateInput {
    let d = work_dir().join("update");
    let mut rng = ChaCha20Rng::seed_from_u64(77);
    bellows_filecoin::testing::update_sector(sealed(), PROOF, UPDATE, &d, &mut rng).unwrap()
}

/// Prints the wall and process CPU time of each phase of a test (with `--nocapture`), so that
/// a CI log shows where the time went. The CPU time is the whole process's, other tests running
/// beside this one included.
pub struct Phase(std::cell::Cell<(std::time::Instant, f64)>);

impl Phase {
    /// Starts the clock.
    pub fn start() -> Self {
        Phase(std::cell::Cell::new((
            std::time::Instant::now(),
            cpu_seconds(),
        )))
    }

    /// Prints the time since the last lap (or the start) and restarts the clock.
    pub fn lap(&self, what: &str) {
        let (t, c) = self.0.get();
        let now = (std::time::Instant::now(), cpu_seconds());
        eprintln!(
            "[timing] {what}: {:.1} s wall, {:.1} s CPU",
            (now.0 - t).as_secs_f64(),
            now.1 - c
        );
        self.0.set(now);
    }
}
