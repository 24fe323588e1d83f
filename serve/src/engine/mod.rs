//! The engine: the pipeline scheduler of bellows-core ([`bellows_core::pipeline`]) in its
//! long-running form, fed by a journal.
//!
//! ## Design
//! The stages are the pipeline's — synthesis workers (CPU threads) feed device workers
//! ([`DeviceSpec::workers`] per device, every device fed from one queue), and finaliser threads
//! join each partition's G2 MSM and assemble its proof — with what a daemon needs on top:
//! - **Jobs arrive at any time** and are journaled first ([`crate::store::JobStore`]); a job's
//!   partitions enter a priority queue (higher [`JobSpec::priority`] first, then submission
//!   order), so an urgent job's partitions overtake queued partitions of bulk jobs, at synthesis
//!   and again at the devices.
//! - **One byte budget** ([`bellows_core::pipeline::ByteBudget`], sized by
//!   [`bellows_core::pipeline::partition_bytes_of`]) is reserved before a partition is
//!   synthesised and released only when its proof is assembled (or the partition is dropped), so
//!   everything a partition holds — evaluations, assignments, densities, the G2 scalars — counts,
//!   whatever the concurrency. A synthesis worker reserves under the queue's lock, so it never
//!   sits on a reservation while a higher-priority partition waits.
//! - **Finalisation never blocks a device worker**: device workers hand pending proofs to the
//!   finalisers over an unbounded channel (bounded in practice by the byte budget).
//! - **Parameters resident across jobs**, per device, keyed by digest ([`crate::params`]).
//! - **A memory budget per device** ([`DeviceSpec::memory_budget`]): a partition goes only to a
//!   device whose budget admits its data and its parameters' points (`device_mem`), decided
//!   under the same lock; a job that no device could ever take is refused at submission.
//! - **Retries**: a partition whose device fails (device error, out of memory, a backend or
//!   plugin error, a panic) is synthesised again and retried on a device it has not failed on —
//!   another device, or a fallback device ([`DeviceSpec::fallback`], the CPU backend by default
//!   in `bellows serve`) that only takes retries — up to [`EngineConfig::max_attempts`]; the
//!   event is logged and counted in the metrics. Errors of the job itself (an unsatisfied
//!   circuit, parameters that do not fit) fail the job at once.
//! - **Cancellation** drops the job's queued partitions and releases the memory of those already
//!   synthesised at once; partitions on a device finish and are discarded.
//!
//! Randomness is the pipeline's: partition p of a job draws r, s from
//! [`bellows_core::pipeline::partition_rng`]`(seed, p, 0)`, so a job of N partitions with a seed
//! gives the proofs `bellows prove --pipeline --count N --seed S` gives, bit for bit, whichever
//! device ran what and however often the daemon restarted.

mod device_mem;
mod fleet;
mod host_ahead;
mod jobs;
mod queue;
mod status;
mod types;
mod workers;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc, Arc, Condvar, Mutex,
    },
    thread::JoinHandle,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use bellows_core::{
    pce::Pce,
    pipeline::{partition_bytes_of, ByteBudget},
};

use crate::{
    error::{Result, ServeError},
    job::JobSpec,
    metrics::Metrics,
    params::{ParamsCache, ParamsEntry},
    proto,
    store::{JobId, JobRecord, JobState, JobStore},
};

use queue::Sched;

pub use device_mem::points_bytes;
pub use fleet::FleetConfig;
pub use jobs::Submitted;
pub use types::{DeviceSpec, EngineConfig, Event, JobSnapshot, Observer};

/// A job in the engine.
pub(crate) struct JobRt {
    pub(crate) id: JobId,
    pub(crate) spec: JobSpec,
    pub(crate) params: Arc<ParamsEntry>,
    pub(crate) bytes_per_partition: u64,
    /// Set when the job is cancelled or failed: its partitions are dropped.
    pub(crate) stopped: AtomicBool,
    pub(crate) submitted: Instant,
    /// The identity that submitted it ([`crate::identity`]).
    pub(crate) owner: String,
    /// Its partitions' witnesses run on every core: at most two per device are held at once
    /// (see [`queue::Sched::paced_fits`]).
    pub(crate) paced: bool,
    progress: Mutex<JobSnapshot>,
    watch: tokio::sync::watch::Sender<JobSnapshot>,
}

