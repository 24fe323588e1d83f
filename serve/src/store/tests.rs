//! The store contract, on the SQLite store (file-backed, so reopening is tested too).

use super::*;

fn new_job<'a>(priority: i32, request: &'a [u8], now: u64) -> NewJob<'a> {
    NewJob {
        priority,
        partitions: 2,
        request,
        label: "synthetic 2^6",
        now,
        kind: "synthetic",
        params_digest: &[7; 32],
        log_domain: 6,
        submitted_by: "token:alice",
        key: None,
        request_digest: None,
    }
}

/// Idempotency keys: a key finds its owner's newest job of the same request that did not fail;
/// another owner's key, another request, or a failed job are not found.
fn keys_find_their_jobs(s: &dyn JobStore) {
    let keyed = |owner, digest: &'static [u8]| NewJob {
        submitted_by: owner,
        key: Some("porep-1000-7"),
        request_digest: Some(digest),
        ..new_job(0, b"req", 10)
    };
    assert_eq!(
        s.find_key("token:alice", "porep-1000-7", None).unwrap(),
        None
    );
    let a = s.insert_job(&keyed("token:alice", b"d1")).unwrap();
    let bob = s.insert_job(&keyed("token:bob", b"d1")).unwrap();
    let find = |owner, d: Option<&[u8]>| s.find_key(owner, "porep-1000-7", d).unwrap();
    assert_eq!(find("token:alice", Some(b"d1")), Some(a));
    assert_eq!(
        find("token:bob", Some(b"d1")),
        Some(bob),
        "keys are per owner"
    );
    assert_eq!(find("token:alice", Some(b"d2")), None, "another request");
    assert_eq!(find("token:carol", None), None);
    // Once failed, the same request under the same key is a new job; any job still answers
    // to the key alone, newest first.
    assert!(s.finish_job(a, JobState::Failed, Some("x"), 11).unwrap());
    assert_eq!(find("token:alice", Some(b"d1")), None);
    assert_eq!(find("token:alice", None), Some(a));
    let again = s.insert_job(&keyed("token:alice", b"d1")).unwrap();
    assert_eq!(find("token:alice", Some(b"d1")), Some(again));
    assert_eq!(find("token:alice", None), Some(again));
    // Done jobs are found (their proofs are returned again).
    assert!(s.finish_job(again, JobState::Done, None, 12).unwrap());
    assert_eq!(find("token:alice", Some(b"d1")), Some(again));
    // A job without a key is not found by any.
    let plain = s.insert_job(&new_job(0, b"req", 13)).unwrap();
    assert_ne!(find("token:alice", None), Some(plain));
}

#[test]
fn sqlite_keys_find_their_jobs() {
    keys_find_their_jobs(&SqliteStore::in_memory().unwrap());
}

fn part(job: JobId, index: u32, byte: u8) -> PartitionRecord {
    PartitionRecord {
        job,
        index,
        proof: vec![byte; 192],
        inputs: vec![byte; 32],
        timings: vec![],
    }
}

/// Two jobs, the first running with partition 1 stored (a second result for it refused).
fn write_two_jobs(s: &dyn JobStore) -> (JobId, JobId) {
    let a = s.insert_job(&new_job(0, b"req-a", 100)).unwrap();
    let b = s
        .insert_job(&NewJob {
            submitted_by: "token:bob",
            ..new_job(5, b"req-b", 101)
        })
        .unwrap();
    assert!(b > a && a > 0);
    s.mark_running(a).unwrap();
    assert!(s.put_partition(&part(a, 1, 7)).unwrap());
    // A second result for the same partition is refused; the first stays.
    assert!(!s.put_partition(&part(a, 1, 9)).unwrap());
    // An index the job does not have (it has 2 partitions) is refused.
    let e = s.put_partition(&part(a, 2, 7)).unwrap_err().to_string();
    assert!(e.contains("which has 2 partitions"), "{e}");
    (a, b)
}

