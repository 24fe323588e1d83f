//! The cuzk API (`cuzk.v1.ProvingEngine`, docs/curio.md) end to end: a real `bellows serve
//! --cuzk` on localhost, driven by the gRPC client that tonic generates from
//! serve/proto/cuzk/v1/proving.proto — the stubs any client of that .proto has, not Bellows'
//! client library. A 2 KiB sector is sealed with filecoin-proofs; its C1 output (both forms),
//! WinningPoSt and WindowPoSt vanilla proofs and a SnapDeals update's vanilla partition proofs
//! are submitted as Curio submits them, and filecoin-proofs' own verifiers check every proof
//! the daemon returns; a WinningPoSt submitted while a PoRep job runs is proved before it
//! ends (it jumps the queue). Also: a request id submitted again is the same job (and after a
//! restart); the jobs are in the Bellows API's status too; cancel; unknown proof types and
//! malformed vanilla proofs refused with INVALID_ARGUMENT and nothing journaled; a daemon
//! killed mid-proof finishes the job under the same id once restarted; parameter sets
//! preloaded and evicted.
//!
//! The parameters (Bellows' own setup of each 2 KiB circuit, under filecoin-proofs' names) are
//! made once per target folder and shared with bellows-filecoin's and bellows-serve's tests
//! (`bellows_filecoin::testing::shared_params`). The daemons find them through
//! FIL_PROOFS_PARAMETER_CACHE, as a provider's would.

#![cfg(feature = "filecoin")]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bellows_filecoin::filecoin_proofs_api::{
    post, update, PublicReplicaInfo, RegisteredPoStProof, RegisteredSealProof,
    RegisteredUpdateProof, SectorId,
};
use bellows_filecoin::post::PostInput;
use bellows_filecoin::testing::{
    c1_json, init_filecoin_env, lotus_bench_json, post_vanilla, seal_sector, shared_params,
    shared_post_params, shared_update_params, update_sector, SealedSector,
};
use bellows_filecoin::update::UpdateInput;
use bellows_filecoin::{parse_c1, prover_id_from_actor, verify_seal};
use bellows_serve::proto::cuzk::v1 as pb;
use common::daemon::Daemon;
use common::{dir, s};
use pb::await_proof_response::Status as Outcome;
use pb::proving_engine_client::ProvingEngineClient;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use tonic::transport::Channel;

const SEAL: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_1;
const WINNING: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWinning2KiBV1;
const WINDOW: RegisteredPoStProof = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
const UPDATE: RegisteredUpdateProof = RegisteredUpdateProof::StackedDrg2KiBV1;
/// The same proof types as the network numbers them (go-state-types' abi), as Curio sends them.
const SEAL_N: u64 = 5;
const WINNING_N: u64 = 0;
const WINDOW_N: u64 = 10;
const UPDATE_N: u64 = 0;
const MINER: u64 = 1000;
const SECTOR: u64 = 7;
const RANDOMNESS: [u8; 32] = [9u8; 32];
/// Longest wait for one job: many times a 2 KiB proof on 2 cores, for a loaded CI machine.
const WAIT: Duration = Duration::from_secs(1200);

