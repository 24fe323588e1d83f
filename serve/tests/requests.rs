//! Every gRPC request message of `bellows.v1.Prover` with random fields and sizes, handed to
//! the service as a client would send it (#43): no panic, no allocation sized by a field, an
//! answer within a bound, and a status that says what is wrong (the codes a client acts on).
//! Raw bytes decoded as a request first go through the same path. CI runs 64 cases per
//! message (`PROPTEST_CASES=N` runs more); the whole target takes a few seconds.

mod common;

use std::{
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use bellows_serve::{
    engine::EngineConfig,
    identity::Identity,
    proto::{self, prover_server::Prover},
    server::ProverService,
    store::SqliteStore,
    tonic::{self, Code, Request},
};
use proptest::{prelude::*, strategy::ValueTree};
use prost::Message;

/// An answer takes at most this long (refusals are immediate; nothing here proves for long).
const BOUND: Duration = Duration::from_secs(10);

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

/// One service for every case: parameters for synthetic 2^6 in its parameter folder, small
/// limits so that an accepted job is cheap.
struct World {
    rt: tokio::runtime::Runtime,
    svc: ProverService,
    params: String,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        let dir = common::dir("requests");
        let params = common::synthetic_params(&dir, 6);
        let mut cfg = EngineConfig::default();
        cfg.synthesis_workers = 1;
        cfg.finalizers = 1;
        cfg.params_dirs = vec![dir.clone()];
        cfg.limits.max_partitions = 4;
        cfg.limits.max_active_jobs = 8;
        cfg.limits.max_log_domain = 10;
        let engine = common::cpu_engine(cfg, Arc::new(SqliteStore::in_memory().unwrap()));
        World {
            rt: tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
            svc: ProverService::new(Arc::new(engine)),
            params: params.display().to_string(),
        }
    })
}

/// `msg` as the service receives it from a local client.
fn request<T>(msg: T) -> Request<T> {
    let mut r = Request::new(msg);
    r.extensions_mut().insert(Identity::local());
    r
}

/// Runs a call and checks the answer: in time, and a status among `codes` when refused.
fn answer<T>(
    what: &str,
    f: impl std::future::Future<Output = Result<T, tonic::Status>>,
    codes: &[Code],
) -> Option<T> {
    let w = world();
    let t = Instant::now();
    let r = w.rt.block_on(f);
    assert!(t.elapsed() < BOUND, "{what} took {:?}", t.elapsed());
    match r {
        Ok(v) => Some(v),
        Err(s) => {
            assert!(
                codes.contains(&s.code()),
                "{what}: {:?} {}",
                s.code(),
                s.message()
            );
            assert!(!s.message().is_empty(), "{what}: a refusal says why");
            None
        }
    }
}

/// The codes a refused Submit may carry.
const SUBMIT_REFUSALS: &[Code] = &[
    Code::InvalidArgument,
    Code::NotFound,
    Code::ResourceExhausted,
    Code::Unimplemented,
];

fn text(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z0-9/._-]{0,24}",
        proptest::collection::vec(any::<char>(), 0..64).prop_map(|v| v.into_iter().collect()),
        (0..max).prop_map(|n| "x".repeat(n)),
    ]
}

fn params_path() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(world().params.clone()),
        1 => Just("/etc/passwd".to_string()),
        1 => Just("/dev/zero".to_string()),
        1 => Just(format!("{}/../../etc/passwd", world().params)),
        1 => text(10_000),
    ]
}

