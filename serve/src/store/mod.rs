//! The job store: where accepted jobs, their finished partitions and their outcome are journaled.
//!
//! ## Design
//! One trait, [`JobStore`], between the daemon and its storage, so that the embedded store of a
//! single host ([`SqliteStore`], the default) and a shared database of a fleet can stand in for
//! each other. The contract every implementation keeps:
//! - **Durable before acknowledged.** [`JobStore::insert_job`] and
//!   [`JobStore::put_partition`] return only once the record would survive a crash (SQLite:
//!   write-ahead log with `synchronous=FULL`). The daemon answers Submit after `insert_job`.
//! - **Partition granularity.** A job's finished partitions are stored one by one, so a job
//!   interrupted by a crash resumes with the partitions it lacks, not from scratch.
//! - **Exactly once.** A partition's result is written at most once ([`JobStore::put_partition`]
//!   keeps the first and reports whether it was new); a job leaves an unfinished state once
//!   ([`JobStore::finish_job`] changes only an unfinished job).
//! - **Kept until fetched or expired.** Finished jobs keep their proofs until a client has
//!   fetched them ([`JobStore::mark_fetched`]) and a grace period has passed, or until they
//!   expire unfetched ([`JobStore::purge`]).
//!
//! The store keeps the job's request as opaque bytes (the daemon's encoded `SubmitRequest`), so
//! the schema does not change when the request gains fields. Calls are blocking; the daemon makes
//! them from worker threads or `spawn_blocking`.

mod sqlite;

pub use sqlite::SqliteStore;

use crate::error::Result;

/// A job's identifier: positive, never reused by one store.
pub type JobId = u64;

/// Where a job is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Accepted, no partition started yet.
    Queued,
    /// At least one partition started (or the job was resumed after a restart).
    Running,
    /// Every partition proved; the proofs are stored.
    Done,
    /// A partition failed for good; the error is stored.
    Failed,
    /// Cancelled by a client.
    Cancelled,
}

impl JobState {
    /// Whether the job will not change any more.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            JobState::Done | JobState::Failed | JobState::Cancelled
        )
    }

    /// The name stored and shown (`queued`, `running`, `done`, `failed`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }

    /// The state called `s` (see [`JobState::as_str`]).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "queued" => JobState::Queued,
            "running" => JobState::Running,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            "cancelled" => JobState::Cancelled,
            _ => return None,
        })
    }
}

/// A job as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    /// Its id.
    pub id: JobId,
    /// Its state.
    pub state: JobState,
    /// Higher runs first.
    pub priority: i32,
    /// Number of partitions.
    pub partitions: u32,
    /// The request, as the daemon encoded it.
    pub request: Vec<u8>,
    /// A short description of what is proved (for listings).
    pub label: String,
    /// Unix seconds of acceptance.
    pub submitted_at: u64,
    /// Unix seconds it finished, if it has.
    pub finished_at: Option<u64>,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
    /// Unix seconds a client first fetched its results, if one has.
    pub fetched_at: Option<u64>,
}

/// A job to store.
#[derive(Clone, Debug)]
pub struct NewJob<'a> {
    /// Higher runs first.
    pub priority: i32,
    /// Number of partitions.
    pub partitions: u32,
    /// The request, as the daemon encodes it.
    pub request: &'a [u8],
    /// A short description of what is proved.
    pub label: &'a str,
    /// Unix seconds now.
    pub now: u64,
}

/// One proved partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionRecord {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: u32,
    /// The proof (192 bytes).
    pub proof: Vec<u8>,
    /// The public inputs, 32 bytes each (canonical, little-endian).
    pub inputs: Vec<u8>,
    /// Timings, as the daemon encoded them.
    pub timings: Vec<u8>,
}

/// Counts for status pages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreCounts {
    /// Jobs in each state: queued, running, done, failed, cancelled.
    pub by_state: [u64; 5],
}

/// The storage of jobs (see the module docs for the contract).
pub trait JobStore: Send + Sync + std::fmt::Debug {
    /// Stores a new job in state `Queued`; durable when it returns.
    fn insert_job(&self, job: &NewJob<'_>) -> Result<JobId>;
    /// The job `id`, if stored.
    fn job(&self, id: JobId) -> Result<Option<JobRecord>>;
    /// Up to `limit` jobs, newest first.
    fn recent_jobs(&self, limit: usize) -> Result<Vec<JobRecord>>;
    /// Every job not finished (queued or running), oldest first: what a restart resumes.
    fn unfinished_jobs(&self) -> Result<Vec<JobRecord>>;
    /// Marks a queued job running (no effect on any other state).
    fn mark_running(&self, id: JobId) -> Result<()>;
    /// Stores a proved partition; durable when it returns. Returns `false` (and keeps the first)
    /// when the partition was already stored.
    fn put_partition(&self, p: &PartitionRecord) -> Result<bool>;
    /// The stored partitions of a job, in index order.
    fn partitions(&self, id: JobId) -> Result<Vec<PartitionRecord>>;
    /// Moves an unfinished job to a finished `state` (with `error` for failed or cancelled).
    /// Returns `false`, changing nothing, when the job was already finished or does not exist.
    fn finish_job(&self, id: JobId, state: JobState, error: Option<&str>, now: u64)
        -> Result<bool>;
    /// Records that a client fetched a finished job's results (the first time counts).
    fn mark_fetched(&self, id: JobId, now: u64) -> Result<()>;
    /// Deletes finished jobs fetched before `fetched_before`, or finished before
    /// `finished_before` whether fetched or not, with their partitions. Returns how many.
    fn purge(&self, fetched_before: u64, finished_before: u64) -> Result<usize>;
    /// Jobs per state.
    fn counts(&self) -> Result<StoreCounts>;
}

#[cfg(test)]
mod tests;
