// Bellows CUDA kernels: Pippenger multi-scalar multiplication over resident bases, G1 and G2.
//
// Algorithm. N. Pippenger's bucket method ("On the evaluation of powers and related problems",
// FOCS 1976), in the form used by every GPU MSM since the ZPrize 2022 entries: each scalar is cut
// into windows of c bits, written as signed digits in [−2^(c−1), 2^(c−1)] (a digit above 2^(c−1)
// becomes d − 2^c with a carry into the next window, so a window needs 2^(c−1) buckets, not 2^c),
// each (window, |digit|) pair names a bucket, and the MSM is
//     Σ_w 2^(c·w) · Σ_j (j + 1) · B_{w,j},   B_{w,j} = Σ_{i : |d_{i,w}| = j + 1} ±P_i.
// On the device the buckets are not kept as per-thread state; the work is re-arranged as a sort:
//   1. digits:     every scalar (Montgomery → canonical) counts its non-zero digits into a
//                  histogram of bucket keys (key = w·2^(c−1) + |d| − 1). Scalar 0 adds nothing;
//                  scalar 1 (a Filecoin witness is mostly bits) is listed apart and summed by a
//                  plain parallel reduction, so it never piles into one bucket.
//   2. scan:       exclusive prefix sum of the histogram = each bucket's offset in one array.
//   3. scatter:    every scalar writes (point index | sign bit) of each digit at its bucket's
//                  cursor: a counting sort of all (window, digit) pairs by bucket.
//   4. accumulate: the sorted array is cut into equal chunks of L entries, one per thread, so the
//                  work is balanced whatever the digit distribution (L from the real number of
//                  entries, read on the device after the scan: effective_chunk); a thread sums each run of
//                  one bucket with mixed additions (XYZZ + affine). A run wholly inside the chunk
//                  is the bucket's sum; a run touching the chunk's ends is kept as its head or
//                  tail partial sum.
//   5. fixup:      a bucket spanning several chunks = tail of its first chunk + heads of the rest.
//   6. windows:    each window's Σ (j + 1)·B_j by running sums over segments of L buckets,
//                  Σ_{j∈seg} (j + 1)B_j = Σ_{j∈seg} (j − lo + 1)B_j + lo·Σ_{j∈seg} B_j: the first
//                  terms are added by a tree reduction, and since lo = L·g the second ones sum to
//                  L·Σ_g g·T_g (T_g the segment's plain sum), the same problem over 1/L as many
//                  points, solved a level up by the flat pass (short segments, double-and-add);
//                  the two combine as R_0 + L·R_1 (window_horner). (Until run 67 each segment added lo·T_g by
//                  double-and-add: `BELLOWS_MSM_WINDOW_PASS=flat`.)
// The host finishes with Horner's rule over the window sums (c doublings per window).
//
// Group additions are exact, so the order of the entries inside a bucket (atomics make it vary
// from run to run) changes no result: the MSM is a function of its inputs, as conformance needs.
//
// Every kernel body below is a function of one thread index, shared by the device entry points
// (bellows.cu) and the host emulation (emulation.cpp), which runs them in loops.
#pragma once

#include "curve.cuh"

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

// ---- The binned scatter: two steps instead of launches by key range ----------------------------
//
// A counting sort's scatter writes each entry at its bucket's cursor; with 2^19 and more buckets
// the partly written 32-byte sectors behind the cursors no longer fit the L2 cache, and the
// launches by key range above each read every scalar again. The binned scatter is the two-pass
// form of a most-significant-digit radix sort (the key's high bits first, as in the MSD radix
// sorts of the literature, e.g. D. Merrill and A. Grimshaw, "High performance and scalable radix
// sorting", Parallel Processing Letters 2011, for the block-local counting):
//   1. bin:   over the scalars with digits (listed by the count pass, so that a mostly-0/1
//             witness keeps every lane of a warp busy), each block counts its digits per bin
//             (a bin = 2^shift consecutive keys) in shared memory, reserves one run per bin
//             with one global atomic on that bin's cursor, and writes (key << 32 | entry) pairs
//             into its runs; a bin's region of the scratch is exactly its keys' region of the
//             sorted entries (the same scan's offsets), so the scratch is as long as the
//             entries.
//   2. place: over the scratch in order, each pair goes to its bucket's cursor. Threads in flight
//             read neighbouring pairs, so they write behind the cursors of one or two bins only.
// The entries' order inside a bucket differs from the direct scatter's, which changes no sum.

