//! The engine as nodes of a fleet, in process: two engines on one store (SQLite, and
//! PostgreSQL when `BELLOWS_TEST_POSTGRES` names a server) share jobs, prove each partition
//! once with the proofs a single daemon gives, take over the claims of a node that stopped
//! renewing them (discarding its late results), honour what each node serves, and stop a job
//! cancelled on another node. The multi-process tests (SIGKILL, a database restart, 200 jobs)
//! are in cli/tests/fleet.rs.

use std::sync::Arc;

use super::*;
use crate::store::{testing, Claim, ClaimRequest, Commit, JobStore, PgStore, Serves};

/// Runs `test` on an in-memory SQLite store and, when a server is there, on a fresh PostgreSQL
/// database, with parameters for synthetic 2^8 (one fixture for both).
fn on_each_store(name: &str, test: impl Fn(Arc<dyn JobStore>, &Fixture)) {
    let f = Fixture::new(&format!("fleet-{name}"), 8);
    let test = |store| test(store, &f);
    test(Arc::new(SqliteStore::in_memory().unwrap()));
    if let Some(url) = testing::server_url(name) {
        let db = testing::fresh_database(
            &url,
            &format!("bellows_engine_{name}_{}", std::process::id()),
        )
        .unwrap();
        test(Arc::new(PgStore::connect(&db, None).unwrap()));
    }
}

fn fleet_cfg(id: &str, capacity: usize) -> FleetConfig {
    FleetConfig {
        node_id: id.into(),
        lease: Duration::from_secs(3),
        heartbeat: Duration::from_millis(200),
        poll: Duration::from_millis(20),
        capacity: Some(capacity),
        ..Default::default()
    }
}

fn node(
    store: &Arc<dyn JobStore>,
    fc: FleetConfig,
    backend: Arc<dyn Backend>,
    events: &Events,
) -> Engine {
    let cfg = EngineConfig {
        synthesis_workers: 1,
        observer: Some(events.observer()),
        fleet: Some(fc),
        ..test_config()
    };
    let e = start(cfg, vec![device("cpu", backend, 1, false)], store.clone()).unwrap();
    assert_eq!(e.recover().unwrap(), 0);
    e
}

/// A node that serves nothing: it accepts jobs and proves none.
fn front(store: &Arc<dyn JobStore>, events: &Events) -> Engine {
    let mut none = fleet_cfg("front", 1);
    none.kinds = vec![];
    node(store, none, cpu(), events)
}

/// What `node` claims directly in the store for synthetic circuits: up to `max` partitions
/// under a lease of `lease`.
fn claim(store: &Arc<dyn JobStore>, node: &str, max: usize, lease: Duration) -> Vec<Claim> {
    let serves = Serves {
        kinds: vec!["synthetic".into()],
        max_log_domain: 27,
        params: None,
        excluded: vec![],
    };
    let req = ClaimRequest {
        node,
        serves: &serves,
        max,
        lease,
        max_claims: 5,
        now: 0,
    };
    store.claim(&req).unwrap()
}

/// A job of two partitions accepted by a front node, both claimed directly in the store by
/// `node` under a lease of `lease_ms`: the front node's events, the node, the job and the
/// claims.
fn claimed(
    store: &Arc<dyn JobStore>,
    request: SubmitRequest,
    node: &str,
    lease_ms: u64,
) -> (Events, Engine, JobId, Vec<Claim>) {
    let events = Events::default();
    let front = front(store, &events);
    let job = front.submit(&request, &local()).unwrap();
    let claims = claim(store, node, 2, Duration::from_millis(lease_ms));
    assert_eq!(claims.len(), 2);
    (events, front, job, claims)
}

/// Whether `node`'s late result for partition 0 of `job` under `claim` is refused as stale
/// (and so discarded).
fn late_result_is_stale(store: &Arc<dyn JobStore>, node: &str, claim: &Claim, job: JobId) -> bool {
    let late = crate::store::PartitionRecord {
        job,
        index: 0,
        proof: vec![0; 192],
        inputs: vec![],
        timings: vec![],
    };
    store.commit_partition(node, claim, &late, 0).unwrap() == Commit::Stale
}

