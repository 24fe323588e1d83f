// Bellows CUDA kernels: the NTT entry points (twiddle expansion, bit reversals, the pass kernel);
// ntt/ntt.cuh holds the index logic and butterflies they run. Included by backend.cu only; the
// entry points are extern "C" at global scope, so the Rust side finds them by their plain names.
#pragma once

#include "ntt/ntt.cuh"
#include "util/device.cuh"

using namespace bellows;

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

// Tiled in-place bit reversal (see ntt/ntt.cuh): block x handles the middle value m = blockIdx.x and
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

// One pass of stages over a tile per block (see ntt/ntt.cuh): load the tile (applying a forward coset
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
