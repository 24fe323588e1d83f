//! The pipeline scheduler: many proofs, many partitions, one or more devices, bounded memory.
//!
//! ## Design
//! A job is one proof request of one or more partitions (a Filecoin PoRep proof is 10 partitions
//! of one circuit). Three stages run concurrently:
//!
//! 1. **Synthesis workers** (CPU threads) take partitions from the queue in submission order. Before
//!    synthesising, a worker reserves the partition's estimated bytes from a [`ByteBudget`]; it
//!    blocks while the budget is spent, so the number of synthesised-but-unproved partitions can
//!    never outgrow RAM. With [`Pipeline::with_pce`], a worker synthesises with the pre-compiled
//!    constraint system (witness-only, then parallel products) instead of directly.
//! 2. **Device workers** — [`PipelineConfig::workers_per_device`] threads per [`ProvingKey`] (one
//!    key per device; one thread only for a backend that does not declare
//!    [`crate::Capabilities::concurrent`]), all fed from one bounded channel, so several devices
//!    share one queue and several workers per device overlap one partition's transfers with
//!    another's compute. A worker runs [`prover::start`] (the G1 phase on its device; the G2 MSM
//!    on a CPU thread or after it on the device, as the key's G2 policy says) and releases the
//!    partition's bytes as soon as the device part is delivered.
//! 3. **The finaliser** (the calling thread) joins each partition's G2 MSM, assembles the proof and
//!    hands a completed job to the caller's callback as soon as its last partition is done.
//!
//! Randomness is per partition: with a seed, partition p of job j draws r, s from a ChaCha20
//! stream keyed by (seed, j, p), so the proofs do not depend on which worker ran what, and equal
//! those of [`prover::start`] with [`partition_rng`]. A failing partition (an unsatisfied circuit,
//! say) fails its job, with the error, and the pipeline goes on with the others.

use std::{
    collections::HashMap,
    sync::{
        mpsc::{sync_channel, Receiver},
        Arc, Condvar, Mutex,
    },
    time::{Duration, Instant},
};

use bellpepper_core::Circuit;
use blstrs::Scalar;

use crate::{
    groth16::{
        prover::{self, PendingProofs, ProvingKey, QueryLens},
        synthesis::synthesize,
        Parameters, Proof,
    },
    pce::Pce,
    rng::ProofRng,
    Error, Result,
};

/// How a [`Pipeline`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PipelineConfig {
    /// Threads synthesising partitions. Default: half the cores, at least 1.
    pub synthesis_workers: usize,
    /// Device workers per proving key (device). Default: 2, so one partition's transfers overlap
    /// another's compute.
    pub workers_per_device: usize,
    /// Bytes that synthesised partitions waiting for a device may hold. Default: `None`, half of
    /// the host memory available when the pipeline starts.
    pub memory_budget: Option<u64>,
    /// Seed for deterministic proofs. Default: `None` (r, s from the operating system).
    pub seed: Option<u64>,
    /// At most this many synthesised partitions held at once (the budget is then the smaller
    /// of `memory_budget` and this many partitions' bytes). For circuits whose witness already
    /// runs on every core (Filecoin PoRep partitions), two are enough to keep a device busy: one
    /// on the device, the next being synthesised. Default: `None`, the budget alone decides.
    pub partitions_in_flight: Option<usize>,
}

impl PipelineConfig {
    /// The bytes synthesised partitions of `per_partition` bytes may hold at once:
    /// `memory_budget` (default half the free host memory, at least one partition), capped by
    /// `partitions_in_flight`.
    pub fn budget_bytes(&self, per_partition: u64) -> u64 {
        let budget = self
            .memory_budget
            .unwrap_or_else(|| (crate::backend::host_memory_info().free / 2).max(per_partition));
        match self.partitions_in_flight {
            Some(n) => budget.min(per_partition.saturating_mul(n.max(1) as u64)),
            None => budget,
        }
    }

    /// The host blocks, in bytes, that a run of `partitions` partitions on a key of `lens`
    /// (with `device_workers` device workers over all its keys) asks the first key's backend to
    /// make ready before the first partition ([`Pipeline::run`] does; a caller may do it
    /// earlier, while the key loads, and the run then finds them ready): a, b, c and the aux
    /// assignment of each partition the budget holds at once, no more than the workers can fill
    /// or the run has.
    pub fn host_reservation(
        &self,
        lens: &QueryLens,
        device_workers: usize,
        partitions: usize,
    ) -> Vec<usize> {
        let per = lens_partition_bytes(lens);
        let fit = (self.budget_bytes(per) / per.max(1)).min(partitions as u64);
        if fit == 0 {
            return Vec::new();
        }
        let workers = self.synthesis_workers + device_workers;
        let count = (fit as usize).clamp(1, workers.max(1));
        prover::proofs_host_blocks(lens, count)
    }

