//! Parameters resident across jobs (evicted LRU or on request) and each device's memory budget.

use super::*;

#[test]
fn parameters_stay_resident_across_jobs_and_are_evicted_lru_or_on_request() {
    let a = Fixture::new("lru-a", 8);
    let b = Fixture::new("lru-b", 9);
    let size = |f: &Fixture| {
        bellows_core::groth16::io::ParamsFile::open(&f.params_path)
            .unwrap()
            .shape()
            .decoded_bytes
    };
    // Room for either file, not both.
    let budget = size(&a).max(size(&b)) + 1;
    assert!(size(&a) + size(&b) > budget);
    let ev = Events::default();
    let e = engine(vec![device("cpu", cpu(), 1, false)], &ev, |c| {
        c.params_budget = Some(budget);
    });
    // Two jobs on the same parameters: decoded once, resident on the device.
    let j1 = e.submit(&a.request(1, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(j1), JobState::Done);
    let j2 = e.submit(&a.request(2, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(j2), JobState::Done);
    let ea = e
        .params()
        .resolve(&a.params_path, None, &|_| Ok(()))
        .unwrap();
    assert_eq!(ea.decodes(), 1, "kept resident across jobs");
    assert_eq!(ea.devices(), vec![0]);
    // Preloading the other evicts the least recently used.
    let eb = e.preload(&b.params_path, true, None).unwrap();
    assert!(eb.is_loaded() && !ea.is_loaded());
    assert_eq!(eb.devices(), vec![0]);
    assert!(e.params().resident_bytes() <= budget);
    // A job on the first loads it again and evicts the second.
    let j3 = e.submit(&a.request(1, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(j3), JobState::Done);
    assert!(ea.is_loaded() && !eb.is_loaded());
    assert_eq!(ea.decodes(), 2);
    // Evicting on request.
    assert!(e.evict(&ea.digest, None).unwrap());
    assert!(!ea.is_loaded() && ea.devices().is_empty());
    assert_eq!(e.params().resident_bytes(), 0);
    assert!(!e.evict(&[7; 32], None).unwrap());
    let st = e.status(10, &local()).unwrap();
    assert_eq!(st.params.len(), 2);
    assert!(st.params.iter().all(|p| p.bytes == 0));
}

/// An engine on one device that reports itself an accelerator, after a one-partition job on
/// fresh parameters: the fixture, the engine, its events, the parameters' entry and the job.
fn accelerated_after_one_job(name: &str) -> (Fixture, Engine, Events, Arc<ParamsEntry>, JobId) {
    let f = Fixture::new(name, 8);
    let ev = Events::default();
    let e = engine(vec![device("gpu", accelerator(), 1, false)], &ev, |_| {});
    let j1 = e.submit(&f.request(1, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(j1), JobState::Done);
    let entry = e
        .params()
        .resolve(&f.params_path, None, &|_| Ok(()))
        .unwrap();
    (f, e, ev, entry, j1)
}

#[test]
fn a_device_backend_gets_its_key_from_the_file_with_no_host_copy() {
    let (f, e, ev, entry, j1) = accelerated_after_one_job("direct");
    // Loaded once, onto the device, never decoded into host memory.
    assert!(!entry.is_loaded());
    assert_eq!(entry.devices(), vec![0]);
    assert_eq!(entry.decodes(), 1);
    assert_eq!(e.params().resident_bytes(), 0);
    let j2 = e.submit(&f.request(2, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(j2), JobState::Done);
    assert_eq!(entry.decodes(), 1, "kept on the device across jobs");
    // Evicted from the device: the next job loads it from the file again.
    e.params().evict_device(&entry, 0);
    assert!(entry.devices().is_empty());
    let j3 = e.submit(&f.request(3, 0, None), &local()).unwrap();
    assert_eq!(ev.wait_finished(j3), JobState::Done);
    assert_eq!((entry.decodes(), entry.is_loaded()), (2, false));
    // The proofs verify (the engine checks each before it is stored; here once more).
    for (j, partitions) in [(j1, 1), (j2, 2), (j3, 3)] {
        assert_eq!(proofs(&e, &f, j).len(), partitions);
    }
}

#[test]
fn a_host_copy_made_for_a_cpu_device_leaves_a_device_key_loaded_from_the_file() {
    let (_f, e, _ev, entry, _) = accelerated_after_one_job("mixed");
    let on_device = e
        .params()
        .key(&entry, false, 0, &accelerator(), G2Policy::Cpu)
        .unwrap();
    // A host copy now (as a CPU device's first partition makes one): the device keeps its key.
    e.params().params(&entry, false).unwrap();
    assert!(entry.is_loaded());
    assert_eq!(entry.devices(), vec![0]);
    let again = e
        .params()
        .key(&entry, false, 0, &accelerator(), G2Policy::Cpu)
        .unwrap();
    assert!(Arc::ptr_eq(&on_device, &again));
    // A curve-only key is replaced when full checks are asked for.
    e.params().evict_device(&entry, 0);
    e.params().evict(&entry.digest);
    let loose = e
        .params()
        .key(&entry, true, 0, &accelerator(), G2Policy::Cpu)
        .unwrap();
    let strict = e
        .params()
        .key(&entry, false, 0, &accelerator(), G2Policy::Cpu)
        .unwrap();
    assert!(!Arc::ptr_eq(&loose, &strict));
    assert!(Arc::ptr_eq(
        &strict,
        &e.params()
            .key(&entry, true, 0, &accelerator(), G2Policy::Cpu)
            .unwrap()
    ));
}

/// The devices holding the points of `f`'s parameters.
fn resident_on(e: &Engine, f: &Fixture) -> Vec<u32> {
    let path = std::fs::canonicalize(&f.params_path).unwrap();
    e.params_status()
        .into_iter()
        .find(|s| s.path == path.display().to_string())
        .map(|s| s.devices)
        .unwrap_or_default()
}

/// The largest device reservation seen per device, checking each against `budgets`.
fn device_reservations(ev: &Events, budgets: &[u64]) -> Vec<u64> {
    let mut most = vec![0; budgets.len()];
    for x in ev.all() {
        if let Event::DeviceReserved {
            device, reserved, ..
        } = x
        {
            assert!(
                reserved <= budgets[device],
                "device {device}: {reserved} bytes reserved, budget {}",
                budgets[device]
            );
            most[device] = most[device].max(reserved);
        }
    }
    most
}

#[test]
fn device_memory_budgets_are_never_exceeded_and_each_device_gets_work() {
    let f = Fixture::new("device-budgets", 8);
    let (w, p) = (f.bytes(), f.points());
    let ev = Events::default();
    // Device 0 has room for its points and two partitions, device 1 for its points and one;
    // three workers each. Device 0's first partition is held until device 0 holds a second one
    // and device 1 has proved one: both budgets are used to the full, and neither is outgrown.
    let what = "two partitions on device 0 and one done on device 1";
    let wait = wait_hook(&ev, what, |v| {
        let on0 = count(v, |e| matches!(e, Event::DeviceReserved { device: 0, .. }));
        on0 >= 2 && device_proved(v, 1)
    });
    let d0 = hooked(first_only(wait));
    let budgets = [p + 2 * w, p + w];
    let e = engine(
        vec![
            budgeted("big", d0, 3, budgets[0]),
            budgeted("small", cpu(), 3, budgets[1]),
        ],
        &ev,
        |c| c.synthesis_workers = 3,
    );
    let jobs: Vec<JobId> = (0..2)
        .map(|i| e.submit(&f.request(5, i, None), &local()).unwrap())
        .collect();
    for &j in &jobs {
        proved(&e, &ev, &f, j);
    }
    let most = device_reservations(&ev, &budgets);
    assert_eq!(most, budgets, "each budget filled exactly, never beyond");
    let devs = e.devices();
    assert!(devs[0].partitions > 0 && devs[1].partitions > 0, "{devs:?}");
    assert_eq!(devs[0].partitions + devs[1].partitions, 10);
    for (i, d) in devs.iter().enumerate() {
        assert_eq!(d.memory_budget_bytes, Some(budgets[i]));
        assert!(d.memory_peak_bytes <= budgets[i]);
        // Only the points stay when the device is idle.
        assert_eq!(d.memory_reserved_bytes, p, "{d:?}");
    }
    assert!(e.metrics().render().contains("bellows_device_memory_bytes"));
}

#[test]
fn a_partition_larger_than_every_device_budget_is_refused_and_the_others_run() {
    let small = Fixture::new("device-budget-small", 8);
    let large = Fixture::new("device-budget-large", 9);
    let fits = small.points() + small.bytes();
    assert!(large.points() + large.bytes() > fits);
    let ev = Events::default();
    // An unlimited fallback does not count: it takes only partitions that failed elsewhere.
    let e = engine(
        vec![
            budgeted("a", cpu(), 2, fits),
            budgeted("b", cpu(), 2, fits),
            device("fallback", cpu(), 1, true),
        ],
        &ev,
        |_| {},
    );
    let err = e.submit(&large.request(2, 0, None), &local()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ServeError::Invalid(_)), "{msg}");
    assert!(
        msg.contains("does not fit any device's memory budget")
            && msg.contains("a ")
            && msg.contains("b "),
        "{msg}"
    );
    assert!(
        e.status(10, &local()).unwrap().jobs.is_empty(),
        "nothing was journaled"
    );
    let job = e.submit(&small.request(3, 0, None), &local()).unwrap();
    proved(&e, &ev, &small, job);
    device_reservations(&ev, &[fits, fits, u64::MAX]);
}

#[test]
fn points_of_other_parameters_leave_a_device_that_needs_the_room() {
    let a = Fixture::new("device-evict-a", 8);
    let b = Fixture::new("device-evict-b", 9);
    // Room for either parameter set and one of its partitions, never for both sets.
    let budget = (a.points() + a.bytes()).max(b.points() + b.bytes());
    assert!(a.points() + b.points() + b.bytes().min(a.bytes()) > budget);
    let ev = Events::default();
    let e = engine(vec![budgeted("gpu", cpu(), 2, budget)], &ev, |_| {});
    for (f, other) in [(&a, &b), (&b, &a), (&a, &b)] {
        let job = e.submit(&f.request(2, 0, None), &local()).unwrap();
        proved(&e, &ev, f, job);
        assert_eq!(resident_on(&e, f), vec![0]);
        let left = resident_on(&e, other).is_empty();
        assert!(left, "the other set left the device");
    }
    device_reservations(&ev, &[budget]);
    let (_, held, peak) = e.device_memory(0);
    assert_eq!(held, a.points());
    assert!(peak <= budget);
}

#[test]
fn preloading_and_evicting_parameters_keep_to_the_device_budget() {
    let a = Fixture::new("device-preload-a", 8);
    let b = Fixture::new("device-preload-b", 9);
    let ev = Events::default();
    // Room for B's points (the larger set) but not for A's and B's together.
    let budget = b.points() + 1;
    assert!(a.points() + b.points() > budget);
    let e = engine(vec![budgeted("gpu", cpu(), 1, budget)], &ev, |_| {});
    e.preload(&a.params_path, true, None).unwrap();
    assert_eq!(e.device_memory(0), (Some(budget), a.points(), a.points()));
    // B takes the room A was holding (A is in no partition's use).
    e.preload(&b.params_path, true, None).unwrap();
    assert_eq!(e.device_memory(0).1, b.points());
    assert_eq!(resident_on(&e, &b), vec![0]);
    assert!(resident_on(&e, &a).is_empty());
    // Evicting B frees the device's room at once.
    assert!(e
        .evict(&e.params().digest_of_path(&b.params_path).unwrap(), None)
        .unwrap());
    assert_eq!(e.device_memory(0).1, 0);
    // Parameters whose points alone exceed the budget are not made resident there.
    let tiny = vec![budgeted("tiny", cpu(), 1, a.points() - 1)];
    let small = start(
        test_config(),
        tiny,
        Arc::new(SqliteStore::in_memory().unwrap()),
    )
    .unwrap();
    small.preload(&a.params_path, true, None).unwrap();
    assert_eq!(small.device_memory(0).1, 0);
    assert!(small.params_status()[0].devices.is_empty());
}
