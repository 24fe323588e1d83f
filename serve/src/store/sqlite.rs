//! [`SqliteStore`]: the embedded job store, one SQLite file in the daemon's state directory.
//!
//! Write-ahead logging with `synchronous=FULL`: a commit is fsynced to the log before it returns,
//! so an acknowledged job survives a crash of the process or the machine. Migrations are numbered
//! by `PRAGMA user_version` and applied at open.

use std::{path::Path, sync::Mutex};

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{
    Claim, ClaimRequest, Commit, JobId, JobProgress, JobRecord, JobState, JobStore, NewJob,
    NodeBeat, NodeRecord, PartitionRecord, Serves, StoreCounts,
};
use crate::error::{Result, ServeError};

/// Schema migrations, applied in order; entry i brings `user_version` from i to i + 1.
const MIGRATIONS: &[&str] = &[
    // 1: jobs and their proved partitions.
    "CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        state TEXT NOT NULL,
        priority INTEGER NOT NULL,
        partitions INTEGER NOT NULL,
        request BLOB NOT NULL,
        label TEXT NOT NULL,
        submitted_at INTEGER NOT NULL,
        finished_at INTEGER,
        error TEXT,
        fetched_at INTEGER
    );
    CREATE INDEX jobs_state ON jobs(state);
    CREATE TABLE partitions (
        job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        proof BLOB NOT NULL,
        inputs BLOB NOT NULL,
        timings BLOB NOT NULL,
        PRIMARY KEY (job, idx)
    );",
    // 2: what claims filter on, the claims of nodes (one node: the daemon itself), nodes.
    "ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT '';
    ALTER TABLE jobs ADD COLUMN params_digest BLOB NOT NULL DEFAULT x'';
    ALTER TABLE jobs ADD COLUMN log_domain INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE claims (
        job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
        idx INTEGER NOT NULL,
        node TEXT,
        token INTEGER NOT NULL,
        claims INTEGER NOT NULL,
        lease_until_ms INTEGER,
        done_by TEXT,
        PRIMARY KEY (job, idx)
    );
    CREATE INDEX claims_node ON claims(node);
    CREATE TABLE nodes (
        id TEXT PRIMARY KEY,
        address TEXT NOT NULL,
        serves TEXT NOT NULL,
        capacity INTEGER NOT NULL,
        heartbeat_ms INTEGER NOT NULL
    );",
    // 3: who submitted each job (its owner), and nodes that stopped cleanly.
    "ALTER TABLE jobs ADD COLUMN submitted_by TEXT NOT NULL DEFAULT '';
    ALTER TABLE nodes ADD COLUMN stopped INTEGER NOT NULL DEFAULT 0;",
    // 4: idempotency keys (the cuzk API's request_id) and the digest of what was asked.
    "ALTER TABLE jobs ADD COLUMN request_key TEXT;
    ALTER TABLE jobs ADD COLUMN request_digest BLOB;
    CREATE INDEX jobs_request_key ON jobs(submitted_by, request_key)
        WHERE request_key IS NOT NULL;",
];

/// Milliseconds since the Unix epoch (the lease clock of the one host that opens the file).
fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Whether a job with these columns fits what a node serves.
fn fits(serves: &Serves, kind: &str, digest: &[u8], log_domain: u32) -> bool {
    serves.kinds.iter().any(|k| k == kind)
        && log_domain <= serves.max_log_domain
        && serves
            .params
            .as_ref()
            .is_none_or(|ps| ps.iter().any(|p| p[..] == *digest))
        && !serves.excluded.iter().any(|p| p[..] == *digest)
}

/// The refusal of a result whose index its job does not have.
fn index_error(p: &PartitionRecord, total: Option<u32>) -> ServeError {
    ServeError::Store(match total {
        Some(n) => format!(
            "partition {} of job {}, which has {n} partitions: not stored",
            p.index, p.job
        ),
        None => format!(
            "partition {} of job {}, which is not stored",
            p.index, p.job
        ),
    })
}

/// The embedded job store (see the module docs).
#[derive(Debug)]
pub struct SqliteStore {
    conn: Mutex<Connection>,
}

