// Host emulation of the Bellows CUDA kernels.
//
// Compiled by a host C++ compiler with BELLOWS_HOST_EMULATION defined, this file runs the very
// same field, curve and NTT code as bellows.cu, with the PTX carry-chain instructions replaced by
// their C++ definitions (carry.cuh) and each kernel's grid replaced by loops. The crate's test
// tests/emulation.rs builds it as a shared library, loads it and compares its results with blst,
// so the arithmetic and the NTT index logic are checked bit for bit on machines without a GPU.
// Within one NTT stage the butterflies are independent, so running them one after another is
// exactly what the kernel's threads compute between two barriers.
#define BELLOWS_HOST_EMULATION 1

#include <string.h>

#include <vector>

#include "ntt.cuh"
#include "ops.cuh"

using namespace bellows;

namespace {

template <class F>
void field_ops(uint32_t op, const F* a, const F* b, F* out, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) out[i] = field_apply<F>(op, a[i], b[i]);
}

template <class F>
void curve_ops(uint32_t op, const Jacobian<F>* p, const Jacobian<F>* q, const Affine<F>* a,
               Affine<F>* out_affine, Jacobian<F>* out_jacobian, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) {
        Xyzz<F> r = curve_apply<F>(op, p[i], q[i], a[i]);
        out_affine[i] = op_to_affine<F>(r);
        out_jacobian[i] = op_to_jacobian<F>(r);
    }
}

// The tile as the pass kernel keeps it in shared memory: element e at slot smem_slot(e).
struct SwizzledTile {
    Fr* sm;
    Fr get(uint32_t e) const { return sm[smem_slot(e)]; }
    void set(uint32_t e, const Fr& x) { sm[smem_slot(e)] = x; }
};

}  // namespace