/// What every test proves: a sealed sector's inputs of each kind, and the parameter folder.
struct Fixture {
    sealed: SealedSector,
    winning: PostInput,
    window: PostInput,
    update: UpdateInput,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let work = dir("cuzk", "fixture");
        // The folder the other crates' Filecoin tests share; filecoin-proofs' (and through the
        // environment, every daemon's) parameter folder in this process.
        let shared = Path::new(env!("CARGO_TARGET_TMPDIR")).join("filecoin-params");
        let (params, _) = init_filecoin_env(&shared, &work);
        let sealed = seal_sector(
            SEAL,
            &work.join("sector"),
            prover_id_from_actor(MINER),
            SECTOR,
            [3u8; 32],
            [5u8; 32],
            &mut ChaCha20Rng::seed_from_u64(2048),
        )
        .expect("sealing a 2 KiB sector");
        let rng = |seed| ChaCha20Rng::seed_from_u64(seed);
        shared_params(SEAL, &params, &mut rng(11)).unwrap();
        shared_post_params(WINNING, &params, &mut rng(21)).unwrap();
        shared_post_params(WINDOW, &params, &mut rng(22)).unwrap();
        shared_update_params(UPDATE, &params, &mut rng(31)).unwrap();
        let update =
            update_sector(&sealed, SEAL, UPDATE, &work.join("update"), &mut rng(77)).unwrap();
        Fixture {
            winning: post_vanilla(WINNING, &sealed, RANDOMNESS).unwrap(),
            window: post_vanilla(WINDOW, &sealed, RANDOMNESS).unwrap(),
            update,
            sealed,
        }
    })
}

/// `bellows serve` on a fresh state folder under `d` (kept across a restart), serving the
/// cuzk API on TCP and on a unix socket.
fn daemon(d: &Path) -> Daemon {
    let state = d.join("state");
    let sock = d.join("cuzk.sock");
    Daemon::spawn(
        &[
            "--state-dir",
            s(&state),
            "--listen",
            "127.0.0.1:0",
            "--cuzk",
            "127.0.0.1:0",
            "--cuzk",
            &format!("unix:{}", s(&sock)),
            // The parameters were made by this test run (curve checks only: the subgroup
            // checks of a 1.1 GB file would be most of the test's time on 2 cores).
            "--params-check",
            "curve-only",
        ],
        &d.join("daemon.log"),
    )
}

/// The generated client on `addr` (`IP:PORT` or `unix:PATH`).
async fn client(addr: &str) -> ProvingEngineClient<Channel> {
    let uri = if addr.starts_with("unix:") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    };
    let ch = tonic::transport::Endpoint::from_shared(uri)
        .unwrap()
        .connect()
        .await
        .unwrap();
    ProvingEngineClient::new(ch)
}

fn porep(id: &str, c1: Vec<u8>) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: pb::ProofKind::PorepSealCommit as i32,
        sector_size: 2048,
        registered_proof: SEAL_N,
        vanilla_proof: c1,
        sector_number: SECTOR,
        miner_id: MINER,
        ..Default::default()
    }
}

fn post_request(id: &str, kind: pb::ProofKind, n: u64, p: &PostInput) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: kind as i32,
        registered_proof: n,
        vanilla_proofs: p.vanilla_proofs.clone(),
        miner_id: MINER,
        randomness: p.randomness.to_vec(),
        partition_index: 0,
        ..Default::default()
    }
}

fn snap(id: &str, u: &UpdateInput) -> pb::SubmitProofRequest {
    pb::SubmitProofRequest {
        request_id: id.into(),
        proof_kind: pb::ProofKind::SnapDealsUpdate as i32,
        sector_size: 2048,
        registered_proof: UPDATE_N,
        vanilla_proofs: u.vanilla_proofs.clone(),
        sector_number: SECTOR,
        miner_id: MINER,
        comm_r_old: u.comm_r_old.to_vec(),
        comm_r_new: u.comm_r_new.to_vec(),
        comm_d_new: u.comm_d_new.to_vec(),
        ..Default::default()
    }
}

async fn submit(c: &mut ProvingEngineClient<Channel>, r: pb::SubmitProofRequest) -> String {
    c.submit_proof(r).await.unwrap().into_inner().job_id
}

async fn wait(c: &mut ProvingEngineClient<Channel>, job: &str) -> pb::AwaitProofResponse {
    let r = c
        .await_proof(pb::AwaitProofRequest {
            job_id: job.into(),
            timeout_ms: WAIT.as_millis() as u64,
        })
        .await
        .unwrap()
        .into_inner();
    assert_ne!(r.status, Outcome::Timeout as i32, "job {job} did not end");
    r
}

