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
        JobKind::Porep(p) => p.pce_id(),
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
            match &job.spec.kind {
                JobKind::Builtin(circuit) => PceCache::new(dir.clone())
                    .load_or_record(circuit.blank(), &id)
                    .map(|(p, _)| Arc::new(p)),
                #[cfg(feature = "filecoin")]
                JobKind::Porep(p) => p.record(dir),
            }
            .map_err(|e| e.to_string())
        })
        .clone(),
    )
}

/// Synthesis worker: takes the highest-priority partition whose bytes fit the budget,
/// synthesises it and queues it for the devices.
pub(crate) fn synthesis_loop(s: &Shared) {
    loop {
        let (w, reserved) = {
            let mut q = s.lock_sched();
            loop {
                if s.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(bytes) = q.next_bytes() {
                    if s.budget.try_acquire(bytes) {
                        // Read under the lock: exactly what is reserved with this partition.
                        break (q.pop_waiting().expect("peeked"), s.budget.reserved());
                    }
                }
                q = s.syn_cv.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        };
        let job = w.job.clone();
        let bytes = job.bytes_per_partition;
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
        let result = catch_unwind(AssertUnwindSafe(|| -> Result<_, String> {
            // The parameters are decoded by the first partition that needs them.
            s.params
                .params(&job.params, job.spec.curve_only)
                .map_err(|e| e.to_string())?;
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
                JobKind::Porep(p) => p.synthesize(w.index, pce.as_deref(), host),
            }
            .map_err(|e| e.to_string())?;
            Ok(synthesized)
        }))
        .unwrap_or_else(|p| Err(format!("synthesis panicked: {}", panic_message(&*p))));
        let synthesis_s = t.elapsed().as_secs_f64();
        s.metrics.phase("queued", queued_s);
        s.metrics.phase("synthesis", synthesis_s);
        match result {
            Ok(synthesized) => {
                let inputs = synthesized.public_inputs().to_vec();
                let partition = w.index;
                let mut q = s.lock_sched();
                if job.stopped.load(Ordering::SeqCst) {
                    drop(q);
                    s.release(bytes);
                } else {
                    q.push_ready(Ready {
                        w,
                        synthesized,
                        inputs,
                        synthesis_s,
                        queued_s,
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
                s.release(bytes);
                s.metrics.error("job");
                s.finish(
                    &job,
                    JobState::Failed,
                    Some(format!("partition {}: {e}", w.index)),
                );
            }
        }
        s.update_gauges();
    }
}

/// Device worker of device `d`: takes synthesised partitions it may run, runs the device part of
/// the proof, and hands the pending proof to the finalisers (never waiting for them).
pub(crate) fn device_loop(s: &Shared, d: usize, fin: &mpsc::Sender<Finishing>) {
    let dev = &s.devices[d];
    loop {
        let taken = {
            let mut q = s.lock_sched();
            loop {
                if s.shutdown.load(Ordering::SeqCst) {
                    return;
                }
                if let Some(t) = q.pop_ready(d, dev.spec.fallback) {
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
            s.release(job.bytes_per_partition);
            continue;
        }
        s.emit(Event::DeviceStarted {
            job: job.id,
            partition: w.index,
            device: d,
        });
        dev.enter();
        let t = Instant::now();
        let result = catch_unwind(AssertUnwindSafe(|| {
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
            let mut rng = partition_rng(job.spec.seed, u64::from(w.index), 0);
            prover::start(&key, vec![synthesized], &mut rng)
        }))
        .unwrap_or_else(|p| {
            Err(Error::Device {
                device: dev.spec.label.clone(),
                reason: format!("panic: {}", panic_message(&*p)),
            })
        });
        let device_s = t.elapsed().as_secs_f64();
        s.release_device(d, &job);
        let busy = dev.leave();
        s.metrics.device_busy(&dev.spec.label, busy);
        s.emit(Event::DeviceDone {
            job: job.id,
            partition: w.index,
            device: d,
            ok: result.is_ok(),
        });
        match result {
            Ok(pending) => {
                let timings = PartitionTimings {
                    queued_s,
                    synthesis_s,
                    g1_phase_s: device_s,
                    device: d as u32,
                    attempts: w.attempt + 1,
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
                    s.release(f.w.job.bytes_per_partition);
                    return;
                }
            }
            Err(e) => {
                s.release(job.bytes_per_partition);
                dev.errors.fetch_add(1, Ordering::Relaxed);
                if is_device_fault(&e) {
                    retry(s, w, d, &e);
                } else {
                    s.metrics.error("job");
                    s.finish(
                        &job,
                        JobState::Failed,
                        Some(format!("partition {}: {e}", w.index)),
                    );
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
        s.release(job.bytes_per_partition);
        let (mut proofs, pt) = match result {
            Ok(v) => v,
            Err(e) => {
                s.metrics.error("job");
                s.finish(
                    &job,
                    JobState::Failed,
                    Some(format!("partition {}: {e}", f.w.index)),
                );
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
        if s.fleet.is_some() {
            // A fleet's store finishes the job in the transaction that commits its last
            // partition, so what `check_proofs` checks at the end is checked here, partition by
            // partition, before the commit.
            if let Err(e) = check_proofs(s, &job, Some(&rec)) {
                s.metrics.error("job");
                s.finish(&job, JobState::Failed, Some(e));
                continue;
            }
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

/// The check a job's proofs pass before they are returned: a PoRep C2 job's partitions are
/// verified against the verifying key (as `bellows porep c2` and filecoin-proofs do), all of
/// them before the job is reported done (`part` None) or, in a fleet, whose store finishes the
/// job in the transaction that commits its last partition, `part` alone before it is
/// committed. Built-in jobs have none.
fn check_proofs(s: &Shared, job: &JobRt, part: Option<&PartitionRecord>) -> Result<(), String> {
    match &job.spec.kind {
        JobKind::Builtin(_) => {
            let _ = (s, part);
            Ok(())
        }
        #[cfg(feature = "filecoin")]
        JobKind::Porep(p) => {
            let t = Instant::now();
            let params = s
                .params
                .params(&job.params, job.spec.curve_only)
                .map_err(|e| e.to_string())?;
            let checked = match part {
                Some(rec) => p.verify_partition(rec, &params.vk).map(|()| 1),
                None => s
                    .store
                    .partitions(job.id)
                    .and_then(|parts| p.verify(&parts, &params.vk).map(|_| parts.len())),
            }
            .map_err(|e| format!("the proof does not verify, so it is not returned: {e}"))?;
            tracing::info!(
                "job {}: {} partition proof(s) of {} verified in {:.2} s",
                job.id,
                checked,
                p.proof_name(),
                t.elapsed().as_secs_f64()
            );
            Ok(())
        }
    }
}
