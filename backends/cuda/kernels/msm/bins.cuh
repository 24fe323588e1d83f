// Bellows CUDA kernels, MSM step 3 for many buckets (msm/msm.cuh): the binned scatter.
#pragma once

#include "msm/digits.cuh"

namespace bellows {
namespace msm {

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

}  // namespace msm
}  // namespace bellows
