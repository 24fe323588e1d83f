//! What a job's first partitions need, made ready ahead of them: host memory for their blocks,
//! and the parameters on the first device.

use std::{
    sync::{mpsc, Arc},
    time::Instant,
};

use bellows_core::groth16::prover::{proofs_host_blocks, QueryLens};

use super::{workers, ParamsEntry, Shared};
use crate::error::Result;

/// Parameters to load onto device `device` (the first that is not a fallback) ahead of a job's
/// partitions, with the job's check.
pub(crate) struct KeyAhead {
    entry: Arc<ParamsEntry>,
    curve_only: bool,
    device: usize,
}

/// Loads the parameters asked for by [`Shared::load_key_ahead`], one at a time, until the
/// engine shuts down (its shutdown drops the sender).
pub(crate) fn keys_ahead_loop(s: &Shared, rx: &mpsc::Receiver<KeyAhead>) {
    for ahead in rx {
        if s.shutdown.load(std::sync::atomic::Ordering::SeqCst) {
            break;
        }
        let KeyAhead {
            entry,
            curve_only,
            device: d,
        } = ahead;
        // Asked for again while an earlier request loaded it.
        if entry.is_resident_on(d) {
            continue;
        }
        let t = Instant::now();
        match s.make_resident(&entry, curve_only, d) {
            Ok(true) => tracing::info!(
                "parameters {} made resident on {} ahead of their job's partitions in {:.2?}",
                entry.path.display(),
                s.devices[d].spec.label,
                t.elapsed()
            ),
            Ok(false) => tracing::debug!(
                "parameters {} not loaded ahead: they do not fit what is left of {}'s budget now",
                entry.path.display(),
                s.devices[d].spec.label
            ),
            // The job's device phase meets the error again and reports it.
            Err(e) => tracing::warn!(
                "loading parameters {} ahead of their job's partitions: {e}",
                entry.path.display()
            ),
        }
        s.update_gauges();
    }
}

impl Shared {
    /// Makes the first device's host memory ready, in the background, for the partitions of
    /// a job's shape the engine holds at once (a paced job's two per device, else what the byte
    /// budget and the workers take, at most `partitions`), once per shape: a device backend pins
    /// them while the job waits for its parameters and recording, instead of declining the
    /// first requests (the heap then) and pinning on the second, on the path of the first
    /// proofs. Only pre-compiled synthesis writes into lent memory, so only with a PCE folder.
    pub(super) fn reserve_host_ahead(
        &self,
        entry: &ParamsEntry,
        bytes: u64,
        paced: bool,
        partitions: u32,
    ) {
        let Some(device) = self.devices.first() else {
            return;
        };
        let shape = &entry.shape;
        if self.cfg.pce_dir.is_none()
            || !self
                .host_reserved
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert((shape.domain_size, shape.num_aux))
        {
            return;
        }
        let fit = (self.budget.capacity() / bytes.max(1)).max(1);
        let workers = self.cfg.synthesis_workers as u64
            + self
                .devices
                .iter()
                .map(|d| d.spec.workers as u64)
                .sum::<u64>();
        let count = if paced {
            fit.min(workers::PACED_PER_DEVICE * self.first_devices().max(1) as u64)
        } else {
            fit.min(workers)
        }
        .min(u64::from(partitions).max(1));
        let sizes = proofs_host_blocks(&QueryLens::from(shape), count as usize);
        let backend = device.spec.backend.clone();
        let label = device.spec.label.clone();
        let log_domain = shape.domain_size.trailing_zeros();
        let spawned = std::thread::Builder::new()
            .name("bellows-host-ahead".into())
            .spawn(move || {
                let t = Instant::now();
                match backend.reserve_host(&sizes) {
                    Ok(()) => tracing::debug!(
                        "device {label}: host memory for {count} partition(s) of a \
                         2^{log_domain} domain made ready ahead in {:.2?}",
                        t.elapsed()
                    ),
                    Err(e) => tracing::warn!(
                        "device {label}: reserving host memory ahead of the partitions: {e}"
                    ),
                }
            });
        if let Err(e) = spawned {
            tracing::warn!("reserving host memory ahead of the partitions: {e}");
        }
    }

    /// Asks for `entry` to be loaded onto the first device in the background when that device
    /// is an accelerator (its key is read from the file straight onto it) that does not hold
    /// it yet: the load (a 32 GiB PoRep's: docs/benchmarks.md, "32 GiB PoRep C2") then
    /// overlaps the recording's load and the first partitions' synthesis, where the device
    /// phase would start it only once the first partition is synthesised. The device phase
    /// that needs the key waits for this load (one load at a time per file).
    pub(super) fn load_key_ahead(&self, entry: &Arc<ParamsEntry>, curve_only: bool) {
        let Some((d, dev)) = self
            .devices
            .iter()
            .enumerate()
            .find(|(_, d)| !d.spec.fallback)
        else {
            return;
        };
        if !dev.spec.backend.info().capabilities.accelerator || entry.is_resident_on(d) {
            return;
        }
        let sender = self.keys_ahead.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = sender.as_ref() {
            let _ = tx.send(KeyAhead {
                entry: entry.clone(),
                curve_only,
                device: d,
            });
        }
    }

    /// Ends the keys-ahead thread after the load in progress (the engine's shutdown).
    pub(super) fn stop_keys_ahead(&self) {
        drop(
            self.keys_ahead
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take(),
        );
    }

    /// Makes `entry` resident on device `d` as a partition's device phase would, its points
    /// counted against the device's memory budget (idle parameters evicted to make room).
    /// `Ok(false)` when they do not fit what is left of the budget now.
    pub(crate) fn make_resident(
        &self,
        entry: &Arc<ParamsEntry>,
        curve_only: bool,
        d: usize,
    ) -> Result<bool> {
        let Some(evict) = self.lock_sched().mem[d].try_reserve(entry, 0) else {
            return Ok(false);
        };
        for e in &evict {
            self.params.evict_device(e, d);
        }
        let dev = &self.devices[d];
        let key = self
            .params
            .key(entry, curve_only, d, &dev.spec.backend, dev.spec.g2);
        self.lock_sched().mem[d].release(&entry.digest, 0);
        key.map(|_| true)
    }
}
