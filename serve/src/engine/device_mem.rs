//! Per-device memory budgets: what each device holds, and whether a partition may go there.
//!
//! A device with a budget (`--device-memory-budget`, [`super::DeviceSpec::memory_budget`])
//! counts against it:
//! - the **query points of every parameter set resident on it** (the G1 bases H, L, A, B₁ as
//!   affine points, and the G2 bases of B when the device runs the G2 MSM), from the parameters'
//!   shape ([`points_bytes`]), for as long as the device holds a proving key for them — and from
//!   the moment a partition that needs them is placed there;
//! - **each partition on the device**, from the moment a device worker takes it until its
//!   device part returns: the partition's data as the device receives it (the A, B, C
//!   evaluations, the assignments, their densities and the B scalars:
//!   [`bellows_core::pipeline::partition_bytes_of`], the bytes the host budget counts for it).
//!
//! A device worker takes the first synthesised partition (in priority order) whose bytes — and
//! its parameters' points, if they are not resident there yet — fit what is left of its
//! device's budget. Points of other parameters that no partition on the device is using are
//! evicted from that device (least recently used first) when that makes room. Everything is
//! decided under the scheduler's lock, so the budget can never be outgrown whatever the number
//! of workers. A job whose partition would not fit even an idle device is refused when it is
//! submitted (or failed when it is resumed), never left waiting.
//!
//! These are estimates of what a backend keeps on its device, from the sizes of what it is
//! given; the backend is also handed the budget ([`bellows_core::backend::MemoryPool::set_memory_budget`])
//! so that its own allocator (the CUDA backend's staging tiers) stays inside it.

use std::{collections::HashMap, sync::Arc};

use bellows_core::groth16::io::ParamsShape;

use crate::params::{ParamsDigest, ParamsEntry};

/// Bytes of a G1 affine point (blst layout).
const G1_AFFINE: u64 = 96;
/// Bytes of a G2 affine point (blst layout).
const G2_AFFINE: u64 = 192;

/// Bytes of the query points a device holds for parameters of `shape`: H (domain − 1), L (one per
/// aux variable), A and B₁ (their lengths) as G1 affine points, and B₂ as G2 affine points when
/// the device runs the G2 MSM.
pub fn points_bytes(shape: &ParamsShape, g2_on_device: bool) -> u64 {
    let g1 = (shape.domain_size.saturating_sub(1) + shape.num_aux + shape.a_len + shape.b_len)
        as u64
        * G1_AFFINE;
    let g2 = if g2_on_device {
        shape.b_len as u64 * G2_AFFINE
    } else {
        0
    };
    g1 + g2
}

/// One parameter set's points on a device.
struct Points {
    entry: Arc<ParamsEntry>,
    bytes: u64,
    /// Partitions on the device using them now.
    users: usize,
    last_used: u64,
}

/// What one device holds against its budget (kept under the scheduler's lock).
pub(crate) struct DeviceMem {
    /// The engine's index of the device.
    device: usize,
    budget: Option<u64>,
    g2_on_device: bool,
    /// Bytes of the partitions on the device now.
    partitions: u64,
    points: HashMap<ParamsDigest, Points>,
    peak: u64,
    tick: u64,
}

impl DeviceMem {
    /// Device `device`, with `budget` bytes (`None`: unlimited, only counted).
    pub(crate) fn new(device: usize, budget: Option<u64>, g2_on_device: bool) -> Self {
        Self {
            device,
            budget,
            g2_on_device,
            partitions: 0,
            points: HashMap::new(),
            peak: 0,
            tick: 0,
        }
    }

    /// The budget, if any.
    pub(crate) fn budget(&self) -> Option<u64> {
        self.budget
    }

    /// Bytes held now: resident points and partitions (points the parameters cache evicted
    /// since, and that no partition here uses, no longer count).
    pub(crate) fn reserved(&self) -> u64 {
        let d = self.device;
        self.partitions
            + self
                .points
                .values()
                .filter(|p| p.users > 0 || p.entry.is_resident_on(d))
                .map(|p| p.bytes)
                .sum::<u64>()
    }

