//! The plugin ABI: a versioned, layout-checked interface for backends living in shared libraries,
//! and the export side of it.
//!
//! A plugin is a `cdylib` that exports one abi_stable root module ([`BackendModule`]) through
//! [`crate::export_backend!`]; its `create` function returns the backend as an [`FfiBackend`]
//! trait object, which carries every operation of [`crate::Backend`]: `info`, batched `ntt`,
//! `h_poly`, resident bases (`load_bases_g1/g2`, `free_bases`), batched `msm_g1/g2` (jobs with
//! optional density bitmaps), the memory calls and the composite Groth16 G1 phase
//! (`groth16_g1`). The host side (finding and loading files, and the wrapper that makes a loaded
//! plugin a `Backend` again) is bellows-core's `plugin` module, which re-exports this one.
//!
//! ## The contract, in short (docs/plugins.md has the long form)
//! - **Versioning.** [`INTERFACE_VERSION`] is checked at load ([`check_interface_version`]): a
//!   different major version is rejected with both versions and the file in the error; then
//!   abi_stable compares the layout of every type of the interface. New operations are appended
//!   (prefix types), never inserted.
//! - **Data.** Scalars and points cross as slices of `u64` limbs in blst's Montgomery layout
//!   ([`abi`]), reinterpreted in place — no conversion, no copy. NTT data is transformed in place;
//!   MSM results come back as one vector per call, checked for length by the host.
//! - **Resident bases, zero-copy.** `load_bases_*` passes a pointer and length into host memory.
//!   The host keeps that memory alive and unchanged until `free_bases` for the handle has
//!   returned (and during every call naming it); the plugin may read it until then, never after.
//!   A plugin that answers `bases_need_host(handle) == false` right after the load (it keeps its
//!   own copy) promises never to read it again, and the host drops it then.
//!   Handles are checked on the host: a freed handle is an invalid-input error before the plugin
//!   is called, job ranges and density bitmaps never leave the lent points, and `free_bases` is
//!   refused while a call naming the handle is in flight.
//! - **Errors.** Every entry point returns `RResult<_, FfiError>`; out-of-memory, unsupported,
//!   invalid-input, device and backend errors keep their category in [`crate::Error`], and name
//!   the file.
//! - **Panics.** Never cross the boundary: the export glue runs every call (and the constructor and
//!   destructor) under `catch_unwind` and returns a panic as an [`crate::Error::Plugin`] naming the
//!   entry point. Plugins must be built with `panic = "unwind"`.
//! - **Threads.** The backend object is `Send + Sync`; the host may call it from several threads
//!   at once.
//! - **Lifetime.** Libraries are never unloaded; several plugins can be loaded in one process.

pub mod abi;
pub mod export;
pub mod interface;
#[cfg(feature = "plugin-log")]
pub mod log;

pub use abi::FfiError;
pub use interface::{
    check_interface_version, BackendModule, BackendModuleRef, BackendObject, FfiBackend,
    FfiBackend_TO, INTERFACE_MAJOR, INTERFACE_VERSION,
};

/// Items the [`crate::export_backend!`] expansion and test plugins name; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use abi_stable;
    pub use abi_stable::library::{
        __call_root_module_loader, CheckTypeLayout, LibHeader, RootModuleResult,
    };
    pub use abi_stable::std_types::RResult;
}
