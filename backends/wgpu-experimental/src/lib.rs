//! # bellows-wgpu
//!
//! The experimental wgpu backend of Bellows: [`WgpuBackend`], our own WGSL compute kernels
//! (`src/shaders/`) for GPUs that CUDA does not serve (AMD, Intel, Apple through Metal) and,
//! through a software Vulkan (Mesa's lavapipe), for any machine, as CI uses it.
//!
//! - [`adapter`]: which adapters wgpu sees, their limits, and which one a configuration selects;
//! - [`gpu`]: one device with our kernels, command recording, readback, and wgpu's errors as
//!   Bellows errors;
//! - [`shader`]: the WGSL sources, with the field and curve templates instantiated;
//! - [`ntt`]: forward / inverse / coset NTTs in every ordering, batched, and the fused `h_poly`;
//! - [`msm`]: Pippenger MSM in G1 and G2 over resident bases;
//! - [`plain`]: byte views of the crossing layout.
//!
//! The element-wise test kernels' host side, the side-by-side benchmark `bellows-wgpu-bench` and
//! the kernel compile timer are in `backends/wgpu-experimental/tools` (bellows-wgpu-tools).
//!
//! Arithmetic: WGSL has 32-bit integers only, so field elements are Montgomery forms in 32-bit
//! limbs (bit for bit blst's own representation) multiplied with 64-bit limb products built
//! from 16-bit halves (`shaders/common.wgsl`, `shaders/field.wgsl`). docs/wgpu.md describes the
//! design, the limits and the measurements. `backends/wgpu-experimental/plugin` exports the
//! backend as `libbellows_backend_wgpu.so`.

#![warn(missing_docs)]

pub mod adapter;
pub mod backend;
pub mod gpu;
pub mod msm;
pub mod ntt;
pub mod plain;
pub mod shader;

pub use backend::WgpuBackend;
