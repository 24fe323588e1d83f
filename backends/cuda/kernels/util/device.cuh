// Bellows CUDA kernels: device-side helpers of the entry points (grid-stride loops, 32-byte Fr
// loads and stores as two 16-byte vectors). Device code only: the host emulation runs the kernel
// bodies, not the entry points.
#pragma once

#include "ff/bls12_381.cuh"

namespace {

__device__ __forceinline__ uint64_t global_thread() {
    return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ uint64_t grid_threads() { return (uint64_t)gridDim.x * blockDim.x; }

// 32-byte Fr through two 16-byte loads / stores.
__device__ __forceinline__ bellows::Fr ld_fr(const uint4* p) {
    uint4 a = p[0], b = p[1];
    return bellows::Fr{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}
__device__ __forceinline__ bellows::Fr ldg_fr(const uint4* p) {
    uint4 a = __ldg(p), b = __ldg(p + 1);
    return bellows::Fr{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}
__device__ __forceinline__ void st_fr(uint4* p, const bellows::Fr& x) {
    p[0] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
    p[1] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

}  // namespace