    /// Device workers for a key on `backend`: [`PipelineConfig::workers_per_device`], or one
    /// when the backend does not declare `concurrent` (it must not be called from several
    /// threads).
    pub fn device_workers(&self, backend: &dyn crate::Backend) -> usize {
        if backend.info().capabilities.concurrent {
            self.workers_per_device
        } else {
            1
        }
    }
}

/// [`partition_bytes_of`] a key of `lens`.
fn lens_partition_bytes(lens: &QueryLens) -> u64 {
    partition_bytes_of(
        lens.domain_size as u64,
        (lens.num_inputs + lens.num_aux) as u64,
        lens.b_len as u64,
    )
}

impl Default for PipelineConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            synthesis_workers: (cores / 2).max(1),
            workers_per_device: 2,
            memory_budget: None,
            seed: None,
            partitions_in_flight: None,
        }
    }
}

/// One proof request: the circuits of its partitions.
#[derive(Debug)]
pub struct Job<C> {
    /// Caller's identifier, returned with the result.
    pub id: u64,
    /// One circuit per partition.
    pub partitions: Vec<C>,
}

/// A finished job.
#[derive(Debug)]
pub struct JobResult {
    /// The job's identifier.
    pub id: u64,
    /// One proof per partition, in partition order, or the first error of any partition.
    pub proofs: Result<Vec<Proof>>,
    /// From the job's first partition entering synthesis to its last proof.
    pub latency: Duration,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct PipelineStats {
    /// Jobs completed (with or without error).
    pub jobs: usize,
    /// Partitions proved successfully.
    pub partitions: usize,
    /// Wall time of the run.
    pub wall: Duration,
    /// The most bytes the budget ever had reserved at once.
    pub peak_reserved_bytes: u64,
    /// The budget in force.
    pub budget_bytes: u64,
    /// Synthesis of every partition, summed over the workers.
    pub synthesis: Duration,
    /// Synthesis workers waiting for the budget, summed.
    pub budget_wait: Duration,
    /// The device phase of every partition ([`prover::start`]), summed over the workers.
    pub device: Duration,
    /// The time at least one partition was in its device phase: against `wall`, how much of the
    /// run the devices had work (an upper bound on their busy share; the rest is the host
    /// keeping them waiting).
    pub device_occupied: Duration,
}

impl PipelineStats {
    /// `device_occupied` as a share of `wall` (0 for an empty run).
    pub fn device_occupied_share(&self) -> f64 {
        if self.wall.is_zero() {
            0.0
        } else {
            self.device_occupied.as_secs_f64() / self.wall.as_secs_f64()
        }
    }
}

/// Sums of the stages' times, and the union of the device phases' intervals.
#[derive(Default)]
struct StageClock {
    state: Mutex<StageTimes>,
}

#[derive(Default)]
struct StageTimes {
    synthesis: Duration,
    budget_wait: Duration,
    device: Duration,
    occupied: Duration,
    /// Partitions in their device phase now, and since when one has been.
    on_device: usize,
    since: Option<Instant>,
}

impl StageClock {
    fn times(&self) -> std::sync::MutexGuard<'_, StageTimes> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn synthesised(&self, wait: Duration, took: Duration) {
        let mut t = self.times();
        t.budget_wait += wait;
        t.synthesis += took;
    }

    fn device_enter(&self) {
        let mut t = self.times();
        if t.on_device == 0 {
            t.since = Some(Instant::now());
        }
        t.on_device += 1;
    }

    fn device_leave(&self, took: Duration) {
        let mut t = self.times();
        t.device += took;
        t.on_device = t.on_device.saturating_sub(1);
        if t.on_device == 0 {
            if let Some(since) = t.since.take() {
                t.occupied += since.elapsed();
            }
        }
    }
}

/// A counting semaphore over bytes.
///
/// A request larger than the whole budget is granted when nothing else is reserved, so a
/// single oversized partition still runs (alone) instead of deadlocking.
#[derive(Debug)]
pub struct ByteBudget {
    capacity: u64,
    state: Mutex<(u64, u64)>, // (reserved, peak)
    freed: Condvar,
}

impl ByteBudget {
    /// A budget of `capacity` bytes.
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            state: Mutex::new((0, 0)),
            freed: Condvar::new(),
        }
    }

    /// Blocks until `bytes` can be reserved, then reserves them.
    pub fn acquire(&self, bytes: u64) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while st.0 > 0 && st.0 + bytes > self.capacity {
            st = self.freed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.0 += bytes;
        st.1 = st.1.max(st.0);
    }

    /// Reserves `bytes` if they fit now (or nothing is reserved, as [`ByteBudget::acquire`]
    /// grants an oversized request alone); never blocks. Returns whether it reserved them.
    pub fn try_acquire(&self, bytes: u64) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.0 > 0 && st.0 + bytes > self.capacity {
            return false;
        }
        st.0 += bytes;
        st.1 = st.1.max(st.0);
        true
    }

    /// The budget's capacity in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Returns `bytes` to the budget.
    pub fn release(&self, bytes: u64) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.0 = st.0.saturating_sub(bytes);
        self.freed.notify_all();
    }

    /// Bytes reserved now.
    pub fn reserved(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The most bytes ever reserved at once.
    pub fn peak(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).1
    }
}

