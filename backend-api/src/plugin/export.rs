//! The plugin side: turns any [`Backend`] into the [`FfiBackend`] object a plugin exports.
//!
//! [`crate::export_backend!`] is the one-line entry; it expands to a `static` root module whose
//! `create` calls [`create_object`]. Every entry point of the resulting object runs inside
//! [`std::panic::catch_unwind`], so a panic in the backend becomes an [`FfiError`] with code
//! [`super::abi::codes::PANIC`] instead of unwinding into the host (which would abort the process).

#![allow(unsafe_code)]

use std::{
    mem::ManuallyDrop,
    panic::{catch_unwind, AssertUnwindSafe},
    sync::Arc,
};

use abi_stable::{
    sabi_trait::TD_Opaque,
    std_types::{ROption, RResult, RSlice, RSliceMut, RVec, Tuple2},
};

use super::{
    abi::{
        FfiBackendConfig, FfiBackendInfo, FfiBasesHandle, FfiEncodedLoad, FfiError, FfiFr,
        FfiG1Affine, FfiG1Handles, FfiG1Jacobian, FfiG2Affine, FfiG2Jacobian, FfiMemoryInfo,
        FfiMsmJob, FfiNttConfig, FfiProofAssignment,
    },
    interface::{
        BackendModule, BackendModuleRef, BackendObject, CreateFn, EncodedPointsRef, FfiBackend,
        FfiBackend_TO,
    },
};
use crate::{
    backend::{
        Backend, BackendConfig, BasesHandle, EncodedPoints, G1PhaseInput, MsmJob, PointSource,
        ProofAssignment, SharedPoints,
    },
    layout::{G1Affine, G1Jacobian, G2Affine},
    Error, Result,
};

/// Runs `f`, turning an error into an [`FfiError`] and a panic into a [`super::abi::codes::PANIC`] error
/// naming `call`.
pub fn guard<T>(call: &str, f: impl FnOnce() -> Result<T>) -> RResult<T, FfiError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => RResult::ROk(v),
        Ok(Err(e)) => RResult::RErr(FfiError::from(&e)),
        Err(payload) => RResult::RErr(FfiError::panic(call, &*payload)),
    }
}

/// Host memory lent to the plugin by `load_bases_*`: valid until `free_bases` returns (the
/// interface contract, see [`FfiBackend::load_bases_g1`]).
struct HostPoints<T> {
    ptr: *const T,
    len: usize,
}

// SAFETY: the points are immutable plain data owned by the host, which keeps them alive and
// unchanged for as long as the backend may hold this value (until `free_bases`); sharing reads
// across threads is sound.
unsafe impl<T> Send for HostPoints<T> {}
// SAFETY: as above: shared read-only access.
unsafe impl<T> Sync for HostPoints<T> {}

impl<T: Send + Sync> PointSource<T> for HostPoints<T> {
    fn points(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the host guarantees `ptr..ptr+len` is valid, aligned and unchanged while the
        // backend holds this value (interface contract of `load_bases_*`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A [`Backend`] wrapped as the FFI object. Its destructor also runs under `catch_unwind`.
pub struct Exported<B: Backend> {
    inner: ManuallyDrop<B>,
}

impl<B: Backend> Exported<B> {
    /// Wraps `backend`.
    pub fn new(backend: B) -> Self {
        Self {
            inner: ManuallyDrop::new(backend),
        }
    }

    /// Wraps `backend` into the owned, type-erased object handed to the host.
    pub fn into_object(backend: B) -> BackendObject {
        FfiBackend_TO::from_value(Self::new(backend), TD_Opaque)
    }
}

impl<B: Backend> Drop for Exported<B> {
    fn drop(&mut self) {
        let inner = &mut self.inner;
        // SAFETY: `inner` is dropped exactly once, here; it is not used afterwards.
        let r = catch_unwind(AssertUnwindSafe(|| unsafe { ManuallyDrop::drop(inner) }));
        if r.is_err() {
            // Nothing to return to: the panic hook has printed the message; say where it came
            // from. (Standard error, not a log: a plugin's log macros would reach its own copy
            // of the logger's statics, which no host subscriber listens to.)
            eprintln!("a plugin backend panicked while being dropped");
        }
    }
}

impl<T: Send + Sync + 'static> HostPoints<T> {
    /// The `len` points at `ptr` that the host lends with `load_bases_*`, as a point source.
    fn lent(ptr: *const T, len: u64) -> Result<SharedPoints<T>> {
        let len = usize::try_from(len)
            .map_err(|_| Error::invalid(format!("{len} points do not fit in usize")))?;
        Ok(Arc::new(HostPoints { ptr, len }))
    }
}

/// The host's reader of encoded points (`load_bases_gN_encoded`), as the backend's
/// [`EncodedPoints`]. A failed read reaches the backend as an invalid-input error carrying the
/// host's message; the host reports its own error, which it kept, whatever the backend returns.
struct HostReader<'a>(EncodedPointsRef<'a>);

