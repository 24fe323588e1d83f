//! What the engine trusts (#43): proofs verified before a job is done (item 6), the journal's
//! partition indices checked on load (item 7), the journal and memory kept in step when the
//! journal cannot be written (item 12), and jobs that belong to who submitted them (item 9).

use super::*;
use crate::identity::{Access, Identity};

#[test]
fn a_proof_that_does_not_verify_fails_its_job_instead_of_being_returned() {
    // Parameters of synthetic 2^8 with no bits, a job with half its constraints bits: the
    // same shape (domain, inputs), another circuit. Before: `done`, with a wrong proof.
    let f = Fixture::new("verify", 8);
    let ev = Events::default();
    let e = engine(vec![device("cpu", cpu(), 1, false)], &ev, |_| {});
    let mut r = f.request(2, 0, Some(1));
    r.kind = Some(Kind::Builtin(BuiltinCircuit {
        name: "synthetic".into(),
        log_size: Some(8),
        bits_pct: Some(50),
        ..Default::default()
    }));
    let job = e.submit(&r, &local()).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Failed);
    let err = e.snapshot(job, &local()).unwrap().error.unwrap();
    assert!(err.contains("does not verify"), "{err}");
    assert!(
        e.store().partitions(job).unwrap().is_empty(),
        "nothing stored"
    );
    // The right circuit on the same parameters proves and verifies.
    let ok = e.submit(&f.request(2, 0, Some(1)), &local()).unwrap();
    assert_eq!(proved(&e, &ev, &f, ok).len(), 2);
}

#[test]
fn journal_rows_for_partitions_a_job_lacks_do_not_finish_it() {
    // Before: a row for partition 99 of a 6-partition job counted as done, and the job's
    // proofs were [0, 1, 2, 3, 4, 0].
    let f = Fixture::new("journal-index", 8);
    let path = f.dir.join("jobs.sqlite");
    let ev = Events::default();
    let (want, job) = {
        let e = journaled(&path, &ev);
        let job = e.submit(&f.request(6, 0, Some(4)), &local()).unwrap();
        (proved(&e, &ev, &f, job), job)
    };
    let moved = format!("UPDATE partitions SET idx = 99 WHERE job = {job} AND idx = 5");
    let (e, ran) = recovered(&path, &moved, job);
    assert_eq!(
        ran,
        vec![5],
        "partition 5 is proved, the row of 99 is not its"
    );
    let event = e.final_event(job, &local(), false).unwrap();
    let got: Vec<Proof> = event
        .results
        .iter()
        .map(|r| Proof::from_bytes(&r.proof).unwrap())
        .collect();
    assert_eq!(got, want);
}

/// Makes the writes of results and of job ends to the journal at `path` fail, as on a full
/// disk, while `full` (triggers in the journal itself: the store runs its own code).
fn journal_full(path: &std::path::Path, full: bool) {
    let c = rusqlite::Connection::open(path).unwrap();
    let raise = "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END";
    let sql = if full {
        format!(
            "CREATE TRIGGER full_results BEFORE INSERT ON partitions {raise};
             CREATE TRIGGER full_ends BEFORE UPDATE OF finished_at ON jobs {raise};"
        )
    } else {
        "DROP TRIGGER full_results; DROP TRIGGER full_ends;".to_string()
    };
    c.execute_batch(&sql).unwrap();
}

#[test]
fn a_job_ended_while_the_journal_is_full_is_reported_ended_and_journaled_later() {
    // Before: failed in memory, running in the journal, and Await ended with "the daemon
    // closed the stream early".
    let f = Fixture::new("full-disk", 8);
    let ev = Events::default();
    let path = f.dir.join("jobs.sqlite");
    let e = journaled(&path, &ev);
    let store = SqliteStore::open(&path).unwrap();
    // Jobs are still accepted (inserting is not what fails here); their results are not.
    journal_full(&path, true);
    let job = e.submit(&f.request(1, 0, Some(2)), &local()).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Failed);
    assert!(!store.job(job).unwrap().unwrap().state.is_finished());
    // What a client is told: the end, with why, from memory.
    let fin = e.final_event(job, &local(), true).unwrap();
    assert_eq!(fin.state, crate::proto::JobState::Failed as i32);
    assert!(fin.error.contains("disk is full"), "{}", fin.error);
    assert!(matches!(
        e.watch(job, &local()).unwrap(),
        JobWatch::Finished(_)
    ));
    assert_eq!(e.snapshot(job, &local()).unwrap().state, JobState::Failed);
    assert_eq!(e.retry_journal(), 1, "still not written");
    // Once the disk has room, the journal takes the end.
    journal_full(&path, false);
    assert_eq!(e.retry_journal(), 0);
    let rec = store.job(job).unwrap().unwrap();
    assert_eq!(rec.state, JobState::Failed);
    assert!(rec.error.unwrap().contains("disk is full"));
}

#[test]
fn a_job_is_reachable_by_who_submitted_it_and_by_admins_only() {
    let f = Fixture::new("owners", 8);
    let ev = Events::default();
    let (alice, bob, ops) = (
        Identity::token("alice"),
        Identity::token("bob"),
        Identity::uid(0),
    );
    let e = engine(vec![device("cpu", cpu(), 1, false)], &ev, |c| {
        c.access = Access::new(vec![ops.clone()]);
    });
    let job = e.submit(&f.request(1, 0, Some(1)), &alice).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Done);
    // To another identity the job does not exist: the answer for a job that never was.
    let nobody = |r: Result<()>, id: JobId| match r {
        Err(ServeError::NoSuchJob(j)) => assert_eq!(j, id),
        other => panic!("{other:?}"),
    };
    nobody(e.snapshot(job, &bob).map(|_| ()), job);
    nobody(e.watch(job, &bob).map(|_| ()), job);
    nobody(e.final_event(job, &bob, true).map(|_| ()), job);
    nobody(e.fetched(job, &bob), job);
    nobody(e.cancel(job, &bob).map(|_| ()), job);
    assert!(e.status(10, &bob).unwrap().jobs.is_empty());
    assert_eq!(e.status(10, &alice).unwrap().jobs.len(), 1);
    assert_eq!(e.final_event(job, &alice, false).unwrap().results.len(), 1);
    // An admin reaches every job, and alone may preload or evict parameters.
    assert_eq!(e.status(10, &ops).unwrap().jobs.len(), 1);
    assert_eq!(e.snapshot(job, &ops).unwrap().state, JobState::Done);
    let denied = e.preload(&f.params_path, true, Some(&alice)).unwrap_err();
    assert!(matches!(denied, ServeError::Denied(_)), "{denied}");
    e.preload(&f.params_path, true, Some(&ops)).unwrap();
    // A running job: another identity cannot cancel it, its owner can.
    let long = e.submit(&f.request(64, 0, None), &alice).unwrap();
    nobody(e.cancel(long, &bob).map(|_| ()), long);
    assert_eq!(e.cancel(long, &alice).unwrap(), JobState::Cancelled);
}
