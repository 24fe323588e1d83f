// Bellows CUDA kernels: Montgomery multiplication in Fp (381 bits) on the FP64 pipe.
//
// Why. The integer product (field.cuh) is bound by the multiprocessor's integer multiply-add
// pipe (IMAD.WIDE at 32 a clock), and leaves the double-precision pipe (64 DFMA a clock on a
// Hopper multiprocessor) and two thirds of the issue slots idle. A product written in FP64
// arithmetic was meant to run on that idle pipe, beside the integer form (some products in each,
// or some warps in each). Measured on the H200 (runs 53–54, experiments/fp64_bench.cu), it does
// not: 20.9 G products/s alone against the integer form's 26.5, and 23.6–24.9 mixed, so the two
// contend for the same issue capacity and nothing in production uses this. The idea of exact multi-precision products
// through DFMA is that of N. Emmart, J. Zheng and C. Weems, "Faster modular exponentiation using
// double precision floating point arithmetic on the GPU" (ARITH 25, 2018); the arrangement
// below (radix 2^48, chained high parts, column-wise Montgomery reduction) is ours.
//
// Representation inside the product. The operands (canonical Montgomery form, blst's twelve
// 32-bit limbs, R = 2^384) are cut into eight limbs of 48 bits, each an exact integer held in a
// double. R stays 2^384 (8 × 48), so the result is the same Montgomery product as Fp::mul's, bit
// for bit, and only this function knows about the other radix.
//
// The exact limb product. For x, y < 2^48 and a column accumulator h on the grid of multiples of
// 2^48 inside the binade [2^100, 2^101) (whose spacing is exactly 2^48), fma(x, y, h) = h +
// round48(x·y) with no error, where round48 rounds to a multiple of 2^48; d = h − h' is exact,
// and fma(x, y, d) = x·y − round48(x·y) = L is exact too, |L| ≤ 2^47. So each limb product costs
// two DFMA and one DADD, its high part already summed into the column's chain, and one more DADD
// sums L into the column's low accumulator (|Σ L| < 2^53 stays exact).
//
// Montgomery reduction in radix 2^48, column by column (the product-scanning, or FIPS, order of
// Koç, Acar and Kaliski, IEEE Micro 16(3), 1996): column k collects a_i·b_j and m_i·p_j for
// i + j = k; for k < 8 its value V fixes m_k ≡ −V·p⁻¹ (mod 2^48), taken in [−2^47, 2^47], and
// V + m_k·p_0 is then a multiple of 2^48 that carries on; columns 8 … 15 are the result's limbs.
// With signed m_k the result T = (a·b + m·p)/2^384 lies in (−p/2, 5p/8), so one conditional
// addition of p makes it canonical.
//
// Bounds (why every step is exact): a_i, b_j < 2^48 (canonical inputs); |m_i| ≤ 2^47; a column
// chain starts at H0 = 1.25·2^100 and takes at most 8 products below 2^96 − 2^49 and 8 of
// magnitude at most 2^95, so it stays in [2^100, 2^101); the low accumulator holds a carry below
// 2^52 plus at most 16 values of magnitude ≤ 2^47, below 2^53.
#pragma once

#include "carry.cuh"

#ifdef BELLOWS_HOST_EMULATION
#include <cmath>
#include <cstring>
#endif

