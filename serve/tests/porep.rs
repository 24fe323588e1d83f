//! PoRep C2 jobs in the engine (docs/serve.md, "PoRep C2 jobs").
//!
//! With the cargo feature `filecoin` (CI turns it on: `--features bellows-cli/filecoin` unifies
//! it into this crate): a real 2 KiB sector sealed with filecoin-proofs, its C1 output submitted
//! as a job, proved on the CPU through the engine and verified by filecoin-proofs' `verify_seal`;
//! the job re-proved from the journal after a restart on the same state folder (the C1 bytes
//! travel in the journaled request), this time with pre-compiled synthesis, to the same proof;
//! truncated and garbage C1 outputs refused at Submit with the reason, nothing journaled, the
//! engine still serving. The 2 KiB parameters
//! (1.1 GB, about 100 CPU-seconds of setup) are shared with bellows-filecoin's end-to-end test
//! through one folder under the target folder, made once under a file lock
//! (`bellows_filecoin::testing::shared_params`).
//!
//! Without the feature: a PoRep job is refused at Submit with the error that says how to build
//! a daemon that proves it, and nothing is journaled.

#![cfg_attr(not(feature = "filecoin"), allow(dead_code))]

mod common;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use bellows_serve::{
    engine::{Engine, EngineConfig, Event},
    proto::{self, submit_request::Kind},
    store::{JobId, JobState, JobStore, SqliteStore},
};

/// Longest wait for a job: many times a 2 KiB C2 on 2 idle cores, for a loaded CI machine.
const WAIT: Duration = Duration::from_secs(900);

/// The engine's events, for waiting on a job's end.
#[derive(Clone, Default)]
struct Events(Arc<(Mutex<Vec<Event>>, Condvar)>);

impl Events {
    fn observer(&self) -> bellows_serve::engine::Observer {
        let me = self.clone();
        bellows_serve::engine::Observer(Arc::new(move |e: &Event| {
            let (m, cv) = &*me.0;
            m.lock().unwrap().push(e.clone());
            cv.notify_all();
        }))
    }

    fn wait_finished(&self, job: JobId) -> JobState {
        let (m, cv) = &*self.0;
        let find = |v: &[Event]| {
            v.iter().find_map(|e| match e {
                Event::JobFinished { job: j, state } if *j == job => Some(*state),
                _ => None,
            })
        };
        let (g, t) = cv
            .wait_timeout_while(m.lock().unwrap(), WAIT, |v| find(v).is_none())
            .unwrap();
        assert!(!t.timed_out(), "job {job} did not finish in {WAIT:?}");
        find(&g).unwrap()
    }
}

fn engine(store: Arc<dyn JobStore>, ev: &Events) -> Engine {
    engine_with(store, ev, None)
}

/// An engine whose synthesis uses the recordings in `pce_dir` (None: direct synthesis).
fn engine_with(
    store: Arc<dyn JobStore>,
    ev: &Events,
    pce_dir: Option<std::path::PathBuf>,
) -> Engine {
    let mut cfg = EngineConfig::default();
    cfg.pce_dir = pce_dir;
    cfg.synthesis_workers = 1;
    cfg.finalizers = 1;
    cfg.observer = Some(ev.observer());
    cfg.params_dirs = vec![
        std::env::temp_dir(),
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")),
    ];
    common::cpu_engine(cfg, store)
}

fn local() -> bellows_serve::identity::Identity {
    bellows_serve::identity::Identity::local()
}

fn porep_request(c1: Vec<u8>, params_dir: &str) -> proto::SubmitRequest {
    proto::SubmitRequest {
        kind: Some(Kind::PorepC2(proto::PorepC2 {
            c1,
            params_dir: params_dir.into(),
        })),
        // r and s from a seed: the proof after a restart equals the first, byte for byte.
        seed: Some(1),
        // The parameters were written by a test moments ago: curve checks only.
        skip_subgroup_checks: true,
        ..Default::default()
    }
}

