//! The engine's job API, what a front end calls: submit, recover, follow, cancel, the final
//! result, and the parameters a client preloads or evicts. Every call that names a job takes
//! the caller's [`Identity`]: a job another identity submitted is, to the caller, no job at all
//! (unless the caller is an admin, [`crate::identity::Access`]).

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};

use prost::Message;

use super::{fleet, job_partition_bytes, unix_now, Engine, JobSnapshot, JobWatch};
use crate::{
    error::{Result, ServeError},
    identity::Identity,
    job::JobSpec,
    params::{ParamsDigest, ParamsEntry},
    proto,
    store::{JobId, JobRecord, JobState, NewJob, PartitionRecord},
};

/// What [`Engine::submit_keyed`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Submitted {
    /// The job.
    pub id: JobId,
    /// It was there already: the same request under the same idempotency key (queued,
    /// running or done; nothing new was journaled).
    pub existing: bool,
}

/// The idempotency key of a request (the cuzk API's `request_id`) and the digest of what it
/// asks, when it has one.
fn key_of(req: &proto::SubmitRequest) -> Option<(&str, [u8; 32])> {
    match &req.kind {
        Some(proto::submit_request::Kind::Filecoin(f)) if !f.request_id.is_empty() => {
            Some((f.request_id.as_str(), crate::cuzk::content_digest(f)))
        }
        _ => None,
    }
}

/// Keys being submitted now, so that the same key submitted twice at once is one job: the
/// second waits for the first to be journaled, then finds it.
#[derive(Default)]
pub(crate) struct KeysInFlight {
    keys: Mutex<HashSet<(String, String)>>,
    done: Condvar,
}

/// A key being submitted; released when dropped.
struct KeyHeld<'a> {
    set: &'a KeysInFlight,
    key: (String, String),
}

impl KeysInFlight {
    fn hold(&self, owner: &str, key: &str) -> KeyHeld<'_> {
        let key = (owner.to_string(), key.to_string());
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        while keys.contains(&key) {
            keys = self.done.wait(keys).unwrap_or_else(|e| e.into_inner());
        }
        keys.insert(key.clone());
        KeyHeld { set: self, key }
    }
}

impl Drop for KeyHeld<'_> {
    fn drop(&mut self) {
        let mut keys = self.set.keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.remove(&self.key);
        self.set.done.notify_all();
    }
}

impl Engine {
    /// Checks a request, resolves its parameters (their shape checked before the file is
    /// hashed, the first time), journals it as `who`'s job and queues its partitions. Returns
    /// once the job is durable.
    pub fn submit(&self, req: &proto::SubmitRequest, who: &Identity) -> Result<JobId> {
        Ok(self.submit_keyed(req, who)?.id)
    }

    /// [`Engine::submit`], keeping a request's idempotency key (the cuzk API's `request_id`):
    /// the same request submitted again by the same identity under the same key is the job
    /// the first made, unless that one failed or was cancelled (then a new job is made), also
    /// after a restart (the journal keeps the key). The key is looked up before the request
    /// is parsed, so a repeat costs a journal query.
    pub fn submit_keyed(&self, req: &proto::SubmitRequest, who: &Identity) -> Result<Submitted> {
        let key = key_of(req);
        let _held = key.map(|(k, _)| self.shared.keys.hold(who.as_str(), k));
        if let Some((k, digest)) = &key {
            if let Some(id) = self.shared.store.find_key(who.as_str(), k, Some(digest))? {
                tracing::info!("job {id}: request {k:?} from {who} submitted again: the same job");
                return Ok(Submitted { id, existing: true });
            }
        }
        let spec = JobSpec::from_request(req, &self.shared.cfg.limits, self.shared.params.dirs())?;
        let limits = &self.shared.cfg.limits;
        let entry = self.shared.params.resolve(
            &spec.params_path,
            spec.params_digest.as_ref(),
            &|shape| {
                spec.check_params(shape)?;
                let log_domain = spec.log_domain(shape);
                if log_domain > limits.max_log_domain {
                    return Err(ServeError::invalid(format!(
                        "a circuit of domain 2^{log_domain} is above this daemon's limit of 2^{}",
                        limits.max_log_domain
                    )));
                }
                Ok(())
            },
        )?;
        let log_domain = spec.log_domain(&entry.shape);
        self.shared
            .check_device_fit(&entry, job_partition_bytes(&entry))?;
        let active = match &self.shared.fleet {
            // A fleet's limit is the store's: jobs queued or running anywhere.
            Some(_) => {
                let c = self.shared.store.counts()?;
                (c.by_state[0] + c.by_state[1]) as usize
            }
            None => self
                .shared
                .jobs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len(),
        };
        if active >= limits.max_active_jobs {
            return Err(ServeError::Busy(format!(
                "{active} jobs are queued or running, this daemon's limit"
            )));
        }
        // Journal the request with the digest it was accepted with, so that a restart proves
        // with the same parameters or fails the job.
        let mut stored = req.clone();
        stored.params_digest = entry.digest.to_vec();
        stored.params_path = entry.path.display().to_string();
        let bytes = stored.encode_to_vec();
        let label = spec.label();
        let id = self.shared.store.insert_job(&NewJob {
            priority: spec.priority,
            partitions: spec.partitions,
            request: &bytes,
            label: &label,
            now: unix_now(),
            kind: spec.kind.name(),
            params_digest: &entry.digest,
            log_domain,
            submitted_by: who.as_str(),
            key: key.as_ref().map(|(k, _)| *k),
            request_digest: key.as_ref().map(|(_, d)| &d[..]),
        })?;
        tracing::info!(
            "job {id} accepted from {who}: {label}, priority {}",
            spec.priority
        );
        match &self.shared.fleet {
            // The fleet's claimers (this node's among them) take it from the store.
            Some(f) => f.poke(),
            None => self.enqueue(id, spec, entry, &[], who.as_str()),
        }
        Ok(Submitted {
            id,
            existing: false,
        })
    }

