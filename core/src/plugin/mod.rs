//! Backend plugins: a versioned, layout-checked interface for backends living in shared libraries.
//!
//! The interface itself and the export side a plugin uses ([`abi`], [`interface`], [`export`],
//! [`INTERFACE_VERSION`], [`crate::export_backend!`]) live in `bellows-backend-api`, the crate a
//! plugin depends on, and are re-exported here; this module adds the host side: [`loader`] and
//! [`host`].
//!
//! A plugin is a `cdylib` that exports one abi_stable root module ([`BackendModule`]) through
//! [`crate::export_backend!`]; its `create` function returns the backend as an [`FfiBackend`]
//! trait object, which carries every operation of [`crate::Backend`]: `info`, batched `ntt`,
//! `h_poly`, resident bases (`load_bases_g1/g2`, `free_bases`), batched `msm_g1/g2` (jobs with
//! optional density bitmaps), the memory calls and the composite Groth16 G1 phase
//! (`groth16_g1`). On the host, [`PluginBackend`] wraps that object and implements [`crate::Backend`], so
//! the prover cannot tell a plugin from a built-in backend; [`loader`] finds and loads files.
//!
//! ## The contract, in short (docs/plugins.md has the long form)
//! - **Versioning.** [`INTERFACE_VERSION`] is checked at load: a different major version is
//!   rejected with both versions and the file in the error; then abi_stable compares the layout of
//!   every type of the interface. New operations are appended (prefix types), never inserted.
//! - **Data.** Scalars and points cross as slices of `u64` limbs in blst's Montgomery layout
//!   ([`abi`]), reinterpreted in place — no conversion, no copy. NTT data is transformed in place;
//!   MSM results come back as one vector per call, checked for length by the host.
//! - **Resident bases, zero-copy.** `load_bases_*` passes a pointer and length into host memory.
//!   The host keeps that memory alive and unchanged until `free_bases` for the handle has
//!   returned (and during every call naming it); the plugin may read it until then, never after.
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

pub use bellows_backend_api::plugin::{
    abi, check_interface_version, export, interface, BackendModule, BackendModuleRef,
    BackendObject, FfiBackend, FfiBackend_TO, FfiError, INTERFACE_MAJOR, INTERFACE_VERSION,
};

pub mod host;
pub mod loader;

pub use host::{in_process, PluginBackend};
pub use loader::{
    candidates, discover, find_plugin, load_backend, load_module, probe, search_dirs, Candidate,
    Discovered,
};

/// Items the [`crate::export_backend!`] expansion and test plugins name; not part of the API.
#[doc(hidden)]
pub use bellows_backend_api::plugin::__private;
