//! # bellows-cuda
//!
//! The CUDA backend of Bellows: [`CudaBackend`] (the `Backend`: fused h, Pippenger MSM for G1 and
//! G2, the composite Groth16 G1 phase, memory tiers, several GPUs) over our own CUDA C++ kernels
//! (`kernels/`: `ff/`, `ec/`, `msm/`, `ntt/`), compiled ahead of time into the library (see
//! [`fatbin`]) and driven through cudarc with dynamic loading, so the crate builds and its host
//! tests run on machines without CUDA. `backends/cuda/plugin` exports it as
//! `libbellows_backend_cuda.so`; the check programs, benchmarks and the host emulation of the
//! kernels are in `backends/cuda/tools` (bellows-cuda-tools).
//!
//! Rooms:
//! - [`device`]: [`CudaDevice`], one GPU lane: context, compute and copy streams, the loaded
//!   module; `transfer` (allocations, copies, the staged upload) and `pool` (the driver's memory
//!   pool) act on it; [`buffers`]: [`DeviceVec`], [`PinnedVec`] and the [`Plain`] layout;
//!   [`host_pool`]: pinned host memory lent to the prover.
//! - Features, each owning its kernel handles and taking the lane it runs on: [`ntt`] (forward /
//!   inverse / coset NTTs, sizes 2^0..=2^27, batched), [`msm`] (Pippenger, its tuning and
//!   plan), [`quotient`] (the Groth16 quotient h).
//! - [`decode`]: parameter points decoded from a file's encoding on the GPU (checked against
//!   blst; not yet used by the key load).
//! - [`residency`]: resident bases at their memory tier; [`backend`]: [`CudaBackend`], its GPUs,
//!   lanes and options, and the Groth16 G1 phase.
//! - [`points`]: the XYZZ point types the device accumulates in.
//!
//! Every failure is a [`bellows_backend_api::Error`], never a panic. Data crosses in blst's own layout
//! ([`bellows_backend_api::layout`]): Montgomery limbs, so host slices of blstrs values go to the device
//! with no conversion. docs/cuda.md explains the design and how to run the device check
//! program (`bellows-cuda-check`) on a GPU machine.

#![warn(missing_docs)]

pub mod backend;
pub mod buffers;
pub mod decode;
pub mod device;
mod error;
pub mod fatbin;
pub mod host_pool;
mod launch;
pub mod msm;
pub mod ntt;
pub mod points;
mod pool;
pub mod quotient;
pub mod residency;
mod transfer;

pub use backend::CudaBackend;
pub use buffers::{DeviceVec, PinnedVec, Plain};
pub use device::{driver_available, CudaDevice, KernelInfo};
pub use error::NAME;
