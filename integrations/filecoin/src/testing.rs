//! Sealing small sectors on the CPU with filecoin-proofs, for tests, benchmarks and examples:
//! a real C1 output without lotus.
//!
//! [`seal_sector`] runs the steps a storage provider's sealing pipeline runs before C2:
//! add a piece (random data filling the sector), pre-commit phase 1 (SDR labelling), pre-commit
//! phase 2 (trees and comm_r), and commit phase 1 (the vanilla proofs for the seed's
//! challenges), in a folder of the caller's. A 2 KiB sector takes seconds.
//!
//! filecoin-proofs reads its settings (`FIL_PROOFS_*`) once per process; call
//! [`init_filecoin_env`] first, before anything else touches filecoin-proofs.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use base64::Engine;
use bellows_core::{Error, Result};
use filecoin_proofs_api::seal::{
    add_piece, seal_commit_phase1, seal_pre_commit_phase1, seal_pre_commit_phase2,
    SealCommitPhase1Output,
};
use filecoin_proofs_api::{
    post, PrivateReplicaInfo, RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof,
    SectorId, UnpaddedBytesAmount,
};
use rand_core::RngCore;

use crate::post::PostInput;
use crate::update::UpdateInput;

use crate::shape::proofs_error;

/// What was sealed, and the C1 output.
#[derive(Clone, Debug)]
pub struct SealedSector {
    /// The prover id used.
    pub prover_id: [u8; 32],
    /// The sector number used.
    pub sector_id: u64,
    /// The commit-phase-1 output.
    pub c1: SealCommitPhase1Output,
    /// The sealed replica file.
    pub replica: PathBuf,
    /// The sector's cache folder (trees, labels).
    pub cache: PathBuf,
}

/// The settings filecoin-proofs takes from the environment, set once for this process:
/// the parameter folder `params_dir` (`FIL_PROOFS_PARAMETER_CACHE`), a parent cache in
/// `work_dir` (`FIL_PROOFS_PARENT_CACHE`), locally made parameters accepted
/// (`FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=false`), single-core SDR (no hwloc). Returns the
/// folders in force: the first call's, whatever later calls pass.
pub fn init_filecoin_env(params_dir: &Path, work_dir: &Path) -> (PathBuf, PathBuf) {
    static DIRS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    DIRS.get_or_init(|| {
        let parents = work_dir.join("filecoin-parents");
        let _ = std::fs::create_dir_all(params_dir);
        let _ = std::fs::create_dir_all(&parents);
        std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params_dir);
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", &parents);
        std::env::set_var("FIL_PROOFS_VERIFY_PRODUCTION_PARAMS", "false");
        std::env::set_var("FIL_PROOFS_USE_MULTICORE_SDR", "false");
        (params_dir.to_path_buf(), parents)
    })
    .clone()
}

/// Seals one sector of `proof`'s size, filled with random bytes from `rng`, in `dir`, and runs
/// commit phase 1 with `seed`. Needs [`init_filecoin_env`] first.
pub fn seal_sector(
    proof: RegisteredSealProof,
    dir: &Path,
    prover_id: [u8; 32],
    sector_id: u64,
    ticket: [u8; 32],
    seed: [u8; 32],
    rng: &mut dyn RngCore,
) -> Result<SealedSector> {
    let io = |what: &str, e: std::io::Error| Error::io(format!("{what} in {}", dir.display()), e);
    let cache = dir.join(format!("cache-{sector_id}"));
    std::fs::create_dir_all(&cache).map_err(|e| io("creating the sector cache", e))?;
    let staged = dir.join(format!("staged-{sector_id}"));
    let replica = dir.join(format!("sealed-{sector_id}"));
    let unpadded = UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount::from(
        proof.sector_size(),
    ));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let piece = {
        let mut target = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&staged)
            .map_err(|e| io("creating the staged sector", e))?;
        let (info, _) = add_piece(proof, &data[..], &mut target, unpadded, &[])
            .map_err(|e| proofs_error("add_piece", e))?;
        info
    };
    std::fs::File::create(&replica).map_err(|e| io("creating the replica", e))?;
    let sid = SectorId::from(sector_id);
    let pieces = [piece];
    let pc1 = seal_pre_commit_phase1(
        proof, &cache, &staged, &replica, prover_id, sid, ticket, &pieces,
    )
    .map_err(|e| proofs_error("seal_pre_commit_phase1", e))?;
    let pc2 = seal_pre_commit_phase2(pc1, &cache, &replica)
        .map_err(|e| proofs_error("seal_pre_commit_phase2", e))?;
    let c1 = seal_commit_phase1(&cache, &replica, prover_id, sid, ticket, seed, pc2, &pieces)
        .map_err(|e| proofs_error("seal_commit_phase1", e))?;
    Ok(SealedSector {
        prover_id,
        sector_id,
        c1,
        replica,
        cache,
    })
}

