//! # bellows-cuda
//!
//! The CUDA backend of Bellows: [`CudaBackend`] (the `Backend`: fused h, Pippenger MSM for G1 and
//! G2, the composite Groth16 G1 phase, memory tiers, several GPUs) over our own CUDA C++ kernels
//! (`kernels/`), compiled ahead of time into the library (see [`kernels`]) and driven through
//! cudarc with dynamic loading, so the crate builds and its host tests run on machines without
//! CUDA. `backends/cuda/plugin` exports it as `libbellows_backend_cuda.so`.
//!
//! - [`backend`]: [`CudaBackend`]; [`msm`]: the device MSM driver.
//! - [`CudaDevice`]: one GPU with the kernels loaded; device and pinned host buffers
//!   ([`DeviceVec`], [`PinnedVec`]); every failure is a [`bellows_core::Error`], never a panic.
//! - [`ntt`]: forward / inverse / coset NTTs over Fr, sizes 2^0..=2^27, batched, natural or
//!   bit-reversed orderings; twiddles computed once per device.
//! - [`points`]: the XYZZ point types the device accumulates in.
//! - With the `testing` feature only (the check and benchmark programs, the tests; never the
//!   plugin): `elementwise` (element-wise entry points for the Fr / Fp / Fp2 and G1 / G2 kernels),
//!   `bench` (throughput kernels) and `testing` (blst reference results, the host reference NTT);
//!   their kernels are a second fatbin (kernels/testing.cu).
//!
//! Data crosses in blst's own layout ([`bellows_core::layout`]): Montgomery limbs, so host slices
//! of blstrs values go to the device with no conversion. docs/cuda.md explains the design and
//! how to run the device check program (`bellows-cuda-check`) on a GPU machine.

#![warn(missing_docs)]

pub mod backend;
#[cfg(feature = "testing")]
pub mod bench;
pub mod constants;
mod device;
#[cfg(feature = "testing")]
pub mod elementwise;
pub mod host_pool;
pub mod kernels;
pub mod memory;
pub mod msm;
pub mod ntt;
pub mod points;
#[cfg(feature = "testing")]
pub mod testing;

pub use backend::CudaBackend;
pub use device::{driver_available, CudaDevice, KernelInfo};
pub use memory::{DeviceVec, PinnedVec, Plain};
