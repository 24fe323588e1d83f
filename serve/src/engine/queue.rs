//! The engine's two queues: partitions waiting for synthesis (a priority heap) and synthesised
//! partitions waiting for a device (a short list, bounded by the byte budget).

use std::{
    cmp::Ordering as CmpOrdering,
    collections::BinaryHeap,
    sync::{atomic::Ordering, Arc},
    time::Instant,
};

use bellows_core::groth16::synthesis::Synthesized;
use blstrs::Scalar;

use super::{device_mem::DeviceMem, JobRt};
use crate::{params::ParamsEntry, store::JobId};

/// A partition to synthesise.
pub(crate) struct Waiting {
    pub(crate) job: Arc<JobRt>,
    pub(crate) index: u32,
    /// Attempts so far (0 the first time).
    pub(crate) attempt: u32,
    /// Devices it failed on (bit i: device i).
    pub(crate) excluded: u64,
    pub(crate) seq: u64,
    pub(crate) queued_at: Instant,
}

impl Waiting {
    fn key(&self) -> (i32, std::cmp::Reverse<u64>) {
        (self.job.spec.priority, std::cmp::Reverse(self.seq))
    }
}

impl PartialEq for Waiting {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Waiting {}
impl PartialOrd for Waiting {
    fn partial_cmp(&self, o: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(o))
    }
}
impl Ord for Waiting {
    /// Higher priority first, then the earlier submission.
    fn cmp(&self, o: &Self) -> CmpOrdering {
        self.key().cmp(&o.key())
    }
}

/// A synthesised partition waiting for a device; its bytes are reserved.
pub(crate) struct Ready {
    pub(crate) w: Waiting,
    pub(crate) synthesized: Synthesized,
    pub(crate) inputs: Vec<Scalar>,
    pub(crate) synthesis_s: f64,
    pub(crate) queued_s: f64,
    /// Waiting for (or doing) the parameters' decoding before synthesis.
    pub(crate) params_s: f64,
}

/// A synthesised partition a device worker took, with what its device holds now.
pub(crate) struct Taken {
    pub(crate) ready: Ready,
    /// Parameters whose points the device gives up for it (their keys there are dropped).
    pub(crate) evict: Vec<Arc<ParamsEntry>>,
    /// Bytes the device holds now, this partition included.
    pub(crate) device_reserved: u64,
}

/// The next partition to synthesise, as a synthesis worker weighs it.
pub(crate) struct Next {
    /// Its host bytes.
    pub(crate) bytes: u64,
    /// Its job's priority.
    pub(crate) priority: i32,
    /// Its job holds at most two partitions per device at once ([`Sched::paced_fits`]).
    pub(crate) paced: bool,
}

/// Both queues (under one lock, with the budgets' reservations: the host's, and each device's
/// in `mem`, one per engine device).
#[derive(Default)]
pub(crate) struct Sched {
    waiting: BinaryHeap<Waiting>,
    ready: Vec<Ready>,
    seq: u64,
    pub(crate) mem: Vec<DeviceMem>,
    /// Host bytes held by partitions of paced jobs, from synthesis until they are released.
    paced_bytes: u64,
}

impl Sched {
    /// Empty queues, with the memory accounting of each device.
    pub(crate) fn with_devices(mem: Vec<DeviceMem>) -> Self {
        Self {
            mem,
            ..Self::default()
        }
    }

    pub(crate) fn push_waiting(
        &mut self,
        job: Arc<JobRt>,
        index: u32,
        attempt: u32,
        excluded: u64,
    ) {
        self.seq += 1;
        self.waiting.push(Waiting {
            job,
            index,
            attempt,
            excluded,
            seq: self.seq,
            queued_at: Instant::now(),
        });
    }

    /// Drops stopped jobs' partitions from the top of the heap.
    fn skip_stopped(&mut self) {
        while self
            .waiting
            .peek()
            .is_some_and(|w| w.job.stopped.load(Ordering::SeqCst))
        {
            self.waiting.pop();
        }
    }