/// What [`write_two_jobs`] wrote is read back, and each job finishes once.
fn read_back_and_finish(s: &dyn JobStore, a: JobId, b: JobId) {
    let unfinished = s.unfinished_jobs().unwrap();
    assert_eq!(
        unfinished.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![a, b]
    );
    assert_eq!(unfinished[0].state, JobState::Running);
    assert_eq!(unfinished[1].request, b"req-b");
    assert_eq!(unfinished[1].priority, 5);
    assert_eq!(s.partitions(a).unwrap(), vec![part(a, 1, 7)]);
    assert_eq!(unfinished[0].submitted_by, "token:alice");
    let of_bob: Vec<JobId> = s
        .recent_jobs(10, Some("token:bob"))
        .unwrap()
        .iter()
        .map(|j| j.id)
        .collect();
    assert_eq!(of_bob, vec![b]);
    // a lacks partition 0, b both of its own.
    assert_eq!(s.counts().unwrap().pending_partitions, 3);

    // Finishing happens once, and only into a finished state.
    assert!(s.finish_job(a, JobState::Running, None, 199).is_err());
    assert!(s.finish_job(a, JobState::Done, None, 200).unwrap());
    assert!(!s
        .finish_job(a, JobState::Failed, Some("late"), 201)
        .unwrap());
    assert!(s
        .finish_job(b, JobState::Cancelled, Some("by client"), 202)
        .unwrap());
    let ja = s.job(a).unwrap().unwrap();
    assert_eq!(
        (ja.state, ja.finished_at, ja.error),
        (JobState::Done, Some(200), None)
    );
    assert_eq!(
        s.job(b).unwrap().unwrap().error.as_deref(),
        Some("by client")
    );
    assert!(s.unfinished_jobs().unwrap().is_empty());
    assert_eq!(s.counts().unwrap().by_state, [0, 0, 1, 0, 1]);
    assert_eq!(
        s.recent_jobs(10, None)
            .unwrap()
            .iter()
            .map(|j| j.id)
            .collect::<Vec<_>>(),
        vec![b, a]
    );
    assert!(s.job(9999).unwrap().is_none());
}

/// A fresh folder `bellows-store-NAME-PID` under the temporary folder, and a journal's path in it.
fn journal_path(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("bellows-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jobs.sqlite");
    (dir, path)
}

