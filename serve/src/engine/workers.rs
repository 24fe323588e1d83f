//! The engine's threads: synthesis workers, device workers and finalisers.

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    sync::{atomic::Ordering, mpsc, Arc, Mutex},
    time::Instant,
};

use bellows_core::{
    error::panic_message,
    groth16::{prover, synthesis::synthesize, PendingProofs},
    pce::{
        cache::{builtin_id, PceCache},
        Pce,
    },
    pipeline::partition_rng,
    Error,
};
use prost::Message;

use super::{
    queue::{Ready, Taken, Waiting},
    Event, JobRt, Shared,
};
use crate::{
    job::{encode_inputs, JobKind},
    proto::PartitionTimings,
    store::{JobState, PartitionRecord},
};

/// A partition whose device part is done, on its way to a finaliser.
pub(crate) struct Finishing {
    w: Waiting,
    inputs: Vec<blstrs::Scalar>,
    pending: PendingProofs,
    device: usize,
    timings: PartitionTimings,
}

/// Fails `job` for an error of its partition `index` (an error of the job itself, which
/// another device would meet too).
fn fail_job(s: &Shared, job: &Arc<JobRt>, index: u32, e: &dyn std::fmt::Display) {
    s.metrics.error("job");
    s.finish(
        job,
        JobState::Failed,
        Some(format!("partition {index}: {e}")),
    );
}

/// Whether an error of a device call is the device's fault (worth trying elsewhere), as opposed
/// to the job's (which fails the same way everywhere).
fn is_device_fault(e: &Error) -> bool {
    matches!(
        e,
        Error::OutOfMemory { .. }
            | Error::Device { .. }
            | Error::Backend { .. }
            | Error::Plugin { .. }
            | Error::Unsupported { .. }
            | Error::Pipeline(_)
    )
}

/// The pre-compiled constraint system for a job's circuit (recorded or loaded once per circuit).
fn pce_for(s: &Shared, job: &JobRt) -> Option<Result<Arc<Pce>, String>> {
    let dir = s.cfg.pce_dir.as_ref()?;
    let id = match &job.spec.kind {
        JobKind::Builtin(circuit) => builtin_id(circuit),
        #[cfg(feature = "filecoin")]
        JobKind::Filecoin(f) => f.pce_id(),
    };
    let cell = s
        .pces
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(id.clone())
        .or_default()
        .clone();
    Some(
        cell.get_or_init(|| {
            let cache = PceCache::new(dir.clone());
            // A cache entry that is not a regular file (a FIFO, a link to a device) is refused
            // without being opened, whatever circuit it is for.
            cache
                .path(&id)
                .and_then(|p| crate::files::regular_or_absent(&p, "cache entry"))
                .map_err(|e| e.to_string())?;
            match &job.spec.kind {
                JobKind::Builtin(circuit) => cache
                    .load_or_record(circuit.blank(), &id)
                    .map(|(p, _)| Arc::new(p))
                    .map_err(|e| e.to_string()),
                #[cfg(feature = "filecoin")]
                JobKind::Filecoin(f) => f.record(dir).map_err(|e| e.to_string()),
            }
        })
        .clone(),
    )
}

/// How many partitions of a paced job (one whose witness runs on every core) each device has
/// in flight at most: one on it, the next being synthesised.
pub(crate) const PACED_PER_DEVICE: u64 = 2;

