//! A run of the pipeline: on keys already loaded ([`Pipeline::run`]), or on keys that load
//! while the run starts ([`Pipeline::run_loading`]): the host memory for the partitions is made
//! ready and the first partitions are synthesised during the load, so a process's first proof
//! does not wait for the load and then for synthesis.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        mpsc::{sync_channel, Receiver, SyncSender},
        Arc, Mutex,
    },
    thread::Scope,
    time::Instant,
};

use bellpepper_core::Circuit;
use blstrs::Scalar;

use super::{
    check_keys, lens_partition_bytes, partition_rng, ByteBudget, Done, Job, JobResult, JobState,
    Partition, Pipeline, PipelineConfig, PipelineStats, StageClock,
};
use crate::{
    groth16::{
        prover::{self, ProvingKey, QueryLens},
        synthesis::{synthesize, Synthesized},
    },
    pce::Pce,
    Backend, Error, Result,
};

/// Proving keys that are being loaded while a run starts ([`Pipeline::run_loading`]).
pub struct Loading<L> {
    /// The query sizes the keys will have (a recording's shape, or the file's header): the
    /// partitions' memory is sized from them before the keys exist, and keys of other sizes
    /// fail the run.
    pub lens: QueryLens,
    /// The backend the keys load onto: its host memory takes the partitions synthesised
    /// meanwhile.
    pub backend: Arc<dyn Backend>,
    /// Loads the keys (one per device).
    pub load: L,
}

/// A synthesised partition on its way to a device worker.
type Ready = (u64, usize, Synthesized);

/// What a run needs of its keys before they are loaded.
struct Plan<'a> {
    config: &'a PipelineConfig,
    pce: Option<&'a Pce>,
    lens: QueryLens,
    host: Arc<dyn Backend>,
    /// Device workers over every key (known before the load from the backend).
    device_workers: usize,
}

impl Pipeline {
    /// Proves every job, calling `on_done` (on the calling thread) as each job completes.
    /// Job ids must be unique within one run.
    pub fn run<C, I, F>(&self, jobs: I, on_done: F) -> Result<PipelineStats>
    where
        C: Circuit<Scalar> + Send,
        I: IntoIterator<Item = Job<C>>,
        I::IntoIter: Send,
        F: FnMut(JobResult),
    {
        let plan = Plan {
            config: &self.config,
            pce: self.pce.as_deref(),
            lens: self.keys[0].lens(),
            host: self.keys[0].backend().clone(),
            device_workers: self.keys.iter().map(|k| self.workers_for(k)).sum(),
        };
        let keys = self.keys.clone();
        execute(&plan, move || Ok(keys), jobs, on_done)
    }

    /// As [`Pipeline::run`] with `config` and the recording `pce`, on the keys `loading.load`
    /// returns, run on a thread of its own while the run starts: the partitions' host memory
    /// is reserved and the first partitions (as many as the budget holds) are synthesised
    /// meanwhile, and the device workers start once the keys are there. Keys whose sizes are
    /// not `loading.lens` fail the run. A failed load fails the run with its error (the
    /// partitions synthesised meanwhile are dropped). The stats' `wall` counts from the keys
    /// being ready.
    pub fn run_loading<C, I, F, L>(
        config: &PipelineConfig,
        pce: Option<Arc<Pce>>,
        loading: Loading<L>,
        jobs: I,
        on_done: F,
    ) -> Result<PipelineStats>
    where
        C: Circuit<Scalar> + Send,
        I: IntoIterator<Item = Job<C>>,
        I::IntoIter: Send,
        F: FnMut(JobResult),
        L: FnOnce() -> Result<Vec<Arc<ProvingKey>>> + Send,
    {
        config.check_workers()?;
        let plan = Plan {
            config,
            pce: pce.as_deref(),
            lens: loading.lens,
            device_workers: config.device_workers(&*loading.backend),
            host: loading.backend,
        };
        let lens = plan.lens;
        let load = loading.load;
        let checked = move || {
            let keys = load()?;
            check_keys(&keys)?;
            if keys[0].lens() != lens {
                return Err(Error::invalid(format!(
                    "the parameters loaded have queries of sizes {:?}, the run was prepared for \
                     {lens:?}: they are of another circuit",
                    keys[0].lens()
                )));
            }
            Ok(keys)
        };
        execute(&plan, checked, jobs, on_done)
    }
}

/// Asks `host` to get host memory ready, before the first partition, for the partitions the
/// run can hold at once ([`PipelineConfig::host_reservation`];
/// [`crate::backend::MemoryPool::reserve_host`]). A device backend pins them now instead of on
/// the critical path of the first proofs. Failures are logged, never fatal.
fn reserve_host_memory(plan: &Plan<'_>, partitions: usize) {
    let sizes = plan
        .config
        .host_reservation(&plan.lens, plan.device_workers, partitions);
    if sizes.is_empty() {
        return;
    }
    if let Err(e) = plan.host.reserve_host(&sizes) {
        tracing::warn!("reserving host memory ahead of the proofs: {e}");
    }
}