    /// The next partition to synthesise, if any.
    pub(crate) fn next(&mut self) -> Option<Next> {
        self.skip_stopped();
        self.waiting.peek().map(|w| Next {
            bytes: w.job.bytes_per_partition,
            priority: w.job.spec.priority,
            paced: w.job.paced,
        })
    }

    /// Whether a paced partition of `bytes` may start: the paced partitions held stay within
    /// `per_device` partitions of that size on each of `devices` devices (one alone always
    /// may).
    pub(crate) fn paced_fits(&self, bytes: u64, devices: usize, per_device: u64) -> bool {
        self.paced_bytes == 0
            || self.paced_bytes + bytes <= bytes.saturating_mul(per_device * devices.max(1) as u64)
    }

    /// Takes the next partition to synthesise (after [`Sched::next`] said it may go), counting
    /// a paced one's bytes.
    pub(crate) fn pop_waiting(&mut self) -> Option<Waiting> {
        self.skip_stopped();
        let w = self.waiting.pop()?;
        if w.job.paced {
            self.paced_bytes += w.job.bytes_per_partition;
        }
        Some(w)
    }

    /// Gives back what [`Sched::pop_waiting`] counted for a partition of `job`.
    pub(crate) fn unpace(&mut self, job: &JobRt) {
        if job.paced {
            self.paced_bytes = self.paced_bytes.saturating_sub(job.bytes_per_partition);
        }
    }

    pub(crate) fn push_ready(&mut self, r: Ready) {
        // Keep the list ordered: higher priority, then earlier.
        let pos = self
            .ready
            .iter()
            .position(|x| x.w < r.w)
            .unwrap_or(self.ready.len());
        self.ready.insert(pos, r);
    }

    /// Takes the first synthesised partition device `device` may run — not one that failed
    /// there, on a fallback device only partitions that failed elsewhere, for a worker of
    /// CRITICAL partitions (`urgent`) only those, and one that fits what is left of the device's
    /// memory budget — and reserves its device bytes.
    pub(crate) fn pop_ready(
        &mut self,
        device: usize,
        fallback: bool,
        urgent: bool,
    ) -> Option<Taken> {
        let mem = &mut self.mem[device];
        let (pos, evict) = self.ready.iter().enumerate().find_map(|(i, r)| {
            if r.w.excluded & (1u64 << device) != 0 || (fallback && r.w.attempt == 0) {
                return None;
            }
            if urgent && r.w.job.spec.priority != crate::cuzk::CRITICAL {
                return None;
            }
            let job = &r.w.job;
            mem.try_reserve(&job.params, job.bytes_per_partition)
                .map(|ev| (i, ev))
        })?;
        let device_reserved = mem.reserved();
        Some(Taken {
            ready: self.ready.remove(pos),
            evict,
            device_reserved,
        })
    }

    /// Returns the device bytes of a partition of `job` that was on device `device`.
    pub(crate) fn release_device(&mut self, device: usize, job: &JobRt) {
        self.mem[device].release(&job.params.digest, job.bytes_per_partition);
    }

    /// Removes every queued partition of `job`; returns the bytes of the synthesised ones (to be
    /// released).
    pub(crate) fn remove_job(&mut self, job: JobId) -> u64 {
        self.waiting.retain(|w| w.job.id != job);
        let mut freed = 0;
        let mut paced = 0;
        self.ready.retain(|r| {
            let keep = r.w.job.id != job;
            if !keep {
                freed += r.w.job.bytes_per_partition;
                if r.w.job.paced {
                    paced += r.w.job.bytes_per_partition;
                }
            }
            keep
        });
        self.paced_bytes = self.paced_bytes.saturating_sub(paced);
        freed
    }

    pub(crate) fn waiting_len(&self) -> usize {
        self.waiting.len()
    }

    pub(crate) fn ready_len(&self) -> usize {
        self.ready.len()
    }
}