// Windows a thread keeps its digits' places for (two 16-bit places a register: a block's bin
// holds at most 256 threads × 32 digits = 8192 entries).
constexpr uint32_t BIN_MAX_WINDOWS = 32;

// Step 1's scalar for slot t of the list: its index, or n (no digits) past the list's end.
BL_HD uint64_t listed_scalar(const DigitArgs& a, uint64_t t, uint32_t listed) {
    return t < listed ? a.listed[t] : a.n;
}

// Step 1 for scalar i of the block's tile, in two halves between which the block reserves its
// runs. WRITE = false: each non-zero digit takes the next place in its bin (`bins` = the tile's
// per-bin counts, in shared memory on the device; the places go to `place`, two 16-bit halves a
// word, by window). WRITE = true: the digits again, each pair written at its bin's run for this
// tile (`bins` = the runs' starts, reserved from the bins' cursors) plus its place.
template <bool WRITE>
BL_HD void bin_body(const DigitArgs& a, uint64_t i, uint32_t shift, uint32_t* bins, uint32_t* place,
                    uint64_t* scratch) {
    uint32_t idx = 0;
    Fr k;
    if (scalar_kind(a, i, idx, k) != 2) return;
    uint32_t carry = 0, key = 0, entry = 0;
    // Unrolled to the bound, so that `place` is indexed by constants and stays in registers.
#pragma unroll
    for (uint32_t w = 0; w < BIN_MAX_WINDOWS; w++) {
        if (w >= a.windows) break;
        if (!digit_entry(a, k, idx, w, carry, key, entry)) continue;
        if (WRITE) {
            const uint32_t at = (place[w >> 1] >> ((w & 1) * 16)) & 0xffffu;
            scratch[bins[key >> shift] + at] = ((uint64_t)key << 32) | entry;
        } else {
            const uint32_t at = atomic_add(&bins[key >> shift], 1);
            place[w >> 1] |= at << ((w & 1) * 16);
        }
    }
}

// The bins' cursors: bin b starts where its first key's entries start.
BL_HD void bin_start_body(const uint32_t* offsets, uint32_t shift, uint32_t b, uint32_t* cursors) {
    cursors[b] = offsets[b << shift];
}

// Step 2, pair j of the scratch: its entry at its bucket's cursor.
BL_HD void place_body(const uint64_t* scratch, uint64_t j, uint32_t* counts, uint32_t* entries) {
    const uint64_t p = scratch[j];
    entries[atomic_add(&counts[(uint32_t)(p >> 32)], 1)] = (uint32_t)p;
}

// Largest key whose offset is ≤ pos, over offsets[0..=keys] (offsets[keys] = total > pos).
BL_HD uint32_t find_key(const uint32_t* offsets, uint32_t keys, uint32_t pos) {
    uint32_t lo = 0, hi = keys;  // offsets[lo] ≤ pos < offsets[hi]
    while (hi - lo > 1) {
        uint32_t mid = lo + ((hi - lo) >> 1);
        if (offsets[mid] <= pos) lo = mid; else hi = mid;
    }
    return lo;
}

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

// The accumulation chunk L: `chunk` when non-zero, else the sorted entries (their number is
// known only on the device, after the scan) spread evenly over `threads` threads, at least
// MIN_CHUNK each. Sizing by the real count keeps every thread busy when most digits are zero
// (a mostly-0/1 witness fills a tenth of the worst-case entries).
constexpr uint32_t MIN_CHUNK = 8;
BL_HD uint32_t effective_chunk(uint32_t chunk, const uint32_t* offsets, uint32_t keys, uint64_t threads) {
    if (chunk != 0) return chunk;
    const uint64_t c = ((uint64_t)offsets[keys] + threads - 1) / threads;
    return c < MIN_CHUNK ? MIN_CHUNK : (uint32_t)c;
}