impl JobRt {
    pub(crate) fn snapshot(&self) -> JobSnapshot {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Live state of a device.
pub(crate) struct DeviceRt {
    pub(crate) spec: DeviceSpec,
    pub(crate) workers: usize,
    /// (partitions on the device now, when the current busy stretch began, busy time before it).
    busy: Mutex<(usize, Option<Instant>, Duration)>,
    /// (proved since its backend's pools were last trimmed, idle since) — see
    /// [`EngineConfig::idle_trim`].
    trim: Mutex<(bool, Instant)>,
    partitions: AtomicU64,
    errors: AtomicU64,
    /// The jobs of the partitions on the device now (one entry per partition).
    running: Mutex<Vec<JobId>>,
}

impl DeviceRt {
    fn enter(&self, job: JobId) {
        let mut b = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        if b.0 == 0 {
            b.1 = Some(Instant::now());
        }
        b.0 += 1;
        self.trim.lock().unwrap_or_else(|e| e.into_inner()).0 = true;
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(job);
    }

    /// The jobs with a partition on the device now, oldest first.
    pub(crate) fn running_jobs(&self) -> Vec<JobId> {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Leaves the device; returns the busy seconds to add to the metrics (when it goes idle).
    fn leave(&self, job: JobId) -> f64 {
        {
            let mut r = self.running.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = r.iter().position(|j| *j == job) {
                r.remove(i);
            }
        }
        let mut b = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        b.0 = b.0.saturating_sub(1);
        if b.0 == 0 {
            self.trim.lock().unwrap_or_else(|e| e.into_inner()).1 = Instant::now();
            if let Some(t) = b.1.take() {
                let d = t.elapsed();
                b.2 += d;
                return d.as_secs_f64();
            }
        }
        0.0
    }

    /// Whether the device's backend should trim its pools now: it proved since the last trim
    /// and has been idle for `after` (then the caller trims, and the next call says no until
    /// the device proves again); otherwise how long to wait before asking again (`None`: until
    /// woken — the device is busy, or has nothing cached).
    pub(crate) fn trim_due(&self, after: Duration) -> std::result::Result<(), Option<Duration>> {
        let busy = self.busy.lock().unwrap_or_else(|e| e.into_inner()).0 > 0;
        let mut t = self.trim.lock().unwrap_or_else(|e| e.into_inner());
        if busy || !t.0 {
            return Err(None);
        }
        match after.checked_sub(t.1.elapsed()) {
            Some(left) if !left.is_zero() => Err(Some(left)),
            _ => {
                t.0 = false;
                Ok(())
            }
        }
    }

    fn busy_time(&self) -> Duration {
        let b = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        b.2 + b.1.map_or(Duration::ZERO, |t| t.elapsed())
    }
}

/// A circuit's pre-compiled constraint system, recorded or loaded once (or why not).
pub(crate) type PceCell = std::sync::OnceLock<Result<Arc<Pce>, String>>;

/// What the threads share.
pub(crate) struct Shared {
    pub(crate) cfg: EngineConfig,
    pub(crate) devices: Vec<DeviceRt>,
    pub(crate) budget: ByteBudget,
    pub(crate) sched: Mutex<Sched>,
    /// Synthesis workers wait here (work queued, budget freed, shutdown).
    pub(crate) syn_cv: Condvar,
    /// Device workers wait here (a synthesised partition, shutdown).
    pub(crate) dev_cv: Condvar,
    pub(crate) jobs: Mutex<HashMap<JobId, Arc<JobRt>>>,
    pub(crate) store: Arc<dyn JobStore>,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) params: ParamsCache,
    /// Whether a job's parameters are decoded into host memory ahead of its first partition's
    /// device phase: when a device that proves (not a fallback) computes in host memory. Device
    /// backends load them from the file themselves ([`ParamsCache::key`]), keeping no copy.
    pub(crate) decode_ahead: bool,
    pub(crate) pces: Mutex<HashMap<String, Arc<PceCell>>>,
    pub(crate) shutdown: AtomicBool,
    pub(crate) started: Instant,
    /// Set when the daemon is a node of a fleet ([`fleet`]).
    pub(crate) fleet: Option<fleet::Fleet>,
    /// Jobs that ended here but whose end the store has not recorded yet (its write failed:
    /// a full disk, a store that is down), with that end: what Await and Status report until
    /// [`Shared::retry_unjournaled`] writes it.
    pub(crate) unjournaled: Mutex<HashMap<JobId, (JobState, Option<String>)>>,
    /// Idempotency keys being submitted now ([`jobs::KeysInFlight`]).
    pub(crate) keys: jobs::KeysInFlight,
    /// Partition shapes (domain, private variables) whose host blocks were made ready ahead
    /// ([`Shared::reserve_host_ahead`]).
    pub(crate) host_reserved: Mutex<std::collections::HashSet<(usize, usize)>>,
    /// Parameters to load onto the first device ahead of their job's partitions.
    pub(crate) keys_ahead: Mutex<Option<mpsc::Sender<host_ahead::KeyAhead>>>,
}

/// Host bytes of one partition of a job with parameters `entry` (also what its device
/// receives).
fn job_partition_bytes(entry: &ParamsEntry) -> u64 {
    let shape = &entry.shape;
    partition_bytes_of(
        shape.domain_size as u64,
        (shape.num_inputs + shape.num_aux) as u64,
        shape.b_len as u64,
    )
}

/// Unix seconds now.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Shared {
    pub(crate) fn emit(&self, e: Event) {
        if let Some(o) = &self.cfg.observer {
            (o.0)(&e);
        }
    }

    pub(crate) fn lock_sched(&self) -> std::sync::MutexGuard<'_, Sched> {
        self.sched.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Returns a partition's device bytes to device `d`'s budget and wakes the device workers.
    pub(crate) fn release_device(&self, d: usize, job: &JobRt) {
        let mut q = self.lock_sched();
        q.release_device(d, job);
        drop(q);
        self.dev_cv.notify_all();
    }

    /// Checks that some device that takes first attempts could ever hold a partition of a job
    /// with parameters `entry` and `bytes` per partition (when idle, under its budget).
    pub(crate) fn check_device_fit(&self, entry: &ParamsEntry, bytes: u64) -> Result<()> {
        let q = self.lock_sched();
        let firsts: Vec<usize> = (0..self.devices.len())
            .filter(|&i| !self.devices[i].spec.fallback)
            .collect();
        if firsts.iter().any(|&i| q.mem[i].admits_alone(entry, bytes)) {
            return Ok(());
        }
        let budgets: Vec<String> = firsts
            .iter()
            .map(|&i| {
                format!(
                    "{} {} (needs {})",
                    self.devices[i].spec.label,
                    crate::config::format_budget(q.mem[i].budget()),
                    bellows_core::units::format_bytes(q.mem[i].need_alone(entry, bytes))
                )
            })
            .collect();
        Err(ServeError::invalid(format!(
            "a partition of this job does not fit any device's memory budget: it needs its \
             data ({}) and its parameters' points on the device; budgets: {} \
             (--device-memory-budget)",
            bellows_core::units::format_bytes(bytes),
            budgets.join(", ")
        )))
    }

    /// Returns `bytes` (of partitions already taken off the paced count) to the budget and
    /// wakes the synthesis workers.
    pub(crate) fn release(&self, bytes: u64) {
        let _g = self.lock_sched();
        self.budget.release(bytes);
        self.syn_cv.notify_all();
    }

    /// Returns one partition of `job`'s bytes to the budget (and to the paced count) and wakes
    /// the synthesis workers.
    pub(crate) fn release_partition(&self, job: &JobRt) {
        let mut q = self.lock_sched();
        q.unpace(job);
        self.budget.release(job.bytes_per_partition);
        drop(q);
        self.syn_cv.notify_all();
    }

    /// Devices that take first attempts (not fallbacks): what a paced job's two partitions per
    /// device are counted against.
    pub(crate) fn first_devices(&self) -> usize {
        self.devices.iter().filter(|d| !d.spec.fallback).count()
    }

    pub(crate) fn update_gauges(&self) {
        let (w, r, mem) = {
            let s = self.lock_sched();
            let mem: Vec<(Option<u64>, u64)> =
                s.mem.iter().map(|m| (m.budget(), m.reserved())).collect();
            (s.waiting_len(), s.ready_len(), mem)
        };
        self.metrics.set_queued(w, r);
        self.metrics
            .set_active_jobs(self.jobs.lock().unwrap_or_else(|e| e.into_inner()).len());
        for (d, (budget, reserved)) in self.devices.iter().zip(mem) {
            self.metrics
                .set_device_memory(&d.spec.label, budget, reserved);
        }
        self.metrics.set_memory(
            self.budget.capacity(),
            self.budget.reserved(),
            self.params.budget(),
            self.params.resident_bytes(),
        );
    }

    /// Updates a job's progress and tells its watchers.
    pub(crate) fn set_progress(&self, job: &JobRt, f: impl FnOnce(&mut JobSnapshot)) {
        let snap = {
            let mut p = job.progress.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut p);
            p.clone()
        };
        job.watch.send_replace(snap);
    }

