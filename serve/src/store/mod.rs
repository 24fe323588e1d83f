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
//!
//! ## Claims: a fleet of daemons on one store
//! The second half of the trait lets several daemons share one store ([`PgStore`], PostgreSQL)
//! as one queue, the way Curio's task engine and River share theirs:
//! - [`JobStore::claim`] hands a daemon (a *node*) up to `max` pending partitions it can serve
//!   ([`Serves`]), highest job priority first, each under a **lease** that expires unless the
//!   node renews it ([`JobStore::heartbeat`]). Concurrent claimers never take the same
//!   partition (`FOR UPDATE SKIP LOCKED`). A partition whose lease expired (its node died or
//!   lost the database) is claimed again by anyone; one claimed `max_claims` times fails its job.
//! - Every claim carries a **token** (a per-partition counter, a fencing token in the sense of
//!   Kleppmann's "How to do distributed locking", 2016). [`JobStore::commit_partition`] stores
//!   a result only for the current token, in one transaction with the job's count and state, so
//!   a late result from a node that lost its lease is discarded and no partition is proven into
//!   a job twice.
//! - Time for leases is the store's clock (the database's `now()`), never the nodes'.
//!
//! [`SqliteStore`] keeps the same contract for the one node that opens its file, so the same
//! tests run on both stores.

mod postgres;
mod sqlite;

pub use self::postgres::{redact as postgres_redact, PgStore};
pub use sqlite::SqliteStore;

use crate::error::{Result, ServeError};

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
    /// The identity that submitted it (its owner; empty for a job journaled before owners
    /// were recorded).
    pub submitted_by: String,
}

/// A job to store.
#[derive(Clone, Debug, Default)]
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
    /// What kind of proof (the circuit's name: `synthetic`, `sha256`): claims filter on it.
    pub kind: &'a str,
    /// SHA-256 of the parameters file the job was accepted with: claims filter on it.
    pub params_digest: &'a [u8],
    /// log2 of the circuit's domain: claims filter on it.
    pub log_domain: u32,
    /// The identity that submits it (its owner).
    pub submitted_by: &'a str,
    /// The submitter's idempotency key (the cuzk API's `request_id`), if any.
    pub key: Option<&'a str>,
    /// SHA-256 of what the request asks to be proved (with a key: the same key and digest
    /// submitted again find this job, [`JobStore::find_key`]).
    pub request_digest: Option<&'a [u8]>,
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
    /// Partitions of unfinished jobs that no node holds and none has stored: the work waiting
    /// (fleet-wide in a shared store).
    pub pending_partitions: u64,
}

/// What a node can prove; [`JobStore::claim`] takes only partitions that fit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Serves {
    /// Proof kinds (circuit names) it proves.
    pub kinds: Vec<String>,
    /// Largest circuit domain (log2) it takes.
    pub max_log_domain: u32,
    /// Digests of the parameters files it has; `None`: any (it reads the file the job names).
    pub params: Option<Vec<[u8; 32]>>,
    /// Digests it found it cannot use (missing or different files): never claimed by it.
    pub excluded: Vec<[u8; 32]>,
}

/// A claim request.
#[derive(Clone, Debug)]
pub struct ClaimRequest<'a> {
    /// The claiming node's id.
    pub node: &'a str,
    /// What it can prove.
    pub serves: &'a Serves,
    /// Most partitions to claim.
    pub max: usize,
    /// The lease: the claim expires this long after it is made or last renewed.
    pub lease: std::time::Duration,
    /// A partition whose lease expired after this many claims fails its job instead of being
    /// claimed again (a partition that kills every host that takes it).
    pub max_claims: u32,
    /// Unix seconds now (for the end of jobs failed that way).
    pub now: u64,
}

/// A partition claimed by a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Claim {
    /// Its job.
    pub job: JobId,
    /// Its index in the job.
    pub index: u32,
    /// The fencing token of this claim: it grows with every claim of the partition.
    pub token: u64,
}

impl Claim {
    /// Checks that `p` is the result of this claim's partition (every store's first step in
    /// [`JobStore::commit_partition`]).
    pub fn check_result(&self, p: &PartitionRecord) -> Result<()> {
        if (p.job, p.index) != (self.job, self.index) {
            return Err(ServeError::Store(format!(
                "commit of partition {}/{} under the claim of {}/{}",
                p.job, p.index, self.job, self.index
            )));
        }
        Ok(())
    }
}

/// What became of a committed result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Commit {
    /// Stored; `job_done` when it was the job's last partition (the job is `Done` now, in the
    /// same transaction).
    Stored {
        /// Whether the job is finished with it.
        job_done: bool,
    },
    /// Discarded: the claim is no longer the node's (its lease expired and another node
    /// claimed the partition, or the job finished).
    Stale,
}

/// A node's heartbeat: who it is and how loaded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeBeat<'a> {
    /// The node's id.
    pub node: &'a str,
    /// Where clients reach it (for status pages).
    pub address: &'a str,
    /// What it proves, in words (for status pages).
    pub serves: &'a str,
    /// Partitions it may hold at once.
    pub capacity: u32,
}

/// A node as the store last heard of it.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRecord {
    /// Its id.
    pub node: String,
    /// Where clients reach it.
    pub address: String,
    /// What it proves, in words.
    pub serves: String,
    /// Partitions it may hold at once.
    pub capacity: u32,
    /// Partitions it holds now.
    pub held: u32,
    /// Seconds since its last heartbeat (the store's clock).
    pub silent_s: f64,
    /// It stopped cleanly (SIGTERM) after its last heartbeat.
    pub stopped: bool,
}

