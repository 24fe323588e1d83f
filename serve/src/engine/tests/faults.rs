//! Device faults (retried on the fallback, or failing the job with the reason), recovery from
//! the journal, and bad requests refused while the engine keeps serving.

use super::*;

#[test]
fn a_device_fault_mid_partition_is_retried_on_the_fallback_and_the_job_completes() {
    for fault in ["device", "oom", "panic"] {
        let f = Fixture::new(&format!("fault-{fault}"), 8);
        let ev = Events::default();
        let faulty: Arc<dyn Backend> = Arc::new(
            FaultyBackend::with_config(&BackendConfig::default().option("fault", fault)).unwrap(),
        );
        let devices = vec![
            device("faulty", faulty, 1, false),
            device("cpu-fallback", cpu(), 1, true),
        ];
        let e = engine(devices, &ev, |_| {});
        let job = e.submit(&f.request(3, 0, None), &local()).unwrap();
        assert_eq!(proved(&e, &ev, &f, job).len(), 3, "{fault}");
        let retry = |x: &Event| {
            matches!(
                x,
                Event::Retry {
                    failed_device: 0,
                    ..
                }
            )
        };
        let retries = count(&ev.all(), retry);
        assert!(retries >= 1, "{fault}: no retry");
        let devs = e.devices();
        assert_eq!(
            devs[1].partitions, 3,
            "{fault}: the fallback proved them all"
        );
        assert!(devs[0].errors >= 3, "{fault}: {devs:?}");
        assert!(e.metrics().retries() >= 3);
        assert!(e.metrics().render().contains("bellows_retries_total"));
    }
}

#[test]
fn a_fault_with_nowhere_left_to_go_fails_the_job_with_the_reason() {
    let f = Fixture::new("fault-only", 8);
    let ev = Events::default();
    let faulty: Arc<dyn Backend> =
        Arc::new(FaultyBackend::with_config(&BackendConfig::default()).unwrap());
    let e = engine(vec![device("faulty", faulty, 1, false)], &ev, |_| {});
    let job = e.submit(&f.request(1, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Failed);
    let err = e.snapshot(job, &local()).unwrap().error.unwrap();
    assert!(err.contains("injected device fault"), "{err}");
    // The engine keeps serving: a good device proves the next job.
}

#[test]
fn recovery_runs_only_the_partitions_the_journal_lacks() {
    let f = Fixture::new("recover", 8);
    let store_path = f.dir.join("jobs.sqlite");
    // A first daemon proves a job of 4 partitions with a seed; we keep its partitions 0 and 2
    // and forget the rest, as if it had crashed after them.
    let (want, job) = {
        let ev = Events::default();
        let e = journaled(&store_path, &ev);
        let job = e.submit(&f.request(4, 0, Some(3)), &local()).unwrap();
        (proved(&e, &ev, &f, job), job)
    };
    let lost = format!("DELETE FROM partitions WHERE job = {job} AND idx IN (1, 3)");
    let (e, synthesised) = recovered(&store_path, &lost, job);
    let mut s = synthesised.clone();
    s.sort_unstable();
    assert_eq!(s, vec![1, 3], "only the missing partitions run again");
    assert_eq!(
        proofs(&e, &f, job),
        want,
        "and give the same proofs (seeded)"
    );
}

#[test]
fn bad_requests_are_refused_and_the_engine_keeps_serving() {
    let f = Fixture::new("bad", 8);
    let other = Fixture::new("bad-other", 9);
    let ev = Events::default();
    let e = engine(vec![device("cpu", cpu(), 1, false)], &ev, |c| {
        c.limits.max_partitions = 16;
    });
    // A one-partition request changed by `change` is refused, saying `want`.
    let check = |change: &dyn Fn(&mut SubmitRequest), want: &str| {
        let mut req = f.request(1, 0, None);
        change(&mut req);
        let err = e.submit(&req, &local()).unwrap_err().to_string();
        assert!(err.contains(want), "expected {want:?} in {err:?}");
    };
    let synthetic = |name: &str, log_size: u32| {
        Some(Kind::Builtin(BuiltinCircuit {
            name: name.into(),
            log_size: Some(log_size),
            ..Default::default()
        }))
    };
    check(&|r| r.kind = synthetic("nope", 8), "unknown circuit");
    check(&|r| r.kind = None, "names no circuit");
    check(&|r| r.partitions = 0, "at least one partition");
    check(&|r| r.partitions = 17, "limit of 16");
    let other_path = other.params_path.display().to_string();
    check(
        &|r| r.params_path = other_path.clone(),
        "do not fit the circuit",
    );
    let wrong_digest = |r: &mut SubmitRequest| r.params_digest = vec![0; 32];
    check(&wrong_digest, "does not have the digest the request names");
    // #43 item 9: the file's own digest is not sent back.
    let real = {
        use sha2::Digest;
        crate::params::hex(&sha2::Sha256::digest(
            std::fs::read(&f.params_path).unwrap(),
        ))
    };
    let mut r = f.request(1, 0, None);
    wrong_digest(&mut r);
    let err = e.submit(&r, &local()).unwrap_err().to_string();
    assert!(!err.contains(&real), "{err}");
    // Request strings are limited before anything else is done with them.
    let long_path = |r: &mut SubmitRequest| r.params_path = format!("/{}", "x".repeat(5000));
    check(&long_path, "more than the 4096 allowed");
    let long_out = |r: &mut SubmitRequest| {
        r.outputs = Some(crate::proto::ClientOutputs {
            proof_out: "y".repeat(3 << 20),
            ..Default::default()
        })
    };
    check(&long_out, "outputs.proof_out is 3145728 bytes long");
    check(&|r| r.params_digest = vec![0; 5], "has 32");
    let missing = f.dir.join("missing.params").display().to_string();
    check(&|r| r.params_path = missing.clone(), "missing.params");
    check(
        &|r| r.kind = synthetic("synthetic", 40),
        "above this daemon's limit",
    );
    // Garbage instead of a parameters file.
    let junk = f.dir.join("junk.params");
    std::fs::write(&junk, b"definitely not parameters").unwrap();
    let mut r = f.request(1, 0, None);
    r.params_path = junk.display().to_string();
    let err = e.submit(&r, &local()).unwrap_err();
    assert!(!err.to_string().is_empty());
    // Still serving.
    let job = e.submit(&f.request(2, 0, None), &local()).unwrap();
    proved(&e, &ev, &f, job);
}
