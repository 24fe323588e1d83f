//! A fleet's jobs followed from the store, on any node: watchers fed with the store's progress
//! every poll, a job's progress, and a cancel for the whole fleet.

use std::collections::HashSet;

use super::{Fleet, Shared};
use crate::{
    engine::{unix_now, Event, JobSnapshot, JobWatch},
    error::{Result, ServeError},
    store::{JobId, JobState},
};

/// Pushes the store's progress of every watched job to its watchers; drops finished ones.
pub(super) fn refresh_watchers(s: &Shared, f: &Fleet) {
    let ids: Vec<JobId> = {
        let mut w = f.watchers.lock().unwrap_or_else(|e| e.into_inner());
        w.retain(|_, tx| tx.receiver_count() > 0);
        w.keys().copied().collect()
    };
    if ids.is_empty() {
        return;
    }
    let Ok(progress) = s.store.progress(&ids) else {
        return; // the store is away: watchers keep the last state, and the next tick tries again
    };
    let mut w = f.watchers.lock().unwrap_or_else(|e| e.into_inner());
    let mut seen = HashSet::new();
    for p in progress {
        seen.insert(p.id);
        let finished = p.state.is_finished();
        if let Some(tx) = w.get(&p.id) {
            let snap = JobSnapshot {
                id: p.id,
                state: p.state,
                done: p.done,
                total: p.total,
                error: p.error,
            };
            tx.send_if_modified(|cur| {
                let changed = *cur != snap;
                *cur = snap;
                changed
            });
        }
        if finished {
            w.remove(&p.id);
        }
    }
    // Purged jobs: dropping the sender ends their watchers (they then read the store). Only
    // jobs asked for: a watcher added meanwhile stays.
    w.retain(|id, _| seen.contains(id) || !ids.contains(id));
}

/// Follows job `id` through the store.
pub(crate) fn watch(s: &Shared, f: &Fleet, id: JobId) -> Result<JobWatch> {
    let rec = s.store.job(id)?.ok_or(ServeError::NoSuchJob(id))?;
    if rec.state.is_finished() {
        return Ok(JobWatch::Finished(rec));
    }
    let snap = snapshot(s, id)?;
    let mut w = f.watchers.lock().unwrap_or_else(|e| e.into_inner());
    let tx = w
        .entry(id)
        .or_insert_with(|| tokio::sync::watch::Sender::new(snap));
    Ok(JobWatch::Live(tx.subscribe()))
}

/// Job `id`'s progress, from the store.
pub(crate) fn snapshot(s: &Shared, id: JobId) -> Result<JobSnapshot> {
    let p = s
        .store
        .progress(&[id])?
        .pop()
        .ok_or(ServeError::NoSuchJob(id))?;
    Ok(JobSnapshot {
        id,
        state: p.state,
        done: p.done,
        total: p.total,
        error: p.error,
    })
}

/// Cancels job `id` in the store (for the whole fleet) and here.
pub(crate) fn cancel(s: &Shared, f: &Fleet, id: JobId) -> Result<JobState> {
    let why = "cancelled by a client";
    if s.store
        .finish_job(id, JobState::Cancelled, Some(why), unix_now())?
    {
        tracing::warn!("job {id} cancelled: {why}");
        s.metrics.job_finished("cancelled");
        s.emit(Event::JobFinished {
            job: id,
            state: JobState::Cancelled,
        });
    }
    let rt = s
        .jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&id)
        .cloned();
    if let Some(rt) = rt {
        s.finish_local(&rt, JobState::Cancelled, Some(why.into()));
    }
    f.forget_job(id);
    Ok(s.store.job(id)?.ok_or(ServeError::NoSuchJob(id))?.state)
}