#[test]
fn jobs_survive_reopening_and_resume_with_their_partitions() {
    let (dir, path) = journal_path("test");
    let (a, b) = write_two_jobs(&SqliteStore::open(&path).unwrap());
    read_back_and_finish(&SqliteStore::open(&path).unwrap(), a, b);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn purge_keeps_unfetched_results_until_they_expire() {
    let s = SqliteStore::in_memory().unwrap();
    let fetched = s.insert_job(&new_job(0, b"x", 10)).unwrap();
    let unfetched = s.insert_job(&new_job(0, b"y", 10)).unwrap();
    let running = s.insert_job(&new_job(0, b"z", 10)).unwrap();
    s.put_partition(&part(fetched, 0, 1)).unwrap();
    s.finish_job(fetched, JobState::Done, None, 20).unwrap();
    s.finish_job(unfetched, JobState::Done, None, 20).unwrap();
    s.mark_fetched(fetched, 30).unwrap();
    s.mark_fetched(fetched, 40).unwrap(); // the first fetch counts
    assert_eq!(s.job(fetched).unwrap().unwrap().fetched_at, Some(30));
    // Fetched before 31 goes; unfetched stays until finished before 21.
    assert_eq!(s.purge(31, 15).unwrap(), 1);
    assert!(s.job(fetched).unwrap().is_none());
    assert!(
        s.partitions(fetched).unwrap().is_empty(),
        "partitions go too"
    );
    assert!(s.job(unfetched).unwrap().is_some());
    assert_eq!(s.purge(31, 21).unwrap(), 1);
    assert!(s.job(unfetched).unwrap().is_none());
    // An unfinished job is never purged.
    assert_eq!(s.purge(u64::MAX, u64::MAX).unwrap(), 0);
    assert!(s.job(running).unwrap().is_some());
}

#[test]
fn a_newer_schema_is_refused() {
    let (dir, path) = journal_path("schema");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let e = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(e.contains("schema version 99"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

// --- claims: the same contract on both stores ---

fn serves(kinds: &[&str]) -> Serves {
    Serves {
        kinds: kinds.iter().map(|k| k.to_string()).collect(),
        max_log_domain: 20,
        params: None,
        excluded: Vec::new(),
    }
}

fn claim_req<'a>(node: &'a str, serves: &'a Serves, max: usize, lease_ms: u64) -> ClaimRequest<'a> {
    ClaimRequest {
        node,
        serves,
        max,
        lease: std::time::Duration::from_millis(lease_ms),
        max_claims: 3,
        now: 1000,
    }
}

/// A heartbeat of `node` (nothing else said of it) holding `held`, leases of an hour: the
/// claims it still holds.
fn beat(s: &dyn JobStore, node: &str, held: &[Claim]) -> Vec<Claim> {
    let beat = NodeBeat {
        node,
        ..Default::default()
    };
    let lease = std::time::Duration::from_millis(HOUR_MS);
    s.heartbeat(&beat, held, lease).unwrap()
}

fn job_of<'a>(
    priority: i32,
    partitions: u32,
    kind: &'a str,
    digest: &'a [u8],
    log_domain: u32,
) -> NewJob<'a> {
    NewJob {
        priority,
        partitions,
        request: b"req",
        label: "test",
        now: 100,
        kind,
        params_digest: digest,
        log_domain,
        submitted_by: "token:alice",
        ..Default::default()
    }
}

const HOUR_MS: u64 = 3_600_000;

/// Claims follow priority, never overlap, and respect what a node serves; results commit once
/// per claim token, and the last one finishes the job in the same transaction.
fn claims_and_commits(s: &dyn JobStore) {
    let syn = serves(&["synthetic"]);
    let insert = |priority, partitions, kind, digest: [u8; 32], log_domain| {
        let job = job_of(priority, partitions, kind, &digest, log_domain);
        s.insert_job(&job).unwrap()
    };
    let low = insert(0, 3, "synthetic", [1; 32], 8);
    let high = insert(5, 2, "synthetic", [1; 32], 8);
    let sha = insert(9, 1, "sha256", [1; 32], 8);
    let big = insert(9, 1, "synthetic", [1; 32], 21);
    let other = insert(9, 1, "synthetic", [2; 32], 8);

    // Node a: only parameters [1; 32]: the high-priority job first; never sha256, never 2^21.
    let mut only1 = syn.clone();
    only1.params = Some(vec![[1; 32]]);
    let a = s.claim(&claim_req("a", &only1, 3, HOUR_MS)).unwrap();
    let got: Vec<(JobId, u32)> = a.iter().map(|c| (c.job, c.index)).collect();
    assert_eq!(got, vec![(low, 0), (high, 0), (high, 1)]);
    assert_eq!(s.job(high).unwrap().unwrap().state, JobState::Running);
    // Node b takes what is left that it serves (any parameters), nothing of a's.
    let b = s.claim(&claim_req("b", &syn, 10, HOUR_MS)).unwrap();
    let got: Vec<(JobId, u32)> = b.iter().map(|c| (c.job, c.index)).collect();
    assert_eq!(got, vec![(low, 1), (low, 2), (other, 0)]);
    assert!(s
        .claim(&claim_req("b", &syn, 10, HOUR_MS))
        .unwrap()
        .is_empty());
    // A node serving sha256 gets the sha256 job; a node excluding [1; 32] gets nothing else.
    let mut sha_only = serves(&["sha256", "synthetic"]);
    sha_only.excluded = vec![[1; 32]];
    assert!(s
        .claim(&claim_req("c", &sha_only, 10, HOUR_MS))
        .unwrap()
        .is_empty());
    sha_only.excluded.clear();
    sha_only.max_log_domain = 21;
    let c = s.claim(&claim_req("c", &sha_only, 10, HOUR_MS)).unwrap();
    let mut got: Vec<JobId> = c.iter().map(|c| c.job).collect();
    got.sort_unstable();
    assert_eq!(got, vec![sha, big]);

    // Heartbeats renew and report what a node holds.
    // (A claim the node does not list is not renewed.)
    let held = s
        .heartbeat(
            &NodeBeat {
                node: "a",
                address: "127.0.0.1:1",
                serves: "synthetic",
                capacity: 3,
            },
            &a,
            std::time::Duration::from_millis(HOUR_MS),
        )
        .unwrap();
    let mut want = a.clone();
    want.sort_by_key(|c| (c.job, c.index));
    let mut held_sorted = held.clone();
    held_sorted.sort_by_key(|c| (c.job, c.index));
    assert_eq!(held_sorted, want);
    let nodes = s.nodes().unwrap();
    let na = nodes.iter().find(|n| n.node == "a").expect("node a listed");
    assert_eq!(
        (na.held, na.capacity, na.address.as_str(), na.stopped),
        (3, 3, "127.0.0.1:1", false)
    );
    // A node that stops cleanly is listed as stopped, not as silent.
    s.node_stopped("a").unwrap();
    assert!(s
        .nodes()
        .unwrap()
        .iter()
        .any(|n| n.node == "a" && n.stopped));

    // Commits: a wrong node or token is stale; the right one stores once; a repeat of a stored
    // commit (a lost reply) is answered Stored again and changes nothing.
    let c0 = a[1]; // (high, 0)
    let rec = |cl: &Claim, b: u8| part(cl.job, cl.index, b);
    assert_eq!(
        s.commit_partition("b", &c0, &rec(&c0, 1), 200).unwrap(),
        Commit::Stale
    );
    let wrong = Claim {
        token: c0.token + 1,
        ..c0
    };
    assert_eq!(
        s.commit_partition("a", &wrong, &rec(&c0, 1), 200).unwrap(),
        Commit::Stale
    );
    assert_eq!(
        s.commit_partition("a", &c0, &rec(&c0, 1), 200).unwrap(),
        Commit::Stored { job_done: false }
    );
    assert_eq!(
        s.commit_partition("a", &c0, &rec(&c0, 9), 200).unwrap(),
        Commit::Stored { job_done: false }
    );
    assert_eq!(s.partitions(high).unwrap(), vec![rec(&c0, 1)]);
    let c1 = a[2]; // (high, 1): the last one
    assert_eq!(
        s.commit_partition("a", &c1, &rec(&c1, 2), 201).unwrap(),
        Commit::Stored { job_done: true }
    );
    let j = s.job(high).unwrap().unwrap();
    assert_eq!((j.state, j.finished_at), (JobState::Done, Some(201)));
    assert_eq!(s.partitions(high).unwrap().len(), 2);
    let p = s.progress(&[high, low, 999_999]).unwrap();
    let ph = p.iter().find(|p| p.id == high).unwrap();
    assert_eq!((ph.state, ph.done, ph.total), (JobState::Done, 2, 2));
    let pl = p.iter().find(|p| p.id == low).unwrap();
    assert_eq!((pl.state, pl.done, pl.total), (JobState::Running, 0, 3));
    assert_eq!(p.len(), 2);

    // A cancelled job's claims are void: commits are stale, heartbeats no longer list them.
    assert!(s
        .finish_job(low, JobState::Cancelled, Some("by client"), 300)
        .unwrap());
    let lb = b[0];
    assert_eq!(
        s.commit_partition("b", &lb, &rec(&lb, 3), 301).unwrap(),
        Commit::Stale
    );
    let held_b = beat(s, "b", &b);
    assert_eq!(
        held_b.iter().map(|c| c.job).collect::<Vec<_>>(),
        vec![other]
    );
    assert!(s.partitions(low).unwrap().is_empty());

    // Release gives a partition back at once; release_node gives back everything of a node.
    s.release("b", &[held_b[0]]).unwrap();
    let again = s.claim(&claim_req("a", &syn, 10, HOUR_MS)).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].job, again[0].index), (other, 0));
    assert!(again[0].token > held_b[0].token);
    assert_eq!(s.release_node("a").unwrap(), 1);
    assert_eq!(
        s.claim(&claim_req("b", &syn, 10, HOUR_MS)).unwrap().len(),
        1
    );
}