#[cfg(not(feature = "filecoin"))]
#[test]
fn without_the_feature_a_porep_job_is_refused_at_submit_and_nothing_is_journaled() {
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let e = engine(store.clone(), &Events::default());
    let err = e
        .submit(
            &porep_request(b"{}".to_vec(), "/var/tmp/filecoin-proof-parameters"),
            &local(),
        )
        .unwrap_err();
    assert!(
        matches!(err, bellows_serve::ServeError::Unsupported(_)),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("built without Filecoin support: build with --features filecoin"),
        "{err}"
    );
    assert_eq!(
        tonic::Status::from(err).code(),
        tonic::Code::Unimplemented,
        "gRPC clients see UNIMPLEMENTED"
    );
    assert!(
        store.recent_jobs(10, None).unwrap().is_empty(),
        "nothing journaled"
    );
}

#[cfg(feature = "filecoin")]
mod with_filecoin {
    use super::*;

    use std::path::Path;

    use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
    use bellows_filecoin::testing::{
        init_filecoin_env, lotus_bench_json, seal_sector, shared_params,
    };
    use bellows_filecoin::{parse_c1, prover_id_from_actor, verify_seal};
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    const PROOF: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
    const MINER: u64 = 1000;
    const SECTOR: u64 = 7;

    /// The seal proof of a finished job: its partitions' proofs concatenated.
    fn seal_proof(store: &dyn JobStore, job: JobId) -> Vec<u8> {
        store
            .partitions(job)
            .unwrap()
            .iter()
            .flat_map(|p| p.proof.clone())
            .collect()
    }

    #[test]
    fn a_porep_job_is_proved_verified_and_reproved_from_the_journal_after_a_restart() {
        let work = common::dir("serve-porep");
        // The folder bellows-filecoin's end-to-end test shares (same seed): filecoin-proofs'
        // parameter folder in this process, before anything else touches filecoin-proofs.
        let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("filecoin-params");
        let (params_dir, _) = init_filecoin_env(&shared, &work);
        let sector_dir = work.join("sector");
        std::fs::create_dir_all(&sector_dir).unwrap();
        let sealed = seal_sector(
            PROOF,
            &sector_dir,
            prover_id_from_actor(MINER),
            SECTOR,
            [3u8; 32],
            [5u8; 32],
            &mut ChaCha20Rng::seed_from_u64(2048),
        )
        .unwrap();
        shared_params(PROOF, &params_dir, &mut ChaCha20Rng::seed_from_u64(11)).unwrap();
        let c1_bytes = lotus_bench_json(&sealed.c1, SECTOR);
        let c1 = parse_c1(&c1_bytes, "c1").unwrap();
        let dir = params_dir.display().to_string();
        let store_path = work.join("jobs.sqlite");

        // A daemon proves the job: the proof verifies with filecoin-proofs.
        let (job, first) = {
            let ev = Events::default();
            let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(&store_path).unwrap());
            let e = engine(store.clone(), &ev);

            // Bad C1 outputs are refused at Submit with the reason; nothing is journaled.
            let half = c1_bytes[..c1_bytes.len() / 2].to_vec();
            let err = e.submit(&porep_request(half, &dir), &local()).unwrap_err();
            assert!(err.to_string().contains("truncated"), "{err}");
            assert_eq!(
                tonic::Status::from(err).code(),
                tonic::Code::InvalidArgument
            );
            let err = e
                .submit(&porep_request(b"\x00\x01garbage".to_vec(), &dir), &local())
                .unwrap_err();
            assert!(err.to_string().contains("C1 output"), "{err}");
            let err = e
                .submit(
                    &porep_request(c1_bytes.clone(), work.to_str().unwrap()),
                    &local(),
                )
                .unwrap_err();
            assert!(err.to_string().contains("no parameters for"), "{err}");
            let mut two = porep_request(c1_bytes.clone(), &dir);
            two.partitions = 2;
            let err = e.submit(&two, &local()).unwrap_err();
            assert!(err.to_string().contains("leave partitions at 0"), "{err}");
            assert!(
                store.recent_jobs(10, None).unwrap().is_empty(),
                "nothing journaled"
            );

            // The engine keeps serving: the good job is accepted and proved.
            let job = e
                .submit(&porep_request(c1_bytes.clone(), &dir), &local())
                .unwrap();
            assert_eq!(ev.wait_finished(job), JobState::Done);
            let rec = store.job(job).unwrap().unwrap();
            assert_eq!(rec.partitions, 1, "a 2 KiB proof has one partition");
            assert!(rec.label.contains("StackedDrg2KiBV1_1"), "{}", rec.label);
            let proof = seal_proof(&*store, job);
            assert_eq!(proof.len(), 192);
            assert!(verify_seal(&c1, prover_id_from_actor(MINER), SECTOR, &proof).unwrap());
            // Another sector's proof it is not.
            assert!(!verify_seal(&c1, prover_id_from_actor(MINER), SECTOR + 1, &proof).unwrap());

            // The check a fleet node makes before it commits a partition (engine/workers.rs,
            // check_before_commit): the stored partition passes, a changed proof does not.
            let dirs = bellows_serve::params::ParamsDirs::new(std::slice::from_ref(&params_dir));
            let pj = bellows_serve::filecoin::FilecoinJob::from_c1(&c1_bytes, &params_dir, &dirs)
                .unwrap();
            let vk = bellows_core::groth16::io::read_verifying_key(
                pj.vk_path(),
                bellows_core::groth16::io::PointCheck::Full,
            )
            .unwrap();
            let mut part = store.partitions(job).unwrap().remove(0);
            let own = || -> bellows_serve::Result<_> { Ok(vk.clone()) };
            pj.verify_partition(&part, &own).unwrap();
            // A and C swapped (48-byte compressed G1 points around the 96-byte B): every point
            // still valid, the proof wrong.
            assert_eq!(part.proof.len(), 192);
            let (a, c) = (part.proof[..48].to_vec(), part.proof[144..].to_vec());
            part.proof[..48].copy_from_slice(&c);
            part.proof[144..].copy_from_slice(&a);
            let err = pj.verify_partition(&part, &own).unwrap_err().to_string();
            assert!(err.contains("partition 0 does not verify"), "{err}");
            (job, proof)
        };

