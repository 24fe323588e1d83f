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
