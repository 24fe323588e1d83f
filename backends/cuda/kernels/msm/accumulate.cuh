// Bellows CUDA kernels, MSM steps 4 and 5 (msm/msm.cuh): the chunked bucket accumulation and the
// fix-up of buckets that span chunks.
#pragma once

#include "msm/common.cuh"

namespace bellows {
namespace msm {

// Largest key whose offset is ≤ pos, over offsets[0..=keys] (offsets[keys] = total > pos).
BL_HD uint32_t find_key(const uint32_t* offsets, uint32_t keys, uint32_t pos) {
    uint32_t lo = 0, hi = keys;  // offsets[lo] ≤ pos < offsets[hi]
    while (hi - lo > 1) {
        uint32_t mid = lo + ((hi - lo) >> 1);
        if (offsets[mid] <= pos) lo = mid; else hi = mid;
    }
    return lo;
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
template <class F>
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
        acc = Xyzz<F>::add_affine(acc, signed_point(bases, entries[j]));
    }
    // The last run: complete when the bucket ends with the chunk and began inside it.
    if (b0 >= start && b1 <= end) {
        buckets[key] = acc;
    } else {
        if (run_start == start) heads[t] = acc;
        tails[t] = acc;
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

}  // namespace msm
}  // namespace bellows