    /// The job `job` names for `who`: its newest job under that idempotency key (the cuzk
    /// API's `request_id`), else the job of that number. A job another identity submitted is
    /// not found (unless `who` is an admin).
    pub fn find_job(&self, who: &Identity, job: &str) -> Result<JobId> {
        if let Some(id) = self.shared.store.find_key(who.as_str(), job, None)? {
            return Ok(id);
        }
        let id: JobId = job.trim().parse().map_err(|_| {
            ServeError::invalid(format!(
                "no job {job:?}: neither a request_id of yours nor a job number"
            ))
        })?;
        self.check_access(id, who)?;
        Ok(id)
    }

    /// Queues every unfinished job of the store again (at start): partitions already stored are
    /// kept, the others run. Returns how many jobs were resumed.
    pub fn recover(&self) -> Result<usize> {
        if self.shared.fleet.is_some() {
            // In a fleet, unfinished jobs are everyone's: nothing to queue here (the claimer
            // gave back what a previous run of this node held before its first claim).
            return Ok(0);
        }
        let jobs = self.shared.store.unfinished_jobs()?;
        let n = jobs.len();
        for rec in jobs {
            match self.resumable(&rec) {
                Ok((spec, entry, done)) => {
                    tracing::info!(
                        "job {} resumed: {} of {} partitions already proved",
                        rec.id,
                        done.len(),
                        spec.partitions
                    );
                    self.enqueue(rec.id, spec, entry, &done, &rec.submitted_by);
                }
                Err(e) => {
                    tracing::error!("job {} cannot be resumed: {e}", rec.id);
                    self.shared.store.finish_job(
                        rec.id,
                        JobState::Failed,
                        Some(&format!("cannot be resumed after a restart: {e}")),
                        unix_now(),
                    )?;
                }
            }
        }
        Ok(n)
    }

    /// A journaled job rebuilt: its spec, parameters and the partitions already proved (only
    /// indices the job has, each once: a damaged journal's other rows are not its partitions).
    fn resumable(&self, rec: &JobRecord) -> Result<(JobSpec, Arc<ParamsEntry>, Vec<u32>)> {
        let req = proto::SubmitRequest::decode(&rec.request[..])
            .map_err(|e| ServeError::Store(format!("job {}: request: {e}", rec.id)))?;
        let spec = JobSpec::from_request(&req, &self.shared.cfg.limits, self.shared.params.dirs())?;
        if spec.partitions != rec.partitions {
            return Err(ServeError::Store(format!(
                "job {}: the journal says {} partitions, its request {}",
                rec.id, rec.partitions, spec.partitions
            )));
        }
        let entry = self.shared.params.resolve(
            &spec.params_path,
            spec.params_digest.as_ref(),
            &|shape| spec.check_params(shape),
        )?;
        self.shared
            .check_device_fit(&entry, job_partition_bytes(&entry))?;
        let done = proved_indices(&self.shared.store.partitions(rec.id)?, spec.partitions);
        Ok((spec, entry, done))
    }

