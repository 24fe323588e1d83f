//! # bellows-core
//!
//! The prover core of Bellows, a multi-backend Groth16 prover for BLS12-381:
//! - [`layout`]: the `#[repr(C)]` layout in which scalars and points cross to a backend;
//! - [`backend`]: the [`backend::Ntt`], [`backend::Msm`], [`backend::MemoryPool`] and
//!   [`backend::Backend`] traits;
//! - [`registry`]: built-in backends selected by name, and [`registry::resolve`] for a name or
//!   a plugin path;
//! - [`plugin`]: the versioned plugin interface, the export macros and the loader;
//! - [`groth16`]: synthesis, the split prover and one-call shortcuts, verification, parameter
//!   and proof files, setup;
//! - [`pce`]: pre-compiled constraint systems (recorded R1CS, witness-only synthesis, parallel
//!   sparse products);
//! - [`pipeline`]: the scheduler for streams of proofs over one or more devices;
//! - [`rng`]: OS or seeded randomness for r and s;
//! - [`circuits`]: the built-in circuits (synthetic, SHA-256) of the CLI, tests and benchmarks;
//! - [`error`]: the one error type.
//!
//! Programs that prove their own circuits depend on the `bellows` crate instead: it re-exports
//! this one and links the CPU backend, which this crate cannot do itself (a backend crate
//! depends on it). With bellows-core alone, link a backend yourself (`use bellows_cpu as _;`)
//! before asking the registry for it.
//!
//! Proofs are bit-for-bit identical across backends for the same inputs and randomness: every
//! backend computes the same mathematical values, and encodings are canonical.

#![warn(missing_docs)]

pub mod backend;
pub mod circuits;
pub mod error;
pub mod groth16;
pub mod host_vec;
pub mod hostmem;
pub mod layout;
pub mod pce;
pub mod pipeline;
pub mod plugin;
pub mod registry;
pub mod rng;

pub use backend::{Backend, BackendConfig, BackendInfo, Capabilities};
pub use error::{Error, Result};

/// Largest NTT size (log2) Fr supports: its two-adicity.
pub const MAX_LOG_NTT: u32 = 32;
