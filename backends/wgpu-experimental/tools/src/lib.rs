//! # bellows-wgpu-tools
//!
//! What the experimental wgpu backend needs to be checked and measured, kept out of the
//! production library:
//! - [`testing`]: element-wise runs of the field and curve kernels, for tests that compare them
//!   with blst (`tests/arith.rs`);
//! - `bellows-wgpu-bench`: NTT and G1 MSM timings of several backends side by side, each result
//!   checked against the CPU reference first;
//! - `examples/compile_times.rs`: how long the driver's compiler takes over each kernel.

#![warn(missing_docs)]

pub mod testing;
