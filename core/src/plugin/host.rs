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
//! ## Handles in use
//! Every call naming a handle (an MSM, the G1 phase) counts itself in flight on it for its
//! duration; `free_bases` on a handle with calls in flight is refused with
//! [`Error::InvalidInput`] (the plugin would otherwise free bases a running kernel reads), and a
//! handle being freed refuses new calls until the plugin has answered.
//!
//! ## Checks on what a plugin returns
//! A handle whose group or length differs from what was loaded, a duplicate handle id, and an MSM
//! answer with a different number of results than jobs are [`Error::Plugin`] errors naming the
//! file. A plugin's backend object is dropped before the points it may reference.

#![allow(unsafe_code)]

use std::{
    panic::{catch_unwind, AssertUnwindSafe},
    path::{Path, PathBuf},
    sync::Mutex,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{RResult, RSlice, RSliceMut, RVec, Tuple2},
};

use super::{
    abi::{
        codes, FfiBasesHandle, FfiEncodedLoad, FfiError, FfiFr, FfiG1Affine, FfiG1Jacobian,
        FfiG2Affine, FfiG2Jacobian, FfiMsmJob, FfiNttConfig, FfiProofAssignment,
    },
    interface::{BackendObject, EncodedPointsRef, FfiEncodedPoints, FfiEncodedPoints_TO},
};
use crate::{
    backend::{
        encoded_size, g1_phase::check_b_g2, groth16_g1_from_primitives, groth16_g1_g2_from_parts,
        Backend, BackendInfo, BasesHandle, BasesTable, EncodedLoad, EncodedPoints, G1G2Sums,
        G1Handles, G1PhaseInput, Group, MemoryInfo, MemoryPool, Msm, MsmJob, Ntt, NttConfig,
        SharedPoints,
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
    /// The plugin said it no longer reads them (`bases_need_host`): dropped.
    Released,
}

/// One resident handle as the host records it (the table keeps the handle itself).
struct Entry {
    lent: Lent,
    /// Calls naming the handle that have not returned yet.
    in_flight: usize,
    /// `free_bases` is running for it.
    freeing: bool,
}

/// The caller's reader of encoded points, lent to a plugin for one `load_bases_gN_encoded` call.
/// Reads outside the points are refused; a panic in the reader is caught; the first error is
/// kept, so that the host reports it rather than the plugin's copy of it.
struct LentReader<'a> {
    points: &'a dyn EncodedPoints,
    /// Bytes of one encoding.
    size: u64,
    failed: Mutex<Option<Error>>,
}

impl FfiEncodedPoints for LentReader<'_> {
    fn len(&self) -> u64 {
        self.points.len()
    }

    fn read(&self, first: u64, mut buf: RSliceMut<'_, u8>) -> RResult<(), FfiError> {
        let buf = buf.as_mut_slice();
        let n = buf.len() as u64 / self.size;
        let result = if !(buf.len() as u64).is_multiple_of(self.size)
            || first
                .checked_add(n)
                .is_none_or(|end| end > self.points.len())
        {
            Err(Error::invalid(format!(
                "the plugin asked for {} bytes of encoded points from point {first}: not whole \
                 points inside the {} there are",
                buf.len(),
                self.points.len()
            )))
        } else {
            catch_unwind(AssertUnwindSafe(|| self.points.read(first, buf))).unwrap_or_else(|p| {
                Err(Error::Pipeline(format!(
                    "reading encoded points panicked: {}",
                    bellows_backend_api::error::panic_message(&*p)
                )))
            })
        };
        match result {
            Ok(()) => RResult::ROk(()),
            Err(e) => {
                let ffi = FfiError::from(&e);
                self.failed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(e);
                RResult::RErr(ffi)
            }
        }
    }
}

/// A handle counted in flight for the duration of one call (see the module docs).
struct InFlight<'b> {
    backend: &'b PluginBackend,
    handle: BasesHandle,
    _lent: Lent,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // The entry cannot be gone: free_bases refuses while calls are in flight.
        let _ = self.backend.lent.with(self.handle, self.handle.group, |e| {
            e.in_flight = e.in_flight.saturating_sub(1)
        });
    }
}

