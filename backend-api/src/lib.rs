//! # bellows-backend-api
//!
//! What a Bellows backend depends on, and nothing of the prover: a vendor's plugin, the CPU
//! backend and the GPU backends build against this crate alone, while the prover (Groth16, the
//! pre-compiled constraint systems, the pipeline, the circuits, the plugin loader) lives in
//! `bellows-core`, which re-exports every module here under the same path.
//!
//! - [`layout`]: the `#[repr(C)]` layout in which scalars and points cross to a backend;
//! - [`backend`]: the [`backend::Ntt`], [`backend::Msm`], [`backend::MemoryPool`] and
//!   [`Backend`] traits, their configuration and info types, and the default bodies of the
//!   composite operations (the quotient [`backend::quotient`], the Groth16 G1 phase);
//! - [`plugin`]: the versioned plugin ABI and the export side of it, [`export_backend!`];
//! - [`builtin`]: the link-time registry a backend compiled into a binary submits itself to;
//! - [`host_msm`]: multi-scalar multiplication on host threads (blst's Pippenger), the reference
//!   a backend can fall back on;
//! - [`host_memory`]: free and total host memory, container limits included;
//! - [`page_advice`]: advice to the kernel about large host buffers (huge pages, populating
//!   ahead), for the prover's buffers and a backend's own pinned memory;
//! - [`units`]: the one byte-size parser and formatter (`8GiB`, `1.5GB`), for backend options;
//! - [`error`]: the one error type.
//!
//! A plugin is a `cdylib` that implements [`Backend`] and exports it in one line:
//!
//! ```ignore
//! bellows_backend_api::export_backend!(my_backend::MyBackend::with_config);
//! ```
//!
//! The vendor guide (`docs/plugins.md` in the repository) has the whole route, and
//! `examples/vendor-plugin` a complete plugin.

#![warn(missing_docs)]
// FFI lives in a few modules (the layout's zero-copy views, the plugin ABI, blst's MSM); each of
// them allows `unsafe` for itself and says why at every use.
#![deny(unsafe_code)]

pub mod backend;
pub mod builtin;
pub mod error;
pub mod host_memory;
pub mod host_msm;
pub mod layout;
pub mod page_advice;
pub mod plugin;
pub mod units;

pub use backend::{Backend, BackendConfig, BackendInfo, Capabilities};
pub use error::{Error, Result};

/// Largest NTT size (log2) Fr supports: its two-adicity.
pub const MAX_LOG_NTT: u32 = 32;
