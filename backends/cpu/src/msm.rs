//! Resident bases and multi-scalar multiplication on host threads.
//!
//! "Resident" on the CPU means the backend keeps the caller's [`SharedPoints`] `Arc` — the points
//! are never copied, also when they live in a memory-mapped parameters file. Each job runs
//! [`bellows_core::groth16::host_msm`]: Pippenger's bucket method (Pippenger, "On the evaluation
//! of powers and related problems", FOCS 1976) as implemented by blst
//! (`blst_p1s_mult_pippenger` / `blst_p2s_mult_pippenger`), the points split into one chunk per
//! rayon thread. A job with a density bitmap ([`MsmJob::density`]) has its used scalars gathered
//! first (one copy of the used scalars, on the backend's side).

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use bellows_core::{
    backend::{BasesHandle, Group, MsmJob, SharedPoints},
    groth16::host_msm,
    layout::{G1Affine, G2Affine},
    Error, Result,
};
use rayon::prelude::*;

/// Points kept for a handle.
#[derive(Clone)]
enum Bases {
    G1(SharedPoints<G1Affine>),
    G2(SharedPoints<G2Affine>),
}

/// The table of resident bases of one backend.
#[derive(Default)]
pub(crate) struct Resident {
    map: Mutex<HashMap<u64, Bases>>,
    next_id: AtomicU64,
}

impl Resident {
    fn insert(&self, bases: Bases, group: Group, len: usize) -> BasesHandle {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        self.lock().insert(id, bases);
        BasesHandle {
            id,
            group,
            len: len as u64,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Bases>> {
        // A panic while holding the lock cannot leave the map inconsistent (single inserts and
        // removes), so a poisoned lock is still usable.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn load_g1(&self, bases: SharedPoints<G1Affine>) -> BasesHandle {
        let len = bases.points().len();
        self.insert(Bases::G1(bases), Group::G1, len)
    }

    pub(crate) fn load_g2(&self, bases: SharedPoints<G2Affine>) -> BasesHandle {
        let len = bases.points().len();
        self.insert(Bases::G2(bases), Group::G2, len)
    }

    /// The bases of `handle`, checked against the stored group and length.
    fn lookup(&self, handle: BasesHandle) -> Result<Bases> {
        let map = self.lock();
        let bases = map.get(&handle.id).ok_or_else(|| {
            Error::invalid(format!(
                "bases handle {} is unknown or was freed",
                handle.id
            ))
        })?;
        let (group, len) = match bases {
            Bases::G1(p) => (Group::G1, p.points().len()),
            Bases::G2(p) => (Group::G2, p.points().len()),
        };
        if group != handle.group || len as u64 != handle.len {
            return Err(Error::invalid(format!(
                "bases handle {} claims {:?} × {} but holds {:?} × {}",
                handle.id, handle.group, handle.len, group, len
            )));
        }
        Ok(bases.clone())
    }

    pub(crate) fn free(&self, handle: BasesHandle) -> Result<()> {
        self.lookup(handle)?;
        self.lock().remove(&handle.id);
        Ok(())
    }

    /// Number of resident handles.
    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }
}

macro_rules! msm_group {
    ($name:ident, $variant:ident, $jac:ty, $host:path, $group:expr) => {
        /// Runs every job over the resident bases of `handle`.
        pub(crate) fn $name(
            res: &Resident,
            handle: BasesHandle,
            jobs: &[MsmJob<'_>],
            out: &mut [$jac],
        ) -> Result<()> {
            let bases = match res.lookup(handle)? {
                Bases::$variant(p) => p,
                _ => {
                    return Err(Error::invalid(format!(
                        "bases handle {} is not a {:?} handle",
                        handle.id, $group
                    )))
                }
            };
            bellows_core::backend::check_batch(&handle, jobs, out.len())?;
            let points = bases.points();
            jobs.par_iter()
                .zip(out.par_iter_mut())
                .for_each(|(job, o)| {
                    // A density job is gathered here, on the backend's side (checked above).
                    let scalars = job.used_scalars();
                    let range = job.start..job.start + scalars.len();
                    *o = $host(&points[range], &scalars);
                });
            Ok(())
        }
    };
}

msm_group!(
    msm_g1,
    G1,
    bellows_core::layout::G1Jacobian,
    host_msm::msm_g1,
    Group::G1
);
msm_group!(
    msm_g2,
    G2,
    bellows_core::layout::G2Jacobian,
    host_msm::msm_g2,
    Group::G2
);