/// A job's progress, as watchers need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobProgress {
    /// The job.
    pub id: JobId,
    /// Its state.
    pub state: JobState,
    /// Partitions proved.
    pub done: u32,
    /// Partitions in all.
    pub total: u32,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
}

/// The storage of jobs (see the module docs for the contract).
pub trait JobStore: Send + Sync + std::fmt::Debug {
    /// Stores a new job in state `Queued`; durable when it returns.
    fn insert_job(&self, job: &NewJob<'_>) -> Result<JobId>;
    /// The job `id`, if stored.
    fn job(&self, id: JobId) -> Result<Option<JobRecord>>;
    /// Up to `limit` jobs, newest first: every job, or those `submitted_by` submitted.
    fn recent_jobs(&self, limit: usize, submitted_by: Option<&str>) -> Result<Vec<JobRecord>>;
    /// Every job not finished (queued or running), oldest first: what a restart resumes.
    fn unfinished_jobs(&self) -> Result<Vec<JobRecord>>;
    /// Marks a queued job running (no effect on any other state).
    fn mark_running(&self, id: JobId) -> Result<()>;
    /// Stores a proved partition; durable when it returns. Returns `false` (and keeps the first)
    /// when the partition was already stored. A partition index the job does not have is an
    /// error.
    fn put_partition(&self, p: &PartitionRecord) -> Result<bool>;
    /// The stored partitions of a job, in index order (only indices the job has).
    fn partitions(&self, id: JobId) -> Result<Vec<PartitionRecord>>;
    /// Moves an unfinished job to a finished `state` (with `error` for failed or cancelled).
    /// Returns `false`, changing nothing, when the job was already finished or does not exist.
    /// An unfinished `state` is refused here, for every store; the store's own part is
    /// [`JobStore::write_end`].
    fn finish_job(
        &self,
        id: JobId,
        state: JobState,
        error: Option<&str>,
        now: u64,
    ) -> Result<bool> {
        if !state.is_finished() {
            return Err(ServeError::Store(format!(
                "finish_job({id}) with unfinished state {}",
                state.as_str()
            )));
        }
        self.write_end(id, state, error, now)
    }
    /// The store's part of [`JobStore::finish_job`], with `state` a finished one: records the
    /// end of an unfinished job (and voids its claims) in one transaction; `false` when the job
    /// was already finished or does not exist.
    fn write_end(&self, id: JobId, state: JobState, error: Option<&str>, now: u64) -> Result<bool>;
    /// Records that a client fetched a finished job's results (the first time counts).
    fn mark_fetched(&self, id: JobId, now: u64) -> Result<()>;
    /// Deletes finished jobs fetched before `fetched_before`, or finished before
    /// `finished_before` whether fetched or not, with their partitions. Returns how many.
    fn purge(&self, fetched_before: u64, finished_before: u64) -> Result<usize>;
    /// Jobs per state.
    fn counts(&self) -> Result<StoreCounts>;
    /// The progress of each of `ids` that exists.
    fn progress(&self, ids: &[JobId]) -> Result<Vec<JobProgress>>;
    /// The newest job `owner` submitted under the idempotency key `key`. With `digest`, only a
    /// job of that same request (same [`NewJob::request_digest`]) that did not fail and was not
    /// cancelled — a request submitted again after its job failed is a new job; without, any.
    fn find_key(&self, owner: &str, key: &str, digest: Option<&[u8]>) -> Result<Option<JobId>>;

    // --- claims (a fleet of nodes on one store) ---

    /// Claims up to `req.max` pending partitions that `req.serves` fits, highest job priority
    /// first, then oldest job, then partition index; marks their jobs running. The claims come
    /// back ordered by job and index. First returns to
    /// the pool every partition whose lease expired (failing the jobs of those claimed
    /// `max_claims` times). Two concurrent claims never return the same partition.
    fn claim(&self, req: &ClaimRequest<'_>) -> Result<Vec<Claim>>;
    /// Renews the leases of `held` (the claims `beat.node` knows it holds) and records the node
    /// as alive. Returns those it still holds (the others were lost: expired and taken by
    /// another node, or their job finished). A claim of the node that it does not list — one
    /// whose reply was lost with a connection — is not renewed: it expires and goes back.
    fn heartbeat(
        &self,
        beat: &NodeBeat<'_>,
        held: &[Claim],
        lease: std::time::Duration,
    ) -> Result<Vec<Claim>>;
    /// Stores the result of a claimed partition, once, in one transaction with its job's count
    /// and state (the last partition finishes the job as `Done`). A claim that is not the
    /// node's current one gives [`Commit::Stale`] and changes nothing. Repeating a commit that
    /// was stored (a reply lost with a connection) gives `Stored` again.
    fn commit_partition(
        &self,
        node: &str,
        claim: &Claim,
        p: &PartitionRecord,
        now: u64,
    ) -> Result<Commit>;
    /// Gives claimed partitions back (pending again, without counting as a claim); claims no
    /// longer the node's are ignored.
    fn release(&self, node: &str, claims: &[Claim]) -> Result<()>;
    /// Gives back every partition `node` holds (a node restarting under the same id, or
    /// stopping); returns how many.
    fn release_node(&self, node: &str) -> Result<usize>;
    /// Records that `node` stopped cleanly (its next heartbeat clears it).
    fn node_stopped(&self, node: &str) -> Result<()>;
    /// The nodes that sent a heartbeat, most recent first.
    fn nodes(&self) -> Result<Vec<NodeRecord>>;
}

#[cfg(test)]
mod tests;

pub mod testing;