fn record(row: &Row<'_>) -> rusqlite::Result<JobRecord> {
    let state: String = row.get(1)?;
    Ok(JobRecord {
        id: row.get::<_, i64>(0)? as u64,
        state: JobState::parse(&state).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                1,
                rusqlite::types::Type::Text,
                format!("unknown job state {state:?}").into(),
            )
        })?,
        priority: row.get(2)?,
        partitions: row.get(3)?,
        request: row.get(4)?,
        label: row.get(5)?,
        submitted_at: row.get::<_, i64>(6)? as u64,
        finished_at: row.get::<_, Option<i64>>(7)?.map(|v| v as u64),
        error: row.get(8)?,
        fetched_at: row.get::<_, Option<i64>>(9)?.map(|v| v as u64),
        submitted_by: row.get(10)?,
    })
}

const COLUMNS: &str =
    "id, state, priority, partitions, request, label, submitted_at, finished_at, \
                       error, fetched_at, submitted_by";

impl SqliteStore {
    /// Opens (creating if needed) the store at `path` and applies pending migrations.
    pub fn open(path: &Path) -> Result<Self> {
        let conn = Connection::open(path)
            .map_err(|e| ServeError::Store(format!("opening {}: {e}", path.display())))?;
        Self::init(conn)
    }

    /// A store in memory (tests).
    pub fn in_memory() -> Result<Self> {
        Self::init(Connection::open_in_memory()?)
    }

    fn init(conn: Connection) -> Result<Self> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        // WAL: readers do not block the writer; FULL: every commit is fsynced.
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if mode != "wal" && mode != "memory" {
            return Err(ServeError::Store(format!(
                "the journal needs write-ahead logging; SQLite answered journal_mode={mode}"
            )));
        }
        conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
        let version: usize = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > MIGRATIONS.len() {
            return Err(ServeError::Store(format!(
                "the journal has schema version {version}, newer than this daemon's {} (a newer \
                 bellows wrote it)",
                MIGRATIONS.len()
            )));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version) {
            let tx = conn.unchecked_transaction()?;
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", i + 1)?;
            tx.commit()?;
        }
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl JobStore for SqliteStore {
    fn insert_job(&self, job: &NewJob<'_>) -> Result<JobId> {
        let c = self.conn();
        c.execute(
            "INSERT INTO jobs (state, priority, partitions, request, label, submitted_at, kind,
                               params_digest, log_domain, submitted_by, request_key,
                               request_digest)
             VALUES ('queued', ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                job.priority,
                job.partitions,
                job.request,
                job.label,
                job.now as i64,
                job.kind,
                job.params_digest,
                job.log_domain,
                job.submitted_by,
                job.key,
                job.request_digest
            ],
        )?;
        Ok(c.last_insert_rowid() as u64)
    }

