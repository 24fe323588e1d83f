//! The host side: [`PluginBackend`] wraps a plugin's backend object and implements [`Backend`], so
//! the prover uses a plugin exactly like a built-in backend.
//!
//! ## Ownership of resident bases
//! `load_bases_*` hands the plugin a pointer to the host's points (zero-copy). The
//! [`PluginBackend`] keeps the [`SharedPoints`] `Arc` in a table until `free_bases` has returned,
//! and holds an extra reference for the duration of every MSM naming the handle, so the memory a
//! plugin reads is always alive. The table is also what makes a freed or unknown handle an
//! [`Error::InvalidInput`] before the plugin sees it, and what keeps job ranges inside the loaded
//! points: a plugin is never asked to read outside host memory it was lent.
//!
//! ## Checks on what a plugin returns
//! A handle whose group or length differs from what was loaded, a duplicate handle id, and an MSM
//! answer with a different number of results than jobs are [`Error::Plugin`] errors naming the
//! file. A plugin's backend object is dropped before the points it may reference.

#![allow(unsafe_code)]

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard},
};

use abi_stable::std_types::{RSlice, RSliceMut};

use super::{
    abi::{
        FfiBasesHandle, FfiError, FfiFr, FfiG1Affine, FfiG1Jacobian, FfiG2Affine, FfiG2Jacobian,
        FfiMsmJob, FfiNttConfig,
    },
    interface::BackendObject,
};
use crate::{
    backend::{
        Backend, BackendInfo, BasesHandle, Group, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt,
        NttConfig, SharedPoints,
    },
    layout::{Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Error, Result,
};

/// Points lent to the plugin, kept alive by the host (held, never read: hence `dead_code`).
#[derive(Clone)]
#[allow(dead_code)]
enum Lent {
    G1(SharedPoints<G1Affine>),
    G2(SharedPoints<G2Affine>),
}

/// A backend living in a plugin, usable wherever an `Arc<dyn Backend>` is.
pub struct PluginBackend {
    // Field order matters: the object (which may reference lent points) is dropped first.
    object: BackendObject,
    lent: Mutex<HashMap<u64, (BasesHandle, Lent)>>,
    path: PathBuf,
    info: BackendInfo,
}

impl std::fmt::Debug for PluginBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginBackend")
            .field("path", &self.path)
            .field("name", &self.info.name)
            .finish()
    }
}

impl PluginBackend {
    /// Wraps a backend object that came from the plugin file `path`; asks it for its
    /// [`BackendInfo`] once (an error or panic there fails the wrap).
    pub fn new(object: BackendObject, path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let info: BackendInfo = object
            .info()
            .into_result()
            .map_err(|e| e.into_error(&path))?
            .into();
        if info.name.is_empty() {
            return Err(Error::Plugin {
                path,
                reason: "the backend reports an empty name".into(),
            });
        }
        Ok(Self {
            object,
            lent: Mutex::new(HashMap::new()),
            path,
            info,
        })
    }

    /// The file the plugin was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: FfiError) -> Error {
        e.into_error(&self.path)
    }

    fn plugin_error(&self, reason: String) -> Error {
        Error::Plugin {
            path: self.path.clone(),
            reason,
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<u64, (BasesHandle, Lent)>> {
        // The table holds plain data; a panic elsewhere cannot leave it inconsistent.
        self.lent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks a handle the plugin returned and records the lent points under it.
    fn record(
        &self,
        got: FfiBasesHandle,
        group: Group,
        len: usize,
        lent: Lent,
    ) -> Result<BasesHandle> {
        let handle = got.to_handle().filter(|h| h.group == group && h.len == len as u64).ok_or_else(|| {
            self.plugin_error(format!(
                "load_bases returned handle {:?} for {len} {group:?} points (wrong group or length)",
                got
            ))
        })?;
        let mut table = self.table();
        if table.contains_key(&handle.id) {
            drop(table);
            return Err(self.plugin_error(format!(
                "load_bases returned handle id {} which is already in use",
                handle.id
            )));
        }
        table.insert(handle.id, (handle, lent));
        Ok(handle)
    }

    /// The recorded handle and a reference to its points, for the duration of one call.
    fn lookup(&self, handle: BasesHandle, group: Group) -> Result<(BasesHandle, Lent)> {
        match self.table().get(&handle.id) {
            Some((h, lent)) if h.group == group => Ok((*h, lent.clone())),
            Some((h, _)) => Err(Error::invalid(format!(
                "bases handle {} holds {:?} points, not {group:?}",
                h.id, h.group
            ))),
            None => Err(Error::invalid(format!(
                "bases handle {} is not resident on backend {} (freed, or never loaded)",
                handle.id, self.info.name
            ))),
        }
    }

    fn ffi_jobs<'a>(
        &self,
        handle: &BasesHandle,
        jobs: &'a [MsmJob<'a>],
    ) -> Result<Vec<FfiMsmJob<'a>>> {
        jobs.iter()
            .map(|j| {
                j.check(handle)?;
                Ok(FfiMsmJob {
                    start: j.start as u64,
                    scalars: RSlice::from_slice(FfiFr::from_layout(j.scalars)),
                })
            })
            .collect()
    }

    fn check_count(&self, call: &str, got: usize, want: usize) -> Result<()> {
        if got != want {
            return Err(self.plugin_error(format!("{call} returned {got} results for {want} jobs")));
        }
        Ok(())
    }
}

