//! Groth16 over the backend traits.
//!
//! Groth 2016, "On the Size of Pairing-based Non-interactive Arguments" (EUROCRYPT 2016), in the
//! formulation of bellman/bellperson, whose parameter and proof formats we read and write:
//! - [`synthesis`]: run a `bellpepper_core::Circuit` into A, B, C evaluations and assignments;
//!   [`constraints`]: its constraint matrices or shape, for a setup (every constraint system of
//!   the crate is one generic bellpepper `ConstraintSystem` over what it keeps);
//! - [`prover`]: split `start` / `finalize`, device MSMs and NTTs through a [`crate::Backend`],
//!   the G2 MSM on CPU threads in between; its [`ProvingKey`] (parameters resident on a
//!   backend, loaded from memory or a file, in `key.rs`);
//! - [`verifier`]: single and batched verification;
//! - [`params`], [`proof`], [`io`]: keys and proofs, and bellperson's file formats;
//! - [`output`]: the one safe (atomic) writer of output files; [`limits`]: size limits and
//!   up-front memory estimates;
//! - [`setup`]: a real trusted setup (fixed-base window tables, [`fixed_base`], on every core)
//!   and a fast benchmark-only generator;
//! - [`subgroup`]: subgroup checks of whole point sets by a randomised bucket test;
//! - `bellperson_compat` (feature `bellperson`): `From` conversions to and from bellperson's
//!   `Parameters`, `VerifyingKey` and `Proof`.

pub mod batch_add;
#[cfg(feature = "bellperson")]
pub mod bellperson_compat;
pub mod constraint_system;
pub mod constraints;
pub mod fixed_base;
pub mod host_msm;
pub mod io;
mod key;
pub mod limits;
pub mod output;
pub mod params;
pub mod proof;
pub mod prover;
pub mod quotient;
pub mod setup;
pub mod subgroup;
pub mod synthesis;
pub mod verifier;

pub use params::{Parameters, ParamsKind, VerifyingKey};
pub use proof::Proof;
pub use prover::{
    prove, prove_one, prove_one_with_randomness, prove_with_randomness, reserve_batch,
    PendingProofs, ProvingKey,
};
pub use synthesis::UnsatisfiedConstraint;
pub use verifier::{
    prepare_verifying_key, verify_proof, verify_proofs_batch, PreparedVerifyingKey,
};