    /// Finishes a job in `state` (once): journal, drop its queued partitions, tell watchers.
    pub(crate) fn finish(&self, job: &Arc<JobRt>, state: JobState, error: Option<String>) {
        if job.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        let recorded = match self
            .store
            .finish_job(job.id, state, error.as_deref(), unix_now())
        {
            Ok(r) => r,
            Err(e) => {
                // The job ended all the same: clients are told so from memory, and the journal
                // is written again until it takes it (a daemon restarted meanwhile resumes the
                // job, as the journal still has it unfinished).
                self.metrics.error("store");
                tracing::error!(
                    "job {}: journaling its end failed ({e}); retrying in the background",
                    job.id
                );
                let error = match &error {
                    Some(m) => format!("{m} (the journal could not record this yet: {e})"),
                    None => format!("(the journal could not record its end yet: {e})"),
                };
                self.unjournaled
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(job.id, (state, Some(error)));
                true
            }
        };
        if !recorded && self.fleet.is_none() {
            return; // already finished (a cancel raced with the last partition)
        }
        if recorded {
            match state {
                JobState::Done => tracing::info!("job {} done", job.id),
                _ => tracing::warn!(
                    "job {} {}: {}",
                    job.id,
                    state.as_str(),
                    error.as_deref().unwrap_or("")
                ),
            }
            self.metrics.job_finished(state.as_str());
        }
        self.end_locally(job, state, error);
        if recorded {
            self.emit(Event::JobFinished { job: job.id, state });
        }
    }