/// A backend living in a plugin, usable wherever an `Arc<dyn Backend>` is.
pub struct PluginBackend {
    // Field order matters: the object (which may reference lent points) is dropped first.
    object: BackendObject,
    lent: BasesTable<Entry>,
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
            lent: BasesTable::new(),
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

    /// Drops the points lent for `handle` when the plugin says it no longer reads them (a set
    /// it holds whole in its own memory): for a GPU holding a 32 GiB key, the 47 GB the host
    /// would otherwise keep until `free_bases`. An error, or a plugin that does not say (built
    /// before interface 3.1), keeps them.
    fn release_unneeded(&self, handle: BasesHandle) {
        if let RResult::ROk(false) = self.object.bases_need_host(handle.into()) {
            let _ = self
                .lent
                .with(handle, handle.group, |e| e.lent = Lent::Released);
        }
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
        let entry = Entry {
            lent,
            in_flight: 0,
            freeing: false,
        };
        if self.lent.insert_issued(handle, entry).is_err() {
            return Err(self.plugin_error(format!(
                "load_bases returned handle id {} which is already in use",
                handle.id
            )));
        }
        Ok(handle)
    }

    /// The recorded handle, counted in flight (and its points kept alive) until the returned
    /// guard is dropped at the end of the call.
    fn lookup(&self, handle: BasesHandle, group: Group) -> Result<InFlight<'_>> {
        self.lent.with(handle, group, |e| {
            if e.freeing {
                return Err(Error::invalid(format!(
                    "bases handle {} is being freed",
                    handle.id
                )));
            }
            e.in_flight += 1;
            Ok(InFlight {
                backend: self,
                handle,
                _lent: e.lent.clone(),
            })
        })?
    }

    /// Number of calls in flight on `handle` (0 for an unknown handle).
    pub fn in_flight(&self, handle: BasesHandle) -> usize {
        self.lent
            .with(handle, handle.group, |e| e.in_flight)
            .unwrap_or(0)
    }

    fn ffi_jobs<'a>(
        &self,
        handle: &BasesHandle,
        jobs: &'a [MsmJob<'a>],
    ) -> Result<Vec<FfiMsmJob<'a>>> {
        jobs.iter()
            .map(|j| {
                j.check(handle)?;
                Ok(FfiMsmJob::from_job(j))
            })
            .collect()
    }

    /// Runs the plugin's MSM of `group` (`msm_g1` or `msm_g2`, by `run`) over `jobs` on `handle`,
    /// counted in flight and checked against the recorded handle, into `out` (one
    /// result per job; the plugin's answer, viewed by `view`, must have exactly that many).
    fn msm<P, T: Copy>(
        &self,
        group: Group,
        handle: BasesHandle,
        jobs: &[MsmJob<'_>],
        out: &mut [T],
        view: fn(&[P]) -> &[T],
        run: impl FnOnce(FfiBasesHandle, RSlice<'_, FfiMsmJob<'_>>) -> RResult<RVec<P>, FfiError>,
    ) -> Result<()> {
        let call = match group {
            Group::G1 => "msm_g1",
            Group::G2 => "msm_g2",
        };
        if out.len() != jobs.len() {
            return Err(Error::invalid(format!(
                "{call}: {} jobs but {} output slots",
                jobs.len(),
                out.len()
            )));
        }
        let guard = self.lookup(handle, group)?;
        let recorded = guard.handle;
        let ffi = self.ffi_jobs(&recorded, jobs)?;
        let res = self.answer(run(recorded.into(), RSlice::from_slice(&ffi)))?;
        self.check_count(call, res.len(), jobs.len())?;
        out.copy_from_slice(view(&res));
        Ok(())
    }

    /// Lends `points` to the plugin's `load_bases_gN_encoded` (`call`) and checks its answer: a
    /// handle of `group` and the points' length (recorded with no host points lent), or a
    /// refusal at an index inside the points. A read that failed is reported as the reader's own
    /// error whatever the plugin answered (a handle it returned anyway is freed).
    fn load_encoded(
        &self,
        group: Group,
        points: &dyn EncodedPoints,
        call: impl FnOnce(EncodedPointsRef<'_>) -> RResult<FfiEncodedLoad, FfiError>,
    ) -> Result<EncodedLoad> {
        let reader = LentReader {
            points,
            size: encoded_size(group) as u64,
            failed: Mutex::new(None),
        };
        let answer = call(FfiEncodedPoints_TO::from_ptr(&reader, TD_Opaque));
        let failed = reader
            .failed
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let len = points.len();
        let answer = match (answer.into_result(), failed) {
            (Ok(l), Some(read_error)) => {
                if let Some(EncodedLoad::Loaded(h)) = l.to_load() {
                    let _ = self.object.free_bases(h.into());
                }
                return Err(read_error);
            }
            (Err(_), Some(read_error)) => return Err(read_error),
            (Err(e), None) => return Err(self.err(e)),
            (Ok(l), None) => l,
        };
        match answer.to_load() {
            Some(EncodedLoad::Loaded(h)) => {
                let n = usize::try_from(len).map_err(|_| Error::invalid("too many points"))?;
                let handle = self.record(h.into(), group, n, Lent::Released)?;
                Ok(EncodedLoad::Loaded(handle))
            }
            Some(r @ EncodedLoad::Refused { index, .. }) if index < len => Ok(r),
            Some(EncodedLoad::Refused { index, .. }) => Err(self.plugin_error(format!(
                "load_bases_{group:?}_encoded refused point {index} of {len}"
            ))),
            None => Err(self.plugin_error(format!(
                "load_bases_{group:?}_encoded answered {answer:?}: an unknown defect or group \
                 code"
            ))),
        }
    }

    /// A plugin's answer, its error naming the plugin file.
    fn answer<T>(&self, r: RResult<T, FfiError>) -> Result<T> {
        r.into_result().map_err(|e| self.err(e))
    }

    fn check_count(&self, call: &str, got: usize, want: usize) -> Result<()> {
        if got != want {
            return Err(self.plugin_error(format!(
                "{call} returned {got} results for {want} {}",
                if call.starts_with("groth16_g1") {
                    "(4 per proof)"
                } else {
                    "jobs"
                }
            )));
        }
        Ok(())
    }
}

impl Ntt for PluginBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        self.answer(
            self.object
                .ntt(ffi_fr(data), log_n, FfiNttConfig::from(cfg)),
        )
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        self.answer(self.object.h_poly(ffi_fr(a), ffi_fr(b), ffi_fr(c), log_n))
    }
}

