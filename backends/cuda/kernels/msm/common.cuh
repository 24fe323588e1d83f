// Bellows CUDA kernels, MSM: what every step shares (the sign bit of an entry, atomics and
// population counts on the device or under host emulation, read-only loads of points).
#pragma once

#include "ec/curve.cuh"

namespace bellows {
namespace msm {


// The sign of a digit travels in the top bit of the point index.
constexpr uint32_t SIGN_BIT = 0x80000000u;

#ifdef BELLOWS_HOST_EMULATION
inline uint32_t atomic_add(uint32_t* p, uint32_t v) {
    uint32_t old = *p;
    *p = old + v;
    return old;
}
inline int popc64(uint64_t x) { return __builtin_popcountll(x); }
#else
__device__ __forceinline__ uint32_t atomic_add(uint32_t* p, uint32_t v) { return atomicAdd(p, v); }
__device__ __forceinline__ int popc64(uint64_t x) { return __popcll(x); }
#endif

// An affine base through 16-byte read-only loads (points are 96 or 192 bytes, 16-aligned).
template <class F>
BL_HD Affine<F> load_affine(const Affine<F>* p) {
#ifdef BELLOWS_HOST_EMULATION
    return *p;
#else
    static_assert(sizeof(Affine<F>) % 16 == 0, "affine points are whole 16-byte vectors");
    Affine<F> r;
    const uint4* s = reinterpret_cast<const uint4*>(p);
    uint4* d = reinterpret_cast<uint4*>(&r);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(Affine<F>) / 16); i++) d[i] = __ldg(s + i);
    return r;
#endif
}

template <class F>
BL_HD Affine<F> signed_point(const Affine<F>* bases, uint32_t e) {
    Affine<F> p = load_affine(bases + (e & ~SIGN_BIT));
    return (e & SIGN_BIT) ? Affine<F>::neg(p) : p;
}

// One coordinate (48 or 96 bytes) through 16-byte read-only loads.
template <class F>
BL_HD F load_coord(const F* p) {
#ifdef BELLOWS_HOST_EMULATION
    return *p;
#else
    static_assert(sizeof(F) % 16 == 0, "coordinates are whole 16-byte vectors");
    F r;
    const uint4* s = reinterpret_cast<const uint4*>(p);
    uint4* d = reinterpret_cast<uint4*>(&r);
#pragma unroll
    for (int i = 0; i < (int)(sizeof(F) / 16); i++) d[i] = __ldg(s + i);
    return r;
#endif
}

}  // namespace msm
}  // namespace bellows
