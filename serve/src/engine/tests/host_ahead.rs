//! Host memory made ready ahead of a job's first partitions: once per shape, and only where
//! synthesis writes into the backend's memory (pre-compiled synthesis).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use super::*;

/// A CPU backend that counts the calls of `reserve_host`.
struct Reserving {
    inner: CpuBackend,
    reserves: Arc<AtomicUsize>,
}

bellows_core::forward_ntt!(Reserving, inner);
bellows_core::forward_msm!(Reserving, inner);
bellows_core::forward_memory!(Reserving, inner, |s: &Reserving, op: &str| {
    if op == "reserve_host" {
        s.reserves.fetch_add(1, SeqCst);
    }
    Ok(())
});

impl Backend for Reserving {
    fn info(&self) -> BackendInfo {
        self.inner.info()
    }
}

#[test]
fn host_memory_is_reserved_once_per_shape_and_only_for_precompiled_synthesis() {
    for pce in [true, false] {
        let f = Fixture::new(if pce { "ahead-pce" } else { "ahead" }, 8);
        let ev = Events::default();
        let reserves = Arc::new(AtomicUsize::new(0));
        let backend = Arc::new(Reserving {
            inner: CpuBackend::new(),
            reserves: reserves.clone(),
        });
        let pce_dir = f.dir.join("pce");
        let e = engine(vec![device("cpu", backend, 1, false)], &ev, |c| {
            if pce {
                c.pce_dir = Some(pce_dir.clone());
            }
        });
        // Two jobs of one shape: the second finds its blocks reserved already.
        for round in 1..=2u64 {
            let job = e.submit(&f.request(2, 0, Some(round)), &local()).unwrap();
            assert_eq!(ev.wait_finished(job), JobState::Done);
        }
        // The reservation runs on a thread of its own.
        let want = usize::from(pce);
        let t = Instant::now();
        while reserves.load(SeqCst) < want && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(reserves.load(SeqCst), want, "with a PCE folder: {pce}");
        drop(e);
    }
}

/// A CPU backend that says it is an accelerator (so the daemon loads its keys straight from the
/// file), counts its G1 set loads, and holds every `alloc_host` (the first thing a pre-compiled
/// synthesis asks of it) until `open` is set.
struct Gated {
    inner: CpuBackend,
    loads: Arc<AtomicUsize>,
    open: Arc<(Mutex<bool>, Condvar)>,
}

bellows_core::forward_ntt!(Gated, inner);
bellows_core::forward_msm!(Gated, inner, |s: &Gated, op: &str| {
    // From decoded points, or (under the curve-only check) from the file's encodings.
    if op == "load_bases_g1" || op == "load_bases_g1_encoded" {
        s.loads.fetch_add(1, SeqCst);
    }
    Ok(())
});
bellows_core::forward_memory!(Gated, inner, |s: &Gated, op: &str| {
    if op == "alloc_host" {
        let (lock, cv) = &*s.open;
        let open = lock.lock().unwrap();
        drop(cv.wait_timeout_while(open, Duration::from_secs(60), |o| !*o));
    }
    Ok(())
});

impl Backend for Gated {
    fn info(&self) -> BackendInfo {
        let mut info = self.inner.info();
        info.capabilities.accelerator = true;
        info
    }
}

#[test]
fn a_jobs_parameters_load_onto_an_accelerator_while_its_first_partitions_are_synthesised() {
    let f = Fixture::new("key-ahead", 8);
    let ev = Events::default();
    let loads = Arc::new(AtomicUsize::new(0));
    let open = Arc::new((Mutex::new(false), Condvar::new()));
    let backend = Arc::new(Gated {
        inner: CpuBackend::new(),
        loads: loads.clone(),
        open: open.clone(),
    });
    let pce_dir = f.dir.join("pce");
    let e = engine(vec![device("gpu", backend, 1, false)], &ev, |c| {
        c.pce_dir = Some(pce_dir.clone());
    });
    let job = e.submit(&f.request(2, 0, Some(1)), &local()).unwrap();
    // No partition can be synthesised (the gate holds its host memory), yet the key loads:
    // its four G1 sets.
    // (Resident once the key is in the cache's table, just after its last set is loaded.)
    let resident = || {
        let entries = e.params().entries();
        !entries.is_empty() && entries.iter().all(|p| p.is_resident_on(0))
    };
    let t = Instant::now();
    while !resident() && t.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        loads.load(SeqCst),
        4,
        "the key loaded before any partition was synthesised"
    );
    assert!(resident());
    *open.0.lock().unwrap() = true;
    open.1.notify_all();
    assert_eq!(ev.wait_finished(job), JobState::Done);
    // The device phase found the key made ahead: loaded once.
    assert_eq!(loads.load(SeqCst), 4);
    drop(e);
}
