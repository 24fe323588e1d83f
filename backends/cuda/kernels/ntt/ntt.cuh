// Bellows CUDA kernels: number-theoretic transforms over Fr.
//
// Algorithm. Radix-2 transforms of n = 2^L elements: Gentleman–Sande decimation in frequency
// (natural order in, bit-reversed order out; W. M. Gentleman, G. Sande, "Fast Fourier transforms
// for fun and profit", AFIPS 1966) and Cooley–Tukey decimation in time (bit-reversed in, natural
// out; J. W. Cooley, J. W. Tukey, Math. Comp. 19, 1965). Stage β (one per index bit) pairs the
// elements whose indices differ in bit β. Stages are grouped into passes of up to 11 consecutive
// bits, as in Bailey's four-step / "FFTs in external or hierarchical memory" decomposition
// (D. H. Bailey, J. Supercomputing 4, 1990): one pass reads each element from device memory once,
// runs all its stages on a tile in shared memory and writes it back once, so an n = 2^27 transform
// costs three round trips to memory instead of twenty-seven.
//
// Tiles. A pass over bits [b0, b0 + k) works on tiles of 2^k elements that differ only in those
// bits, times 2^c neighbours that differ in the lowest c bits below b0 (so that global loads come
// in runs of 2^c consecutive 32-byte elements). Element e = (a << c) | l of a tile lives at
// index base + (a << b0) + l of its vector.
//
// Twiddles. One table T[e] = ω_N^e for e ∈ [0, N/2], N = 2^tw_log ≥ n, kept on the device. The
// butterfly of stage β at index i (bit β clear) uses ω_n^((i mod 2^β)·2^(L−1−β)) =
// T[(i mod 2^β) << (tw_log − 1 − β)] in both orderings. The inverse transform uses
// ω^−e = −ω^(N/2 − e) = −T[N/2 − e] and folds the sign into the butterfly (it swaps the operands
// of a subtraction), so no second table is needed.
//
// Scaling. A forward coset transform multiplies x_i by g^i before the first stage; an inverse
// transform multiplies the result by 1/n, or over the coset coefficient i by g^−i/n, after the
// last stage. The factors come from two 2^14-entry tables, HI[i >> 14]·LO[i & 0x3fff]; for the
// inverse coset HI already carries the 1/n, so the factor costs one product and applying it one
// more. "i" is the element's logical index, the bit reversal of its position when the data is
// stored bit-reversed.
#pragma once

#include "ff/bls12_381.cuh"