/// The run: `load` gives the keys on a thread of its own (at once for keys already loaded),
/// and the device workers start there; synthesis starts meanwhile (see the module docs).
fn execute<C, I, F, L>(plan: &Plan<'_>, load: L, jobs: I, mut on_done: F) -> Result<PipelineStats>
where
    C: Circuit<Scalar> + Send,
    I: IntoIterator<Item = Job<C>>,
    I::IntoIter: Send,
    F: FnMut(JobResult),
    L: FnOnce() -> Result<Vec<Arc<ProvingKey>>> + Send,
{
    let mut t0 = Instant::now();
    let per_partition = lens_partition_bytes(&plan.lens);
    let budget_bytes = plan.config.budget_bytes(per_partition);
    let budget = ByteBudget::new(budget_bytes);
    let seed = plan.config.seed;
    // The jobs are taken in full first (every caller has them at hand): the host memory
    // made ready ahead is for no more partitions than there are.
    let jobs: Vec<Job<C>> = jobs.into_iter().collect();
    let partitions: usize = jobs.iter().map(|j| j.partitions.len()).sum();
    // The queue of partitions, in submission order; jobs are registered as they are taken.
    let states: Mutex<HashMap<u64, JobState>> = Mutex::new(HashMap::new());
    let empty_jobs: Mutex<Vec<u64>> = Mutex::new(Vec::new());
    let queue = Mutex::new(jobs.into_iter().flat_map(|job| {
        let n = job.partitions.len();
        let id = job.id;
        if n == 0 {
            empty_jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(id);
        }
        job.partitions
            .into_iter()
            .enumerate()
            .map(move |(index, circuit)| {
                (
                    n,
                    Partition {
                        job: id,
                        index,
                        circuit,
                    },
                )
            })
    }));
    let n_workers = plan.device_workers.max(1);
    let (syn_tx, syn_rx) = sync_channel::<Ready>(n_workers);
    let syn_rx = Arc::new(Mutex::new(syn_rx));
    let (done_tx, done_rx) = sync_channel::<Done>(n_workers * 2);
    let mut stats = PipelineStats {
        budget_bytes,
        ..Default::default()
    };
    let clock = StageClock::default();
    // Set when the keys could not be loaded: synthesis stops, its partitions are dropped.
    let stop = AtomicBool::new(false);
    let load_error: Mutex<Option<Error>> = Mutex::new(None);
    let ready_at: Mutex<Option<Instant>> = Mutex::new(None);
    std::thread::scope(|scope| {
        let (budget, clock, stop) = (&budget, &clock, &stop);
        let (load_error, ready_at) = (&load_error, &ready_at);
        // The load first, so that the reservation and the first syntheses overlap it.
        let loader = {
            let (syn_rx, done_tx) = (syn_rx.clone(), done_tx.clone());
            let load_then_start_devices =
                move || match std::panic::catch_unwind(std::panic::AssertUnwindSafe(load))
                    .unwrap_or_else(|_| {
                        Err(Error::Pipeline("loading the proving keys panicked".into()))
                    }) {
                    Ok(keys) => {
                        *ready_at.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
                        let workers = DeviceWorkers {
                            syn_rx,
                            done_tx,
                            budget,
                            clock,
                            per_partition,
                            seed,
                        };
                        for key in &keys {
                            for _ in 0..plan.config.device_workers(&**key.backend()) {
                                workers.spawn(scope, key.clone());
                            }
                        }
                    }
                    Err(e) => {
                        *load_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                        stop.store(true, Ordering::SeqCst);
                        // What was synthesised meanwhile is dropped, its budget returned, until
                        // every synthesis worker has stopped.
                        let rx = syn_rx.lock().unwrap_or_else(|e| e.into_inner());
                        while rx.recv().is_ok() {
                            budget.release(per_partition);
                        }
                    }
                };
            scope.spawn(load_then_start_devices)
        };
        reserve_host_memory(plan, partitions);
        for _ in 0..plan.config.synthesis_workers {
            let (syn_tx, done_tx) = (syn_tx.clone(), done_tx.clone());
            let (queue, states) = (&queue, &states);
            let pce = plan.pce;
            // Synthesis writes into the (first) device's host memory (pinned on a device
            // backend; any of the devices reads it directly).
            let host = &plan.host;
            scope.spawn(move || loop {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                let Some((n_parts, part)) = next else { break };
                states
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .entry(part.job)
                    .or_insert_with(|| JobState {
                        proofs: vec![None; n_parts],
                        remaining: n_parts,
                        error: None,
                        started: Instant::now(),
                    });
                let t_wait = Instant::now();
                budget.acquire(per_partition);
                if stop.load(Ordering::SeqCst) {
                    budget.release(per_partition);
                    break;
                }
                let t_syn = Instant::now();
                let synthesized = match pce {
                    Some(p) => p.synthesize_for(part.circuit, Some(host)),
                    None => synthesize(part.circuit),
                };
                let (wait, took) = (t_syn - t_wait, t_syn.elapsed());
                clock.synthesised(wait, took);
                tracing::debug!(
                    "job {} partition {}: synthesised in {took:.2?} (waited {wait:.2?} for the \
                     memory budget)",
                    part.job,
                    part.index
                );
                match synthesized {
                    Ok(s) => {
                        if syn_tx.send((part.job, part.index, s)).is_err() {
                            budget.release(per_partition);
                            break;
                        }
                    }
                    Err(error) => {
                        budget.release(per_partition);
                        let _ = done_tx.send(Done::Failed {
                            job: part.job,
                            error,
                        });
                    }
                }
            });
        }
        drop((syn_tx, syn_rx, done_tx));
        finalise(
            done_rx,
            &states,
            &mut stats,
            &mut on_done,
            plan.config.on_partition.as_ref(),
        );
        // It caught the load's panics; device workers' panics end the scope as before.
        let _ = loader.join();
    });
    if let Some(e) = load_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if let Some(at) = ready_at.into_inner().unwrap_or_else(|e| e.into_inner()) {
        t0 = t0.max(at);
    }
    drop(queue);
    for id in empty_jobs.into_inner().unwrap_or_else(|e| e.into_inner()) {
        stats.jobs += 1;
        on_done(JobResult {
            id,
            proofs: Err(Error::invalid(format!("job {id} has no partitions"))),
            latency: std::time::Duration::ZERO,
        });
    }
    stats.peak_reserved_bytes = budget.peak();
    stats.wall = t0.elapsed();
    let t = clock.times();
    (stats.synthesis, stats.budget_wait) = (t.synthesis, t.budget_wait);
    (stats.device, stats.device_occupied) = (t.device, t.occupied);
    Ok(stats)
}

/// What each device worker shares with the others.
struct DeviceWorkers<'a> {
    syn_rx: Arc<Mutex<Receiver<Ready>>>,
    done_tx: SyncSender<Done>,
    budget: &'a ByteBudget,
    clock: &'a StageClock,
    per_partition: u64,
    seed: Option<u64>,
}