    fn enqueue(
        &self,
        id: JobId,
        spec: JobSpec,
        entry: Arc<ParamsEntry>,
        done: &[u32],
        owner: &str,
    ) {
        let state = if done.is_empty() {
            JobState::Queued
        } else {
            JobState::Running
        };
        let job = self
            .shared
            .job_rt(id, spec, entry, state, done.len() as u32, owner);
        self.shared
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, job.clone());
        if done.len() as u32 >= job.spec.partitions {
            // Every partition was stored before the crash; only the job's end was not. They
            // are checked as a job's proofs always are before it is done.
            match super::workers::check_proofs(&self.shared, &job, None) {
                Ok(()) => self.shared.finish(&job, JobState::Done, None),
                Err(e) => self.shared.finish(&job, JobState::Failed, Some(e)),
            }
            return;
        }
        {
            let mut s = self.shared.lock_sched();
            for p in 0..job.spec.partitions {
                if !done.contains(&p) {
                    s.push_waiting(job.clone(), p, 0, 0);
                }
            }
        }
        self.shared.syn_cv.notify_all();
        self.shared.update_gauges();
    }

    /// Who submitted job `id` (from memory while it runs, else from the store).
    fn owner_of(&self, id: JobId) -> Result<String> {
        if let Some(j) = self.shared.live_job(id) {
            return Ok(j.owner.clone());
        }
        Ok(self
            .shared
            .store
            .job(id)?
            .ok_or(ServeError::NoSuchJob(id))?
            .submitted_by)
    }

    /// Fails with [`ServeError::NoSuchJob`], as for a job that never was, unless `who` may use
    /// job `id`.
    pub fn check_access(&self, id: JobId, who: &Identity) -> Result<()> {
        if self.shared.cfg.access.may_use(who, &self.owner_of(id)?) {
            Ok(())
        } else {
            Err(ServeError::NoSuchJob(id))
        }
    }

    /// Follows job `id`.
    pub fn watch(&self, id: JobId, who: &Identity) -> Result<JobWatch> {
        self.check_access(id, who)?;
        if let Some(f) = &self.shared.fleet {
            return fleet::watch(&self.shared, f, id);
        }
        if let Some(j) = self.shared.live_job(id) {
            return Ok(JobWatch::Live(j.watch.subscribe()));
        }
        match self.shared.store.job(id)? {
            // Journaled but not (yet) in memory (between insert and enqueue of a submit), or
            // finished: the final event reads the store.
            Some(r) => Ok(JobWatch::Finished(r)),
            None => Err(ServeError::NoSuchJob(id)),
        }
    }

    /// The current progress of job `id`.
    pub fn snapshot(&self, id: JobId, who: &Identity) -> Result<JobSnapshot> {
        self.check_access(id, who)?;
        self.progress_of(id)
    }

    /// The progress of job `id` (from memory while it runs, else from the store).
    pub(crate) fn progress_of(&self, id: JobId) -> Result<JobSnapshot> {
        if self.shared.fleet.is_some() {
            return fleet::snapshot(&self.shared, id);
        }
        if let Some(j) = self.shared.live_job(id) {
            return Ok(j.snapshot());
        }
        let r = self
            .shared
            .store
            .job(id)?
            .ok_or(ServeError::NoSuchJob(id))?;
        let done = self.shared.store.partitions(id)?.len() as u32;
        let (state, error) = self.shared.end_of(&r);
        Ok(JobSnapshot {
            id,
            state,
            done,
            total: r.partitions,
            error,
        })
    }

    /// Cancels job `id`; returns its state afterwards (a finished job stays as it was).
    pub fn cancel(&self, id: JobId, who: &Identity) -> Result<JobState> {
        self.check_access(id, who)?;
        if let Some(f) = &self.shared.fleet {
            return fleet::cancel(&self.shared, f, id);
        }
        match self.shared.live_job(id) {
            Some(j) => {
                self.shared
                    .finish(&j, JobState::Cancelled, Some(format!("cancelled by {who}")));
                Ok(self.progress_of(id)?.state)
            }
            None => Ok(self.progress_of(id)?.state),
        }
    }

    /// The final event of finished job `id`: its proofs (or its error), the outputs its
    /// submitter named and the parameters file it read. Marks the results fetched when
    /// `mark_fetched` (else the client calls [`Engine::fetched`] once it wrote them).
    pub fn final_event(
        &self,
        id: JobId,
        who: &Identity,
        mark_fetched: bool,
    ) -> Result<proto::JobEvent> {
        self.check_access(id, who)?;
        let store = &self.shared.store;
        let rec = store.job(id)?.ok_or(ServeError::NoSuchJob(id))?;
        let (state, error) = self.shared.end_of(&rec);
        let req = proto::SubmitRequest::decode(&rec.request[..]).ok();
        let parts = store.partitions(id)?;
        let mut ev = proto::JobEvent {
            job_id: id,
            state: super::state_to_proto(state) as i32,
            partitions_done: parts.len() as u32,
            partitions_total: rec.partitions,
            results: Vec::new(),
            error: error.unwrap_or_default(),
            outputs: req.as_ref().and_then(|r| r.outputs.clone()),
            params_path: req.map(|r| r.params_path).unwrap_or_default(),
        };
        if state == JobState::Done {
            if proved_indices(&parts, rec.partitions).len() != rec.partitions as usize {
                return Err(ServeError::Store(format!(
                    "job {id} is done but the journal holds results for {} of its {} \
                     partitions",
                    parts.len(),
                    rec.partitions
                )));
            }
            ev.results = parts.into_iter().map(partition_result).collect();
        }
        if state.is_finished() && mark_fetched {
            if let Err(e) = store.mark_fetched(id, unix_now()) {
                self.shared.metrics.error("store");
                tracing::warn!("job {id}: recording its fetch failed: {e}");
            }
        }
        Ok(ev)
    }

    /// Records that `who` has the results of finished job `id` (they are purged
    /// `fetched_ttl_s` later).
    pub fn fetched(&self, id: JobId, who: &Identity) -> Result<()> {
        self.check_access(id, who)?;
        self.shared.store.mark_fetched(id, unix_now())
    }

    /// Checks that `who` may manage the daemon's parameters (`None`: the operator's own
    /// configuration).
    fn check_manage(&self, who: Option<&Identity>) -> Result<()> {
        match who {
            Some(w) if !self.shared.cfg.access.may_manage(w) => Err(ServeError::Denied(format!(
                "{w} may not preload or evict parameters (only this daemon's admins may)"
            ))),
            _ => Ok(()),
        }
    }

    /// Reads a parameters file and makes it resident on every device (not on fallbacks), for
    /// `who` (`None`: the configuration's preload).
    pub fn preload(
        &self,
        path: &std::path::Path,
        curve_only: bool,
        who: Option<&Identity>,
    ) -> Result<Arc<ParamsEntry>> {
        self.check_manage(who)?;
        let entry = self.shared.params.resolve(path, None, &|_| Ok(()))?;
        for (i, d) in self.shared.devices.iter().enumerate() {
            if d.spec.fallback {
                continue;
            }
            // The points count against the device's budget like a partition's would.
            if !self.shared.make_resident(&entry, curve_only, i)? {
                tracing::warn!(
                    "parameters {} not preloaded on {}: their points do not fit what is left of \
                     its memory budget",
                    entry.path.display(),
                    d.spec.label
                );
            }
        }
        self.shared.update_gauges();
        Ok(entry)
    }

    /// Evicts parameters by digest, for `who`; returns whether they were known.
    pub fn evict(&self, digest: &ParamsDigest, who: Option<&Identity>) -> Result<bool> {
        self.check_manage(who)?;
        let r = self.shared.params.evict(digest);
        self.shared.update_gauges();
        Ok(r)
    }

    /// The parameters cache.
    pub fn params(&self) -> &crate::params::ParamsCache {
        &self.shared.params
    }

    /// Writes again the ends of jobs whose journaling failed (a full disk, a store that was
    /// down); returns how many are still not written. The daemon calls it on a timer.
    pub fn retry_journal(&self) -> usize {
        self.shared.retry_unjournaled()
    }
}