/// Synthesis worker: takes the highest-priority partition whose bytes fit the budget (a paced
/// job's only while it holds fewer than two per device), synthesises it and queues it for the
/// devices. An `urgent` worker takes CRITICAL partitions only.
pub(crate) fn synthesis_loop(s: &Shared, urgent: bool) {
    let devices = s.first_devices();
    loop {
        let (w, reserved) = {
            let mut q = s.lock_sched();
            loop {
                if s.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(next) = q.next() {
                    let may = (!urgent || next.priority == crate::cuzk::CRITICAL)
                        && (!next.paced || q.paced_fits(next.bytes, devices, PACED_PER_DEVICE));
                    if may && s.budget.try_acquire(next.bytes) {
                        // Read under the lock: exactly what is reserved with this partition.
                        break (q.pop_waiting().expect("peeked"), s.budget.reserved());
                    }
                }
                q = s.syn_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let job = w.job.clone();
        s.emit(Event::SynthesisStarted {
            job: job.id,
            partition: w.index,
            reserved,
        });
        s.update_gauges();
        let queued_s = w.queued_at.elapsed().as_secs_f64();
        if job.snapshot().state == JobState::Queued {
            if let Err(e) = s.store.mark_running(job.id) {
                tracing::warn!("job {}: journaling its start failed: {e}", job.id);
            }
            s.set_progress(&job, |p| {
                if p.state == JobState::Queued {
                    p.state = JobState::Running;
                }
            });
        }
        let t = Instant::now();
        let mut params_s = 0.0;
        let result = catch_unwind(AssertUnwindSafe(|| -> Result<_, String> {
            // The parameters are decoded by the first partition that needs them (into host
            // memory only for devices that compute there; a device backend's key is loaded
            // from the file when its device phase first needs it).
            if s.decode_ahead {
                let tp = Instant::now();
                s.params
                    .params(&job.params, job.spec.curve_only)
                    .map_err(|e| e.to_string())?;
                params_s = tp.elapsed().as_secs_f64();
            }
            let pce = pce_for(s, &job)
                .transpose()
                .map_err(|e| format!("pre-compiled constraint system: {e}"))?;
            // Into the first device's host memory (pinned on a device backend).
            let host = s.devices.first().map(|d| &d.spec.backend);
            let synthesized = match &job.spec.kind {
                JobKind::Builtin(c) => {
                    let circuit = c.with_witness(job.spec.partition_witness_seed(w.index));
                    match &pce {
                        Some(p) => p.synthesize_for(circuit, host),
                        None => synthesize(circuit),
                    }
                }
                #[cfg(feature = "filecoin")]
                JobKind::Filecoin(f) => f.synthesize(w.index, pce.as_deref(), host),
            }
            .map_err(|e| e.to_string())?;
            Ok(synthesized)
        }))
        .unwrap_or_else(|p| Err(format!("synthesis panicked: {}", panic_message(&*p))));
        let synthesis_s = (t.elapsed().as_secs_f64() - params_s).max(0.0);
        s.metrics.phase("queued", queued_s);
        s.metrics.phase("params", params_s);
        s.metrics.phase("synthesis", synthesis_s);
        match result {
            Ok(synthesized) => {
                let inputs = synthesized.public_inputs().to_vec();
                let partition = w.index;
                let mut q = s.lock_sched();
                if job.stopped.load(Ordering::SeqCst) {
                    drop(q);
                    s.release_partition(&job);
                } else {
                    q.push_ready(Ready {
                        w,
                        synthesized,
                        inputs,
                        synthesis_s,
                        queued_s,
                        params_s,
                    });
                    drop(q);
                    s.dev_cv.notify_all();
                }
                // After the partition is on the ready list (or released): an observer that acts
                // on this event (a test cancelling the job) finds it where it will stay.
                s.emit(Event::SynthesisDone {
                    job: job.id,
                    partition,
                });
            }
            Err(e) => {
                s.release_partition(&job);
                fail_job(s, &job, w.index, &e);
            }
        }
        s.update_gauges();
    }
}

/// Device worker of device `d`: takes synthesised partitions it may run (an `urgent` worker:
/// CRITICAL ones only), runs the device part of the proof, and hands the pending proof to the
/// finalisers (never waiting for them).
pub(crate) fn device_loop(s: &Shared, d: usize, fin: &mpsc::Sender<Finishing>, urgent: bool) {
    let dev = &s.devices[d];
    loop {
        let taken = {
            let mut q = s.lock_sched();
            loop {
                if s.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(t) = q.pop_ready(d, dev.spec.fallback, urgent) {
                    break t;
                }
                let due = match s.cfg.idle_trim {
                    Some(after) => dev.trim_due(after),
                    None => Err(None),
                };
                match due {
                    Ok(()) => {
                        // Idle long enough since it proved: return the pools' cached memory,
                        // outside the scheduler's lock (the backend waits for any call in
                        // flight). One worker of the device does it per idle spell.
                        drop(q);
                        let error = dev.spec.backend.trim().err().map(|e| e.to_string());
                        if let Some(e) = &error {
                            tracing::warn!(device = d, "trimming the backend's pools: {e}");
                        }
                        s.emit(Event::DeviceTrimmed { device: d, error });
                        q = s.lock_sched();
                    }
                    Err(None) => q = s.dev_cv.wait(q).unwrap_or_else(|e| e.into_inner()),
                    Err(Some(left)) => {
                        q = s
                            .dev_cv
                            .wait_timeout(q, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0
                    }
                }
            }
        };
        let Taken {
            ready:
                Ready {
                    w,
                    synthesized,
                    inputs,
                    synthesis_s,
                    queued_s,
                    params_s,
                },
            evict,
            device_reserved,
        } = taken;
        let job = w.job.clone();
        s.emit(Event::DeviceReserved {
            job: job.id,
            partition: w.index,
            device: d,
            reserved: device_reserved,
        });
        // Points given up for this partition leave the device before its own are loaded.
        for e in &evict {
            s.params.evict_device(e, d);
        }
        s.update_gauges();
        if job.stopped.load(Ordering::SeqCst) {
            s.release_device(d, &job);
            s.release_partition(&job);
            continue;
        }
        s.emit(Event::DeviceStarted {
            job: job.id,
            partition: w.index,
            device: d,
        });
        dev.enter(job.id);
        let t = Instant::now();
        let mut key_s = 0.0;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let tk = Instant::now();
            let key = s
                .params
                .key(
                    &job.params,
                    job.spec.curve_only,
                    d,
                    &dev.spec.backend,
                    dev.spec.g2,
                )
                .map_err(|e| match e {
                    crate::error::ServeError::Core(c) => c,
                    other => Error::Pipeline(other.to_string()),
                })?;
            key_s = tk.elapsed().as_secs_f64();
            let mut rng = partition_rng(job.spec.seed, u64::from(w.index), 0);
            prover::start(&key, vec![synthesized], &mut rng)
        }))
        .unwrap_or_else(|p| {
            Err(Error::Device {
                device: dev.spec.label.clone(),
                reason: format!("panic: {}", panic_message(&*p)),
            })
        });
        let device_s = (t.elapsed().as_secs_f64() - key_s).max(0.0);
        s.release_device(d, &job);
        let busy = dev.leave(job.id);
        s.metrics.device_busy(&dev.spec.label, busy);
        s.emit(Event::DeviceDone {
            job: job.id,
            partition: w.index,
            device: d,
            ok: result.is_ok(),
        });
        match result {
            Ok(pending) => {
                if key_s > 0.0 {
                    s.metrics.phase("params", key_s);
                }
                let timings = PartitionTimings {
                    queued_s,
                    synthesis_s,
                    g1_phase_s: device_s,
                    device: d as u32,
                    attempts: w.attempt + 1,
                    params_s: params_s + key_s,
                    ..Default::default()
                };
                // The finalisers outlive the device workers; a send fails only at shutdown.
                if let Err(mpsc::SendError(f)) = fin.send(Finishing {
                    w,
                    inputs,
                    pending,
                    device: d,
                    timings,
                }) {
                    s.release_partition(&f.w.job);
                    return;
                }
            }
            Err(e) => {
                s.release_partition(&job);
                dev.errors.fetch_add(1, Ordering::Relaxed);
                if is_device_fault(&e) {
                    retry(s, w, d, &e);
                } else {
                    fail_job(s, &job, w.index, &e);
                }
            }
        }
    }
}

