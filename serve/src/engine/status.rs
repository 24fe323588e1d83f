//! What the engine reports: Status, devices, capabilities, parameters.

use std::sync::atomic::Ordering;

use super::{state_to_proto, Engine};
use crate::{error::Result, proto};

impl Engine {
    /// Status for the Status call.
    pub fn status(&self, max_jobs: usize) -> Result<proto::StatusReply> {
        let (waiting, ready) = {
            let s = self.shared.lock_sched();
            (s.waiting_len() as u64, s.ready_len() as u64)
        };
        let uptime = self.shared.started.elapsed();
        let mut jobs = Vec::new();
        for r in self.shared.store.recent_jobs(max_jobs)? {
            let snap = self.snapshot(r.id)?;
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

    /// The most bytes the budget ever had reserved, and its capacity.
    pub fn budget_peak(&self) -> (u64, u64) {
        (self.shared.budget.peak(), self.shared.budget.capacity())
    }
}