// Pass 4, thread t: entries [t·L, (t + 1)·L) of the sorted array, one mixed addition per entry
// in a single flat loop: when entry j opens a new bucket the running sum is flushed and reset
// inside the loop, so every thread of a warp does one addition per iteration whatever its
// run lengths (a loop nest with one inner loop per run would make the warp wait, at every run,
// for its longest).
//
// POINTS: the entries are affine points themselves (`bases[j]`, the output of the batch-affine
// rounds below, the identity marking an empty slot) instead of signed indices into `bases`.
template <class F, bool POINTS = false>
BL_HD void accumulate_body(const Affine<F>* bases, const uint32_t* entries, const uint32_t* offsets,
                           uint32_t keys, uint32_t chunk, uint64_t t, Xyzz<F>* buckets,
                           Xyzz<F>* heads, Xyzz<F>* tails) {
    const uint32_t total = offsets[keys];
    const uint64_t start64 = t * chunk;
    if (start64 >= total) return;
    const uint32_t start = (uint32_t)start64;
    const uint32_t end = total - start > chunk ? start + chunk : total;
    uint32_t key = find_key(offsets, keys, start);
    uint32_t b0 = offsets[key], b1 = offsets[key + 1];
    uint32_t run_start = start;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint32_t j = start; j < end; j++) {
        if (j == b1) {
            // Bucket `key` ends here. Complete inside the chunk: its sum; else a partial.
            if (b0 >= start) buckets[key] = acc; else heads[t] = acc;
            do {  // next non-empty bucket
                key++;
                b0 = b1;
                b1 = offsets[key + 1];
            } while (b1 <= j);
            run_start = j;
            acc = Xyzz<F>::identity();
        }
        acc = Xyzz<F>::add_affine(acc, POINTS ? load_affine(bases + j) : signed_point(bases, entries[j]));
    }
    // The last run: complete when the bucket ends with the chunk and began inside it.
    if (b0 >= start && b1 <= end) {
        buckets[key] = acc;
    } else {
        if (run_start == start) heads[t] = acc;
        tails[t] = acc;
    }
}

// ---- Batch-affine rounds (optional, between the scatter and the accumulation) ----------------
//
// An affine addition P + Q = (λ² − x_P − x_Q, λ(x_P − x_3) − y_P), λ = (y_Q − y_P)/(x_Q − x_P),
// costs 3 products and one inversion; inversions of many independent additions are shared by
// Montgomery's trick (P. L. Montgomery, "Speeding the Pollard and elliptic curve methods of
// factorization", Math. Comp. 48, 1987: one inversion and 3 products per element), so an
// addition costs about 6 products against the 10 of a mixed XYZZ addition (madd-2008-s). The
// additions of one running sum depend on each other, so the rounds add *pairs inside each
// bucket*: every bucket's count is padded to a multiple of Q = 2^R (empty slots hold PAD), and
// round r adds slots 2i and 2i + 1 of the previous round's array into slot i, halving every
// bucket; after R rounds bucket k occupies slots offsets[k]/Q .. offsets[k + 1]/Q of the last
// array, which the accumulation (POINTS) sums as before. Each thread takes `per` pairs strided
// by the thread count (coalesced across a warp) and inverts once, so the inversion's ~570
// products (Fermat) are spread over hundreds of additions.
//
// Every case is exact: an empty slot or the identity on one side copies the other; equal
// points double (λ = 3x²/2y, the denominator 2y shares the batch inversion); opposite points
// (and a point of order two doubled) give the identity. Pairs whose denominator is not a
// difference of x carry 1 in the batch.
constexpr uint32_t PAD = 0xffffffffu;  // never a real entry: indices are below 2^27

// Counts rounded up to a multiple of q (a power of two), before the scan.
BL_HD void pad_counts_body(uint32_t* counts, uint32_t keys, uint32_t q, uint64_t t) {
    if (t < keys) counts[t] = (counts[t] + q - 1) & ~(q - 1);
}

BL_HD void shift_offsets_body(const uint32_t* in, uint64_t n, uint32_t shift, uint64_t t, uint32_t* out) {
    if (t < n) out[t] = in[t] >> shift;
}

// What one pair's sum needs: the result is P + Q (ADD, DBL), P, Q or the identity.
enum PairKind : uint32_t { PAIR_ADD = 0, PAIR_DBL = 1, PAIR_P = 2, PAIR_Q = 3, PAIR_NONE = 4 };

template <class F>
BL_HD uint32_t classify_pair(const Affine<F>& p, const Affine<F>& q, F& d) {
    const bool pi = p.is_identity(), qi = q.is_identity();
    d = F::one();
    if (pi) return qi ? PAIR_NONE : PAIR_Q;
    if (qi) return PAIR_P;
    F dx = F::sub(q.x, p.x);
    if (!dx.is_zero()) {
        d = dx;
        return PAIR_ADD;
    }
    if (F::sub(q.y, p.y).is_zero() && !p.y.is_zero()) {
        d = F::dbl(p.y);
        return PAIR_DBL;
    }
    return PAIR_NONE;  // P = −Q, or P = Q of order two
}