/// Queues a partition that failed on device `d` again, for another device; fails its job when
/// no device is left or the attempts are spent.
fn retry(s: &Shared, w: Waiting, d: usize, e: &Error) {
    let job = w.job.clone();
    s.metrics.error("device");
    let excluded = w.excluded | (1u64 << d);
    let attempt = w.attempt + 1;
    // A device it has not failed on, whose memory budget admits it at all.
    let someone_left = {
        let q = s.lock_sched();
        (0..s.devices.len()).any(|i| {
            excluded & (1u64 << i) == 0
                && q.mem[i].admits_alone(&job.params, job.bytes_per_partition)
        })
    };
    if attempt >= s.cfg.max_attempts || !someone_left {
        s.finish(
            &job,
            JobState::Failed,
            Some(format!(
                "partition {}: failed on {attempt} device(s), last on {}: {e}",
                w.index, s.devices[d].spec.label
            )),
        );
        return;
    }
    tracing::warn!(
        "job {} partition {}: {} failed ({e}); retrying on another device (attempt {})",
        job.id,
        w.index,
        s.devices[d].spec.label,
        attempt + 1
    );
    s.metrics.retry();
    s.emit(Event::Retry {
        job: job.id,
        partition: w.index,
        failed_device: d,
        error: e.to_string(),
    });
    if !job.stopped.load(Ordering::SeqCst) {
        s.lock_sched().push_waiting(job, w.index, attempt, excluded);
        s.syn_cv.notify_all();
    }
}