impl Msm for PluginBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        let pts = FfiG1Affine::from_layout(bases.points());
        let (ptr, len) = (pts.as_ptr(), pts.len());
        // SAFETY: `bases` goes into the table below before this function returns and stays there
        // until `free_bases` has returned, or until the plugin has said it no longer reads them
        // (`bases_need_host`), so the memory outlives the plugin's use of it; on error the plugin
        // holds no reference (it returned no handle).
        let got = self.answer(unsafe { self.object.load_bases_g1(ptr, len as u64) })?;
        let handle = self.record(got, Group::G1, len, Lent::G1(bases))?;
        self.release_unneeded(handle);
        Ok(handle)
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        let pts = FfiG2Affine::from_layout(bases.points());
        let (ptr, len) = (pts.as_ptr(), pts.len());
        // SAFETY: as for G1.
        let got = self.answer(unsafe { self.object.load_bases_g2(ptr, len as u64) })?;
        let handle = self.record(got, Group::G2, len, Lent::G2(bases))?;
        self.release_unneeded(handle);
        Ok(handle)
    }

    fn load_bases_g1_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        self.load_encoded(Group::G1, points, |r| self.object.load_bases_g1_encoded(r))
    }

    fn load_bases_g2_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        self.load_encoded(Group::G2, points, |r| self.object.load_bases_g2_encoded(r))
    }

    fn bases_need_host(&self, handle: BasesHandle) -> Result<bool> {
        self.lent
            .with(handle, handle.group, |e| !matches!(e.lent, Lent::Released))
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        self.lent.with(handle, handle.group, |e| {
            if e.freeing {
                return Err(Error::invalid(format!(
                    "bases handle {} is already being freed",
                    handle.id
                )));
            }
            if e.in_flight > 0 {
                return Err(Error::invalid(format!(
                    "bases handle {} is in use by {} call(s) in flight (msm or groth16_g1*); \
                     free it after they return",
                    handle.id, e.in_flight
                )));
            }
            e.freeing = true;
            Ok(())
        })??;
        if let Err(e) = self.object.free_bases(handle.into()).into_result() {
            let _ = self
                .lent
                .with(handle, handle.group, |entry| entry.freeing = false);
            return Err(self.err(e));
        }
        // Only now may the points go: the plugin has dropped its references.
        self.lent.remove(handle)?;
        Ok(())
    }

    fn msm_g1(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G1Jacobian]) -> Result<()> {
        let view = FfiG1Jacobian::to_layout;
        self.msm(Group::G1, handle, jobs, out, view, |h, j| {
            self.object.msm_g1(h, j)
        })
    }

    fn msm_g2(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G2Jacobian]) -> Result<()> {
        let view = FfiG2Jacobian::to_layout;
        self.msm(Group::G2, handle, jobs, out, view, |h, j| {
            self.object.msm_g2(h, j)
        })
    }
}