/// A finished job's proof, after checking that it completed with real timings.
fn completed(r: &pb::AwaitProofResponse) -> Vec<u8> {
    assert_eq!(
        r.status,
        Outcome::Completed as i32,
        "job {}: {}",
        r.job_id,
        r.error_message
    );
    assert!(
        r.total_ms > 0 && r.total_ms >= r.queue_wait_ms,
        "timings: {r:?}"
    );
    assert!(r.synthesis_ms + r.gpu_compute_ms > 0, "timings: {r:?}");
    r.proof.clone()
}

fn seal_ok(f: &Fixture, proof: &[u8]) -> bool {
    let c1 = parse_c1(&c1_json(&f.sealed.c1), "c1").unwrap();
    verify_seal(&c1, prover_id_from_actor(MINER), SECTOR, proof).unwrap()
}

fn post_ok(f: &Fixture, p: RegisteredPoStProof, proof: &[u8]) -> bool {
    let replicas = BTreeMap::from([(
        SectorId::from(SECTOR),
        PublicReplicaInfo::new(p, f.sealed.c1.comm_r),
    )]);
    let prover = prover_id_from_actor(MINER);
    match p {
        WINNING => post::verify_winning_post(&RANDOMNESS, proof, &replicas, prover),
        _ => post::verify_window_post(&RANDOMNESS, &[(p, proof)], &replicas, prover),
    }
    .unwrap()
}

fn snap_ok(f: &Fixture, proof: &[u8]) -> bool {
    let u = &f.update;
    update::verify_empty_sector_update_proof(
        UPDATE,
        proof,
        u.comm_r_old,
        u.comm_r_new,
        u.comm_d_new,
    )
    .unwrap()
}

/// Whether a job has started and not ended (GetStatus's queues).
async fn running(c: &mut ProvingEngineClient<Channel>) -> bool {
    let st = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    st.queues.iter().any(|q| q.in_progress > 0)
}

/// The tier a GetStatus reports for `circuit`, if it lists it.
async fn tier(c: &mut ProvingEngineClient<Channel>, circuit: &str) -> Option<i32> {
    let st = c
        .get_status(pb::GetStatusRequest {})
        .await
        .unwrap()
        .into_inner();
    st.loaded_srs
        .iter()
        .find(|s| s.circuit_id == circuit)
        .map(|s| s.tier)
}

