//! The versioned plugin interface: the root module a plugin exports and the backend object it
//! returns.
//!
//! Both are abi_stable prefix types: a later minor version of the interface appends fields to
//! [`BackendModule`] and methods to [`FfiBackend`] (after the current last one, which carries
//! `#[sabi(last_prefix_field)]`), and a host reads a field a plugin does not have as absent
//! instead of crashing (a method missing from an older plugin's vtable falls back to its default
//! body). Anything else is a new major version, which the loader rejects with both version
//! numbers in the error.
//!
//! ## History
//! - 3.2.0: [`FfiBackend::load_bases_g1_encoded`] and [`FfiBackend::load_bases_g2_encoded`]
//!   (bases as a parameters file encodes them, read by the plugin through an
//!   [`FfiEncodedPoints`] object and decoded on its side) are appended after
//!   `bases_need_host`. A 3.1 plugin lacks them and answers `Unsupported`; the host then
//!   decodes and calls `load_bases_g1` / `load_bases_g2` as before.
//! - 3.1.0: [`FfiBackend::bases_need_host`] is appended after `reserve_host`: a plugin that
//!   answers `false` for a handle (the CUDA backend, for a set held whole on its GPUs) lets the
//!   host drop the points it lent at once instead of at `free_bases`. A 3.0 plugin lacks it and
//!   the host keeps them, as before.
//! - 3.0.0: the types of the interface are defined in `bellows-backend-api` instead of
//!   `bellows-core`; nothing in them changed. abi_stable records the defining package in every
//!   type's layout, so a 2.x plugin would fail the layout check in a 3.0 host: the new major
//!   version makes that the clear version error instead. Rebuild the plugin against
//!   bellows-backend-api (or bellows-core, which re-exports it).
//!   [`FfiBackend::reserve_host`] (host memory made ready ahead of need) is appended after
//!   `groth16_g1_g2`.
//! - 2.2.0: [`FfiBackend::groth16_g1_g2`] (the G1 phase and the G2 sums B₂' in one call) is
//!   appended after `free_host`; a 2.0 or 2.1 plugin lacks it and answers `Unsupported`, and the
//!   host runs `groth16_g1` then `msm_g2` instead.
//! - 2.1.0: [`FfiBackend::alloc_host`] and [`FfiBackend::free_host`] (host memory the backend
//!   provides, pinned where it can) are appended after `groth16_g1`; a 2.0 plugin lacks them and
//!   its backend is taken to give none.
//! - 2.0.0: [`FfiMsmJob`] carries a density bitmap; [`FfiBackendConfig`] carries the options map;
//!   [`FfiBackend::groth16_g1`] (the composite G1 phase) is appended after `trim` and is the new
//!   last prefix method; capability bit 7 is `accelerator`; error code 6 is
//!   [`crate::Error::Backend`].
//! - 1.0.0: the first interface.

// The `sabi_trait` and `StableAbi` derives generate items without docs and with unsafe code.
#![allow(
    missing_docs,
    unsafe_code,
    clippy::undocumented_unsafe_blocks,
    clippy::too_many_arguments,
    clippy::len_without_is_empty,
    non_local_definitions
)]

use abi_stable::{
    declare_root_module_statics,
    library::RootModule,
    package_version_strings, sabi_trait,
    sabi_types::VersionStrings,
    std_types::{RBox, ROption, RResult, RSlice, RSliceMut, RVec, Tuple2},
    StableAbi,
};

use abi_stable::sabi_types::RRef;

use super::abi::{
    FfiBackendConfig, FfiBackendInfo, FfiBasesHandle, FfiEncodedLoad, FfiError, FfiFr, FfiG1Affine,
    FfiG1Handles, FfiG1Jacobian, FfiG2Affine, FfiG2Jacobian, FfiMemoryInfo, FfiMsmJob,
    FfiNttConfig, FfiProofAssignment,
};