impl MemoryPool for PluginBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        self.answer(self.object.memory_info()).map(MemoryInfo::from)
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        self.answer(self.object.set_memory_budget(bytes.into()))
    }

    unsafe fn pin_host(&self, ptr: *const u8, len: usize) -> Result<bool> {
        // SAFETY: the caller's contract (range allocated until `unpin_host`) is passed on.
        self.answer(unsafe { self.object.pin_host(ptr, len as u64) })
    }

    unsafe fn unpin_host(&self, ptr: *const u8) -> Result<()> {
        // SAFETY: the caller's contract is passed on.
        self.answer(unsafe { self.object.unpin_host(ptr) })
    }

    fn trim(&self) -> Result<()> {
        self.answer(self.object.trim())
    }

    fn alloc_host(&self, bytes: usize) -> Result<Option<std::ptr::NonNull<u8>>> {
        let p = self.answer(self.object.alloc_host(bytes as u64))?;
        Ok(std::ptr::NonNull::new(p))
    }

    unsafe fn free_host(&self, ptr: std::ptr::NonNull<u8>, bytes: usize) -> Result<()> {
        // SAFETY: the caller's contract (from `alloc_host(bytes)` on this plugin, freed once) is
        // passed on.
        self.answer(unsafe { self.object.free_host(ptr.as_ptr(), bytes as u64) })
    }

    fn reserve_host(&self, sizes: &[usize]) -> Result<()> {
        let sizes: Vec<u64> = sizes.iter().map(|&b| b as u64).collect();
        self.answer(self.object.reserve_host(sizes.as_slice().into()))
    }
}

impl Backend for PluginBackend {
    fn info(&self) -> BackendInfo {
        self.info.clone()
    }

    /// Checks the whole phase against the recorded handles (so the plugin never reads outside
    /// what it was lent), counts the four handles in flight, and calls the plugin's
    /// `groth16_g1`. A plugin that answers `Unsupported` gets the default body instead, built
    /// from its `h_poly` and `msm_g1`.
    fn groth16_g1(&self, input: &mut G1PhaseInput<'_>) -> Result<Vec<[G1Jacobian; 4]>> {
        let (_guards, recorded) = self.phase_in_flight(input)?;
        let batch = input.proofs.len();
        let answer = phase_call(input, |[a, b, c], log_n, proofs| {
            self.object
                .groth16_g1(a, b, c, log_n, proofs, recorded.into())
        });
        match answer {
            Ok(v) => {
                self.check_count("groth16_g1", v.len(), 4 * batch)?;
                Ok(g1_quads(&v))
            }
            Err(e) if e.code == codes::UNSUPPORTED => groth16_g1_from_primitives(self, input),
            Err(e) => Err(self.err(e)),
        }
    }

