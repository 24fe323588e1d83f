//! One sealed 2 KiB sector per test process, and the process's filecoin-proofs settings.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::testing::cpu_seconds;
use bellows_filecoin::testing::{init_filecoin_env, seal_sector, SealedSector};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The proof type the tests seal.
pub const PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
/// The prover id (miner f01000) and sector number the tests seal with.
pub const MINER: u64 = 1000;
pub const SECTOR: u64 = 7;

/// The process's work folder (kept until the process ends; under the system temp folder).
pub fn work_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!(
            "bellows-filecoin-test-{}-{}",
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