/// [`crate::backend::EncodedPoints`] across the boundary: the host's reader of encoded points,
/// lent to the plugin for the duration of one `load_bases_gN_encoded` call. Its methods never
/// unwind (the host's side catches panics).
#[sabi_trait]
pub trait FfiEncodedPoints: Sync {
    /// Number of points.
    fn len(&self) -> u64;

    /// Fills `buf` with the encodings of the points from `first` on (a whole number of them).
    #[sabi(last_prefix_field)]
    fn read(&self, first: u64, buf: RSliceMut<'_, u8>) -> RResult<(), FfiError>;
}

/// The reader as the plugin receives it: borrowed for the call.
pub type EncodedPointsRef<'a> = FfiEncodedPoints_TO<'a, RRef<'a, ()>>;

/// Version of the plugin interface, `major.minor.patch`. A plugin whose interface major version
/// differs from the host's is rejected at load time.
pub const INTERFACE_VERSION: &str = "3.2.0";

/// Major part of [`INTERFACE_VERSION`].
pub const INTERFACE_MAJOR: u32 = 3;

/// Checks the interface version a plugin was built for (its root module's version string)
/// against the host's [`INTERFACE_VERSION`]: the major versions must be equal (minor versions
/// only append, see the module docs). The error names both versions and the remedy.
pub fn check_interface_version(theirs: &str) -> Result<(), String> {
    let their_major = theirs.split('.').next().and_then(|m| m.parse::<u32>().ok());
    if their_major == Some(INTERFACE_MAJOR) {
        return Ok(());
    }
    Err(format!(
        "built for plugin interface version {theirs}, but this host speaks interface version \
         {INTERFACE_VERSION} (major versions must match: rebuild the plugin against this host's \
         bellows-backend-api)"
    ))
}

/// Base name of the root module (used in abi_stable's messages).
pub const ROOT_MODULE_NAME: &str = "bellows_backend";

/// The backend object a plugin hands to the host: every operation of [`crate::Backend`].
///
/// All methods return `RResult<_, FfiError>` and must never unwind (the [`crate::export_backend`]
/// glue catches panics). Methods take `&self` and may be called from several threads at once.
#[sabi_trait]
pub trait FfiBackend: Send + Sync {
    /// Name, version, devices, capabilities.
    fn info(&self) -> RResult<FfiBackendInfo, FfiError>;

    /// [`crate::backend::Ntt::ntt`] on `data` in place.
    fn ntt(
        &self,
        data: RSliceMut<'_, FfiFr>,
        log_n: u32,
        cfg: FfiNttConfig,
    ) -> RResult<(), FfiError>;

    /// [`crate::backend::Ntt::h_poly`] in place (`b` and `c` are clobbered).
    fn h_poly(
        &self,
        a: RSliceMut<'_, FfiFr>,
        b: RSliceMut<'_, FfiFr>,
        c: RSliceMut<'_, FfiFr>,
        log_n: u32,
    ) -> RResult<(), FfiError>;

    /// Makes `len` G1 points at `points` resident and returns their handle.
    ///
    /// # Safety
    /// `points..points+len` is host memory that the host keeps valid and unchanged until
    /// [`FfiBackend::free_bases`] for the returned handle has returned (and during every call that
    /// names the handle). The plugin may keep and read the pointer until then, never after.
    unsafe fn load_bases_g1(
        &self,
        points: *const FfiG1Affine,
        len: u64,
    ) -> RResult<FfiBasesHandle, FfiError>;

    /// G2 counterpart of [`FfiBackend::load_bases_g1`], with the same contract.
    ///
    /// # Safety
    /// As for [`FfiBackend::load_bases_g1`].
    unsafe fn load_bases_g2(
        &self,
        points: *const FfiG2Affine,
        len: u64,
    ) -> RResult<FfiBasesHandle, FfiError>;

    /// Releases resident bases; the plugin drops every reference to their host memory.
    fn free_bases(&self, handle: FfiBasesHandle) -> RResult<(), FfiError>;

