//! The engine's public types: configuration, devices, events, job snapshots.

use std::sync::Arc;

use bellows_core::{
    groth16::{io::PointCheck, prover::G2Policy},
    Backend,
};

use crate::{
    job::Limits,
    store::{JobId, JobState},
};

/// How the engine runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct EngineConfig {
    /// Synthesis threads. Default: half the cores, at least 1.
    pub synthesis_workers: usize,
    /// Finaliser threads. Default: 2.
    pub finalizers: usize,
    /// Host bytes synthesised partitions may hold until their proofs are assembled. Default:
    /// `None`, half the host memory available at start.
    pub memory_budget: Option<u64>,
    /// Bytes of decoded parameters kept resident. Default: `None`, a quarter of the host memory
    /// available at start.
    pub params_budget: Option<u64>,
    /// Attempts per partition before its job fails (device errors only). Default: 3.
    pub max_attempts: u32,
    /// Synthesise with pre-compiled constraint systems cached in this directory (`None`: direct
    /// synthesis). Default: `None`.
    pub pce_dir: Option<std::path::PathBuf>,
    /// Limits on requests.
    pub limits: Limits,
    /// Only parameters files inside these directories are read ([`crate::params::dirs`]);
    /// empty: none. Default: empty (`bellows serve` fills in its defaults).
    pub params_dirs: Vec<std::path::PathBuf>,
    /// Who may reach which jobs ([`crate::identity::Access`]). Default: no admins, each
    /// identity reaches its own jobs.
    pub access: crate::identity::Access,
    /// Called on every scheduling event (tests watch the engine with it). Default: none.
    pub observer: Option<Observer>,
    /// Take part in a fleet: claim work from the shared store instead of queueing what is
    /// submitted here ([`super::FleetConfig`]). Default: `None` (one daemon, its own journal).
    pub fleet: Option<super::FleetConfig>,
    /// A device idle this long after proving asks its backend to return what its pools cache
    /// ([`bellows_core::backend::MemoryPool::trim`]: the CUDA backend's pooled device memory and
    /// idle pinned host blocks), once per idle spell. `None`: never. Default: 60 s.
    pub idle_trim: Option<std::time::Duration>,
    /// How parameters are checked when a job does not ask for curve checks only (the cuzk
    /// API's jobs never do). Default: [`PointCheck::Batched`].
    pub params_check: PointCheck,
    /// Keep parameters files' digests in this file across restarts
    /// ([`crate::params::known`]). Default: `None` (`bellows serve` keeps them in its state
    /// directory).
    pub params_digests: Option<std::path::PathBuf>,
    /// Digests parameters files are published with: a file they list, whose digest matches,
    /// has its points checked on the curve only ([`crate::params::Published`]). Default:
    /// `None` (`bellows serve`, built with Filecoin support, gives Filecoin's
    /// `parameters.json` unless `params_check` names a check).
    pub published: Option<Arc<dyn crate::params::Published>>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Self {
            synthesis_workers: (cores / 2).max(1),
            finalizers: 2,
            memory_budget: None,
            params_budget: None,
            max_attempts: 3,
            pce_dir: None,
            limits: Limits::default(),
            params_dirs: Vec::new(),
            access: crate::identity::Access::default(),
            observer: None,
            fleet: None,
            idle_trim: Some(std::time::Duration::from_secs(60)),
            params_check: PointCheck::Batched,
            params_digests: None,
            published: None,
        }
    }
}

/// A callback for [`Event`]s.
#[derive(Clone)]
pub struct Observer(pub Arc<dyn Fn(&Event) + Send + Sync>);

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// What happened in the engine (for observers).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// A device was idle for [`EngineConfig::idle_trim`] and its backend was asked to trim its
    /// pools (`error`: the backend's refusal, if any).
    DeviceTrimmed {
        /// Device index.
        device: usize,
        /// The backend's error, if the trim failed.
        error: Option<String>,
    },
    /// A synthesis worker took a partition (its bytes are reserved).
    SynthesisStarted {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
        /// Bytes reserved by all partitions now, this one included.
        reserved: u64,
    },
    /// A partition is synthesised and waits for a device.
    SynthesisDone {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
    },
    /// A device worker placed a partition on its device (its device bytes are reserved).
    DeviceReserved {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
        /// Device index.
        device: usize,
        /// Bytes the device holds now against its budget (resident points and partitions),
        /// this partition included (read under the scheduler's lock).
        reserved: u64,
    },
    /// A device worker started a partition.
    DeviceStarted {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
        /// Device index.
        device: usize,
    },
    /// A device finished its part of a partition (successfully or not).
    DeviceDone {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
        /// Device index.
        device: usize,
        /// Whether it succeeded.
        ok: bool,
    },
    /// A partition will be tried again on another device.
    Retry {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
        /// The device that failed.
        failed_device: usize,
        /// The error.
        error: String,
    },
    /// A partition's proof is assembled and stored; its bytes are released.
    PartitionDone {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
        /// Device that proved it.
        device: usize,
    },
    /// A proved partition's result was not stored: this fleet node's claim on it was lost (its
    /// lease expired and another node took it, or the job ended elsewhere).
    PartitionDiscarded {
        /// Job.
        job: JobId,
        /// Partition.
        partition: u32,
    },
    /// A fleet node gave partitions it claimed back to the store: it cannot prove them (their
    /// parameters are missing or differ here) or could not read their job.
    GaveBack {
        /// Job.
        job: JobId,
        /// How many partitions.
        partitions: u32,
    },
    /// A job that ended elsewhere (another fleet node finished, failed or cancelled it) was
    /// stopped here.
    JobStopped {
        /// Job.
        job: JobId,
        /// The state it ended in.
        state: JobState,
    },
    /// A job finished.
    JobFinished {
        /// Job.
        job: JobId,
        /// Its final state.
        state: JobState,
    },
}

/// One device the engine proves on.
#[derive(Clone)]
pub struct DeviceSpec {
    /// Name in status and metrics (e.g. `cuda:0`).
    pub label: String,
    /// The backend, configured for this device.
    pub backend: Arc<dyn Backend>,
    /// Device workers (one for a backend that does not declare `concurrent`). Default in
    /// `bellows serve`: 2.
    pub workers: usize,
    /// Where the G2 MSM runs.
    pub g2: G2Policy,
    /// Takes only partitions that failed on another device.
    pub fallback: bool,
    /// Bytes this device may hold: the points of the parameters resident on it and the
    /// partitions on it (see the engine's docs). `None`: unlimited. In `bellows serve`: from
    /// `--device-memory-budget`, else unlimited.
    pub memory_budget: Option<u64>,
}

impl std::fmt::Debug for DeviceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSpec")
            .field("label", &self.label)
            .field("workers", &self.workers)
            .field("fallback", &self.fallback)
            .field("memory_budget", &self.memory_budget)
            .finish()
    }
}

/// Progress of a job, as watchers see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSnapshot {
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
