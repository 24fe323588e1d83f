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
/// database.
fn on_each_store(name: &str, test: impl Fn(Arc<dyn JobStore>)) {
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
        ..Default::default()
    };
    let e = Engine::start(
        cfg,
        vec![device("cpu", backend, 1, false)],
        store.clone(),
        Arc::new(Metrics::new()),
    )
    .unwrap();
    assert_eq!(e.recover().unwrap(), 0);
    e
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
    let f = Fixture::new("fleet-share", 8);
    on_each_store("share", |store| {
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
                via.submit(&f.request(2, 0, Some(100 + i))).unwrap()
            })
            .collect();
        for &j in &jobs {
            // Any node follows any job, from the store.
            for e in [&a, &b] {
                if let JobWatch::Live(mut w) = e.watch(j).unwrap() {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    rt.block_on(async {
                        tokio::time::timeout(WAIT, w.wait_for(|s| s.state.is_finished()))
                            .await
                            .expect("watch timed out")
                            .unwrap();
                    });
                }
            }
            assert_eq!(a.snapshot(j).unwrap().state, JobState::Done);
            assert_eq!(b.snapshot(j).unwrap().done, 2);
        }
        // Exactly once: eight partitions stored, eight PartitionDone events over both nodes,
        // four jobs finished once each.
        let done = |ev: &Events| {
            ev.all()
                .iter()
                .filter(|e| matches!(e, Event::PartitionDone { .. }))
                .count()
        };
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
        let finished = |ev: &Events| {
            ev.all()
                .iter()
                .filter(|e| matches!(e, Event::JobFinished { .. }))
                .count()
        };
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
            let got = proofs(&a, &f, j);
            let k = single
                .submit(&f.request(2, 0, Some(100 + i as u64)))
                .unwrap();
            if let JobWatch::Live(mut w) = single.watch(k).unwrap() {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    let _ = w.wait_for(|s| s.state.is_finished()).await;
                });
            }
            assert_eq!(got, proofs(&single, &f, k), "job {j}");
        }
        let st = b.status(10).unwrap();
        assert!(st.jobs.iter().all(|s| s.partitions_done == 2));
    });
}

#[test]
fn a_silent_nodes_claims_are_taken_over_and_its_late_results_discarded() {
    let f = Fixture::new("fleet-takeover", 8);
    on_each_store("takeover", |store| {
        let ev = Events::default();
        // A node that serves nothing accepts the job; a "ghost" node claims both partitions
        // and never renews its 300 ms leases (it died).
        let mut none = fleet_cfg("front", 1);
        none.kinds = vec![];
        let front = node(&store, none, cpu(), &ev);
        let job = front.submit(&f.request(2, 3, Some(7))).unwrap();
        let serves = Serves {
            kinds: vec!["synthetic".into()],
            max_log_domain: 27,
            params: None,
            excluded: vec![],
        };
        let ghost = store
            .claim(&ClaimRequest {
                node: "ghost",
                serves: &serves,
                max: 2,
                lease: Duration::from_millis(300),
                max_claims: 5,
                now: 0,
            })
            .unwrap();
        assert_eq!(ghost.len(), 2);
        // Node b takes them over once the leases expire, and finishes the job.
        let b = node(&store, fleet_cfg("b", 2), cpu(), &ev);
        assert_eq!(ev.wait_finished(job), JobState::Done);
        assert_eq!(provers(&*store, job), vec!["b", "b"]);
        proofs(&b, &f, job);
        // The ghost's late result is discarded; the job keeps b's proofs.
        let before = store.partitions(job).unwrap();
        let late = crate::store::PartitionRecord {
            job,
            index: 0,
            proof: vec![0; 192],
            inputs: vec![],
            timings: vec![],
        };
        assert_eq!(
            store
                .commit_partition("ghost", &ghost[0], &late, 0)
                .unwrap(),
            Commit::Stale
        );
        assert_eq!(store.partitions(job).unwrap(), before);
        // The front node proved nothing: it serves no kind.
        assert_eq!(front.devices()[0].partitions, 0);
        drop((front, b));
    });
}

