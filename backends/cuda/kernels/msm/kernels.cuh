// Bellows CUDA kernels: the MSM entry points (msm/msm.cuh explains the algorithm; the bodies are
// functions of one thread index, shared with the host emulation). Included by backend.cu only.
#pragma once

#include "msm/msm.cuh"
#include "util/device.cuh"

using namespace bellows;

// Exclusive prefix sum of 1024 values per block, in place; the block's total goes to sums[block].
extern "C" __global__ void __launch_bounds__(256) bellows_scan_blocks(uint32_t* data, uint64_t n,
                                                                      uint32_t* sums) {
    __shared__ uint32_t part[256];
    const uint32_t tid = threadIdx.x;
    const uint64_t base = (uint64_t)blockIdx.x * 1024 + tid * 4;
    uint32_t v[4], total = 0;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v[i] = base + i < n ? data[base + i] : 0;
        uint32_t x = v[i];
        v[i] = total;
        total += x;
    }
    part[tid] = total;
    __syncthreads();
    // Hillis–Steele inclusive scan of the 256 per-thread totals.
    for (uint32_t d = 1; d < 256; d <<= 1) {
        uint32_t add = tid >= d ? part[tid - d] : 0;
        __syncthreads();
        part[tid] += add;
        __syncthreads();
    }
    const uint32_t before = part[tid] - total;
#pragma unroll
    for (int i = 0; i < 4; i++)
        if (base + i < n) data[base + i] = v[i] + before;
    if (tid == 255) sums[blockIdx.x] = part[255];
}

// data[i] += sums[i / 1024] (the scanned block totals).
extern "C" __global__ void bellows_scan_add(uint32_t* data, uint64_t n, const uint32_t* sums) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) data[i] += sums[i >> 10];
}

extern "C" __global__ void bellows_popcount(const uint64_t* density, uint64_t words, uint32_t* out) {
    for (uint64_t t = global_thread(); t < words; t += grid_threads()) msm::popcount_body(density, words, t, out);
}

extern "C" __global__ void bellows_msm_digits(const msm::DigitArgs a, uint32_t scatter) {
    uint32_t lo = 0, hi = 0xffffffffu;
    if (scatter && !msm::scatter_range(a, lo, hi)) return;
    for (uint64_t i = global_thread(); i < a.n; i += grid_threads())
        msm::digits_body(a, i, scatter != 0, lo, hi);
}

// The binned scatter (msm/msm.cuh): bins' cursors, then step 1 (blocks of BIN_BLOCK threads, 2·bins
// u32 of dynamic shared memory: the tile's counts per bin, then their runs), then step 2.
constexpr uint32_t BIN_BLOCK = 256;
static_assert(BIN_BLOCK * msm::BIN_MAX_WINDOWS <= 65536, "a tile's places fit 16 bits");

extern "C" __global__ void bellows_msm_bin_start(const uint32_t* offsets, uint32_t shift, uint32_t bins,
                                                 uint32_t* cursors) {
    for (uint64_t b = global_thread(); b < bins; b += grid_threads()) msm::bin_start_body(offsets, shift, (uint32_t)b, cursors);
}

extern "C" __global__ void __launch_bounds__(BIN_BLOCK) bellows_msm_bin(const msm::DigitArgs a, uint32_t shift,
                                                                        uint32_t bins, uint32_t* cursors,
                                                                        uint64_t* scratch) {
    extern __shared__ uint32_t bin_shared[];
    uint32_t* count = bin_shared;
    uint32_t* base = bin_shared + bins;
    const uint32_t listed = *a.listed_count;
    // The loop is uniform across the block (it depends on blockIdx alone), so every thread
    // meets every barrier.
    for (uint64_t tile = (uint64_t)blockIdx.x * BIN_BLOCK; tile < listed; tile += (uint64_t)gridDim.x * BIN_BLOCK) {
        for (uint32_t b = threadIdx.x; b < bins; b += BIN_BLOCK) count[b] = 0;
        __syncthreads();
        uint32_t place[msm::BIN_MAX_WINDOWS / 2];
#pragma unroll
        for (uint32_t w = 0; w < msm::BIN_MAX_WINDOWS / 2; w++) place[w] = 0;
        const uint64_t i = msm::listed_scalar(a, tile + threadIdx.x, listed);
        msm::bin_body<false>(a, i, shift, count, place, scratch);
        __syncthreads();
        for (uint32_t b = threadIdx.x; b < bins; b += BIN_BLOCK)
            base[b] = count[b] ? atomicAdd(&cursors[b], count[b]) : 0;
        __syncthreads();
        msm::bin_body<true>(a, i, shift, base, place, scratch);
        __syncthreads();
    }
}

// One thread a pair, no grid-stride loop: blocks start roughly in the order of their index, so
// the pairs in flight are neighbours and their cursors those of one or two bins (a grid-stride
// loop over a capped grid spreads its resident threads' iterations over the whole scratch).
extern "C" __global__ void bellows_msm_place(const uint64_t* scratch, const uint32_t* total, uint32_t* counts,
                                             uint32_t* entries) {
    const uint64_t j = global_thread();
    if (j < *total) msm::place_body(scratch, j, counts, entries);
}