/// Host bytes one synthesised partition holds until its device part is done: the A, B, C
/// evaluations padded to the domain, the assignments, their three density bitmaps, and the
/// density-filtered B scalars a CPU G2 MSM gathers (the G1 phase takes the densities as bitmaps
/// and gathers nothing).
pub fn partition_bytes(params: &Parameters) -> u64 {
    partition_bytes_of(
        params.domain_size() as u64,
        (params.num_inputs() + params.num_aux()) as u64,
        params.b_g1.len() as u64,
    )
}

/// [`partition_bytes`] from the shape alone (a parameters file's length fields, before it is
/// decoded): `domain` the domain size, `vars` the variables (inputs, the constant one included,
/// plus aux), `b_len` the points of the B query.
pub fn partition_bytes_of(domain: u64, vars: u64, b_len: u64) -> u64 {
    let fr = 32u64;
    fr * (3 * domain + vars + b_len) + 3 * 8 * vars.div_ceil(64)
}

/// The randomness of partition `partition` of job `job` under `seed` (OS randomness without one).
pub fn partition_rng(seed: Option<u64>, job: u64, partition: usize) -> ProofRng {
    match seed {
        None => ProofRng::os(),
        Some(s) => {
            // SplitMix64-style mixing of (seed, job, partition) into one 64-bit key.
            let mut z =
                s ^ job.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (partition as u64).rotate_left(32);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ProofRng::seeded(z ^ (z >> 31))
        }
    }
}

struct Partition<C> {
    job: u64,
    index: usize,
    circuit: C,
}

enum Done {
    Pending {
        job: u64,
        index: usize,
        pending: PendingProofs,
    },
    Failed {
        job: u64,
        error: Error,
    },
}

struct JobState {
    proofs: Vec<Option<Proof>>,
    remaining: usize,
    error: Option<Error>,
    started: Instant,
}

/// Runs jobs through synthesis workers, device workers and the finaliser (see the module docs).
#[derive(Debug)]
pub struct Pipeline {
    keys: Vec<Arc<ProvingKey>>,
    config: PipelineConfig,
    pce: Option<Arc<Pce>>,
}

impl Pipeline {
    /// A pipeline over one proving key per device; every key must hold the same parameters.
    pub fn new(keys: Vec<Arc<ProvingKey>>, config: PipelineConfig) -> Result<Self> {
        if keys.is_empty() {
            return Err(Error::invalid(
                "a pipeline needs at least one proving key (device)",
            ));
        }
        if config.synthesis_workers == 0 || config.workers_per_device == 0 {
            return Err(Error::invalid(
                "synthesis_workers and workers_per_device must be at least 1",
            ));
        }
        // Keys of one pipeline prove the same circuit: the same verifying key and query sizes
        // (they may come from one Parameters, or each from the same file loaded per device).
        let (vk0, lens0) = (&keys[0].params().vk, keys[0].lens());
        if keys
            .iter()
            .any(|k| k.lens() != lens0 || &k.params().vk != vk0)
        {
            return Err(Error::invalid(
                "every proving key of a pipeline must be of the same parameters",
            ));
        }
        Ok(Self {
            keys,
            config,
            pce: None,
        })
    }

    /// Synthesis workers use this pre-compiled constraint system (witness-only synthesis and
    /// parallel products; results equal direct synthesis's) instead of direct synthesis. Every
    /// partition must be of its shape; one that is not fails its job with the reason.
    pub fn with_pce(mut self, pce: Arc<Pce>) -> Self {
        self.pce = Some(pce);
        self
    }

    /// Device workers for `key`: [`PipelineConfig::workers_per_device`], or one when its backend
    /// does not declare `concurrent` (such a backend must not be called from several threads).
    pub fn workers_for(&self, key: &ProvingKey) -> usize {
        self.config.device_workers(&**key.backend())
    }

