//! The engine as one node of a fleet: many daemons, one shared job store
//! ([`crate::store::PgStore`]), no coordinator.
//!
//! ## Design
//! Jobs are not queued where they are submitted. `Submit` writes the job and its partitions to
//! the shared store; every node runs a **claimer** that, while the node holds fewer partitions
//! than its capacity ([`FleetConfig::capacity`]), claims pending partitions it can serve
//! ([`crate::store::Serves`]: proof kinds, parameters, circuit size), highest job priority
//! first, and feeds them to its own pipeline (the engine's priority queue, byte budget,
//! devices and retries, unchanged). This is the task model of Curio's harmonytask and of
//! River: claim with `FOR UPDATE SKIP LOCKED`, hold a lease, renew it, commit once.
//! - **Leases and heartbeats.** A **beat** thread renews the node's leases every
//!   [`FleetConfig::heartbeat`]. A node that stops (SIGKILL, power, network) stops renewing;
//!   after [`FleetConfig::lease`] its partitions are claimed again by whoever has room.
//! - **Exactly once.** A result is committed with its claim's fencing token, in one transaction
//!   with the job's count and state ([`crate::store::JobStore::commit_partition`]); the last
//!   partition finishes the job there, on the node where it lands. A late result from a node
//!   that lost its lease is discarded (`bellows_fleet_commits_total{result="stale"}`). When a
//!   heartbeat shows a claim lost, the node stops the job locally if it ended elsewhere
//!   (cancelled, failed), or lets the partition finish and be discarded.
//! - **The store may go away.** Claims and heartbeats are retried on the next tick; a result
//!   is retried with backoff until it is stored or found stale, so a database restart loses
//!   nothing and duplicates nothing (a commit whose reply was lost is recognised on retry).
//! - **Await and Status from any node.** A job's watchers are fed from the store (polled every
//!   [`FleetConfig::poll`]), so any daemon follows any job.
//! - **Stopping.** On SIGTERM, partitions in flight finish and are committed; those the node
//!   still holds are given back at once. A node that restarts under the same
//!   [`FleetConfig::node_id`] gives back what its previous run held.

use std::{
    collections::{HashMap, HashSet},
    path::PathBuf,
    sync::{atomic::Ordering, Arc, Condvar, Mutex, MutexGuard},
    time::{Duration, Instant},
};

use prost::Message;

mod watch;

use watch::refresh_watchers;
pub(crate) use watch::{cancel, snapshot, watch};

use super::{unix_now, Event, JobRt, JobSnapshot, Shared};
use crate::{
    error::{Result, ServeError},
    job::JobSpec,
    params::ParamsDigest,
    proto,
    store::{Claim, ClaimRequest, Commit, JobId, JobState, NodeBeat, PartitionRecord, Serves},
};

/// How a daemon takes part in a fleet.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FleetConfig {
    /// This node's id in the store. Give each host a stable one so that a restart gives back at
    /// once what the previous run held. Default: `HOSTNAME-PID-RANDOM` (its claims of a previous
    /// run then wait for their leases to expire).
    pub node_id: String,
    /// Where clients reach this node (shown in status). Default: empty.
    pub address: String,
    /// How long a claim lives without a heartbeat. Default: 30 s.
    pub lease: Duration,
    /// How often leases are renewed. Default: 10 s (a third of the lease).
    pub heartbeat: Duration,
    /// How often the store is asked for work when idle, and for the progress of watched jobs.
    /// Default: 1 s.
    pub poll: Duration,
    /// Partitions this node holds claimed at once (its per-host limit). Default: `None`, twice
    /// its device workers (fallback devices not counted).
    pub capacity: Option<usize>,
    /// A partition whose lease expired this many times fails its job. Default: 5.
    pub max_claims: u32,
    /// Proof kinds (circuit names) this node proves. Default: every built-in circuit, and
    /// the Filecoin kinds (`porep-c2`, `window-post`, `winning-post`, `snap-update`) when
    /// built with the cargo feature `filecoin`.
    pub kinds: Vec<String>,
    /// Parameters files this node has: it claims only jobs whose parameters' digest is one of
    /// theirs, and proves with its own copy. Default: empty, any job whose parameters file it
    /// finds at the path the job names (with the digest the job was accepted with).
    pub params: Vec<PathBuf>,
}

