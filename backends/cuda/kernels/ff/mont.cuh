// Bellows CUDA kernels: prime-field arithmetic in Montgomery form.
//
// Representation. An element of F_p with p < 2^(32N) is N little-endian 32-bit limbs holding
// x·R mod p, R = 2^(32N), fully reduced (in [0, p)). For BLS12-381 this is bit for bit blst's own
// representation: blst stores the same value as N/2 little-endian 64-bit limbs with the same R
// (2^256 for Fr, 2^384 for Fp), and a little-endian u64 array is a little-endian u32 array of twice
// the length. Host slices of blstrs values therefore go to the device with no conversion.
//
// Multiplication. Montgomery's reduction (P. L. Montgomery, "Modular multiplication without trial
// division", Math. Comp. 44, 1985) interleaved with the schoolbook product limb by limb: the CIOS
// ordering of Koç, Acar and Kaliski ("Analyzing and comparing Montgomery multiplication
// algorithms", IEEE Micro 16(3), 1996). On the GPU the running sum t is kept split in two
// accumulators, t = E + 2^32·O: the products of the even-indexed limbs of a (whose low halves land
// on even positions) go into E and those of the odd-indexed limbs into O, so each is a single
// unbroken mad.lo/madc.hi carry chain. This even/odd split is the technique of N. Emmart and
// C. Weems, "Optimizing modular multiplication for NVIDIA's Maxwell GPUs" (ARITH 23, 2016). After
// each reduction step E's lowest limb is zero; dividing by 2^32 turns O into the new E and
// E shifted by two limbs into the new O, the shift folded into the next accumulation's additions.
//
// Bounds (why no carry is dropped): the moduli here leave at least one spare top bit
// (p < 2^(32N-1)), so the CIOS invariant t < 2p keeps every intermediate below 2^(32(N+1)).
// As E ≥ 0, 2^32·O ≤ E + 2^32·O < 2^(32(N+1)) means O always fits in N limbs, so O's chains never
// carry out; E's carries are collected in its extra limb E[N].
#pragma once

#include "ff/carry.cuh"

namespace bellows {

using namespace cc;

// A prime field described by P: P::N limbs, P::mod(i) the modulus limbs, P::M0 = −p⁻¹ mod 2^32,
// P::rr(i) the limbs of R² mod p, P::one(i) those of R mod p (the Montgomery form of 1), and
// P::pm2(i) those of p − 2 (the Fermat inversion exponent), and P::LOW_LIMBS_ONE_FFFFFFFF
// whether p ≡ 2^64 − 2^32 + 1 (mod 2^64) (see reduce_row). Limb loops are unrolled, so every
// limb index is a compile-time constant.
template <class P>
struct Mont {
    static constexpr int N = P::N;
    uint32_t v[N];

    static BL_HD Mont zero() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = 0;
        return r;
    }

