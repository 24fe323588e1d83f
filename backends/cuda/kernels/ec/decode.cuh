// Bellows CUDA kernels: uncompressed G1 and G2 points as a parameters file stores them (big-endian
// coordinates, flag bits in the first byte) decoded into blst's affine layout (Montgomery limbs),
// each with the curve check, and the same verdict blst's deserialisation gives.
//
// This lets a parameter load send a file's bytes to the GPU as they are and decode them there,
// so the host neither decodes 460 M points (a 32 GiB PoRep key: docs/benchmarks.md, "32 GiB
// PoRep C2") nor holds a decoded section. tools/tests/emulation.rs checks every verdict and
// point against blst under host emulation.
//
// Verdicts (one byte per point), as blst_p1_deserialize / blst_p2_deserialize decide them:
// - DECODE_OK: a point on the curve (its affine coordinates written);
// - DECODE_IDENTITY: the infinity flag with every other bit zero (the all-zero point written);
// - DECODE_ENCODING: a compression or sort flag, an infinity flag with other bits set, or a
//   coordinate ≥ p;
// - DECODE_NOT_ON_CURVE: coordinates below p that miss y² = x³ + b;
// - DECODE_NOT_IN_GROUP: (0, ±√b), on the curve, which blst refuses outright.
// Only DECODE_OK writes the decoded point; the caller stops at the first other verdict.
#pragma once

#include "ec/curve.cuh"

namespace bellows {

enum : uint8_t {
    DECODE_OK = 0,
    DECODE_IDENTITY = 1,
    DECODE_ENCODING = 2,
    DECODE_NOT_ON_CURVE = 3,
    DECODE_NOT_IN_GROUP = 4,
};

// The 48 big-endian bytes at `in` as Fp's little-endian 32-bit limbs (not reduced, not Montgomery).
// The flag bits are not cleared: coordinates are read only when they are all zero.
BL_HD Fp fp_from_be(const uint8_t* in) {
    Fp r;
#pragma unroll
    for (int i = 0; i < 12; i++) {
        const uint8_t* b = in + 44 - 4 * i;
        r.v[i] = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
    }
    return r;
}

// Whether the raw limbs are below p.
BL_HD bool fp_below_modulus(const Fp& a) {
    bool below = false, decided = false;
#pragma unroll
    for (int i = 11; i >= 0; i--) {
        uint32_t m = FpParams::mod(i);
        if (!decided && a.v[i] != m) {
            below = a.v[i] < m;
            decided = true;
        }
    }
    return below;
}

// Whether all `n` bytes at `in` are zero.
BL_HD bool bytes_zero(const uint8_t* in, int n) {
    uint8_t acc = 0;
    for (int i = 0; i < n; i++) acc |= in[i];
    return acc == 0;
}

// The flag byte's verdict before any coordinate is read: -1 to go on with the coordinates, else
// the verdict (DECODE_IDENTITY or DECODE_ENCODING). `size` is the encoding's length.
BL_HD int decode_flags(const uint8_t* in, int size) {
    uint8_t f = in[0];
    if ((f & 0xe0) == 0) return -1;
    if ((f & 0x80) == 0 && (f & 0x40) && (f & 0x3f) == 0 && bytes_zero(in + 1, size - 1))
        return DECODE_IDENTITY;
    return DECODE_ENCODING;
}

// b of G1's curve, 4, in Montgomery form.
BL_HD Fp g1_b() {
    Fp two = Fp::dbl(Fp::one());
    return Fp::dbl(two);
}

// Decodes the 96 bytes at `in` into `out` (written only for DECODE_OK and DECODE_IDENTITY).
BL_HD uint8_t decode_g1(const uint8_t* in, G1Affine* out) {
    int flags = decode_flags(in, 96);
    if (flags == DECODE_IDENTITY) {
        *out = G1Affine::identity();
        return DECODE_IDENTITY;
    }
    if (flags >= 0) return (uint8_t)flags;
    Fp x = fp_from_be(in), y = fp_from_be(in + 48);
    if (!fp_below_modulus(x) || !fp_below_modulus(y)) return DECODE_ENCODING;
    x = Fp::to_mont(x);
    y = Fp::to_mont(y);
    Fp rhs = Fp::sqr(x) * x + g1_b();
    if (!Fp::sqr(y).eq(rhs)) return DECODE_NOT_ON_CURVE;
    if (x.is_zero()) return DECODE_NOT_IN_GROUP;
    *out = G1Affine{x, y};
    return DECODE_OK;
}

// Decodes the 192 bytes at `in` (x.c1, x.c0, y.c1, y.c0, each 48 bytes big-endian) into `out`
// (written only for DECODE_OK and DECODE_IDENTITY).
BL_HD uint8_t decode_g2(const uint8_t* in, G2Affine* out) {
    int flags = decode_flags(in, 192);
    if (flags == DECODE_IDENTITY) {
        *out = G2Affine::identity();
        return DECODE_IDENTITY;
    }
    if (flags >= 0) return (uint8_t)flags;
    Fp2 x{fp_from_be(in + 48), fp_from_be(in)};
    Fp2 y{fp_from_be(in + 144), fp_from_be(in + 96)};
    if (!fp_below_modulus(x.c0) || !fp_below_modulus(x.c1) || !fp_below_modulus(y.c0) ||
        !fp_below_modulus(y.c1))
        return DECODE_ENCODING;
    x = Fp2::to_mont(x);
    y = Fp2::to_mont(y);
    // b = 4(1 + u).
    Fp four = g1_b();
    Fp2 rhs = Fp2::sqr(x) * x + Fp2{four, four};
    if (!Fp2::sqr(y).eq(rhs)) return DECODE_NOT_ON_CURVE;
    if (x.is_zero()) return DECODE_NOT_IN_GROUP;
    *out = G2Affine{x, y};
    return DECODE_OK;
}

}  // namespace bellows