fn submit_request() -> impl Strategy<Value = proto::SubmitRequest> {
    let builtin = (
        prop_oneof![
            4 => Just("synthetic".to_string()),
            1 => Just("sha256".to_string()),
            1 => text(200),
        ],
        prop_oneof![
            4 => Just(Some(6u32)),
            1 => proptest::option::of(prop_oneof![0u32..12, any::<u32>()]),
        ],
        prop_oneof![
            4 => Just(None),
            1 => proptest::option::of(prop_oneof![0u32..=100, any::<u32>()]),
        ],
        prop_oneof![4 => Just(None), 1 => proptest::option::of(any::<u64>())],
    )
        .prop_map(|(name, log_size, bits_pct, bytes)| {
            proto::submit_request::Kind::Builtin(proto::BuiltinCircuit {
                name,
                log_size,
                bits_pct,
                bytes,
            })
        });
    let porep = (proptest::collection::vec(any::<u8>(), 0..512), text(5000)).prop_map(
        |(c1, params_dir)| proto::submit_request::Kind::PorepC2(proto::PorepC2 { c1, params_dir }),
    );
    let outputs =
        (text(6000), text(6000), any::<bool>()).prop_map(|(p, i, force)| proto::ClientOutputs {
            proof_out: p,
            inputs_out: i,
            force,
        });
    let what = (
        prop_oneof![1 => Just(None), 6 => builtin.prop_map(Some), 1 => porep.prop_map(Some)],
        params_path(),
        prop_oneof![4 => Just(Vec::new()), 1 => proptest::collection::vec(any::<u8>(), 0..64)],
    );
    let how = (
        prop_oneof![4 => 1u32..5, 1 => any::<u32>()],
        any::<u64>(),
        proptest::option::of(any::<u64>()),
        any::<i32>(),
        any::<bool>(),
        proptest::option::of(outputs),
    );
    (what, how).prop_map(|((kind, params_path, params_digest), how)| {
        let (partitions, witness_seed, seed, priority, skip_subgroup_checks, outputs) = how;
        proto::SubmitRequest {
            kind,
            params_path,
            params_digest,
            partitions,
            witness_seed,
            seed,
            priority,
            skip_subgroup_checks,
            outputs,
        }
    })
}

/// Submits, and cancels an accepted job at once (the engine stays idle between cases);
/// returns whether the job was accepted.
fn submit(req: proto::SubmitRequest) -> bool {
    let w = world();
    let Some(reply) = answer("Submit", w.svc.submit(request(req)), SUBMIT_REFUSALS) else {
        return false;
    };
    let id = reply.into_inner().job_id;
    answer(
        "Cancel",
        w.svc.cancel(request(proto::CancelRequest { job_id: id })),
        &[],
    );
    true
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn submit_requests_get_a_job_or_a_clear_refusal(req in submit_request()) {
        let _ = submit(req);
    }

    #[test]
    fn raw_bytes_are_decoded_or_refused_like_a_clients_request(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
        if let Ok(req) = proto::SubmitRequest::decode(&bytes[..]) {
            let _ = submit(req);
        }
    }

    #[test]
    fn the_other_calls_answer_any_fields(
        job in prop_oneof![0u64..4, any::<u64>()],
        flags in any::<(bool, bool)>(),
        max_jobs in any::<u32>(),
        path in params_path(),
        digest in proptest::collection::vec(any::<u8>(), 0..64),
    ) {
        let w = world();
        if let Some(stream) = answer(
            "Await",
            w.svc.r#await(request(proto::AwaitRequest { job_id: job, final_only: flags.0, keep_unfetched: flags.1 })),
            &[Code::NotFound],
        ) {
            // A job of an earlier case: its stream ends with its final event.
            let mut s = stream.into_inner();
            let last = w.rt.block_on(async {
                let mut last = None;
                while let Some(ev) = tokio_stream::StreamExt::next(&mut s).await {
                    last = Some(ev);
                }
                last
            });
            prop_assert!(last.is_some());
        }
        answer("Cancel", w.svc.cancel(request(proto::CancelRequest { job_id: job })), &[Code::NotFound]);
        answer("Fetched", w.svc.fetched(request(proto::FetchedRequest { job_id: job })), &[Code::NotFound]);
        let st = answer("Status", w.svc.status(request(proto::StatusRequest { max_jobs })), &[]).unwrap();
        prop_assert!(st.into_inner().jobs.len() <= 10_000);
        answer(
            "PreloadParams",
            w.svc.preload_params(request(proto::PreloadParamsRequest { path: path.clone(), skip_subgroup_checks: flags.0 })),
            &[Code::InvalidArgument, Code::NotFound],
        );
        answer(
            "EvictParams",
            w.svc.evict_params(request(proto::EvictParamsRequest { digest, path })),
            &[Code::InvalidArgument],
        );
        answer("Backends", w.svc.backends(request(proto::BackendsRequest {})), &[]);
    }
}

#[test]
fn a_request_that_did_not_pass_the_authentication_is_refused() {
    let w = world();
    let r = w.rt.block_on(
        w.svc
            .status(Request::new(proto::StatusRequest { max_jobs: 1 })),
    );
    assert_eq!(r.unwrap_err().code(), Code::Internal);
}

#[test]
fn the_strategies_reach_accepted_jobs() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let accepted = (0..64)
        .filter(|_| submit(submit_request().new_tree(&mut runner).unwrap().current()))
        .count();
    assert!(accepted > 0, "no generated request was accepted");
}