    // The Montgomery form of 1 (R mod p).
    static BL_HD Mont one() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::one(i);
        return r;
    }

    // The raw limbs of the modulus (not a field element; used for edge-case tests).
    static BL_HD Mont modulus() {
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = P::mod(i);
        return r;
    }

    BL_HD bool is_zero() const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i];
        return acc == 0;
    }

    BL_HD bool eq(const Mont& b) const {
        uint32_t acc = 0;
#pragma unroll
        for (int i = 0; i < N; i++) acc |= v[i] ^ b.v[i];
        return acc == 0;
    }

    // r = s − p if s ≥ p, else s. Requires s < 2p.
    static BL_HD Mont reduce_once(const Mont& s) {
        Mont t;
        t.v[0] = sub_cc(s.v[0], P::mod(0));
#pragma unroll
        for (int i = 1; i < N; i++) t.v[i] = subc_cc(s.v[i], P::mod(i));
        uint32_t borrow = subc(0, 0);  // 0xffffffff when s < p
        Mont r;
#pragma unroll
        for (int i = 0; i < N; i++) r.v[i] = borrow ? s.v[i] : t.v[i];
        return r;
    }

    // a + b mod p. With a, b < p < 2^(32N−1) the sum fits in N limbs.
    static BL_HD Mont add(const Mont& a, const Mont& b) {
        Mont s;
        s.v[0] = add_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) s.v[i] = addc_cc(a.v[i], b.v[i]);
        s.v[N - 1] = addc(a.v[N - 1], b.v[N - 1]);
        return reduce_once(s);
    }

    // a − b mod p: subtract, and add p back on a borrow.
    static BL_HD Mont sub(const Mont& a, const Mont& b) {
        Mont d;
        d.v[0] = sub_cc(a.v[0], b.v[0]);
#pragma unroll
        for (int i = 1; i < N; i++) d.v[i] = subc_cc(a.v[i], b.v[i]);
        uint32_t borrow = subc(0, 0);
        Mont t;
        t.v[0] = add_cc(d.v[0], P::mod(0) & borrow);
#pragma unroll
        for (int i = 1; i < N - 1; i++) t.v[i] = addc_cc(d.v[i], P::mod(i) & borrow);
        t.v[N - 1] = addc(d.v[N - 1], P::mod(N - 1) & borrow);
        return t;
    }

    // −a mod p (0 stays 0).
    static BL_HD Mont neg(const Mont& a) {
        uint32_t nz = a.is_zero() ? 0u : 0xffffffffu;
        Mont r;
        r.v[0] = sub_cc(P::mod(0) & nz, a.v[0]);
#pragma unroll
        for (int i = 1; i < N - 1; i++) r.v[i] = subc_cc(P::mod(i) & nz, a.v[i]);
        r.v[N - 1] = subc(P::mod(N - 1) & nz, a.v[N - 1]);
        return r;
    }

    static BL_HD Mont dbl(const Mont& a) { return add(a, a); }

    // Montgomery product a·b·R⁻¹ mod p (CIOS, even/odd split; see the file comment).
    static BL_HD Mont mul(const Mont& a, const Mont& b) { return mul_int(a, b); }

    // a·b − c·d mod p. For a field with P::SQR_SUB, one interleaved pass (mul_sub_int) with a
    // single reduction instead of two products and a subtraction.
    static BL_HD Mont mul_sub(const Mont& a, const Mont& b, const Mont& c, const Mont& d) {
        if constexpr (P::SQR_SUB) {
            return mul_sub_int(a, b, neg(c), d);
        } else {
            return sub(mul(a, b), mul(c, d));
        }
    }

    // The integer product (CIOS, even/odd split).
    static BL_HD Mont mul_int(const Mont& a, const Mont& b) {
        uint32_t E[N + 1], O[N];
        first_row(E, O, a.v, b.v[0]);
        reduce_row(E, O);
#pragma unroll
        for (int i = 1; i < N; i++) {
            shift_add_row(E, O, a.v, b.v[i]);
            reduce_row(E, O);
        }
        return finish(E, O);
    }

    // a². For a field with P::SQR_SUB, the dedicated squaring (sqr_int); otherwise a product.
    static BL_HD Mont sqr(const Mont& a) {
        if constexpr (P::SQR_SUB) {
            return sqr_int(a);
        } else {
            return mul(a, a);
        }
    }

    // The same product, compiled once and called: for code with dozens of products (Fp2 and G2
    // arithmetic), where inlining every one costs far more compile time and registers than the
    // call costs at run time. The operands are taken by value: with references the device ABI
    // passes addresses, so every caller stored both operands to its stack (local memory) and the
    // callee loaded them back (the G2 accumulation kept a 1.8 KB stack frame); by value they
    // travel in registers.
    static BL_NOINLINE Mont mul_call(Mont a, Mont b) { return mul(a, b); }

    // a^(p−2) = a⁻¹ for a ≠ 0 (Fermat), and 0 for a = 0. Left-to-right square and multiply over
    // the public exponent p − 2.
    static BL_NOINLINE Mont inv(const Mont& a) {
        Mont r = one();
        for (int i = N - 1; i >= 0; i--) {
            uint32_t e = P::pm2(i);
            for (int bit = 31; bit >= 0; bit--) {
                r = sqr(r);
                if ((e >> bit) & 1) r = mul(r, a);
            }
        }
        return r;
    }

    // Integer x (< p, canonical limbs) → Montgomery form x·R mod p = mont(x, R²).
    static BL_HD Mont to_mont(const Mont& x) {
        Mont rr;
#pragma unroll
        for (int i = 0; i < N; i++) rr.v[i] = P::rr(i);
        return mul(x, rr);
    }

    // Montgomery form → canonical integer: mont(x, 1).
    static BL_HD Mont from_mont(const Mont& x) {
        Mont o = zero();
        o.v[0] = 1;
        return mul(x, o);
    }