extern "C" {

// field: 0 = Fr, 1 = Fp, 2 = Fp2, 3 = Fr through the generic reduction.
void bellows_emu_field_op(uint32_t field, uint32_t op, const void* a, const void* b, void* out,
                          uint64_t n) {
    switch (field) {
        case 0: field_ops<Fr>(op, (const Fr*)a, (const Fr*)b, (Fr*)out, n); break;
        case 1: field_ops<Fp>(op, (const Fp*)a, (const Fp*)b, (Fp*)out, n); break;
        case 2: field_ops<Fp2>(op, (const Fp2*)a, (const Fp2*)b, (Fp2*)out, n); break;
        case 3: field_ops<FrGeneric>(op, (const FrGeneric*)a, (const FrGeneric*)b, (FrGeneric*)out, n); break;
    }
}

// group: 1 = G1, 2 = G2.
void bellows_emu_curve_op(uint32_t group, uint32_t op, const void* p, const void* q, const void* a,
                          void* out_affine, void* out_jacobian, uint64_t n) {
    if (group == 1)
        curve_ops<Fp>(op, (const G1Jacobian*)p, (const G1Jacobian*)q, (const G1Affine*)a,
                      (G1Affine*)out_affine, (G1Jacobian*)out_jacobian, n);
    else
        curve_ops<Fp2>(op, (const G2Jacobian*)p, (const G2Jacobian*)q, (const G2Affine*)a,
                       (G2Affine*)out_affine, (G2Jacobian*)out_jacobian, n);
}

void bellows_emu_expand_table(Fr* out, const Fr* lo, const Fr* hi, uint32_t lo_bits,
                              uint64_t count) {
    uint64_t mask = (1ull << lo_bits) - 1;
    for (uint64_t e = 0; e < count; e++) out[e] = hi[e >> lo_bits] * lo[e & mask];
}

void bellows_emu_bitrev(Fr* data, uint32_t log_n, uint64_t batch) {
    uint64_t n = 1ull << log_n;
    for (uint64_t b = 0; b < batch; b++) {
        Fr* vec = data + b * n;
        for (uint64_t i = 0; i < n; i++) {
            uint64_t r = bit_reverse((uint32_t)i, log_n);
            if (i < r) {
                Fr t = vec[i];
                vec[i] = vec[r];
                vec[r] = t;
            }
        }
    }
}

// The tiled bit reversal: the loops stand for the blocks (middle values) and threads (a, b).
void bellows_emu_bitrev_tiled(Fr* data, uint32_t log_n, uint64_t batch) {
    const uint32_t T = 1u << BITREV_TILE_BITS;
    const uint32_t mid_bits = log_n - 2 * BITREV_TILE_BITS;
    uint64_t n = 1ull << log_n;
    std::vector<Fr> tiles[2] = {std::vector<Fr>(T * T), std::vector<Fr>(T * T)};
    for (uint64_t v = 0; v < batch; v++) {
        Fr* vec = data + v * n;
        for (uint64_t m = 0; m < (1ull << mid_bits); m++) {
            uint64_t mr = bit_reverse((uint32_t)m, mid_bits);
            if (m > mr) continue;
            uint64_t mids[2] = {m, mr};
            for (int s = 0; s < 2; s++)
                for (uint32_t a = 0; a < T; a++)
                    for (uint32_t b = 0; b < T; b++)
                        tiles[s][a * T + b] = vec[bitrev_tile_position(log_n, mids[s], a, b)];
            for (int s = 0; s < 2; s++)
                for (uint32_t a = 0; a < T; a++)
                    for (uint32_t b = 0; b < T; b++) {
                        uint32_t ra = bit_reverse(a, BITREV_TILE_BITS), rb = bit_reverse(b, BITREV_TILE_BITS);
                        vec[bitrev_tile_position(log_n, mids[s], a, b)] = tiles[1 - s][rb * T + ra];
                    }
        }
    }
}

// One NTT pass over `batch` vectors starting at pass->data, as bellows_ntt_pass runs it: the
// loops stand for the grid (tiles × vectors) and the block's threads, the tile buffer for shared
// memory, in the kernel's swizzled slot order.
void bellows_emu_ntt_pass(const NttPass* pass, uint64_t batch) {
    NttPass a = *pass;
    const uint32_t tile_size = 1u << (a.k + a.c);
    const uint64_t tiles = a.n >> (a.k + a.c);
    std::vector<Fr> sm(tile_size);
    SwizzledTile t{sm.data()};
    for (uint64_t b = 0; b < batch; b++) {
        Fr* vec = (Fr*)a.data + b * a.n;
        for (uint64_t tile = 0; tile < tiles; tile++) {
            for (uint32_t e = 0; e < tile_size; e++) {
                uint64_t pos = tile_position(a, tile, e);
                t.set(e, pre_scale(a, pos, vec[pos]));
            }
            for (uint32_t s = 0; s < a.k;) {
                if (radix2_step_at(a, s)) {
                    for (uint32_t q = 0; q < tile_size / 2; q++) radix2_step(a, tile, t, s, q);
                    s += 1;
                } else {
                    for (uint32_t q = 0; q < tile_size / 4; q++) radix4_step(a, tile, t, s, q);
                    s += 2;
                }
            }
            for (uint32_t e = 0; e < tile_size; e++) {
                uint64_t pos = tile_position(a, tile, e);
                vec[pos] = post_scale(a, pos, t.get(e));
            }
        }
    }
}

// The same pass as bellows_ntt_pass_radix2 runs it: one radix-2 stage at a time.
void bellows_emu_ntt_pass_radix2(const NttPass* pass, uint64_t batch) {
    NttPass a = *pass;
    const uint32_t tile_size = 1u << (a.k + a.c);
    const uint64_t tiles = a.n >> (a.k + a.c);
    const Fr* tw = (const Fr*)a.twiddles;
    std::vector<Fr> sm(tile_size);
    for (uint64_t b = 0; b < batch; b++) {
        Fr* vec = (Fr*)a.data + b * a.n;
        for (uint64_t tile = 0; tile < tiles; tile++) {
            for (uint32_t e = 0; e < tile_size; e++) {
                uint64_t pos = tile_position(a, tile, e);
                sm[e] = pre_scale(a, pos, vec[pos]);
            }
            for (uint32_t s = 0; s < a.k; s++) {
                uint32_t beta = stage_bit(a, s);
                uint32_t p = beta - a.b0 + a.c;
                for (uint32_t q = 0; q < tile_size / 2; q++) {
                    uint32_t e1, e2;
                    butterfly_pair(q, p, e1, e2);
                    if (beta == 0) {
                        butterfly_unit(sm[e1], sm[e2]);
                    } else {
                        Fr w = tw[twiddle_index(a, tile_position(a, tile, e1), beta)];
                        butterfly(a.flags, sm[e1], sm[e2], w);
                    }
                }
            }
            for (uint32_t e = 0; e < tile_size; e++) {
                uint64_t pos = tile_position(a, tile, e);
                vec[pos] = post_scale(a, pos, sm[e]);
            }
        }
    }
}

}  // extern "C"
