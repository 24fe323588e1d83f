//! The engine on small circuits: the fixtures and helpers every test module here shares (a
//! parameters file, the engine's events, CPU and hooked devices, journaled engines), and the
//! tests by job: `queue` (proofs, priorities, overlap, several devices, the byte budget,
//! cancellation), `faults` (device faults, recovery, bad requests), `memory` (resident
//! parameters, device budgets), `trim`, `trust` and `fleet_nodes`. Nothing here sleeps: tests
//! wait for the engine's own events (with a generous bound that turns a hang into a failure).

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
    store::{JobStore, SqliteStore},
};
use prost::Message;

const WAIT: Duration = Duration::from_secs(120);

/// The engine's configuration in tests: parameters read from the temporary folder, where the
/// fixtures are.
pub(super) fn test_config() -> EngineConfig {
    EngineConfig {
        params_dirs: vec![std::env::temp_dir()],
        ..Default::default()
    }
}

/// The identity the tests submit as.
pub(super) fn local() -> crate::identity::Identity {
    crate::identity::Identity::local()
}

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

    /// The partitions synthesis started on, in order.
    fn synthesised(&self) -> Vec<u32> {
        self.all()
            .iter()
            .filter_map(|x| match x {
                Event::SynthesisStarted { partition, .. } => Some(*partition),
                _ => None,
            })
            .collect()
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

/// The CPU backend reporting itself as a device accelerator, as the CUDA backend does: the
/// engine then loads parameters from the file straight onto it (no host copy).
struct Accelerator(CpuBackend);

bellows_core::forward_primitives!(Accelerator, 0);

impl Backend for Accelerator {
    fn info(&self) -> BackendInfo {
        let mut i = self.0.info();
        i.name = "accelerator".into();
        i.capabilities.accelerator = true;
        i
    }
}

fn accelerator() -> Arc<dyn Backend> {
    Arc::new(Accelerator(CpuBackend::new()))
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
        ..test_config()
    };
    tweak(&mut cfg);
    start(cfg, devices, Arc::new(SqliteStore::in_memory().unwrap())).unwrap()
}

/// `Engine::start` with metrics of its own.
fn start(cfg: EngineConfig, devices: Vec<DeviceSpec>, store: Arc<dyn JobStore>) -> Result<Engine> {
    Engine::start(cfg, devices, store, Arc::new(Metrics::new()))
}

/// An engine with one CPU device on the journal at `path`, its events to `events`.
fn journaled(path: &std::path::Path, events: &Events) -> Engine {
    let cfg = EngineConfig {
        observer: Some(events.observer()),
        ..test_config()
    };
    let store = Arc::new(SqliteStore::open(path).unwrap());
    start(cfg, vec![device("cpu", cpu(), 1, false)], store).unwrap()
}

/// Changes the journal at `path` with `sql` (what a crash or a corruption left) and marks `job`
/// unfinished in it, recovers it in a new engine and waits for `job` to be done again; returns
/// the engine and the partitions it synthesised.
fn recovered(path: &std::path::Path, sql: &str, job: JobId) -> (Engine, Vec<u32>) {
    let c = rusqlite::Connection::open(path).unwrap();
    let unfinished = "UPDATE jobs SET state = 'running', finished_at = NULL WHERE id =";
    c.execute_batch(&format!("{sql}; {unfinished} {job};"))
        .unwrap();
    drop(c);
    let ev = Events::default();
    let e = journaled(path, &ev);
    assert_eq!(e.recover().unwrap(), 1);
    assert_eq!(ev.wait_finished(job), JobState::Done);
    (e, ev.synthesised())
}

/// Waits for `job` to finish and asserts that it is done (showing its snapshot where not);
/// returns its proofs, each verified.
fn proved(e: &Engine, ev: &Events, f: &Fixture, job: JobId) -> Vec<Proof> {
    let state = ev.wait_finished(job);
    assert_eq!(state, JobState::Done, "{:?}", e.snapshot(job, &local()));
    proofs(e, f, job)
}

/// How many of `events` `pred` holds for.
fn count(events: &[Event], pred: impl Fn(&Event) -> bool) -> usize {
    events.iter().filter(|e| pred(e)).count()
}

/// Whether device `device` has proved a partition.
fn device_proved(events: &[Event], device: usize) -> bool {
    let done =
        |e: &Event| matches!(e, Event::DeviceDone { device: d, ok: true, .. } if *d == device);
    count(events, done) > 0
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

/// `hook` on its first call only; the later calls pass.
fn first_only(
    hook: impl Fn() -> bellows_core::Result<()> + Send + Sync + 'static,
) -> impl Fn() -> bellows_core::Result<()> + Send + Sync + 'static {
    let first = std::sync::atomic::AtomicBool::new(true);
    move || {
        if first.swap(false, std::sync::atomic::Ordering::SeqCst) {
            hook()
        } else {
            Ok(())
        }
    }
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

mod faults;
mod fleet_nodes;
mod host_ahead;
mod memory;
mod queue;
mod trim;
mod trust;
