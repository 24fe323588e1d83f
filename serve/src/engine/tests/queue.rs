//! The queue: proofs verify and equal the pipeline's, priorities, synthesis beside device
//! work, several devices on one queue, the byte budget, cancellation.

use super::*;

#[test]
fn jobs_prove_verify_and_equal_the_pipelines_proofs() {
    let f = Fixture::new("equal", 8);
    let ev = Events::default();
    let e = engine(vec![device("cpu", cpu(), 2, false)], &ev, |_| {});
    let job = e.submit(&f.request(3, 0, Some(9)), &local()).unwrap();
    let got = proved(&e, &ev, &f, job);
    assert_eq!(got.len(), 3);

    // `bellows prove --pipeline --count 3 --seed 9`: job i, partition 0, witness seed i.
    let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(8)).unwrap();
    let key = Arc::new(ProvingKey::with_g2_policy(f.params.clone(), cpu(), G2Policy::Cpu).unwrap());
    let mut cfg = PipelineConfig::default();
    cfg.seed = Some(9);
    let jobs = (0..3u64).map(|i| Job {
        id: i,
        partitions: vec![spec.with_witness(bellows_core::circuits::witness_seed(42, i))],
    });
    let mut want = vec![None; 3];
    Pipeline::new(vec![key], cfg)
        .unwrap()
        .run(jobs, |r| want[r.id as usize] = r.proofs.unwrap().pop())
        .unwrap();
    let want: Vec<Proof> = want.into_iter().map(Option::unwrap).collect();
    assert_eq!(got, want, "the daemon's proofs equal `prove --pipeline`'s");

    let st = e.status(10, &local()).unwrap();
    assert_eq!(st.jobs[0].partitions_done, 3);
    assert_eq!(st.devices[0].partitions, 3);
    assert!(e.metrics().render().contains("bellows_partitions_total"));
}