impl Ntt for PluginBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        let data = RSliceMut::from_mut_slice(FfiFr::from_layout_mut(data));
        self.object
            .ntt(data, log_n, FfiNttConfig::from(cfg))
            .into_result()
            .map_err(|e| self.err(e))
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        fn s(x: &mut [Fr]) -> RSliceMut<'_, FfiFr> {
            RSliceMut::from_mut_slice(FfiFr::from_layout_mut(x))
        }
        self.object
            .h_poly(s(a), s(b), s(c), log_n)
            .into_result()
            .map_err(|e| self.err(e))
    }
}

impl Msm for PluginBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        let pts = FfiG1Affine::from_layout(bases.points());
        // SAFETY: `bases` goes into the table below before this function returns and stays there
        // until `free_bases` has returned, so the memory outlives the plugin's use of it; on error
        // the plugin holds no reference (it returned no handle).
        let got = unsafe { self.object.load_bases_g1(pts.as_ptr(), pts.len() as u64) }
            .into_result()
            .map_err(|e| self.err(e))?;
        let len = pts.len();
        self.record(got, Group::G1, len, Lent::G1(bases))
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        let pts = FfiG2Affine::from_layout(bases.points());
        // SAFETY: as for G1.
        let got = unsafe { self.object.load_bases_g2(pts.as_ptr(), pts.len() as u64) }
            .into_result()
            .map_err(|e| self.err(e))?;
        let len = pts.len();
        self.record(got, Group::G2, len, Lent::G2(bases))
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        let (recorded, _lent) = self.lookup(handle, handle.group)?;
        self.object
            .free_bases(recorded.into())
            .into_result()
            .map_err(|e| self.err(e))?;
        // Only now may the points go: the plugin has dropped its references.
        self.table().remove(&recorded.id);
        Ok(())
    }

    fn msm_g1(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G1Jacobian],
    ) -> Result<()> {
        if out.len() != jobs.len() {
            return Err(Error::invalid(format!(
                "msm_g1: {} jobs but {} output slots",
                jobs.len(),
                out.len()
            )));
        }
        let (recorded, _keep) = self.lookup(handle, Group::G1)?;
        let ffi = self.ffi_jobs(&recorded, jobs)?;
        let res = self
            .object
            .msm_g1(recorded.into(), RSlice::from_slice(&ffi))
            .into_result()
            .map_err(|e| self.err(e))?;
        self.check_count("msm_g1", res.len(), jobs.len())?;
        out.copy_from_slice(FfiG1Jacobian::to_layout(&res));
        Ok(())
    }

    fn msm_g2(
        &self,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [G2Jacobian],
    ) -> Result<()> {
        if out.len() != jobs.len() {
            return Err(Error::invalid(format!(
                "msm_g2: {} jobs but {} output slots",
                jobs.len(),
                out.len()
            )));
        }
        let (recorded, _keep) = self.lookup(handle, Group::G2)?;
        let ffi = self.ffi_jobs(&recorded, jobs)?;
        let res = self
            .object
            .msm_g2(recorded.into(), RSlice::from_slice(&ffi))
            .into_result()
            .map_err(|e| self.err(e))?;
        self.check_count("msm_g2", res.len(), jobs.len())?;
        out.copy_from_slice(FfiG2Jacobian::to_layout(&res));
        Ok(())
    }
}

impl MemoryPool for PluginBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        self.object
            .memory_info()
            .into_result()
            .map(MemoryInfo::from)
            .map_err(|e| self.err(e))
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        self.object
            .set_memory_budget(bytes.into())
            .into_result()
            .map_err(|e| self.err(e))
    }

    unsafe fn pin_host(&self, ptr: *const u8, len: usize) -> Result<bool> {
        // SAFETY: the caller's contract (range allocated until `unpin_host`) is passed on.
        unsafe { self.object.pin_host(ptr, len as u64) }
            .into_result()
            .map_err(|e| self.err(e))
    }

    unsafe fn unpin_host(&self, ptr: *const u8) -> Result<()> {
        // SAFETY: the caller's contract is passed on.
        unsafe { self.object.unpin_host(ptr) }
            .into_result()
            .map_err(|e| self.err(e))
    }

    fn trim(&self) -> Result<()> {
        self.object.trim().into_result().map_err(|e| self.err(e))
    }
}

impl Backend for PluginBackend {
    fn info(&self) -> BackendInfo {
        self.info.clone()
    }
}

/// Wraps a backend in the plugin interface without loading a library: the same object, checks and
/// conversions as a loaded plugin, in process. For tests and for measuring the interface's cost.
pub fn in_process<B: Backend>(backend: B, label: impl Into<PathBuf>) -> Result<PluginBackend> {
    PluginBackend::new(super::export::Exported::into_object(backend), label)
}

#[cfg(test)]
#[path = "host_tests.rs"]
mod tests;
