// Bellows CUDA kernels: the production translation unit compiled (ahead of time, by build.rs)
// into the fatbin that src/kernels.rs embeds (test and benchmark entry points are in testing.cu,
// built only with the crate's `testing` feature). Every entry point is extern "C" so the Rust side finds it by
// its plain name. Layouts of all arguments are blst's (see bls12_381.cuh) or mirrored #[repr(C)]
// structs in the Rust crate.
#include "msm.cuh"
#include "ntt.cuh"
#include "ops.cuh"

using namespace bellows;

namespace {

__device__ __forceinline__ uint64_t global_thread() {
    return (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ uint64_t grid_threads() { return (uint64_t)gridDim.x * blockDim.x; }

// 32-byte Fr through two 16-byte loads / stores.
__device__ __forceinline__ Fr ld_fr(const uint4* p) {
    uint4 a = p[0], b = p[1];
    return Fr{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}
__device__ __forceinline__ Fr ldg_fr(const uint4* p) {
    uint4 a = __ldg(p), b = __ldg(p + 1);
    return Fr{{a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w}};
}
__device__ __forceinline__ void st_fr(uint4* p, const Fr& x) {
    p[0] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
    p[1] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
}

}  // namespace

// ---- NTT ----------------------------------------------------------------------------------------

// out[e] = hi[e >> lo_bits] · lo[e & (2^lo_bits − 1)] for e < count: expands a power table
// (twiddles ω^e, coset factors g^e) from two short host-computed tables, one product per entry.
extern "C" __global__ void bellows_expand_table(Fr* out, const Fr* lo, const Fr* hi,
                                                uint32_t lo_bits, uint64_t count) {
    uint64_t mask = (1ull << lo_bits) - 1;
    for (uint64_t e = global_thread(); e < count; e += grid_threads()) {
        Fr x = ldg_fr((const uint4*)(hi + (e >> lo_bits))) * ldg_fr((const uint4*)(lo + (e & mask)));
        st_fr((uint4*)(out + e), x);
    }
}

// In-place bit-reversal permutation of each vector of 2^log_n elements (vector = blockIdx.y).
extern "C" __global__ void bellows_bitrev(Fr* data, uint32_t log_n) {
    uint64_t n = 1ull << log_n;
    uint4* vec = (uint4*)(data + (uint64_t)blockIdx.y * n);
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) {
        uint64_t r = bit_reverse((uint32_t)i, log_n);
        if (i < r) {
            Fr x = ld_fr(vec + 2 * i);
            Fr y = ld_fr(vec + 2 * r);
            st_fr(vec + 2 * i, y);
            st_fr(vec + 2 * r, x);
        }
    }
}

// Tiled in-place bit reversal (see ntt.cuh): block x handles the middle value m = blockIdx.x and
// its mirror; 2^(2t) = 256 threads, one element of each tile per thread. Shared memory holds the
// two tiles as eight planes of 32-bit limbs with rows padded to 17 words, so the transposed reads
// hit distinct banks.
extern "C" __global__ void __launch_bounds__(256) bellows_bitrev_tiled(Fr* data, uint32_t log_n) {
    constexpr uint32_t T = 1u << BITREV_TILE_BITS, ROW = T + 1, PLANE = T * ROW;
    __shared__ uint32_t tiles[2][8 * PLANE];
    const uint32_t mid_bits = log_n - 2 * BITREV_TILE_BITS;
    const uint64_t m = blockIdx.x;
    const uint64_t mr = bit_reverse((uint32_t)m, mid_bits);
    if (m > mr) return;
    uint4* vec = (uint4*)(data + (uint64_t)blockIdx.y * (1ull << log_n));
    const uint32_t a = threadIdx.x / T, b = threadIdx.x % T;
    const uint64_t mids[2] = {m, mr};
    for (int s = 0; s < 2; s++) {
        Fr x = ld_fr(vec + 2 * bitrev_tile_position(log_n, mids[s], a, b));
#pragma unroll
        for (int w = 0; w < 8; w++) tiles[s][w * PLANE + a * ROW + b] = x.v[w];
    }
    __syncthreads();
    // Element (a, m, b) receives the old element at bitrev(a, m, b) = (rev b, rev m, rev a).
    const uint32_t ra = bit_reverse(a, BITREV_TILE_BITS), rb = bit_reverse(b, BITREV_TILE_BITS);
    for (int s = 0; s < 2; s++) {
        Fr x;
#pragma unroll
        for (int w = 0; w < 8; w++) x.v[w] = tiles[1 - s][w * PLANE + rb * ROW + ra];
        st_fr(vec + 2 * bitrev_tile_position(log_n, mids[s], a, b), x);
    }
}

namespace {

// A tile in shared memory as two planes of 16-byte halves (limbs 0–3, then 4–7), element e at
// slot smem_slot(e) of each plane (the swizzle that keeps the steps free of bank conflicts).
struct SharedTile {
    uint4* sm;
    uint32_t size;
    __device__ __forceinline__ Fr get(uint32_t e) const {
        uint32_t i = smem_slot(e);
        uint4 x = sm[i], y = sm[size + i];
        return Fr{{x.x, x.y, x.z, x.w, y.x, y.y, y.z, y.w}};
    }
    __device__ __forceinline__ void set(uint32_t e, const Fr& x) const {
        uint32_t i = smem_slot(e);
        sm[i] = make_uint4(x.v[0], x.v[1], x.v[2], x.v[3]);
        sm[size + i] = make_uint4(x.v[4], x.v[5], x.v[6], x.v[7]);
    }
};

}  // namespace

// One pass of stages over a tile per block (see ntt.cuh): load the tile (applying a forward coset
// factor), run the pass's stages as radix-4 steps (and one radix-2 step when k is odd) with a
// barrier after each, store it (applying 1/n or the inverse coset factor). F holds the pass's
// DIT and INVERSE flags as compile-time constants, so the butterflies carry no run-time choice.
template <uint32_t F>
__device__ __forceinline__ void ntt_pass_run(NttPass a) {
    a.flags = (a.flags & ~(NTT_DIT | NTT_INVERSE)) | F;
    extern __shared__ uint4 sm4[];
    const uint32_t tile_size = 1u << (a.k + a.c);
    uint4* vec = (uint4*)a.data + 2 * (uint64_t)blockIdx.y * a.n;
    const uint64_t tile = blockIdx.x;
    SharedTile t{sm4, tile_size};

    for (uint32_t e = threadIdx.x; e < tile_size; e += blockDim.x) {
        uint64_t pos = tile_position(a, tile, e);
        t.set(e, pre_scale(a, pos, ld_fr(vec + 2 * pos)));
    }
    __syncthreads();

    for (uint32_t s = 0; s < a.k;) {
        if (radix2_step_at(a, s)) {
            for (uint32_t q = threadIdx.x; q < tile_size / 2; q += blockDim.x) radix2_step(a, tile, t, s, q);
            s += 1;
        } else {
            for (uint32_t q = threadIdx.x; q < tile_size / 4; q += blockDim.x) radix4_step(a, tile, t, s, q);
            s += 2;
        }
        __syncthreads();
    }

    for (uint32_t e = threadIdx.x; e < tile_size; e += blockDim.x) {
        uint64_t pos = tile_position(a, tile, e);
        st_fr(vec + 2 * pos, post_scale(a, pos, t.get(e)));
    }
}

// At most 80 registers, so that three blocks of 256 threads (and their 3 × 64 KiB tiles) share a
// multiprocessor; the compiler spills a few loop-invariant words to do so.
extern "C" __global__ void __launch_bounds__(256, 3) bellows_ntt_pass(const NttPass a) {
    switch (a.flags & (NTT_DIT | NTT_INVERSE)) {
        case 0: ntt_pass_run<0>(a); break;
        case NTT_INVERSE: ntt_pass_run<NTT_INVERSE>(a); break;
        case NTT_DIT: ntt_pass_run<NTT_DIT>(a); break;
        default: ntt_pass_run<NTT_DIT | NTT_INVERSE>(a); break;
    }
}

// The previous pass kernel, one radix-2 stage per barrier, kept to measure the radix-4 kernel
// against (bellows-cuda-check times both). Shared memory holds the tile as eight planes of 32-bit
// limbs, plane w at [w·tile, (w + 1)·tile), so that a warp touching consecutive elements touches
// consecutive banks.
extern "C" __global__ void __launch_bounds__(256) bellows_ntt_pass_radix2(const NttPass a) {
    extern __shared__ uint32_t sm[];
    const uint32_t tile_size = 1u << (a.k + a.c);
    const uint32_t half = tile_size >> 1;
    uint4* vec = (uint4*)a.data + 2 * (uint64_t)blockIdx.y * a.n;
    const uint4* tw = (const uint4*)a.twiddles;
    const uint64_t tile = blockIdx.x;

    for (uint32_t e = threadIdx.x; e < tile_size; e += blockDim.x) {
        uint64_t pos = tile_position(a, tile, e);
        Fr x = pre_scale(a, pos, ld_fr(vec + 2 * pos));
#pragma unroll
        for (int w = 0; w < 8; w++) sm[w * tile_size + e] = x.v[w];
    }
    __syncthreads();

    for (uint32_t s = 0; s < a.k; s++) {
        const uint32_t beta = stage_bit(a, s);
        const uint32_t p = beta - a.b0 + a.c;
        for (uint32_t q = threadIdx.x; q < half; q += blockDim.x) {
            uint32_t e1, e2;
            butterfly_pair(q, p, e1, e2);
            Fr u, v;
#pragma unroll
            for (int i = 0; i < 8; i++) {
                u.v[i] = sm[i * tile_size + e1];
                v.v[i] = sm[i * tile_size + e2];
            }
            if (beta == 0) {
                butterfly_unit(u, v);
            } else {
                Fr w = ldg_fr(tw + 2 * twiddle_index(a, tile_position(a, tile, e1), beta));
                butterfly(a.flags, u, v, w);
            }
#pragma unroll
            for (int i = 0; i < 8; i++) {
                sm[i * tile_size + e1] = u.v[i];
                sm[i * tile_size + e2] = v.v[i];
            }
        }
        __syncthreads();
    }

    for (uint32_t e = threadIdx.x; e < tile_size; e += blockDim.x) {
        uint64_t pos = tile_position(a, tile, e);
        Fr x;
#pragma unroll
        for (int w = 0; w < 8; w++) x.v[w] = sm[w * tile_size + e];
        st_fr(vec + 2 * pos, post_scale(a, pos, x));
    }
}

// ---- Groth16 quotient ---------------------------------------------------------------------------

// The quotient h = (coset_iNTT(A·B) − C)/Z in two steps around the inverse coset transform, where
// A, B are a's and b's evaluations on the coset and C is c's coefficient vector (Z is the constant
// g^n − 1 on the coset, and the inverse coset transform is linear, so c needs no trip to the coset
// and back: that saves one transform of three vectors' seven).
// Step 1, on the coset evaluations: a[i] ← a[i]·b[i].
extern "C" __global__ void bellows_quotient_product(Fr* a, const Fr* b, uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) {
        Fr x = ld_fr((const uint4*)(a + i)) * ldg_fr((const uint4*)(b + i));
        st_fr((uint4*)(a + i), x);
    }
}

// Step 2, on coefficients (both in natural order): a[i] ← (a[i] − c[i])·z_inv.
extern "C" __global__ void bellows_quotient_finish(Fr* a, const Fr* c, Fr z_inv, uint64_t n) {
    for (uint64_t i = global_thread(); i < n; i += grid_threads()) {
        Fr x = Fr::sub(ld_fr((const uint4*)(a + i)), ldg_fr((const uint4*)(c + i))) * z_inv;
        st_fr((uint4*)(a + i), x);
    }
}

// ---- MSM (msm.cuh) ------------------------------------------------------------------------------

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

extern "C" __global__ void bellows_msm_pad_counts(uint32_t* counts, uint32_t keys, uint32_t q) {
    for (uint64_t t = global_thread(); t < keys; t += grid_threads()) msm::pad_counts_body(counts, keys, q, t);
}

extern "C" __global__ void bellows_msm_shift_offsets(const uint32_t* in, uint64_t n, uint32_t shift,
                                                     uint32_t* out) {
    for (uint64_t t = global_thread(); t < n; t += grid_threads()) msm::shift_offsets_body(in, n, shift, t, out);
}

extern "C" __global__ void bellows_fill_u32(uint32_t* p, uint64_t n, uint32_t v) {
    for (uint64_t t = global_thread(); t < n; t += grid_threads()) p[t] = v;
}

extern "C" __global__ void bellows_msm_digits(const msm::DigitArgs a, uint32_t scatter) {
    uint32_t lo = 0, hi = 0xffffffffu;
    if (scatter && !msm::scatter_range(a, lo, hi)) return;
    for (uint64_t i = global_thread(); i < a.n; i += grid_threads())
        msm::digits_body(a, i, scatter != 0, lo, hi);
}

// The binned scatter (msm.cuh): bins' cursors, then step 1 (blocks of BIN_BLOCK threads, 2·bins
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
// registers, some spilled) it ran 2.6 % faster on the H200 (run 32: 364.6 against 374.4 ms of
// accumulation at 2^24). G1's needs 166 registers and fits three blocks anyway.
#define BELLOWS_MSM_GROUP(G, F, ACC_BLOCKS)                                                            \
    extern "C" __global__ void __launch_bounds__(128, ACC_BLOCKS) bellows_msm_##G##_accumulate(       \
        const Affine<F>* bases, const uint32_t* entries, const uint32_t* offsets, uint32_t keys,     \
        uint32_t chunk, uint64_t threads, Xyzz<F>* buckets, Xyzz<F>* heads, Xyzz<F>* tails) {        \
        uint64_t t = global_thread();                                                                \
        if (t < threads)                                                                             \
            msm::accumulate_body<F>(bases, entries, offsets, keys,                                   \
                                    msm::effective_chunk(chunk, offsets, keys, threads), t, buckets, heads, tails); \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128, ACC_BLOCKS) bellows_msm_##G##_accumulate_points( \
        const Affine<F>* points, const uint32_t* offsets, uint32_t keys, uint32_t chunk,             \
        uint64_t threads, Xyzz<F>* buckets, Xyzz<F>* heads, Xyzz<F>* tails) {                         \
        uint64_t t = global_thread();                                                                \
        if (t < threads)                                                                             \
            msm::accumulate_body<F, true>(points, nullptr, offsets, keys,                            \
                                          msm::effective_chunk(chunk, offsets, keys, threads), t, buckets, heads, tails); \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_affine_first(                 \
        const Affine<F>* bases, const uint32_t* entries, const uint32_t* total, uint64_t threads,    \
        uint32_t per, Affine<F>* out) {                                                              \
        uint64_t t = global_thread();                                                                \
        if (t < threads)                                                                             \
            msm::affine_round_body<F, true>(bases, entries, nullptr, total, 0, threads, per, t, out); \
    }                                                                                                \
    extern "C" __global__ void __launch_bounds__(128) bellows_msm_##G##_affine_round(                 \
        const Affine<F>* in, const uint32_t* total, uint32_t shift, uint64_t threads, uint32_t per,  \
        Affine<F>* out) {                                                                            \
        uint64_t t = global_thread();                                                                \
        if (t < threads)                                                                             \
            msm::affine_round_body<F, false>(nullptr, nullptr, in, total, shift, threads, per, t, out); \
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
