//! The store contract, on the SQLite store (file-backed, so reopening is tested too).

use super::*;

fn new_job<'a>(priority: i32, request: &'a [u8], now: u64) -> NewJob<'a> {
    NewJob {
        priority,
        partitions: 2,
        request,
        label: "synthetic 2^6",
        now,
    }
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

#[test]
fn jobs_survive_reopening_and_resume_with_their_partitions() {
    let dir = std::env::temp_dir().join(format!("bellows-store-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jobs.sqlite");
    let (a, b) = {
        let s = SqliteStore::open(&path).unwrap();
        let a = s.insert_job(&new_job(0, b"req-a", 100)).unwrap();
        let b = s.insert_job(&new_job(5, b"req-b", 101)).unwrap();
        assert!(b > a && a > 0);
        s.mark_running(a).unwrap();
        assert!(s.put_partition(&part(a, 1, 7)).unwrap());
        // A second result for the same partition is refused; the first stays.
        assert!(!s.put_partition(&part(a, 1, 9)).unwrap());
        (a, b)
    };
    let s = SqliteStore::open(&path).unwrap();
    let unfinished = s.unfinished_jobs().unwrap();
    assert_eq!(
        unfinished.iter().map(|j| j.id).collect::<Vec<_>>(),
        vec![a, b]
    );
    assert_eq!(unfinished[0].state, JobState::Running);
    assert_eq!(unfinished[1].request, b"req-b");
    assert_eq!(unfinished[1].priority, 5);
    let parts = s.partitions(a).unwrap();
    assert_eq!(parts, vec![part(a, 1, 7)]);

    // Finishing happens once.
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
        s.recent_jobs(10)
            .unwrap()
            .iter()
            .map(|j| j.id)
            .collect::<Vec<_>>(),
        vec![b, a]
    );
    assert!(s.job(9999).unwrap().is_none());
    drop(s);
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
    let dir = std::env::temp_dir().join(format!("bellows-store-schema-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("jobs.sqlite");
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
    }
    let e = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(e.contains("schema version 99"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
