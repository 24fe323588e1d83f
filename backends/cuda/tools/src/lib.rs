//! # bellows-cuda-tools
//!
//! What the CUDA backend needs to be checked and measured, kept out of the production library
//! (the plugin carries none of it):
//! - [`Gpu`]: a device with the backend's features, as the programs drive it;
//! - [`test_kernels`]: the test and benchmark kernels (`kernels/testing.cu`, a fatbin of their
//!   own, built by this crate's build script) loaded into a device of the backend;
//! - [`elementwise`]: one field or curve operation per GPU thread, for bit-exact comparisons
//!   with blst; [`bench`](mod@bench): arithmetic throughput;
//! - [`testing`]: test vectors, blst reference results, the host reference NTT, shared by the
//!   device check program and the host emulation test;
//! - programs: `bellows-cuda-check` (every kernel against blst on a GPU, throughput, NTT times),
//!   `bellows-cuda-msm` (MSM checks and timings, tuning sweeps), `bellows-cuda-overhead` (the
//!   plugin boundary's cost);
//! - tests: `tests/emulation.rs` runs the production kernels' bodies on the host
//!   (`kernels/emulation.cpp`) against blst; `tests/constants.rs` checks the kernels' constants.

#![warn(missing_docs)]

pub mod bench;
pub mod elementwise;
mod gpu;
pub mod test_kernels;
pub mod testing;

pub use gpu::Gpu;
pub use test_kernels::TestKernels;
