//! # bellows
//!
//! Groth16 proofs on BLS12-381 for your own [bellpepper] circuit, computed on the backend you
//! choose: the CPU backend built in (the default `cpu` feature), or a GPU or vendor backend
//! loaded at run time as a plugin, by name or by path. Parameters, verifying keys and proofs are
//! in bellperson's formats, and for the same parameters, witness and randomness r, s the proof is
//! byte-identical to bellperson's `create_proof`.
//!
#![cfg_attr(feature = "cpu", doc = "```")]
#![cfg_attr(not(feature = "cpu"), doc = "```ignore")]
//! use bellows::prelude::*;
//!
//! /// "I know x such that x³ + x + 5 = y", y public.
//! struct Cubic {
//!     x: Option<Scalar>, // None when the circuit is used for setup
//! }
//!
//! impl Circuit<Scalar> for Cubic {
//!     fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
//!         let x_val = self.x;
//!         let x2_val = x_val.map(|x| x * x);
//!         let y_val = x_val.map(|x| x * x * x + x + Scalar::from(5));
//!         let missing = || SynthesisError::AssignmentMissing;
//!         let x = cs.alloc(|| "x", || x_val.ok_or_else(missing))?;
//!         let x2 = cs.alloc(|| "x2", || x2_val.ok_or_else(missing))?;
//!         let y = cs.alloc_input(|| "y", || y_val.ok_or_else(missing))?;
//!         cs.enforce(|| "x * x = x2", |lc| lc + x, |lc| lc + x, |lc| lc + x2);
//!         // (x2 + 1) * x = y - 5
//!         cs.enforce(
//!             || "(x2 + 1) * x = y - 5",
//!             |lc| lc + x2 + CS::one(),
//!             |lc| lc + x,
//!             |lc| lc + y - (Scalar::from(5), CS::one()),
//!         );
//!         Ok(())
//!     }
//! }
//!
//! # fn main() -> bellows::Result<()> {
//! // Parameters: for a real circuit, read the ceremony's file with
//! // `bellows::groth16::io::read_parameters`; a toy circuit can have a local setup.
//! let params = bellows::groth16::setup::generate_random_parameters(
//!     Cubic { x: None },
//!     &mut ProofRng::os(),
//! )?;
//!
//! // The backend: "cpu" is built in; a plugin goes by name ("cuda") or by path ("./libx.so").
//! let key = ProvingKey::from_parameters(params, bellows::backend("cpu")?)?;
//!
//! // Prove x = 3, so y = 35.
//! let proof = prove_one(&key, Cubic { x: Some(Scalar::from(3)) }, &mut ProofRng::os())?;
//!
//! // Verify against the public input.
//! let pvk = prepare_verifying_key(&key.params().vk);
//! assert!(verify_proof(&pvk, &proof, &[Scalar::from(35)])?);
//! assert!(!verify_proof(&pvk, &proof, &[Scalar::from(36)])?);
//! # Ok(())
//! # }
//! ```
//!
//! The guide, "Prove your own circuit" (`docs/library.md` in the repository), covers parameters
//! from files or memory, backends, batches, fixed randomness, verification and hosting plugins;
//! `examples/own_circuit.rs` is a complete program (`cargo run -p bellows --example own_circuit`).
//!
//! ## What is here
//! - [`prelude`]: the names a prover needs, in one `use`;
//! - [`backend()`] / [`backend_with`]: a backend by name or plugin path;
//! - everything of `bellows-core` ([`groth16`], [`backend`](mod@backend), [`registry`],
//!   [`plugin`], [`pipeline`], [`rng`], [`circuits`], [`layout`], [`units`], [`Error`]; the
//!   backend modules among them are those of `bellows-backend-api`, the crate a backend
//!   vendor depends on);
//! - [`cpu`] (feature `cpu`, on by default): the CPU reference backend;
//! - the crates whose types appear in the API, at the versions Bellows is built with:
//!   [`bellpepper_core`] (0.2: the circuit trait bellperson 0.27 uses), [`blstrs`], [`ff`],
//!   [`group`], [`rand_core`]. Writing circuits against these re-exports rules out a second,
//!   incompatible copy of the `Circuit` trait in your build.
//!
//! ## Features
//! - `cpu` (default): links the CPU backend and registers it as the built-in backend `"cpu"`.
//! - `bellperson`: `From` conversions between this crate's [`groth16::Parameters`],
//!   [`groth16::VerifyingKey`], [`groth16::Proof`] and bellperson 0.27's, in memory.
//!
//! [bellpepper]: https://docs.rs/bellpepper-core/0.2

#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::sync::Arc;

pub use bellows_core::{
    backend, circuits, error, groth16, layout, pipeline, plugin, registry, rng, units, Backend,
    BackendConfig, BackendInfo, Capabilities, Error, Result, MAX_LOG_NTT,
};
pub use bellows_core::{export_backend, export_backend_object};

pub use bellpepper_core;
pub use blstrs;
pub use ff;
pub use group;
pub use rand_core;

/// The CPU reference backend ([`cpu::CpuBackend`]), linked by the `cpu` feature and registered as
/// the built-in backend `"cpu"`.
#[cfg(feature = "cpu")]
pub use bellows_cpu as cpu;

/// A backend with the default [`BackendConfig`]: see [`backend_with`].
pub fn backend(name_or_path: &str) -> Result<Arc<dyn Backend>> {
    backend_with(name_or_path, &BackendConfig::default())
}

/// A backend by name or path, as `bellows --backend` resolves it:
/// 1. an argument with a `/` or ending in `.so` is loaded as a plugin file;
/// 2. otherwise a built-in backend of that name (`"cpu"` with the `cpu` feature);
/// 3. otherwise the plugin `libbellows_backend_NAME.so`, looked for in the directories of
///    `BELLOWS_PLUGIN_PATH`, then the running executable's folder, then `~/.local/lib/bellows`.
///
/// The error says what was tried. This is [`registry::resolve`]: a program that depends on this
/// crate has the built-in backends of its enabled features linked and registered, whichever of
/// the two it calls (with bellows-core alone, a backend crate must be linked by hand).
pub fn backend_with(name_or_path: &str, cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    registry::resolve(name_or_path, cfg)
}

/// The names most programs that prove and verify need, in one `use bellows::prelude::*;`.
pub mod prelude {
    pub use bellpepper_core::{
        Circuit, ConstraintSystem, LinearCombination, SynthesisError, Variable,
    };
    pub use blstrs::{Bls12, Scalar};
    pub use ff::{Field, PrimeField};

    pub use bellows_core::groth16::{
        prepare_verifying_key, prove, prove_one, prove_one_with_randomness, prove_with_randomness,
        verify_proof, verify_proofs_batch, Parameters, PreparedVerifyingKey, Proof, ProvingKey,
        VerifyingKey,
    };
    pub use bellows_core::rng::ProofRng;
    pub use bellows_core::{Backend, BackendConfig, Error};
}