// Slot j of a round's input: a signed base (first round, PAD = empty) or a point.
template <class F, bool FIRST>
BL_HD Affine<F> slot_point(const Affine<F>* bases, const uint32_t* entries, const Affine<F>* in,
                           uint64_t j) {
    if (FIRST) {
        uint32_t e = entries[j];
        return e == PAD ? Affine<F>::identity() : signed_point(bases, e);
    }
    return load_affine(in + j);
}

// Its x alone (zero for an empty slot; x = 0 sends the pair to the exact path).
template <class F, bool FIRST>
BL_HD F slot_x(const Affine<F>* bases, const uint32_t* entries, const Affine<F>* in, uint64_t j) {
    if (FIRST) {
        uint32_t e = entries[j];
        return e == PAD ? F::zero() : load_coord(&bases[e & ~SIGN_BIT].x);
    }
    return load_coord(&in[j].x);
}

// Round r, thread t: out[i] = in[2i] + in[2i + 1] for i = t + k·threads, k < per, i below the
// pairs of this round ((*total >> shift) / 2; *total is the padded entry count, shift = r − 1).
// The prefix products of the batch are kept in out[i].x until the backward sweep replaces them.
template <class F, bool FIRST>
BL_HD void affine_round_body(const Affine<F>* bases, const uint32_t* entries, const Affine<F>* in,
                             const uint32_t* total, uint32_t shift, uint64_t threads, uint32_t per,
                             uint64_t t, Affine<F>* out) {
    const uint64_t pairs = (uint64_t)(*total >> shift) / 2;
    if (t >= pairs) return;
    // Pairs t, t + threads, … below `pairs`: this thread's batch.
    uint32_t count = (uint32_t)((pairs - 1 - t) / threads + 1);
    if (count > per) count = per;
    // Each sweep loads the next pair's coordinates before working on the current one, so the
    // loads (random reads of the bases in the first round) overlap the products.
    F acc = F::one();
    F px = slot_x<F, FIRST>(bases, entries, in, 2 * t);
    F qx = slot_x<F, FIRST>(bases, entries, in, 2 * t + 1);
    for (uint32_t n = 0; n < count; n++) {
        const uint64_t i = t + (uint64_t)n * threads;
        F d = F::sub(qx, px);
        const bool exact = px.is_zero() || qx.is_zero() || d.is_zero();
        if (n + 1 < count) {
            px = slot_x<F, FIRST>(bases, entries, in, 2 * (i + threads));
            qx = slot_x<F, FIRST>(bases, entries, in, 2 * (i + threads) + 1);
        }
        if (exact) {
            Affine<F> p = slot_point<F, FIRST>(bases, entries, in, 2 * i);
            Affine<F> q = slot_point<F, FIRST>(bases, entries, in, 2 * i + 1);
            classify_pair(p, q, d);
        }
        acc = F::mul(acc, d);
        out[i].x = acc;
    }
    F inv = F::inv(acc);
    uint32_t n = count - 1;
    Affine<F> p = slot_point<F, FIRST>(bases, entries, in, 2 * (t + (uint64_t)n * threads));
    Affine<F> q = slot_point<F, FIRST>(bases, entries, in, 2 * (t + (uint64_t)n * threads) + 1);
    while (true) {
        const uint64_t i = t + (uint64_t)n * threads;
        const Affine<F> cp = p, cq = q;
        if (n > 0) {
            p = slot_point<F, FIRST>(bases, entries, in, 2 * (i - threads));
            q = slot_point<F, FIRST>(bases, entries, in, 2 * (i - threads) + 1);
        }
        F d;
        const uint32_t kind = classify_pair(cp, cq, d);
        const F before = n > 0 ? out[i - threads].x : F::one();
        const F dinv = F::mul(inv, before);  // 1/d
        inv = F::mul(inv, d);                // 1/(d_0 ⋯ d_(n−1))
        Affine<F> r;
        if (kind <= PAIR_DBL) {
            F num;
            if (kind == PAIR_ADD) {
                num = F::sub(cq.y, cp.y);
            } else {
                F x2 = F::sqr(cp.x);
                num = F::add(F::dbl(x2), x2);
            }
            F l = F::mul(num, dinv);
            F x3 = F::sub(F::sub(F::sqr(l), cp.x), cq.x);
            r = Affine<F>{x3, F::sub(F::mul(l, F::sub(cp.x, x3)), cp.y)};
        } else {
            r = kind == PAIR_P ? cp : kind == PAIR_Q ? cq : Affine<F>::identity();
        }
        out[i] = r;
        if (n == 0) break;
        n--;
    }
}