    fn find_key(&self, owner: &str, key: &str, digest: Option<&[u8]>) -> Result<Option<JobId>> {
        Ok(self
            .conn()
            .query_row(
                "SELECT id FROM jobs WHERE submitted_by = ?1 AND request_key = ?2
                   AND (?3 IS NULL OR (request_digest = ?3
                                       AND state NOT IN ('failed', 'cancelled')))
                 ORDER BY id DESC LIMIT 1",
                params![owner, key, digest],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .map(|id| id as u64))
    }

    fn job(&self, id: JobId) -> Result<Option<JobRecord>> {
        Ok(self
            .conn()
            .query_row(
                &format!("SELECT {COLUMNS} FROM jobs WHERE id = ?1"),
                [id as i64],
                record,
            )
            .optional()?)
    }

    fn recent_jobs(&self, limit: usize, submitted_by: Option<&str>) -> Result<Vec<JobRecord>> {
        let c = self.conn();
        let mut st = c.prepare(&format!(
            "SELECT {COLUMNS} FROM jobs WHERE ?2 IS NULL OR submitted_by = ?2
             ORDER BY id DESC LIMIT ?1"
        ))?;
        let rows = st.query_map(params![limit as i64, submitted_by], record)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn unfinished_jobs(&self) -> Result<Vec<JobRecord>> {
        let c = self.conn();
        let mut st = c.prepare(&format!(
            "SELECT {COLUMNS} FROM jobs WHERE state IN ('queued', 'running') ORDER BY id"
        ))?;
        let rows = st.query_map([], record)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn mark_running(&self, id: JobId) -> Result<()> {
        self.conn().execute(
            "UPDATE jobs SET state = 'running' WHERE id = ?1 AND state = 'queued'",
            [id as i64],
        )?;
        Ok(())
    }

    fn put_partition(&self, p: &PartitionRecord) -> Result<bool> {
        let c = self.conn();
        let total: Option<u32> = c
            .query_row(
                "SELECT partitions FROM jobs WHERE id = ?1",
                [p.job as i64],
                |r| r.get(0),
            )
            .optional()?;
        match total {
            Some(n) if p.index < n => {}
            _ => return Err(index_error(p, total)),
        }
        let n = c.execute(
            "INSERT OR IGNORE INTO partitions (job, idx, proof, inputs, timings)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![p.job as i64, p.index, p.proof, p.inputs, p.timings],
        )?;
        Ok(n == 1)
    }

    fn partitions(&self, id: JobId) -> Result<Vec<PartitionRecord>> {
        let c = self.conn();
        // Rows of indices the job does not have (a damaged journal) are not its partitions.
        let mut st = c.prepare(
            "SELECT job, idx, proof, inputs, timings FROM partitions
             WHERE job = ?1 AND idx < (SELECT partitions FROM jobs WHERE id = ?1) ORDER BY idx",
        )?;
        let rows = st.query_map([id as i64], |r| {
            Ok(PartitionRecord {
                job: r.get::<_, i64>(0)? as u64,
                index: r.get(1)?,
                proof: r.get(2)?,
                inputs: r.get(3)?,
                timings: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn write_end(&self, id: JobId, state: JobState, error: Option<&str>, now: u64) -> Result<bool> {
        let c = self.conn();
        let n = c.execute(
            "UPDATE jobs SET state = ?2, error = ?3, finished_at = ?4
             WHERE id = ?1 AND state IN ('queued', 'running')",
            params![id as i64, state.as_str(), error, now as i64],
        )?;
        // Claims of a finished job are void.
        c.execute(
            "UPDATE claims SET node = NULL, lease_until_ms = NULL WHERE job = ?1",
            [id as i64],
        )?;
        Ok(n == 1)
    }

    fn mark_fetched(&self, id: JobId, now: u64) -> Result<()> {
        self.conn().execute(
            "UPDATE jobs SET fetched_at = ?2
             WHERE id = ?1 AND fetched_at IS NULL AND state IN ('done', 'failed', 'cancelled')",
            params![id as i64, now as i64],
        )?;
        Ok(())
    }

    fn purge(&self, fetched_before: u64, finished_before: u64) -> Result<usize> {
        let n = self.conn().execute(
            "DELETE FROM jobs WHERE state IN ('done', 'failed', 'cancelled')
             AND ((fetched_at IS NOT NULL AND fetched_at < ?1) OR finished_at < ?2)",
            params![fetched_before as i64, finished_before as i64],
        )?;
        Ok(n)
    }

    fn counts(&self) -> Result<StoreCounts> {
        let c = self.conn();
        let mut st = c.prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state")?;
        let mut counts = StoreCounts::default();
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for row in rows {
            let (state, n) = row?;
            let i = match JobState::parse(&state) {
                Some(JobState::Queued) => 0,
                Some(JobState::Running) => 1,
                Some(JobState::Done) => 2,
                Some(JobState::Failed) => 3,
                Some(JobState::Cancelled) => 4,
                None => continue,
            };
            counts.by_state[i] = n as u64;
        }
        // Partitions of unfinished jobs neither stored nor claimed.
        counts.pending_partitions = c
            .query_row(
                "SELECT COALESCE(SUM(partitions), 0)
                    - (SELECT COUNT(*) FROM partitions p JOIN jobs j ON j.id = p.job
                       WHERE j.state IN ('queued', 'running') AND p.idx < j.partitions)
                    - (SELECT COUNT(*) FROM claims c JOIN jobs j ON j.id = c.job
                       WHERE j.state IN ('queued', 'running') AND c.node IS NOT NULL)
             FROM jobs WHERE state IN ('queued', 'running')",
                [],
                |r| r.get::<_, i64>(0),
            )?
            .max(0) as u64;
        Ok(counts)
    }

    fn progress(&self, ids: &[JobId]) -> Result<Vec<JobProgress>> {
        let c = self.conn();
        let mut st = c.prepare(
            "SELECT id, state,
                    (SELECT COUNT(*) FROM partitions WHERE job = jobs.id AND idx < jobs.partitions),
                    partitions, error
             FROM jobs WHERE id = ?1",
        )?;
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let row = st
                .query_row([id as i64], |r| {
                    Ok((
                        r.get::<_, i64>(0)? as u64,
                        r.get::<_, String>(1)?,
                        r.get::<_, u32>(2)?,
                        r.get::<_, u32>(3)?,
                        r.get::<_, Option<String>>(4)?,
                    ))
                })
                .optional()?;
            if let Some((id, state, done, total, error)) = row {
                let state = JobState::parse(&state)
                    .ok_or_else(|| ServeError::Store(format!("unknown job state {state:?}")))?;
                out.push(JobProgress {
                    id,
                    state,
                    done,
                    total,
                    error,
                });
            }
        }
        Ok(out)
    }

    fn claim(&self, req: &ClaimRequest<'_>) -> Result<Vec<Claim>> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let now = now_ms();
        // Expired leases go back to the pool; a partition claimed too often fails its job.
        let over: Vec<(i64, u32, u32)> = {
            let mut st = tx.prepare(
                "SELECT job, idx, claims FROM claims
                 WHERE node IS NOT NULL AND lease_until_ms < ?1 AND claims >= ?2",
            )?;
            let rows = st.query_map(params![now, req.max_claims], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        for (job, idx, n) in over {
            tx.execute(
                "UPDATE jobs SET state = 'failed', error = ?2, finished_at = ?3
                 WHERE id = ?1 AND state IN ('queued', 'running')",
                params![
                    job,
                    format!(
                        "partition {idx}: claimed {n} times and never finished (its nodes \
                         died or lost the store each time)"
                    ),
                    req.now as i64
                ],
            )?;
            tx.execute(
                "UPDATE claims SET node = NULL, lease_until_ms = NULL WHERE job = ?1",
                [job],
            )?;
        }
        tx.execute(
            "UPDATE claims SET node = NULL, lease_until_ms = NULL
             WHERE node IS NOT NULL AND lease_until_ms < ?1",
            [now],
        )?;
        let jobs: Vec<(i64, u32, String, Vec<u8>, u32)> = {
            let mut st = tx.prepare(
                "SELECT id, partitions, kind, params_digest, log_domain FROM jobs
                 WHERE state IN ('queued', 'running') ORDER BY priority DESC, id",
            )?;
            let rows = st.query_map([], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let lease_until = now.saturating_add(req.lease.as_millis() as i64);
        let mut out = Vec::new();
        for (job, partitions, kind, digest, log_domain) in jobs {
            if out.len() >= req.max {
                break;
            }
            if !fits(req.serves, &kind, &digest, log_domain) {
                continue;
            }
            let taken: std::collections::HashSet<u32> = {
                let mut st = tx.prepare(
                    "SELECT idx FROM partitions WHERE job = ?1
                     UNION SELECT idx FROM claims WHERE job = ?1 AND node IS NOT NULL",
                )?;
                let rows = st.query_map([job], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            for idx in (0..partitions).filter(|i| !taken.contains(i)) {
                if out.len() >= req.max {
                    break;
                }
                let token: i64 = tx.query_row(
                    "INSERT INTO claims (job, idx, node, token, claims, lease_until_ms)
                     VALUES (?1, ?2, ?3, 1, 1, ?4)
                     ON CONFLICT (job, idx) DO UPDATE SET node = excluded.node,
                        token = token + 1, claims = claims + 1,
                        lease_until_ms = excluded.lease_until_ms
                     RETURNING token",
                    params![job, idx, req.node, lease_until],
                    |r| r.get(0),
                )?;
                out.push(Claim {
                    job: job as u64,
                    index: idx,
                    token: token as u64,
                });
            }
            tx.execute(
                "UPDATE jobs SET state = 'running' WHERE id = ?1 AND state = 'queued'
                 AND EXISTS (SELECT 1 FROM claims WHERE job = ?1 AND node IS NOT NULL)",
                [job],
            )?;
        }
        tx.commit()?;
        out.sort_unstable_by_key(|c| (c.job, c.index));
        Ok(out)
    }

    fn heartbeat(
        &self,
        beat: &NodeBeat<'_>,
        held: &[Claim],
        lease: std::time::Duration,
    ) -> Result<Vec<Claim>> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        let now = now_ms();
        let until = now.saturating_add(lease.as_millis() as i64);
        let mut still = Vec::new();
        for cl in held {
            let n = tx.execute(
                "UPDATE claims SET lease_until_ms = ?5
                 WHERE job = ?1 AND idx = ?2 AND node = ?3 AND token = ?4
                   AND job IN (SELECT id FROM jobs WHERE state IN ('queued', 'running'))",
                params![cl.job as i64, cl.index, beat.node, cl.token as i64, until],
            )?;
            if n == 1 {
                still.push(*cl);
            }
        }
        tx.execute(
            "INSERT INTO nodes (id, address, serves, capacity, heartbeat_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (id) DO UPDATE SET address = excluded.address,
                serves = excluded.serves, capacity = excluded.capacity,
                heartbeat_ms = excluded.heartbeat_ms, stopped = 0",
            params![beat.node, beat.address, beat.serves, beat.capacity, now],
        )?;
        tx.commit()?;
        Ok(still)
    }

    fn commit_partition(
        &self,
        node: &str,
        claim: &Claim,
        p: &PartitionRecord,
        now: u64,
    ) -> Result<Commit> {
        claim.check_result(p)?;
        let mut c = self.conn();
        let tx = c.transaction()?;
        let current: Option<(Option<String>, i64)> = tx
            .query_row(
                "SELECT claims.node, claims.token FROM claims JOIN jobs ON jobs.id = claims.job
                 WHERE claims.job = ?1 AND claims.idx = ?2
                   AND jobs.state IN ('queued', 'running')",
                params![claim.job as i64, claim.index],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        match current {
            Some((Some(n), t)) if n == node && t as u64 == claim.token => {}
            _ => {
                // Stale, unless this repeats a commit that was stored.
                let repeat: Option<String> = tx
                    .query_row(
                        "SELECT jobs.state FROM claims JOIN jobs ON jobs.id = claims.job
                         WHERE claims.job = ?1 AND claims.idx = ?2 AND claims.node IS NULL
                           AND claims.done_by = ?3 AND claims.token = ?4",
                        params![claim.job as i64, claim.index, node, claim.token as i64],
                        |r| r.get(0),
                    )
                    .optional()?;
                return Ok(match repeat {
                    Some(state) => Commit::Stored {
                        job_done: state == "done",
                    },
                    None => Commit::Stale,
                });
            }
        }
        let n = tx.execute(
            "INSERT OR IGNORE INTO partitions (job, idx, proof, inputs, timings)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![p.job as i64, p.index, p.proof, p.inputs, p.timings],
        )?;
        if n == 0 {
            return Ok(Commit::Stale);
        }
        tx.execute(
            "UPDATE claims SET node = NULL, lease_until_ms = NULL, done_by = ?3
             WHERE job = ?1 AND idx = ?2",
            params![claim.job as i64, claim.index, node],
        )?;
        let job_done = tx.execute(
            "UPDATE jobs SET state = 'done', finished_at = ?2
             WHERE id = ?1 AND state IN ('queued', 'running')
               AND (SELECT COUNT(*) FROM partitions WHERE job = ?1 AND idx < jobs.partitions)
                   >= partitions",
            params![claim.job as i64, now as i64],
        )? == 1;
        tx.commit()?;
        Ok(Commit::Stored { job_done })
    }

    fn release(&self, node: &str, claims: &[Claim]) -> Result<()> {
        let mut c = self.conn();
        let tx = c.transaction()?;
        for cl in claims {
            tx.execute(
                "UPDATE claims SET node = NULL, lease_until_ms = NULL, claims = claims - 1
                 WHERE job = ?1 AND idx = ?2 AND node = ?3 AND token = ?4",
                params![cl.job as i64, cl.index, node, cl.token as i64],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn release_node(&self, node: &str) -> Result<usize> {
        Ok(self.conn().execute(
            "UPDATE claims SET node = NULL, lease_until_ms = NULL WHERE node = ?1",
            [node],
        )?)
    }

    fn node_stopped(&self, node: &str) -> Result<()> {
        self.conn()
            .execute("UPDATE nodes SET stopped = 1 WHERE id = ?1", [node])?;
        Ok(())
    }

    fn nodes(&self) -> Result<Vec<NodeRecord>> {
        let c = self.conn();
        let mut st = c.prepare(
            "SELECT id, address, serves, capacity,
                    (SELECT COUNT(*) FROM claims WHERE claims.node = nodes.id), heartbeat_ms,
                    stopped
             FROM nodes ORDER BY heartbeat_ms DESC",
        )?;
        let now = now_ms();
        let rows = st.query_map([], |r| {
            Ok(NodeRecord {
                node: r.get(0)?,
                address: r.get(1)?,
                serves: r.get(2)?,
                capacity: r.get(3)?,
                held: r.get(4)?,
                silent_s: (now - r.get::<_, i64>(5)?).max(0) as f64 / 1e3,
                stopped: r.get::<_, i64>(6)? != 0,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