    /// As [`PluginBackend::groth16_g1`], with the b_g2 handle checked and counted in flight
    /// too. A plugin that answers `Unsupported` (one built before interface 2.2 does) gets the
    /// default body instead: its `groth16_g1`, then its `msm_g2`.
    fn groth16_g1_g2(&self, input: &mut G1PhaseInput<'_>, b_g2: BasesHandle) -> Result<G1G2Sums> {
        let (_guards, recorded) = self.phase_in_flight(input)?;
        let g2_guard = self.lookup(b_g2, Group::G2)?;
        let recorded_g2 = g2_guard.handle;
        check_b_g2(&recorded_g2, input.proofs)?;
        let batch = input.proofs.len();
        let answer = phase_call(input, |[a, b, c], log_n, proofs| {
            let (hs, b2) = (recorded.into(), recorded_g2.into());
            self.object.groth16_g1_g2(a, b, c, log_n, proofs, hs, b2)
        });
        match answer {
            Ok(Tuple2(g1, g2)) => {
                self.check_count("groth16_g1_g2", g1.len(), 4 * batch)?;
                if g2.len() != batch {
                    return Err(self.plugin_error(format!(
                        "groth16_g1_g2 returned {} G2 results for {batch} proofs",
                        g2.len()
                    )));
                }
                Ok((g1_quads(&g1), FfiG2Jacobian::to_layout(&g2).to_vec()))
            }
            Err(e) if e.code == codes::UNSUPPORTED => groth16_g1_g2_from_parts(self, input, b_g2),
            Err(e) => Err(self.err(e)),
        }
    }
}

impl PluginBackend {
    /// The four G1 handles of a phase counted in flight (while the returned guards live) and
    /// the host's record of them, against which the phase's shapes are checked.
    fn phase_in_flight(&self, input: &G1PhaseInput<'_>) -> Result<(Vec<InFlight<'_>>, G1Handles)> {
        let hs = input.handles;
        let guards = vec![
            self.lookup(hs.h, Group::G1)?,
            self.lookup(hs.l, Group::G1)?,
            self.lookup(hs.a, Group::G1)?,
            self.lookup(hs.b_g1, Group::G1)?,
        ];
        let recorded = G1Handles {
            h: guards[0].handle,
            l: guards[1].handle,
            a: guards[2].handle,
            b_g1: guards[3].handle,
        };
        input.check_with(&recorded)?;
        Ok((guards, recorded))
    }
}

/// A slice of Fr as the interface passes it (the same memory).
fn ffi_fr(x: &mut [Fr]) -> RSliceMut<'_, FfiFr> {
    RSliceMut::from_mut_slice(FfiFr::from_layout_mut(x))
}

/// Calls the plugin's G1 phase (`groth16_g1` or `groth16_g1_g2`, by `call`) on `input`: its
/// evaluations in place, each proof's assignment as its FFI view (dropped before this returns,
/// so that a caller falling back to the default body may borrow `input` again).
fn phase_call<T>(
    input: &mut G1PhaseInput<'_>,
    call: impl FnOnce(
        [RSliceMut<'_, FfiFr>; 3],
        u32,
        RSlice<'_, FfiProofAssignment<'_>>,
    ) -> RResult<T, FfiError>,
) -> std::result::Result<T, FfiError> {
    let proofs: Vec<FfiProofAssignment<'_>> =
        input.proofs.iter().map(FfiProofAssignment::from).collect();
    let evals = [ffi_fr(input.a), ffi_fr(input.b), ffi_fr(input.c)];
    call(evals, input.log_n, RSlice::from_slice(&proofs)).into_result()
}

/// A phase's flattened `[H, L, A', B₁']` points (the count checked by the caller), per proof.
fn g1_quads(v: &[FfiG1Jacobian]) -> Vec<[G1Jacobian; 4]> {
    FfiG1Jacobian::to_layout(v)
        .chunks_exact(4)
        .map(|r| [r[0], r[1], r[2], r[3]])
        .collect()
}

/// Wraps a backend in the plugin interface without loading a library: the same object, checks and
/// conversions as a loaded plugin, in process. For tests and for measuring the interface's cost.
pub fn in_process<B: Backend>(backend: B, label: impl Into<PathBuf>) -> Result<PluginBackend> {
    PluginBackend::new(super::export::Exported::into_object(backend), label)
}

#[cfg(test)]
#[path = "host_tests/mod.rs"]
mod tests;
