// Bellows CUDA kernels: the BLS12-381 fields Fr (scalars, 255 bits) and Fp (base, 381 bits), and
// the quadratic extension Fp2 = Fp[u]/(u² + 1), all in blst's Montgomery representation.
//
// The constants below are checked against blstrs by the crate's tests (src/constants.rs parses
// this file), and the arithmetic built on them is checked bit for bit against blst both under
// host emulation (tests/emulation.rs) and on the GPU (bellows-cuda-check).
#pragma once

#include "ff/mont.cuh"

#ifdef BELLOWS_HOST_EMULATION
#define BL_CONSTANT static const
#else
#define BL_CONSTANT static __device__ __constant__ const
#endif

namespace bellows {

// Limbs are little-endian 32-bit words. MOD = modulus, ONE = R mod p (Montgomery 1),
// RR = R² mod p, PM2 = p − 2. R = 2^256 for Fr, 2^384 for Fp.
BL_CONSTANT uint32_t FR_MOD[8] = {
    0x00000001, 0xffffffff, 0xfffe5bfe, 0x53bda402,
    0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
BL_CONSTANT uint32_t FR_ONE[8] = {
    0xfffffffe, 0x00000001, 0x00034802, 0x5884b7fa,
    0xecbc4ff5, 0x998c4fef, 0xacc5056f, 0x1824b159};
BL_CONSTANT uint32_t FR_RR[8] = {
    0xf3f29c6d, 0xc999e990, 0x87925c23, 0x2b6cedcb,
    0x7254398f, 0x05d31496, 0x9f59ff11, 0x0748d9d9};
BL_CONSTANT uint32_t FR_PM2[8] = {
    0xffffffff, 0xfffffffe, 0xfffe5bfe, 0x53bda402,
    0x09a1d805, 0x3339d808, 0x299d7d48, 0x73eda753};
BL_CONSTANT uint32_t FP_MOD[12] = {
    0xffffaaab, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
    0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
    0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};
BL_CONSTANT uint32_t FP_ONE[12] = {
    0x0002fffd, 0x76090000, 0xc40c0002, 0xebf4000b,
    0x53c758ba, 0x5f489857, 0x70525745, 0x77ce5853,
    0xa256ec6d, 0x5c071a97, 0xfa80e493, 0x15f65ec3};
BL_CONSTANT uint32_t FP_RR[12] = {
    0x1c341746, 0xf4df1f34, 0x09d104f1, 0x0a76e6a6,
    0x4c95b6d5, 0x8de5476c, 0x939d83c0, 0x67eb88a9,
    0xb519952d, 0x9a793e85, 0x92cae3aa, 0x11988fe5};
BL_CONSTANT uint32_t FP_PM2[12] = {
    0xffffaaa9, 0xb9feffff, 0xb153ffff, 0x1eabfffe,
    0xf6b0f624, 0x6730d2a0, 0xf38512bf, 0x64774b84,
    0x434bacd7, 0x4b1ba7b6, 0x397fe69a, 0x1a0111ea};

// Fr: r = 0x73eda753...00000001, 8 limbs, M0 = −r⁻¹ mod 2^32.
struct FrParams {
    static constexpr int N = 8;
    static constexpr uint32_t M0 = 0xffffffffu;
    static constexpr bool LOW_LIMBS_ONE_FFFFFFFF = true;  // r = 0x...ffffffff00000001
    static constexpr bool SQR_SUB = false;
    static BL_HD uint32_t mod(int i) { return FR_MOD[i]; }
    static BL_HD uint32_t one(int i) { return FR_ONE[i]; }
    static BL_HD uint32_t rr(int i) { return FR_RR[i]; }
    static BL_HD uint32_t pm2(int i) { return FR_PM2[i]; }
};

// Fp: p = 0x1a0111ea...ffffaaab, 12 limbs, M0 = −p⁻¹ mod 2^32.
struct FpParams {
    static constexpr int N = 12;
    static constexpr uint32_t M0 = 0xfffcfffdu;
    static constexpr bool LOW_LIMBS_ONE_FFFFFFFF = false;
    static constexpr bool SQR_SUB = true;  // dedicated squaring, a·b − c·d reduced once
    static BL_HD uint32_t mod(int i) { return FP_MOD[i]; }
    static BL_HD uint32_t one(int i) { return FP_ONE[i]; }
    static BL_HD uint32_t rr(int i) { return FP_RR[i]; }
    static BL_HD uint32_t pm2(int i) { return FP_PM2[i]; }
};

typedef Mont<FrParams> Fr;
typedef Mont<FpParams> Fp;

// Fp2 = Fp[u]/(u² + 1), element c0 + c1·u; blst_fp2's layout (c0 then c1).
struct Fp2 {
    Fp c0, c1;

    static BL_HD Fp2 zero() { return Fp2{Fp::zero(), Fp::zero()}; }
    static BL_HD Fp2 one() { return Fp2{Fp::one(), Fp::zero()}; }
    BL_HD bool is_zero() const { return c0.is_zero() && c1.is_zero(); }
    BL_HD bool eq(const Fp2& b) const { return c0.eq(b.c0) && c1.eq(b.c1); }

    static BL_HD Fp2 add(const Fp2& a, const Fp2& b) { return Fp2{a.c0 + b.c0, a.c1 + b.c1}; }
    static BL_HD Fp2 sub(const Fp2& a, const Fp2& b) { return Fp2{a.c0 - b.c0, a.c1 - b.c1}; }
    static BL_HD Fp2 neg(const Fp2& a) { return Fp2{-a.c0, -a.c1}; }
    static BL_HD Fp2 dbl(const Fp2& a) { return Fp2{Fp::dbl(a.c0), Fp::dbl(a.c1)}; }

    // Karatsuba: (a0 + a1u)(b0 + b1u) = (a0b0 − a1b1) + ((a0 + a1)(b0 + b1) − a0b0 − a1b1)u.
    static BL_HD Fp2 mul(const Fp2& a, const Fp2& b) {
        Fp t0 = Fp::mul_call(a.c0, b.c0);
        Fp t1 = Fp::mul_call(a.c1, b.c1);
        Fp t2 = Fp::mul_call(a.c0 + a.c1, b.c0 + b.c1);
        return Fp2{t0 - t1, t2 - t0 - t1};
    }

    // a·b − c·d (the Fp form saves a reduction; here two products and a subtraction).
    static BL_HD Fp2 mul_sub(const Fp2& a, const Fp2& b, const Fp2& c, const Fp2& d) {
        return sub(mul(a, b), mul(c, d));
    }

    // (a0 + a1u)² = (a0 + a1)(a0 − a1) + 2a0a1·u.
    static BL_HD Fp2 sqr(const Fp2& a) {
        Fp t = Fp::mul_call(a.c0, a.c1);
        return Fp2{Fp::mul_call(a.c0 + a.c1, a.c0 - a.c1), Fp::dbl(t)};
    }

    // 1/(a0 + a1u) = (a0 − a1u)/(a0² + a1²); 0 maps to 0.
    static BL_HD Fp2 inv(const Fp2& a) {
        Fp n = Fp::inv(a.c0 * a.c0 + a.c1 * a.c1);
        return Fp2{a.c0 * n, -(a.c1 * n)};
    }

    static BL_HD Fp2 to_mont(const Fp2& a) { return Fp2{Fp::to_mont(a.c0), Fp::to_mont(a.c1)}; }
    static BL_HD Fp2 from_mont(const Fp2& a) { return Fp2{Fp::from_mont(a.c0), Fp::from_mont(a.c1)}; }
};

BL_HD Fp2 operator+(const Fp2& a, const Fp2& b) { return Fp2::add(a, b); }
BL_HD Fp2 operator-(const Fp2& a, const Fp2& b) { return Fp2::sub(a, b); }
BL_HD Fp2 operator-(const Fp2& a) { return Fp2::neg(a); }
BL_HD Fp2 operator*(const Fp2& a, const Fp2& b) { return Fp2::mul(a, b); }

}  // namespace bellows