/// An expired lease is claimed again under a new token; the old holder's result is discarded;
/// a partition whose claims all expired `max_claims` times fails its job.
fn leases_expire(s: &dyn JobStore) {
    let syn = serves(&["synthetic"]);
    let j = s
        .insert_job(&job_of(0, 1, "synthetic", &[1; 32], 8))
        .unwrap();
    let first = s.claim(&claim_req("a", &syn, 1, 1)).unwrap();
    assert_eq!(first.len(), 1);
    // A heartbeat that does not list the claim (its reply was lost: the node does not know it
    // holds it) does not renew it.
    let none = beat(s, "a", &[]);
    assert!(none.is_empty());
    // The lease (1 ms) must pass: waiting for time is what is tested here.
    std::thread::sleep(std::time::Duration::from_millis(30));
    let second = s.claim(&claim_req("b", &syn, 1, HOUR_MS)).unwrap();
    assert_eq!(second.len(), 1, "the expired partition is claimed again");
    assert!(second[0].token > first[0].token);
    // Node a's late result is discarded, and its heartbeat shows the claim lost.
    assert_eq!(
        s.commit_partition("a", &first[0], &part(j, 0, 1), 10)
            .unwrap(),
        Commit::Stale
    );
    let held = beat(s, "a", &first);
    assert!(held.is_empty());
    assert_eq!(
        s.commit_partition("b", &second[0], &part(j, 0, 2), 11)
            .unwrap(),
        Commit::Stored { job_done: true }
    );
    assert_eq!(s.partitions(j).unwrap(), vec![part(j, 0, 2)]);

    // max_claims = 3: the third expired claim fails the job at the next claim.
    let k = s
        .insert_job(&job_of(0, 1, "synthetic", &[1; 32], 8))
        .unwrap();
    for _ in 0..3 {
        assert_eq!(s.claim(&claim_req("a", &syn, 1, 1)).unwrap().len(), 1);
        std::thread::sleep(std::time::Duration::from_millis(30));
    }
    assert!(s.claim(&claim_req("a", &syn, 1, 1)).unwrap().is_empty());
    let failed = s.job(k).unwrap().unwrap();
    assert_eq!(failed.state, JobState::Failed);
    assert!(
        failed
            .error
            .as_deref()
            .unwrap_or("")
            .contains("claimed 3 times"),
        "{:?}",
        failed.error
    );
}