impl Default for FleetConfig {
    fn default() -> Self {
        Self {
            node_id: default_node_id(),
            address: String::new(),
            lease: Duration::from_secs(30),
            heartbeat: Duration::from_secs(10),
            poll: Duration::from_secs(1),
            capacity: None,
            max_claims: 5,
            kinds: bellows_core::circuits::CIRCUITS
                .iter()
                .map(|c| c.0.to_string())
                .chain(
                    crate::job::FILECOIN_KINDS
                        .iter()
                        .filter(|_| cfg!(feature = "filecoin"))
                        .map(|k| k.to_string()),
                )
                .collect(),
            params: Vec::new(),
        }
    }
}

/// `HOSTNAME-PID-RANDOM`.
fn default_node_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{host}-{}-{:06x}", std::process::id(), nanos & 0xff_ffff)
}

/// A partition the node holds.
struct Held {
    token: u64,
    /// A heartbeat found the claim gone: its result will be discarded.
    lost: bool,
}

#[derive(Default)]
struct HeldSet {
    held: HashMap<(JobId, u32), Held>,
    /// Counts wake-ups of the claimer, so one that came while it was busy is not missed.
    pokes: u64,
}

/// The fleet side of the engine's shared state.
pub(crate) struct Fleet {
    pub(crate) cfg: FleetConfig,
    capacity: usize,
    serves: Mutex<Serves>,
    serves_text: String,
    /// Declared parameters files, by digest.
    declared: HashMap<ParamsDigest, PathBuf>,
    state: Mutex<HeldSet>,
    /// The claimer waits here: room freed, a local submit, shutdown.
    wake: Condvar,
    /// The beat thread waits here (shutdown only).
    tick: (Mutex<()>, Condvar),
    watchers: Mutex<HashMap<JobId, tokio::sync::watch::Sender<JobSnapshot>>>,
}

