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
    sync::{Arc, Condvar, Mutex},
    time::{Duration, Instant},
};

mod run;

pub use run::Loading;

use crate::{
    groth16::{
        prover::{self, PendingProofs, ProvingKey, QueryLens},
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
    /// Told of each partition proved, as it is (a job's `on_done` waits for all of them): a
    /// caller's progress over a long job. Default: `None`.
    pub on_partition: Option<PartitionHook>,
}

/// A hook called with (job id, partition index) as each partition is proved, on the thread
/// that runs the pipeline ([`PipelineConfig::on_partition`]). Two hooks are equal when they
/// are the same closure.
#[derive(Clone)]
pub struct PartitionHook(pub Arc<dyn Fn(u64, usize) + Send + Sync>);

impl PartitionHook {
    /// A hook calling `f`.
    pub fn new(f: impl Fn(u64, usize) + Send + Sync + 'static) -> Self {
        PartitionHook(Arc::new(f))
    }
}

impl std::fmt::Debug for PartitionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PartitionHook(..)")
    }
}

impl PartialEq for PartitionHook {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for PartitionHook {}

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
    /// make ready before the first partition ([`Pipeline::run`] and
    /// [`Pipeline::run_loading`], while the key loads, do; a caller that reserves them earlier
    /// has the run find them ready): a, b, c and the aux assignment of each partition the
    /// budget holds at once, no more than the workers can fill or the run has.
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

    /// An error unless there is at least one synthesis worker and one worker per device.
    fn check_workers(&self) -> Result<()> {
        if self.synthesis_workers == 0 || self.workers_per_device == 0 {
            return Err(Error::invalid(
                "synthesis_workers and workers_per_device must be at least 1",
            ));
        }
        Ok(())
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
            on_partition: None,
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
        check_keys(&keys)?;
        config.check_workers()?;
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
}

/// Keys of one pipeline prove the same circuit: the same verifying key and query sizes (they
/// may come from one Parameters, or each from the same file loaded per device).
fn check_keys(keys: &[Arc<ProvingKey>]) -> Result<()> {
    let Some(first) = keys.first() else {
        return Err(Error::invalid(
            "a pipeline needs at least one proving key (device)",
        ));
    };
    let (vk0, lens0) = (&first.params().vk, first.lens());
    if keys
        .iter()
        .any(|k| k.lens() != lens0 || &k.params().vk != vk0)
    {
        return Err(Error::invalid(
            "every proving key of a pipeline must be of the same parameters",
        ));
    }
    Ok(())
}
