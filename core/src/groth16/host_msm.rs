//! MSM on host threads over affine points, with blst's Pippenger.
//!
//! Backends use it too (the CPU backend's MSMs, a vendor's fallback), so it lives in
//! bellows-backend-api ([`crate::host_msm`]); re-exported here for the prover's G2 MSM on CPU
//! threads.

pub use crate::host_msm::{canonical_scalars, msm_g1, msm_g2};
