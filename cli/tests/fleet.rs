//! A fleet of `bellows serve` daemons on one PostgreSQL database, through the built binary:
//! three daemons on localhost share the jobs; one is killed with SIGKILL mid-job and its
//! partitions finish on the others; the database is restarted mid-run and nothing is lost or
//! duplicated; 200 small jobs submitted at once through all three complete exactly once, urgent
//! ones first, no daemon holding more than its capacity.
//!
//! The database comes from `BELLOWS_TEST_POSTGRES` (a server URL; each test makes a database of
//! its own) and the restart test runs `BELLOWS_TEST_POSTGRES_RESTART` (a shell command that
//! restarts that server and returns once it accepts connections). `.ci/run` starts a server and
//! sets both. Without them the tests skip with a message, unless `CI=true` or
//! `BELLOWS_POSTGRES_REQUIRED=1`, where they fail. The tests run one at a time (one restarts
//! the server). Circuits are synthetic 2^8 and 2^10 on the CPU backend.

mod common;

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
    process::Command,
    sync::{Mutex, MutexGuard},
    time::{Duration, Instant},
};

use bellows_core::groth16::{
    io::{read_verifying_key, PointCheck},
    verifier::{prepare_verifying_key, verify_proof},
    Proof, VerifyingKey,
};
use bellows_serve::{job::decode_inputs, proto, store::testing};
use common::daemon::{events, synthetic_request, Daemon};
use common::{dir, params_and_key, run, s};

/// One test at a time: the restart test takes the server away from the others.
static SERIAL: Mutex<()> = Mutex::new(());

/// Bound on every wait; a hang becomes a failure.
const WAIT: Duration = Duration::from_secs(240);

/// A daemon of the fleet; killed when dropped.
struct Node {
    id: String,
    d: Daemon,
}

impl Node {
    fn start(d: &Path, id: &str, db: &str, capacity: usize) -> Node {
        let state = d.join(id);
        std::fs::create_dir_all(&state).unwrap();
        let config = state.join("bellows.toml");
        std::fs::write(
            &config,
            format!(
                "store = {db:?}\nsynthesis_workers = 1\n[fleet]\nnode_id = {id:?}\nlease_s = 3\n\
                 heartbeat_s = 0.5\npoll_ms = 100\ncapacity = {capacity}\n"
            ),
        )
        .unwrap();
        let extra = ["--config", s(&config), "--metrics-listen", "127.0.0.1:0"];
        Node {
            id: id.into(),
            d: Daemon::start("127.0.0.1:0", &state, d, &extra),
        }
    }

    fn kill9(&mut self) {
        self.d.kill9();
    }

    fn alive(&mut self) -> bool {
        self.d.alive()
    }

    fn log(&self) -> String {
        self.d.log()
    }

    /// The value of a metric line `name{labels}` (0 when absent).
    fn metric(&self, name_and_labels: &str) -> f64 {
        self.d.metric(name_and_labels).unwrap_or(0.0)
    }
}

/// What each test starts from.
struct Fleet {
    /// Keeps the other tests off the server while the test runs.
    serial: MutexGuard<'static, ()>,
    /// The test's own database.
    db: String,
    /// Parameters for synthetic 2^k, and their key.
    params: PathBuf,
    vk: VerifyingKey,
    /// Nodes a, b and c.
    nodes: [Node; 3],
}

/// A fresh database and folder for `test`, parameters for synthetic 2^`k`, and three nodes
/// of `capacity` each; `None` (skipped) without a server.
fn fleet(test: &str, k: u32, capacity: usize) -> Option<Fleet> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let url = testing::server_url(test)?;
    let name = format!("bellows_fleet_{test}_{}", std::process::id());
    let db = testing::fresh_database(&url, &name).unwrap();
    let d = dir("fleet", test);
    let (params, vk) = setup(&d, k);
    let nodes = ["a", "b", "c"].map(|id| Node::start(&d, id, &db, capacity));
    Some(Fleet {
        serial,
        db,
        params,
        vk,
        nodes,
    })
}

fn sql(db: &str) -> postgres::Client {
    db.parse::<postgres::Config>()
        .unwrap()
        .connect(postgres::NoTls)
        .unwrap()
}

/// The rows of `query` (no parameters), each read by `row`.
fn rows<T>(q: &mut postgres::Client, query: &str, row: impl Fn(&postgres::Row) -> T) -> Vec<T> {
    q.query(query, &[]).unwrap().iter().map(row).collect()
}