    /// Runs every job over G1 bases; returns one result per job, in order.
    fn msm_g1(
        &self,
        handle: FfiBasesHandle,
        jobs: RSlice<'_, FfiMsmJob<'_>>,
    ) -> RResult<RVec<FfiG1Jacobian>, FfiError>;

    /// Runs every job over G2 bases; returns one result per job, in order.
    fn msm_g2(
        &self,
        handle: FfiBasesHandle,
        jobs: RSlice<'_, FfiMsmJob<'_>>,
    ) -> RResult<RVec<FfiG2Jacobian>, FfiError>;

    /// [`crate::backend::MemoryPool::memory_info`].
    fn memory_info(&self) -> RResult<FfiMemoryInfo, FfiError>;

    /// [`crate::backend::MemoryPool::set_memory_budget`].
    fn set_memory_budget(&self, bytes: ROption<u64>) -> RResult<(), FfiError>;

    /// [`crate::backend::MemoryPool::pin_host`].
    ///
    /// # Safety
    /// `ptr..ptr+len` stays allocated until [`FfiBackend::unpin_host`] is called for it.
    unsafe fn pin_host(&self, ptr: *const u8, len: u64) -> RResult<bool, FfiError>;

    /// [`crate::backend::MemoryPool::unpin_host`].
    ///
    /// # Safety
    /// `ptr` was pinned by `pin_host` on this backend, or is not pinned at all.
    unsafe fn unpin_host(&self, ptr: *const u8) -> RResult<(), FfiError>;

    /// [`crate::backend::MemoryPool::trim`].
    fn trim(&self) -> RResult<(), FfiError>;

    /// [`crate::Backend::groth16_g1`]: the G1 phase of `proofs.len()` proofs. `a`, `b`, `c` hold
    /// `proofs.len() × 2^log_n` evaluations each and are clobbered. Returns `[H, L, A', B₁']` per
    /// proof, flattened (4 × `proofs.len()` points, proof after proof).
    ///
    /// The default answers `Unsupported`; the host then runs the phase from `h_poly` and `msm_g1`
    /// itself. [`crate::export_backend!`] plugins answer with their [`crate::Backend`]'s method
    /// (whose own default is built from `h_poly` and `msm_g1` on the plugin side).
    #[sabi(last_prefix_field)]
    fn groth16_g1(
        &self,
        a: RSliceMut<'_, FfiFr>,
        b: RSliceMut<'_, FfiFr>,
        c: RSliceMut<'_, FfiFr>,
        log_n: u32,
        proofs: RSlice<'_, FfiProofAssignment<'_>>,
        handles: FfiG1Handles,
    ) -> RResult<RVec<FfiG1Jacobian>, FfiError> {
        let _ = (a, b, c, log_n, proofs, handles);
        RResult::RErr(FfiError::unsupported("plugin", "groth16_g1"))
    }

    /// [`crate::backend::MemoryPool::alloc_host`]: `bytes` of host memory aligned to
    /// [`crate::backend::HOST_ALIGN`], or null when the plugin has none to give (the default:
    /// interface 2.0 plugins give none, and the host uses its heap).
    fn alloc_host(&self, bytes: u64) -> RResult<*mut u8, FfiError> {
        let _ = bytes;
        RResult::ROk(std::ptr::null_mut())
    }

    /// [`crate::backend::MemoryPool::free_host`].
    ///
    /// # Safety
    /// `ptr` was returned by [`FfiBackend::alloc_host`] with the same `bytes` on this plugin's
    /// backend, is freed once, and is not used afterwards.
    unsafe fn free_host(&self, ptr: *mut u8, bytes: u64) -> RResult<(), FfiError> {
        let _ = (ptr, bytes);
        RResult::ROk(())
    }

