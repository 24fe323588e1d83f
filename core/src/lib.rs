//! # bellows-core
//!
//! The prover core of Bellows, a multi-backend Groth16 prover for BLS12-381.
//!
//! What a backend needs — the data layout, the backend traits, the plugin ABI and the error type —
//! is the crate `bellows-backend-api`, which a backend or plugin depends on alone; this crate
//! re-exports its modules under the same paths:
//! - [`layout`]: the `#[repr(C)]` layout in which scalars and points cross to a backend;
//! - [`backend`]: the [`backend::Ntt`], [`backend::Msm`], [`backend::MemoryPool`] and
//!   [`backend::Backend`] traits;
//! - [`host_msm`]: MSM on host threads (blst's Pippenger), also at `groth16::host_msm`;
//! - [`host_memory`]: free and total host memory;
//! - [`units`]: the one byte-size parser and formatter (`8GiB`, `1.5GB`);
//! - [`error`]: the one error type.
//!
//! The prover and the host side of plugins are this crate's own:
//! - [`registry`]: built-in backends selected by name, and [`registry::resolve`] for a name or
//!   a plugin path;
//! - [`plugin`]: the plugin interface (re-exported) with the loader and the host wrapper;
//! - [`groth16`]: synthesis, the split prover and one-call shortcuts, verification, parameter
//!   and proof files, setup;
//! - [`pce`]: pre-compiled constraint systems (recorded R1CS, witness-only synthesis, parallel
//!   sparse products);
//! - [`pipeline`]: the scheduler for streams of proofs over one or more devices;
//! - [`rng`]: OS or seeded randomness for r and s;
//! - [`host_buffer`]: [`host_buffer::HostVec`], the host vector synthesis writes into, in memory a
//!   backend lends (pinned) or on the heap;
//! - [`page_advice`] (the SDK's, re-exported): advice to the kernel about large host buffers
//!   (huge pages, populating ahead);
//! - [`circuits`]: the built-in circuits (synthetic, SHA-256) of the CLI, tests and benchmarks.
//!
//! Programs that prove their own circuits depend on the `bellows` crate instead: it re-exports
//! this one and links the CPU backend; this crate links no backend itself. With bellows-core
//! alone, link a backend yourself (`use bellows_cpu as _;`) before asking the registry for it.
//!
//! Proofs are bit-for-bit identical across backends for the same inputs and randomness: every
//! backend computes the same mathematical values, and encodings are canonical.

#![warn(missing_docs)]

pub use bellows_backend_api::{
    backend, error, host_memory, host_msm, layout, page_advice, units, Backend, BackendConfig,
    BackendInfo, Capabilities, Error, Result, MAX_LOG_NTT,
};
pub use bellows_backend_api::{
    export_backend, export_backend_object, forward_memory, forward_msm, forward_ntt,
    forward_primitives,
};

pub mod circuits;
pub mod groth16;
pub mod host_buffer;
pub mod pce;
pub mod pipeline;
pub mod plugin;
pub mod registry;
pub mod rng;