        // As if the daemon had stopped before proving it: the journal keeps the request (with
        // the C1 bytes) and loses the partition.
        rusqlite::Connection::open(&store_path)
            .unwrap()
            .execute_batch(&format!(
                "DELETE FROM partitions WHERE job = {job};
                 UPDATE jobs SET state = 'running', finished_at = NULL WHERE id = {job};"
            ))
            .unwrap();
        // The restarted engine synthesises with a pre-compiled constraint system (recorded from
        // the stored C1's circuit): the same proof bytes as the first, direct, synthesis.
        let ev = Events::default();
        let store: Arc<dyn JobStore> = Arc::new(SqliteStore::open(&store_path).unwrap());
        let pce_dir = work.join("pce");
        let e = engine_with(store.clone(), &ev, Some(pce_dir.clone()));
        assert_eq!(e.recover().unwrap(), 1, "the job is resumed");
        assert_eq!(ev.wait_finished(job), JobState::Done);
        let again = seal_proof(&*store, job);
        assert_eq!(
            again, first,
            "re-built from the stored C1, synthesised with the recording: the same proof (seeded)"
        );
        let recorded: Vec<_> = std::fs::read_dir(&pce_dir).unwrap().flatten().collect();
        assert!(
            recorded
                .iter()
                .any(|f| f.file_name().to_string_lossy().contains("filecoin-")),
            "the partition circuit was recorded: {recorded:?}"
        );
        assert!(verify_seal(&c1, prover_id_from_actor(MINER), SECTOR, &again).unwrap());
        drop(e);
        let _ = std::fs::remove_dir_all(&work);
    }
}
