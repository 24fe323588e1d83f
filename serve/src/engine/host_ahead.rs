//! Host memory made ready ahead of a job's first partitions.

use std::time::Instant;

use bellows_core::groth16::prover::{proofs_host_blocks, QueryLens};

use super::{workers, ParamsEntry, Shared};

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
}