impl Fleet {
    /// Resolves the declared parameters (hashing them) and what the node serves.
    pub(crate) fn new(
        cfg: FleetConfig,
        params: &crate::params::ParamsCache,
        device_workers: usize,
        max_log_domain: u32,
    ) -> Result<Self> {
        if cfg.node_id.is_empty() || cfg.node_id.len() > 200 {
            return Err(ServeError::Config(
                "the fleet node id must be 1 to 200 characters".into(),
            ));
        }
        if cfg.lease < Duration::from_millis(100) || cfg.heartbeat >= cfg.lease {
            return Err(ServeError::Config(format!(
                "the lease ({:?}) must be at least 100 ms and longer than the heartbeat \
                 interval ({:?})",
                cfg.lease, cfg.heartbeat
            )));
        }
        let mut declared = HashMap::new();
        for p in &cfg.params {
            let entry = params.resolve(p, None, &|_| Ok(()))?;
            declared.insert(entry.digest, entry.path.clone());
        }
        let capacity = cfg.capacity.unwrap_or(2 * device_workers).max(1);
        let serves = Serves {
            kinds: cfg.kinds.clone(),
            max_log_domain,
            params: (!declared.is_empty()).then(|| declared.keys().copied().collect()),
            excluded: Vec::new(),
        };
        let serves_text = format!(
            "{} up to 2^{max_log_domain}; parameters: {}",
            cfg.kinds.join(","),
            if declared.is_empty() {
                "any".to_string()
            } else {
                declared
                    .keys()
                    .map(|d| crate::params::hex(d)[..12].to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            }
        );
        Ok(Self {
            cfg,
            capacity,
            serves: Mutex::new(serves),
            serves_text,
            declared,
            state: Mutex::new(HeldSet::default()),
            wake: Condvar::new(),
            tick: (Mutex::new(()), Condvar::new()),
            watchers: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> MutexGuard<'_, HeldSet> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Partitions held now.
    pub(crate) fn held(&self) -> usize {
        self.lock().held.len()
    }

    /// Wakes the claimer (work submitted here, room freed).
    pub(crate) fn poke(&self) {
        self.lock().pokes += 1;
        self.wake.notify_all();
    }

    /// Forgets every partition of `job` (it ended).
    pub(crate) fn forget_job(&self, job: JobId) {
        let mut st = self.lock();
        st.held.retain(|k, _| k.0 != job);
        st.pokes += 1;
        self.wake.notify_all();
    }

    /// Forgets one partition if it is still held under `token`; returns whether the node holds
    /// other partitions of its job.
    fn forget(&self, job: JobId, index: u32, token: u64) -> bool {
        let mut st = self.lock();
        if st.held.get(&(job, index)).is_some_and(|h| h.token == token) {
            st.held.remove(&(job, index));
        }
        st.pokes += 1;
        self.wake.notify_all();
        st.held.keys().any(|k| k.0 == job)
    }

    /// Wakes the threads for shutdown.
    pub(crate) fn wake_all(&self) {
        self.poke();
        let _g = self.tick.0.lock().unwrap_or_else(|e| e.into_inner());
        self.tick.1.notify_all();
    }
}

/// Rate-limits a repeated warning (one per 30 s).
struct Warn(Option<Instant>);

impl Warn {
    fn should(&mut self) -> bool {
        if self.0.is_none_or(|t| t.elapsed() > Duration::from_secs(30)) {
            self.0 = Some(Instant::now());
            return true;
        }
        false
    }
}

/// The claimer thread: claims while the node has room.
pub(crate) fn claim_loop(s: &Shared) {
    let Some(f) = &s.fleet else { return };
    // Before the first claim: what a previous run under this id held goes back to the pool.
    if let Err(e) = start(s, f) {
        s.metrics.error("store");
        tracing::warn!(
            "giving back what a previous run of node {} held failed ({e}); those leases expire \
             in {:?}",
            f.cfg.node_id,
            f.cfg.lease
        );
    }
    let mut warn = Warn(None);
    let mut st = f.lock();
    loop {
        if s.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let free = f.capacity.saturating_sub(st.held.len());
        if free == 0 {
            st = f.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        }
        let pokes = st.pokes;
        drop(st);
        let serves = f.serves.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let got = s.store.claim(&ClaimRequest {
            node: &f.cfg.node_id,
            serves: &serves,
            max: free,
            lease: f.cfg.lease,
            max_claims: f.cfg.max_claims,
            now: unix_now(),
        });
        let full = match got {
            Ok(claims) => {
                let n = claims.len();
                if n > 0 {
                    s.metrics.fleet_claimed(n);
                    take(s, f, claims);
                }
                n == free
            }
            Err(e) => {
                s.metrics.error("store");
                if warn.should() {
                    tracing::warn!("claiming work from the store failed (retrying): {e}");
                }
                false
            }
        };
        st = f.lock();
        if !full && st.pokes == pokes && !s.shutdown.load(Ordering::SeqCst) {
            st = f
                .wake
                .wait_timeout(st, f.cfg.poll)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Gives `claims` of `job` back to the store and stops holding them here (whatever the store
/// answered: a failed release leaves leases that expire, as they are no longer renewed).
fn give_back(s: &Shared, f: &Fleet, job: JobId, claims: &[Claim]) -> crate::error::Result<()> {
    let released = s.store.release(&f.cfg.node_id, claims);
    for c in claims {
        f.forget(c.job, c.index, c.token);
    }
    s.emit(Event::GaveBack {
        job,
        partitions: claims.len() as u32,
    });
    released
}

/// Queues claimed partitions in the local pipeline.
fn take(s: &Shared, f: &Fleet, claims: Vec<Claim>) {
    let mut by_job: HashMap<JobId, Vec<Claim>> = HashMap::new();
    {
        let mut st = f.lock();
        for c in claims {
            match st.held.get_mut(&(c.job, c.index)) {
                // Claimed again while still in this node's pipeline (a lease lost and
                // regained): the copy in flight commits under the new token.
                Some(h) => {
                    h.token = c.token;
                    h.lost = false;
                }
                None => {
                    st.held.insert(
                        (c.job, c.index),
                        Held {
                            token: c.token,
                            lost: false,
                        },
                    );
                    by_job.entry(c.job).or_default().push(c);
                }
            }
        }
        s.metrics.set_fleet_held(st.held.len());
    }
    for (job, claims) in by_job {
        match job_rt(s, f, job) {
            Ok(rt) => {
                let mut q = s.lock_sched();
                for c in &claims {
                    q.push_waiting(rt.clone(), c.index, 0, 0);
                }
            }
            Err(Unservable::Here(why, digest)) => {
                tracing::warn!(
                    "job {job}: this node cannot prove it ({why}); giving its partitions back \
                     and not claiming parameters {} again",
                    &crate::params::hex(&digest)[..16]
                );
                f.serves
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .excluded
                    .push(digest);
                if let Err(e) = give_back(s, f, job, &claims) {
                    tracing::warn!("job {job}: giving partitions back failed: {e}");
                }
            }
            Err(Unservable::Later(why)) => {
                tracing::warn!(
                    "job {job}: reading it from the store failed ({why}); giving its \
                                partitions back"
                );
                s.metrics.error("store");
                // If this fails too, the leases expire (they are not renewed: no longer held).
                let _ = give_back(s, f, job, &claims);
            }
            Err(Unservable::Job(why)) => {
                tracing::error!("job {job} cannot be proved: {why}");
                s.metrics.error("job");
                match s
                    .store
                    .finish_job(job, JobState::Failed, Some(&why), unix_now())
                {
                    Ok(true) => s.metrics.job_finished("failed"),
                    Ok(false) => {}
                    Err(e) => tracing::warn!("job {job}: recording its failure failed: {e}"),
                }
                f.forget_job(job);
            }
        }
    }
    s.syn_cv.notify_all();
    s.update_gauges();
}

/// Why a claimed job cannot run here.
enum Unservable {
    /// Not on this node (its parameters are missing or differ): others may.
    Here(String, ParamsDigest),
    /// Nowhere (a request that does not decode or fit its parameters).
    Job(String),
    /// Not now: the store failed.
    Later(String),
}

/// The job's runtime on this node, made from the store's record on its first claim here.
fn job_rt(s: &Shared, f: &Fleet, id: JobId) -> Result<Arc<JobRt>, Unservable> {
    if let Some(j) = s.jobs.lock().unwrap_or_else(|e| e.into_inner()).get(&id) {
        if !j.stopped.load(Ordering::SeqCst) {
            return Ok(j.clone());
        }
    }
    let job_err = |e: &dyn std::fmt::Display| Unservable::Job(e.to_string());
    let rec = s
        .store
        .job(id)
        .map_err(|e| Unservable::Later(e.to_string()))?
        .ok_or_else(|| Unservable::Job("not in the store".into()))?;
    let req = proto::SubmitRequest::decode(&rec.request[..])
        .map_err(|e| Unservable::Job(format!("its stored request does not decode: {e}")))?;
    let spec =
        JobSpec::from_request(&req, &s.cfg.limits, s.params.dirs()).map_err(|e| job_err(&e))?;
    let digest = spec
        .params_digest
        .ok_or_else(|| Unservable::Job("its stored request has no parameters digest".into()))?;
    let path = f
        .declared
        .get(&digest)
        .cloned()
        .unwrap_or_else(|| spec.params_path.clone());
    let entry = s
        .params
        .resolve(&path, Some(&digest), &|_| Ok(()))
        .map_err(|e| Unservable::Here(e.to_string(), digest))?;
    spec.check_params(&entry.shape).map_err(|e| job_err(&e))?;
    let rt = s.job_rt(id, spec, entry, JobState::Running, 0, &rec.submitted_by);
    s.jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, rt.clone());
    Ok(rt)
}

/// Commits a proved partition (from a finaliser): retried until stored, found stale, or the
/// engine stops.
pub(crate) fn commit(s: &Shared, job: &Arc<JobRt>, mut rec: PartitionRecord, device: usize) {
    let Some(f) = &s.fleet else { return };
    let index = rec.index;
    let mut token = {
        let mut st = f.lock();
        match st.held.get(&(job.id, index)) {
            Some(h) if !h.lost => h.token,
            Some(_) => {
                st.held.remove(&(job.id, index));
                st.pokes += 1;
                f.wake.notify_all();
                drop(st);
                discard(s, job, index, "its claim was lost (lease expired)");
                return;
            }
            None => {
                drop(st);
                discard(s, job, index, "its claim was lost");
                return;
            }
        }
    };
    // The node that proved it travels with the timings.
    if let Ok(mut t) = proto::PartitionTimings::decode(&rec.timings[..]) {
        t.node = f.cfg.node_id.clone();
        rec.timings = t.encode_to_vec();
    }
    // This node may claim the partition anew while the copy in flight waits for the store (its
    // lease ran out during an outage, the partition went back and came here again): the result
    // is then committed under the newest claim. The older claim cannot have been stored then.
    let newer = |token: u64| {
        f.lock()
            .held
            .get(&(job.id, index))
            .filter(|h| !h.lost && h.token != token)
            .map(|h| h.token)
    };
    let mut warn = Warn(None);
    let mut backoff = Duration::from_millis(50);
    loop {
        let claim = Claim {
            job: job.id,
            index,
            token,
        };
        match s
            .store
            .commit_partition(&f.cfg.node_id, &claim, &rec, unix_now())
        {
            Ok(Commit::Stored { job_done }) => {
                s.metrics.fleet_commit("stored");
                let others = f.forget(job.id, index, token);
                s.metrics.set_fleet_held(f.held());
                s.emit(Event::PartitionDone {
                    job: job.id,
                    partition: index,
                    device,
                });
                s.set_progress(job, |p| p.done += 1);
                if job_done {
                    tracing::info!("job {} done (its last partition landed here)", job.id);
                    s.metrics.job_finished("done");
                    s.emit(Event::JobFinished {
                        job: job.id,
                        state: JobState::Done,
                    });
                    s.finish_local(job, JobState::Done, None);
                } else if !others {
                    drop_idle_job(s, job);
                }
                return;
            }
            Ok(Commit::Stale) => {
                if let Some(t) = newer(token) {
                    token = t;
                    continue;
                }
                f.forget(job.id, index, token);
                discard(s, job, index, "its claim is no longer this node's");
                // If the job ended elsewhere, stop what is left of it here at once.
                if let Ok(Some(p)) = s.store.progress(&[job.id]).map(|mut v| v.pop()) {
                    if p.state.is_finished() {
                        s.finish_local(job, p.state, p.error);
                    }
                }
                return;
            }
            Err(e) => {
                s.metrics.error("store");
                if s.shutdown.load(Ordering::SeqCst) {
                    tracing::warn!(
                        "job {} partition {index}: not committed before shutdown ({e}); its \
                         lease will expire and another node proves it again",
                        job.id
                    );
                    return;
                }
                if warn.should() {
                    tracing::warn!(
                        "job {} partition {index}: committing failed, retrying: {e}",
                        job.id
                    );
                }
                // A back-off between attempts at a store that is down, not a synchronisation.
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(2));
                if let Some(t) = newer(token) {
                    token = t;
                }
            }
        }
    }
}

/// A result that will not be stored.
fn discard(s: &Shared, job: &Arc<JobRt>, index: u32, why: &str) {
    s.metrics.fleet_commit("stale");
    s.emit(Event::PartitionDiscarded {
        job: job.id,
        partition: index,
    });
    tracing::warn!("job {} partition {index}: result discarded: {why}", job.id);
    if let Some(f) = &s.fleet {
        s.metrics.set_fleet_held(f.held());
        if !f.lock().held.keys().any(|k| k.0 == job.id) {
            drop_idle_job(s, job);
        }
    }
}

/// Removes a job this node no longer holds partitions of from its map (it goes on elsewhere).
fn drop_idle_job(s: &Shared, job: &Arc<JobRt>) {
    let mut jobs = s.jobs.lock().unwrap_or_else(|e| e.into_inner());
    if jobs.get(&job.id).is_some_and(|j| Arc::ptr_eq(j, job)) {
        jobs.remove(&job.id);
    }
}

/// The beat thread: heartbeats (renewing leases) and the progress of watched jobs.
pub(crate) fn beat_loop(s: &Shared) {
    let Some(f) = &s.fleet else { return };
    let mut last_beat: Option<Instant> = None;
    let mut warn = Warn(None);
    loop {
        if s.shutdown.load(Ordering::SeqCst) {
            return;
        }
        if last_beat.is_none_or(|t| t.elapsed() >= f.cfg.heartbeat) {
            last_beat = Some(Instant::now());
            if let Err(e) = heartbeat(s, f) {
                s.metrics.error("store");
                if warn.should() {
                    tracing::warn!(
                        "heartbeat failed (retrying; leases run out after {:?}): {e}",
                        f.cfg.lease
                    );
                }
            }
        }
        refresh_watchers(s, f);
        let g = f.tick.0.lock().unwrap_or_else(|e| e.into_inner());
        if s.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let wait = f.cfg.poll.min(f.cfg.heartbeat);
        drop(
            f.tick
                .1
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner()),
        );
    }
}

/// Renews the leases; a claim that is gone is marked lost, and a job that ended elsewhere is
/// stopped here.
fn heartbeat(s: &Shared, f: &Fleet) -> Result<()> {
    let asked: Vec<Claim> = f
        .lock()
        .held
        .iter()
        .filter(|(_, h)| !h.lost)
        .map(|(&(job, index), h)| Claim {
            job,
            index,
            token: h.token,
        })
        .collect();
    let still = s.store.heartbeat(
        &NodeBeat {
            node: &f.cfg.node_id,
            address: &f.cfg.address,
            serves: &f.serves_text,
            capacity: f.capacity as u32,
        },
        &asked,
        f.cfg.lease,
    )?;
    let still: HashSet<Claim> = still.into_iter().collect();
    let mut lost_jobs = Vec::new();
    {
        let mut st = f.lock();
        for c in asked.iter().filter(|c| !still.contains(c)) {
            // Still held under the token asked about (not committed or claimed anew meanwhile).
            if let Some(h) = st.held.get_mut(&(c.job, c.index)) {
                if h.token == c.token && !h.lost {
                    h.lost = true;
                    tracing::warn!(
                        "job {} partition {}: this node's claim is gone (its lease expired or \
                         the job ended); its result will be discarded",
                        c.job,
                        c.index
                    );
                    lost_jobs.push(c.job);
                }
            }
        }
    }
    lost_jobs.sort_unstable();
    lost_jobs.dedup();
    if lost_jobs.is_empty() {
        return Ok(());
    }
    for p in s.store.progress(&lost_jobs)? {
        if p.state.is_finished() {
            let rt = s
                .jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&p.id)
                .cloned();
            if let Some(rt) = rt {
                tracing::info!(
                    "job {} {} elsewhere; stopping it here",
                    p.id,
                    p.state.as_str()
                );
                s.finish_local(&rt, p.state, p.error);
            }
            f.forget_job(p.id);
        }
    }
    Ok(())
}

/// At start (on the claimer's thread, before it claims): gives back what a previous run under
/// this node id held.
fn start(s: &Shared, f: &Fleet) -> Result<()> {
    let n = s.store.release_node(&f.cfg.node_id)?;
    if n > 0 {
        tracing::info!(
            "gave back {n} partition(s) a previous run of node {} held",
            f.cfg.node_id
        );
    }
    tracing::info!(
        "fleet node {}: capacity {} partitions, lease {:?}, serves {}",
        f.cfg.node_id,
        f.capacity,
        f.cfg.lease,
        f.serves_text
    );
    Ok(())
}

/// After the workers stopped: records the stop and gives back what the node still holds.
pub(crate) fn stop(s: &Shared, f: &Fleet) {
    let claims: Vec<Claim> = f
        .lock()
        .held
        .iter()
        .map(|(&(job, index), h)| Claim {
            job,
            index,
            token: h.token,
        })
        .collect();
    // Status pages show the node as stopped, not as silent.
    if let Err(e) = s.store.node_stopped(&f.cfg.node_id) {
        tracing::warn!("recording this node's stop in the store failed: {e}");
    }
    if claims.is_empty() {
        return;
    }
    match s.store.release(&f.cfg.node_id, &claims) {
        Ok(()) => tracing::info!("gave back {} unfinished partition(s)", claims.len()),
        Err(e) => tracing::warn!(
            "giving back {} partition(s) failed ({e}); their leases expire in {:?}",
            claims.len(),
            f.cfg.lease
        ),
    }
    f.lock().held.clear();
}