#[test]
fn a_job_cancelled_on_one_node_stops_on_the_node_proving_it() {
    let f = Fixture::new("fleet-cancel", 8);
    on_each_store("cancel", |store| {
        let ev = Events::default();
        // Node a proves; its device holds the first partition until the job is cancelled.
        let cancelled = wait_hook(&ev, "the job to be cancelled", |v| {
            v.iter().any(|e| {
                matches!(
                    e,
                    Event::JobFinished {
                        state: JobState::Cancelled,
                        ..
                    }
                )
            })
        });
        let a = node(&store, fleet_cfg("a", 2), hooked(cancelled), &ev);
        let mut sha_only = fleet_cfg("b", 1);
        sha_only.kinds = vec!["sha256".into()];
        let b = node(&store, sha_only, cpu(), &ev);
        let job = b.submit(&f.request(3, 0, Some(1))).unwrap();
        ev.wait("node a to start the job", |v| {
            v.iter()
                .any(|e| matches!(e, Event::DeviceStarted { job: j, .. } if *j == job))
        });
        assert_eq!(b.cancel(job).unwrap(), JobState::Cancelled);
        // Node a stops the job (its heartbeat or its discarded result shows it ended); what
        // it proved after the cancel is never stored.
        ev.wait("node a to stop the job", |v| {
            v.iter().any(|e| {
                matches!(e, Event::JobStopped { job: j, state: JobState::Cancelled } if *j == job)
            })
        });
        assert!(store.partitions(job).unwrap().is_empty());
        assert_eq!(a.snapshot(job).unwrap().state, JobState::Cancelled);
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
    let f = Fixture::new("fleet-stop", 8);
    on_each_store("stop", |store| {
        let (ev, gate) = (Events::default(), Events::default());
        // Node a's device holds its first partition until the test opens the gate.
        let held = wait_hook(&gate, "the gate", |v| !v.is_empty());
        let mut cfg = fleet_cfg("a", 3);
        cfg.lease = Duration::from_secs(600); // a give-back, not an expiry, frees the rest
        let a = node(&store, cfg, hooked(held), &ev);
        let job = a.submit(&f.request(3, 0, Some(5))).unwrap();
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
        let serves = Serves {
            kinds: vec!["synthetic".into()],
            max_log_domain: 27,
            params: None,
            excluded: vec![],
        };
        let b = store
            .claim(&ClaimRequest {
                node: "b",
                serves: &serves,
                max: 3,
                lease: Duration::from_secs(60),
                max_claims: 5,
                now: 0,
            })
            .unwrap();
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
    let e = Engine::start(
        EngineConfig {
            fleet: Some(fc),
            ..Default::default()
        },
        vec![device("cpu", cpu(), 1, false)],
        Arc::new(SqliteStore::in_memory().unwrap()),
        Arc::new(Metrics::new()),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("heartbeat"), "{e}");
}

#[test]
fn nodes_claim_only_jobs_on_the_parameters_they_declare_or_can_find() {
    let f = Fixture::new("fleet-params", 8);
    on_each_store("params", |store| {
        let ev = Events::default();
        // The job is accepted with f's parameters; then the file moves away from that path.
        let mut none = fleet_cfg("front", 1);
        none.kinds = vec![];
        let front = node(&store, none, cpu(), &ev);
        let job = front.submit(&f.request(2, 0, Some(3))).unwrap();
        let moved = f.dir.join(format!("moved-{}.params", std::process::id()));
        std::fs::rename(&f.params_path, &moved).unwrap();
        // Node a declares nothing: it claims, finds no file at the job's path, gives the
        // partitions back and claims that digest no more.
        let a = node(&store, fleet_cfg("a", 2), cpu(), &ev);
        let gave_back = |v: &[Event]| {
            v.iter()
                .filter(|e| matches!(e, Event::GaveBack { job: j, .. } if *j == job))
                .count()
        };
        ev.wait("node a to give the job back", |v| gave_back(v) > 0);
        // Node b declares the moved file (same digest): it proves the job with its own copy.
        let mut with_file = fleet_cfg("b", 2);
        with_file.params = vec![moved.clone()];
        let b = node(&store, with_file, cpu(), &ev);
        assert_eq!(ev.wait_finished(job), JobState::Done);
        assert_eq!(provers(&*store, job), vec!["b", "b"]);
        proofs(&b, &f, job);
        assert_eq!(a.devices()[0].partitions, 0);
        // Once: node a does not claim parameters it could not find again.
        assert_eq!(gave_back(&ev.all()), 1);
        std::fs::rename(&moved, &f.params_path).unwrap();
        drop((front, a, b));
    });
}

#[test]
fn a_node_restarting_under_its_id_takes_back_what_its_previous_run_held_at_once() {
    let f = Fixture::new("fleet-restart-id", 8);
    on_each_store("sameid", |store| {
        let ev = Events::default();
        let mut none = fleet_cfg("front", 1);
        none.kinds = vec![];
        let front = node(&store, none, cpu(), &ev);
        let job = front.submit(&f.request(2, 0, Some(4))).unwrap();
        // A previous run of node "a" claimed both partitions under a 10-minute lease and died.
        let serves = Serves {
            kinds: vec!["synthetic".into()],
            max_log_domain: 27,
            params: None,
            excluded: vec![],
        };
        let old = store
            .claim(&ClaimRequest {
                node: "a",
                serves: &serves,
                max: 2,
                lease: Duration::from_secs(600),
                max_claims: 5,
                now: 0,
            })
            .unwrap();
        assert_eq!(old.len(), 2);
        // Node "a" starts again: it gives them back and proves them, without waiting the lease.
        let a = node(&store, fleet_cfg("a", 2), cpu(), &ev);
        assert_eq!(ev.wait_finished(job), JobState::Done);
        assert_eq!(provers(&*store, job), vec!["a", "a"]);
        // The old run's results would be discarded.
        let late = crate::store::PartitionRecord {
            job,
            index: 0,
            proof: vec![0; 192],
            inputs: vec![],
            timings: vec![],
        };
        assert_eq!(
            store.commit_partition("a", &old[0], &late, 0).unwrap(),
            Commit::Stale
        );
        drop((front, a));
    });
}
