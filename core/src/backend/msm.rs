//! Multi-scalar multiplication over resident bases.
//!
//! ## Design
//! Groth16 multiplies the same SRS points (the parameters' h, l, a, b_g1, b_g2 queries) by new
//! scalars for every proof. A backend therefore takes the points once, through
//! [`Msm::load_bases_g1`] / [`Msm::load_bases_g2`], and answers with a [`BasesHandle`]; every later
//! MSM names the handle, a range of the points, and the scalars. What "resident" means is the
//! backend's choice: the CPU backend keeps a reference to the host memory (zero-copy, also over a
//! memory-mapped parameters file), a GPU backend copies to device memory, or pins the host pages
//! and streams them when the device is short of memory.
//!
//! Calls are batched: one [`Msm::msm_g1`] call carries many [`MsmJob`]s over one handle (one per
//! proof of a batch), so a device can pipeline scalar uploads of job k+1 with the buckets of job k
//! and defer the result copy, as cuzk/supraseal do.
//!
//! Scalars arrive in the crossing layout ([`Fr`], Montgomery); the backend converts them to
//! canonical form itself. Results are Jacobian points in blst's layout.

use std::sync::Arc;

use crate::{
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Result,
};

/// Which group a set of bases lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum Group {
    /// G1 (96-byte affine points).
    G1,
    /// G2 (192-byte affine points).
    G2,
}

/// Handle to bases made resident on a backend. Returned by `load_bases_*`, valid until
/// [`Msm::free_bases`]. Handles are plain values: copying one does not copy the points.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct BasesHandle {
    /// Backend-chosen identifier.
    pub id: u64,
    /// Group of the points.
    pub group: Group,
    /// Number of points.
    pub len: u64,
}

/// Host memory holding points, shared with a backend for as long as it keeps a handle to it.
///
/// Implemented for `Vec`s of both the crossing layout and blstrs' types, so parameters loaded from
/// disk (or memory-mapped) are handed over without copying.
pub trait PointSource<T>: Send + Sync {
    /// The points.
    fn points(&self) -> &[T];
}

impl<T: Send + Sync> PointSource<T> for Vec<T> {
    fn points(&self) -> &[T] {
        self
    }
}
impl PointSource<G1Affine> for Vec<blstrs::G1Affine> {
    fn points(&self) -> &[G1Affine] {
        crate::layout::g1_affine_slice(self)
    }
}
impl PointSource<G2Affine> for Vec<blstrs::G2Affine> {
    fn points(&self) -> &[G2Affine] {
        crate::layout::g2_affine_slice(self)
    }
}

/// Shared, reference-counted points handed to [`Msm::load_bases_g1`] / [`Msm::load_bases_g2`].
pub type SharedPoints<T> = Arc<dyn PointSource<T>>;

/// One MSM of a batch: `Σ scalars[i] · bases[start + i]`.
#[derive(Clone, Copy, Debug)]
pub struct MsmJob<'a> {
    /// Index of the first base point used.
    pub start: usize,
    /// The scalars; `scalars.len()` points are used from `start` on.
    pub scalars: &'a [Fr],
}

impl MsmJob<'_> {
    /// Checks that the job's range lies within `handle`.
    pub fn check(&self, handle: &BasesHandle) -> Result<()> {
        let end = self.start.checked_add(self.scalars.len());
        match end {
            Some(end) if end as u64 <= handle.len => Ok(()),
            _ => Err(crate::Error::invalid(format!(
                "MSM range {}..{} is outside the {} resident bases of handle {}",
                self.start,
                self.start.saturating_add(self.scalars.len()),
                handle.len,
                handle.id
            ))),
        }
    }
}

/// Multi-scalar multiplication in G1 and G2 over resident bases.
pub trait Msm {
    /// Makes G1 points resident and returns their handle.
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle>;
    /// Makes G2 points resident and returns their handle.
    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle>;
    /// Releases resident bases. Using the handle afterwards is an [`crate::Error::InvalidInput`].
    fn free_bases(&self, handle: BasesHandle) -> Result<()>;
    /// Runs every job over the G1 bases of `handle`; `out[k]` receives job k's result.
    fn msm_g1(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()>;
    /// Runs every job over the G2 bases of `handle`; `out[k]` receives job k's result.
    fn msm_g2(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()>;
}
