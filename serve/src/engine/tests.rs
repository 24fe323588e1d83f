//! The engine on small circuits: proofs verify and equal the pipeline's, priorities, overlap,
//! several devices, the byte budget, retries after device faults, cancellation, recovery from
//! the journal, and bad requests. Nothing here sleeps: tests wait for the engine's own events
//! (with a generous bound that turns a hang into a failure).

use std::{
    path::PathBuf,
    sync::{Arc, Condvar, Mutex},
    time::Duration,
};

use bellows_backend_faulty::FaultyBackend;
use bellows_core::{
    backend::G1PhaseInput,
    circuits::{CircuitOptions, CircuitSpec},
    groth16::{
        io::write_parameters_file,
        prover::{G2Policy, ProvingKey},
        setup::generate_random_parameters,
        verifier::{prepare_verifying_key, verify_proof},
        Parameters, Proof,
    },
    layout::G1Jacobian,
    pipeline::{partition_bytes, Job, Pipeline, PipelineConfig},
    rng::ProofRng,
    Backend, BackendConfig, BackendInfo, Error,
};
use bellows_cpu::CpuBackend;

use super::*;
use crate::{
    job::decode_inputs,
    proto::{submit_request::Kind, BuiltinCircuit, SubmitRequest},
    store::SqliteStore,
};

const WAIT: Duration = Duration::from_secs(120);

/// Parameters for synthetic 2^k written to a file in a fresh directory.
struct Fixture {
    dir: PathBuf,
    params_path: PathBuf,
    params: Arc<Parameters>,
    k: u32,
}