/// The distinct indices of `parts` that a job of `total` partitions has, in order; a row of
/// another index (a damaged journal) is left out with a warning.
fn proved_indices(parts: &[PartitionRecord], total: u32) -> Vec<u32> {
    let mut v: Vec<u32> = parts.iter().map(|p| p.index).collect();
    let all = v.len();
    v.retain(|&i| i < total);
    v.sort_unstable();
    v.dedup();
    if v.len() != all {
        if let Some(p) = parts.first() {
            tracing::warn!(
                "job {}: the journal holds {} result rows, {} of them for distinct partitions \
                 of the job's {total}; the others are ignored",
                p.job,
                all,
                v.len()
            );
        }
    }
    v
}

/// A stored partition as the client receives it.
fn partition_result(p: PartitionRecord) -> proto::PartitionResult {
    proto::PartitionResult {
        proof: p.proof,
        public_inputs: p.inputs.chunks(32).map(<[u8]>::to_vec).collect(),
        timings: proto::PartitionTimings::decode(&p.timings[..]).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_jobs_own_indices_count_as_proved() {
        let part = |index| PartitionRecord {
            job: 1,
            index,
            proof: vec![],
            inputs: vec![],
            timings: vec![],
        };
        let parts: Vec<_> = [0, 1, 99, 2, 3, 4, 4].into_iter().map(part).collect();
        assert_eq!(proved_indices(&parts, 6), vec![0, 1, 2, 3, 4]);
    }
}
