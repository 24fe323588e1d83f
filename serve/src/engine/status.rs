//! What the engine reports: Status, devices, capabilities, parameters.

use std::sync::atomic::Ordering;

use std::sync::Arc;

use super::{state_to_proto, Engine};
use crate::{error::Result, identity::Identity, proto};

impl Engine {
    /// Status for the Status call, as `who` may see it: its own jobs only, unless an admin.
    pub fn status(&self, max_jobs: usize, who: &Identity) -> Result<proto::StatusReply> {
        let (waiting, ready) = {
            let s = self.shared.lock_sched();
            (s.waiting_len() as u64, s.ready_len() as u64)
        };
        let uptime = self.shared.started.elapsed();
        let mut jobs = Vec::new();
        let only = self.shared.cfg.access.listing_filter(who);
        for r in self.shared.store.recent_jobs(max_jobs, only)? {
            let snap = self.progress_of(r.id)?;
            jobs.push(proto::JobSummary {
                job_id: r.id,
                state: state_to_proto(snap.state) as i32,
                priority: r.priority,
                partitions_done: snap.done,
                partitions_total: snap.total,
                circuit: r.label,
                error: snap.error.unwrap_or_default(),
                submitted_at: r.submitted_at,
            });
        }
        let running = self
            .shared
            .devices
            .iter()
            .map(|d| d.busy.lock().unwrap_or_else(|e| e.into_inner()).0 as u64)
            .sum();
        Ok(proto::StatusReply {
            queued_partitions: waiting + ready,
            running_partitions: running,
            jobs,
            devices: self.devices(),
            memory: Some(proto::MemoryStatus {
                budget_bytes: self.shared.budget.capacity(),
                reserved_bytes: self.shared.budget.reserved(),
                peak_reserved_bytes: self.shared.budget.peak(),
                params_budget_bytes: self.shared.params.budget(),
                params_resident_bytes: self.shared.params.resident_bytes(),
            }),
            params: self.params_status(),
            uptime_s: uptime.as_secs_f64(),
            retries: self.shared.metrics.retries(),
            node_id: self
                .shared
                .fleet
                .as_ref()
                .map(|f| f.cfg.node_id.clone())
                .unwrap_or_default(),
            nodes: self.fleet_nodes(),
        })
    }

    /// The nodes of the fleet, as the store last heard of them (none for a daemon of its own).
    pub fn fleet_nodes(&self) -> Vec<proto::NodeStatus> {
        if self.shared.fleet.is_none() {
            return Vec::new();
        }
        match self.shared.store.nodes() {
            Ok(nodes) => nodes
                .into_iter()
                .map(|n| proto::NodeStatus {
                    node_id: n.node,
                    address: n.address,
                    serves: n.serves,
                    capacity: n.capacity,
                    held: n.held,
                    silent_s: n.silent_s,
                    stopped: n.stopped,
                })
                .collect(),
            Err(e) => {
                tracing::warn!("listing the fleet's nodes: {e}");
                Vec::new()
            }
        }
    }

    /// Every device's status.
    pub fn devices(&self) -> Vec<proto::DeviceStatus> {
        let uptime = self.shared.started.elapsed().as_secs_f64().max(1e-9);
        let mem: Vec<(Option<u64>, u64, u64)> = {
            let q = self.shared.lock_sched();
            q.mem
                .iter()
                .map(|m| (m.budget(), m.reserved(), m.peak()))
                .collect()
        };
        self.shared
            .devices
            .iter()
            .enumerate()
            .map(|(i, d)| proto::DeviceStatus {
                memory_budget_bytes: mem[i].0,
                memory_reserved_bytes: mem[i].1,
                memory_peak_bytes: mem[i].2,
                index: i as u32,
                backend: d.spec.backend.info().name,
                name: d.spec.label.clone(),
                workers: d.workers as u32,
                busy_fraction: (d.busy_time().as_secs_f64() / uptime).min(1.0),
                partitions: d.partitions.load(Ordering::Relaxed),
                errors: d.errors.load(Ordering::Relaxed),
                fallback: d.spec.fallback,
            })
            .collect()
    }

    /// Capabilities of each device's backend, one line each.
    pub fn capabilities(&self) -> Vec<String> {
        self.shared
            .devices
            .iter()
            .map(|d| {
                let i = d.spec.backend.info();
                format!("{} {}: {}", i.name, i.version, i.capabilities.summary())
            })
            .collect()
    }

    /// Status of every known parameters file.
    pub fn params_status(&self) -> Vec<proto::ParamsStatus> {
        self.shared
            .params
            .entries()
            .iter()
            .map(|e| proto::ParamsStatus {
                digest: e.digest.to_vec(),
                path: e.path.display().to_string(),
                bytes: if e.is_loaded() {
                    e.shape.decoded_bytes
                } else {
                    0
                },
                domain_log: e.shape.domain_size.trailing_zeros(),
                devices: e.devices().into_iter().map(|d| d as u32).collect(),
            })
            .collect()
    }