impl Fixture {
    fn new(name: &str, k: u32) -> Self {
        let dir =
            std::env::temp_dir().join(format!("bellows-engine-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let spec = CircuitSpec::new("synthetic", &CircuitOptions::with_log_size(k)).unwrap();
        let params = generate_random_parameters(spec.blank(), &mut ProofRng::seeded(11)).unwrap();
        let params_path = dir.join("p.params");
        write_parameters_file(&params, &params_path).unwrap();
        Self {
            dir,
            params_path,
            params: Arc::new(params),
            k,
        }
    }

    fn request(&self, partitions: u32, priority: i32, seed: Option<u64>) -> SubmitRequest {
        SubmitRequest {
            kind: Some(Kind::Builtin(BuiltinCircuit {
                name: "synthetic".into(),
                log_size: Some(self.k),
                ..Default::default()
            })),
            params_path: self.params_path.display().to_string(),
            partitions,
            witness_seed: 42,
            seed,
            priority,
            skip_subgroup_checks: true,
            ..Default::default()
        }
    }

    fn bytes(&self) -> u64 {
        partition_bytes(&self.params)
    }
}

impl Fixture {
    /// Bytes of the query points a device holds for these parameters (G2 on the CPU).
    fn points(&self) -> u64 {
        let shape = bellows_core::groth16::io::ParamsFile::open(&self.params_path)
            .unwrap()
            .shape();
        points_bytes(&shape, false)
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Every event, and a way to wait for one.
#[derive(Clone, Default)]
struct Events(Arc<(Mutex<Vec<Event>>, Condvar)>);

impl Events {
    fn observer(&self) -> Observer {
        let me = self.clone();
        Observer(Arc::new(move |e: &Event| {
            let (m, cv) = &*me.0;
            m.lock().unwrap().push(e.clone());
            cv.notify_all();
        }))
    }

    fn all(&self) -> Vec<Event> {
        self.0 .0.lock().unwrap().clone()
    }

    /// Waits until `pred` holds for the events so far.
    fn wait(&self, what: &str, pred: impl Fn(&[Event]) -> bool) {
        let (m, cv) = &*self.0;
        let (g, t) = cv
            .wait_timeout_while(m.lock().unwrap(), WAIT, |v| !pred(v))
            .unwrap();
        assert!(
            !t.timed_out(),
            "timed out waiting for {what}; events: {:?}",
            *g
        );
    }

    fn wait_finished(&self, job: JobId) -> JobState {
        self.wait(&format!("job {job} to finish"), |v| {
            v.iter()
                .any(|e| matches!(e, Event::JobFinished { job: j, .. } if *j == job))
        });
        self.all()
            .iter()
            .find_map(|e| match e {
                Event::JobFinished { job: j, state } if *j == job => Some(*state),
                _ => None,
            })
            .unwrap()
    }
}

fn cpu() -> Arc<dyn Backend> {
    Arc::new(CpuBackend::new())
}

fn device(label: &str, backend: Arc<dyn Backend>, workers: usize, fallback: bool) -> DeviceSpec {
    DeviceSpec {
        label: label.into(),
        backend,
        workers,
        g2: G2Policy::Cpu,
        fallback,
        memory_budget: None,
    }
}

/// The same with a device memory budget.
fn budgeted(label: &str, backend: Arc<dyn Backend>, workers: usize, budget: u64) -> DeviceSpec {
    DeviceSpec {
        memory_budget: Some(budget),
        ..device(label, backend, workers, false)
    }
}

fn engine(
    devices: Vec<DeviceSpec>,
    events: &Events,
    tweak: impl FnOnce(&mut EngineConfig),
) -> Engine {
    let mut cfg = EngineConfig {
        synthesis_workers: 2,
        observer: Some(events.observer()),
        ..Default::default()
    };
    tweak(&mut cfg);
    Engine::start(
        cfg,
        devices,
        Arc::new(SqliteStore::in_memory().unwrap()),
        Arc::new(Metrics::new()),
    )
    .unwrap()
}

/// The proofs and public inputs of a finished job, from the store; each verified.
fn proofs(e: &Engine, f: &Fixture, job: JobId) -> Vec<Proof> {
    let pvk = prepare_verifying_key(&f.params.vk);
    let parts = e.store().partitions(job).unwrap();
    parts
        .iter()
        .map(|p| {
            let proof = Proof::from_bytes(&p.proof).unwrap();
            let inputs = decode_inputs(&p.inputs).unwrap();
            assert!(
                verify_proof(&pvk, &proof, &inputs).unwrap(),
                "job {job} partition {} does not verify",
                p.index
            );
            proof
        })
        .collect()
}

/// A CPU backend that runs `hook` before each G1 phase (which may fail it).
struct Hooked {
    inner: CpuBackend,
    hook: Box<dyn Fn() -> bellows_core::Result<()> + Send + Sync>,
}

bellows_core::forward_primitives!(Hooked, inner);

impl Backend for Hooked {
    fn info(&self) -> BackendInfo {
        self.inner.info()
    }
    fn groth16_g1(
        &self,
        input: &mut G1PhaseInput<'_>,
    ) -> bellows_core::Result<Vec<[G1Jacobian; 4]>> {
        (self.hook)()?;
        self.inner.groth16_g1(input)
    }
}

fn hooked(hook: impl Fn() -> bellows_core::Result<()> + Send + Sync + 'static) -> Arc<dyn Backend> {
    Arc::new(Hooked {
        inner: CpuBackend::new(),
        hook: Box::new(hook),
    })
}

/// A hook that waits until `events` satisfy `pred`; a timeout fails the G1 phase with an error
/// that names it (and so the test).
fn wait_hook(
    events: &Events,
    what: &'static str,
    pred: impl Fn(&[Event]) -> bool + Send + Sync + 'static,
) -> impl Fn() -> bellows_core::Result<()> + Send + Sync + 'static {
    let ev = events.clone();
    move || {
        let (m, cv) = &*ev.0;
        let (_g, t) = cv
            .wait_timeout_while(m.lock().unwrap(), WAIT, |v| !pred(v))
            .unwrap();
        if t.timed_out() {
            return Err(Error::invalid(format!(
                "test hook timed out waiting for {what}"
            )));
        }
        Ok(())
    }
}

#[test]
fn jobs_prove_verify_and_equal_the_pipelines_proofs() {
    let f = Fixture::new("equal", 8);
    let ev = Events::default();
    let e = engine(vec![device("cpu", cpu(), 2, false)], &ev, |_| {});
    let job = e.submit(&f.request(3, 0, Some(9))).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Done);
    let got = proofs(&e, &f, job);
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

    let st = e.status(10).unwrap();
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
    let bulk = e.submit(&f.request(12, 0, None)).unwrap();
    ev.wait("the first bulk partition", |v| {
        v.iter()
            .any(|e| matches!(e, Event::PartitionDone { job, .. } if *job == bulk))
    });
    let urgent = e.submit(&f.request(2, 10, None)).unwrap();
    assert_eq!(ev.wait_finished(urgent), JobState::Done);
    let bulk_done_before = ev
        .all()
        .iter()
        .filter(|e| matches!(e, Event::PartitionDone { job, .. } if *job == bulk))
        .count();
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
    let first = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let wait = wait_hook(&ev, "a synthesis during device work", |v| {
        v.iter()
            .filter(|e| matches!(e, Event::SynthesisStarted { .. }))
            .count()
            >= 2
    });
    let backend = hooked(move || {
        if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            wait()
        } else {
            Ok(())
        }
    });
    let e = engine(vec![device("cpu", backend, 1, false)], &ev, |c| {
        c.synthesis_workers = 1;
    });
    let job = e.submit(&f.request(3, 0, None)).unwrap();
    assert_eq!(
        ev.wait_finished(job),
        JobState::Done,
        "{:?}",
        e.snapshot(job)
    );
    proofs(&e, &f, job);
}

#[test]
fn a_second_device_takes_work_from_the_same_queue() {
    let f = Fixture::new("two-devices", 8);
    let ev = Events::default();
    // Device 0 cannot finish anything until device 1 has proved a partition.
    let d0 = hooked(wait_hook(&ev, "device 1 to prove a partition", |v| {
        v.iter().any(|e| {
            matches!(
                e,
                Event::DeviceDone {
                    device: 1,
                    ok: true,
                    ..
                }
            )
        })
    }));
    let e = engine(
        vec![device("a", d0, 1, false), device("b", cpu(), 1, false)],
        &ev,
        |_| {},
    );
    let job = e.submit(&f.request(6, 0, None)).unwrap();
    assert_eq!(
        ev.wait_finished(job),
        JobState::Done,
        "{:?}",
        e.snapshot(job)
    );
    proofs(&e, &f, job);
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
        .map(|i| e.submit(&f.request(4, i % 2, None)).unwrap())
        .collect();
    for &j in &jobs {
        assert_eq!(ev.wait_finished(j), JobState::Done);
        proofs(&e, &f, j);
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
fn a_device_fault_mid_partition_is_retried_on_the_fallback_and_the_job_completes() {
    for fault in ["device", "oom", "panic"] {
        let f = Fixture::new(&format!("fault-{fault}"), 8);
        let ev = Events::default();
        let faulty: Arc<dyn Backend> = Arc::new(
            FaultyBackend::with_config(&BackendConfig::default().option("fault", fault)).unwrap(),
        );
        let e = engine(
            vec![
                device("faulty", faulty, 1, false),
                device("cpu-fallback", cpu(), 1, true),
            ],
            &ev,
            |_| {},
        );
        let job = e.submit(&f.request(3, 0, None)).unwrap();
        assert_eq!(
            ev.wait_finished(job),
            JobState::Done,
            "{fault}: {:?}",
            e.snapshot(job)
        );
        assert_eq!(proofs(&e, &f, job).len(), 3);
        let retries = ev
            .all()
            .iter()
            .filter(|x| {
                matches!(
                    x,
                    Event::Retry {
                        failed_device: 0,
                        ..
                    }
                )
            })
            .count();
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
    let job = e.submit(&f.request(1, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Failed);
    let err = e.snapshot(job).unwrap().error.unwrap();
    assert!(err.contains("injected device fault"), "{err}");
    // The engine keeps serving: a good device proves the next job.
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
    let job = e.submit(&f.request(8, 0, None)).unwrap();
    // One partition on the (blocked) device, two synthesised and waiting: the budget is full.
    ev.wait("three synthesised partitions", |v| {
        v.iter()
            .filter(|e| matches!(e, Event::SynthesisDone { .. }))
            .count()
            >= 3
            && v.iter().any(|e| matches!(e, Event::DeviceStarted { .. }))
    });
    assert_eq!(e.shared.budget.reserved(), 3 * bytes);
    assert_eq!(e.cancel(job).unwrap(), JobState::Cancelled);
    assert_eq!(
        e.shared.budget.reserved(),
        bytes,
        "only the partition on the device still holds memory"
    );
    assert_eq!(e.status(10).unwrap().queued_partitions, 0);
    {
        let (m, cv) = &*gate;
        *m.lock().unwrap() = true;
        cv.notify_all();
    }
    // A job submitted after the cancellation runs; the cancelled one never completes.
    let next = e.submit(&f.request(1, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(next), JobState::Done);
    assert_eq!(e.snapshot(job).unwrap().state, JobState::Cancelled);
    assert!(!ev
        .all()
        .iter()
        .any(|x| matches!(x, Event::PartitionDone { job: j, .. } if *j == job)));
}

#[test]
fn recovery_runs_only_the_partitions_the_journal_lacks() {
    let f = Fixture::new("recover", 8);
    let store_path = f.dir.join("jobs.sqlite");
    // A first daemon proves a job of 4 partitions with a seed; we keep its partitions 0 and 2
    // and forget the rest, as if it had crashed after them.
    let (want, job) = {
        let ev = Events::default();
        let store = Arc::new(SqliteStore::open(&store_path).unwrap());
        let cfg = EngineConfig {
            observer: Some(ev.observer()),
            ..Default::default()
        };
        let e = Engine::start(
            cfg,
            vec![device("cpu", cpu(), 1, false)],
            store.clone(),
            Arc::new(Metrics::new()),
        )
        .unwrap();
        let job = e.submit(&f.request(4, 0, Some(3))).unwrap();
        assert_eq!(ev.wait_finished(job), JobState::Done);
        (proofs(&e, &f, job), job)
    };
    {
        let c = rusqlite::Connection::open(&store_path).unwrap();
        c.execute(
            "DELETE FROM partitions WHERE job = ?1 AND idx IN (1, 3)",
            [job as i64],
        )
        .unwrap();
        c.execute(
            "UPDATE jobs SET state = 'running', finished_at = NULL WHERE id = ?1",
            [job as i64],
        )
        .unwrap();
    }
    let ev = Events::default();
    let cfg = EngineConfig {
        observer: Some(ev.observer()),
        ..Default::default()
    };
    let e = Engine::start(
        cfg,
        vec![device("cpu", cpu(), 1, false)],
        Arc::new(SqliteStore::open(&store_path).unwrap()),
        Arc::new(Metrics::new()),
    )
    .unwrap();
    assert_eq!(e.recover().unwrap(), 1);
    assert_eq!(ev.wait_finished(job), JobState::Done);
    let synthesised: Vec<u32> = ev
        .all()
        .iter()
        .filter_map(|x| match x {
            Event::SynthesisStarted { partition, .. } => Some(*partition),
            _ => None,
        })
        .collect();
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
    let check = |req: SubmitRequest, want: &str| {
        let err = e.submit(&req).unwrap_err().to_string();
        assert!(err.contains(want), "expected {want:?} in {err:?}");
    };
    let mut r = f.request(1, 0, None);
    r.kind = Some(Kind::Builtin(BuiltinCircuit {
        name: "nope".into(),
        log_size: Some(8),
        ..Default::default()
    }));
    check(r, "unknown circuit");
    let mut r = f.request(1, 0, None);
    r.kind = None;
    check(r, "names no circuit");
    check(f.request(0, 0, None), "at least one partition");
    check(f.request(17, 0, None), "limit of 16");
    let mut r = f.request(1, 0, None);
    r.params_path = other.params_path.display().to_string();
    check(r, "do not fit the circuit");
    let mut r = f.request(1, 0, None);
    r.params_digest = vec![0; 32];
    check(r, "the request expects");
    let mut r = f.request(1, 0, None);
    r.params_digest = vec![0; 5];
    check(r, "has 32");
    let mut r = f.request(1, 0, None);
    r.params_path = f.dir.join("missing.params").display().to_string();
    check(r, "missing.params");
    let mut r = f.request(1, 0, None);
    r.kind = Some(Kind::Builtin(BuiltinCircuit {
        name: "synthetic".into(),
        log_size: Some(40),
        ..Default::default()
    }));
    check(r, "above this daemon's limit");
    // Garbage instead of a parameters file.
    let junk = f.dir.join("junk.params");
    std::fs::write(&junk, b"definitely not parameters").unwrap();
    let mut r = f.request(1, 0, None);
    r.params_path = junk.display().to_string();
    let err = e.submit(&r).unwrap_err();
    assert!(!err.to_string().is_empty());
    // Still serving.
    let job = e.submit(&f.request(2, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Done);
    proofs(&e, &f, job);
}

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
    let j1 = e.submit(&a.request(1, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(j1), JobState::Done);
    let j2 = e.submit(&a.request(2, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(j2), JobState::Done);
    let ea = e.params().resolve(&a.params_path, None).unwrap();
    assert_eq!(ea.decodes(), 1, "kept resident across jobs");
    assert_eq!(ea.devices(), vec![0]);
    // Preloading the other evicts the least recently used.
    let eb = e.preload(&b.params_path, true).unwrap();
    assert!(eb.is_loaded() && !ea.is_loaded());
    assert_eq!(eb.devices(), vec![0]);
    assert!(e.params().resident_bytes() <= budget);
    // A job on the first loads it again and evicts the second.
    let j3 = e.submit(&a.request(1, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(j3), JobState::Done);
    assert!(ea.is_loaded() && !eb.is_loaded());
    assert_eq!(ea.decodes(), 2);
    // Evicting on request.
    assert!(e.evict(&ea.digest));
    assert!(!ea.is_loaded() && ea.devices().is_empty());
    assert_eq!(e.params().resident_bytes(), 0);
    assert!(!e.evict(&[7; 32]));
    let st = e.status(10).unwrap();
    assert_eq!(st.params.len(), 2);
    assert!(st.params.iter().all(|p| p.bytes == 0));
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
    let hold = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let wait = wait_hook(
        &ev,
        "two partitions on device 0 and one done on device 1",
        |v| {
            let on0 = v
                .iter()
                .filter(|e| matches!(e, Event::DeviceReserved { device: 0, .. }))
                .count();
            let done1 = v.iter().any(|e| {
                matches!(
                    e,
                    Event::DeviceDone {
                        device: 1,
                        ok: true,
                        ..
                    }
                )
            });
            on0 >= 2 && done1
        },
    );
    let d0 = hooked(move || {
        if hold.swap(false, std::sync::atomic::Ordering::SeqCst) {
            wait()
        } else {
            Ok(())
        }
    });
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
        .map(|i| e.submit(&f.request(5, i, None)).unwrap())
        .collect();
    for &j in &jobs {
        assert_eq!(ev.wait_finished(j), JobState::Done, "{:?}", e.snapshot(j));
        proofs(&e, &f, j);
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
    let err = e.submit(&large.request(2, 0, None)).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, ServeError::Invalid(_)), "{msg}");
    assert!(
        msg.contains("does not fit any device's memory budget")
            && msg.contains("a ")
            && msg.contains("b "),
        "{msg}"
    );
    assert!(
        e.status(10).unwrap().jobs.is_empty(),
        "nothing was journaled"
    );
    let job = e.submit(&small.request(3, 0, None)).unwrap();
    assert_eq!(ev.wait_finished(job), JobState::Done);
    proofs(&e, &small, job);
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
    let resident = |e: &Engine, f: &Fixture| {
        e.params_status()
            .iter()
            .find(|s| {
                s.path
                    == std::fs::canonicalize(&f.params_path)
                        .unwrap()
                        .display()
                        .to_string()
            })
            .map(|s| s.devices.clone())
            .unwrap_or_default()
    };
    for (f, other) in [(&a, &b), (&b, &a), (&a, &b)] {
        let job = e.submit(&f.request(2, 0, None)).unwrap();
        assert_eq!(
            ev.wait_finished(job),
            JobState::Done,
            "{:?}",
            e.snapshot(job)
        );
        proofs(&e, f, job);
        assert_eq!(resident(&e, f), vec![0]);
        assert!(
            resident(&e, other).is_empty(),
            "the other set left the device"
        );
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
    e.preload(&a.params_path, true).unwrap();
    assert_eq!(e.device_memory(0), (Some(budget), a.points(), a.points()));
    // B takes the room A was holding (A is in no partition's use).
    e.preload(&b.params_path, true).unwrap();
    assert_eq!(e.device_memory(0).1, b.points());
    let on = |f: &Fixture| {
        let canon = std::fs::canonicalize(&f.params_path).unwrap();
        e.params_status()
            .into_iter()
            .find(|s| s.path == canon.display().to_string())
            .map(|s| s.devices)
            .unwrap_or_default()
    };
    assert_eq!(on(&b), vec![0]);
    assert!(on(&a).is_empty());
    // Evicting B frees the device's room at once.
    assert!(e.evict(&e.params().digest_of_path(&b.params_path).unwrap()));
    assert_eq!(e.device_memory(0).1, 0);
    // Parameters whose points alone exceed the budget are not made resident there.
    let small = Engine::start(
        EngineConfig::default(),
        vec![budgeted("tiny", cpu(), 1, a.points() - 1)],
        Arc::new(SqliteStore::in_memory().unwrap()),
        Arc::new(Metrics::new()),
    )
    .unwrap();
    small.preload(&a.params_path, true).unwrap();
    assert_eq!(small.device_memory(0).1, 0);
    assert!(small.params_status()[0].devices.is_empty());
}

#[cfg(test)]
mod fleet_nodes;

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

/// A trim-counting CPU backend adding to `trims`.
fn trimming(trims: &Arc<std::sync::atomic::AtomicUsize>) -> Arc<dyn Backend> {
    Arc::new(Trimming {
        inner: CpuBackend::new(),
        trims: trims.clone(),
    })
}

#[test]
fn an_idle_device_trims_its_backends_pools_once_after_proving() {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let f = Fixture::new("trim", 8);
    let ev = Events::default();
    let trims = Arc::new(AtomicUsize::new(0));
    let backend = trimming(&trims);
    let e = engine(vec![device("cpu", backend, 2, false)], &ev, |c| {
        c.idle_trim = Some(Duration::from_millis(100));
    });
    let trimmed = |n: usize| {
        move |v: &[Event]| {
            v.iter()
                .filter(|e| {
                    matches!(
                        e,
                        Event::DeviceTrimmed {
                            device: 0,
                            error: None
                        }
                    )
                })
                .count()
                >= n
        }
    };
    for round in 1..=2usize {
        let job = e.submit(&f.request(2, 0, Some(round as u64))).unwrap();
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
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
    let f = Fixture::new("notrim", 8);
    let ev = Events::default();
    let trims = Arc::new(AtomicUsize::new(0));
    let backend = trimming(&trims);
    // Trimming on, but nothing proved: nothing to return.
    let e = engine(vec![device("cpu", backend, 1, false)], &ev, |c| {
        c.idle_trim = Some(Duration::from_millis(50));
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(trims.load(SeqCst), 0, "a device that never proved");
    drop(e);
    // Trimming off: a proof, then idle.
    let backend = trimming(&trims);
    let e = engine(vec![device("cpu", backend, 1, false)], &ev, |c| {
        c.idle_trim = None;
    });
    let job = e.submit(&f.request(1, 0, Some(5))).unwrap();
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