namespace bellows {
namespace dp {

#ifdef BELLOWS_HOST_EMULATION
// Host: IEEE binary64 with round to nearest; the emulation is compiled with -ffp-contract=off so
// that no a·b + c becomes a fused operation it is not written as.
inline double fma(double a, double b, double c) { return std::fma(a, b, c); }
inline double add(double a, double b) { return a + b; }
inline double sub(double a, double b) { return a - b; }
inline double from_words(uint32_t hi, uint32_t lo) {
    uint64_t u = ((uint64_t)hi << 32) | lo;
    double x;
    memcpy(&x, &u, 8);
    return x;
}
inline uint64_t bits(double x) {
    uint64_t u;
    memcpy(&u, &x, 8);
    return u;
}
#else
// Device: the _rn intrinsics are never contracted or reassociated by the compiler.
__device__ __forceinline__ double fma(double a, double b, double c) { return __fma_rn(a, b, c); }
__device__ __forceinline__ double add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double from_words(uint32_t hi, uint32_t lo) {
    return __hiloint2double((int)hi, (int)lo);
}
__device__ __forceinline__ uint64_t bits(double x) { return (uint64_t)__double_as_longlong(x); }
#endif

constexpr double TWO48 = 281474976710656.0;            // 2^48
constexpr double INV48 = 1.0 / 281474976710656.0;      // 2^-48
constexpr double TWO52 = 4503599627370496.0;           // 2^52
constexpr double MAGIC = 1.5 * 4503599627370496.0;     // 1.5·2^52: x + MAGIC rounds x to an integer
constexpr uint64_t MAGIC_BITS = 0x4338000000000000ull; // its bit pattern
constexpr double TWO100 = 1267650600228229401496703205376.0;  // 2^100
constexpr double H0 = 1.25 * TWO100;                   // a column chain's start
constexpr double H0_48 = 1.25 * TWO52;                 // H0 · 2^-48
constexpr double MH = MAGIC + H0_48;                   // 2.75·2^52, exact
constexpr double SPLIT = 1.5 * TWO100;                 // start for a lone signed product
constexpr uint32_t EXP52 = 0x43300000u;                // high word of 2^52

// BLS12-381's p in radix 2^48 (limb j), and −p⁻¹ mod 2^48. Functions rather than arrays, so
// that device code needs no constant memory for them: every call has a constant j and folds.
BL_HD double p48(int j) {
    switch (j) {
        case 0: return (double)0xffffffffaaabull;
        case 1: return (double)0xb153ffffb9feull;
        case 2: return (double)0xf6241eabfffeull;
        case 3: return (double)0x6730d2a0f6b0ull;
        case 4: return (double)0x4b84f38512bfull;
        case 5: return (double)0x434bacd76477ull;
        case 6: return (double)0xe69a4b1ba7b6ull;
        default: return (double)0x1a0111ea397full;
    }
}
constexpr double M0_48 = (double)0xfffcfffcfffdull;

// Twelve 32-bit limbs (canonical, < 2^384) → eight exact 48-bit limbs as doubles: the limb's
// bits go under the exponent of 2^52 and 2^52 is subtracted.
BL_HD void to_limbs48(const uint32_t (&w)[12], double (&l)[8]) {
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint32_t w0 = w[3 * j], w1 = w[3 * j + 1], w2 = w[3 * j + 2];
        l[2 * j] = sub(from_words(EXP52 | (w1 & 0xffffu), w0), TWO52);
        l[2 * j + 1] = sub(from_words(EXP52 | (w2 >> 16), (w1 >> 16) | (w2 << 16)), TWO52);
    }
}

// One limb product into a column: h ← h + round48(x·y), lo ← lo + (x·y − round48(x·y)).
BL_HD void mac(double x, double y, double& h, double& lo) {
    const double hn = fma(x, y, h);
    const double l = fma(x, y, sub(h, hn));
    lo = add(lo, l);
    h = hn;
}

// The Montgomery product a·b·2^-384 mod p of two canonical elements (twelve 32-bit limbs each),
// canonical, in `out`: the same value as Mont<FpParams>::mul. P::mod(i) gives p's 32-bit limbs.
template <class P>
BL_HD void mont_mul_fp(const uint32_t (&a)[12], const uint32_t (&b)[12], uint32_t (&out)[12]) {
    double A[8], B[8], M[8], R[8];
    to_limbs48(a, A);
    to_limbs48(b, B);
    double carry = 0.0;  // column k's carry in, an exact integer
#pragma unroll
    for (int k = 0; k < 15; k++) {
        double h = H0, lo = carry;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int j = k - i;
            if (j >= 0 && j < 8) mac(A[i], B[j], h, lo);
        }
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const int j = k - i;
            if (i < k && j >= 0 && j < 8) mac(M[i], p48(j), h, lo);
        }
        // lo is the column's value V but for m_k·p_0 (k < 8) and the high parts already in h.
        const double t = fma(lo, INV48, MAGIC);  // MAGIC + round(V / 2^48)
        const double q = sub(t, MAGIC);
        const double r = fma(q, -TWO48, lo);     // V − 2^48·q, in [−2^47, 2^47]
        if (k < 8) {
            // m = r·M0 reduced to [−2^47, 2^47] (the low part of an exact split).
            const double s = fma(r, M0_48, SPLIT);
            const double m = fma(r, M0_48, sub(SPLIT, s));
            M[k] = m;
            mac(m, p48(0), h, lo);  // lo is now a multiple of 2^48
            // carry = (lo + h − H0) / 2^48: lo / 2^48 − H0 / 2^48 is exact, and so is the sum.
            carry = fma(h, INV48, fma(lo, INV48, -H0_48));
        } else {
            R[k - 8] = r;
            // carry = q + (h − H0) / 2^48 = h / 2^48 + (t − MAGIC − H0 / 2^48).
            carry = fma(h, INV48, sub(t, MH));
        }
    }
    R[7] = carry;

    // Signed limbs → two's complement 48-bit limbs, carries propagated (arithmetic shifts).
    int64_t z[8];
#pragma unroll
    for (int k = 0; k < 8; k++) z[k] = (int64_t)(bits(add(R[k], MAGIC)) - MAGIC_BITS);
#pragma unroll
    for (int k = 0; k < 7; k++) {
        z[k + 1] += z[k] >> 48;
        z[k] &= 0xffffffffffffll;
    }
    const uint32_t negative = z[7] < 0 ? 0xffffffffu : 0u;
    // Repack to twelve 32-bit words (the value mod 2^384) …
    uint32_t w[12];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const uint64_t lo48 = (uint64_t)z[2 * j], hi48 = (uint64_t)z[2 * j + 1];
        w[3 * j] = (uint32_t)lo48;
        w[3 * j + 1] = (uint32_t)(lo48 >> 32) | ((uint32_t)hi48 << 16);
        w[3 * j + 2] = (uint32_t)(hi48 >> 16);
    }
    // … and add p when T < 0 (T + p wraps to the canonical value).
    out[0] = cc::add_cc(w[0], P::mod(0) & negative);
#pragma unroll
    for (int i = 1; i < 11; i++) out[i] = cc::addc_cc(w[i], P::mod(i) & negative);
    out[11] = cc::addc(w[11], P::mod(11) & negative);
}

}  // namespace dp
}  // namespace bellows