/// Polls `cond` (on the database or a daemon: other processes) until it holds.
fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t = Instant::now();
    while !cond() {
        assert!(t.elapsed() < WAIT, "timed out waiting for {what}");
        // Observing other processes: there is no event to wait on across them.
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Parameters and verifying key for synthetic 2^k.
fn setup(d: &Path, k: u32) -> (PathBuf, VerifyingKey) {
    let (p, vk) = params_and_key(d, k);
    (p, read_verifying_key(&vk, PointCheck::Full).unwrap())
}

fn request(
    params: &Path,
    k: u32,
    partitions: u32,
    seed: u64,
    priority: i32,
) -> proto::SubmitRequest {
    proto::SubmitRequest {
        seed: Some(seed),
        priority,
        skip_subgroup_checks: true,
        ..synthetic_request(params, k, partitions, seed)
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn client(addr: &str) -> bellows_serve::client::Client {
    bellows_serve::client::connect(addr, None).await.unwrap()
}

/// Submits `reqs`, the i-th through `nodes[i % n]`, all at once; returns the job ids in order.
fn submit_all(nodes: &[&Node], reqs: Vec<proto::SubmitRequest>) -> Vec<u64> {
    let addrs: Vec<String> = nodes.iter().map(|n| n.d.addr.clone()).collect();
    rt().block_on(async move {
        let tasks: Vec<_> = reqs
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let addr = addrs[i % addrs.len()].clone();
                tokio::spawn(async move {
                    client(&addr)
                        .await
                        .submit(r)
                        .await
                        .unwrap()
                        .into_inner()
                        .job_id
                })
            })
            .collect();
        let mut ids = Vec::new();
        for t in tasks {
            ids.push(t.await.unwrap());
        }
        ids
    })
}

/// Awaits every job (job i through `nodes[i % n]`, not the one it was submitted to); returns
/// each final event.
fn await_all(nodes: &[&Node], ids: &[u64]) -> Vec<proto::JobEvent> {
    let addrs: Vec<String> = nodes.iter().map(|n| n.d.addr.clone()).collect();
    let ids = ids.to_vec();
    rt().block_on(async move {
        let tasks: Vec<_> = ids
            .iter()
            .enumerate()
            .map(|(i, &id)| {
                let addr = addrs[(i + 1) % addrs.len()].clone();
                tokio::spawn(async move {
                    let mut c = client(&addr).await;
                    let mut st = events(&mut c, id, true).await.unwrap();
                    let mut last = None;
                    while let Some(ev) = st.message().await.unwrap() {
                        last = Some(ev);
                    }
                    last.expect("a final event")
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(
                tokio::time::timeout(WAIT, t)
                    .await
                    .expect("await timed out")
                    .unwrap(),
            );
        }
        out
    })
}

/// Checks a job's final event: done, `n` results, each verifying; returns the nodes that
/// proved them.
fn verified(ev: &proto::JobEvent, n: usize, vk: &VerifyingKey) -> Vec<String> {
    assert_eq!(
        ev.state,
        proto::JobState::Done as i32,
        "job {}: {}",
        ev.job_id,
        ev.error
    );
    assert_eq!(ev.results.len(), n, "job {}", ev.job_id);
    let pvk = prepare_verifying_key(vk);
    ev.results
        .iter()
        .map(|r| {
            let proof = Proof::from_bytes(&r.proof).unwrap();
            let inputs = decode_inputs(&r.public_inputs.concat()).unwrap();
            assert!(
                verify_proof(&pvk, &proof, &inputs).unwrap(),
                "job {}",
                ev.job_id
            );
            r.timings.as_ref().unwrap().node.clone()
        })
        .collect()
}

/// The partitions proved into each job, from the database: (job, done_partitions, rows done).
fn stored_counts(db: &str) -> Vec<(i64, i32, i64)> {
    rows(
        &mut sql(db),
        "SELECT j.id, j.done_partitions,
                (SELECT COUNT(*) FROM bellows_partitions p
                 WHERE p.job = j.id AND p.state = 'done')
         FROM bellows_jobs j ORDER BY j.id",
        |r| (r.get(0), r.get(1), r.get(2)),
    )
}

/// Sums a metric over live nodes.
fn total(nodes: &[&Node], metric: &str) -> f64 {
    nodes.iter().map(|n| n.metric(metric)).sum()
}

#[test]
fn three_daemons_share_jobs_and_finish_the_partitions_of_one_killed_mid_job() {
    let Some(Fleet {
        serial: _serial,
        db,
        params,
        vk,
        nodes: [a, mut b, c],
    }) = fleet("kill", 10, 1)
    else {
        return;
    };
    let reqs = (0..8).map(|i| request(&params, 10, 4, 10 + i, 0)).collect();
    let ids = submit_all(&[&a, &b, &c], reqs);

    // Every node proves something; then b is killed while it holds a claim.
    let mut q = sql(&db);
    wait_until("every node to prove a partition", || {
        let provers: Vec<String> = rows(
            &mut q,
            "SELECT DISTINCT proved_by FROM bellows_partitions WHERE state = 'done'",
            |r| r.get(0),
        );
        provers.len() == 3
    });
    let held_by_b = || -> Vec<(i64, i32)> {
        rows(
            &mut sql(&db),
            "SELECT job, idx FROM bellows_partitions WHERE owner = 'b' AND state = 'claimed'",
            |r| (r.get(0), r.get(1)),
        )
    };
    wait_until("node b to hold a claim", || !held_by_b().is_empty());
    b.kill9();
    let orphans = held_by_b();
    assert!(!orphans.is_empty());

    // The others finish every job; b's partitions are proved by them after its lease.
    let events = await_all(&[&a, &c], &ids);
    let mut provers = BTreeSet::new();
    for ev in &events {
        provers.extend(verified(ev, 4, &vk));
    }
    assert_eq!(
        provers,
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect(),
        "jobs spread over all three"
    );
    for (job, idx) in orphans {
        let who: String = q
            .query_one(
                "SELECT proved_by FROM bellows_partitions WHERE job = $1 AND idx = $2",
                &[&job, &idx],
            )
            .unwrap()
            .get(0);
        assert_ne!(who, "b", "job {job} partition {idx} was b's when it died");
    }
    for (job, done, rows) in stored_counts(&db) {
        assert_eq!((done, rows), (4, 4), "job {job}");
    }
    assert!(a.log().contains("fleet node a"), "{}", a.log());

    // Status on any node shows the same jobs, and the fleet's nodes (b among them, silent).
    let status = |n: &Node| -> serde_json::Value {
        let (out, _) = run(&["status", "--daemon", n.d.addr.as_str(), "--json"], 0);
        serde_json::from_str(&out).unwrap()
    };
    let (sa, sc) = (status(&a), status(&c));
    let jobs = |v: &serde_json::Value| -> Vec<(u64, String)> {
        v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| {
                (
                    j["id"].as_u64().unwrap(),
                    j["state"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(jobs(&sa), jobs(&sc));
    assert_eq!(jobs(&sa).len(), 8);
    assert!(jobs(&sa).iter().all(|(_, st)| st == "done"), "{sa}");
    assert_eq!(
        (sa["node_id"].as_str(), sc["node_id"].as_str()),
        (Some("a"), Some("c"))
    );
    let nodes: BTreeSet<String> = sa["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["node_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        nodes,
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect()
    );
}

#[test]
fn a_database_restart_mid_run_loses_and_duplicates_nothing() {
    let restart = match std::env::var("BELLOWS_TEST_POSTGRES_RESTART") {
        Ok(c) if !c.is_empty() => c,
        _ => {
            assert!(
                !testing::required(),
                "BELLOWS_TEST_POSTGRES_RESTART (a command that restarts the test server) is not \
                 set; .ci/run sets it"
            );
            eprintln!("skipped: BELLOWS_TEST_POSTGRES_RESTART is not set");
            return;
        }
    };
    let Some(Fleet {
        serial: _serial,
        db,
        params,
        vk,
        nodes: [mut a, mut b, mut c],
    }) = fleet("restart", 10, 2)
    else {
        return;
    };
    let reqs = (0..6).map(|i| request(&params, 10, 6, 20 + i, 0)).collect();
    let ids = submit_all(&[&a, &b, &c], reqs);
    let done = || -> i64 {
        sql(&db)
            .query_one(
                "SELECT COUNT(*) FROM bellows_partitions WHERE state = 'done'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    wait_until("a few partitions to be proved", || done() >= 3);

    // Restart the server under the daemons (their connections break).
    let started = || -> String {
        sql(&db)
            .query_one("SELECT pg_postmaster_start_time()::text", &[])
            .unwrap()
            .get(0)
    };
    let before = started();
    let o = Command::new("sh").args(["-c", &restart]).output().unwrap();
    assert!(
        o.status.success(),
        "{restart}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_ne!(started(), before, "the server did not restart");
    assert!(
        done() < 36,
        "the restart came after the run; make the jobs larger"
    );

    // The daemons reconnect: the jobs finish, and a job submitted now runs too.
    let late = submit_all(&[&b], vec![request(&params, 10, 2, 99, 0)]);
    let events = await_all(&[&a, &b, &c], &ids);
    for ev in &events {
        verified(ev, 6, &vk);
    }
    verified(&await_all(&[&c], &late)[0], 2, &vk);
    for n in [&mut a, &mut b, &mut c] {
        assert!(n.alive(), "node {} died:\n{}", n.id, n.log());
    }
    // Nothing duplicated: every partition stored once, each job finished once fleet-wide.
    for (job, done, rows) in stored_counts(&db) {
        let want: i32 = if job == late[0] as i64 { 2 } else { 6 };
        assert_eq!((done, rows), (want, i64::from(want)), "job {job}");
    }
    let nodes = [&a, &b, &c];
    assert_eq!(
        total(&nodes, "bellows_fleet_commits_total{result=\"stored\"}"),
        38.0
    );
    assert_eq!(total(&nodes, "bellows_jobs_total{outcome=\"done\"}"), 7.0);
}

#[test]
fn two_hundred_jobs_at_once_through_three_daemons_complete_once_urgent_first() {
    let capacity = 2;
    let Some(Fleet {
        serial: _serial,
        db,
        params,
        vk,
        nodes: [a, b, c],
    }) = fleet("many", 8, capacity)
    else {
        return;
    };
    let nodes = [&a, &b, &c];
    let bulk = submit_all(
        &nodes,
        (0..200)
            .map(|i| request(&params, 8, 1, 1000 + i, 0))
            .collect(),
    );
    let urgent = submit_all(
        &nodes,
        (0..5)
            .map(|i| request(&params, 8, 1, 5000 + i, 10))
            .collect(),
    );

    // While they run, no node ever holds more than its capacity.
    let mut q = sql(&db);
    wait_until("every job to finish", || {
        let held: Vec<(String, i64)> = rows(
            &mut q,
            "SELECT owner, COUNT(*) FROM bellows_partitions WHERE state = 'claimed'
             GROUP BY owner",
            |r| (r.get(0), r.get(1)),
        );
        for (owner, n) in held {
            assert!(n <= capacity as i64, "node {owner} holds {n} partitions");
        }
        let open: i64 = q
            .query_one(
                "SELECT COUNT(*) FROM bellows_jobs WHERE state IN ('queued', 'running')",
                &[],
            )
            .unwrap()
            .get(0);
        open == 0
    });
    let all: Vec<u64> = bulk.iter().chain(&urgent).copied().collect();
    let events = await_all(&nodes, &all);
    let mut per_node = BTreeMap::<String, usize>::new();
    for ev in &events {
        for n in verified(ev, 1, &vk) {
            *per_node.entry(n).or_default() += 1;
        }
    }
    assert_eq!(per_node.values().sum::<usize>(), 205);
    assert_eq!(per_node.len(), 3, "{per_node:?}");
    // Exactly once, fleet-wide: 205 results stored, 205 jobs finished.
    assert_eq!(
        total(&nodes, "bellows_fleet_commits_total{result=\"stored\"}"),
        205.0
    );
    assert_eq!(total(&nodes, "bellows_jobs_total{outcome=\"done\"}"), 205.0);
    for (job, done, rows) in stored_counts(&db) {
        assert_eq!((done, rows), (1, 1), "job {job}");
    }
    // The urgent jobs, submitted after the 200, overtook most of them across the fleet.
    let done_order: Vec<i64> = rows(
        &mut q,
        "SELECT job FROM bellows_partitions ORDER BY done_at, job",
        |r| r.get(0),
    );
    let last_urgent = done_order
        .iter()
        .rposition(|j| urgent.contains(&(*j as u64)))
        .unwrap();
    assert!(
        last_urgent < 100,
        "the last urgent job finished {last_urgent}th of 205"
    );
}
