//! # bellows-cuda
//!
//! The CUDA groundwork of Bellows: BLS12-381 field and curve arithmetic and NTT kernels, our own
//! CUDA C++ (`kernels/`), compiled ahead of time into the library (see [`kernels`]) and driven
//! through cudarc with dynamic loading, so the crate builds and its host tests run on machines
//! without CUDA.
//!
//! - [`CudaDevice`]: one GPU with the kernels loaded; device and pinned host buffers
//!   ([`DeviceVec`], [`PinnedVec`]); every failure is a [`bellows_core::Error`], never a panic.
//! - [`ntt`]: forward / inverse / coset NTTs over Fr, sizes 2^0..=2^27, batched, natural or
//!   bit-reversed orderings; twiddles computed once per device.
//! - [`arith`]: element-wise entry points for the Fr / Fp / Fp2 and G1 / G2 (XYZZ) kernels.
//! - [`bench`]: throughput kernels; [`testing`] and [`reference`]: blst reference results and
//!   the host reference NTT used by the checks.
//!
//! Data crosses in blst's own layout ([`bellows_core::layout`]): Montgomery limbs, so host slices
//! of blstrs values go to the device with no conversion. docs/cuda.md explains the design and
//! how to run the device check program (`bellows-cuda-check`) on a GPU machine.

#![warn(missing_docs)]

pub mod arith;
pub mod backend;
pub mod bench;
pub mod constants;
mod device;
pub mod kernels;
pub mod memory;
pub mod msm;
pub mod ntt;
pub mod reference;
pub mod testing;

pub use backend::CudaBackend;
pub use device::{driver_available, CudaDevice, KernelInfo};
pub use memory::{DeviceVec, PinnedVec, Plain};
