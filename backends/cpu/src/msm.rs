//! Resident bases and multi-scalar multiplication on host threads.
//!
//! "Resident" on the CPU means the backend keeps the caller's [`SharedPoints`] `Arc` — the points
//! are never copied (a proving key's decoded points are used where they lie). Each job runs
//! [`bellows_backend_api::host_msm`]: Pippenger's bucket method (Pippenger, "On the evaluation
//! of powers and related problems", FOCS 1976) as implemented by blst
//! (`blst_p1s_mult_pippenger` / `blst_p2s_mult_pippenger`), the points split into one chunk per
//! rayon thread. A job with a density bitmap ([`MsmJob::density`]) has its used scalars gathered
//! first (one copy of the used scalars, on the backend's side).

use bellows_backend_api::{
    backend::{BasesHandle, BasesTable, Group, MsmJob, SharedPoints},
    host_msm,
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
    table: BasesTable<Bases>,
}

impl Resident {
    pub(crate) fn load_g1(&self, bases: SharedPoints<G1Affine>) -> BasesHandle {
        let len = bases.points().len();
        self.table.insert(Group::G1, len, Bases::G1(bases))
    }

    pub(crate) fn load_g2(&self, bases: SharedPoints<G2Affine>) -> BasesHandle {
        let len = bases.points().len();
        self.table.insert(Group::G2, len, Bases::G2(bases))
    }

    /// The bases of `handle` for an MSM over `group` (checked by the table).
    fn lookup(&self, handle: BasesHandle, group: Group) -> Result<Bases> {
        self.table.get(handle, group)
    }

    pub(crate) fn free(&self, handle: BasesHandle) -> Result<()> {
        self.table.remove(handle).map(drop)
    }

    /// Number of resident handles.
    pub(crate) fn count(&self) -> usize {
        self.table.len()
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
            let bases = match res.lookup(handle, $group)? {
                Bases::$variant(p) => p,
                _ => {
                    return Err(Error::invalid(format!(
                        "bases handle {} is not a {:?} handle",
                        handle.id, $group
                    )))
                }
            };
            bellows_backend_api::backend::check_batch(&handle, jobs, out.len())?;
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
    bellows_backend_api::layout::G1Jacobian,
    host_msm::msm_g1,
    Group::G1
);
msm_group!(
    msm_g2,
    G2,
    bellows_backend_api::layout::G2Jacobian,
    host_msm::msm_g2,
    Group::G2
);