private:
    // ---- Squaring and a·b − c·d in the CIOS order (fields with P::SQR_SUB) ----
    //
    // Both keep mul_int's structure (rows of the product interleaved with rows of the reduction,
    // the running sum as E + 2^32·O, each row's shift folded into the next row's chains), so they
    // need no more registers than the product, and they take limb products off the integer
    // multiply-add pipe, the pipe the MSM's additions are bound by.

    // The first row of a product: E + 2^32·O = x·y (x's even limbs in E, its odd ones in O).
    static BL_HD void first_row(uint32_t (&E)[N + 1], uint32_t (&O)[N], const uint32_t (&x)[N], uint32_t y) {
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            E[j] = mul_lo(x[j], y);
            E[j + 1] = mul_hi(x[j], y);
        }
        E[N] = 0;
#pragma unroll
        for (int j = 1; j < N; j += 2) {
            O[j - 1] = mul_lo(x[j], y);
            O[j] = mul_hi(x[j], y);
        }
    }

    // Every later row: divide the running sum by 2^32 (its lowest limb is zero after the
    // reduction step) and add x·y. The new E is O, plus E[1] in its lowest limb; the carry of
    // that addition enters the chain that builds the new O = (E >> 64) + x_odd·y, and the new E
    // then gains x_even·y in a fresh chain.
    static BL_HD void shift_add_row(uint32_t (&E)[N + 1], uint32_t (&O)[N], const uint32_t (&x)[N], uint32_t y) {
        uint32_t E2[N + 1], O2[N];
        E2[0] = add_cc(O[0], E[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j += 2) {
            O2[j - 1] = madc_lo_cc(x[j], y, E[j + 1]);
            O2[j] = madc_hi_cc(x[j], y, E[j + 2]);
        }
        O2[N - 2] = madc_lo_cc(x[N - 1], y, E[N]);
        O2[N - 1] = madc_hi(x[N - 1], y, 0);
#pragma unroll
        for (int j = 1; j < N; j++) E2[j] = O[j];
        E2[N] = 0;
        add_even(E2, x, y);
#pragma unroll
        for (int j = 0; j <= N; j++) E[j] = E2[j];
#pragma unroll
        for (int j = 0; j < N; j++) O[j] = O2[j];
    }

    // After the last reduction step: t = (E + 2^32·O) / 2^32 (E[0] = 0), t < 2p, reduced once.
    static BL_HD Mont finish(const uint32_t (&E)[N + 1], const uint32_t (&O)[N]) {
        Mont r;
        r.v[0] = add_cc(O[0], E[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) r.v[j] = addc_cc(O[j], E[j + 1]);
        r.v[N - 1] = addc(O[N - 1], E[N]);
        return reduce_once(r);
    }

    // E += x_even·y in a fresh carry chain, its carry into E[N].
    static BL_HD void add_even(uint32_t (&E)[N + 1], const uint32_t (&x)[N], uint32_t y) {
        E[0] = mad_lo_cc(x[0], y, E[0]);
        E[1] = madc_hi_cc(x[0], y, E[1]);
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            E[j] = madc_lo_cc(x[j], y, E[j]);
            E[j + 1] = madc_hi_cc(x[j], y, E[j + 1]);
        }
        E[N] = addc(E[N], 0);
    }

    // E += x_even·y, O += x_odd·y (two fresh carry chains; O's cannot carry out while the
    // running sum stays below 2^(32(N+1))).
    static BL_HD void row_add(uint32_t (&E)[N + 1], uint32_t (&O)[N], const uint32_t (&x)[N], uint32_t y) {
        add_even(E, x, y);
        O[0] = mad_lo_cc(x[1], y, O[0]);
        O[1] = madc_hi_cc(x[1], y, O[1]);
#pragma unroll
        for (int j = 3; j < N - 1; j += 2) {
            O[j - 1] = madc_lo_cc(x[j], y, O[j - 1]);
            O[j] = madc_hi_cc(x[j], y, O[j]);
        }
        O[N - 2] = madc_lo_cc(x[N - 1], y, O[N - 2]);
        O[N - 1] = madc_hi(x[N - 1], y, O[N - 1]);
    }

    // a·b + c·d reduced once: (a·b + c·d)·R⁻¹ mod p, every row adding a·b_i and c·d_i before its
    // reduction step. Called with c = p − c₀ (c₀ = 0 gives c = 0) for a·b − c₀·d. Each row adds
    // less than 3·2^32·p, so the running sum stays below 3p between rows (and below 2^(32(N+1))
    // within one); the result (a·b + c·d + M·p)/R < (2p² + R·p)/R < 2p, as 2p < R, so one
    // conditional subtraction finishes. Limb products: 3N² instead of 4N² for two products.
    static BL_HD Mont mul_sub_int(const Mont& a, const Mont& b, const Mont& c, const Mont& d) {
        uint32_t E[N + 1], O[N];
        first_row(E, O, a.v, b.v[0]);
        row_add(E, O, c.v, d.v[0]);
        reduce_row(E, O);
#pragma unroll
        for (int i = 1; i < N; i++) {
            shift_add_row(E, O, a.v, b.v[i]);
            row_add(E, O, c.v, d.v[i]);
            reduce_row(E, O);
        }
        return finish(E, O);
    }

    // Row i's multiplicand limb j (j ≥ i) in the squaring: a² = Σ_i a_i·(a_i·2^(32i) +
    // 2·Σ_{j>i} a_j·2^(32j)), so row i multiplies a_i by a_i at limb i and by the doubled suffix
    // of a above it: limb i + 1 is a_{i+1} << 1 (nothing carried in from a_i), and limbs
    // j ≥ i + 2 are those of 2a (a2), whose carries come from the suffix itself. 2a fits N limbs
    // (a < p < 2^(32N − 1)), and so does the doubled suffix.
    static BL_HD uint32_t sqr_limb(const Mont& a, const uint32_t (&a2)[N], int i, int j) {
        return j == i ? a.v[i] : (j == i + 1 ? a.v[i + 1] << 1 : a2[j]);
    }

    // a²·R⁻¹ mod p: mul_int's rows with b = a, where row i skips the products below limb i
    // (those of a_j·a_i with j < i were counted, doubled, by row j). N(N + 1)/2 limb products
    // instead of N² for the product part; the reduction is unchanged. A row adds
    // a_i·(a_i·2^(32i) + 2·Σ_{j>i} a_j·2^(32j))/2^(32i) < 2^32·2p, so the running sum stays
    // below 3p between rows; the result (a² + M·p)/R < 2p, one conditional subtraction.
    static BL_HD Mont sqr_int(const Mont& a) {
        uint32_t a2[N];
        a2[0] = add_cc(a.v[0], a.v[0]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) a2[j] = addc_cc(a.v[j], a.v[j]);
        a2[N - 1] = addc(a.v[N - 1], a.v[N - 1]);

        uint32_t E[N + 1], O[N], x0[N];
#pragma unroll
        for (int j = 0; j < N; j++) x0[j] = sqr_limb(a, a2, 0, j);
        first_row(E, O, x0, a.v[0]);
        reduce_row(E, O);

#pragma unroll
        for (int i = 1; i < N; i++) {
            const uint32_t bi = a.v[i];
            uint32_t E2[N + 1], O2[N];
            // The shift by one limb (as in mul_int); below limb i the O chain only carries.
            E2[0] = add_cc(O[0], E[1]);
#pragma unroll
            for (int j = 1; j < N - 1; j += 2) {
                if (j >= i) {
                    O2[j - 1] = madc_lo_cc(sqr_limb(a, a2, i, j), bi, E[j + 1]);
                    O2[j] = madc_hi_cc(sqr_limb(a, a2, i, j), bi, E[j + 2]);
                } else {
                    O2[j - 1] = addc_cc(E[j + 1], 0);
                    O2[j] = addc_cc(E[j + 2], 0);
                }
            }
            O2[N - 2] = madc_lo_cc(sqr_limb(a, a2, i, N - 1), bi, E[N]);
            O2[N - 1] = madc_hi(sqr_limb(a, a2, i, N - 1), bi, 0);
#pragma unroll
            for (int j = 1; j < N; j++) E2[j] = O[j];
            // Even limbs from the first even j ≥ i, a fresh chain.
            const int j0 = (i + 1) & ~1;
#pragma unroll
            for (int j = 0; j < N; j += 2) {
                if (j < j0) continue;
                if (j == j0)
                    E2[j] = mad_lo_cc(sqr_limb(a, a2, i, j), bi, E2[j]);
                else
                    E2[j] = madc_lo_cc(sqr_limb(a, a2, i, j), bi, E2[j]);
                E2[j + 1] = madc_hi_cc(sqr_limb(a, a2, i, j), bi, E2[j + 1]);
            }
            E2[N] = j0 < N ? addc(0, 0) : 0u;
#pragma unroll
            for (int j = 0; j <= N; j++) E[j] = E2[j];
#pragma unroll
            for (int j = 0; j < N; j++) O[j] = O2[j];
            reduce_row(E, O);
        }
        return finish(E, O);
    }

    // One Montgomery reduction step: m = E[0]·M0 mod 2^32, then E += m·p_even, O += m·p_odd,
    // which makes E[0] zero.
    //
    // When p ≡ 2^64 − 2^32 + 1 (mod 2^64), as for Fr (limb 0 is 1, limb 1 is 0xffffffff), the
    // products by those two limbs need no multiplier: m·1 = m (high half 0), and
    // m·(2^32 − 1) = 2^32·m − m has low half −m and high half m − [m ≠ 0]. That turns 4 of the
    // row's 2N multiply-adds into plain additions, which run on a different pipe.
    static BL_HD void reduce_row(uint32_t (&E)[N + 1], uint32_t (&O)[N]) {
        uint32_t m = E[0] * P::M0;
        if constexpr (P::LOW_LIMBS_ONE_FFFFFFFF) {
            O[0] = add_cc(O[0], 0u - m);
            O[1] = addc_cc(O[1], m - (m != 0 ? 1u : 0u));
        } else {
            O[0] = mad_lo_cc(m, P::mod(1), O[0]);
            O[1] = madc_hi_cc(m, P::mod(1), O[1]);
        }
#pragma unroll
        for (int j = 3; j < N - 1; j += 2) {
            O[j - 1] = madc_lo_cc(m, P::mod(j), O[j - 1]);
            O[j] = madc_hi_cc(m, P::mod(j), O[j]);
        }
        O[N - 2] = madc_lo_cc(m, P::mod(N - 1), O[N - 2]);
        O[N - 1] = madc_hi(m, P::mod(N - 1), O[N - 1]);
        if constexpr (P::LOW_LIMBS_ONE_FFFFFFFF) {
            E[0] = add_cc(E[0], m);
            E[1] = addc_cc(E[1], 0);
        } else {
            E[0] = mad_lo_cc(m, P::mod(0), E[0]);
            E[1] = madc_hi_cc(m, P::mod(0), E[1]);
        }
#pragma unroll
        for (int j = 2; j < N; j += 2) {
            E[j] = madc_lo_cc(m, P::mod(j), E[j]);
            E[j + 1] = madc_hi_cc(m, P::mod(j), E[j + 1]);
        }
        E[N] = addc(E[N], 0);
    }
};

template <class P>
BL_HD Mont<P> operator+(const Mont<P>& a, const Mont<P>& b) { return Mont<P>::add(a, b); }
template <class P>
BL_HD Mont<P> operator-(const Mont<P>& a, const Mont<P>& b) { return Mont<P>::sub(a, b); }
template <class P>
BL_HD Mont<P> operator-(const Mont<P>& a) { return Mont<P>::neg(a); }
template <class P>
BL_HD Mont<P> operator*(const Mont<P>& a, const Mont<P>& b) { return Mont<P>::mul(a, b); }

}  // namespace bellows