impl<'a> DeviceWorkers<'a> {
    /// A device worker on `key`: takes synthesised partitions until there are no more, runs
    /// their device phase and releases their bytes as soon as it is delivered.
    fn spawn<'scope, 'env>(&self, scope: &'scope Scope<'scope, 'env>, key: Arc<ProvingKey>)
    where
        'a: 'scope,
    {
        let (syn_rx, done_tx) = (self.syn_rx.clone(), self.done_tx.clone());
        let (budget, clock, per_partition, seed) =
            (self.budget, self.clock, self.per_partition, self.seed);
        scope.spawn(move || loop {
            let next = syn_rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
            let Ok((job, index, s)) = next else { break };
            let mut rng = partition_rng(seed, job, index);
            clock.device_enter();
            let t = Instant::now();
            let result = prover::start(&key, vec![s], &mut rng);
            let took = t.elapsed();
            clock.device_leave(took);
            tracing::debug!("job {job} partition {index}: device phase {took:.2?}");
            budget.release(per_partition);
            let msg = match result {
                Ok(pending) => Done::Pending {
                    job,
                    index,
                    pending,
                },
                Err(error) => Done::Failed { job, error },
            };
            if done_tx.send(msg).is_err() {
                break;
            }
        });
    }
}

fn finalise(
    done_rx: Receiver<Done>,
    states: &Mutex<HashMap<u64, JobState>>,
    stats: &mut PipelineStats,
    on_done: &mut impl FnMut(JobResult),
    on_partition: Option<&super::PartitionHook>,
) {
    for msg in done_rx {
        let (job, outcome) = match msg {
            Done::Pending {
                job,
                index,
                pending,
            } => match pending.finalize() {
                Ok(mut p) => (job, Ok((index, p.remove(0)))),
                Err(e) => (job, Err(e)),
            },
            Done::Failed { job, error } => (job, Err(error)),
        };
        let mut st = states.lock().unwrap_or_else(|e| e.into_inner());
        let Some(state) = st.get_mut(&job) else {
            continue;
        };
        let proved = match outcome {
            Ok((index, proof)) => {
                state.proofs[index] = Some(proof);
                stats.partitions += 1;
                Some(index)
            }
            Err(e) => {
                if state.error.is_none() {
                    state.error = Some(e);
                }
                None
            }
        };
        state.remaining -= 1;
        let finished = (state.remaining == 0).then(|| st.remove(&job).expect("present"));
        // The caller's hook and `on_done` run outside the lock the synthesis workers take.
        drop(st);
        if let (Some(hook), Some(index)) = (on_partition, proved) {
            (hook.0)(job, index);
        }
        if let Some(state) = finished {
            stats.jobs += 1;
            let proofs = match state.error {
                Some(e) => Err(e),
                None => Ok(state
                    .proofs
                    .into_iter()
                    .map(|p| p.expect("every partition proved"))
                    .collect()),
            };
            on_done(JobResult {
                id: job,
                proofs,
                latency: state.started.elapsed(),
            });
        }
    }
}