    /// Partitions on this device now that use the parameters with `digest`.
    pub(crate) fn users(&self, digest: &ParamsDigest) -> usize {
        self.points.get(digest).map_or(0, |p| p.users)
    }

    /// Whether this device runs the G2 MSM (its points count b_g2 in G2).
    pub(crate) fn g2_on_device(&self) -> bool {
        self.g2_on_device
    }

    /// The most bytes ever held at once.
    pub(crate) fn peak(&self) -> u64 {
        self.peak
    }

    /// What a partition of `bytes` with parameters `entry` needs on this device when nothing
    /// else is there.
    pub(crate) fn need_alone(&self, entry: &ParamsEntry, bytes: u64) -> u64 {
        points_bytes(&entry.shape, self.g2_on_device) + bytes
    }

    /// Whether such a partition fits this device at all (when it is idle).
    pub(crate) fn admits_alone(&self, entry: &ParamsEntry, bytes: u64) -> bool {
        self.budget
            .is_none_or(|b| self.need_alone(entry, bytes) <= b)
    }

    /// Forgets points that are no longer resident (evicted by the parameters cache) and that no
    /// partition on the device uses.
    fn prune(&mut self) {
        let d = self.device;
        self.points
            .retain(|_, p| p.users > 0 || p.entry.is_resident_on(d));
    }

    /// Reserves `bytes` for a partition (0: only the points, as a preload does) with parameters
    /// `entry`, and the points of `entry` unless they are held already; the caller gives the
    /// partition back with [`DeviceMem::release`] (its points stay while resident). When that does not fit,
    /// points of other parameters no partition here uses are given up, least recently used
    /// first, if that makes room. Returns the parameters to evict from the device (the caller
    /// drops their keys, outside the scheduler's lock), or `None` when it does not fit now.
    pub(crate) fn try_reserve(
        &mut self,
        entry: &Arc<ParamsEntry>,
        bytes: u64,
    ) -> Option<Vec<Arc<ParamsEntry>>> {
        self.prune();
        let held = self.points.contains_key(&entry.digest);
        let new_points = if held {
            0
        } else {
            points_bytes(&entry.shape, self.g2_on_device)
        };
        let need = new_points + bytes;
        let mut evict = Vec::new();
        if let Some(budget) = self.budget {
            let mut free = budget.saturating_sub(self.reserved());
            if need > free {
                let mut idle: Vec<(u64, ParamsDigest, u64)> = self
                    .points
                    .iter()
                    .filter(|(d, p)| p.users == 0 && **d != entry.digest)
                    .map(|(d, p)| (p.last_used, *d, p.bytes))
                    .collect();
                let idle_bytes: u64 = idle.iter().map(|x| x.2).sum();
                if need > free + idle_bytes {
                    return None;
                }
                idle.sort_unstable();
                for (_, d, b) in idle {
                    if need <= free {
                        break;
                    }
                    if let Some(p) = self.points.remove(&d) {
                        evict.push(p.entry);
                    }
                    free += b;
                }
            }
        }
        self.tick += 1;
        let p = self.points.entry(entry.digest).or_insert_with(|| Points {
            entry: entry.clone(),
            bytes: new_points,
            users: 0,
            last_used: 0,
        });
        p.last_used = self.tick;
        p.users += 1;
        self.partitions += bytes;
        self.peak = self.peak.max(self.reserved());
        Some(evict)
    }

    /// Returns what [`DeviceMem::try_reserve`] took for a partition of `bytes` (its points stay,
    /// resident, until evicted).
    pub(crate) fn release(&mut self, digest: &ParamsDigest, bytes: u64) {
        self.partitions = self.partitions.saturating_sub(bytes);
        if let Some(p) = self.points.get_mut(digest) {
            p.users = p.users.saturating_sub(1);
        }
    }
}