namespace bellows {

// Flags of one pass (NttPass::flags).
enum : uint32_t {
    NTT_DIT = 1u << 0,          // Cooley–Tukey (bit-reversed in); else Gentleman–Sande
    NTT_INVERSE = 1u << 1,      // use ω⁻¹
    NTT_PRE_COSET = 1u << 2,    // x_i *= g^i at load
    NTT_PRE_BITREV = 1u << 3,   // at load, logical index = bitrev(position)
    NTT_POST_SCALE = 1u << 4,   // x *= scale (1/n) at store (inverse, not over a coset)
    NTT_POST_COSET = 1u << 5,   // x_i *= g^−i/n at store (inverse over a coset)
    NTT_POST_BITREV = 1u << 6,  // at store, logical index = bitrev(position)
};

// Arguments of one pass, passed by value. Mirrored by `NttPassArgs` in src/ntt/plan.rs.
struct NttPass {
    uint64_t data;      // Fr*: the first vector of this launch
    uint64_t twiddles;  // const Fr*: T[0 ..= N/2]
    uint64_t coset;     // const Fr*: LO[2^14] then HI[2^14], for g (pre) or g⁻¹ with 1/n (post)
    uint64_t n;         // vector length 2^log_n (also the stride between vectors)
    uint32_t scale[8];  // Montgomery limbs of 1/n (used with NTT_POST_SCALE)
    uint32_t log_n;
    uint32_t b0;      // lowest bit of this pass
    uint32_t k;       // number of stages (bits) in this pass
    uint32_t c;       // low neighbour bits per tile
    uint32_t tw_log;  // log2 N of the twiddle table
    uint32_t flags;
    uint32_t reserved0;
    uint32_t reserved1;
};

static constexpr uint32_t COSET_TABLE_BITS = 14;

BL_HD uint32_t bit_reverse(uint32_t x, uint32_t bits) {
#ifdef BELLOWS_HOST_EMULATION
    uint32_t r = 0;
    for (uint32_t i = 0; i < bits; i++) r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
#else
    return bits == 0 ? 0 : (__brev(x) >> (32 - bits));
#endif
}

// Position within its vector of tile element e.
BL_HD uint64_t tile_position(const NttPass& a, uint64_t tile, uint32_t e) {
    uint32_t low_groups_bits = a.b0 - a.c;
    uint64_t lg = tile & ((1ull << low_groups_bits) - 1);
    uint64_t hi = tile >> low_groups_bits;
    uint64_t base = (hi << (a.b0 + a.k)) | (lg << a.c);
    uint64_t act = e >> a.c;
    uint64_t l = e & ((1u << a.c) - 1);
    return base + (act << a.b0) + l;
}

BL_HD Fr load_fr(const uint32_t* p) {
    Fr x;
#pragma unroll
    for (int i = 0; i < 8; i++) x.v[i] = p[i];
    return x;
}

// g^(±i) from the split coset table (see the file comment).
BL_HD Fr coset_factor(const NttPass& a, uint64_t logical) {
    const uint32_t* t = (const uint32_t*)a.coset;
    uint64_t lo = logical & ((1u << COSET_TABLE_BITS) - 1);
    uint64_t hi = logical >> COSET_TABLE_BITS;
    return load_fr(t + 8 * lo) * load_fr(t + 8 * ((1u << COSET_TABLE_BITS) + hi));
}

BL_HD Fr pre_scale(const NttPass& a, uint64_t pos, Fr x) {
    if (a.flags & NTT_PRE_COSET) {
        uint64_t i = (a.flags & NTT_PRE_BITREV) ? bit_reverse((uint32_t)pos, a.log_n) : pos;
        x = x * coset_factor(a, i);
    }
    return x;
}

BL_HD Fr post_scale(const NttPass& a, uint64_t pos, Fr x) {
    if (a.flags & NTT_POST_SCALE) {
        Fr s;
#pragma unroll
        for (int i = 0; i < 8; i++) s.v[i] = a.scale[i];
        x = x * s;
    }
    if (a.flags & NTT_POST_COSET) {
        uint64_t i = (a.flags & NTT_POST_BITREV) ? bit_reverse((uint32_t)pos, a.log_n) : pos;
        x = x * coset_factor(a, i);
    }
    return x;
}

// Tile bit and global bit of stage s (0-based, in execution order) of the pass.
BL_HD uint32_t stage_bit(const NttPass& a, uint32_t s) {
    return (a.flags & NTT_DIT) ? a.b0 + s : a.b0 + a.k - 1 - s;
}

// The two tile elements of butterfly q when the stage works on tile bit p.
BL_HD void butterfly_pair(uint32_t q, uint32_t p, uint32_t& e1, uint32_t& e2) {
    e1 = ((q >> p) << (p + 1)) | (q & ((1u << p) - 1));
    e2 = e1 | (1u << p);
}

// Index into the twiddle table of the butterfly at position pos1 (bit beta clear) of stage beta.
BL_HD uint64_t twiddle_index(const NttPass& a, uint64_t pos1, uint32_t beta) {
    uint64_t j = pos1 & ((1ull << beta) - 1);
    uint64_t e = j << (a.tw_log - 1 - beta);
    if (a.flags & NTT_INVERSE) e = (1ull << (a.tw_log - 1)) - e;
    return e;
}

// Radix-2 butterfly on (u, v) with twiddle w as stored (see the inverse sign rule above).
BL_HD void butterfly(uint32_t flags, Fr& u, Fr& v, const Fr& w) {
    bool inv = (flags & NTT_INVERSE) != 0;
    if (flags & NTT_DIT) {
        Fr t = v * w;
        Fr s = u + t;
        Fr d = u - t;
        u = inv ? d : s;
        v = inv ? s : d;
    } else {
        Fr s = u + v;
        Fr d = inv ? (v - u) : (u - v);
        u = s;
        v = d * w;
    }
}

// Tiled in-place bit reversal (for log_n ≥ 2·BITREV_TILE_BITS). Write an index as (a, m, b): a the
// top t bits, b the bottom t bits, m the middle. Then bitrev(a, m, b) = (rev b, rev m, rev a): the
// 2^t × 2^t tile of a middle value m maps onto the tile of rev m, transposed with both
// coordinates reversed. One block swaps the tiles m and rev m (m ≤ rev m) through shared memory,
// so every global access is a run of 2^t consecutive elements instead of a scattered one (in the
// spirit of Carter and Gatlin's cache-optimal bit reversal, FOCS 1998).
static constexpr uint32_t BITREV_TILE_BITS = 4;

// Position of tile element (row a, column b) of middle value m.
BL_HD uint64_t bitrev_tile_position(uint32_t log_n, uint64_t m, uint32_t a, uint32_t b) {
    const uint32_t t = BITREV_TILE_BITS;
    return ((uint64_t)a << (log_n - t)) | (m << t) | b;
}

// The butterfly of the stage on bit 0, whose twiddle is 1 in every variant (the inverse's stored
// factor there is T[N/2] = −1, whose sign the variants cancel): (u, v) → (u + v, u − v), with no
// multiplication and no table load.
BL_HD void butterfly_unit(Fr& u, Fr& v) {
    Fr s = u + v;
    v = u - v;
    u = s;
}

// ---- radix-4 steps (the pass kernel's stages, two at a time) ----------------------------------
//
// A pass runs its k stages as steps: a radix-4 step does two consecutive stages (bits lo and
// lo + 1) on four tile elements held in registers, one read and one write of each through shared
// memory instead of two; when k is odd, the stage on the pass's top bit is a radix-2 step of its
// own (first in DIF order, last in DIT order, so it never falls on bit 0). The two stages of a
// radix-4 step are exactly the two radix-2 stages in the same order (the usual radix-2^2
// grouping), so results are bit for bit those of the radix-2 schedule. Twiddles: the quad
// e0..e3 = e0 + {0, 1, 2, 3}·2^lo (tile bits) sits at positions pos0 + {0, 1, 2, 3}·2^lo; the
// stage on bit lo pairs (e0, e1) and (e2, e3), whose positions agree mod 2^lo, so both use one
// twiddle; the stage on bit lo + 1 pairs (e0, e2) and (e1, e3), two twiddles: three loads per
// four butterflies.

// Whether the stage s (execution order) is a radix-2 step: k odd and s on the pass's top bit.
BL_HD bool radix2_step_at(const NttPass& a, uint32_t s) {
    return (a.k & 1u) && stage_bit(a, s) == a.b0 + a.k - 1;
}

// The four tile elements of quad q when the step's lower stage works on tile bit p.
BL_HD uint32_t quad_base(uint32_t q, uint32_t p) {
    return ((q >> p) << (p + 2)) | (q & ((1u << p) - 1));
}

// Shared-memory slot of tile element e: e with its low three bits XORed with a function of bits
// 3 and 4. Shared memory holds an element as two 16-byte halves; a warp's 16-byte accesses are
// served eight threads at a time, free of bank conflicts when those eight hit distinct slots mod
// 8. Without the swizzle, the quads of the low tile bits (e0 = 4q, or runs of two or four) would
// hit two or four threads per bank; with it every access pattern of the steps (quads on tile bits
// lo ≥ 0, radix-2 steps on bits ≥ 3, consecutive loads and stores) is conflict-free. A bijection
// of every aligned block of 8, so of any tile of 8 or more elements (smaller tiles: identity).
BL_HD uint32_t smem_slot(uint32_t e) {
    uint32_t x0 = (e >> 3) & 1u, x1 = (e >> 4) & 1u;
    return e ^ ((x0 ^ x1) | (x0 << 1) | (x1 << 2));
}

BL_HD Fr load_twiddle(const NttPass& a, uint64_t index) {
#ifdef BELLOWS_HOST_EMULATION
    return ((const Fr*)a.twiddles)[index];
#else
    const uint4* p = (const uint4*)a.twiddles + 2 * index;
    uint4 x = __ldg(p), y = __ldg(p + 1);
    return Fr{{x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w}};
#endif
}

// The stage on bit beta for the pairs (u0, v0) and (u1, v1), whose positions agree mod 2^beta so
// that they share the twiddle of position pos1 (no twiddle on bit 0).
BL_HD void stage_pairs(const NttPass& a, uint32_t beta, uint64_t pos1, Fr& u0, Fr& v0, Fr& u1,
                       Fr& v1) {
    if (beta == 0) {
        butterfly_unit(u0, v0);
        butterfly_unit(u1, v1);
    } else {
        Fr w = load_twiddle(a, twiddle_index(a, pos1, beta));
        butterfly(a.flags, u0, v0, w);
        butterfly(a.flags, u1, v1, w);
    }
}

// The radix-2 step of stage s for butterfly q. Tile: get(e) / set(e, x) on the tile.
template <class Tile>
BL_HD void radix2_step(const NttPass& a, uint64_t tile, Tile& t, uint32_t s, uint32_t q) {
    const uint32_t beta = stage_bit(a, s);
    uint32_t e1, e2;
    butterfly_pair(q, beta - a.b0 + a.c, e1, e2);
    Fr u = t.get(e1), v = t.get(e2);
    if (beta == 0) {
        butterfly_unit(u, v);
    } else {
        Fr w = load_twiddle(a, twiddle_index(a, tile_position(a, tile, e1), beta));
        butterfly(a.flags, u, v, w);
    }
    t.set(e1, u);
    t.set(e2, v);
}

// The radix-4 step of stages s and s + 1 for quad q (see above).
template <class Tile>
BL_HD void radix4_step(const NttPass& a, uint64_t tile, Tile& t, uint32_t s, uint32_t q) {
    const bool dit = (a.flags & NTT_DIT) != 0;
    const uint32_t lo = dit ? stage_bit(a, s) : stage_bit(a, s + 1);
    const uint32_t hi = lo + 1;
    const uint32_t e0 = quad_base(q, lo - a.b0 + a.c), d = 1u << (lo - a.b0 + a.c);
    const uint64_t pos0 = tile_position(a, tile, e0);
    Fr x0 = t.get(e0), x1 = t.get(e0 + d), x2 = t.get(e0 + 2 * d), x3 = t.get(e0 + 3 * d);
    if (dit) {
        stage_pairs(a, lo, pos0, x0, x1, x2, x3);
        Fr w = load_twiddle(a, twiddle_index(a, pos0, hi));
        butterfly(a.flags, x0, x2, w);
        w = load_twiddle(a, twiddle_index(a, pos0 + (1ull << lo), hi));
        butterfly(a.flags, x1, x3, w);
    } else {
        Fr w = load_twiddle(a, twiddle_index(a, pos0, hi));
        butterfly(a.flags, x0, x2, w);
        w = load_twiddle(a, twiddle_index(a, pos0 + (1ull << lo), hi));
        butterfly(a.flags, x1, x3, w);
        stage_pairs(a, lo, pos0, x0, x1, x2, x3);
    }
    t.set(e0, x0);
    t.set(e0 + d, x1);
    t.set(e0 + 2 * d, x2);
    t.set(e0 + 3 * d, x3);
}


}  // namespace bellows
