//! Data that crosses the plugin boundary: `#[repr(C)]`, [`StableAbi`](abi_stable::StableAbi) types
//! and their conversions to and from the core types: scalars and points (`points.rs`), the
//! operations' arguments (`calls.rs`), the backend's configuration, info and memory (`info.rs`)
//! and errors (`error.rs`).
//!
//! ## Layout of field elements and points
//! Scalars and points cross as fixed-size arrays of little-endian `u64` limbs in **blst's Montgomery
//! layout**, exactly the bytes of [`crate::layout`] (and of blstrs): [`FfiFr`] is 4 limbs,
//! [`FfiG1Affine`] 12 (x then y, 6 limbs each), [`FfiG2Affine`] 24 (x.c0, x.c1, y.c0, y.c1),
//! [`FfiG1Jacobian`] 18 (X, Y, Z), [`FfiG2Jacobian`] 36. The identity is all zeros (affine) or
//! Z = 0 (Jacobian). Slices are reinterpreted in place, never converted.
//!
//! ## Errors
//! Every entry point returns `RResult<_, FfiError>`. [`FfiError::code`] carries the category of
//! [`crate::Error`] ([`codes`]); unknown codes (from a newer plugin) are read as
//! [`codes::OTHER`], so the error type can gain categories without breaking the layout.

mod calls;
mod error;
mod info;
mod points;

pub use calls::{
    FfiBasesHandle, FfiEncodedLoad, FfiG1Handles, FfiMsmJob, FfiNttConfig, FfiProofAssignment,
};
pub use error::{codes, FfiError};
pub use info::{
    capability_bits, FfiBackendConfig, FfiBackendInfo, FfiCapabilities, FfiDeviceInfo,
    FfiMemoryInfo,
};
pub use points::{FfiFr, FfiG1Affine, FfiG1Jacobian, FfiG2Affine, FfiG2Jacobian};