/// Concurrent claimers never get the same partition; every partition is claimed once.
fn concurrent_claims_are_disjoint(s: std::sync::Arc<dyn JobStore>) {
    let syn = serves(&["synthetic"]);
    for _ in 0..6 {
        s.insert_job(&job_of(0, 10, "synthetic", &[1; 32], 8))
            .unwrap();
    }
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (s, syn) = (s.clone(), syn.clone());
            std::thread::spawn(move || {
                let node = format!("n{t}");
                let mut mine = Vec::new();
                loop {
                    let got = s.claim(&claim_req(&node, &syn, 3, HOUR_MS)).unwrap();
                    if got.is_empty() {
                        return mine;
                    }
                    mine.extend(got.iter().map(|c| (c.job, c.index)));
                }
            })
        })
        .collect();
    let mut all: Vec<(JobId, u32)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), n, "a partition was claimed twice");
    assert_eq!(n, 60);
}

#[test]
fn sqlite_claims_and_commits() {
    claims_and_commits(&SqliteStore::in_memory().unwrap());
}

#[test]
fn sqlite_leases_expire() {
    leases_expire(&SqliteStore::in_memory().unwrap());
}

#[test]
fn sqlite_concurrent_claims_are_disjoint() {
    concurrent_claims_are_disjoint(std::sync::Arc::new(SqliteStore::in_memory().unwrap()));
}

