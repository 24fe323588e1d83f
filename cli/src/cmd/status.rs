//! `bellows status`: a daemon's queue, devices, memory, parameters, fleet and jobs (the
//! caller's jobs; every job for an admin).

use bellows_core::units::format_bytes;
use bellows_serve::{client::rpc_error, config::format_budget, proto};
use clap::Args;

use super::client::{connect, runtime, state_name, target, DaemonArgs};
use crate::error::{CliError, Result};
use crate::outln;
use crate::stats::fmt_secs;

/// `bellows status --help`.
pub const STATUS_ABOUT: &str = "Show a daemon's state: uptime, partitions queued and running, \
retries, each device (backend, workers, busy fraction since start, partitions proved, errors), \
the memory budget (reserved now and at peak) and resident parameters, and the most recent jobs \
with their progress (your own jobs, or every job for the daemon's admins); on a fleet node (a \
shared PostgreSQL store), every node of the fleet with the partitions it holds and when it was \
last heard of (or that it stopped), and the jobs of the whole fleet. --json prints the same as \
one JSON object.\n\n\
Examples:\n  bellows status\n  bellows status --daemon 127.0.0.1:7700 --json";

/// `bellows status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Most recent jobs to list.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub jobs: u32,
    /// The daemon.
    #[command(flatten)]
    pub daemon: DaemonArgs,
}

fn gb(b: u64) -> String {
    format!("{:.2} GB", b as f64 / 1e9)
}

fn status_json(s: &proto::StatusReply) -> serde_json::Value {
    let m = s.memory.unwrap_or_default();
    serde_json::json!({
        "uptime_s": s.uptime_s,
        "queued_partitions": s.queued_partitions,
        "running_partitions": s.running_partitions,
        "retries": s.retries,
        "memory": {
            "budget_bytes": m.budget_bytes,
            "reserved_bytes": m.reserved_bytes,
            "peak_reserved_bytes": m.peak_reserved_bytes,
            "params_budget_bytes": m.params_budget_bytes,
            "params_resident_bytes": m.params_resident_bytes,
        },
        "devices": s.devices.iter().map(|d| serde_json::json!({
            "index": d.index, "name": d.name, "backend": d.backend, "workers": d.workers,
            "busy_fraction": d.busy_fraction, "partitions": d.partitions, "errors": d.errors,
            "fallback": d.fallback, "memory_budget_bytes": d.memory_budget_bytes,
            "memory_reserved_bytes": d.memory_reserved_bytes,
            "memory_peak_bytes": d.memory_peak_bytes,
        })).collect::<Vec<_>>(),
        "params": s.params.iter().map(|p| serde_json::json!({
            "digest": bellows_serve::params::hex(&p.digest), "path": p.path, "bytes": p.bytes,
            "domain_log": p.domain_log, "devices": p.devices,
        })).collect::<Vec<_>>(),
        "node_id": s.node_id,
        "nodes": s.nodes.iter().map(|n| serde_json::json!({
            "node_id": n.node_id, "address": n.address, "serves": n.serves,
            "capacity": n.capacity, "held": n.held, "silent_s": n.silent_s,
            "stopped": n.stopped,
        })).collect::<Vec<_>>(),
        "jobs": s.jobs.iter().map(|j| serde_json::json!({
            "id": j.job_id, "state": state_name(j.state), "priority": j.priority,
            "done": j.partitions_done, "total": j.partitions_total, "circuit": j.circuit,
            "error": j.error, "submitted_at": j.submitted_at,
        })).collect::<Vec<_>>(),
    })
}

/// `bellows status`.
pub fn run(a: &StatusArgs) -> Result<()> {
    let (addr, creds) = target(&a.daemon)?;
    let s = runtime()?.block_on(async {
        let mut c = connect(&addr, creds).await?;
        Ok::<_, CliError>(
            c.status(proto::StatusRequest { max_jobs: a.jobs })
                .await
                .map_err(rpc_error)?
                .into_inner(),
        )
    })?;
    if a.json {
        outln!("{}", status_json(&s));
        return Ok(());
    }
    let m = s.memory.unwrap_or_default();
    outln!(
        "daemon {addr}: up {}, {} partition(s) queued, {} running, {} retries",
        fmt_secs(s.uptime_s),
        s.queued_partitions,
        s.running_partitions,
        s.retries
    );
    outln!(
        "memory: {} reserved of {} (peak {}); parameters {} resident of {}",
        gb(m.reserved_bytes),
        gb(m.budget_bytes),
        gb(m.peak_reserved_bytes),
        gb(m.params_resident_bytes),
        gb(m.params_budget_bytes)
    );
    outln!("devices:");
    for d in &s.devices {
        outln!(
            "  {:>2} {:<14} {:<8} workers {}  busy {:>5.1}%  partitions {:>6}  errors {}  \
             memory {} of {} (peak {}){}",
            d.index,
            d.name,
            d.backend,
            d.workers,
            100.0 * d.busy_fraction,
            d.partitions,
            d.errors,
            format_bytes(d.memory_reserved_bytes),
            format_budget(d.memory_budget_bytes),
            format_bytes(d.memory_peak_bytes),
            if d.fallback { "  (fallback)" } else { "" }
        );
    }
    if !s.params.is_empty() {
        outln!("parameters:");
        for p in &s.params {
            outln!(
                "  {} 2^{} {} on devices {:?}  {}",
                &bellows_serve::params::hex(&p.digest)[..16],
                p.domain_log,
                if p.bytes > 0 {
                    gb(p.bytes)
                } else {
                    "not loaded".into()
                },
                p.devices,
                p.path
            );
        }
    }
    if !s.nodes.is_empty() {
        outln!("fleet (this node: {}):", s.node_id);
        for n in &s.nodes {
            let heard = if n.stopped {
                format!("stopped {:>6.1} s ago", n.silent_s)
            } else {
                format!("heard {:>6.1} s ago  ", n.silent_s)
            };
            outln!(
                "  {:<24} {:<21} holds {:>3}/{:<3} {heard}  {}",
                n.node_id,
                n.address,
                n.held,
                n.capacity,
                n.serves
            );
        }
    }
    outln!("jobs:");
    outln!(
        "  {:>6} {:<9} {:>9} {:>5}  circuit",
        "id",
        "state",
        "done",
        "prio"
    );
    for j in &s.jobs {
        outln!(
            "  {:>6} {:<9} {:>4}/{:<4} {:>5}  {}{}",
            j.job_id,
            state_name(j.state),
            j.partitions_done,
            j.partitions_total,
            j.priority,
            j.circuit,
            if j.error.is_empty() {
                String::new()
            } else {
                format!("  ({})", j.error)
            }
        );
    }
    Ok(())
}