// Pass 5, thread = key: a bucket spanning chunks t0 < t1 is tail[t0] + head[t0 + 1] + … + head[t1].
// Spans of more than FIXUP_SERIAL chunks (a bucket holding a large share of all digits, as a
// nearly empty top window or many equal scalars give) are listed in `big` for a warp each.
constexpr uint32_t FIXUP_SERIAL = 32;
template <class F>
BL_HD void fixup_body(const uint32_t* offsets, uint32_t keys, uint32_t chunk, uint64_t key,
                      const Xyzz<F>* heads, const Xyzz<F>* tails, Xyzz<F>* buckets, uint32_t* big,
                      uint32_t* big_count) {
    if (key >= keys) return;
    const uint32_t b0 = offsets[key], b1 = offsets[key + 1];
    if (b0 == b1) return;
    const uint32_t t0 = b0 / chunk, t1 = (b1 - 1) / chunk;
    if (t0 == t1) return;
    if (t1 - t0 > FIXUP_SERIAL) {
        big[atomic_add(big_count, 1)] = (uint32_t)key;
        return;
    }
    Xyzz<F> acc = tails[t0];
    for (uint32_t t = t0 + 1; t <= t1; t++) acc = Xyzz<F>::add(acc, heads[t]);
    buckets[key] = acc;
}

// k·P for a small k (double-and-add from the top bit).
template <class F>
BL_HD Xyzz<F> mul_small(const Xyzz<F>& p, uint32_t k) {
    Xyzz<F> r = Xyzz<F>::identity();
    if (k == 0) return r;
    int top = 31;
    while (!((k >> top) & 1)) top--;
    r = p;
    for (int b = top - 1; b >= 0; b--) {
        r = Xyzz<F>::dbl(r);
        if ((k >> b) & 1) r = Xyzz<F>::add(r, p);
    }
    return r;
}

// Pass 6a, thread t = (window w, segment g) over `len` inputs a window, in segments of seg_len
// from lo = g·seg_len: running = Σ_{j∈seg} in_{w,j} and, by running sums from the top down,
// acc = Σ_{j∈seg} (j − lo + w0)·in_{w,j}. With `flat` (one level, the window pass before run
// 67), lo·running is added to acc by double-and-add (log2 lo doublings), so acc is the segment's
// share of Σ_j (j + w0)·in_{w,j}; otherwise running goes to total[t] (when `total` is given)
// for the next level (window_horner below), which needs no doublings of the segments at all.
template <class F>
BL_HD void window_segment_body(const Xyzz<F>* in, uint32_t len, uint32_t seg_len, uint32_t windows,
                               uint32_t w0, bool flat, uint64_t t, Xyzz<F>* out, Xyzz<F>* total) {
    const uint32_t segs = len / seg_len;
    if (t >= (uint64_t)segs * windows) return;
    const uint32_t w = (uint32_t)(t / segs), lo = (uint32_t)(t % segs) * seg_len;
    const Xyzz<F>* b = in + (uint64_t)w * len;
    Xyzz<F> running = Xyzz<F>::identity(), acc = Xyzz<F>::identity();
    // With w0 = 0 the bottom input has weight 0: it joins the running sum only.
    const uint32_t first = w0 ? lo : lo + 1;
    for (uint32_t j = lo + seg_len; j-- > first;) {
        running = Xyzz<F>::add(running, b[j]);
        acc = Xyzz<F>::add(acc, running);
    }
    if (!w0) running = Xyzz<F>::add(running, b[lo]);
    if (flat) {
        if (lo != 0) acc = Xyzz<F>::add(acc, mul_small(running, lo));
    } else if (total) {
        total[t] = running;
    }
    out[t] = acc;
}

// Pass 6c, thread w < windows: r[w] += 2^shift·y[w]. The window sum Σ_j (j + 1)·B_j over
// segments of L = 2^shift buckets is Σ_g A_g + L·Σ_g g·T_g (A_g the segment's acc, T_g its
// running total, lo_g = L·g), and Σ_g g·T_g is the same problem, one level up, over the T_g
// with weights from 0 (w0 = 0; src/msm.rs solves it with the flat pass): so the reduced sums
// R_0 of the A_g and R_1 of level 1 combine as R_0 + L·R_1.
template <class F>
BL_HD void window_horner_body(Xyzz<F>* r, const Xyzz<F>* y, uint32_t shift, uint32_t windows,
                              uint64_t t) {
    if (t >= windows) return;
    Xyzz<F> p = y[t];
    for (uint32_t k = 0; k < shift; k++) p = Xyzz<F>::dbl(p);
    r[t] = Xyzz<F>::add(r[t], p);
}