/// A fresh database on the test server, or `None` (skipped; see [`testing::server_url`]).
fn pg(test: &str) -> Option<PgStore> {
    let url = testing::server_url(test)?;
    let db = format!("bellows_store_{test}_{}", std::process::id());
    let db_url = testing::fresh_database(&url, &db).unwrap();
    Some(PgStore::connect(&db_url, None).unwrap())
}

#[test]
fn postgres_claims_and_commits() {
    if let Some(s) = pg("claims") {
        claims_and_commits(&s);
    }
}

#[test]
fn postgres_leases_expire() {
    if let Some(s) = pg("leases") {
        leases_expire(&s);
    }
}

#[test]
fn postgres_concurrent_claims_are_disjoint() {
    if let Some(s) = pg("concurrent") {
        concurrent_claims_are_disjoint(std::sync::Arc::new(s));
    }
}

#[test]
fn postgres_keeps_the_store_contract_and_migrates_once() {
    let Some(url) = testing::server_url("contract") else {
        return;
    };
    let db = testing::fresh_database(
        &url,
        &format!("bellows_store_contract_{}", std::process::id()),
    )
    .unwrap();
    // Daemons starting together apply the migrations once.
    let opened: Vec<_> = (0..3)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || PgStore::connect(&db, None))
        })
        .collect();
    for t in opened {
        t.join().unwrap().unwrap();
    }
    let s = PgStore::connect(&db, None).unwrap();
    let (a, b) = write_two_jobs(&s);
    read_back_and_finish(&s, a, b);
    keys_find_their_jobs(&s);
    s.mark_fetched(a, 300).unwrap();
    s.mark_fetched(a, 400).unwrap();
    assert_eq!(s.job(a).unwrap().unwrap().fetched_at, Some(300));
    assert_eq!(s.purge(301, 0).unwrap(), 1);
    assert!(s.job(a).unwrap().is_none());
    assert!(s.partitions(a).unwrap().is_empty());
    assert!(s.job(b).unwrap().is_some());
    // A newer schema is refused.
    let mut c = db
        .parse::<::postgres::Config>()
        .unwrap()
        .connect(::postgres::NoTls)
        .unwrap();
    c.execute("UPDATE bellows_schema SET version = 99", &[])
        .unwrap();
    let e = PgStore::connect(&db, None).unwrap_err().to_string();
    assert!(e.contains("schema version 99"), "{e}");
}

#[test]
fn a_url_asking_for_tls_is_refused_with_the_reason() {
    // #43 item 11: before, the driver's "server does not support TLS".
    let e = PgStore::connect("postgres://u:pw@127.0.0.1:1/db?sslmode=require", None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("client has no TLS") && !e.contains("pw@"), "{e}");
}

#[test]
fn passwords_are_kept_out_of_messages() {
    use super::postgres::redact;
    assert_eq!(
        redact("postgres://bellows:s3cret@db:5432/jobs"),
        "postgres://bellows:***@db:5432/jobs"
    );
    assert_eq!(
        redact("postgres://bellows@db/jobs"),
        "postgres://bellows@db/jobs"
    );
    assert_eq!(
        redact("host=db user=bellows password=s3cret dbname=jobs"),
        "host=db user=bellows password=*** dbname=jobs"
    );
}
