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

#include "carry.cuh"
#include "fp_dp.cuh"

namespace bellows {

using namespace cc;

// A prime field described by P: P::N limbs, P::mod(i) the modulus limbs, P::M0 = −p⁻¹ mod 2^32,
// P::rr(i) the limbs of R² mod p, P::one(i) those of R mod p (the Montgomery form of 1), and
// P::pm2(i) those of p − 2 (the Fermat inversion exponent), and P::LOW_LIMBS_ONE_FFFFFFFF
// whether p ≡ 2^64 − 2^32 + 1 (mod 2^64) (see reduce_row), and P::DP_MUL whether products run
// on the FP64 pipe (fp_dp.cuh; Fp only). Limb loops are unrolled, so every
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

    // Montgomery product a·b·R⁻¹ mod p (CIOS, even/odd split; see the file comment), or, for a
    // field whose P::DP_MUL is set, the same product on the FP64 pipe (fp_dp.cuh).
    static BL_HD Mont mul(const Mont& a, const Mont& b) {
        if constexpr (P::DP_MUL) {
            static_assert(N == 12, "the FP64 product is written for BLS12-381's Fp");
            Mont r;
            dp::mont_mul_fp<P>(a.v, b.v, r.v);
            return r;
        } else if constexpr (P::WIDE_MUL) {
            uint32_t t[2 * N];
            mul_wide(a.v, b.v, t);
            return redc(t);
        } else {
            return mul_int(a, b);
        }
    }

    // a·b − c·d mod p with one reduction instead of two, for fields whose products are formed
    // wide (P::WIDE_MUL): the two double-width products a·b and (p − c)·d are added and reduced
    // once. Both are below p², so their sum is below 2p² < p·R, the bound redc needs. Otherwise
    // (the CIOS and FP64 products) it is two products and a subtraction.
    static BL_HD Mont mul_sub(const Mont& a, const Mont& b, const Mont& c, const Mont& d) {
        if constexpr (P::WIDE_MUL && !P::DP_MUL) {
            uint32_t t[2 * N], u[2 * N];
            mul_wide(a.v, b.v, t);
            mul_wide(neg(c).v, d.v, u);
            t[0] = add_cc(t[0], u[0]);
#pragma unroll
            for (int j = 1; j < 2 * N - 1; j++) t[j] = addc_cc(t[j], u[j]);
            t[2 * N - 1] = addc(t[2 * N - 1], u[2 * N - 1]);
            return redc(t);
        } else {
            return sub(mul(a, b), mul(c, d));
        }
    }