/// Waits, within [`WAIT`], until the job `w` follows ends (or the watch closes: the error).
fn watch_to_end(
    w: &mut tokio::sync::watch::Receiver<JobSnapshot>,
) -> std::result::Result<(), tokio::sync::watch::error::RecvError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(WAIT, w.wait_for(|s| s.state.is_finished()))
            .await
            .expect("watch timed out")
            .map(|_| ())
    })
}

/// The node that proved each stored partition of `job`.
fn provers(store: &dyn JobStore, job: JobId) -> Vec<String> {
    store
        .partitions(job)
        .unwrap()
        .iter()
        .map(|p| {
            crate::proto::PartitionTimings::decode(&p.timings[..])
                .unwrap()
                .node
        })
        .collect()
}

#[test]
fn nodes_share_jobs_and_prove_each_partition_once_with_a_single_daemons_proofs() {
    on_each_store("share", |store, f| {
        let (ea, eb) = (Events::default(), Events::default());
        // Node a's device waits until node b has started a partition: both must take part.
        let b_started = wait_hook(&eb, "node b to start a partition", |v| {
            v.iter().any(|e| matches!(e, Event::DeviceStarted { .. }))
        });
        let a = node(&store, fleet_cfg("a", 1), hooked(b_started), &ea);
        let b = node(&store, fleet_cfg("b", 1), cpu(), &eb);
        let jobs: Vec<JobId> = (0..4)
            .map(|i| {
                let via = if i % 2 == 0 { &a } else { &b };
                via.submit(&f.request(2, 0, Some(100 + i)), &local())
                    .unwrap()
            })
            .collect();
        for &j in &jobs {
            // Any node follows any job, from the store.
            for e in [&a, &b] {
                if let JobWatch::Live(mut w) = e.watch(j, &local()).unwrap() {
                    watch_to_end(&mut w).unwrap();
                }
            }
            assert_eq!(a.snapshot(j, &local()).unwrap().state, JobState::Done);
            assert_eq!(b.snapshot(j, &local()).unwrap().done, 2);
        }
        // Exactly once: eight partitions stored, eight PartitionDone events over both nodes,
        // four jobs finished once each.
        let done = |ev: &Events| count(&ev.all(), |e| matches!(e, Event::PartitionDone { .. }));
        // A node emits its events just after its commit, so the store (and so any watch) can
        // show a job done a moment before the committing node's PartitionDone and JobFinished
        // are recorded: wait for them to reach the counts, then make sure no more follow.
        let settle = |count: &dyn Fn() -> usize, want: usize| {
            let start = std::time::Instant::now();
            while count() < want && start.elapsed() < WAIT {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(200));
            count()
        };
        assert_eq!(settle(&|| done(&ea) + done(&eb), 8), 8);
        let finished = |ev: &Events| count(&ev.all(), |e| matches!(e, Event::JobFinished { .. }));
        assert_eq!(settle(&|| finished(&ea) + finished(&eb), 4), 4);
        let mut who: Vec<String> = jobs.iter().flat_map(|&j| provers(&*store, j)).collect();
        assert_eq!(who.len(), 8);
        who.sort();
        who.dedup();
        assert_eq!(
            who,
            vec!["a".to_string(), "b".to_string()],
            "both nodes proved"
        );

        // The proofs are a single daemon's, bit for bit (same seeds).
        let single = engine(
            vec![device("cpu", cpu(), 1, false)],
            &Events::default(),
            |_| {},
        );
        for (i, &j) in jobs.iter().enumerate() {
            let got = proofs(&a, f, j);
            let k = single
                .submit(&f.request(2, 0, Some(100 + i as u64)), &local())
                .unwrap();
            if let JobWatch::Live(mut w) = single.watch(k, &local()).unwrap() {
                let _ = watch_to_end(&mut w);
            }
            assert_eq!(got, proofs(&single, f, k), "job {j}");
        }
        let st = b.status(10, &local()).unwrap();
        assert!(st.jobs.iter().all(|s| s.partitions_done == 2));
    });
}

