//! [`SqliteStore`]: the embedded job store, one SQLite file in the daemon's state directory.
//!
//! Write-ahead logging with `synchronous=FULL`: a commit is fsynced to the log before it returns,
//! so an acknowledged job survives a crash of the process or the machine. Migrations are numbered
//! by `PRAGMA user_version` and applied at open.

use std::{path::Path, sync::Mutex};

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::{JobId, JobRecord, JobState, JobStore, NewJob, PartitionRecord, StoreCounts};
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
];

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
    })
}

const COLUMNS: &str =
    "id, state, priority, partitions, request, label, submitted_at, finished_at, error, fetched_at";

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
            "INSERT INTO jobs (state, priority, partitions, request, label, submitted_at)
             VALUES ('queued', ?1, ?2, ?3, ?4, ?5)",
            params![
                job.priority,
                job.partitions,
                job.request,
                job.label,
                job.now as i64
            ],
        )?;
        Ok(c.last_insert_rowid() as u64)
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

    fn recent_jobs(&self, limit: usize) -> Result<Vec<JobRecord>> {
        let c = self.conn();
        let mut st = c.prepare(&format!(
            "SELECT {COLUMNS} FROM jobs ORDER BY id DESC LIMIT ?1"
        ))?;
        let rows = st.query_map([limit as i64], record)?;
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
        let n = self.conn().execute(
            "INSERT OR IGNORE INTO partitions (job, idx, proof, inputs, timings)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![p.job as i64, p.index, p.proof, p.inputs, p.timings],
        )?;
        Ok(n == 1)
    }

    fn partitions(&self, id: JobId) -> Result<Vec<PartitionRecord>> {
        let c = self.conn();
        let mut st = c.prepare(
            "SELECT job, idx, proof, inputs, timings FROM partitions WHERE job = ?1 ORDER BY idx",
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
        let n = self.conn().execute(
            "UPDATE jobs SET state = ?2, error = ?3, finished_at = ?4
             WHERE id = ?1 AND state IN ('queued', 'running')",
            params![id as i64, state.as_str(), error, now as i64],
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
        Ok(counts)
    }
}
