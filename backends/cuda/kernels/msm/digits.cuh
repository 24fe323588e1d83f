// Bellows CUDA kernels, MSM steps 1 and 3 (msm/msm.cuh): each scalar's signed digits, counted into
// the histogram of bucket keys and then scattered to their buckets' cursors by key range; the
// density's rank words.
#pragma once

#include "msm/common.cuh"

namespace bellows {
namespace msm {


// Bits [pos, pos + c) of a canonical scalar (8 little-endian 32-bit limbs); bits past 255 are 0.
BL_HD uint32_t window_bits(const Fr& k, uint32_t pos, uint32_t c) {
    uint32_t limb = pos >> 5, shift = pos & 31;
    if (limb >= 8) return 0;
    uint64_t lo = k.v[limb];
    uint64_t hi = limb + 1 < 8 ? k.v[limb + 1] : 0;
    uint64_t both = lo | (hi << 32);
    return (uint32_t)(both >> shift) & ((1u << c) - 1);
}

// The base index of scalar i: i itself without a density, else the number of set density bits
// before i (rank[i / 64] holds the count before word i / 64); NONE when bit i is clear.
constexpr uint32_t NONE = 0xffffffffu;
BL_HD uint32_t base_index(uint64_t i, const uint64_t* density, const uint32_t* rank) {
    if (density == nullptr) return (uint32_t)i;
    uint64_t word = density[i >> 6];
    uint32_t bit = (uint32_t)(i & 63);
    if (!((word >> bit) & 1)) return NONE;
    uint64_t below = bit == 0 ? 0 : (word & ((~0ull) >> (64 - bit)));
    return rank[i >> 6] + (uint32_t)popc64(below);
}

// Everything the digit passes need to know about one MSM.
struct DigitArgs {
    const Fr* scalars;        // Montgomery form (scalars[i] is scalar first + i)
    uint64_t n;               // number of scalars in this launch
    uint64_t first;           // index of scalars[0] among all the MSM's scalars
    const uint64_t* density;  // optional bitmap over the scalars (nullptr: every scalar used)
    const uint32_t* rank;     // with density: set bits before each 64-bit word
    uint32_t c;               // window bits
    uint32_t windows;         // number of windows, c·windows ≥ 256
    uint32_t* counts;         // [windows · 2^(c−1) + 1] bucket histogram / cursors
    uint32_t* entries;        // sorted (point index | sign) entries (scatter pass)
    uint32_t* ones;           // base indices of scalars equal to 1
    uint32_t* ones_count;     // their number
    uint64_t stride;          // 0, or a precomputed table's window stride (below)
    uint32_t keys;            // windows·2^(c−1) (1 set with a table): counts[keys] is the total
    uint32_t pass, passes;    // scatter launch `pass` of `passes` (scatter_range)
    uint32_t* listed;         // optional: the count pass lists the scalars with digits (their
    uint32_t* listed_count;   // indices in this launch) for the binned scatter, and their number
};

// Scatter launch a.pass of a.passes: the key range [lo, hi) it writes, or false when it has
// none. The launches used are at most one for each 1.5 entries a scalar (the scan's total,
// counts[keys], against the scalars each launch reads again): a mostly-0/1 witness, 1.3 entries
// a scalar with c = 20, is scattered in one launch; random scalars (13 entries) in all of them.
BL_HD bool scatter_range(const DigitArgs& a, uint32_t& lo, uint32_t& hi) {
    uint32_t used = a.passes;
    if (used > 1) {
        const uint64_t by_entries = (2 * (uint64_t)a.counts[a.keys]) / (3 * a.n + 1);
        if (by_entries < used) used = by_entries < 1 ? 1 : (uint32_t)by_entries;
    }
    if (used <= 1) {
        lo = 0;
        hi = 0xffffffffu;
        return a.pass == 0;
    }
    if (a.pass >= used) return false;
    lo = (uint32_t)((uint64_t)a.keys * a.pass / used);
    hi = a.pass + 1 == used ? 0xffffffffu : (uint32_t)((uint64_t)a.keys * (a.pass + 1) / used);
    return true;
}

// Precomputed window multiples. With a table Q_{w,i} = 2^(c·w)·P_i stored window-major
// (Q_{w,i} at bases[w·stride + i], window 0 the bases themselves), Σ_w 2^(c·w)·Σ_i d_{i,w}·P_i
// = Σ_w Σ_i d_{i,w}·Q_{w,i}: every window's digits fall into one shared set of 2^(c−1)
// buckets (key = |d| − 1) and name the point w·stride + i, so the windows' running sums and
// the host's doublings disappear, and a wider c (fewer windows, so fewer additions) pays. This
// is the fixed-base form of Pippenger's method (Brickell, Gordon, McCurley and Wilson, "Fast
// exponentiation with precomputation", EUROCRYPT 1992, for the table of powers); the price is
// memory (windows × the bases) and a one-off c·(windows − 1) doublings per base.

// What scalar i contributes: 0 for nothing (outside the density, or zero), 1 for a scalar equal
// to 1 (listed apart), 2 for digits, with `idx` its base index and `k` its canonical form.
// 0 and 1 are told from their Montgomery forms (0 and R mod r), before the conversion.
BL_HD uint32_t scalar_kind(const DigitArgs& a, uint64_t i, uint32_t& idx, Fr& k) {
    if (i >= a.n) return 0;
    idx = base_index(a.first + i, a.density, a.rank);
    if (idx == NONE) return 0;
    const Fr m = a.scalars[i];
    if (m.is_zero()) return 0;
    if (m.eq(Fr::one())) return 1;
    k = Fr::from_mont(m);
    return 2;
}

// The signed digit of window w of k (call for w = 0, 1, … in order: `carry` passes from one
// window to the next, starting at 0): false when it is 0, else its bucket key and its entry
// (the point it names, with the sign bit).
BL_HD bool digit_entry(const DigitArgs& a, const Fr& k, uint32_t idx, uint32_t w, uint32_t& carry,
                       uint32_t& key, uint32_t& entry) {
    const uint32_t half = 1u << (a.c - 1), full = 1u << a.c;
    const uint32_t d = window_bits(k, w * a.c, a.c) + carry;
    uint32_t mag, sign;
    if (d > half) {
        mag = full - d;
        sign = SIGN_BIT;
        carry = 1;
    } else {
        mag = d;
        sign = 0;
        carry = 0;
    }
    if (mag == 0) return false;
    key = (a.stride ? 0 : w * half) + mag - 1;
    // The host keeps windows·stride below 2^31, so the sign bit stays free.
    entry = (a.stride ? (uint32_t)(w * a.stride) + idx : idx) | sign;
    return true;
}

// Pass 1 (scatter = false) counts each digit into its bucket and lists the scalars equal to 1
// (and, for the binned scatter, those with digits); pass 2 (scatter = true) writes each digit's
// entry at its bucket's cursor, for the keys in [key_lo, key_hi) (from scatter_range: the
// scatter may be split into key ranges, each a launch over every scalar, so that the cursors a
// launch writes behind — one partly written 32-byte sector a bucket — take less of the L2
// cache).
BL_HD void digits_body(const DigitArgs& a, uint64_t i, bool scatter, uint32_t key_lo = 0,
                       uint32_t key_hi = 0xffffffffu) {
    uint32_t idx = 0;
    Fr k;
    const uint32_t kind = scalar_kind(a, i, idx, k);
    if (kind == 1 && !scatter) a.ones[atomic_add(a.ones_count, 1)] = idx;
    if (kind != 2) return;
    if (!scatter && a.listed) a.listed[atomic_add(a.listed_count, 1)] = (uint32_t)i;
    uint32_t carry = 0, key = 0, entry = 0;
    for (uint32_t w = 0; w < a.windows; w++) {
        if (!digit_entry(a, k, idx, w, carry, key, entry)) continue;
        if (scatter) {
            if (key < key_lo || key >= key_hi) continue;
            a.entries[atomic_add(&a.counts[key], 1)] = entry;
        } else {
            atomic_add(&a.counts[key], 1);
        }
    }
}

// Set bits of each density word (the rank array is their exclusive prefix sum).
BL_HD void popcount_body(const uint64_t* density, uint64_t words, uint64_t t, uint32_t* out) {
    if (t < words) out[t] = (uint32_t)popc64(density[t]);
}

}  // namespace msm
}  // namespace bellows