#[test]
fn a_silent_nodes_claims_are_taken_over_and_its_late_results_discarded() {
    on_each_store("takeover", |store, f| {
        // A node that serves nothing accepts the job; a "ghost" node claims both partitions
        // and never renews its 300 ms leases (it died).
        let (ev, front, job, ghost) = claimed(&store, f.request(2, 3, Some(7)), "ghost", 300);
        // Node b takes them over once the leases expire, and finishes the job.
        let b = node(&store, fleet_cfg("b", 2), cpu(), &ev);
        proved(&b, &ev, f, job);
        assert_eq!(provers(&*store, job), vec!["b", "b"]);
        // The ghost's late result is discarded; the job keeps b's proofs.
        let before = store.partitions(job).unwrap();
        assert!(late_result_is_stale(&store, "ghost", &ghost[0], job));
        assert_eq!(store.partitions(job).unwrap(), before);
        // The front node proved nothing: it serves no kind.
        assert_eq!(front.devices()[0].partitions, 0);
        drop((front, b));
    });
}

#[test]
fn a_job_cancelled_on_one_node_stops_on_the_node_proving_it() {
    on_each_store("cancel", |store, f| {
        let ev = Events::default();
        // Node a proves; its device holds the first partition until the job is cancelled.
        let cancelled = wait_hook(&ev, "the job to be cancelled", |v| {
            let cancel = |e: &Event| {
                matches!(
                    e,
                    Event::JobFinished {
                        state: JobState::Cancelled,
                        ..
                    }
                )
            };
            count(v, cancel) > 0
        });
        let a = node(&store, fleet_cfg("a", 2), hooked(cancelled), &ev);
        let mut sha_only = fleet_cfg("b", 1);
        sha_only.kinds = vec!["sha256".into()];
        let b = node(&store, sha_only, cpu(), &ev);
        let job = b.submit(&f.request(3, 0, Some(1)), &local()).unwrap();
        ev.wait("node a to start the job", |v| {
            v.iter()
                .any(|e| matches!(e, Event::DeviceStarted { job: j, .. } if *j == job))
        });
        assert_eq!(b.cancel(job, &local()).unwrap(), JobState::Cancelled);
        // Node a stops the job (its heartbeat or its discarded result shows it ended); what
        // it proved after the cancel is never stored.
        ev.wait("node a to stop the job", |v| {
            v.iter().any(|e| {
                matches!(e, Event::JobStopped { job: j, state: JobState::Cancelled } if *j == job)
            })
        });
        assert!(store.partitions(job).unwrap().is_empty());
        assert_eq!(
            a.snapshot(job, &local()).unwrap().state,
            JobState::Cancelled
        );
        assert_eq!(b.devices()[0].partitions, 0);
        // Claims of a cancelled job are void.
        let all: Vec<Claim> = (0..3)
            .flat_map(|index| (1..3).map(move |token| Claim { job, index, token }))
            .collect();
        let held: Vec<Claim> = store
            .heartbeat(
                &crate::store::NodeBeat {
                    node: "a",
                    ..Default::default()
                },
                &all,
                Duration::from_secs(3),
            )
            .unwrap();
        assert!(held.is_empty(), "{held:?}");
    });
}

#[test]
fn a_node_that_stops_commits_what_is_on_its_device_and_gives_back_the_rest_at_once() {
    on_each_store("stop", |store, f| {
        let (ev, gate) = (Events::default(), Events::default());
        // Node a's device holds its first partition until the test opens the gate.
        let held = wait_hook(&gate, "the gate", |v| !v.is_empty());
        let mut cfg = fleet_cfg("a", 3);
        cfg.lease = Duration::from_secs(600); // a give-back, not an expiry, frees the rest
        let a = node(&store, cfg, hooked(held), &ev);
        let job = a.submit(&f.request(3, 0, Some(5)), &local()).unwrap();
        ev.wait("node a to start a partition", |v| {
            v.iter()
                .any(|e| matches!(e, Event::DeviceStarted { job: j, .. } if *j == job))
        });
        let stopping = std::thread::spawn(move || a.shutdown());
        (gate.observer().0)(&Event::JobFinished {
            job: 0,
            state: JobState::Done,
        });
        stopping.join().unwrap();
        // The partition on the device was committed; the other two are pending again now.
        assert_eq!(provers(&*store, job), vec!["a"]);
        let b = claim(&store, "b", 3, Duration::from_secs(60));
        assert_eq!(b.len(), 2, "{b:?}");
    });
}