/// `c1` as filecoin-proofs-api's JSON.
pub fn c1_json(c1: &SealCommitPhase1Output) -> Vec<u8> {
    serde_json::to_vec(c1).expect("a C1 output serialises")
}

/// `c1` in lotus-bench's wrapper: `{"SectorNum", "Phase1Out" (base64 of the JSON),
/// "SectorSize"}`.
pub fn lotus_bench_json(c1: &SealCommitPhase1Output, sector_num: u64) -> Vec<u8> {
    let inner = base64::engine::general_purpose::STANDARD.encode(c1_json(c1));
    serde_json::to_vec(&serde_json::json!({
        "SectorNum": sector_num,
        "Phase1Out": inner,
        "SectorSize": u64::from(c1.registered_proof.sector_size()),
    }))
    .expect("JSON")
}

/// TEST parameters for `proof`'s circuit in the folder `dir`, made once with
/// [`crate::porep::setup`] (toxic waste from `rng`) and shared by every test process that asks
/// for the same folder: the first makes them under an exclusive lock on `dir/.lock` (the others
/// wait for it), then leaves a marker beside them, so that a setup interrupted half-way is made
/// again rather than used. Even the 2 KiB PoRep circuit's are costly to make (docs/filecoin.md,
/// "Tests"), so the tests of bellows-filecoin, bellows-serve and the command line share one
/// folder under the target folder (`CARGO_TARGET_TMPDIR`), and a CI run makes them once.
pub fn shared_params(
    proof: RegisteredSealProof,
    dir: &Path,
    rng: &mut dyn RngCore,
) -> Result<crate::CachePaths> {
    shared(dir, crate::porep::cache_paths(proof, dir)?, || {
        crate::porep::setup(proof, dir, &mut &mut *rng, true).map(drop)
    })
}

/// [`shared_params`] for a PoSt circuit (WinningPoSt or WindowPoSt).
pub fn shared_post_params(
    proof: RegisteredPoStProof,
    dir: &Path,
    rng: &mut dyn RngCore,
) -> Result<crate::CachePaths> {
    shared(dir, crate::post::cache_paths(proof, dir)?, || {
        crate::post::setup(proof, dir, &mut &mut *rng, true).map(drop)
    })
}

/// [`shared_params`] for a SnapDeals (empty sector update) circuit.
pub fn shared_update_params(
    proof: RegisteredUpdateProof,
    dir: &Path,
    rng: &mut dyn RngCore,
) -> Result<crate::CachePaths> {
    shared(dir, crate::update::cache_paths(proof, dir)?, || {
        crate::update::setup(proof, dir, &mut &mut *rng, true).map(drop)
    })
}

/// The parameters `paths` in `dir`, made by `make` under the folder's lock unless a marker says
/// an earlier process made them whole.
fn shared(
    dir: &Path,
    paths: crate::CachePaths,
    make: impl FnOnce() -> Result<()>,
) -> Result<crate::CachePaths> {
    use fs2::FileExt;
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::io(
            format!("creating the parameter folder {}", dir.display()),
            e,
        )
    })?;
    let lock_path = dir.join(".lock");
    let lock = std::fs::File::create(&lock_path)
        .map_err(|e| Error::io(format!("creating {}", lock_path.display()), e))?;
    lock.lock_exclusive()
        .map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
    let marker = dir.join(format!("v28-{}.made", paths.id));
    if !marker.exists() {
        make()?;
        std::fs::write(
            &marker,
            b"made by bellows_filecoin::testing::shared_params\n",
        )
        .map_err(|e| Error::io(format!("writing {}", marker.display()), e))?;
    }
    // The lock is released when `lock` is closed.
    drop(lock);
    Ok(paths)
}

