//! Idle devices return their backends' pooled memory (trim) once per idle spell.

use super::*;

/// A CPU backend that counts the calls of `trim`.
struct Trimming {
    inner: CpuBackend,
    trims: Arc<std::sync::atomic::AtomicUsize>,
}

bellows_core::forward_ntt!(Trimming, inner);
bellows_core::forward_msm!(Trimming, inner);
bellows_core::forward_memory!(Trimming, inner, |s: &Trimming, op: &str| {
    if op == "trim" {
        s.trims.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    Ok(())
});

impl Backend for Trimming {
    fn info(&self) -> BackendInfo {
        self.inner.info()
    }
}

/// An engine whose one CPU device (`workers` workers) trims after `idle_trim` of idleness, and
/// the count of its trims.
fn trimming(
    ev: &Events,
    workers: usize,
    idle_trim: Option<Duration>,
) -> (Engine, Arc<std::sync::atomic::AtomicUsize>) {
    let trims = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let backend = Arc::new(Trimming {
        inner: CpuBackend::new(),
        trims: trims.clone(),
    });
    let e = engine(vec![device("cpu", backend, workers, false)], ev, |c| {
        c.idle_trim = idle_trim;
    });
    (e, trims)
}

#[test]
fn an_idle_device_trims_its_backends_pools_once_after_proving() {
    use std::sync::atomic::Ordering::SeqCst;
    let f = Fixture::new("trim", 8);
    let ev = Events::default();
    let (e, trims) = trimming(&ev, 2, Some(Duration::from_millis(100)));
    let trimmed = |n: usize| {
        move |v: &[Event]| {
            count(v, |e| {
                *e == Event::DeviceTrimmed {
                    device: 0,
                    error: None,
                }
            }) >= n
        }
    };
    for round in 1..=2usize {
        let job = e
            .submit(&f.request(2, 0, Some(round as u64)), &local())
            .unwrap();
        assert_eq!(ev.wait_finished(job), JobState::Done);
        ev.wait(&format!("trim {round}"), trimmed(round));
        // One trim per idle spell, by one of the device's two workers (the policy would have
        // trimmed again within a few of its 100 ms periods).
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(trims.load(SeqCst), round, "trims after round {round}");
    }
    drop(e);
}

#[test]
fn a_device_that_never_proved_is_not_trimmed_and_zero_turns_trimming_off() {
    use std::sync::atomic::Ordering::SeqCst;
    let f = Fixture::new("notrim", 8);
    let ev = Events::default();
    // Trimming on, but nothing proved: nothing to return.
    let (e, trims) = trimming(&ev, 1, Some(Duration::from_millis(50)));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(trims.load(SeqCst), 0, "a device that never proved");
    drop(e);
    // Trimming off: a proof, then idle.
    let (e, trims) = trimming(&ev, 1, None);
    let job = e.submit(&f.request(1, 0, Some(5)), &local()).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Done);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(trims.load(SeqCst), 0, "trimming off");
    drop(e);

    let cfg = crate::config::ServeConfig::from_toml("idle_trim_s = -1").unwrap();
    let err = cfg.engine_config(&f.dir).unwrap_err().to_string();
    assert!(err.contains("idle_trim_s"), "{err}");
    let cfg = crate::config::ServeConfig::from_toml("idle_trim_s = 0").unwrap();
    assert_eq!(cfg.engine_config(&f.dir).unwrap().idle_trim, None);
    let cfg = crate::config::ServeConfig::from_toml("idle_trim_s = 2.5").unwrap();
    assert_eq!(
        cfg.engine_config(&f.dir).unwrap().idle_trim,
        Some(Duration::from_millis(2500))
    );
}