    /// The job `id` in memory (queued or running here), if it is.
    pub(crate) fn live_job(&self, id: JobId) -> Option<Arc<JobRt>> {
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
            .cloned()
    }

    /// A stored job's state and error, or the end it had here when the journal could not
    /// record it yet.
    pub(crate) fn end_of(&self, rec: &JobRecord) -> (JobState, Option<String>) {
        if !rec.state.is_finished() {
            if let Some(end) = self
                .unjournaled
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&rec.id)
            {
                return end.clone();
            }
        }
        (rec.state, rec.error.clone())
    }

    /// Writes the ends that the journal did not take; returns how many are still missing.
    pub(crate) fn retry_unjournaled(&self) -> usize {
        let pending: Vec<(JobId, (JobState, Option<String>))> = self
            .unjournaled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(k, v)| (*k, v.clone()))
            .collect();
        for (id, (state, error)) in pending {
            match self
                .store
                .finish_job(id, state, error.as_deref(), unix_now())
            {
                Ok(_) => {
                    tracing::info!("job {id}: its end is journaled now");
                    self.unjournaled
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&id);
                }
                Err(e) => {
                    self.metrics.error("store");
                    tracing::debug!("job {id}: journaling its end failed again: {e}");
                }
            }
        }
        self.unjournaled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// The local side of a job's end that was recorded elsewhere (by a fleet's store, or
    /// another node): drops its queued partitions and tells watchers, once.
    pub(crate) fn finish_local(&self, job: &Arc<JobRt>, state: JobState, error: Option<String>) {
        if job.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        self.end_locally(job, state, error);
        self.emit(Event::JobStopped { job: job.id, state });
    }

    fn end_locally(&self, job: &Arc<JobRt>, state: JobState, error: Option<String>) {
        let freed = self.lock_sched().remove_job(job.id);
        if freed > 0 {
            self.release(freed);
        }
        self.dev_cv.notify_all();
        if let Some(f) = &self.fleet {
            f.forget_job(job.id);
        }
        self.set_progress(job, |p| {
            p.state = state;
            p.error = error;
        });
        {
            let mut jobs = self.jobs.lock().unwrap_or_else(|e| e.into_inner());
            if jobs.get(&job.id).is_some_and(|j| Arc::ptr_eq(j, job)) {
                jobs.remove(&job.id);
            }
        }
        self.update_gauges();
    }

    /// A job's runtime (not yet registered in `jobs`).
    pub(crate) fn job_rt(
        &self,
        id: JobId,
        spec: JobSpec,
        entry: Arc<ParamsEntry>,
        state: JobState,
        done: u32,
        owner: &str,
    ) -> Arc<JobRt> {
        let total = spec.partitions;
        let bytes = job_partition_bytes(&entry);
        let paced = spec.kind.witness_on_every_core() && self.cfg.pce_dir.is_some();
        self.reserve_host_ahead(&entry, bytes, paced, total);
        self.load_key_ahead(&entry, spec.curve_only);
        let snap = JobSnapshot {
            id,
            state,
            done,
            total,
            error: None,
        };
        Arc::new(JobRt {
            id,
            bytes_per_partition: bytes,
            params: entry,
            stopped: AtomicBool::new(false),
            submitted: Instant::now(),
            owner: owner.to_string(),
            paced,
            progress: Mutex::new(snap.clone()),
            watch: tokio::sync::watch::Sender::new(snap),
            spec,
        })
    }
}