    // The integer product (CIOS, even/odd split).
    static BL_HD Mont mul_int(const Mont& a, const Mont& b) {
        uint32_t E[N + 1], O[N];

        // Row 0: plain products, no accumulation.
#pragma unroll
        for (int j = 0; j < N; j += 2) {
            E[j] = mul_lo(a.v[j], b.v[0]);
            E[j + 1] = mul_hi(a.v[j], b.v[0]);
        }
        E[N] = 0;
#pragma unroll
        for (int j = 1; j < N; j += 2) {
            O[j - 1] = mul_lo(a.v[j], b.v[0]);
            O[j] = mul_hi(a.v[j], b.v[0]);
        }
        reduce_row(E, O);

#pragma unroll
        for (int i = 1; i < N; i++) {
            uint32_t bi = b.v[i];
            uint32_t E2[N + 1], O2[N];
            // Divide by 2^32: the new E is O, plus E[1] in its lowest limb; the carry of that
            // addition enters the chain that builds the new O = (E >> 64) + a_odd·b_i.
            E2[0] = add_cc(O[0], E[1]);
#pragma unroll
            for (int j = 1; j < N - 1; j += 2) {
                O2[j - 1] = madc_lo_cc(a.v[j], bi, E[j + 1]);
                O2[j] = madc_hi_cc(a.v[j], bi, E[j + 2]);
            }
            O2[N - 2] = madc_lo_cc(a.v[N - 1], bi, E[N]);
            O2[N - 1] = madc_hi(a.v[N - 1], bi, 0);
            // New E += a_even·b_i (a fresh chain).
#pragma unroll
            for (int j = 1; j < N; j++) E2[j] = O[j];
            E2[0] = mad_lo_cc(a.v[0], bi, E2[0]);
            E2[1] = madc_hi_cc(a.v[0], bi, E2[1]);
#pragma unroll
            for (int j = 2; j < N; j += 2) {
                E2[j] = madc_lo_cc(a.v[j], bi, E2[j]);
                E2[j + 1] = madc_hi_cc(a.v[j], bi, E2[j + 1]);
            }
            E2[N] = addc(0, 0);
#pragma unroll
            for (int j = 0; j <= N; j++) E[j] = E2[j];
#pragma unroll
            for (int j = 0; j < N; j++) O[j] = O2[j];
            reduce_row(E, O);
        }

        // t = (E + 2^32·O) / 2^32 with E[0] = 0, and t < 2p.
        Mont r;
        r.v[0] = add_cc(O[0], E[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) r.v[j] = addc_cc(O[j], E[j + 1]);
        r.v[N - 1] = addc(O[N - 1], E[N]);
        return reduce_once(r);
    }

    static BL_HD Mont sqr(const Mont& a) { return mul(a, a); }

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
    // ---- Double-width products and a separate reduction (fields with P::WIDE_MUL) ----
    //
    // The product a·b is formed in full (2N limbs) by one level of Karatsuba's method
    // (A. Karatsuba and Yu. Ofman, "Multiplication of multidigit numbers on automata", Soviet
    // Physics Doklady 7, 1963): with a = a0 + 2^(32H)·a1, b likewise, H = N/2,
    // a·b = a0·b0 + 2^(32H)·((a0 + a1)(b0 + b1) − a0·b0 − a1·b1) + 2^(64H)·a1·b1,
    // three H × H products (3·H² limb products) instead of N² = 4·H², the rest additions. The
    // reduction (redc) is then Montgomery's on the 2N-limb value, N rows of m·p as in CIOS. On the
    // GPU every limb product is a multiply-add on the integer pipe, the pipe the MSM is bound by,
    // while additions run on the ALU pipe beside it; for Fp (N = 12) a product takes 216 + 300
    // multiply-adds instead of 288 + 300 (mul_int), and a·b − c·d (mul_sub) 732 instead of 1176.
    static_assert(!P::WIDE_MUL || N % 4 == 0, "the wide product splits N into two even halves");
    static constexpr int H = N / 2;

    // t = a·b, H × H limbs → 2H limbs, schoolbook by rows with the even/odd split of mul_int:
    // E collects the products of a's even limbs (row i covers positions i … i + H − 1), O those
    // of its odd limbs (positions i + 1 … i + H), both indexed by position; each row's final
    // carry goes to the next, not yet written, position. The product is below 2^(64H), so
    // neither accumulator's last row carries out.
    static BL_HD void mul_half(const uint32_t (&a)[H], const uint32_t (&b)[H], uint32_t (&t)[2 * H]) {
        uint32_t E[2 * H], O[2 * H];
#pragma unroll
        for (int j = 0; j < H; j += 2) {
            E[j] = mul_lo(a[j], b[0]);
            E[j + 1] = mul_hi(a[j], b[0]);
            O[j + 1] = mul_lo(a[j + 1], b[0]);
            O[j + 2] = mul_hi(a[j + 1], b[0]);
        }
#pragma unroll
        for (int k = H; k < 2 * H; k++) E[k] = 0;
        O[0] = 0;
#pragma unroll
        for (int k = H + 1; k < 2 * H; k++) O[k] = 0;
#pragma unroll
        for (int i = 1; i < H; i++) {
            uint32_t bi = b[i];
            E[i] = mad_lo_cc(a[0], bi, E[i]);
            E[i + 1] = madc_hi_cc(a[0], bi, E[i + 1]);
#pragma unroll
            for (int j = 2; j < H; j += 2) {
                E[i + j] = madc_lo_cc(a[j], bi, E[i + j]);
                E[i + j + 1] = madc_hi_cc(a[j], bi, E[i + j + 1]);
            }
            if (i + H < 2 * H) E[i + H] = addc(E[i + H], 0);
            O[i + 1] = mad_lo_cc(a[1], bi, O[i + 1]);
            O[i + 2] = madc_hi_cc(a[1], bi, O[i + 2]);
#pragma unroll
            for (int j = 3; j < H; j += 2) {
                O[i + j] = madc_lo_cc(a[j], bi, O[i + j]);
                O[i + j + 1] = madc_hi_cc(a[j], bi, O[i + j + 1]);
            }
            if (i + H + 1 < 2 * H) O[i + H + 1] = addc(O[i + H + 1], 0);
        }
        t[0] = E[0];
        t[1] = add_cc(E[1], O[1]);
#pragma unroll
        for (int k = 2; k < 2 * H - 1; k++) t[k] = addc_cc(E[k], O[k]);
        t[2 * H - 1] = addc(E[2 * H - 1], O[2 * H - 1]);
    }

    // t = a·b in full (2N limbs), one level of Karatsuba (see above). With a0 + a1 = s_a +
    // 2^(32H)·c_a (c_a a bit), (a0 + a1)(b0 + b1) = s_a·s_b + 2^(32H)·(c_a·s_b + c_b·s_a) +
    // 2^(64H)·c_a·c_b, the corrections added under masks. The middle term a0·b1 + a1·b0 is
    // below 2^(64H + 1) and is kept in 2H + 1 limbs.
    static BL_HD void mul_wide(const uint32_t (&a)[N], const uint32_t (&b)[N], uint32_t (&t)[2 * N]) {
        uint32_t a0[H], a1[H], b0[H], b1[H], sa[H], sb[H];
#pragma unroll
        for (int k = 0; k < H; k++) {
            a0[k] = a[k];
            a1[k] = a[H + k];
            b0[k] = b[k];
            b1[k] = b[H + k];
        }
        sa[0] = add_cc(a0[0], a1[0]);
#pragma unroll
        for (int k = 1; k < H; k++) sa[k] = addc_cc(a0[k], a1[k]);
        uint32_t ca = addc(0, 0);
        sb[0] = add_cc(b0[0], b1[0]);
#pragma unroll
        for (int k = 1; k < H; k++) sb[k] = addc_cc(b0[k], b1[k]);
        uint32_t cb = addc(0, 0);

        uint32_t z0[2 * H], z1[2 * H], z2[2 * H];
        mul_half(a0, b0, z0);
        mul_half(a1, b1, z2);
        mul_half(sa, sb, z1);

        // z1 (2H + 1 limbs) += 2^(32H)·(c_a·s_b + c_b·s_a) + 2^(64H)·c_a·c_b
        uint32_t cam = 0u - ca, cbm = 0u - cb;
        uint32_t top = ca & cb;
        z1[H] = add_cc(z1[H], sb[0] & cam);
#pragma unroll
        for (int k = 1; k < H; k++) z1[H + k] = addc_cc(z1[H + k], sb[k] & cam);
        top = addc(top, 0);
        z1[H] = add_cc(z1[H], sa[0] & cbm);
#pragma unroll
        for (int k = 1; k < H; k++) z1[H + k] = addc_cc(z1[H + k], sa[k] & cbm);
        top = addc(top, 0);

        // mid = z1 − z0 − z2 = a0·b1 + a1·b0 ≥ 0
        z1[0] = sub_cc(z1[0], z0[0]);
#pragma unroll
        for (int k = 1; k < 2 * H; k++) z1[k] = subc_cc(z1[k], z0[k]);
        top = subc(top, 0);
        z1[0] = sub_cc(z1[0], z2[0]);
#pragma unroll
        for (int k = 1; k < 2 * H; k++) z1[k] = subc_cc(z1[k], z2[k]);
        top = subc(top, 0);

        // t = z0 + 2^(32H)·mid + 2^(64H)·z2
#pragma unroll
        for (int k = 0; k < H; k++) t[k] = z0[k];
        t[H] = add_cc(z0[H], z1[0]);
#pragma unroll
        for (int k = 1; k < H; k++) t[H + k] = addc_cc(z0[H + k], z1[k]);
#pragma unroll
        for (int k = 0; k < H; k++) t[2 * H + k] = addc_cc(z2[k], z1[H + k]);
        t[3 * H] = addc_cc(z2[H], top);
#pragma unroll
        for (int k = 1; k < H - 1; k++) t[3 * H + k] = addc_cc(z2[H + k], 0);
        t[4 * H - 1] = addc(z2[2 * H - 1], 0);
    }

    // Montgomery's reduction of a 2N-limb t < p·R: t·R⁻¹ mod p, fully reduced. With
    // t = t_lo + R·t_hi, the N reduction rows run over t_lo alone (state E + 2^32·O, as in
    // mul_int, with each row's shift by one limb folded into the next row's chains as mul_int
    // folds it into the next a·b_i), giving s = (t_lo + M·p)/R ≤ p; then s + t_hi < 2p, as
    // t_hi < p, and one conditional subtraction finishes. The state stays below 2^(32(N+1))
    // (t_lo < R, plus m·p < 2^32·p each row, then divided by 2^32), so, as in mul_int, O never
    // carries out.
    static BL_HD Mont redc(const uint32_t (&t)[2 * N]) {
        static_assert(!P::LOW_LIMBS_ONE_FFFFFFFF, "redc is written for a general modulus");
        uint32_t E[N + 1], O[N];
#pragma unroll
        for (int j = 0; j < N; j++) {
            E[j] = t[j];
            O[j] = 0;
        }
        E[N] = 0;
        reduce_row(E, O);
#pragma unroll
        for (int i = 1; i < N; i++) {
            uint32_t E2[N + 1], O2[N];
            // Divide by 2^32: the new lowest limb is O[0] + E[1]; its carry enters the chain
            // that builds the new O = (E >> 64) + m·p_odd, m taken from that lowest limb.
            E2[0] = add_cc(O[0], E[1]);
            uint32_t m = mul_lo(E2[0], P::M0);
#pragma unroll
            for (int j = 1; j < N - 1; j += 2) {
                O2[j - 1] = madc_lo_cc(m, P::mod(j), E[j + 1]);
                O2[j] = madc_hi_cc(m, P::mod(j), E[j + 2]);
            }
            O2[N - 2] = madc_lo_cc(m, P::mod(N - 1), E[N]);
            O2[N - 1] = madc_hi(m, P::mod(N - 1), 0);
#pragma unroll
            for (int j = 1; j < N; j++) E2[j] = O[j];
            E2[0] = mad_lo_cc(m, P::mod(0), E2[0]);
            E2[1] = madc_hi_cc(m, P::mod(0), E2[1]);
#pragma unroll
            for (int j = 2; j < N; j += 2) {
                E2[j] = madc_lo_cc(m, P::mod(j), E2[j]);
                E2[j + 1] = madc_hi_cc(m, P::mod(j), E2[j + 1]);
            }
            E2[N] = addc(0, 0);
#pragma unroll
            for (int j = 0; j <= N; j++) E[j] = E2[j];
#pragma unroll
            for (int j = 0; j < N; j++) O[j] = O2[j];
        }
        // s = (E + 2^32·O) / 2^32, then s + t_hi.
        Mont r;
        r.v[0] = add_cc(O[0], E[1]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) r.v[j] = addc_cc(O[j], E[j + 1]);
        r.v[N - 1] = addc(O[N - 1], E[N]);
        r.v[0] = add_cc(r.v[0], t[N]);
#pragma unroll
        for (int j = 1; j < N - 1; j++) r.v[j] = addc_cc(r.v[j], t[N + j]);
        r.v[N - 1] = addc(r.v[N - 1], t[2 * N - 1]);
        return reduce_once(r);
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