    /// Asks each key's backend to get host memory ready, before the first partition, for the
    /// partitions the pipeline can hold at once (at most `fit` by the budget, and no more than
    /// its workers can fill): a, b, c (the evaluation domain each) and the aux assignment of
    /// each ([`crate::backend::MemoryPool::reserve_host`]). A device backend pins them now
    /// instead of on the critical path of the first proofs. Failures are logged, never fatal.
    fn reserve_host_memory(&self, partitions: usize) {
        let device_workers = self.keys.iter().map(|k| self.workers_for(k)).sum::<usize>();
        let sizes = self
            .config
            .host_reservation(&self.keys[0].lens(), device_workers, partitions);
        if sizes.is_empty() {
            return;
        }
        let mut seen: Vec<*const ()> = Vec::new();
        for key in &self.keys {
            // One reservation per backend object, however many keys share it.
            let id = Arc::as_ptr(key.backend()) as *const ();
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            if let Err(e) = key.backend().reserve_host(&sizes) {
                tracing::warn!("reserving host memory ahead of the proofs: {e}");
            }
        }
    }

    /// Proves every job, calling `on_done` (on the calling thread) as each job completes.
    /// Job ids must be unique within one run.
    pub fn run<C, I, F>(&self, jobs: I, mut on_done: F) -> Result<PipelineStats>
    where
        C: Circuit<Scalar> + Send,
        I: IntoIterator<Item = Job<C>>,
        I::IntoIter: Send,
        F: FnMut(JobResult),
    {
        let t0 = Instant::now();
        let per_partition = lens_partition_bytes(&self.keys[0].lens());
        let budget_bytes = self.config.budget_bytes(per_partition);
        let budget = ByteBudget::new(budget_bytes);
        let seed = self.config.seed;
        // The jobs are taken in full first (every caller has them at hand): the host memory
        // made ready ahead is for no more partitions than there are.
        let jobs: Vec<Job<C>> = jobs.into_iter().collect();
        let partitions: usize = jobs.iter().map(|j| j.partitions.len()).sum();
        self.reserve_host_memory(partitions);

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
        let workers: Vec<usize> = self.keys.iter().map(|k| self.workers_for(k)).collect();
        let n_workers: usize = workers.iter().sum();
        let (syn_tx, syn_rx) = sync_channel(n_workers);
        let syn_rx = Arc::new(Mutex::new(syn_rx));
        let (done_tx, done_rx) = sync_channel::<Done>(n_workers * 2);

        let mut stats = PipelineStats {
            budget_bytes,
            ..Default::default()
        };
        let clock = StageClock::default();
        std::thread::scope(|scope| -> Result<()> {
            for _ in 0..self.config.synthesis_workers {
                let (syn_tx, done_tx) = (syn_tx.clone(), done_tx.clone());
                let (queue, states, budget, clock) = (&queue, &states, &budget, &clock);
                let pce = self.pce.as_deref();
                // Synthesis writes into the first device's host memory (pinned on a device
                // backend; any of the devices reads it directly).
                let host = self.keys[0].backend();
                scope.spawn(move || loop {
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
                    let t_syn = Instant::now();
                    let synthesized = match pce {
                        Some(p) => p.synthesize_for(part.circuit, Some(host)),
                        None => synthesize(part.circuit),
                    };
                    let (wait, took) = (t_syn - t_wait, t_syn.elapsed());
                    clock.synthesised(wait, took);
                    tracing::debug!(
                        "job {} partition {}: synthesised in {took:.2?} (waited {wait:.2?} for \
                         the memory budget)",
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
            drop(syn_tx);
            for (key, &n_workers) in self.keys.iter().zip(&workers) {
                for _ in 0..n_workers {
                    let (syn_rx, done_tx, budget, clock) =
                        (syn_rx.clone(), done_tx.clone(), &budget, &clock);
                    let key = key.clone();
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
            drop(done_tx);
            finalise(done_rx, &states, &mut stats, &mut on_done);
            Ok(())
        })?;
        drop(queue);
        for id in empty_jobs.into_inner().unwrap_or_else(|e| e.into_inner()) {
            stats.jobs += 1;
            on_done(JobResult {
                id,
                proofs: Err(Error::invalid(format!("job {id} has no partitions"))),
                latency: Duration::ZERO,
            });
        }
        stats.peak_reserved_bytes = budget.peak();
        stats.wall = t0.elapsed();
        let t = clock.times();
        (stats.synthesis, stats.budget_wait) = (t.synthesis, t.budget_wait);
        (stats.device, stats.device_occupied) = (t.device, t.occupied);
        Ok(stats)
    }
}

fn finalise(
    done_rx: Receiver<Done>,
    states: &Mutex<HashMap<u64, JobState>>,
    stats: &mut PipelineStats,
    on_done: &mut impl FnMut(JobResult),
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
        match outcome {
            Ok((index, proof)) => {
                state.proofs[index] = Some(proof);
                stats.partitions += 1;
            }
            Err(e) => {
                if state.error.is_none() {
                    state.error = Some(e);
                }
            }
        }
        state.remaining -= 1;
        if state.remaining == 0 {
            let state = st.remove(&job).expect("present");
            drop(st);
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