/// The proving engine (see the module docs).
pub struct Engine {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("devices", &self.shared.devices.len())
            .finish()
    }
}

/// How to follow a job.
#[derive(Debug)]
pub enum JobWatch {
    /// Unfinished: its progress, until it finishes.
    Live(tokio::sync::watch::Receiver<JobSnapshot>),
    /// Already finished.
    Finished(JobRecord),
}

impl Engine {
    /// Starts the worker threads. Nothing runs until jobs are submitted or recovered.
    pub fn start(
        cfg: EngineConfig,
        devices: Vec<DeviceSpec>,
        store: Arc<dyn JobStore>,
        metrics: Arc<Metrics>,
    ) -> Result<Self> {
        if devices.iter().all(|d| d.fallback) {
            return Err(ServeError::Config(
                "the engine needs at least one device that is not a fallback".into(),
            ));
        }
        if devices.len() > 64 {
            return Err(ServeError::Config("at most 64 devices".into()));
        }
        if cfg.synthesis_workers == 0 || cfg.finalizers == 0 || cfg.max_attempts == 0 {
            return Err(ServeError::Config(
                "synthesis workers, finalisers and attempts must be at least 1".into(),
            ));
        }
        if devices.iter().any(|d| d.workers == 0) {
            return Err(ServeError::Config(
                "every device needs at least one worker".into(),
            ));
        }
        if let Some(d) = devices.iter().find(|d| d.memory_budget == Some(0)) {
            return Err(ServeError::Config(format!(
                "device {}: a memory budget of 0 bytes admits nothing",
                d.label
            )));
        }
        let mut mem = Vec::with_capacity(devices.len());
        for (i, d) in devices.iter().enumerate() {
            metrics.add_device(&d.label);
            let info = d.backend.info();
            let g2_on_device =
                d.g2.on_backend(&info.capabilities, &info.name)
                    .unwrap_or(false);
            mem.push(device_mem::DeviceMem::new(i, d.memory_budget, g2_on_device));
            if let Some(b) = d.memory_budget {
                // The backend's own allocator (staging tiers) stays inside the budget too; a
                // backend without budgets only gets the engine's accounting.
                if let Err(e) = d.backend.set_memory_budget(Some(b)) {
                    tracing::debug!(
                        "device {}: the backend takes no memory budget: {e}",
                        d.label
                    );
                }
            }
        }
        let free = bellows_core::backend::host_memory_info().free;
        let budget = cfg.memory_budget.unwrap_or(free / 2).max(1);
        let params_budget = cfg.params_budget.unwrap_or(free / 4);
        let devices: Vec<DeviceRt> = devices
            .into_iter()
            .map(|d| DeviceRt {
                workers: if d.backend.info().capabilities.concurrent {
                    d.workers
                } else {
                    1
                },
                spec: d,
                busy: Mutex::new((0, None, Duration::ZERO)),
                trim: Mutex::new((false, Instant::now())),
                partitions: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                running: Mutex::new(Vec::new()),
            })
            .collect();
        let mut params = ParamsCache::new(
            params_budget,
            crate::params::ParamsDirs::new(&cfg.params_dirs),
        )
        .with_check(cfg.params_check);
        if let Some(p) = &cfg.params_digests {
            params = params.with_known_digests(p);
        }
        if let Some(p) = &cfg.published {
            params = params.with_published(p.clone());
        }
        let fleet = match &cfg.fleet {
            Some(fc) => Some(fleet::Fleet::new(
                fc.clone(),
                &params,
                devices
                    .iter()
                    .filter(|d| !d.spec.fallback)
                    .map(|d| d.workers)
                    .sum(),
                cfg.limits.max_log_domain,
            )?),
            None => None,
        };
        let decode_ahead = devices
            .iter()
            .any(|d| !d.spec.fallback && !d.spec.backend.info().capabilities.accelerator);
        let (keys_ahead, ahead_rx) = mpsc::channel();
        let shared = Arc::new(Shared {
            keys_ahead: Mutex::new(Some(keys_ahead)),
            params,
            decode_ahead,
            fleet,
            cfg,
            devices,
            budget: ByteBudget::new(budget),
            sched: Mutex::new(Sched::with_devices(mem)),
            syn_cv: Condvar::new(),
            dev_cv: Condvar::new(),
            jobs: Mutex::new(HashMap::new()),
            store,
            metrics,
            pces: Mutex::new(HashMap::new()),
            shutdown: AtomicBool::new(false),
            started: Instant::now(),
            unjournaled: Mutex::new(HashMap::new()),
            keys: jobs::KeysInFlight::default(),
            host_reserved: Mutex::default(),
        });
        let (fin_tx, fin_rx) = mpsc::channel();
        let fin_rx = Arc::new(Mutex::new(fin_rx));
        let mut threads = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .map_err(|e| ServeError::io("starting an engine thread", e))
        };
        // One synthesis worker and one worker per device (of a backend that takes concurrent
        // calls) more, for CRITICAL partitions only: a WinningPoSt never waits for a worker
        // busy with a long partition (docs/curio.md, "Priorities").
        for i in 0..=shared.cfg.synthesis_workers {
            let urgent = i == shared.cfg.synthesis_workers;
            let s = shared.clone();
            threads.push(spawn(
                if urgent {
                    "bellows-syn-urgent".into()
                } else {
                    format!("bellows-syn-{i}")
                },
                Box::new(move || workers::synthesis_loop(&s, urgent)),
            )?);
        }
        for d in 0..shared.devices.len() {
            let dev = &shared.devices[d];
            let urgent_worker =
                !dev.spec.fallback && dev.spec.backend.info().capabilities.concurrent;
            for w in 0..dev.workers + usize::from(urgent_worker) {
                let urgent = w == dev.workers;
                let (s, tx) = (shared.clone(), fin_tx.clone());
                threads.push(spawn(
                    if urgent {
                        format!("bellows-dev-{d}-urgent")
                    } else {
                        format!("bellows-dev-{d}-{w}")
                    },
                    Box::new(move || workers::device_loop(&s, d, &tx, urgent)),
                )?);
            }
        }
        drop(fin_tx);
        let s = shared.clone();
        threads.push(spawn(
            "bellows-keys-ahead".into(),
            Box::new(move || host_ahead::keys_ahead_loop(&s, &ahead_rx)),
        )?);
        for i in 0..shared.cfg.finalizers {
            let (s, rx) = (shared.clone(), fin_rx.clone());
            threads.push(spawn(
                format!("bellows-fin-{i}"),
                Box::new(move || workers::finalise_loop(&s, &rx)),
            )?);
        }
        if shared.fleet.is_some() {
            let s = shared.clone();
            threads.push(spawn(
                "bellows-fleet-claim".into(),
                Box::new(move || fleet::claim_loop(&s)),
            )?);
            let s = shared.clone();
            threads.push(spawn(
                "bellows-fleet-beat".into(),
                Box::new(move || fleet::beat_loop(&s)),
            )?);
        }
        shared.update_gauges();
        Ok(Self {
            shared,
            threads: Mutex::new(threads),
        })
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.shared.metrics
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn JobStore> {
        &self.shared.store
    }

    /// Stops the workers after the partitions they hold (queued work stays journaled and runs
    /// after the next start). Blocks until they have stopped.
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        {
            let _g = self.shared.lock_sched();
            self.shared.syn_cv.notify_all();
            self.shared.dev_cv.notify_all();
        }
        if let Some(f) = &self.shared.fleet {
            f.wake_all();
        }
        self.shared.stop_keys_ahead();
        let threads: Vec<_> =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(|e| e.into_inner()));
        let joined = !threads.is_empty();
        for t in threads {
            let _ = t.join();
        }
        if let (true, Some(f)) = (joined, &self.shared.fleet) {
            fleet::stop(&self.shared, f);
        }
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // On a fresh thread: a fleet's store is blocking and may not run on an async thread.
        std::thread::scope(|s| {
            s.spawn(|| self.shutdown());
        });
    }
}

/// The protobuf value of a state.
pub fn state_to_proto(s: JobState) -> proto::JobState {
    match s {
        JobState::Queued => proto::JobState::Queued,
        JobState::Running => proto::JobState::Running,
        JobState::Done => proto::JobState::Done,
        JobState::Failed => proto::JobState::Failed,
        JobState::Cancelled => proto::JobState::Cancelled,
    }
}

#[cfg(test)]
mod tests;