    /// [`crate::Backend::groth16_g1_g2`]: [`FfiBackend::groth16_g1`]'s phase and, per proof,
    /// B₂' over the G2 bases `b_g2` (the B density jobs). Returns the `[H, L, A', B₁']` points
    /// flattened as `groth16_g1` does, and one G2 point per proof.
    ///
    /// The default (a plugin built against an interface before 2.2) answers `Unsupported`; the
    /// host then calls `groth16_g1` and `msm_g2` itself. [`crate::export_backend!`] plugins
    /// answer with their [`crate::Backend`]'s method.
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
        let _ = (a, b, c, log_n, proofs, handles, b_g2);
        RResult::RErr(FfiError::unsupported("plugin", "groth16_g1_g2"))
    }

    /// [`crate::backend::MemoryPool::reserve_host`]: block sizes in bytes. The default does
    /// nothing.
    fn reserve_host(&self, sizes: RSlice<'_, u64>) -> RResult<(), FfiError> {
        let _ = sizes;
        RResult::ROk(())
    }

    /// [`crate::backend::Msm::bases_need_host`]: whether the plugin still reads the points the
    /// host lent for `handle`. The default (a plugin built before 3.1): yes, and the host keeps
    /// them until `free_bases`.
    fn bases_need_host(&self, handle: FfiBasesHandle) -> RResult<bool, FfiError> {
        let _ = handle;
        RResult::ROk(true)
    }

    /// [`crate::backend::Msm::load_bases_g1_encoded`]: the plugin reads the points through
    /// `points` (valid for this call only) and keeps no reference to it. The default (a plugin
    /// built before 3.2) answers `Unsupported` without reading.
    fn load_bases_g1_encoded(
        &self,
        points: EncodedPointsRef<'_>,
    ) -> RResult<FfiEncodedLoad, FfiError> {
        let _ = points;
        RResult::RErr(FfiError::unsupported("plugin", "load_bases_g1_encoded"))
    }

    /// G2 counterpart of [`FfiBackend::load_bases_g1_encoded`].
    fn load_bases_g2_encoded(
        &self,
        points: EncodedPointsRef<'_>,
    ) -> RResult<FfiEncodedLoad, FfiError> {
        let _ = points;
        RResult::RErr(FfiError::unsupported("plugin", "load_bases_g2_encoded"))
    }
}

/// The owned, type-erased backend object crossing the boundary.
pub type BackendObject = FfiBackend_TO<'static, RBox<()>>;

/// Signature of [`BackendModule::create`].
pub type CreateFn = extern "C" fn(FfiBackendConfig) -> RResult<BackendObject, FfiError>;

/// The root module every plugin exports (through [`crate::export_backend`]).
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = BackendModuleRef)))]
#[sabi(missing_field(panic))]
pub struct BackendModule {
    /// Creates the plugin's backend with a configuration. Must not unwind.
    #[sabi(last_prefix_field)]
    pub create: extern "C" fn(FfiBackendConfig) -> RResult<BackendObject, FfiError>,
}

impl RootModule for BackendModuleRef {
    declare_root_module_statics! {BackendModuleRef}
    const BASE_NAME: &'static str = ROOT_MODULE_NAME;
    const NAME: &'static str = "bellows backend plugin";
    const VERSION_STRINGS: VersionStrings = VersionStrings::new(INTERFACE_VERSION);
}

/// The bellows-backend-api version a plugin or host was built with (for messages).
pub const API_VERSION: VersionStrings = package_version_strings!();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_version_decides() {
        assert!(INTERFACE_VERSION.starts_with(&format!("{INTERFACE_MAJOR}.")));
        assert_eq!(check_interface_version(INTERFACE_VERSION), Ok(()));
        assert_eq!(
            check_interface_version(&format!("{INTERFACE_MAJOR}.99.1")),
            Ok(())
        );
        for other in [
            format!("{}.0.0", INTERFACE_MAJOR + 1),
            "2.2.0".into(),
            "x".into(),
        ] {
            let e = check_interface_version(&other).unwrap_err();
            assert!(e.contains(&other) && e.contains(INTERFACE_VERSION), "{e}");
        }
    }
}