#[test]
fn every_proof_kind_through_the_cuzk_api_is_accepted_by_filecoin_proofs() {
    let f = fixture();
    let d = dir("cuzk", "kinds");
    let daemon = daemon(&d);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut unix = client(&daemon.cuzk[1]).await;
        let mut tcp = client(&daemon.cuzk[0]).await;

        // PoRep through Prove (what Curio's client calls), over the unix socket, from
        // lotus-bench's wrapper form of the C1 output; a WinningPoSt (CRITICAL by default)
        // submitted while it runs is proved first: it jumps the queue, with workers of its own.
        let porep_call = tokio::spawn(async move {
            unix.prove(pb::ProveRequest {
                submit: Some(porep("sector-7", lotus_bench_json(&f.sealed.c1, SECTOR))),
            })
            .await
            .unwrap()
            .into_inner()
            .result
            .unwrap()
        });
        let t = Instant::now();
        while !running(&mut tcp).await {
            assert!(t.elapsed() < WAIT, "the PoRep job never started");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let win = submit(
            &mut tcp,
            post_request("win-1", pb::ProofKind::WinningPost, WINNING_N, &f.winning),
        )
        .await;
        let win_proof = completed(&wait(&mut tcp, &win).await);
        assert!(
            !porep_call.is_finished(),
            "the WinningPoSt finished while the PoRep job was still running"
        );
        let r = porep_call.await.unwrap();
        let proof = completed(&r);
        assert_eq!(proof.len(), 192, "one partition at 2 KiB");
        assert!(
            seal_ok(f, &proof),
            "filecoin-proofs' verify_seal accepts it"
        );
        assert!(post_ok(f, WINNING, &win_proof), "verify_winning_post");

        // The other kinds through SubmitProof and AwaitProof, over TCP.
        let window = submit(
            &mut tcp,
            post_request(
                "wdpost-1",
                pb::ProofKind::WindowPostPartition,
                WINDOW_N,
                &f.window,
            ),
        )
        .await;
        let upd = submit(&mut tcp, snap("snap-1", &f.update)).await;
        let window_proof = completed(&wait(&mut tcp, &window).await);
        assert!(post_ok(f, WINDOW, &window_proof), "verify_window_post");
        let snap_proof = completed(&wait(&mut tcp, &upd).await);
        assert!(snap_ok(f, &snap_proof), "verify_empty_sector_update_proof");
        // The verifiers check something: the PoRep proof is not another sector's, the
        // WinningPoSt proof not a WindowPoSt's.
        let c1 = parse_c1(&c1_json(&f.sealed.c1), "c1").unwrap();
        assert!(!verify_seal(&c1, prover_id_from_actor(MINER), SECTOR + 1, &proof).unwrap());
        assert!(!post_ok(f, WINDOW, &win_proof));

        // The same request id and request: the same job, also when awaited by its request id.
        let again = submit(
            &mut tcp,
            post_request("win-1", pb::ProofKind::WinningPost, WINNING_N, &f.winning),
        )
        .await;
        assert_eq!(again, win, "a request submitted again is the same job");
        assert_eq!(completed(&wait(&mut tcp, "win-1").await), win_proof);

        // Refused with INVALID_ARGUMENT, naming what is wrong; nothing journaled.
        let mut unknown = porep("bad-1", c1_json(&f.sealed.c1));
        unknown.registered_proof = 999;
        let e = tcp.submit_proof(unknown).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains("999"), "{}", e.message());
        let e = tcp
            .submit_proof(porep("bad-2", b"{\"not\": \"a C1 output\"}".to_vec()))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        assert!(e.message().contains("C1 output"), "{}", e.message());
        let mut garbled = f.winning.clone();
        garbled.vanilla_proofs[0].truncate(40);
        let e = tcp
            .submit_proof(post_request(
                "bad-3",
                pb::ProofKind::WinningPost,
                WINNING_N,
                &garbled,
            ))
            .await
            .unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        let mut wrong_kind = post_request("bad-4", pb::ProofKind::WinningPost, WINDOW_N, &f.window);
        wrong_kind.randomness = RANDOMNESS.to_vec();
        let e = tcp.submit_proof(wrong_kind).await.unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");
        let e = tcp
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: "porep-8m".into(),
            })
            .await
            .unwrap_err();
        assert!(
            e.message().contains("v28-stacked-proof-of-replication"),
            "a missing parameters file is named: {}",
            e.message()
        );

        // Cancel: a queued or running job ends CANCELLED; its request id submitted again
        // after that is a new job. Job numbers are consecutive: the refusals above left none.
        let cancel_me = submit(&mut tcp, snap("snap-2", &f.update)).await;
        assert_eq!(
            cancel_me.parse::<u64>().unwrap(),
            upd.parse::<u64>().unwrap() + 1,
            "nothing was journaled for the refused requests"
        );
        tcp.cancel_proof(pb::CancelProofRequest {
            job_id: "snap-2".into(),
        })
        .await
        .unwrap();
        let r = wait(&mut tcp, &cancel_me).await;
        assert_eq!(r.status, Outcome::Cancelled as i32, "{r:?}");
        assert!(r.proof.is_empty());
        let anew = submit(&mut tcp, snap("snap-2", &f.update)).await;
        assert_ne!(
            anew, cancel_me,
            "a cancelled job's request id makes a new job"
        );
        tcp.cancel_proof(pb::CancelProofRequest { job_id: anew })
            .await
            .unwrap();

        // Parameter sets: evicted, then preloaded again.
        let ev = tcp
            .evict_srs(pb::EvictSrsRequest {
                circuit_id: "winning-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(ev.was_loaded && ev.freed_bytes > 0, "{ev:?}");
        assert!(
            matches!(tier(&mut tcp, "winning-2k").await, None | Some(2)),
            "evicted: cold or gone"
        );
        let pre = tcp
            .preload_srs(pb::PreloadSrsRequest {
                circuit_id: "winning-2k".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert!(!pre.already_loaded, "{pre:?}");
        assert!(
            matches!(tier(&mut tcp, "winning-2k").await, Some(0 | 1)),
            "preloaded: hot or warm"
        );

        // One engine behind both APIs: the Bellows API's Status lists the jobs submitted
        // through the cuzk API (the same caller: loopback TCP), done, with their kinds.
        let mut bellows = bellows_serve::proto::prover_client::ProverClient::connect(format!(
            "http://{}",
            daemon.addr
        ))
        .await
        .unwrap();
        let listed = bellows
            .status(bellows_serve::proto::StatusRequest { max_jobs: 100 })
            .await
            .unwrap()
            .into_inner()
            .jobs;
        for (job, kind) in [
            (&win, "WinningPoSt"),
            (&window, "WindowPoSt"),
            (&upd, "SnapDeals"),
        ] {
            let j = listed
                .iter()
                .find(|j| j.job_id.to_string() == *job)
                .unwrap_or_else(|| panic!("job {job} not in the Bellows API's status: {listed:?}"));
            assert_eq!(
                j.state,
                bellows_serve::proto::JobState::Done as i32,
                "{j:?}"
            );
            assert!(j.circuit.contains(kind), "{j:?}");
        }

        // Status and metrics: four proofs done, nothing left queued once the cancelled jobs
        // have ended.
        let t = Instant::now();
        let st = loop {
            let st = tcp
                .get_status(pb::GetStatusRequest {})
                .await
                .unwrap()
                .into_inner();
            if st.queues.iter().all(|q| q.pending + q.in_progress == 0) || t.elapsed() > WAIT {
                break st;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(st.total_proofs_completed, 4, "{st:?}");
        assert!(
            st.queues.iter().all(|q| q.pending + q.in_progress == 0),
            "{st:?}"
        );
        assert!(!st.gpus.is_empty(), "the devices are listed: {st:?}");
        let m = tcp
            .get_metrics(pb::GetMetricsRequest {})
            .await
            .unwrap()
            .into_inner()
            .prometheus_text;
        assert!(m.contains("bellows_"), "{m}");
    });
}

#[test]
fn a_job_killed_mid_proof_completes_under_its_request_id_after_a_restart() {
    let f = fixture();
    let d = dir("cuzk", "restart");
    let mut first = daemon(&d);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The bare SealCommitPhase1Output JSON this time.
    let req = porep("sector-7-c2", c1_json(&f.sealed.c1));
    let job = rt.block_on(async {
        let mut c = client(&first.cuzk[1]).await;
        let job = submit(&mut c, req.clone()).await;
        // Killed once the job has started.
        let t = Instant::now();
        while !running(&mut c).await {
            assert!(t.elapsed() < WAIT, "the job never started");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        job
    });
    first.kill9();

    let second = daemon(&d);
    rt.block_on(async {
        let mut c = client(&second.cuzk[1]).await;
        assert_eq!(
            submit(&mut c, req).await,
            job,
            "the journal still knows the request id after the restart"
        );
        let r = wait(&mut c, "sector-7-c2").await;
        assert_eq!(r.job_id, job);
        let proof = completed(&r);
        assert!(
            seal_ok(f, &proof),
            "filecoin-proofs' verify_seal accepts it"
        );
    });
    let log = second.log();
    assert!(!log.contains("panicked"), "{log}");
}