// Pass 5b: one warp per bucket listed by the fixup (spans of many chunks): the lanes sum strided
// chunk partials, then a shared-memory tree adds the 32 lane sums.
template <class F>
__device__ void fixup_big_kernel(const uint32_t* offsets, uint32_t keys, uint32_t chunk, uint64_t threads, const Xyzz<F>* heads,
                                 const Xyzz<F>* tails, Xyzz<F>* buckets, const uint32_t* big,
                                 const uint32_t* big_count) {
    __shared__ Xyzz<F> sm[64];
    const uint64_t warp = global_thread() >> 5;
    const uint32_t lane = threadIdx.x & 31;
    if (warp >= *big_count) return;  // uniform across the warp
    const uint32_t key = big[warp];
    chunk = msm::effective_chunk(chunk, offsets, keys, threads);
    const uint32_t t0 = offsets[key] / chunk, t1 = (offsets[key + 1] - 1) / chunk;
    Xyzz<F> acc = Xyzz<F>::identity();
    for (uint32_t t = t0 + lane; t <= t1; t += 32) acc = Xyzz<F>::add(acc, t == t0 ? tails[t] : heads[t]);
    sm[threadIdx.x] = acc;
    __syncwarp();
    for (uint32_t off = 16; off > 0; off >>= 1) {
        if (lane < off) sm[threadIdx.x] = Xyzz<F>::add(sm[threadIdx.x], sm[threadIdx.x + off]);
        __syncwarp();
    }
    if (lane == 0) buckets[key] = sm[threadIdx.x];
}

// ACC_BLOCKS: the blocks of 128 threads the accumulation must fit on one multiprocessor (0: no
// constraint). G2's uses 255 registers unconstrained (two blocks); held to three blocks (168
// registers, some spilled) the occupancy gained outweighs the spills (docs/benchmarks.md). G1's
// needs 166 registers and fits three blocks anyway.
#define BELLOWS_MSM_GROUP(G, F, ACC_BLOCKS)                                                            \
    extern "C" __global__ void __launch_bounds__(128, ACC_BLOCKS) bellows_msm_##G##_accumulate(       \
        const Affine<F>* bases, const uint32_t* entries, const uint32_t* offsets, uint32_t keys,     \
        uint32_t chunk, uint64_t threads, Xyzz<F>* buckets, Xyzz<F>* heads, Xyzz<F>* tails) {        \
        uint64_t t = global_thread();                                                                \
        if (t < threads)                                                                             \
            msm::accumulate_body<F>(bases, entries, offsets, keys,                                   \
                                    msm::effective_chunk(chunk, offsets, keys, threads), t, buckets, heads, tails); \
    }                                                                                                \
    extern "C" __global__ void bellows_msm_##G##_fixup(const uint32_t* offsets, uint32_t keys,       \
                                                       uint32_t chunk, uint64_t threads, const Xyzz<F>* heads, \
                                                       const Xyzz<F>* tails, Xyzz<F>* buckets,       \
                                                       uint32_t* big, uint32_t* big_count) {         \
        uint64_t t = global_thread();                                                                \
        if (t < keys)                                                                                \
            msm::fixup_body<F>(offsets, keys, msm::effective_chunk(chunk, offsets, keys, threads), t, heads, tails, buckets, big, big_count); \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(64) bellows_msm_##G##_fixup_big(                    \
        const uint32_t* offsets, uint32_t keys, uint32_t chunk, uint64_t threads, const Xyzz<F>* heads, const Xyzz<F>* tails, \
        Xyzz<F>* buckets, const uint32_t* big, const uint32_t* big_count) {                          \
        fixup_big_kernel<F>(offsets, keys, chunk, threads, heads, tails, buckets, big, big_count);   \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_window_segments(             \
        const Xyzz<F>* in, uint32_t len, uint32_t seg_len, uint32_t windows, uint32_t w0,            \
        uint32_t flat, Xyzz<F>* out, Xyzz<F>* total) {                                               \
        uint64_t t = global_thread();                                                                \
        msm::window_segment_body<F>(in, len, seg_len, windows, w0, flat != 0, t, out, total);        \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_window_horner(               \
        Xyzz<F>* r, const Xyzz<F>* y, uint32_t shift, uint32_t windows) {                            \
        msm::window_horner_body<F>(r, y, shift, windows, global_thread());                           \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_reduce(                      \
        const Xyzz<F>* in, uint32_t groups, uint32_t len, uint32_t per, Xyzz<F>* out) {              \
        uint64_t t = global_thread();                                                                \
        msm::reduce_body<F>(in, groups, len, per, t, out);                                           \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_sum_listed(                  \
        const Affine<F>* bases, const uint32_t* idx, const uint32_t* count, uint32_t per,            \
        uint64_t threads, Xyzz<F>* out) {                                                            \
        uint64_t t = global_thread();                                                                \
        if (t < threads) msm::sum_listed_body<F>(bases, idx, count, per, t, out);                    \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_table_double(                \
        const Affine<F>* prev, uint64_t count, uint32_t c, Xyzz<F>* out) {                           \
        msm::table_double_body<F>(prev, count, c, global_thread(), out);                             \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_batch_to_affine(             \
        const Xyzz<F>* in, uint64_t count, uint64_t threads, uint32_t per, Affine<F>* out) {         \
        uint64_t t = global_thread();                                                                \
        if (t < threads) msm::batch_to_affine_body<F>(in, count, threads, per, t, out);              \
    }                                                                                                \
    extern "C" __global__ void bellows_msm_##G##_to_jacobian(const Xyzz<F>* in, uint32_t n,          \
                                                             Jacobian<F>* out) {                     \
        uint64_t t = global_thread();                                                                \
        if (t < n) out[t] = Xyzz<F>::to_jacobian(in[t]);                                             \
    }

BELLOWS_MSM_GROUP(g1, Fp, 0)
BELLOWS_MSM_GROUP(g2, Fp2, 3)