/// Finaliser: joins a partition's G2 MSM, assembles and journals its proof, releases its bytes,
/// and finishes the job with its last partition.
pub(crate) fn finalise_loop(s: &Shared, rx: &Mutex<mpsc::Receiver<Finishing>>) {
    loop {
        let next = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok(f) = next else { return };
        let job = f.w.job.clone();
        let t = Instant::now();
        let result =
            catch_unwind(AssertUnwindSafe(|| f.pending.finalize_timed())).unwrap_or_else(|p| {
                Err(Error::Pipeline(format!(
                    "finalize panicked: {}",
                    panic_message(&*p)
                )))
            });
        s.release_partition(&job);
        let (mut proofs, pt) = match result {
            Ok(v) => v,
            Err(e) => {
                fail_job(s, &job, f.w.index, &e);
                continue;
            }
        };
        if job.stopped.load(Ordering::SeqCst) {
            continue;
        }
        let proof = proofs.remove(0);
        let mut timings = f.timings;
        timings.msm_g2_s = pt.msm_g2.as_secs_f64();
        timings.finalize_s = t.elapsed().as_secs_f64();
        timings.total_s = job.submitted.elapsed().as_secs_f64();
        let dev = &s.devices[f.device];
        dev.partitions.fetch_add(1, Ordering::Relaxed);
        s.metrics.partition_proved(&dev.spec.label);
        s.metrics.phase("g1_phase", timings.g1_phase_s);
        s.metrics.phase("msm_g2", timings.msm_g2_s);
        s.metrics.phase("finalize", timings.finalize_s);
        s.metrics.phase("total", timings.total_s);
        let rec = PartitionRecord {
            job: job.id,
            index: f.w.index,
            proof: proof.to_bytes().to_vec(),
            inputs: encode_inputs(&f.inputs),
            timings: timings.encode_to_vec(),
        };
        // Every proof is checked before it is stored (a fleet's store finishes the job in the
        // transaction that commits its last partition, so this is its last check there).
        if let Err(e) = check_proofs(s, &job, Some(&rec)) {
            fail_job(s, &job, f.w.index, &e);
            continue;
        }
        if s.fleet.is_some() {
            // A fleet's store takes it under this node's claim (engine/fleet.rs).
            super::fleet::commit(s, &job, rec, f.device);
            s.update_gauges();
            continue;
        }
        match s.store.put_partition(&rec) {
            Ok(true) => {}
            Ok(false) => continue, // stored before (never counted twice)
            Err(e) => {
                s.metrics.error("store");
                s.finish(
                    &job,
                    JobState::Failed,
                    Some(format!("journaling partition {}: {e}", f.w.index)),
                );
                continue;
            }
        }
        s.emit(Event::PartitionDone {
            job: job.id,
            partition: f.w.index,
            device: f.device,
        });
        let mut all_done = false;
        s.set_progress(&job, |p| {
            p.done += 1;
            all_done = p.done >= p.total;
        });
        if all_done {
            match check_proofs(s, &job, None) {
                Ok(()) => s.finish(&job, JobState::Done, None),
                Err(e) => {
                    s.metrics.error("job");
                    s.finish(&job, JobState::Failed, Some(e));
                }
            }
        }
        s.update_gauges();
    }
}

/// The check every proof passes before it is returned: verified against the verifying key of
/// the job's parameters (a few pairings; a PoRep C2 partition against the proof type's key and
/// the public inputs storage-proofs-porep generates, as `bellows porep c2` and filecoin-proofs
/// check). `part` alone before it is stored, or (`None`) every stored partition of the job
/// before it is reported done. A proof that does not verify (parameters of another circuit
/// with the same shape, a damaged pre-compiled constraint system) fails the job instead of
/// being returned. Benchmark-only parameters make proofs that never verify: they are returned
/// unchecked, with a warning.
pub(crate) fn check_proofs(
    s: &Shared,
    job: &JobRt,
    part: Option<&PartitionRecord>,
) -> Result<(), String> {
    let t = Instant::now();
    let stored;
    let parts: &[PartitionRecord] = match part {
        Some(p) => std::slice::from_ref(p),
        None => {
            stored = s.store.partitions(job.id).map_err(|e| e.to_string())?;
            &stored
        }
    };
    let refused = |e: String| format!("the proof does not verify, so it is not returned: {e}");
    match &job.spec.kind {
        JobKind::Builtin(_) => {
            let pvk = s
                .params
                .verifying_key(&job.params, job.spec.curve_only)
                .map_err(|e| e.to_string())?;
            if pvk.kind() == bellows_core::groth16::ParamsKind::BenchmarkOnly {
                tracing::warn!(
                    "job {}: benchmark-only parameters: its proofs never verify and are returned \
                     unchecked",
                    job.id
                );
                return Ok(());
            }
            crate::verify::verify_records(&pvk, parts).map_err(refused)?;
        }
        #[cfg(feature = "filecoin")]
        JobKind::Filecoin(f) => {
            // The folder's `.vk`, else the parameters' own key (read alone from the file).
            let own = || s.params.vk(&job.params, job.spec.curve_only);
            match part {
                Some(rec) => f.verify_partition(rec, &own),
                None => f.verify(parts, &own).map(|_| ()),
            }
            .map_err(|e| refused(e.to_string()))?;
        }
    }
    tracing::info!(
        "job {}: {} partition proof(s) verified in {:.1} ms",
        job.id,
        parts.len(),
        t.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}
