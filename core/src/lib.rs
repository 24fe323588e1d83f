//! # bellows-core
//!
//! The prover core of Bellows, a multi-backend Groth16 prover for BLS12-381:
//! - [`layout`]: the `#[repr(C)]` layout in which scalars and points cross to a backend;
//! - [`backend`]: the [`backend::Ntt`], [`backend::Msm`], [`backend::MemoryPool`] and
//!   [`backend::Backend`] traits;
//! - [`registry`]: built-in backends selected by name;
//! - [`groth16`]: synthesis, the split prover, verification, parameter and proof files, setup;
//! - [`pce`]: pre-compiled constraint systems (recorded R1CS, witness-only synthesis, parallel
//!   sparse products).
//!
//! Proofs are bit-for-bit identical across backends for the same inputs and randomness: every
//! backend computes the same mathematical values, and encodings are canonical.

#![warn(missing_docs)]

pub mod backend;
pub mod circuits;
pub mod error;
pub mod groth16;
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
