//! The backend's GPUs and their lanes: each GPU has one or more lanes (option `streams`), each a
//! [`CudaDevice`] of its own (compute and copy streams, staging buffers) with a lock that
//! serialises the calls on it, and one set of features (the NTT, MSM and quotient kernels and
//! the NTT tables) shared by its lanes. A call takes a free lane: the first lanes of every GPU
//! before any second lane.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Mutex, MutexGuard,
};

use bellows_backend_api::Result;

use crate::{device::CudaDevice, msm::Msm, ntt::Ntt, quotient::Quotient};

/// The features of one GPU, shared by its lanes.
pub(crate) struct Features {
    pub ntt: Ntt,
    pub msm: Msm,
    pub quotient: Quotient,
}

/// One lane of a GPU, with the lock that serialises the calls on it.
struct Lane {
    dev: CudaDevice,
    work: Mutex<()>,
}

/// One GPU of the backend: its lanes (the first opened the context) and its features.
pub(crate) struct Gpu {
    lanes: Vec<Lane>,
    pub features: Features,
}

impl Gpu {
    /// Opens `first`'s GPU with `streams` lanes in all, `first` the first of them.
    pub fn new(first: CudaDevice, streams: usize, features: Features) -> Result<Self> {
        let mut lanes = Vec::with_capacity(streams);
        for _ in 1..streams {
            lanes.push(first.lane()?);
        }
        lanes.insert(0, first);
        Ok(Self {
            lanes: lanes
                .into_iter()
                .map(|dev| Lane {
                    dev,
                    work: Mutex::new(()),
                })
                .collect(),
            features,
        })
    }

    /// The first lane's device.
    pub fn dev(&self) -> &CudaDevice {
        &self.lanes[0].dev
    }

    /// Holds every lane (waits for their calls to finish), as trimming needs.
    pub fn hold_all(&self, k: usize) -> Vec<Held<'_>> {
        self.lanes
            .iter()
            .map(|l| hold(k, l, &self.features))
            .collect()
    }
}

/// A lane of GPU `k` held for one call, with the GPU's features.
pub(crate) struct Held<'a> {
    pub k: usize,
    pub dev: &'a CudaDevice,
    pub features: &'a Features,
    _guard: MutexGuard<'a, ()>,
}

fn try_hold<'a>(k: usize, lane: &'a Lane, features: &'a Features) -> Option<Held<'a>> {
    let guard = match lane.work.try_lock() {
        Ok(g) => g,
        Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
        Err(std::sync::TryLockError::WouldBlock) => return None,
    };
    Some(Held {
        k,
        dev: &lane.dev,
        features,
        _guard: guard,
    })
}

fn hold<'a>(k: usize, lane: &'a Lane, features: &'a Features) -> Held<'a> {
    Held {
        k,
        dev: &lane.dev,
        features,
        _guard: lane.work.lock().unwrap_or_else(|e| e.into_inner()),
    }
}

/// The GPUs of the backend, and where the next call starts looking for a free lane.
pub(crate) struct Gpus {
    pub gpus: Vec<Gpu>,
    next_gpu: AtomicUsize,
}

impl Gpus {
    /// Over `gpus` (at least one, each with the same number of lanes).
    pub fn new(gpus: Vec<Gpu>) -> Self {
        Self {
            gpus,
            next_gpu: AtomicUsize::new(0),
        }
    }

    /// Number of GPUs.
    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    /// Lanes (calls in flight) per GPU.
    pub fn streams(&self) -> usize {
        self.gpus[0].lanes.len()
    }

    /// A free lane: the first lanes of every GPU before any second lane (round robin over the
    /// GPUs from the last one handed out), or, when all are busy, the next GPU's first lane
    /// once it is free; with its lock held.
    pub fn pick(&self) -> Held<'_> {
        let n = self.gpus.len();
        let start = self.next_gpu.fetch_add(1, Ordering::Relaxed) % n;
        for lane in 0..self.streams() {
            for i in 0..n {
                let k = (start + i) % n;
                let g = &self.gpus[k];
                if let Some(h) = try_hold(k, &g.lanes[lane], &g.features) {
                    return h;
                }
            }
        }
        let g = &self.gpus[start];
        hold(start, &g.lanes[0], &g.features)
    }

    /// A free lane of GPU `k`, or its first lane once it is free.
    pub fn pick_on(&self, k: usize) -> Held<'_> {
        let g = &self.gpus[k];
        g.lanes
            .iter()
            .find_map(|l| try_hold(k, l, &g.features))
            .unwrap_or_else(|| hold(k, &g.lanes[0], &g.features))
    }
}