// Tree reduction step, thread t = (group, part): out[group·parts + part] = Σ of `per`
// consecutive inputs of the group (groups of `len` inputs; parts = ⌈len / per⌉).
template <class F>
BL_HD void reduce_body(const Xyzz<F>* in, uint32_t groups, uint32_t len, uint32_t per, uint64_t t,
                       Xyzz<F>* out) {
    const uint32_t parts = (len + per - 1) / per;
    if (t >= (uint64_t)groups * parts) return;
    const uint32_t g = (uint32_t)(t / parts), p = (uint32_t)(t % parts);
    const uint32_t first = p * per;
    const uint32_t last = first + per < len ? first + per : len;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint32_t j = first; j < last; j++) acc = Xyzz<F>::add(acc, in[(uint64_t)g * len + j]);
    out[t] = acc;
}

// Sum of the bases listed in idx[0..*count), thread t taking `per` of them.
template <class F>
BL_HD void sum_listed_body(const Affine<F>* bases, const uint32_t* idx, const uint32_t* count,
                           uint32_t per, uint64_t t, Xyzz<F>* out) {
    const uint64_t first = t * per;
    const uint32_t n = *count;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint64_t j = first; j < first + per && j < n; j++) acc = Xyzz<F>::add_affine(acc, bases[idx[j]]);
    out[t] = acc;
}

// ---- Building a precomputed table ------------------------------------------------------------

// Thread t < count: 2^c·prev[t] in XYZZ (c doublings of the affine point; the identity stays
// the identity, as does a point of order two, which the prime-order groups do not hold anyway).
template <class F>
BL_HD void table_double_body(const Affine<F>* prev, uint64_t count, uint32_t c, uint64_t t, Xyzz<F>* out) {
    if (t >= count) return;
    Xyzz<F> p = Xyzz<F>::dbl_affine(load_affine(prev + t));
    for (uint32_t k = 1; k < c; k++) p = Xyzz<F>::dbl(p);
    out[t] = p;
}

// out[i] = in[i] in affine form for i = t + k·threads (k < per, i < count), with one inversion
// per thread by Montgomery's trick (P. L. Montgomery, Math. Comp. 48, 1987): the forward sweep
// keeps the running product of the ZZZ in out[i].x, the backward sweep peels 1/ZZZ_i off the
// inverted total; then 1/ZZ = (ZZ/ZZZ)² since ZZ³ = ZZZ² (as Xyzz::to_affine). The identity
// (ZZZ = 0) is left out of the product and written as (0, 0).
template <class F>
BL_HD void batch_to_affine_body(const Xyzz<F>* in, uint64_t count, uint64_t threads, uint32_t per,
                                uint64_t t, Affine<F>* out) {
    if (t >= count) return;
    uint64_t m64 = (count - 1 - t) / threads + 1;
    const uint32_t m = m64 < per ? (uint32_t)m64 : per;
    F acc = F::one();
    for (uint32_t k = 0; k < m; k++) {
        const uint64_t i = t + (uint64_t)k * threads;
        const F z = load_coord(&in[i].zzz);
        if (!z.is_zero()) acc = F::mul(acc, z);
        out[i].x = acc;
    }
    F inv = F::inv(acc);  // 1/(ZZZ_0 ⋯ ZZZ_(m−1)) over the non-identity points
    for (uint32_t k = m; k-- > 0;) {
        const uint64_t i = t + (uint64_t)k * threads;
        const Xyzz<F> p = in[i];
        if (p.zzz.is_zero()) {
            out[i] = Affine<F>::identity();
            continue;
        }
        // out[i − threads].x still holds the product before i (the sweep runs downwards).
        const F before = k > 0 ? out[i - threads].x : F::one();
        const F zi = F::mul(inv, before);  // 1/ZZZ_i
        inv = F::mul(inv, p.zzz);
        const F s = F::mul(p.zz, zi);  // ZZ/ZZZ, whose square is 1/ZZ
        out[i] = Affine<F>{F::mul(p.x, F::sqr(s)), F::mul(p.y, zi)};
    }
}

// Set bits of each density word (the rank array is their exclusive prefix sum).
BL_HD void popcount_body(const uint64_t* density, uint64_t words, uint64_t t, uint32_t* out) {
    if (t < words) out[t] = (uint32_t)popc64(density[t]);
}

}  // namespace msm
}  // namespace bellows
