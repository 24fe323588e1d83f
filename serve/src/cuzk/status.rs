//! What GetStatus reports, and PreloadSRS / EvictSRS by the cuzk API's circuit ids.
//!
//! Curio's back-pressure sums `pending + in_progress` over every queue against its
//! `MaxPending`: the queues count jobs (one per Curio task), queued or running, of every kind
//! and every client of this daemon — a job submitted through the Bellows API takes the same
//! devices, so it counts too. The counts are the daemon's whole load: they say nothing about
//! whose jobs they are.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::{
    engine::Engine,
    error::{Result, ServeError},
    identity::Identity,
    params::ParamsEntry,
    proto::cuzk::v1 as pb,
};

use pb::srs_status::Tier;

/// GetStatus: devices, parameter sets, queues, totals, and the host memory held for partitions.
pub(crate) fn status(e: &Engine) -> Result<pb::GetStatusResponse> {
    let gpus = e
        .devices()
        .into_iter()
        .filter(|d| e.is_first_device(d.index as usize))
        .map(|d| {
            let i = d.index as usize;
            let mem = e
                .device_backend(i)
                .and_then(|b| b.memory_info().ok())
                .unwrap_or_default();
            let (job, kind) = e.device_jobs(i).into_iter().next().unwrap_or_default();
            pb::GpuStatus {
                ordinal: d.index,
                name: format!("{} ({})", d.name, d.backend),
                vram_total_bytes: mem.total,
                vram_free_bytes: mem.free,
                current_job_id: if kind.is_empty() && job == 0 {
                    String::new()
                } else {
                    job.to_string()
                },
                current_proof_kind: kind,
            }
        })
        .collect();
    let loaded_srs = e
        .params()
        .entries()
        .iter()
        .map(|entry| srs(e, entry))
        .collect();
    let queues = e
        .jobs_by_kind()?
        .into_iter()
        .map(|(proof_kind, pending, in_progress)| pb::QueueStatus {
            proof_kind,
            pending,
            in_progress,
        })
        .collect();
    let (held, limit) = e.partition_memory();
    Ok(pb::GetStatusResponse {
        gpus,
        loaded_srs,
        queues,
        total_proofs_completed: e.metrics().jobs_finished("done"),
        total_proofs_failed: e.metrics().jobs_finished("failed"),
        uptime_seconds: e.uptime().as_secs(),
        pinned_memory_bytes: held,
        pinned_memory_limit_bytes: limit,
    })
}

/// One parameter set: on a device (HOT, the bytes of its points there), decoded in host memory
/// only (WARM, its decoded bytes), or known and on disk (COLD, the file's size).
fn srs(e: &Engine, entry: &ParamsEntry) -> pb::SrsStatus {
    let (users, device_bytes) = e.params_on_devices(entry);
    let (tier, size_bytes) = if device_bytes > 0 {
        (Tier::Hot, device_bytes)
    } else if entry.is_loaded() {
        (Tier::Warm, entry.shape.decoded_bytes)
    } else {
        (Tier::Cold, entry.shape.file_bytes)
    };
    pb::SrsStatus {
        circuit_id: circuit_name(&entry.path),
        tier: tier as i32,
        size_bytes,
        ref_count: u32::try_from(users).unwrap_or(u32::MAX),
    }
}

/// The cuzk circuit id of a parameters file when it is one of Filecoin's, else its file name.
fn circuit_name(path: &Path) -> String {
    #[cfg(feature = "filecoin")]
    if let Some(id) = crate::filecoin::circuit_of_file(path) {
        return id;
    }
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The parameters file of `circuit_id`: a cuzk circuit id (`porep-32g`, `winning-2k`, ...)
/// found under filecoin-proofs' name in the daemon's parameter folders, or a parameters file's
/// path (inside them).
fn params_file(e: &Engine, circuit_id: &str) -> Result<PathBuf> {
    if circuit_id.contains('/') {
        return Ok(PathBuf::from(circuit_id));
    }
    #[cfg(feature = "filecoin")]
    {
        let (_, proof) = crate::filecoin::circuit(circuit_id)?;
        crate::filecoin::params_file(proof, e.params().dirs())
    }
    #[cfg(not(feature = "filecoin"))]
    {
        let _ = e;
        Err(ServeError::Unsupported(format!(
            "circuit {circuit_id:?}: {}",
            crate::job::NO_FILECOIN
        )))
    }
}

/// PreloadSRS: the circuit's parameters made resident on every device (not on fallbacks).
pub(crate) fn preload(
    e: &Engine,
    circuit_id: &str,
    who: &Identity,
) -> Result<pb::PreloadSrsResponse> {
    let path = params_file(e, circuit_id)?;
    let firsts: Vec<usize> = (0..e.devices().len())
        .filter(|&d| e.is_first_device(d))
        .collect();
    let already_loaded = e
        .params()
        .digest_of_path(&path)
        .and_then(|d| e.params().entries().into_iter().find(|x| x.digest == d))
        .is_some_and(|entry| firsts.iter().all(|&d| entry.is_resident_on(d)));
    let t = Instant::now();
    let entry = e.preload(&path, false, Some(who))?;
    if !firsts.iter().any(|&d| entry.is_resident_on(d)) {
        return Err(ServeError::Busy(format!(
            "the parameters of {circuit_id} do not fit what is left of any device's memory \
             budget (--device-memory-budget)"
        )));
    }
    Ok(pb::PreloadSrsResponse {
        already_loaded,
        load_time_ms: if already_loaded {
            0
        } else {
            t.elapsed().as_millis() as u64
        },
    })
}

/// EvictSRS: the circuit's parameters dropped from every device and from host memory (freed
/// once no partition in flight holds them). `freed_bytes`: what its points took on the devices
/// and its decoded copy on the host.
pub(crate) fn evict(e: &Engine, circuit_id: &str, who: &Identity) -> Result<pb::EvictSrsResponse> {
    let path = params_file(e, circuit_id)?;
    let Some(entry) = e
        .params()
        .digest_of_path(&path)
        .and_then(|d| e.params().entries().into_iter().find(|x| x.digest == d))
    else {
        return Ok(pb::EvictSrsResponse::default());
    };
    let (_, device_bytes) = e.params_on_devices(&entry);
    let host_bytes = if entry.is_loaded() {
        entry.shape.decoded_bytes
    } else {
        0
    };
    e.evict(&entry.digest, Some(who))?;
    Ok(pb::EvictSrsResponse {
        was_loaded: device_bytes + host_bytes > 0,
        freed_bytes: device_bytes + host_bytes,
    })
}