#[test]
fn the_store_and_fleet_settings_parse_and_are_checked() {
    use crate::config::{ServeConfig, StoreKind};
    let c = ServeConfig::from_toml(
        r#"
        store = "postgres://bellows:pw@db:5432/bellows"
        [fleet]
        node_id = "gpu-07"
        lease_s = 12
        poll_ms = 250
        capacity = 4
        max_claims = 2
        kinds = ["synthetic"]
        "#,
    )
    .unwrap();
    assert_eq!(
        c.store_kind().unwrap(),
        StoreKind::Postgres("postgres://bellows:pw@db:5432/bellows".into())
    );
    let f = c.fleet_config("10.0.0.7:7700").unwrap();
    assert_eq!(f.node_id, "gpu-07");
    assert_eq!(f.lease, Duration::from_secs(12));
    assert_eq!(f.heartbeat, Duration::from_secs(4), "a third of the lease");
    assert_eq!(f.poll, Duration::from_millis(250));
    assert_eq!((f.capacity, f.max_claims), (Some(4), 2));
    assert_eq!(f.kinds, vec!["synthetic".to_string()]);
    assert_eq!(f.address, "10.0.0.7:7700");
    // The default store is the embedded one; other values are refused without the password.
    assert_eq!(
        ServeConfig::default().store_kind().unwrap(),
        StoreKind::Sqlite
    );
    let bad = ServeConfig {
        store: Some("mysql://u:secret@h/db".into()),
        ..Default::default()
    };
    let e = bad.store_kind().unwrap_err().to_string();
    assert!(e.contains("PostgreSQL") && !e.contains("secret"), "{e}");
    assert!(ServeConfig::from_toml("[fleet]\nbogus = 1").is_err());
    let mut neg = ServeConfig::default();
    neg.fleet.lease_s = Some(-1.0);
    assert!(neg.fleet_config("").is_err());
    // A heartbeat not shorter than the lease is refused when the node starts.
    let mut fc = fleet_cfg("x", 1);
    fc.heartbeat = fc.lease;
    let cfg = EngineConfig {
        fleet: Some(fc),
        ..test_config()
    };
    let store = Arc::new(SqliteStore::in_memory().unwrap());
    let e = start(cfg, vec![device("cpu", cpu(), 1, false)], store)
        .unwrap_err()
        .to_string();
    assert!(e.contains("heartbeat"), "{e}");
}

#[test]
fn nodes_claim_only_jobs_on_the_parameters_they_declare_or_can_find() {
    on_each_store("params", |store, f| {
        let ev = Events::default();
        // The job is accepted with f's parameters; then the file moves away from that path.
        let front = front(&store, &ev);
        let job = front.submit(&f.request(2, 0, Some(3)), &local()).unwrap();
        let moved = f.dir.join(format!("moved-{}.params", std::process::id()));
        std::fs::rename(&f.params_path, &moved).unwrap();
        // Node a declares nothing: it claims, finds no file at the job's path, gives the
        // partitions back and claims that digest no more.
        let a = node(&store, fleet_cfg("a", 2), cpu(), &ev);
        let gave_back = |v: &[Event]| {
            count(
                v,
                |e| matches!(e, Event::GaveBack { job: j, .. } if *j == job),
            )
        };
        ev.wait("node a to give the job back", |v| gave_back(v) > 0);
        // Node b declares the moved file (same digest): it proves the job with its own copy.
        let mut with_file = fleet_cfg("b", 2);
        with_file.params = vec![moved.clone()];
        let b = node(&store, with_file, cpu(), &ev);
        proved(&b, &ev, f, job);
        assert_eq!(provers(&*store, job), vec!["b", "b"]);
        assert_eq!(a.devices()[0].partitions, 0);
        // Once: node a does not claim parameters it could not find again.
        assert_eq!(gave_back(&ev.all()), 1);
        std::fs::rename(&moved, &f.params_path).unwrap();
        drop((front, a, b));
    });
}

#[test]
fn a_node_restarting_under_its_id_takes_back_what_its_previous_run_held_at_once() {
    on_each_store("sameid", |store, f| {
        // A previous run of node "a" claimed both partitions under a 10-minute lease and died.
        let (ev, front, job, old) = claimed(&store, f.request(2, 0, Some(4)), "a", 600_000);
        // Node "a" starts again: it gives them back and proves them, without waiting the lease.
        let a = node(&store, fleet_cfg("a", 2), cpu(), &ev);
        assert_eq!(ev.wait_finished(job), JobState::Done);
        assert_eq!(provers(&*store, job), vec!["a", "a"]);
        // The old run's results would be discarded.
        assert!(late_result_is_stale(&store, "a", &old[0], job));
        drop((front, a));
    });
}