#[test]
fn an_urgent_job_overtakes_queued_partitions_of_a_bulk_job() {
    let f = Fixture::new("priority", 8);
    let ev = Events::default();
    // One synthesis worker, one device worker, room for two partitions: the queue is the only
    // place partitions can wait.
    let e = engine(vec![device("cpu", cpu(), 1, false)], &ev, |c| {
        c.synthesis_workers = 1;
        c.memory_budget = Some(2 * f.bytes());
    });
    let bulk = e.submit(&f.request(12, 0, None), &local()).unwrap();
    let bulk_done = |v: &[Event]| {
        count(
            v,
            |e| matches!(e, Event::PartitionDone { job, .. } if *job == bulk),
        )
    };
    ev.wait("the first bulk partition", |v| bulk_done(v) > 0);
    let urgent = e.submit(&f.request(2, 10, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(urgent), JobState::Done);
    let bulk_done_before = bulk_done(&ev.all());
    // At most the partitions already holding the budget (2) ran between the submission and the
    // urgent job's synthesis, plus the one that was done.
    assert!(
        bulk_done_before <= 5,
        "{bulk_done_before} bulk partitions finished before the urgent job"
    );
    assert_eq!(ev.wait_finished(bulk), JobState::Done);
    proofs(&e, &f, urgent);
    proofs(&e, &f, bulk);
}

#[test]
fn synthesis_overlaps_device_work() {
    let f = Fixture::new("overlap", 8);
    let ev = Events::default();
    // The device holds the first partition until a synthesis worker has started another: with
    // synthesis waiting for the device, this would never happen (and the job would fail).
    let wait = wait_hook(&ev, "a synthesis during device work", |v| {
        count(v, |e| matches!(e, Event::SynthesisStarted { .. })) >= 2
    });
    let backend = hooked(first_only(wait));
    let e = engine(vec![device("cpu", backend, 1, false)], &ev, |c| {
        c.synthesis_workers = 1;
    });
    let job = e.submit(&f.request(3, 0, None), &local()).unwrap();
    proved(&e, &ev, &f, job);
}

#[test]
fn a_second_device_takes_work_from_the_same_queue() {
    let f = Fixture::new("two-devices", 8);
    let ev = Events::default();
    // Device 0 cannot finish anything until device 1 has proved a partition.
    let d0 = hooked(wait_hook(&ev, "device 1 to prove a partition", |v| {
        device_proved(v, 1)
    }));
    let devices = vec![device("a", d0, 1, false), device("b", cpu(), 1, false)];
    let e = engine(devices, &ev, |_| {});
    let job = e.submit(&f.request(6, 0, None), &local()).unwrap();
    proved(&e, &ev, &f, job);
    let devs = e.devices();
    assert!(devs[0].partitions > 0 && devs[1].partitions > 0, "{devs:?}");
    assert_eq!(devs[0].partitions + devs[1].partitions, 6);
}

#[test]
fn the_byte_budget_is_never_exceeded() {
    let f = Fixture::new("budget", 8);
    let ev = Events::default();
    let budget = 3 * f.bytes();
    let e = engine(
        vec![device("a", cpu(), 2, false), device("b", cpu(), 2, false)],
        &ev,
        |c| {
            c.synthesis_workers = 2;
            c.memory_budget = Some(budget);
        },
    );
    let jobs: Vec<JobId> = (0..4)
        .map(|i| e.submit(&f.request(4, i % 2, None), &local()).unwrap())
        .collect();
    for &j in &jobs {
        proved(&e, &ev, &f, j);
    }
    // Every reservation is seen with the bytes reserved at that moment (read under the lock).
    let mut most = 0;
    for x in ev.all() {
        if let Event::SynthesisStarted { reserved, .. } = x {
            assert!(
                reserved <= budget,
                "{reserved} bytes reserved, budget {budget}"
            );
            most = most.max(reserved / f.bytes());
        }
    }
    assert!(most <= 3, "{most} partitions held at once with room for 3");
    assert!(
        most >= 2,
        "the budget allowed concurrency that did not happen: {most}"
    );
    let (peak, cap) = e.budget_peak();
    assert!(peak <= cap && cap == budget, "peak {peak}, budget {cap}");
}

#[test]
fn cancelling_frees_the_memory_of_synthesised_partitions_at_once() {
    let f = Fixture::new("cancel", 8);
    let ev = Events::default();
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let g2 = gate.clone();
    let backend = hooked(move || {
        let (m, cv) = &*g2;
        let (_g, t) = cv
            .wait_timeout_while(m.lock().unwrap(), WAIT, |open| !*open)
            .unwrap();
        if t.timed_out() {
            return Err(Error::invalid("gate never opened"));
        }
        Ok(())
    });
    let bytes = f.bytes();
    let e = engine(vec![device("cpu", backend, 1, false)], &ev, |c| {
        c.synthesis_workers = 1;
        c.memory_budget = Some(3 * bytes);
    });
    let job = e.submit(&f.request(8, 0, None), &local()).unwrap();
    // One partition on the (blocked) device, two synthesised and waiting: the budget is full.
    ev.wait("three synthesised partitions", |v| {
        count(v, |e| matches!(e, Event::SynthesisDone { .. })) >= 3
            && count(v, |e| matches!(e, Event::DeviceStarted { .. })) > 0
    });
    assert_eq!(e.shared.budget.reserved(), 3 * bytes);
    assert_eq!(e.cancel(job, &local()).unwrap(), JobState::Cancelled);
    assert_eq!(
        e.shared.budget.reserved(),
        bytes,
        "only the partition on the device still holds memory"
    );
    assert_eq!(e.status(10, &local()).unwrap().queued_partitions, 0);
    {
        let (m, cv) = &*gate;
        *m.lock().unwrap() = true;
        cv.notify_all();
    }
    // A job submitted after the cancellation runs; the cancelled one never completes.
    let next = e.submit(&f.request(1, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(next), JobState::Done);
    assert_eq!(
        e.snapshot(job, &local()).unwrap().state,
        JobState::Cancelled
    );
    let done = |x: &Event| matches!(x, Event::PartitionDone { job: j, .. } if *j == job);
    assert_eq!(count(&ev.all(), done), 0);
}