impl EncodedPoints for HostReader<'_> {
    fn len(&self) -> u64 {
        self.0.len()
    }

    fn read(&self, first: u64, buf: &mut [u8]) -> Result<()> {
        self.0
            .read(first, buf.into())
            .into_result()
            .map_err(|e| Error::invalid(format!("reading encoded points: {}", e.message)))
    }
}

/// A byte count the host passed to `call`, as a `usize`.
fn host_bytes(call: &str, bytes: u64) -> Result<usize> {
    usize::try_from(bytes).map_err(|_| Error::invalid(format!("{call}: {bytes} bytes do not fit")))
}

/// Runs the MSM `call` on the interface's `handle` and `jobs`, one result per job.
fn run_msm<P: Clone + Default>(
    handle: FfiBasesHandle,
    jobs: &RSlice<'_, FfiMsmJob<'_>>,
    call: impl FnOnce(BasesHandle, &[MsmJob<'_>], &mut [P]) -> Result<()>,
) -> Result<Vec<P>> {
    let jobs = jobs
        .iter()
        .map(FfiMsmJob::to_job)
        .collect::<Result<Vec<_>>>()?;
    let mut out = vec![P::default(); jobs.len()];
    call(handle_from(handle)?, &jobs, &mut out)?;
    Ok(out)
}

fn handle_from(h: FfiBasesHandle) -> Result<BasesHandle> {
    h.to_handle().ok_or_else(|| {
        Error::invalid(format!(
            "bases handle {} has unknown group code {}",
            h.id, h.group
        ))
    })
}

/// The calls of one group, `load_bases_gN` and `msm_gN`, written once for G1 and G2: the points
/// the host lends become a point source, MSM results come back as FFI points.
macro_rules! group_calls {
    ($load:ident, $msm:ident, $ffi_affine:ty, $affine:ty, $ffi_jacobian:ident) => {
        unsafe fn $load(
            &self,
            points: *const $ffi_affine,
            len: u64,
        ) -> RResult<FfiBasesHandle, FfiError> {
            guard(stringify!($load), || {
                let src = HostPoints::lent(points.cast::<$affine>(), len)?;
                self.inner.$load(src).map(FfiBasesHandle::from)
            })
        }

        fn $msm(
            &self,
            handle: FfiBasesHandle,
            jobs: RSlice<'_, FfiMsmJob<'_>>,
        ) -> RResult<RVec<$ffi_jacobian>, FfiError> {
            guard(stringify!($msm), || {
                let out = run_msm(handle, &jobs, |h, j, out| self.inner.$msm(h, j, out))?;
                Ok($ffi_jacobian::from_layout(&out).into())
            })
        }
    };
}

impl<B: Backend> FfiBackend for Exported<B> {
    fn info(&self) -> RResult<FfiBackendInfo, FfiError> {
        guard("info", || Ok(FfiBackendInfo::from(&self.inner.info())))
    }

    fn ntt(
        &self,
        mut data: RSliceMut<'_, FfiFr>,
        log_n: u32,
        cfg: FfiNttConfig,
    ) -> RResult<(), FfiError> {
        let cfg = match cfg.to_config() {
            Ok(c) => c,
            Err(e) => return RResult::RErr(e),
        };
        guard("ntt", || {
            self.inner
                .ntt(FfiFr::to_layout_mut(data.as_mut_slice()), log_n, &cfg)
        })
    }

    fn h_poly(
        &self,
        mut a: RSliceMut<'_, FfiFr>,
        mut b: RSliceMut<'_, FfiFr>,
        mut c: RSliceMut<'_, FfiFr>,
        log_n: u32,
    ) -> RResult<(), FfiError> {
        guard("h_poly", || {
            self.inner.h_poly(
                FfiFr::to_layout_mut(a.as_mut_slice()),
                FfiFr::to_layout_mut(b.as_mut_slice()),
                FfiFr::to_layout_mut(c.as_mut_slice()),
                log_n,
            )
        })
    }

    group_calls!(load_bases_g1, msm_g1, FfiG1Affine, G1Affine, FfiG1Jacobian);
    group_calls!(load_bases_g2, msm_g2, FfiG2Affine, G2Affine, FfiG2Jacobian);

    fn free_bases(&self, handle: FfiBasesHandle) -> RResult<(), FfiError> {
        guard("free_bases", || self.inner.free_bases(handle_from(handle)?))
    }

    fn memory_info(&self) -> RResult<FfiMemoryInfo, FfiError> {
        guard("memory_info", || {
            self.inner.memory_info().map(FfiMemoryInfo::from)
        })
    }

    fn set_memory_budget(&self, bytes: ROption<u64>) -> RResult<(), FfiError> {
        guard("set_memory_budget", || {
            self.inner.set_memory_budget(bytes.into_option())
        })
    }

    unsafe fn pin_host(&self, ptr: *const u8, len: u64) -> RResult<bool, FfiError> {
        guard("pin_host", || {
            let len = host_bytes("pin_host", len)?;
            // SAFETY: forwarded contract: the host keeps the range allocated until `unpin_host`.
            unsafe { self.inner.pin_host(ptr, len) }
        })
    }

    unsafe fn unpin_host(&self, ptr: *const u8) -> RResult<(), FfiError> {
        // SAFETY: forwarded contract of `unpin_host`.
        guard("unpin_host", || unsafe { self.inner.unpin_host(ptr) })
    }

    fn trim(&self) -> RResult<(), FfiError> {
        guard("trim", || self.inner.trim())
    }

    fn groth16_g1(
        &self,
        a: RSliceMut<'_, FfiFr>,
        b: RSliceMut<'_, FfiFr>,
        c: RSliceMut<'_, FfiFr>,
        log_n: u32,
        proofs: RSlice<'_, FfiProofAssignment<'_>>,
        handles: FfiG1Handles,
    ) -> RResult<RVec<FfiG1Jacobian>, FfiError> {
        guard("groth16_g1", || {
            let out = with_phase_input([a, b, c], log_n, proofs, handles, |input| {
                self.inner.groth16_g1(input)
            })?;
            Ok(flat_quads(&out))
        })
    }

    fn groth16_g1_g2(
        &self,
        a: RSliceMut<'_, FfiFr>,
        b: RSliceMut<'_, FfiFr>,
        c: RSliceMut<'_, FfiFr>,
        log_n: u32,
        proofs: RSlice<'_, FfiProofAssignment<'_>>,
        handles: FfiG1Handles,
        b_g2: FfiBasesHandle,
    ) -> RResult<Tuple2<RVec<FfiG1Jacobian>, RVec<FfiG2Jacobian>>, FfiError> {
        guard("groth16_g1_g2", || {
            let b_g2 = b_g2.to_handle().ok_or_else(|| {
                Error::invalid("groth16_g1_g2: the b_g2 handle has an unknown group code")
            })?;
            let (g1, g2) = with_phase_input([a, b, c], log_n, proofs, handles, |input| {
                self.inner.groth16_g1_g2(input, b_g2)
            })?;
            let g2: RVec<FfiG2Jacobian> = FfiG2Jacobian::from_layout(&g2).iter().copied().collect();
            Ok(Tuple2(flat_quads(&g1), g2))
        })
    }

    fn alloc_host(&self, bytes: u64) -> RResult<*mut u8, FfiError> {
        guard("alloc_host", || {
            let bytes = host_bytes("alloc_host", bytes)?;
            Ok(self
                .inner
                .alloc_host(bytes)?
                .map_or(std::ptr::null_mut(), |p| p.as_ptr()))
        })
    }

    unsafe fn free_host(&self, ptr: *mut u8, bytes: u64) -> RResult<(), FfiError> {
        guard("free_host", || {
            let Some(p) = std::ptr::NonNull::new(ptr) else {
                return Ok(());
            };
            let bytes = host_bytes("free_host", bytes)?;
            // SAFETY: forwarded contract: from `alloc_host(bytes)` of this backend, freed once.
            unsafe { self.inner.free_host(p, bytes) }
        })
    }

    fn reserve_host(&self, sizes: RSlice<'_, u64>) -> RResult<(), FfiError> {
        guard("reserve_host", || {
            let sizes = sizes
                .iter()
                .map(|&b| host_bytes("reserve_host", b))
                .collect::<Result<Vec<usize>>>()?;
            self.inner.reserve_host(&sizes)
        })
    }

    fn bases_need_host(&self, handle: FfiBasesHandle) -> RResult<bool, FfiError> {
        guard("bases_need_host", || {
            self.inner.bases_need_host(handle_from(handle)?)
        })
    }

    fn load_bases_g1_encoded(
        &self,
        points: EncodedPointsRef<'_>,
    ) -> RResult<FfiEncodedLoad, FfiError> {
        guard("load_bases_g1_encoded", || {
            let l = self.inner.load_bases_g1_encoded(&HostReader(points))?;
            Ok(FfiEncodedLoad::from(l))
        })
    }

    fn load_bases_g2_encoded(
        &self,
        points: EncodedPointsRef<'_>,
    ) -> RResult<FfiEncodedLoad, FfiError> {
        guard("load_bases_g2_encoded", || {
            let l = self.inner.load_bases_g2_encoded(&HostReader(points))?;
            Ok(FfiEncodedLoad::from(l))
        })
    }
}

/// Runs `f` on the [`G1PhaseInput`] the interface's arguments describe (a, b, c in place).
fn with_phase_input<T>(
    [mut a, mut b, mut c]: [RSliceMut<'_, FfiFr>; 3],
    log_n: u32,
    proofs: RSlice<'_, FfiProofAssignment<'_>>,
    handles: FfiG1Handles,
    f: impl FnOnce(&mut G1PhaseInput<'_>) -> Result<T>,
) -> Result<T> {
    let handles = handles
        .to_handles()
        .ok_or_else(|| Error::invalid("groth16_g1: a bases handle has an unknown group code"))?;
    let proofs: Vec<ProofAssignment<'_>> = proofs
        .as_slice()
        .iter()
        .map(ProofAssignment::from)
        .collect();
    f(&mut G1PhaseInput {
        a: FfiFr::to_layout_mut(a.as_mut_slice()),
        b: FfiFr::to_layout_mut(b.as_mut_slice()),
        c: FfiFr::to_layout_mut(c.as_mut_slice()),
        log_n,
        proofs: &proofs,
        handles,
    })
}

/// Per-proof `[H, L, A', B₁']` flattened for the interface.
fn flat_quads(out: &[[G1Jacobian; 4]]) -> RVec<FfiG1Jacobian> {
    out.iter()
        .flat_map(|r| FfiG1Jacobian::from_layout(r).iter().copied())
        .collect()
}

/// Runs a plugin's constructor on the FFI configuration and wraps the backend; used by
/// [`crate::export_backend!`]. Errors and panics of the constructor become [`FfiError`]s.
pub fn create_object<B, F>(cfg: FfiBackendConfig, create: F) -> RResult<BackendObject, FfiError>
where
    B: Backend,
    F: FnOnce(&BackendConfig) -> Result<B>,
{
    guard("create", || {
        let cfg = BackendConfig::from(cfg);
        create(&cfg).map(Exported::into_object)
    })
}

/// Builds the root module around a `create` function (leaked: modules live for the process).
pub fn module(create: CreateFn) -> BackendModuleRef {
    use abi_stable::prefix_type::PrefixTypeTrait;
    BackendModule { create }.leak_into_prefix()
}

/// Exported symbol of the root module (abi_stable's `ROOT_MODULE_LOADER_NAME`); checked by a test.
#[doc(hidden)]
pub const ROOT_SYMBOL: &str = "_1as_0lib_1header_0root_bmodule_bloader";

/// Builds the root module around a constructor that returns the FFI object itself; used by
/// [`crate::export_backend_object!`]. Errors and panics of the constructor become [`FfiError`]s.
pub fn create_raw<F>(cfg: FfiBackendConfig, create: F) -> RResult<BackendObject, FfiError>
where
    F: FnOnce(&BackendConfig) -> Result<BackendObject>,
{
    guard("create", || create(&BackendConfig::from(cfg)))
}

/// Turns a crate into a Bellows backend plugin.
///
/// The argument is a constructor `FnOnce(&BackendConfig) -> bellows_backend_api::Result<B>` for
/// any `B: Backend` (a function path or a closure). Put it at the top level of a `cdylib` crate:
///
/// ```ignore
/// bellows_backend_api::export_backend!(my_backend::MyBackend::with_config);
/// ```
///
/// It exports the plugin's root module (interface [`crate::plugin::INTERFACE_VERSION`]); every
/// call into the backend, its constructor and its destructor run under `catch_unwind`, so a panic
/// reaches the host as an error value. The crate must be built with `panic = "unwind"` (the
/// default). The macro needs no dependency besides `bellows-backend-api` (or `bellows-core`, which
/// re-exports it).
#[macro_export]
macro_rules! export_backend {
    ($create:expr $(,)?) => {
        $crate::__bellows_plugin_header!(|cfg| $crate::plugin::export::create_object(cfg, $create));
    };
}

/// Like [`crate::export_backend!`], for a plugin that implements [`FfiBackend`] itself: the
/// constructor returns `bellows_backend_api::Result<BackendObject>`. Such a plugin must catch
/// panics in its own methods (see [`guard`]); the constructor is guarded here.
#[macro_export]
macro_rules! export_backend_object {
    ($create:expr $(,)?) => {
        $crate::__bellows_plugin_header!(|cfg| $crate::plugin::export::create_raw(cfg, $create));
    };
}

/// The exported root-module header shared by the export macros (not part of the API).
#[doc(hidden)]
#[macro_export]
macro_rules! __bellows_plugin_header {
    ($body:expr) => {
        /// The Bellows plugin root module (abi_stable library header).
        #[doc(hidden)]
        #[export_name = "_1as_0lib_1header_0root_bmodule_bloader"]
        pub static BELLOWS_BACKEND_PLUGIN_HEADER: $crate::plugin::__private::LibHeader = {
            extern "C" fn __bellows_create(
                cfg: $crate::plugin::abi::FfiBackendConfig,
            ) -> $crate::plugin::__private::RResult<
                $crate::plugin::BackendObject,
                $crate::plugin::abi::FfiError,
            > {
                let body: fn(
                    $crate::plugin::abi::FfiBackendConfig,
                ) -> $crate::plugin::__private::RResult<
                    $crate::plugin::BackendObject,
                    $crate::plugin::abi::FfiError,
                > = $body;
                body(cfg)
            }
            fn __bellows_module() -> $crate::plugin::BackendModuleRef {
                $crate::plugin::export::module(__bellows_create)
            }
            extern "C" fn __bellows_root() -> $crate::plugin::__private::RootModuleResult {
                $crate::plugin::__private::__call_root_module_loader(__bellows_module)
            }
            // SAFETY: `__bellows_root` returns the prefix reference of a `BackendModuleRef`, the
            // type the header is declared for.
            unsafe {
                $crate::plugin::__private::LibHeader::from_constructor::<
                    $crate::plugin::BackendModuleRef,
                >(
                    __bellows_root,
                    $crate::plugin::__private::CheckTypeLayout::Yes,
                )
            }
        };
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::abi::codes;

    #[test]
    fn root_symbol_matches_abi_stable() {
        assert_eq!(ROOT_SYMBOL, abi_stable::library::ROOT_MODULE_LOADER_NAME);
    }

    #[test]
    fn guard_catches_panics_and_errors() {
        let r: RResult<u32, FfiError> = guard("msm_g1", || panic!("kaboom {}", 3));
        let e = r.into_result().unwrap_err();
        assert_eq!(e.code, codes::PANIC);
        assert_eq!(e.subject.as_str(), "msm_g1");
        assert_eq!(e.message.as_str(), "kaboom 3");
        let r: RResult<u32, FfiError> = guard("x", || Err(Error::invalid("nope")));
        assert_eq!(r.into_result().unwrap_err().code, codes::INVALID_INPUT);
        let r: RResult<u32, FfiError> = guard("x", || Ok(5));
        assert_eq!(r.into_result().unwrap(), 5);
    }
}
