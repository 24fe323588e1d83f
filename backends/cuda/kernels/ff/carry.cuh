// Bellows CUDA kernels: 32-bit carry-chain primitives.
//
// Multi-precision arithmetic on NVIDIA GPUs is written with the PTX integer instructions that read
// and write the condition-code carry flag (CC.CF): add.cc / addc / sub.cc / subc / mad.lo.cc /
// madc.hi.cc (PTX ISA, "Extended-Precision Integer Arithmetic Instructions"). Each primitive
// below is one such instruction in its own `asm volatile` statement; the carry flag flows from one
// statement to the next in program order, the usual practice for GPU bignum code.
//
// With BELLOWS_HOST_EMULATION defined, the same primitives are plain C++ functions over an
// explicit carry variable, so that every algorithm built on them (field, extension field and curve
// arithmetic, the NTT index logic) can be compiled by a host C++ compiler and checked bit for bit
// against blst on a machine without a GPU (see tests/emulation.rs).
//
// Naming: `_cc` = writes the carry flag; a leading `c` in the operation (addc, madc) = reads it.
// For subtraction the flag is a borrow: sub.cc sets it when a < b, subc subtracts it.
#pragma once

#include <stdint.h>

#ifdef BELLOWS_HOST_EMULATION
#define BL_HD inline
#define BL_NOINLINE inline
#else
#define BL_HD __device__ __forceinline__
// For rarely taken or very long paths: compiled once, called, keeping hot code small.
#define BL_NOINLINE __device__ __noinline__
#endif

namespace bellows {
namespace cc {

#ifdef BELLOWS_HOST_EMULATION

// The emulated carry flag. One per host thread, like one per GPU thread.
inline uint32_t& flag() {
    static thread_local uint32_t f = 0;
    return f;
}

inline uint32_t add_cc(uint32_t a, uint32_t b) {
    uint64_t s = (uint64_t)a + b;
    flag() = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
inline uint32_t addc_cc(uint32_t a, uint32_t b) {
    uint64_t s = (uint64_t)a + b + flag();
    flag() = (uint32_t)(s >> 32);
    return (uint32_t)s;
}
inline uint32_t addc(uint32_t a, uint32_t b) { return a + b + flag(); }
inline uint32_t sub_cc(uint32_t a, uint32_t b) {
    uint64_t d = (uint64_t)a - b;
    flag() = (uint32_t)(d >> 63);
    return (uint32_t)d;
}
inline uint32_t subc_cc(uint32_t a, uint32_t b) {
    uint64_t d = (uint64_t)a - b - flag();
    flag() = (uint32_t)(d >> 63);
    return (uint32_t)d;
}
inline uint32_t subc(uint32_t a, uint32_t b) { return a - b - flag(); }
inline uint32_t mul_lo(uint32_t a, uint32_t b) { return a * b; }
inline uint32_t mul_hi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return add_cc(mul_lo(a, b), c); }
inline uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return add_cc(mul_hi(a, b), c); }
inline uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { return addc_cc(mul_lo(a, b), c); }
inline uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { return addc_cc(mul_hi(a, b), c); }
inline uint32_t madc_lo(uint32_t a, uint32_t b, uint32_t c) { return addc(mul_lo(a, b), c); }
inline uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { return addc(mul_hi(a, b), c); }

#else

#define BL_ASM2(op)                                                                                \
    uint32_t r;                                                                                    \
    asm volatile(op " %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                                    \
    return r;
#define BL_ASM3(op)                                                                                \
    uint32_t r;                                                                                    \
    asm volatile(op " %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));                        \
    return r;

__device__ __forceinline__ uint32_t add_cc(uint32_t a, uint32_t b) { BL_ASM2("add.cc.u32") }
__device__ __forceinline__ uint32_t addc_cc(uint32_t a, uint32_t b) { BL_ASM2("addc.cc.u32") }
__device__ __forceinline__ uint32_t addc(uint32_t a, uint32_t b) { BL_ASM2("addc.u32") }
__device__ __forceinline__ uint32_t sub_cc(uint32_t a, uint32_t b) { BL_ASM2("sub.cc.u32") }
__device__ __forceinline__ uint32_t subc_cc(uint32_t a, uint32_t b) { BL_ASM2("subc.cc.u32") }
__device__ __forceinline__ uint32_t subc(uint32_t a, uint32_t b) { BL_ASM2("subc.u32") }
__device__ __forceinline__ uint32_t mul_lo(uint32_t a, uint32_t b) { BL_ASM2("mul.lo.u32") }
__device__ __forceinline__ uint32_t mul_hi(uint32_t a, uint32_t b) { BL_ASM2("mul.hi.u32") }
__device__ __forceinline__ uint32_t mad_lo_cc(uint32_t a, uint32_t b, uint32_t c) { BL_ASM3("mad.lo.cc.u32") }
__device__ __forceinline__ uint32_t mad_hi_cc(uint32_t a, uint32_t b, uint32_t c) { BL_ASM3("mad.hi.cc.u32") }
__device__ __forceinline__ uint32_t madc_lo_cc(uint32_t a, uint32_t b, uint32_t c) { BL_ASM3("madc.lo.cc.u32") }
__device__ __forceinline__ uint32_t madc_hi_cc(uint32_t a, uint32_t b, uint32_t c) { BL_ASM3("madc.hi.cc.u32") }
__device__ __forceinline__ uint32_t madc_lo(uint32_t a, uint32_t b, uint32_t c) { BL_ASM3("madc.lo.u32") }
__device__ __forceinline__ uint32_t madc_hi(uint32_t a, uint32_t b, uint32_t c) { BL_ASM3("madc.hi.u32") }

#undef BL_ASM2
#undef BL_ASM3

#endif

}  // namespace cc
}  // namespace bellows
