//! Prometheus metrics of the daemon (served as text on `GET /metrics`; docs/serve.md lists them).

use prometheus_client::{
    encoding::text::encode,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};
use std::sync::atomic::AtomicU64;

type Labels = Vec<(String, String)>;

fn label(k: &str, v: impl Into<String>) -> Labels {
    vec![(k.to_string(), v.into())]
}

fn phase_histogram() -> Histogram {
    // 1 ms .. about 1.5 h, doubling.
    Histogram::new(exponential_buckets(0.001, 2.0, 23))
}

/// The metrics (one set per daemon).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    queued: Family<Labels, Gauge>,
    jobs: Family<Labels, Counter>,
    partitions: Family<Labels, Counter>,
    device_busy: Family<Labels, Counter<f64, AtomicU64>>,
    phases: Family<Labels, Histogram, fn() -> Histogram>,
    memory: Family<Labels, Gauge>,
    device_memory: Family<Labels, Gauge>,
    retries: Counter,
    errors: Family<Labels, Counter>,
    fleet_claims: Counter,
    fleet_commits: Family<Labels, Counter>,
    fleet_held: Gauge,
    active_jobs: Gauge,
    pending: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh set, registered under the `bellows_` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("bellows");
        let queued = Family::<Labels, Gauge>::default();
        registry.register(
            "queue_partitions",
            "Partitions waiting, by stage (synthesis: not yet synthesised; device: synthesised, \
             waiting for a device)",
            queued.clone(),
        );
        let jobs = Family::<Labels, Counter>::default();
        registry.register("jobs", "Jobs finished, by outcome", jobs.clone());
        let partitions = Family::<Labels, Counter>::default();
        registry.register(
            "partitions",
            "Partitions proved, by device",
            partitions.clone(),
        );
        let device_busy = Family::<Labels, Counter<f64, AtomicU64>>::default();
        registry.register(
            "device_busy_seconds",
            "Seconds each device had at least one partition (rate() of it is the busy fraction)",
            device_busy.clone(),
        );
        let phases: Family<Labels, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(phase_histogram);
        registry.register(
            "phase_seconds",
            "Per-partition duration of each phase (queued, synthesis, g1_phase, msm_g2, \
             finalize, total)",
            phases.clone(),
        );
        let memory = Family::<Labels, Gauge>::default();
        registry.register(
            "memory_bytes",
            "Host memory: budget and reserved (synthesised partitions until their proof is \
             assembled), params_budget and params_resident (decoded parameters)",
            memory.clone(),
        );
        let device_memory = Family::<Labels, Gauge>::default();
        registry.register(
            "device_memory_bytes",
            "Each device's memory budget (absent: unlimited) and the bytes it holds against it \
             (resident parameter points and partitions on the device)",
            device_memory.clone(),
        );
        let retries = Counter::default();
        registry.register(
            "retries",
            "Partitions retried after a device error",
            retries.clone(),
        );
        let errors = Family::<Labels, Counter>::default();
        registry.register(
            "errors",
            "Errors, by kind (device, job, store, request)",
            errors.clone(),
        );
        let fleet_claims = Counter::default();
        registry.register(
            "fleet_claims",
            "Partitions this node claimed from the fleet's store",
            fleet_claims.clone(),
        );
        let fleet_commits = Family::<Labels, Counter>::default();
        registry.register(
            "fleet_commits",
            "Results this node committed to the fleet's store, by result (stored; stale: \
             discarded because the claim was lost)",
            fleet_commits.clone(),
        );
        let fleet_held = Gauge::default();
        registry.register(
            "fleet_held_partitions",
            "Partitions this node holds claimed now",
            fleet_held.clone(),
        );
        let active_jobs = Gauge::default();
        registry.register(
            "active_jobs",
            "Jobs queued or running on this daemon",
            active_jobs.clone(),
        );
        let pending = Gauge::default();
        registry.register(
            "pending_partitions",
            "Partitions of unfinished jobs that no daemon holds yet (fleet-wide in a fleet's \
             store), from the store every few seconds",
            pending.clone(),
        );
        let m = Self {
            active_jobs,
            pending,
            fleet_claims,
            fleet_commits,
            fleet_held,
            registry,
            queued,
            jobs,
            partitions,
            device_busy,
            phases,
            memory,
            device_memory,
            retries,
            errors,
        };
        // Every labelled series exists from the start at 0, so that rate() and increase()
        // see the first event.
        for kind in ["device", "job", "store", "request"] {
            drop(m.errors.get_or_create(&label("kind", kind)));
        }
        for outcome in ["done", "failed", "cancelled"] {
            drop(m.jobs.get_or_create(&label("outcome", outcome)));
        }
        for result in ["stored", "stale"] {
            drop(m.fleet_commits.get_or_create(&label("result", result)));
        }
        for phase in [
            "queued",
            "params",
            "synthesis",
            "g1_phase",
            "msm_g2",
            "finalize",
            "total",
        ] {
            drop(m.phases.get_or_create(&label("phase", phase)));
        }
        m.set_queued(0, 0);
        m
    }

    /// Creates the per-device series of `device` at 0 (partitions proved, busy time).
    pub fn add_device(&self, device: &str) {
        drop(self.partitions.get_or_create(&label("device", device)));
        drop(self.device_busy.get_or_create(&label("device", device)));
    }

    /// Sets the number of jobs queued or running here.
    pub fn set_active_jobs(&self, n: usize) {
        self.active_jobs.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Sets the partitions waiting in the store.
    pub fn set_pending(&self, n: u64) {
        self.pending.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// Counts partitions claimed from a fleet's store.
    pub fn fleet_claimed(&self, n: usize) {
        self.fleet_claims.inc_by(n as u64);
    }

    /// Counts a result committed to a fleet's store (`stored` or `stale`).
    pub fn fleet_commit(&self, result: &str) {
        self.fleet_commits
            .get_or_create(&label("result", result))
            .inc();
    }

    /// Sets the number of partitions held claimed.
    pub fn set_fleet_held(&self, n: usize) {
        self.fleet_held.set(n as i64);
    }

    /// Sets the queue gauges.
    pub fn set_queued(&self, synthesis: usize, device: usize) {
        self.queued
            .get_or_create(&label("stage", "synthesis"))
            .set(synthesis as i64);
        self.queued
            .get_or_create(&label("stage", "device"))
            .set(device as i64);
    }

    /// Counts a finished job (`outcome`: done, failed, cancelled).
    pub fn job_finished(&self, outcome: &str) {
        self.jobs.get_or_create(&label("outcome", outcome)).inc();
    }

    /// Jobs finished with `outcome` so far (done, failed, cancelled).
    pub fn jobs_finished(&self, outcome: &str) -> u64 {
        self.jobs.get_or_create(&label("outcome", outcome)).get()
    }

    /// Counts a partition proved on `device`.
    pub fn partition_proved(&self, device: &str) {
        self.partitions
            .get_or_create(&label("device", device))
            .inc();
    }

    /// Adds busy time to `device`.
    pub fn device_busy(&self, device: &str, seconds: f64) {
        self.device_busy
            .get_or_create(&label("device", device))
            .inc_by(seconds);
    }

    /// Records a phase duration.
    pub fn phase(&self, phase: &str, seconds: f64) {
        self.phases
            .get_or_create(&label("phase", phase))
            .observe(seconds);
    }

    /// Sets the memory gauges.
    pub fn set_memory(&self, budget: u64, reserved: u64, params_budget: u64, params: u64) {
        for (k, v) in [
            ("budget", budget),
            ("reserved", reserved),
            ("params_budget", params_budget),
            ("params_resident", params),
        ] {
            self.memory
                .get_or_create(&label("kind", k))
                .set(i64::try_from(v).unwrap_or(i64::MAX));
        }
    }

    /// Sets device `device`'s memory gauges.
    pub fn set_device_memory(&self, device: &str, budget: Option<u64>, reserved: u64) {
        let g = |kind: &str| {
            vec![
                ("device".to_string(), device.to_string()),
                ("kind".to_string(), kind.to_string()),
            ]
        };
        if let Some(b) = budget {
            self.device_memory
                .get_or_create(&g("budget"))
                .set(i64::try_from(b).unwrap_or(i64::MAX));
        }
        self.device_memory
            .get_or_create(&g("reserved"))
            .set(i64::try_from(reserved).unwrap_or(i64::MAX));
    }

    /// Counts a retry.
    pub fn retry(&self) {
        self.retries.inc();
    }

    /// Retries so far.
    pub fn retries(&self) -> u64 {
        self.retries.get()
    }

    /// Counts an error of `kind`.
    pub fn error(&self, kind: &str) {
        self.errors.get_or_create(&label("kind", kind)).inc();
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut s, &self.registry);
        s
    }
}