    /// Device `device`'s memory: its budget, the bytes it holds now and at most so far.
    pub fn device_memory(&self, device: usize) -> (Option<u64>, u64, u64) {
        let q = self.shared.lock_sched();
        let m = &q.mem[device];
        (m.budget(), m.reserved(), m.peak())
    }

    /// Sets the gauges that come from the store: partitions waiting (fleet-wide in a fleet's
    /// store). The daemon calls it on a timer.
    pub fn update_store_gauges(&self) {
        match self.shared.store.counts() {
            Ok(c) => self.shared.metrics.set_pending(c.pending_partitions),
            Err(e) => {
                self.shared.metrics.error("store");
                tracing::debug!("counting the store's pending partitions: {e}");
            }
        }
    }

    /// The most bytes the budget ever had reserved, and its capacity.
    pub fn budget_peak(&self) -> (u64, u64) {
        (self.shared.budget.peak(), self.shared.budget.capacity())
    }

    /// The jobs queued or running here, by kind (the journal's kind name): (kind, queued,
    /// running), kinds in name order. In a fleet, where this daemon holds only the jobs it has
    /// partitions of, the fleet's whole queue from the store instead, as one entry `all`.
    pub fn jobs_by_kind(&self) -> Result<Vec<(String, u32, u32)>> {
        if self.shared.fleet.is_some() {
            let c = self.shared.store.counts()?;
            let n = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
            return Ok(vec![("all".into(), n(c.by_state[0]), n(c.by_state[1]))]);
        }
        let mut by: std::collections::BTreeMap<String, (u32, u32)> = Default::default();
        let jobs: Vec<_> = self
            .shared
            .jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        for j in jobs {
            let e = by.entry(j.spec.kind.name().to_string()).or_default();
            match j.snapshot().state {
                crate::store::JobState::Queued => e.0 += 1,
                crate::store::JobState::Running => e.1 += 1,
                _ => {}
            }
        }
        Ok(by.into_iter().map(|(k, (q, r))| (k, q, r)).collect())
    }

    /// The jobs with a partition on device `device` now, and each one's kind.
    pub fn device_jobs(&self, device: usize) -> Vec<(crate::store::JobId, String)> {
        let Some(d) = self.shared.devices.get(device) else {
            return Vec::new();
        };
        d.running_jobs()
            .into_iter()
            .map(|id| {
                let kind = self
                    .shared
                    .live_job(id)
                    .map(|j| j.spec.kind.name().to_string())
                    .unwrap_or_default();
                (id, kind)
            })
            .collect()
    }

    /// The backend of device `device` (its memory, its name).
    pub fn device_backend(&self, device: usize) -> Option<&Arc<dyn bellows_core::Backend>> {
        self.shared.devices.get(device).map(|d| &d.spec.backend)
    }

    /// Partitions on any device using the parameters with `digest` now, and the bytes their
    /// points take on the devices they are resident on.
    pub fn params_on_devices(&self, entry: &crate::params::ParamsEntry) -> (usize, u64) {
        let q = self.shared.lock_sched();
        let mut users = 0;
        let mut bytes = 0;
        for (i, m) in q.mem.iter().enumerate() {
            users += m.users(&entry.digest);
            if entry.is_resident_on(i) {
                bytes += super::points_bytes(&entry.shape, m.g2_on_device());
            }
        }
        (users, bytes)
    }

    /// Whether device `device` takes first attempts (it is not a fallback).
    pub fn is_first_device(&self, device: usize) -> bool {
        self.shared
            .devices
            .get(device)
            .is_some_and(|d| !d.spec.fallback)
    }

    /// The host byte budget of synthesised partitions: (reserved now, capacity).
    pub fn partition_memory(&self) -> (u64, u64) {
        (self.shared.budget.reserved(), self.shared.budget.capacity())
    }

    /// Jobs queued or running here ahead of job `id`: of a higher priority, or of the same and
    /// submitted before it.
    pub fn jobs_ahead(&self, id: crate::store::JobId) -> u32 {
        let jobs = self.shared.jobs.lock().unwrap_or_else(|e| e.into_inner());
        let Some(me) = jobs.get(&id) else {
            return 0;
        };
        let p = me.spec.priority;
        jobs.values()
            .filter(|j| j.spec.priority > p || (j.spec.priority == p && j.id < id))
            .count() as u32
    }

    /// How long the engine has run.
    pub fn uptime(&self) -> std::time::Duration {
        self.shared.started.elapsed()
    }
}