/// A PoSt of `proof` over the sealed sector `s` with challenge `randomness`: its vanilla proof
/// as filecoin-proofs-api's `generate_single_vanilla_proof` makes it (what lotus and Curio send
/// a SNARK prover).
pub fn post_vanilla(
    proof: RegisteredPoStProof,
    s: &SealedSector,
    randomness: [u8; 32],
) -> Result<PostInput> {
    let sid = SectorId::from(s.sector_id);
    let challenges =
        post::generate_fallback_sector_challenges(proof, &randomness, &[sid], s.prover_id)
            .map_err(|e| proofs_error("generate_fallback_sector_challenges", e))?;
    let replica = PrivateReplicaInfo::new(proof, s.c1.comm_r, s.cache.clone(), s.replica.clone());
    let challenged = challenges
        .get(&sid)
        .ok_or_else(|| Error::invalid(format!("no challenges for sector {}", s.sector_id)))?;
    let v = post::generate_single_vanilla_proof(proof, sid, &replica, challenged)
        .map_err(|e| proofs_error("generate_single_vanilla_proof", e))?;
    Ok(PostInput {
        proof,
        randomness,
        prover_id: s.prover_id,
        vanilla_proofs: vec![v],
    })
}

/// The sealed sector `s` (of `seal`) updated with random data from `rng` by filecoin-proofs
/// (`empty_sector_update_encode_into`, in the folder `dir`), and its vanilla partition proofs
/// (`generate_partition_proofs`): a SnapDeals proof of `update` to make.
pub fn update_sector(
    s: &SealedSector,
    seal: RegisteredSealProof,
    update: RegisteredUpdateProof,
    dir: &Path,
    rng: &mut dyn RngCore,
) -> Result<UpdateInput> {
    use filecoin_proofs_api::update as api;
    let io = |what: &str, e: std::io::Error| Error::io(format!("{what} in {}", dir.display()), e);
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).map_err(|e| io("creating the update's cache", e))?;
    let unpadded =
        UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount::from(seal.sector_size()));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);
    let staged = dir.join("staged");
    let piece = {
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&staged)
            .map_err(|e| io("creating the staged data", e))?;
        add_piece(seal, &data[..], &mut f, unpadded, &[])
            .map_err(|e| proofs_error("add_piece", e))?
            .0
    };
    let replica = dir.join("replica");
    std::fs::File::create(&replica)
        .and_then(|f| f.set_len(u64::from(seal.sector_size())))
        .map_err(|e| io("creating the updated replica", e))?;
    let enc = api::empty_sector_update_encode_into(
        update,
        &replica,
        &cache,
        &s.replica,
        &s.cache,
        &staged,
        &[piece],
    )
    .map_err(|e| proofs_error("empty_sector_update_encode_into", e))?;
    let vanilla = api::generate_partition_proofs(
        update,
        s.c1.comm_r,
        enc.comm_r_new,
        enc.comm_d_new,
        &s.replica,
        &s.cache,
        &replica,
        &cache,
    )
    .map_err(|e| proofs_error("generate_partition_proofs", e))?;
    Ok(UpdateInput {
        proof: update,
        vanilla_proofs: vanilla.into_iter().map(|p| p.0).collect(),
        comm_r_old: s.c1.comm_r,
        comm_r_new: enc.comm_r_new,
        comm_d_new: enc.comm_d_new,
    })
}

/// This process's CPU time so far (user + system, all threads), from `/proc/self/stat`
/// (Linux; 0 elsewhere): the benchmarks and the end-to-end test report it beside wall time.
pub fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces), in parentheses.
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / 100.0
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn cpu_seconds_count_this_process_s_work() {
        let before = super::cpu_seconds();
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(300) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let spent = super::cpu_seconds() - before;
        assert!(
            spent > 0.05 && spent < 60.0,
            "{spent} s of CPU for 0.3 s of spinning"
        );
    }
}
